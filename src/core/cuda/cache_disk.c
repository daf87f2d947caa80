/* cache_disk.c — the on-disk cubin cache (ARCHITECTURE.md §6), so that a second
 * process running the same program loads a cubin instead of JIT-compiling PTX.
 *
 * Location: $VYRE_CACHE_DIR, else $XDG_CACHE_HOME/vyre, else ~/.cache/vyre.
 * Key: XXH3 of (PTX hash, SM, driver version, vyre version); file <key>.cubin holding
 * a 32-byte header (magic, key, payload length, payload hash) and the cubin.
 * Writes go to a unique temp file in the same directory and are renamed into place,
 * so readers in other processes see either no file or a whole one. The directory is
 * capped ($VYRE_CACHE_MAX_BYTES, default 256 MiB): after each write the oldest files
 * by mtime go first; a hit touches its file, which makes this least-recently-used.
 * Temp files count toward the cap; one older than STALE_TMP_SECONDS was left by a
 * writer that died and is removed. Every failure here is a miss, never an error for
 * the caller (a value of VYRE_CACHE_MAX_BYTES that is not a size gets one warning). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cuda_int.h"

#define MAGIC "VYRECUB1"
#define HEADER_BYTES 32u
#define PATH_MAX_LEN 1024
#define STALE_TMP_SECONDS 600 /* no write takes ten minutes: its writer is gone */

struct header {
    char magic[8];
    uint64_t key;
    uint64_t len;
    uint64_t hash;
};

bool vyre_cuda_cache_dir(char *buf, size_t size) {
    const char *dir = getenv("VYRE_CACHE_DIR");
    int n;
    if (dir && *dir) {
        n = snprintf(buf, size, "%s", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) {
        n = snprintf(buf, size, "%s/vyre", dir);
    } else if ((dir = getenv("HOME")) && *dir) {
        n = snprintf(buf, size, "%s/.cache/vyre", dir);
    } else {
        return false;
    }
    return n > 0 && (size_t)n < size;
}

/* "268435456", "1e9", "512M", "2GiB", "64k": bytes, in decimal or float notation with
 * an optional K/M/G/T suffix (binary multiples, "iB"/"B" allowed). 0 disables the cache.
 * false when s is none of these. */
static bool parse_size(const char *s, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !(v >= 0) || isinf(v)) return false;
    double mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1048576.0;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1073741824.0;
        end++;
        break;
    case 't':
    case 'T':
        mult = 1099511627776.0;
        end++;
        break;
    default: break;
    }
    if (mult > 1 && *end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0' || v * mult >= 18446744073709551616.0) return false;
    *out = (uint64_t)(v * mult);
    return true;
}

uint64_t vyre_cuda_cache_cap(void) {
    static atomic_bool warned;
    const char *s = getenv("VYRE_CACHE_MAX_BYTES");
    uint64_t v;
    if (!s || !*s) return UINT64_C(256) << 20;
    if (parse_size(s, &v)) return v;
    if (!atomic_exchange(&warned, true))
        fprintf(stderr,
                "vyre: warning: VYRE_CACHE_MAX_BYTES='%s' is not a size; using the default "
                "of 256 MiB. Fix: give bytes such as 268435456, 1e9 or 512M (0 turns the disk "
                "cache off)\n",
                s);
    return UINT64_C(256) << 20;
}

uint64_t vyre_cu_disk_key(uint64_t ptx_hash, unsigned sm, int driver_version) {
    char text[128];
    int n = snprintf(text, sizeof text, "%016llx sm_%u driver %d vyre %s",
                     (unsigned long long)ptx_hash, sm, driver_version, VYRE_VERSION);
    return XXH3_64bits(text, (size_t)n);
}

