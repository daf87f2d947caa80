/* test_backend_defaults.c — the wrapper's defaults (src/core/backend.c, backend_run.c,
 * backend_worklist.c) for a backend that fills only the required slots of struct
 * vyre_backend_ops: "forward" passes each of them to an inner reference backend through
 * the public calls (its handles are the inner backend's objects). vyre_backend_run then
 * takes its default path (compile, a buffer per host slot uploaded, one launch, results
 * downloaded, everything freed) and must give what the reference's own run slot gives;
 * worklists answer VYRE_ERR_UNSUPPORTED with a Fix. The reference and CUDA slots
 * themselves are tested by test_backend_ops. */
#include <stdlib.h>

#include "harness.h"
#include "vyre_backend.h"

static const char RUNP[] = "(program runp (workgroup 64)\n"
                           "  (buffer x u32 read)\n"
                           "  (buffer y u32 read_write)\n"
                           "  (buffer z u32 write)\n"
                           "  (param k u32)\n"
                           "  (let i (gid x))\n"
                           "  (if (lt i (len y))\n"
                           "    (then (store y i (add (load y i) (mul (load x i) k)))\n"
                           "          (store z i (add (load x i) 1u32)))))";

static void fw_close(void *ctx) { (void)ctx; }
static enum vyre_status fw_info(void *ctx, struct vyre_backend_info *out, struct vyre_error *err) {
    return vyre_backend_info(ctx, out, err);
}
static enum vyre_status fw_alloc(void *ctx, enum vyre_type t, uint64_t count, void **out,
                                 struct vyre_error *err) {
    return vyre_backend_buffer_alloc(ctx, t, count, (vyre_backend_buffer **)out, err);
}
static void fw_free(void *ctx, void *buf) {
    (void)ctx;
    vyre_backend_buffer_free(buf);
}
static enum vyre_status fw_view(void *ctx, void *parent, enum vyre_type t, uint64_t first,
                                uint64_t count, void **out, struct vyre_error *err) {
    (void)ctx;
    (void)t;
    return vyre_backend_buffer_view(parent, first, count, (vyre_backend_buffer **)out, err);
}
static enum vyre_status fw_upload(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                  const void *src, uint64_t count, struct vyre_error *err) {
    (void)ctx;
    (void)t;
    return vyre_backend_buffer_upload(buf, first, src, count, err);
}
static enum vyre_status fw_download(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                    void *dst, uint64_t count, struct vyre_error *err) {
    (void)ctx;
    (void)t;
    return vyre_backend_buffer_download(buf, first, dst, count, err);
}
static enum vyre_status fw_zero(void *ctx, void *buf, struct vyre_error *err) {
    (void)ctx;
    return vyre_backend_buffer_zero(buf, err);
}
static enum vyre_status fw_compile(void *ctx, vyre_program *p, void **out, struct vyre_error *err) {
    return vyre_backend_compile(ctx, p, (vyre_backend_kernel **)out, err);
}
static void fw_kernel_free(void *ctx, void *k) {
    (void)ctx;
    vyre_backend_kernel_free(k);
}
static int fw_launches;
static enum vyre_status fw_launch(void *ctx, void *k, const struct vyre_backend_launch *l,
                                  struct vyre_error *err) {
    (void)ctx;
    struct vyre_backend_args a = {.buffers = (vyre_backend_buffer *const *)l->buffers,
                                  .nbuffers = l->nbuffers,
                                  .params = l->params,
                                  .nparams = l->nparams,
                                  .n = l->n,
                                  .grid = l->grid};
    fw_launches++;
    return vyre_backend_launch(k, &a, err);
}
static enum vyre_status fw_sync(void *ctx, struct vyre_error *err) {
    return vyre_backend_synchronize(ctx, err);
}
static size_t fw_stats(void *ctx, struct vyre_backend_stat *out, size_t cap) {
    size_t n = 0;
    vyre_backend_stats(ctx, out, cap, &n, NULL);
    return n;
}
static const struct vyre_backend_ops fw_ops = {.close = fw_close,
                                               .info = fw_info,
                                               .buffer_alloc = fw_alloc,
                                               .buffer_free = fw_free,
                                               .buffer_view = fw_view,
                                               .buffer_upload = fw_upload,
                                               .buffer_download = fw_download,
                                               .buffer_zero = fw_zero,
                                               .compile = fw_compile,
                                               .kernel_free = fw_kernel_free,
                                               .launch = fw_launch,
                                               .synchronize = fw_sync,
                                               .stats = fw_stats};

/* y += k * x and z = x + 1 over host data (out[0] y, out[1] z), then over a resident y
 * with n = 50 (res); the caller's data must not change. */
