/* cache_disk.c — the on-disk cubin cache (ARCHITECTURE.md §6), so that a second
 * process running the same program loads a cubin instead of JIT-compiling PTX.
 *
 * Location: $VYRE_CACHE_DIR, else $XDG_CACHE_HOME/vyre, else ~/.cache/vyre.
 * Key: XXH3 of (PTX hash, SM, driver version, vyre version); file <key>.cubin holding
 * a 40-byte header (magic, key, payload length, payload hash, PTX hash) and the cubin.
 *
 * Trust (docs/RUNTIME.md, "Who the disk cache trusts"): a cubin found here runs in
 * every process that uses the directory, so the directory must be writable by its user
 * only. It is created 0700; one that group or others can write, or that another user
 * owns, is refused (no disk cache, the reason from vyre_cuda_cache_refused, one
 * warning), as ssh refuses such key files. Each entry names the PTX it was built from
 * and a load checks it, so a cubin copied under another program's key is a miss.
 * Entries are opened without following symlinks and without blocking (a FIFO at an
 * entry's name must not hang the compile), and only regular files are read.
 *
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

#define MAGIC "VYRECUB2" /* 2: the header names its PTX; VYRECUB1 files are misses */
#define HEADER_BYTES 40u
#define PATH_MAX_LEN 1024
#define STALE_TMP_SECONDS 600 /* no write takes ten minutes: its writer is gone */

struct header {
    char magic[8];
    uint64_t key;
    uint64_t len;
    uint64_t hash;
    uint64_t src; /* the PTX's hash: ties the cubin to the source it was built from */
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

/* mkdir -p, each directory it creates 0700 (the cache and, for ~/.cache/vyre, a
 * missing ~/.cache); true when the directory exists afterwards. */
static bool make_dirs(const char *path) {
    char tmp[PATH_MAX_LEN];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
    struct stat sb;
    return stat(tmp, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Whether dir may be trusted: owned by this user and writable by no one else. Anyone
 * who can write it can make every vyre process of this user run their code. A
 * directory that does not exist (yet) is no refusal: it is created 0700. false with
 * the reason (ending in a Fix) in why when refused. */
static bool check_dir(const char *dir, char *why, size_t size) {
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return true;
    if (sb.st_uid != geteuid()) {
        snprintf(why, size,
                 "the kernel cache directory %s is owned by user %ld, not by this user (%ld). "
                 "Fix: point VYRE_CACHE_DIR at a directory of your own",
                 dir, (long)sb.st_uid, (long)geteuid());
        return false;
    }
    if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, size,
                 "the kernel cache directory %s can be written by %s (mode %03o). Fix: "
                 "chmod 700 %s, or point VYRE_CACHE_DIR at a private directory",
                 dir, sb.st_mode & S_IWOTH ? "other users" : "its group",
                 (unsigned)(sb.st_mode & 0777), dir);
        return false;
    }
    return true;
}

bool vyre_cuda_cache_refused(char *buf, size_t size) {
    char dir[PATH_MAX_LEN], why[768] = "";
    bool refused = vyre_cuda_cache_dir(dir, sizeof dir) && !check_dir(dir, why, sizeof why);
    if (buf && size) snprintf(buf, size, "%s", refused ? why : "");
    return refused;
}

/* check_dir, with one warning per process on the first refusal. */
static bool dir_trusted(const char *dir) {
    static atomic_bool warned;
    char why[768];
    if (check_dir(dir, why, sizeof why)) return true;
    if (!atomic_exchange(&warned, true))
        fprintf(stderr,
                "vyre: warning: %s. The disk cache is off: kernels are compiled in every "
                "process\n",
                why);
    return false;
}

static bool file_path(uint64_t key, char *out, size_t size) {
    char dir[PATH_MAX_LEN - 32];
    if (!vyre_cuda_cache_dir(dir, sizeof dir)) return false;
    int n = snprintf(out, size, "%s/%016llx.cubin", dir, (unsigned long long)key);
    return n > 0 && (size_t)n < size;
}

/* Reads exactly n bytes at offset off (a short file is a failure). */
static bool read_all(int fd, void *buf, size_t n, off_t off) {
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return true;
}

void *vyre_cu_disk_read(uint64_t key, uint64_t src, size_t *len) {
    char dir[PATH_MAX_LEN - 32], path[PATH_MAX_LEN];
    if (!vyre_cuda_cache_dir(dir, sizeof dir) || !dir_trusted(dir)) return NULL;
    if (!file_path(key, path, sizeof path)) return NULL;
    /* No symlinks (one could point anywhere), and no blocking: opening a FIFO for
     * reading would wait for a writer for ever. Only a regular file is read. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct header h;
    void *data = NULL;
    struct stat sb;
    /* The header's length must be the file's: a corrupt or foreign header claiming
     * a gigabyte is rejected before anything is allocated. The header names the PTX
     * the cubin was built from: a cubin copied under another key is refused. */
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < (off_t)HEADER_BYTES ||
        !read_all(fd, &h, sizeof h, 0) || memcmp(h.magic, MAGIC, 8) != 0 || h.key != key ||
        h.src != src || h.len == 0 || h.len != (uint64_t)sb.st_size - HEADER_BYTES)
        goto fail;
    data = malloc((size_t)h.len);
    if (!data || !read_all(fd, data, (size_t)h.len, (off_t)HEADER_BYTES)) goto fail;
    if (XXH3_64bits(data, (size_t)h.len) != h.hash) goto fail;
    /* A hit refreshes the file's mtime: eviction removes the least recently used. */
    futimens(fd, NULL);
    close(fd);
    *len = (size_t)h.len;
    return data;
fail:
    free(data);
    close(fd);
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
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue; /* no symlinks */
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

bool vyre_cu_disk_write(uint64_t key, uint64_t src, const void *data, size_t len,
                        uint64_t *evicted) {
    *evicted = 0;
    char dir[PATH_MAX_LEN - 64], path[PATH_MAX_LEN], tmp[PATH_MAX_LEN];
    if (!vyre_cuda_cache_dir(dir, sizeof dir)) return false;
    if (!make_dirs(dir)) {
        warn_unwritable(dir);
        return false;
    }
    if (!dir_trusted(dir)) return false;
    uint64_t cap = vyre_cuda_cache_cap();
    if (len + HEADER_BYTES > cap) return false;
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, (unsigned long long)key);
    static atomic_uint counter; /* threads of one process write at the same time */
    snprintf(tmp, sizeof tmp, "%s/.tmp-%016llx-%ld-%u", dir, (unsigned long long)key,
             (long)getpid(), atomic_fetch_add(&counter, 1u));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EACCES || errno == EROFS || errno == EPERM) warn_unwritable(dir);
        return false;
    }
    struct header h;
    memcpy(h.magic, MAGIC, 8);
    h.key = key;
    h.len = len;
    h.hash = XXH3_64bits(data, len);
    h.src = src;
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
