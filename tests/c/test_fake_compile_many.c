/* test_fake_compile_many.c — vyre_cuda_compile_many and vyre_backend_compile_many on the
 * fake driver (tests/fakecuda): a batch compiled in worker threads gives the kernels
 * one-by-one compilation gives (same PTX, same results), JIT-compiles each distinct
 * PTX once and a second device object (a new process, as far as the disk cache knows)
 * none; a failing JIT or context switch in a worker surfaces as the first failing
 * program's error with no kernel, link state or module left behind. Built with
 * -DVYRE_SANITIZE=thread this is the ThreadSanitizer check of the workers. */
#include <dlfcn.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"
#include "fake_harness.h"
#include "vyre_backend.h"

#define NPROG 24
static char root[] = "/tmp/vyre-compile-many-XXXXXX";

static vyre_program *program(unsigned salt, unsigned i) { return salted_program("cm", salt, i); }

/* A fresh, empty disk cache directory: a cold start. */
static void fresh_cache(const char *tag) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", root, tag);
    CHECK(mkdir(dir, 0700) == 0);
    setenv("VYRE_CACHE_DIR", dir, 1);
}

/* Launches each kernel on {1, 2, 3} and returns the sum of the results (as a check
 * value) in *sum, the results in out[i*3 ..]. */
static void run_all(vyre_cuda_device *d, vyre_cuda_kernel **k, size_t n, uint32_t *out) {
    struct vyre_error e;
    vyre_cuda_buffer *b = NULL;
    CHECK_EQ_U64(vyre_cuda_buffer_alloc(d, VYRE_U32, 3, &b, &e), VYRE_OK);
    for (size_t i = 0; i < n; i++) {
        uint32_t in[3] = {1, 2, 3};
        CHECK_EQ_U64(vyre_cuda_buffer_upload(b, 0, in, sizeof in, &e), VYRE_OK);
        struct vyre_cuda_args a = {.buffers = &b, .nbuffers = 1};
        CHECK_EQ_U64(vyre_cuda_launch(k[i], &a, &e), VYRE_OK);
        CHECK_EQ_U64(vyre_cuda_buffer_download(b, 0, out + 3 * i, 3 * sizeof *out, &e), VYRE_OK);
    }
    vyre_cuda_buffer_free(b);
}

static uint64_t stat_of(vyre_cuda_device *d, size_t off) {
    struct vyre_cuda_stats s;
    vyre_cuda_device_stats(d, &s);
    uint64_t v;
    memcpy(&v, (char *)&s + off, sizeof v);
    return v;
}
#define STAT(d, f) stat_of(d, offsetof(struct vyre_cuda_stats, f))

static void free_all(vyre_cuda_kernel **k, size_t n) {
    for (size_t i = 0; i < n; i++) vyre_cuda_kernel_free(k[i]);
}

/* Parallel == serial: the same PTX and results; one JIT per distinct PTX; a second
 * device object on the written cache JIT-compiles nothing. */
