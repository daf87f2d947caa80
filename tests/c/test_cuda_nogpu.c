/* test_cuda_nogpu.c — the CUDA runtime's paths that need no GPU: driver probing
 * (missing driver, toolkit stub), clean failures of every entry point without a
 * driver, error formatting, size classes, byte-range checks and the disk cubin
 * cache (location rules, atomic write, integrity check, LRU eviction). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"

static char tmpdir[256];

static void test_available_reports_reason(void) {
    struct vyre_error err;
    bool ok = vyre_cuda_available(&err);
    if (ok) {
        printf("  (a CUDA driver is present: no-driver checks skipped)\n");
        CHECK_EQ_U64(err.status, VYRE_OK);
        return;
    }
    CHECK_EQ_U64(err.status, VYRE_ERR_NO_CUDA);
    CHECK(strlen(err.message) > 20);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    int n = 7;
    CHECK_EQ_U64(vyre_cuda_device_count(&n, &err), VYRE_ERR_NO_CUDA);
    CHECK_EQ_U64(n, 0);
    vyre_cuda_device *d = (vyre_cuda_device *)&n;
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &err), VYRE_ERR_NO_CUDA);
    CHECK(d == NULL);
    CHECK_STR_CONTAINS(err.message, "Fix:");
}

static void test_probe_missing_library(void) {
    struct vyre_cu_driver drv;
    vyre_cu_probe("/nonexistent/dir/libcuda.so.1", &drv);
    CHECK(!drv.usable);
    CHECK_EQ_U64(drv.status, VYRE_ERR_NO_CUDA);
    CHECK_STR_CONTAINS(drv.reason, "no CUDA driver");
    CHECK_STR_CONTAINS(drv.reason, "/nonexistent/dir/libcuda.so.1");
    CHECK_STR_CONTAINS(drv.reason, "Fix: install the NVIDIA driver");
}

static void test_probe_toolkit_stub(void) {
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) != 0) {
        printf("  (no toolkit stub at %s: stub check skipped)\n", stub);
        return;
    }
    struct vyre_cu_driver drv;
    vyre_cu_probe(stub, &drv);
    CHECK(!drv.usable);
    CHECK_STR_CONTAINS(drv.reason, "stub");
    CHECK_STR_CONTAINS(drv.reason, "Fix:");
    if (drv.handle) dlclose(drv.handle);
}

static void test_sticky_results(void) {
    CHECK(vyre_cu_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
    CHECK(vyre_cu_sticky(CUDA_ERROR_LAUNCH_FAILED));
    CHECK(vyre_cu_sticky(CUDA_ERROR_MISALIGNED_ADDRESS));
    CHECK(!vyre_cu_sticky(CUDA_ERROR_OUT_OF_MEMORY));
    CHECK(!vyre_cu_sticky(CUDA_ERROR_INVALID_VALUE));
    CHECK(!vyre_cu_sticky(CUDA_SUCCESS));
}

static void test_error_format(void) {
    struct vyre_error err;
    enum vyre_status st = vyre_cu_fail(NULL, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "saxpy", &err);
    CHECK_EQ_U64(st, VYRE_ERR_CUDA);
    CHECK_STR_CONTAINS(err.message, "cuMemAlloc failed for program 'saxpy'");
    CHECK_STR_CONTAINS(err.message, "Fix: free device buffers");
    CHECK_STR_CONTAINS(err.call, "cuMemAlloc");
    CHECK(err.result[0] != '\0');
    st = vyre_cu_fail(NULL, CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamSynchronize", NULL, &err);
    CHECK_EQ_U64(st, VYRE_ERR_DEVICE_LOST);
    CHECK_STR_CONTAINS(err.message, "the device is lost");
    CHECK_STR_CONTAINS(err.message, "open a new device object");
}

static void test_size_classes(void) {
    CHECK_EQ_U64(vyre_cu_size_class(1), 8);
    CHECK_EQ_U64(vyre_cu_size_class(256), 8);
    CHECK_EQ_U64(vyre_cu_size_class(257), 9);
    CHECK_EQ_U64(vyre_cu_size_class(4096), 12);
    CHECK_EQ_U64(vyre_cu_size_class(4097), 13);
    CHECK_EQ_U64(vyre_cu_size_class(UINT64_C(1) << 30), 30);
}

static void test_range_checks(void) {
    struct vyre_cuda_buffer b;
    memset(&b, 0, sizeof b);
    b.type = VYRE_F32;
    b.count = 4;
    b.bytes = 16;
    struct vyre_error err;
    CHECK_EQ_U64(vyre_cu_check_range(&b, 0, 16, "upload", &err), VYRE_OK);
    CHECK_EQ_U64(vyre_cu_check_range(&b, 12, 4, "upload", &err), VYRE_OK);
    CHECK_EQ_U64(vyre_cu_check_range(&b, 16, 0, "upload", &err), VYRE_OK);
    CHECK_EQ_U64(vyre_cu_check_range(&b, 12, 8, "download", &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "download: byte range [12, 20) is outside the f32 buffer");
    CHECK_STR_CONTAINS(err.message, "Fix:");
    /* offset + size overflowing 64 bits is still refused */
    CHECK_EQ_U64(vyre_cu_check_range(&b, 8, UINT64_MAX, "upload", &err), VYRE_ERR_ARG);
    CHECK_EQ_U64(vyre_cu_check_range(&b, 17, 0, "upload", &err), VYRE_ERR_ARG);
}

