/* test_fake_cold_cache.c — the warm start (issue 25 §6) on the fake driver
 * (tests/fakecuda): a new device object on a warm disk cache (a new process, as far as
 * the caches know) finds each program's PTX on disk by its program key and emits
 * none, through vyre_cuda_compile and vyre_cuda_compile_many alike; the kernels it
 * gets are the ones a cold start gets (same PTX, entries, results). Debug-mode PTX
 * never aliases release PTX; another build identity ($VYRE_TEST_BUILD_ID) is a miss; a
 * corrupt or foreign entry is a miss, never an error; opening a device records where
 * it went (open_*_ns). */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"
#include "fake_harness.h"

#define NPROG 6
static char root[] = "/tmp/vyre-cold-cache-XXXXXX";
static char cache[300];

static vyre_program *program(unsigned salt, unsigned i) { return salted_program("cc", salt, i); }

static void fresh_cache(const char *tag) {
    snprintf(cache, sizeof cache, "%s/%s", root, tag);
    CHECK(mkdir(cache, 0700) == 0);
    setenv("VYRE_CACHE_DIR", cache, 1);
}

static uint64_t stat_of(vyre_cuda_device *d, size_t off) {
    struct vyre_cuda_stats s;
    vyre_cuda_device_stats(d, &s);
    uint64_t v;
    memcpy(&v, (char *)&s + off, sizeof v);
    return v;
}
#define STAT(d, f) stat_of(d, offsetof(struct vyre_cuda_stats, f))

/* Files in the cache directory whose names end in ext. */
static unsigned count_files(const char *ext) {
    DIR *dp = opendir(cache);
    CHECK(dp != NULL);
    unsigned n = 0;
    struct dirent *de;
    size_t el = strlen(ext);
    while (dp && (de = readdir(dp)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > el && strcmp(de->d_name + l - el, ext) == 0) n++;
    }
    if (dp) closedir(dp);
    return n;
}

/* The first file name in the cache directory ending in ext, as a path. */
static bool first_file(const char *ext, char *out, size_t size) {
    DIR *dp = opendir(cache);
    if (!dp) return false;
    struct dirent *de;
    size_t el = strlen(ext);
    bool found = false;
    while (!found && (de = readdir(dp)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > el && strcmp(de->d_name + l - el, ext) == 0) {
            snprintf(out, size, "%s/%s", cache, de->d_name);
            found = true;
        }
    }
    closedir(dp);
    return found;
}

/* Compiles p[0..n) on a new device object, one by one or as a batch; checks each
 * kernel computes program i's values and, when ptx is given, has that PTX (else
 * stores a copy there); returns the device (caller releases). */
static vyre_cuda_device *compile_all(vyre_program **p, size_t n, bool batch, bool debug,
                                     char **ptx) {
    struct vyre_error e;
    vyre_cuda_device *d = NULL;
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    if (debug) CHECK_EQ_U64(vyre_cuda_set_debug(d, true, &e), VYRE_OK);
    vyre_cuda_kernel *k[NPROG];
    if (batch) {
        CHECK_EQ_U64(vyre_cuda_compile_many(d, p, n, k, &e), VYRE_OK);
    } else {
        for (size_t i = 0; i < n; i++) CHECK_EQ_U64(vyre_cuda_compile(d, p[i], &k[i], &e), VYRE_OK);
    }
    vyre_cuda_buffer *b = NULL;
    CHECK_EQ_U64(vyre_cuda_buffer_alloc(d, VYRE_U32, 3, &b, &e), VYRE_OK);
    for (size_t i = 0; i < n; i++) {
        uint32_t v[3] = {1, 2, 3};
        CHECK_EQ_U64(vyre_cuda_buffer_upload(b, 0, v, sizeof v, &e), VYRE_OK);
        struct vyre_cuda_args a = {.buffers = &b, .nbuffers = 1};
        CHECK_EQ_U64(vyre_cuda_launch(k[i], &a, &e), VYRE_OK);
        CHECK_EQ_U64(vyre_cuda_buffer_download(b, 0, v, sizeof v, &e), VYRE_OK);
        unsigned salt = (unsigned)strtoul(vyre_cuda_kernel_name(k[i]) + 2, NULL, 10);
        CHECK_EQ_U64(v[2], 3u * ((unsigned)i + 2) + salt + (unsigned)i);
        /* what k:info reads works on a kernel whose PTX came from disk */
        struct vyre_cuda_kernel_info info;
        CHECK_EQ_U64(vyre_cuda_kernel_info(k[i], &info, &e), VYRE_OK);
        CHECK_EQ_U64(info.nbuffers, 1);
        CHECK_EQ_U64(info.vector, k[i]->vfn != NULL);
        if (ptx && ptx[i]) {
            CHECK(strcmp(ptx[i], vyre_cuda_kernel_ptx(k[i])) == 0);
        } else if (ptx) {
            ptx[i] = strdup(vyre_cuda_kernel_ptx(k[i]));
        }
        vyre_cuda_kernel_free(k[i]);
    }
    vyre_cuda_buffer_free(b);
    return d;
}