static void test_parallel_equals_serial(void) {
    vyre_program *p[NPROG + 2];
    for (unsigned i = 0; i < NPROG; i++) p[i] = program(1, i);
    p[NPROG] = p[3]; /* repeats: one JIT, two kernels */
    p[NPROG + 1] = p[7];
    size_t n = NPROG + 2;
    struct vyre_error e;
    vyre_cuda_kernel *ser[NPROG + 2], *par[NPROG + 2];
    uint32_t rs[3 * (NPROG + 2)], rp[3 * (NPROG + 2)];

    fresh_cache("serial");
    vyre_cuda_device *d = NULL;
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    for (size_t i = 0; i < n; i++) CHECK_EQ_U64(vyre_cuda_compile(d, p[i], &ser[i], &e), VYRE_OK);
    CHECK_EQ_U64(STAT(d, jit_compiles), NPROG);
    run_all(d, ser, n, rs);
    char *ptx_ser[NPROG + 2];
    for (size_t i = 0; i < n; i++) ptx_ser[i] = strdup(vyre_cuda_kernel_ptx(ser[i]));
    free_all(ser, n);
    vyre_cuda_device_release(d);

    fresh_cache("parallel");
    setenv("VYRE_JIT_THREADS", "8", 1);
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_compile_many(d, p, n, par, &e), VYRE_OK);
    CHECK_EQ_U64(STAT(d, jit_compiles), NPROG);
    CHECK_EQ_U64(STAT(d, disk_writes), NPROG);
    CHECK_EQ_U64(STAT(d, live_kernels), n);
    run_all(d, par, n, rp);
    for (size_t i = 0; i < n; i++) CHECK(strcmp(ptx_ser[i], vyre_cuda_kernel_ptx(par[i])) == 0);
    CHECK(memcmp(rs, rp, sizeof rs) == 0);
    CHECK_EQ_U64(rp[3 * 5 + 1], 2u * 7u + 1u + 5u); /* program 5: v*7 + 6 on 2 */
    free_all(par, n);
    vyre_cuda_device_release(d);

    /* A new device object (no modules in memory): every cubin from disk, no JIT. */
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_compile_many(d, p, n, par, &e), VYRE_OK);
    CHECK_EQ_U64(STAT(d, jit_compiles), 0);
    CHECK_EQ_U64(STAT(d, disk_hits), NPROG);
    run_all(d, par, n, rp);
    CHECK(memcmp(rs, rp, sizeof rs) == 0);
    /* Everything in the module cache already: nothing read, nothing compiled. */
    vyre_cuda_kernel *again[NPROG + 2];
    CHECK_EQ_U64(vyre_cuda_compile_many(d, p, n, again, &e), VYRE_OK);
    CHECK_EQ_U64(STAT(d, disk_hits), NPROG);
    CHECK_EQ_U64(STAT(d, jit_compiles), 0);
    free_all(again, n);
    free_all(par, n);
    vyre_cuda_device_release(d);

    /* One thread (VYRE_JIT_THREADS=1) takes the same path on the calling thread. */
    fresh_cache("one_thread");
    setenv("VYRE_JIT_THREADS", "1", 1);
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_compile_many(d, p, n, par, &e), VYRE_OK);
    CHECK_EQ_U64(STAT(d, jit_compiles), NPROG);
    run_all(d, par, n, rp);
    CHECK(memcmp(rs, rp, sizeof rs) == 0);
    free_all(par, n);
    vyre_cuda_device_release(d);
    unsetenv("VYRE_JIT_THREADS");
    for (size_t i = 0; i < n; i++) free(ptx_ser[i]);
    for (unsigned i = 0; i < NPROG; i++) vyre_program_free(p[i]);
    CHECK_STR_CONTAINS(ctl("live"), "modules=0 links=0");
}

/* A failing driver call in a worker: the first failing program's error (as its
 * vyre_cuda_compile would say it), no kernel, nothing left in the fake. */
static void test_errors(void) {
    vyre_program *p[NPROG];
    for (unsigned i = 0; i < NPROG; i++) p[i] = program(2, i);
    vyre_cuda_kernel *k[NPROG];
    struct vyre_error e;
    static const char *const faults[] = {"cuLinkComplete:5:CUDA_ERROR_INVALID_PTX",
                                         "cuLinkAddData:1:CUDA_ERROR_OUT_OF_MEMORY",
                                         "cuLinkCreate:9:CUDA_ERROR_OUT_OF_MEMORY"};
    static const char *const calls[] = {"cuLinkComplete", "cuLinkAddData", "cuLinkCreate"};
    setenv("VYRE_JIT_THREADS", "4", 1);
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++) {
        char tag[32];
        snprintf(tag, sizeof tag, "err%zu", f);
        fresh_cache(tag);
        vyre_cuda_device *d = NULL;
        CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "fail %s", faults[f]);
        ctl(cmd);
        for (size_t i = 0; i < NPROG; i++) k[i] = (vyre_cuda_kernel *)(uintptr_t)1;
        CHECK(vyre_cuda_compile_many(d, p, NPROG, k, &e) != VYRE_OK);
        CHECK_STR_CONTAINS(e.message, calls[f]);
        CHECK_STR_CONTAINS(e.message, "for program 'cm2_");
        CHECK_STR_CONTAINS(e.message, "Fix:");
        for (size_t i = 0; i < NPROG; i++) CHECK(k[i] == NULL);
        CHECK_EQ_U64(STAT(d, live_kernels), 0);
        CHECK_STR_CONTAINS(ctl("live"), "modules=0 links=0");
        ctl("clear");
        /* The device stays usable: the same batch now compiles. */
        CHECK_EQ_U64(vyre_cuda_compile_many(d, p, NPROG, k, &e), VYRE_OK);
        free_all(k, NPROG);
        vyre_cuda_device_release(d);
    }
    /* Workers that cannot make the context current leave their share to the calling
     * thread: the batch still compiles, every kernel JIT-compiled once. */
    fresh_cache("ctx");
    vyre_cuda_device *d = NULL;
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    /* An invalid program among valid ones (the emitter's side): named, nothing made. */
    vyre_program *bad = NULL;
    const char *text = "(program cm_invalid (workgroup 64) (buffer v u32 read)\n"
                       "  (store v 0u32 1u32))";
    CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &bad, &e), VYRE_OK);
    vyre_program *mix[3] = {p[0], bad, p[1]};
    vyre_cuda_kernel *mk[3];
    CHECK(vyre_cuda_compile_many(d, mix, 3, mk, &e) != VYRE_OK);
    CHECK_STR_CONTAINS(e.message, "cm_invalid");
    CHECK(mk[0] == NULL && mk[1] == NULL && mk[2] == NULL);
    CHECK_EQ_U64(STAT(d, live_kernels), 0);
    vyre_program_free(bad);
    ctl("fail cuCtxSetCurrent:1:CUDA_ERROR_INVALID_VALUE:always");
    CHECK_EQ_U64(vyre_cuda_compile_many(d, p, NPROG, k, &e), VYRE_OK);
    ctl("clear");
    CHECK_EQ_U64(STAT(d, jit_compiles), NPROG);
    CHECK_EQ_U64(STAT(d, live_kernels), NPROG);
    free_all(k, NPROG);
    vyre_cuda_device_release(d);
    unsetenv("VYRE_JIT_THREADS");
    for (unsigned i = 0; i < NPROG; i++) vyre_program_free(p[i]);
    CHECK_STR_CONTAINS(ctl("live"), "modules=0 links=0");
}