static void test_cache_dir_rules(void) {
    char buf[512];
    setenv("VYRE_CACHE_DIR", "/tmp/vyre-explicit", 1);
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    CHECK(vyre_cuda_cache_dir(buf, sizeof buf));
    CHECK_STR_CONTAINS(buf, "/tmp/vyre-explicit");
    unsetenv("VYRE_CACHE_DIR");
    CHECK(vyre_cuda_cache_dir(buf, sizeof buf));
    CHECK(strcmp(buf, "/tmp/xdg/vyre") == 0);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/someone", 1);
    CHECK(vyre_cuda_cache_dir(buf, sizeof buf));
    CHECK(strcmp(buf, "/home/someone/.cache/vyre") == 0);
    setenv("VYRE_CACHE_MAX_BYTES", "12345", 1);
    CHECK_EQ_U64(vyre_cuda_cache_cap(), 12345);
    unsetenv("VYRE_CACHE_MAX_BYTES");
    CHECK_EQ_U64(vyre_cuda_cache_cap(), UINT64_C(256) << 20);
}

static void test_disk_key(void) {
    uint64_t k = vyre_cu_disk_key(0x1234, 80, 12040);
    CHECK_EQ_U64(k, vyre_cu_disk_key(0x1234, 80, 12040));
    CHECK(k != vyre_cu_disk_key(0x1234, 90, 12040));
    CHECK(k != vyre_cu_disk_key(0x1234, 80, 12050));
    CHECK(k != vyre_cu_disk_key(0x1235, 80, 12040));
}

static void test_disk_roundtrip(void) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/nested/cache", tmpdir);
    setenv("VYRE_CACHE_DIR", dir, 1);
    size_t len = 0;
    CHECK(vyre_cu_disk_read(42, 42, &len) == NULL); /* directory missing: a miss */
    unsigned char blob[1000];
    for (size_t i = 0; i < sizeof blob; i++) blob[i] = (unsigned char)(i * 7 + 3);
    uint64_t evicted = 9;
    CHECK(vyre_cu_disk_write(42, 42, blob, sizeof blob, &evicted));
    CHECK_EQ_U64(evicted, 0);
    unsigned char *back = vyre_cu_disk_read(42, 42, &len);
    CHECK(back != NULL);
    CHECK_EQ_U64(len, sizeof blob);
    CHECK(back && memcmp(back, blob, sizeof blob) == 0);
    free(back);
    uint64_t bytes = 0, files = 0;
    vyre_cuda_cache_usage(&bytes, &files);
    CHECK_EQ_U64(files, 1);
    CHECK_EQ_U64(bytes, sizeof blob + 40); /* the header */
    /* A different key is a miss, a corrupted file is a miss (integrity hash). */
    CHECK(vyre_cu_disk_read(43, 43, &len) == NULL);
    char path[400];
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 42ULL);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 100, SEEK_SET);
        fputc(0xEE, f);
        fclose(f);
    }
    CHECK(vyre_cu_disk_read(42, 42, &len) == NULL);
    /* No temp files are left behind. */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c tmp > /dev/null", dir);
    CHECK(system(cmd) != 0);
}