static void run_scenario(vyre_backend *be, uint32_t out[2][100], uint32_t res[100]) {
    vyre_program *p = NULL;
    struct vyre_error e;
    if (vyre_text_parse(RUNP, strlen(RUNP), &p, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "%s", e.message);
    uint32_t x[100], y[100];
    for (uint32_t i = 0; i < 100; i++) x[i] = i, y[i] = 2 * i;
    struct vyre_buffer_arg in[3] = {{x, 100}, {y, 100}, {NULL, 100}};
    void *dst[3] = {NULL, out[0], out[1]};
    vyre_bits k = 3;
    struct vyre_timing t = {UINT64_MAX, 0, 0, 0};
    uint64_t rounds = 99;
    struct vyre_backend_run_options o = {.buffers = in,
                                         .nbuffers = 3,
                                         .params = &k,
                                         .nparams = 1,
                                         .out = dst,
                                         .timing = &t,
                                         .rounds = &rounds};
    OK(vyre_backend_run(be, p, &o, &e_));
    CHECK(t.wall_ns != UINT64_MAX);
    CHECK_EQ_U64(rounds, 0);
    CHECK_EQ_U64(y[7], 14);
    vyre_backend_buffer *yb = NULL;
    OK(vyre_backend_buffer_alloc(be, VYRE_U32, 100, &yb, &e_));
    OK(vyre_backend_buffer_upload(yb, 0, y, 100, &e_));
    vyre_backend_buffer *resident[3] = {NULL, yb, NULL};
    uint32_t z2[100];
    void *dst2[3] = {NULL, NULL, z2};
    o.resident = resident;
    o.out = dst2;
    o.timing = NULL;
    o.n = 50;
    OK(vyre_backend_run(be, p, &o, &e_));
    OK(vyre_backend_buffer_download(yb, 0, res, 100, &e_));
    vyre_backend_buffer_free(yb);
    vyre_program_free(p);
}

static void test_default_slots(void) {
    vyre_backend *ref = NULL;
    OK(vyre_backend_open("reference", 0, NULL, &ref, &e_));
    vyre_backend *inner = NULL, *fw = NULL;
    OK(vyre_backend_open("reference", 0, NULL, &inner, &e_));
    OK(vyre_backend_new("forward", &fw_ops, inner, &fw, &e_));
    static uint32_t out[2][2][100], res[2][100];
    run_scenario(ref, out[0], res[0]);
    int l0 = fw_launches;
    run_scenario(fw, out[1], res[1]);
    CHECK_EQ_U64(fw_launches - l0, 2); /* the default: one launch per run */
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
    CHECK(memcmp(res[0], res[1], sizeof res[0]) == 0);
    CHECK_EQ_U64(out[1][0][7], 7 * 5); /* 2i + 3i */
    CHECK_EQ_U64(out[1][1][7], 8);
    CHECK_EQ_U64(res[1][63], 63 * 5); /* n = 50: one workgroup of 64 */
    CHECK_EQ_U64(res[1][64], 64 * 2);
    uint64_t live = 1;
    CHECK(vyre_backend_stat(inner, "live_buffers", &live));
    CHECK_EQ_U64(live, 0); /* the default freed what it made */
    /* the wrapper's checks come before the default */
    vyre_program *p = NULL;
    struct vyre_error e;
    CHECK_EQ_U64(vyre_text_parse(RUNP, strlen(RUNP), &p, &e), VYRE_OK);
    struct vyre_buffer_arg in[3] = {{NULL, 4}, {NULL, 4}, {NULL, 4}};
    vyre_bits k = 1;
    struct vyre_backend_run_options o = {.buffers = in, .nbuffers = 2, .params = &k, .nparams = 1};
    FAILS(VYRE_ERR_ARG, vyre_backend_run(fw, p, &o, &e_));
    vyre_backend_buffer *ob = NULL;
    OK(vyre_backend_buffer_alloc(ref, VYRE_U32, 4, &ob, &e_));
    vyre_backend_buffer *resident[3] = {ob, NULL, NULL};
    o.nbuffers = 3;
    o.resident = resident;
    FAILS(VYRE_ERR_ARG, vyre_backend_run(fw, p, &o, &e_)); /* another backend's buffer */
    vyre_backend_buffer_free(ob);
    vyre_program_free(p);
    vyre_backend_worklist *w = NULL;
    FAILS(VYRE_ERR_UNSUPPORTED, vyre_backend_worklist_alloc(fw, VYRE_U32, 4, &w, &e_));
    CHECK(w == NULL);
    vyre_backend_close(fw);
    vyre_backend_close(inner);
    vyre_backend_close(ref);
}

int main(void) {
    RUN_TEST(test_default_slots);
    return harness_finish();
}