/* The backend interface: the CUDA slot and the reference's default loop give kernels
 * that compute the same; an invalid program is named and nothing is left. */
static void test_backend(void) {
    fresh_cache("backend");
    vyre_program *p[4];
    for (unsigned i = 0; i < 4; i++) p[i] = program(3, i);
    static const char *const names[] = {"cuda", "reference"};
    for (size_t b = 0; b < 2; b++) {
        vyre_backend *be = NULL;
        struct vyre_error e;
        CHECK_EQ_U64(vyre_backend_open(names[b], 0, NULL, &be, &e), VYRE_OK);
        vyre_backend_kernel *k[4];
        CHECK_EQ_U64(vyre_backend_compile_many(be, p, 4, k, &e), VYRE_OK);
        vyre_backend_buffer *buf = NULL;
        CHECK_EQ_U64(vyre_backend_buffer_alloc(be, VYRE_U32, 3, &buf, &e), VYRE_OK);
        for (unsigned i = 0; i < 4; i++) {
            uint32_t v[3] = {1, 2, 3};
            CHECK_EQ_U64(vyre_backend_buffer_upload(buf, 0, v, 3, &e), VYRE_OK);
            struct vyre_backend_args a = {.buffers = &buf, .nbuffers = 1};
            CHECK_EQ_U64(vyre_backend_launch(k[i], &a, &e), VYRE_OK);
            CHECK_EQ_U64(vyre_backend_buffer_download(buf, 0, v, 3, &e), VYRE_OK);
            CHECK_EQ_U64(v[2], 3u * (i + 2) + 3 + i);
        }
        for (unsigned i = 0; i < 4; i++) vyre_backend_kernel_free(k[i]);
        /* An invalid program (a store to a read-only buffer) in third place. */
        vyre_program *bad = NULL;
        const char *text = "(program cm_bad (workgroup 64) (buffer v u32 read)\n"
                           "  (store v 0u32 1u32))";
        CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &bad, &e), VYRE_OK);
        vyre_program *q[3] = {p[0], p[1], bad};
        CHECK(vyre_backend_compile_many(be, q, 3, k, &e) != VYRE_OK);
        CHECK_STR_CONTAINS(e.message, "cm_bad");
        CHECK(k[0] == NULL && k[1] == NULL && k[2] == NULL);
        q[1] = NULL;
        CHECK_EQ_U64(vyre_backend_compile_many(be, q, 3, k, &e), VYRE_ERR_ARG);
        CHECK_STR_CONTAINS(e.message, "program 2 is NULL");
        CHECK_EQ_U64(vyre_backend_compile_many(be, q, 0, k, &e), VYRE_OK);
        vyre_program_free(bad);
        vyre_backend_buffer_free(buf);
        vyre_backend_close(be);
    }
    for (unsigned i = 0; i < 4; i++) vyre_program_free(p[i]);
    CHECK_STR_CONTAINS(ctl("live"), "modules=0 links=0");
}

int main(void) {
    CHECK(mkdtemp(root) != NULL);
    if (!fake_load()) return 1;
    RUN_TEST(test_parallel_equals_serial);
    RUN_TEST(test_errors);
    RUN_TEST(test_backend);
    fake_remove_tree(root);
    return harness_finish();
}