/* Cold, then warm: one by one and as a batch, the warm object emits nothing. */
static void test_warm_start(void) {
    vyre_program *p[NPROG];
    for (unsigned i = 0; i < NPROG; i++) p[i] = program(1, i);
    char *ptx[NPROG] = {NULL};
    fresh_cache("warm");
    vyre_cuda_device *d = compile_all(p, NPROG, false, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), NPROG);
    CHECK_EQ_U64(STAT(d, disk_program_misses), NPROG);
    CHECK_EQ_U64(STAT(d, disk_program_hits), 0);
    CHECK_EQ_U64(STAT(d, disk_program_writes), NPROG);
    CHECK_EQ_U64(STAT(d, jit_compiles), NPROG);
    vyre_cuda_device_release(d);
    CHECK_EQ_U64(count_files(".ptx"), NPROG);
    CHECK_EQ_U64(count_files(".cubin"), NPROG);
    uint64_t files = 0;
    vyre_cuda_cache_usage(NULL, &files);
    CHECK_EQ_U64(files, 2 * NPROG); /* both kinds count toward the cap */

    for (int batch = 0; batch < 2; batch++) {
        d = compile_all(p, NPROG, batch != 0, false, ptx);
        CHECK_EQ_U64(STAT(d, ptx_emits), 0);
        CHECK_EQ_U64(STAT(d, disk_program_hits), NPROG);
        CHECK_EQ_U64(STAT(d, disk_program_misses), 0);
        CHECK_EQ_U64(STAT(d, disk_program_writes), 0);
        CHECK_EQ_U64(STAT(d, disk_hits), NPROG);
        CHECK_EQ_U64(STAT(d, jit_compiles), 0);
        CHECK(STAT(d, module_load_ns) > 0); /* what is left of a warm compile: the loads */
        vyre_cuda_device_release(d);
    }
    /* A cold batch writes the program entries as the one-by-one path does. */
    fresh_cache("warm_batch");
    d = compile_all(p, NPROG, true, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), NPROG);
    CHECK_EQ_U64(STAT(d, disk_program_writes), NPROG);
    vyre_cuda_device_release(d);
    d = compile_all(p, NPROG, true, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), 0);
    CHECK_EQ_U64(STAT(d, jit_compiles), 0);
    vyre_cuda_device_release(d);
    for (unsigned i = 0; i < NPROG; i++) {
        free(ptx[i]);
        vyre_program_free(p[i]);
    }
    CHECK_STR_CONTAINS(ctl("live"), "modules=0 links=0");
}

/* Debug PTX (bounds-checked) is its own entry: a warm release cache is a miss for it,
 * and a warm debug cache gives the debug text back. */
static void test_debug_does_not_alias(void) {
    vyre_program *p[NPROG];
    for (unsigned i = 0; i < NPROG; i++) p[i] = program(2, i);
    char *rel[NPROG] = {NULL}, *dbg[NPROG] = {NULL};
    fresh_cache("debug");
    vyre_cuda_device_release(compile_all(p, NPROG, false, false, rel));
    vyre_cuda_device *d = compile_all(p, NPROG, false, true, dbg);
    CHECK_EQ_U64(STAT(d, ptx_emits), NPROG);
    CHECK_EQ_U64(STAT(d, disk_program_hits), 0);
    vyre_cuda_device_release(d);
    for (unsigned i = 0; i < NPROG; i++) CHECK(strcmp(rel[i], dbg[i]) != 0);
    d = compile_all(p, NPROG, true, true, dbg);
    CHECK_EQ_U64(STAT(d, ptx_emits), 0);
    CHECK_EQ_U64(STAT(d, disk_program_hits), NPROG);
    vyre_cuda_device_release(d);
    for (unsigned i = 0; i < NPROG; i++) {
        free(rel[i]);
        free(dbg[i]);
        vyre_program_free(p[i]);
    }
}

/* Another code generator build (its identity differs) emits again; the cubins, keyed by
 * the PTX, are still found, so nothing is JIT-compiled. */
static void test_stale_build(void) {
    vyre_program *p[NPROG];
    for (unsigned i = 0; i < NPROG; i++) p[i] = program(3, i);
    char *ptx[NPROG] = {NULL};
    fresh_cache("stale");
    vyre_cuda_device_release(compile_all(p, NPROG, false, false, ptx));
    setenv("VYRE_TEST_BUILD_ID", "another-emitter", 1);
    vyre_cuda_device *d = compile_all(p, NPROG, false, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), NPROG);
    CHECK_EQ_U64(STAT(d, disk_program_misses), NPROG);
    CHECK_EQ_U64(STAT(d, disk_program_writes), NPROG); /* under the new identity */
    CHECK_EQ_U64(STAT(d, jit_compiles), 0);
    CHECK_EQ_U64(STAT(d, disk_hits), NPROG);
    vyre_cuda_device_release(d);
    d = compile_all(p, NPROG, true, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), 0);
    vyre_cuda_device_release(d);
    unsetenv("VYRE_TEST_BUILD_ID");
    d = compile_all(p, NPROG, false, false, ptx); /* the first identity's entries remain */
    CHECK_EQ_U64(STAT(d, ptx_emits), 0);
    vyre_cuda_device_release(d);
    CHECK_EQ_U64(count_files(".ptx"), 2 * NPROG);
    for (unsigned i = 0; i < NPROG; i++) {
        free(ptx[i]);
        vyre_program_free(p[i]);
    }
}

