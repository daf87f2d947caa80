/* test_fake_trace.c — the profiler ranges of trace.h (docs/RUNTIME.md "Profiler
 * ranges") through the fake driver: the switch (on fails with a Fix when NVTX is not
 * built in), and in counting mode every hooked path — compile, launch, prepared
 * launch, raw launch, sequence, run, graph replay, megakernel and its split sections
 * — opens ranges named by program and closes each one, failures included. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"
#include "trace.h"

static const char INC[] = "(program inc (workgroup 64)\n"
                          "  (buffer v u32 read_write)\n"
                          "  (let i (gid x))\n"
                          "  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))";
static const char GRID[] = "(program gsync (workgroup 1) (buffer x u32 read_write)\n"
                           "  (store x 0u32 1u32) (grid_barrier) (store x 0u32 2u32))";

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error e;
    if (vyre_text_parse(text, strlen(text), &p, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "%s", e.message);
    return p;
}

static uint64_t pushes, pops;
static char last[160];

static void counts(void) { vyre_trace_counts(&pushes, &pops, last, sizeof last); }

static void test_switch(void) {
    struct vyre_error e;
    CHECK(!vyre_cuda_nvtx_enabled()); /* $VYRE_NVTX is unset in main */
    if (vyre_cuda_nvtx_built()) {
        CHECK_EQ_U64(vyre_cuda_set_nvtx(true, &e), VYRE_OK);
        CHECK(vyre_cuda_nvtx_enabled());
        /* NVTX alone (no profiler attached): a push/pop pair is harmless. */
        int t = vyre_trace_push("test", "x");
        CHECK(t != 0);
        vyre_trace_pop(t);
        CHECK_EQ_U64(vyre_cuda_set_nvtx(false, &e), VYRE_OK);
        CHECK(!vyre_cuda_nvtx_enabled());
    } else {
        CHECK_EQ_U64(vyre_cuda_set_nvtx(true, &e), VYRE_ERR_UNSUPPORTED);
        CHECK_STR_CONTAINS(e.message, "not built in");
        CHECK_STR_CONTAINS(e.message, "Fix:");
        CHECK(!vyre_cuda_nvtx_enabled());
    }
    CHECK_EQ_U64(vyre_cuda_set_nvtx(false, &e), VYRE_OK);
    /* Off: nothing is opened. */
    CHECK_EQ_U64((uint64_t)vyre_trace_push("test", "x"), 0);
    /* A switch between push and pop still closes what the push opened. */
    vyre_trace_set_counting(true);
    int t = vyre_trace_push("test", "y");
    vyre_trace_set_counting(false);
    vyre_trace_pop(t);
    counts();
    CHECK_EQ_U64(pops, 1);
}

static void test_hooks_balanced(void) {
    struct vyre_error e;
    vyre_cuda_device *d = NULL;
    CHECK_EQ_U64(vyre_cuda_device_open(0, &d, &e), VYRE_OK);
    vyre_program *p = parse(INC), *gp = parse(GRID);
    vyre_cuda_buffer *b = NULL;
    vyre_cuda_kernel *k = NULL, *gk = NULL;
    vyre_cuda_graph *g = NULL;
    CHECK_EQ_U64(vyre_cuda_buffer_alloc(d, VYRE_U32, 3, &b, &e), VYRE_OK);
    vyre_trace_set_counting(true);

    CHECK_EQ_U64(vyre_cuda_compile(d, p, &k, &e), VYRE_OK);
    counts();
    CHECK(pushes >= 1 && pushes == pops);
    CHECK_STR_CONTAINS(last, "vyre compile inc");

    struct vyre_cuda_args a = {&b, 1, NULL, 0, 0, NULL, 0, VYRE_GRID_AUTO};
    CHECK_EQ_U64(vyre_cuda_launch(k, &a, &e), VYRE_OK);
    counts();
    CHECK(pushes == pops);
    CHECK_STR_CONTAINS(last, "vyre launch inc");

    struct vyre_cuda_prepared pl;
    CHECK_EQ_U64(vyre_cuda_prepare(k, &a, &pl, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_launch_prepared(&pl, &e), VYRE_OK);
    counts();
    CHECK(pushes == pops);
    CHECK_STR_CONTAINS(last, "vyre prepared launch inc");

    struct vyre_cuda_step s = {k, a};
    uint64_t before = pushes;
    CHECK_EQ_U64(vyre_cuda_sequence(d, &s, 1, &(struct vyre_cuda_sequence_options){.times = 3}, &e),
                 VYRE_OK);
    counts();
    CHECK_EQ_U64(pushes - before, 4); /* the sequence and its three launches */
    CHECK(pushes == pops);

    CHECK_EQ_U64(vyre_cuda_graph_capture(d, &s, 1, &g, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_graph_launch(g, 2, NULL, &e), VYRE_OK);
    counts();
    CHECK(pushes == pops);
    CHECK_STR_CONTAINS(last, "vyre graph replay inc");

    struct vyre_buffer_arg in = {NULL, 3};
    uint32_t got[3];
    void *out[1] = {got};
    CHECK_EQ_U64(
        vyre_cuda_run(
            d, p, &(struct vyre_cuda_run_options){.buffers = &in, .nbuffers = 1, .out = out}, &e),
        VYRE_OK);
    counts();
    CHECK(pushes == pops);

    /* Failures close their ranges too: a launch with the wrong buffer count. */
    struct vyre_cuda_args bad = {&b, 0, NULL, 0, 0, NULL, 0, VYRE_GRID_AUTO};
    CHECK(vyre_cuda_launch(k, &bad, &e) != VYRE_OK);
    CHECK(vyre_cuda_run(d, p, &(struct vyre_cuda_run_options){.buffers = &in, .out = out}, &e) !=
          VYRE_OK);
    counts();
    CHECK(pushes == pops);

    /* A megakernel in split mode (the launch's own mode): one range over it, one per
     * section launch. */
    CHECK_EQ_U64(vyre_cuda_compile(d, gp, &gk, &e), VYRE_OK);
    struct vyre_cuda_args ga = {&b, 1, NULL, 0, 0, (const uint32_t[3]){1, 1, 1}, 0,
                                VYRE_GRID_SPLIT};
    before = pushes;
    CHECK_EQ_U64(vyre_cuda_launch(gk, &ga, &e), VYRE_OK);
    counts();
    CHECK(pushes == pops);
    CHECK(pushes - before >= 4); /* launch, megakernel, two sections (+ their compiles) */
    CHECK_STR_CONTAINS(last, "gsync_s");

    /* Off again: no more ranges. */
    vyre_trace_set_counting(false);
    CHECK_EQ_U64(vyre_cuda_launch(k, &a, &e), VYRE_OK);
    counts();
    CHECK_EQ_U64(pushes, 0);
    vyre_cuda_graph_free(g);
    vyre_cuda_kernel_free(gk);
    vyre_cuda_kernel_free(k);
    vyre_cuda_buffer_free(b);
    vyre_program_free(gp);
    vyre_program_free(p);
    vyre_cuda_device_release(d);
}

int main(void) {
    char dir[] = "/tmp/vyre-fake-trace-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("VYRE_CACHE_DIR", dir, 1);
    setenv("VYRE_LIBCUDA", VYRE_FAKECUDA_PATH, 1);
    unsetenv("VYRE_NVTX");
    struct vyre_error e;
    CHECK(vyre_cuda_available(&e));
    RUN_TEST(test_switch);
    RUN_TEST(test_hooks_balanced);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return harness_finish();
}