static void test_disk_eviction(void) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/evict", tmpdir);
    setenv("VYRE_CACHE_DIR", dir, 1);
    setenv("VYRE_CACHE_MAX_BYTES", "3000", 1);
    unsigned char blob[960]; /* 1000 bytes with the header: three fit */
    memset(blob, 5, sizeof blob);
    uint64_t ev = 0, total_ev = 0;
    for (uint64_t key = 1; key <= 3; key++) {
        CHECK(vyre_cu_disk_write(key, key, blob, sizeof blob, &ev));
        total_ev += ev;
        /* distinct mtimes so the order is well defined */
        struct timespec ts[2] = {{(time_t)(1000 * key), 0}, {(time_t)(1000 * key), 0}};
        char path[400];
        snprintf(path, sizeof path, "%s/%016llx.cubin", dir, (unsigned long long)key);
        utimensat(AT_FDCWD, path, ts, 0);
    }
    CHECK_EQ_U64(total_ev, 0);
    /* A hit on key 1 makes it the most recently used... */
    size_t len = 0;
    void *hit = vyre_cu_disk_read(1, 1, &len);
    CHECK(hit != NULL);
    free(hit);
    /* ...so writing a fourth evicts key 2, the least recently used. */
    CHECK(vyre_cu_disk_write(4, 4, blob, sizeof blob, &ev));
    CHECK_EQ_U64(ev, 1);
    void *p1 = vyre_cu_disk_read(1, 1, &len), *p2 = vyre_cu_disk_read(2, 2, &len);
    void *p3 = vyre_cu_disk_read(3, 3, &len), *p4 = vyre_cu_disk_read(4, 4, &len);
    CHECK(p1 != NULL);
    CHECK(p2 == NULL);
    CHECK(p3 != NULL);
    CHECK(p4 != NULL);
    free(p1);
    free(p3);
    free(p4);
    /* A cubin larger than the whole cap is never written. */
    unsigned char big[4000];
    memset(big, 1, sizeof big);
    CHECK(!vyre_cu_disk_write(5, 5, big, sizeof big, &ev));
    unsetenv("VYRE_CACHE_MAX_BYTES");
}

/* A prepared launch needs a kernel: misuse is an argument error, never a crash. */
static void test_prepared_misuse(void) {
    struct vyre_error err;
    struct vyre_cuda_prepared pl;
    memset(&pl, 0, sizeof pl);
    CHECK(vyre_cuda_prepare(NULL, NULL, &pl, &err) == VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    CHECK(vyre_cuda_launch_prepared(&pl, &err) == VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "vyre_cuda_prepare");
    CHECK(vyre_cuda_launch_prepared(NULL, &err) == VYRE_ERR_ARG);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vyre-test-cuda-%ld", (long)getpid());
    mkdir(tmpdir, 0700);
    RUN_TEST(test_available_reports_reason);
    RUN_TEST(test_prepared_misuse);
    RUN_TEST(test_probe_missing_library);
    RUN_TEST(test_probe_toolkit_stub);
    RUN_TEST(test_sticky_results);
    RUN_TEST(test_error_format);
    RUN_TEST(test_size_classes);
    RUN_TEST(test_range_checks);
    RUN_TEST(test_cache_dir_rules);
    RUN_TEST(test_disk_key);
    RUN_TEST(test_disk_roundtrip);
    RUN_TEST(test_disk_eviction);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", tmpdir);
    return harness_finish();
}