/* Flips one byte of a file at offset off from its end. */
static void flip(const char *path, off_t from_end) {
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    off_t at = lseek(fd, -from_end, SEEK_END);
    unsigned char c = 0;
    CHECK(pread(fd, &c, 1, at) == 1);
    c ^= 0x5a;
    CHECK(pwrite(fd, &c, 1, at) == 1);
    close(fd);
}

/* A corrupt entry, one copied under another program's key, one whose cubin is gone
 * and an untrusted directory are misses: emitted (or JIT-ed) again, never an error. */
static void test_bad_entries(void) {
    vyre_program *p[2] = {program(4, 0), program(4, 1)};
    char *ptx[2] = {NULL};
    fresh_cache("bad");
    vyre_cuda_device_release(compile_all(p, 1, false, false, ptx));
    char path[600], other[600];
    CHECK(first_file(".ptx", path, sizeof path));
    flip(path, 10); /* the payload hash no longer matches */
    vyre_cuda_device *d = compile_all(p, 1, false, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), 1);
    CHECK_EQ_U64(STAT(d, disk_program_hits), 0);
    vyre_cuda_device_release(d);
    /* (that compile wrote the entry again) */
    fresh_cache("bad2");
    vyre_cuda_device_release(compile_all(p, 2, false, false, ptx));
    /* program 0's entry under program 1's key: the header names program 0's key */
    char a[600] = "", b[600] = "";
    DIR *dp = opendir(cache);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".ptx") != 0) continue;
        snprintf(a[0] ? b : a, sizeof a, "%s/%s", cache, de->d_name);
    }
    closedir(dp);
    CHECK(a[0] && b[0]);
    CHECK(rename(a, b) == 0);
    d = compile_all(p, 2, false, false, ptx);
    CHECK_EQ_U64(STAT(d, disk_program_hits), 0); /* a is gone, b holds a's: both miss */
    CHECK_EQ_U64(STAT(d, ptx_emits), 2);
    CHECK_EQ_U64(STAT(d, jit_compiles), 0);
    vyre_cuda_device_release(d);
    /* every cubin evicted, the program entries kept: their PTX is JIT-ed */
    fresh_cache("bad3");
    vyre_cuda_device_release(compile_all(p, 2, false, false, ptx));
    while (first_file(".cubin", other, sizeof other)) CHECK(unlink(other) == 0);
    d = compile_all(p, 2, true, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), 0);
    CHECK_EQ_U64(STAT(d, jit_compiles), 2);
    vyre_cuda_device_release(d);
    /* a directory its group may write is refused (one warning on stderr) */
    CHECK(chmod(cache, 0770) == 0);
    d = compile_all(p, 2, false, false, ptx);
    CHECK_EQ_U64(STAT(d, ptx_emits), 2);
    CHECK_EQ_U64(STAT(d, disk_program_hits), 0);
    CHECK_EQ_U64(STAT(d, disk_program_writes), 0);
    vyre_cuda_device_release(d);
    CHECK(chmod(cache, 0700) == 0);
    for (unsigned i = 0; i < 2; i++) {
        free(ptx[i]);
        vyre_program_free(p[i]);
    }
}

/* Opening records where it went; the parts fit in the whole. */
static void test_open_split(void) {
    struct vyre_error e;
    vyre_cuda_device *d = NULL;
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    struct vyre_cuda_stats s;
    vyre_cuda_device_stats(d, &s);
    CHECK(s.open_ns > 0);
    CHECK(s.open_ctx_ns + s.open_stream_ns + s.open_probe_ns <= s.open_ns);
    CHECK(s.open_dlopen_ns > 0); /* the process's load, the same for every object */
    const struct vyre_cu_driver *drv = vyre_cu_load();
    CHECK_EQ_U64(s.open_dlopen_ns, drv->dlopen_ns);
    CHECK_EQ_U64(s.open_init_ns, drv->init_ns);
    vyre_cuda_device_release(d);
}

int main(void) {
    CHECK(mkdtemp(root) != NULL);
    unsetenv("VYRE_TEST_BUILD_ID");
    unsetenv("VYRE_CACHE_MAX_BYTES");
    if (!fake_load()) return 1;
    RUN_TEST(test_warm_start);
    RUN_TEST(test_debug_does_not_alias);
    RUN_TEST(test_stale_build);
    RUN_TEST(test_bad_entries);
    RUN_TEST(test_open_split);
    fake_remove_tree(root);
    return harness_finish();
}