/* mkdir -p; true when the directory exists afterwards. */
static bool make_dirs(const char *path) {
    char tmp[PATH_MAX_LEN];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
    struct stat sb;
    return stat(tmp, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool file_path(uint64_t key, char *out, size_t size) {
    char dir[PATH_MAX_LEN - 32];
    if (!vyre_cuda_cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(out, size, "%s/%016llx.cubin", dir, (unsigned long long)key);
    return n > 0 && (size_t)n < size;
}

void *vyre_cu_disk_read(uint64_t key, size_t *len) {
    char path[PATH_MAX_LEN];
    if (!file_path(key, path, sizeof path)) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct header h;
    void *data = NULL;
    struct stat sb;
    /* The header's length must be the file's: a corrupt or foreign header claiming
     * a gigabyte is rejected before anything is allocated. */
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) ||
        fread(&h, 1, sizeof h, f) != sizeof h || memcmp(h.magic, MAGIC, 8) != 0 || h.key != key ||
        h.len == 0 || h.len != (uint64_t)sb.st_size - HEADER_BYTES)
        goto fail;
    data = malloc((size_t)h.len);
    if (!data || fread(data, 1, (size_t)h.len, f) != h.len) goto fail;
    if (XXH3_64bits(data, (size_t)h.len) != h.hash) goto fail;
    fclose(f);
    /* A hit refreshes the file's mtime: eviction removes the least recently used. */
    utimensat(AT_FDCWD, path, NULL, 0);
    *len = (size_t)h.len;
    return data;
fail:
    free(data);
    fclose(f);
    return NULL;
}

struct file_ent {
    char name[64];
    uint64_t bytes;
    struct timespec mtime;
};

static int older_first(const void *a, const void *b) {
    const struct file_ent *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool is_cubin_name(const char *name) {
    size_t n = strlen(name);
    return n > 6 && n < 60 && strcmp(name + n - 6, ".cubin") == 0;
}

/* A writer's temp file (".tmp-<key>-<pid>-<n>"). */
static bool is_tmp_name(const char *name) {
    return strncmp(name, ".tmp-", 5) == 0 && strlen(name) < 60;
}

/* Lists the cache's cubins; caller frees *out. */
static size_t list_files(const char *dir, struct file_ent **out, uint64_t *total) {
    *out = NULL;
    *total = 0;
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    size_t n = 0, cap = 0;
    struct file_ent *v = NULL;
    struct dirent *de;
    time_t now = time(NULL);
    while ((de = readdir(dp)) != NULL) {
        bool tmp = is_tmp_name(de->d_name);
        if (!tmp && !is_cubin_name(de->d_name)) continue;
        char path[PATH_MAX_LEN];
        struct stat sb;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) continue;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (tmp && now - sb.st_mtim.tv_sec > STALE_TMP_SECONDS) {
            unlink(path); /* left by a writer that died mid-write */
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct file_ent *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) break;
            v = nv;
            cap = ncap;
        }
        size_t nl = strlen(de->d_name); /* < 60, checked by is_cubin_name */
        memcpy(v[n].name, de->d_name, nl + 1);
        v[n].bytes = (uint64_t)sb.st_size;
        v[n].mtime = sb.st_mtim;
        *total += v[n].bytes;
        n++;
    }
    closedir(dp);
    *out = v;
    return n;
}

void vyre_cuda_cache_usage(uint64_t *bytes, uint64_t *files) {
    char dir[PATH_MAX_LEN];
    uint64_t total = 0;
    size_t n = 0;
    if (vyre_cuda_cache_dir(dir, sizeof dir)) {
        struct file_ent *v = NULL;
        n = list_files(dir, &v, &total);
        free(v);
    }
    if (bytes) *bytes = total;
    if (files) *files = n;
}

/* Removes the oldest cubins until the directory fits the cap. Another process may
 * remove the same file first; a failed unlink is simply skipped. */
static uint64_t evict(const char *dir, uint64_t cap) {
    struct file_ent *v = NULL;
    uint64_t total = 0, removed = 0;
    size_t n = list_files(dir, &v, &total);
    if (total > cap) {
        qsort(v, n, sizeof *v, older_first);
        for (size_t i = 0; i < n && total > cap; i++) {
            char path[PATH_MAX_LEN];
            snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
            if (unlink(path) == 0) removed++;
            total -= v[i].bytes;
        }
    }
    free(v);
    return removed;
}

/* A cache directory that cannot be written (read-only, no permission, a file in its
 * place) costs a JIT per process and one warning, never an error. */
static void warn_unwritable(const char *dir) {
    static atomic_bool warned;
    if (atomic_exchange(&warned, true)) return;
    fprintf(stderr,
            "vyre: warning: the kernel cache directory %s cannot be written (%s); kernels "
            "are compiled again in every process. Fix: make it writable, or point "
            "VYRE_CACHE_DIR at a directory that is\n",
            dir, strerror(errno));
}

bool vyre_cu_disk_write(uint64_t key, const void *data, size_t len, uint64_t *evicted) {
    *evicted = 0;
    char dir[PATH_MAX_LEN - 64], path[PATH_MAX_LEN], tmp[PATH_MAX_LEN];
    if (!vyre_cuda_cache_dir(dir, sizeof dir)) return false;
    if (!make_dirs(dir)) {
        warn_unwritable(dir);
        return false;
    }
    uint64_t cap = vyre_cuda_cache_cap();
    if (len + HEADER_BYTES > cap) return false;
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, (unsigned long long)key);
    static atomic_uint counter; /* threads of one process write at the same time */
    snprintf(tmp, sizeof tmp, "%s/.tmp-%016llx-%ld-%u", dir, (unsigned long long)key,
             (long)getpid(), atomic_fetch_add(&counter, 1u));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        if (errno == EACCES || errno == EROFS || errno == EPERM) warn_unwritable(dir);
        return false;
    }
    struct header h;
    memcpy(h.magic, MAGIC, 8);
    h.key = key;
    h.len = len;
    h.hash = XXH3_64bits(data, len);
    bool ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h && write(fd, data, len) == (ssize_t)len;
    ok = (close(fd) == 0) && ok;
    if (ok && rename(tmp, path) != 0) {
        /* Something not a file holds the key's name (say an empty directory someone
         * made): clear it once and retry, rather than leaving the key uncacheable. */
        struct stat sb;
        ok = (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) && lstat(path, &sb) == 0 &&
             S_ISDIR(sb.st_mode) && rmdir(path) == 0 && rename(tmp, path) == 0;
    }
    if (!ok) {
        unlink(tmp);
        return false;
    }
    *evicted = evict(dir, cap);
    return true;
}
