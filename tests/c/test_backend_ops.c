/* test_backend_ops.c — every op and every backend operation on every registered backend
 * that is available, compared with the reference backend (in the manner of ggml's
 * test-backend-ops). Ops: one small program per op and admitted type from the op table
 * (vyre_op_count / vyre_op_info), inputs from a fixed seed; results must be bit for bit
 * the reference's (any NaN equals any NaN, as spec 22), approximate ops within their
 * ULP bound against the reference (docs/ULP.md, "vs C library"); the atomics whose final
 * memory is order-independent, on every type they admit. Operations: buffers
 * (alloc, upload, download, views, zero), launch, prepared launch, timed launch,
 * sequence with prefix/times/readback, graph replay, megakernel, stats, debug report,
 * supports, and the wrapper's argument checks (NULL and misuse give an error with a Fix).
 *
 * Where it runs: alone, only the reference (against a second reference object). With
 * VYRE_LIBCUDA naming the fake driver (ctest entry test_backend_ops_fakecuda), CUDA is
 * available and must be tested (VYRE_BACKEND_OPS_REQUIRE=cuda): the fake computes only
 * programs registered through its control channel, so every program this test compiles
 * on CUDA is registered first, and the test fails if the fake skipped any launch. On a
 * GPU the same binary compares the real device with the reference. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"
#include "vyre_backend.h"
#include "vyre_cuda.h" /* the native kernel's grid mode, where a backend has one */

#define N 1000u /* elements per op case: not a multiple of the workgroup (tails) */

/* ---- the fake driver's control channel (NULL on a real driver) ------------------------ */

typedef char *control_fn(const char *cmd, int *ok);
static control_fn *control;
static void (*control_free)(char *);

static void fake_open(void) {
    const char *path = getenv("VYRE_LIBCUDA");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    void *c = h ? dlsym(h, "vyre_fakecuda_control") : NULL;
    void *f = h ? dlsym(h, "vyre_fakecuda_free") : NULL;
    if (!c || !f) return; /* a real driver: nothing to register */
    memcpy(&control, &c, sizeof c);
    memcpy(&control_free, &f, sizeof f);
}

static void fake_ctl(const char *cmd, char *out, size_t outsz) {
    int ok = 0;
    char *r = control(cmd, &ok);
    if (out) snprintf(out, outsz, "%s", r ? r : "");
    if (!ok) harness_fail(__FILE__, __LINE__, "fake control '%.60s': %s", cmd, r ? r : "(null)");
    control_free(r);
}

static uint64_t fake_skipped(void) {
    char ans[256];
    unsigned long long computed = 0, skipped = 0;
    fake_ctl("launches", ans, sizeof ans);
    sscanf(ans, "computed=%llu skipped=%llu", &computed, &skipped);
    return skipped;
}

/* ---- helpers ---------------------------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rng(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static bool is_ref(vyre_backend *be) { return strcmp(vyre_backend_name(be), "reference") == 0; }

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error e;
    if (vyre_text_parse(text, strlen(text), &p, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "%s\n%s", e.message, text);
    return p;
}

/* Compiles text on be; on the fake driver the program is registered first. */
static vyre_backend_kernel *compile_text(vyre_backend *be, const char *text) {
    if (control && !is_ref(be)) {
        size_t len = strlen(text) + 16;
        char *cmd = malloc(len);
        snprintf(cmd, len, "program %s", text);
        fake_ctl(cmd, NULL, 0);
        free(cmd);
    }
    vyre_program *p = parse(text);
    vyre_backend_kernel *k = NULL;
    struct vyre_error e;
    if (!p || vyre_backend_compile(be, p, &k, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "compile on %s: %s", vyre_backend_name(be),
                     p ? e.message : "parse failed");
    vyre_program_free(p); /* the kernel keeps its own copy */
    return k;
}

static vyre_backend_buffer *buffer(vyre_backend *be, enum vyre_type t, uint64_t n,
                                   const void *init) {
    vyre_backend_buffer *b = NULL;
    struct vyre_error e;
    if (vyre_backend_buffer_alloc(be, t, n, &b, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "alloc: %s", e.message);
    if (b && init && vyre_backend_buffer_upload(b, 0, init, n, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "upload: %s", e.message);
    return b;
}

static void download(vyre_backend_buffer *b, void *dst) {
    struct vyre_error e;
    if (vyre_backend_buffer_download(b, 0, dst, vyre_backend_buffer_count(b), &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "download: %s", e.message);
}

static int64_t ord32(uint32_t b) { return (b & 0x80000000u) ? -(int64_t)(b & 0x7FFFFFFFu) : b; }
static int64_t ord64(uint64_t b) {
    return (b >> 63) ? -(int64_t)(b & 0x7FFFFFFFFFFFFFFFull) : (int64_t)b;
}
static bool nan32(uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu); }
static bool nan64(uint64_t b) {
    return (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (b & 0xFFFFFFFFFFFFFull);
}

/* First element where got differs from want beyond ulp (bits; floats: NaN == NaN and,
 * with ulp > 0, the ULP distance), or -1. */
static long differs(enum vyre_type t, const void *want, const void *got, uint64_t n, int64_t ulp) {
    for (uint64_t i = 0; i < n; i++) {
        if (vyre_type_size(t) == 4) {
            uint32_t a, b;
            memcpy(&a, (const char *)want + 4 * i, 4);
            memcpy(&b, (const char *)got + 4 * i, 4);
            if (a == b) continue;
            if (t == VYRE_F32 && nan32(a) && nan32(b)) continue;
            if (t == VYRE_F32 && ulp && !nan32(a) && !nan32(b) && llabs(ord32(a) - ord32(b)) <= ulp)
                continue;
        } else {
            uint64_t a, b;
            memcpy(&a, (const char *)want + 8 * i, 8);
            memcpy(&b, (const char *)got + 8 * i, 8);
            if (a == b) continue;
            if (t == VYRE_F64 && nan64(a) && nan64(b)) continue;
            if (t == VYRE_F64 && ulp && !nan64(a) && !nan64(b)) {
                int64_t d = ord64(a) - ord64(b);
                if (d <= ulp && d >= -ulp) continue;
            }
        }
        return (long)i;
    }
    return -1;
}

/* A random value of type t into element i of dst: floats mostly moderate, sometimes
 * special (±0, ±inf, NaN, subnormal, huge), like spec/helpers.lua's; within [-8, 8]
 * (plus ±0) for the approximate ops, where every bound of docs/ULP.md holds. */
static void random_elem(enum vyre_type t, bool approx, void *dst, uint64_t i) {
    static const double special[] = {0.0,       -0.0, 1.0,   -1.0,   0.5,  INFINITY,
                                     -INFINITY, NAN,  1e-40, 3.4e38, 1e300};
    uint64_t x = rng();
    double v =
        ((double)(x >> 11) / 9007199254740992.0 - 0.5) * ldexp(1.0, (int)((x >> 4) & 31) - 10);
    if (approx) v = ((double)(x >> 11) / 9007199254740992.0 - 0.5) * 16.0;
    else if ((x & 15) == 0) v = special[(x >> 8) % (sizeof special / sizeof special[0])];
    switch (t) {
    case VYRE_BOOL: {
        uint32_t b = (uint32_t)(x & 1);
        memcpy((char *)dst + 4 * i, &b, 4);
        break;
    }
    case VYRE_I32:
    case VYRE_U32: {
        uint32_t b = (uint32_t)(x >> 32);
        if ((x & 7) == 0) b = (uint32_t)(x >> 8) % 40; /* small: shift counts, divisors */
        memcpy((char *)dst + 4 * i, &b, 4);
        break;
    }
    case VYRE_I64:
    case VYRE_U64:
        if ((x & 7) == 0) x = (x >> 8) % 80;
        memcpy((char *)dst + 8 * i, &x, 8);
        break;
    case VYRE_F32: {
        float f = (float)v;
        memcpy((char *)dst + 4 * i, &f, 4);
        break;
    }
    default: memcpy((char *)dst + 8 * i, &v, 8); break;
    }
}

/* The ULP bound of an approximate op against the reference (docs/ULP.md, "vs C
 * library"); 0 (bit for bit) for every exact op. */
static int64_t ulp_bound(const struct vyre_op_info *oi) {
    if (!oi->approximate) return 0;
    if (strcmp(oi->name, "tanh") == 0) return 4;
    if (strcmp(oi->name, "rsqrt") == 0) return 2;
    return 3;
}

/* ---- ops --------------------------------------------------------------------------------- */

/* One op case: the same program and inputs on ref and be, outputs compared. */
static void op_case(vyre_backend *be, vyre_backend *ref, const struct vyre_op_info *oi,
                    enum vyre_type t, uint64_t seed) {
    enum vyre_type rt = strcmp(oi->result, "BOOL") == 0 ? VYRE_BOOL : t;
    const char *tn = vyre_type_name(t);
    char bdecl[64] = "", text[1024];
    if (oi->arity == 2) snprintf(bdecl, sizeof bdecl, "  (buffer b %s read)\n", tn);
    snprintf(text, sizeof text,
             "(program op_%s_%s (workgroup 64)\n"
             "  (buffer a %s read)\n%s"
             "  (buffer o %s write)\n"
             "  (let i (gid x))\n"
             "  (if (lt i (len o)) (then (store o i (%s (load a i)%s)))))",
             oi->name, tn, tn, bdecl, vyre_type_name(rt), oi->name,
             oi->arity == 2 ? " (load b i)" : "");
    size_t es = vyre_type_size(t), rs = vyre_type_size(rt);
    char *in[2] = {malloc(N * es), malloc(N * es)};
    char *want = calloc(N, rs), *got = calloc(N, rs);
    rng_state = seed;
    for (unsigned k = 0; k < oi->arity; k++)
        for (uint64_t i = 0; i < N; i++) random_elem(t, oi->approximate, in[k], i);
    char *outs[2] = {want, got};
    vyre_backend *bes[2] = {ref, be};
    for (int w = 0; w < 2; w++) {
        vyre_backend_kernel *k = compile_text(bes[w], text);
        vyre_backend_buffer *bufs[3] = {buffer(bes[w], t, N, in[0]), NULL, NULL};
        if (oi->arity == 2) bufs[1] = buffer(bes[w], t, N, in[1]);
        bufs[oi->arity] = buffer(bes[w], rt, N, NULL);
        struct vyre_backend_args a = {.buffers = bufs,
                                      .nbuffers = oi->arity + 1u,
                                      .params = NULL,
                                      .nparams = 0,
                                      .n = 0,
                                      .grid = NULL};
        OK(vyre_backend_launch(k, &a, &e_));
        download(bufs[oi->arity], outs[w]);
        for (unsigned b = 0; b <= oi->arity; b++) vyre_backend_buffer_free(bufs[b]);
        vyre_backend_kernel_free(k);
    }
    long at = differs(rt, want, got, N, ulp_bound(oi));
    harness_checks++;
    if (at >= 0)
        harness_fail(__FILE__, __LINE__,
                     "%s: op %s on %s differs from the reference at element %ld",
                     vyre_backend_name(be), oi->name, tn, at);
    free(in[0]);
    free(in[1]);
    free(want);
    free(got);
}

static void test_ops(vyre_backend *be, vyre_backend *ref) {
    unsigned cases = 0;
    for (unsigned i = 0; i < vyre_op_count(); i++) {
        struct vyre_op_info oi;
        CHECK(vyre_op_info(i, &oi));
        for (int t = 0; t < VYRE_TYPE_COUNT; t++) {
            if (!vyre_op_class_admits(oi.operand_class, (enum vyre_type)t)) continue;
            op_case(be, ref, &oi, (enum vyre_type)t,
                    0x9E3779B97F4A7C15ull ^ (i * 131u + (unsigned)t));
            cases++;
        }
    }
    printf("  %s: %u op cases\n", vyre_backend_name(be), cases);
    CHECK(cases > 100); /* every op on every type its class admits */
}

/* Atomics whose final memory does not depend on the order the invocations land in:
 * every atomic op on u32, i32 and u64 but exchange and cas, and f32 min/max (f32 add
 * rounds in arrival order, so it is not compared). 1000 invocations onto 8 words. */
static void test_atomics(vyre_backend *be, vyre_backend *ref) {
    static const enum vyre_type types[] = {VYRE_U32, VYRE_I32, VYRE_U64, VYRE_F32};
    unsigned cases = 0;
    for (unsigned i = 0; i < vyre_atomic_count(); i++) {
        const char *op = vyre_atomic_op_name(i);
        if (strcmp(op, "exchange") == 0 || strcmp(op, "cas") == 0) continue;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            enum vyre_type t = types[ti];
            if (t == VYRE_F32 && strcmp(op, "min") != 0 && strcmp(op, "max") != 0) continue;
            const char *tn = vyre_type_name(t);
            char text[512];
            snprintf(text, sizeof text,
                     "(program at_%s_%s (workgroup 64)\n"
                     "  (buffer a %s read)\n"
                     "  (buffer acc %s read_write)\n"
                     "  (let i (gid x))\n"
                     "  (if (lt i (len a)) (then (atomic %s acc (rem i 8u32) (load a i)))))",
                     op, tn, tn, tn, op);
            unsigned char in[N * 8], init[8 * 8], out[2][8 * 8];
            rng_state = 0xA70111Cull + i * 16u + ti;
            for (uint64_t e = 0; e < N; e++) random_elem(t, false, in, e);
            for (uint64_t e = 0; e < 8; e++) random_elem(t, false, init, e);
            vyre_backend *bes[2] = {ref, be};
            for (int w = 0; w < 2; w++) {
                vyre_backend_kernel *k = compile_text(bes[w], text);
                vyre_backend_buffer *bufs[2] = {buffer(bes[w], t, N, in),
                                                buffer(bes[w], t, 8, init)};
                OK(vyre_backend_launch(k, &BARGS(bufs, 2, NULL, 0, 0, NULL), &e_));
                download(bufs[1], out[w]);
                vyre_backend_buffer_free(bufs[0]);
                vyre_backend_buffer_free(bufs[1]);
                vyre_backend_kernel_free(k);
            }
            long at = differs(t, out[0], out[1], 8, 0);
            harness_checks++;
            if (at >= 0)
                harness_fail(__FILE__, __LINE__,
                             "%s: atomic %s on %s differs from the reference at word %ld",
                             vyre_backend_name(be), op, tn, at);
            cases++;
        }
    }
    printf("  %s: %u atomic cases\n", vyre_backend_name(be), cases);
    CHECK(cases >= 20);
}

/* ---- backend operations --------------------------------------------------------------------- */

static const char INC[] = "(program inc (workgroup 64)\n"
                          "  (buffer v u32 read_write)\n"
                          "  (let i (gid x))\n"
                          "  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))";
static const char SCALE[] = "(program scale (workgroup 32)\n"
                            "  (buffer v u32 read_write)\n"
                            "  (param k u32)\n"
                            "  (let i (gid x))\n"
                            "  (if (lt i (len v)) (then (store v i (mul (load v i) k)))))";
static const char SAXPY[] = "(program saxpy (workgroup 256)\n"
                            "  (buffer x f32 read)\n"
                            "  (buffer y f32 read_write)\n"
                            "  (param a f32)\n"
                            "  (let i (gid x))\n"
                            "  (if (lt i (len y))\n"
                            "    (then (store y i (add (mul a (load x i)) (load y i))))))";
/* Reads and writes one element past the end of v when launched over len(v) + 1. */
static const char OOB[] = "(program oob (workgroup 64)\n"
                          "  (buffer v u32 read_write)\n"
                          "  (buffer w u32 read)\n"
                          "  (param n u32)\n"
                          "  (let i (gid x))\n"
                          "  (if (lt i n) (then (store v i (add (load v i) (load w i))))))";

/* Buffers: zeroed alloc, element ranges, views and views of views, zero. */
static void buffers_scenario(vyre_backend *be, uint32_t out[64]) {
    uint32_t init[64];
    for (uint32_t i = 0; i < 64; i++) init[i] = 1000 + i;
    vyre_backend_buffer *b = buffer(be, VYRE_U32, 64, NULL);
    uint32_t z[64];
    download(b, z);
    for (int i = 0; i < 64; i++) CHECK_EQ_U64(z[i], 0); /* alloc gives zeroed memory */
    OK(vyre_backend_buffer_upload(b, 0, init, 64, &e_));
    uint32_t seven[3] = {7, 7, 7};
    OK(vyre_backend_buffer_upload(b, 10, seven, 3, &e_));
    vyre_backend_buffer *v = NULL, *vv = NULL;
    OK(vyre_backend_buffer_view(b, 20, 30, &v, &e_));
    CHECK_EQ_U64(vyre_backend_buffer_count(v), 30);
    CHECK_EQ_U64(vyre_backend_buffer_type(v), VYRE_U32);
    CHECK(vyre_backend_buffer_backend(v) == be);
    OK(vyre_backend_buffer_view(v, 5, 4, &vv, &e_)); /* elements 25..28 of b */
    OK(vyre_backend_buffer_zero(vv, &e_));
    uint32_t one = 99;
    OK(vyre_backend_buffer_upload(v, 0, &one, 1, &e_)); /* element 20 of b */
    uint32_t part[2];
    OK(vyre_backend_buffer_download(b, 24, part, 2, &e_));
    CHECK_EQ_U64(part[0], 1024);
    CHECK_EQ_U64(part[1], 0);
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_download(v, 25, part, 6, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_view(b, 60, 5, &vv, &e_));
    download(b, out);
    vyre_backend_buffer_free(vv);
    vyre_backend_buffer_free(v);
    vyre_backend_buffer_free(b);
}

/* Every type through upload, a view, zero of a view of the view, and download: out gets
 * each type's 37 elements (at most 8 bytes each) in turn. */
static void types_scenario(vyre_backend *be, unsigned char out[VYRE_TYPE_COUNT][37 * 8]) {
    for (int t = 0; t < VYRE_TYPE_COUNT; t++) {
        unsigned char in[37 * 8];
        rng_state = 7u + (unsigned)t;
        for (uint64_t i = 0; i < 37; i++) random_elem((enum vyre_type)t, false, in, i);
        vyre_backend_buffer *b = buffer(be, (enum vyre_type)t, 37, in), *v = NULL, *vv = NULL;
        OK(vyre_backend_buffer_view(b, 5, 20, &v, &e_));
        OK(vyre_backend_buffer_view(v, 3, 4, &vv, &e_)); /* elements 8..11 of b */
        OK(vyre_backend_buffer_zero(vv, &e_));
        OK(vyre_backend_buffer_upload(v, 19, in, 1, &e_)); /* element 24 of b = in[0] */
        download(b, out[t]);
        size_t es = vyre_type_size((enum vyre_type)t);
        CHECK(memcmp(out[t], in, 8 * es) == 0);
        CHECK(memcmp(out[t] + 24 * es, in, es) == 0);
        vyre_backend_buffer_free(vv);
        vyre_backend_buffer_free(v);
        vyre_backend_buffer_free(b);
    }
}

/* launch, launch_timed and prepared launches on views and a param. */
static void launch_scenario(vyre_backend *be, float yout[300], uint32_t vout[100]) {
    float x[300], y[300];
    rng_state = 42;
    for (int i = 0; i < 300; i++) {
        random_elem(VYRE_F32, false, x, (uint64_t)i);
        random_elem(VYRE_F32, false, y, (uint64_t)i);
    }
    vyre_backend_kernel *k = compile_text(be, SAXPY);
    vyre_backend_buffer *bx = buffer(be, VYRE_F32, 300, x), *by = buffer(be, VYRE_F32, 300, y);
    float a = 1.75f;
    vyre_bits pa = 0;
    memcpy(&pa, &a, 4);
    vyre_backend_buffer *bufs[2] = {bx, by};
    struct vyre_backend_args args = {
        .buffers = bufs, .nbuffers = 2, .params = &pa, .nparams = 1, .n = 0, .grid = NULL};
    OK(vyre_backend_launch(k, &args, &e_));
    struct vyre_timing t;
    OK(vyre_backend_launch_timed(k, &args, &t, &e_));
    CHECK(t.wall_ns > 0);
    CHECK(t.device_ns > 0);
    download(by, yout);

    vyre_backend_kernel *s = compile_text(be, SCALE), *inc = compile_text(be, INC);
    uint32_t v0[100];
    for (uint32_t i = 0; i < 100; i++) v0[i] = i;
    vyre_backend_buffer *bv = buffer(be, VYRE_U32, 100, v0), *view = NULL;
    OK(vyre_backend_buffer_view(bv, 10, 50, &view, &e_));
    vyre_bits k3 = 3;
    struct vyre_backend_args sa = {
        .buffers = &view, .nbuffers = 1, .params = &k3, .nparams = 1, .n = 0, .grid = NULL};
    vyre_backend_prepared *pl = NULL;
    OK(vyre_backend_prepare(s, &sa, &pl, &e_));
    for (int r = 0; r < 3; r++) OK(vyre_backend_launch_prepared(pl, &e_));
    vyre_backend_prepared_free(pl);
    struct vyre_backend_args ia = {.buffers = &bv,
                                   .nbuffers = 1,
                                   .params = NULL,
                                   .nparams = 0,
                                   .n = 37,
                                   .grid = NULL}; /* n = 37: one workgroup */
    OK(vyre_backend_launch(inc, &ia, &e_));
    OK(vyre_backend_synchronize(be, &e_));
    download(bv, vout);
    vyre_backend_buffer_free(view);
    vyre_backend_buffer_free(bv);
    vyre_backend_buffer_free(bx);
    vyre_backend_buffer_free(by);
    vyre_backend_kernel_free(s);
    vyre_backend_kernel_free(inc);
    vyre_backend_kernel_free(k);
}

/* sequence with a prefix, rounds and ranged readback; graph replay. */
static void sequence_scenario(vyre_backend *be, uint32_t rb[2][20], uint32_t gout[100]) {
    vyre_backend_kernel *s = compile_text(be, SCALE), *inc = compile_text(be, INC);
    uint32_t v0[100];
    for (uint32_t i = 0; i < 100; i++) v0[i] = i;
    vyre_backend_buffer *v = buffer(be, VYRE_U32, 100, v0), *w = buffer(be, VYRE_U32, 100, v0);
    vyre_bits k2 = 2;
    struct vyre_backend_step steps[3] = {{s, BARGS(&v, 1, &k2, 1, 0, NULL)},
                                         {inc, BARGS(&v, 1, NULL, 0, 0, NULL)},
                                         {inc, BARGS(&w, 1, NULL, 0, 50, NULL)}};
    struct vyre_backend_readback r[2] = {{v, 5, 20, rb[0]}, {w, 40, 20, rb[1]}};
    struct vyre_timing t;
    struct vyre_sequence_options o = {1, 4, r, 2, &t};
    OK(vyre_backend_sequence(be, steps, 3, &o, &e_));
    CHECK(t.wall_ns > 0);
    FAILS(VYRE_ERR_ARG,
          vyre_backend_sequence(be, steps, 3, &(struct vyre_sequence_options){4, 1, NULL, 0, NULL},
                                &e_));

    vyre_backend_graph *g = NULL;
    OK(vyre_backend_graph_capture(be, steps, 2, &g, &e_));
    OK(vyre_backend_graph_launch(g, 3, &t, &e_));
    CHECK(t.wall_ns > 0);
    OK(vyre_backend_graph_launch(g, 1, NULL, &e_));
    download(v, gout);
    vyre_backend_graph_free(g);
    vyre_backend_buffer_free(v);
    vyre_backend_buffer_free(w);
    vyre_backend_kernel_free(s);
    vyre_backend_kernel_free(inc);
}

/* megakernel: scale once (prefix), then inc on v and w 3 rounds, in mode `mode` for this
 * call only. */
static void mega_scenario(vyre_backend *be, enum vyre_grid_sync mode, uint32_t out[2][100]) {
    vyre_backend_kernel *s = compile_text(be, SCALE), *inc = compile_text(be, INC);
    uint32_t v0[100];
    for (uint32_t i = 0; i < 100; i++) v0[i] = 3 * i;
    vyre_backend_buffer *v = buffer(be, VYRE_U32, 100, v0), *w = buffer(be, VYRE_U32, 100, v0);
    vyre_bits k5 = 5;
    struct vyre_backend_step steps[3] = {{s, BARGS(&v, 1, &k5, 1, 0, NULL)},
                                         {inc, BARGS(&v, 1, NULL, 0, 0, NULL)},
                                         {inc, BARGS(&w, 1, NULL, 0, 0, NULL)}};
    struct vyre_timing t;
    uint64_t rounds = 99;
    struct vyre_megakernel_options o = {1, 3, NULL, 0, &t, &rounds, mode};
    OK(vyre_backend_megakernel(be, steps, 3, &o, &e_));
    CHECK(t.wall_ns > 0);
    CHECK_EQ_U64(rounds, 0); /* no converge loop */
    download(v, out[0]);
    download(w, out[1]);
    vyre_backend_buffer_free(v);
    vyre_backend_buffer_free(w);
    vyre_backend_kernel_free(s);
    vyre_backend_kernel_free(inc);
}

/* debug mode: a launch over n = len + 3 reads and writes 3 elements past v's end and reads
 * 3 past w's; the report names both with those counts, and a second report is empty. */
static void debug_scenario(vyre_backend *be, uint32_t vout[16]) {
    OK(vyre_backend_set_debug(be, true, &e_));
    struct vyre_backend_info in;
    OK(vyre_backend_info(be, &in, &e_));
    CHECK(in.debug);
    vyre_backend_kernel *k = compile_text(be, OOB);
    uint32_t one[16];
    for (int i = 0; i < 16; i++) one[i] = 1;
    vyre_backend_buffer *v = buffer(be, VYRE_U32, 16, one), *w = buffer(be, VYRE_U32, 16, one);
    vyre_backend_buffer *bufs[2] = {v, w};
    vyre_bits n = 19;
    struct vyre_backend_args a = {
        .buffers = bufs, .nbuffers = 2, .params = &n, .nparams = 1, .n = 19, .grid = NULL};
    OK(vyre_backend_launch(k, &a, &e_));
    download(v, vout);
    struct vyre_backend_oob *r = NULL;
    size_t nr = 0;
    OK(vyre_backend_oob_report(be, &r, &nr, &e_));
    CHECK_EQ_U64(nr, 2);
    if (nr == 2) {
        CHECK(strcmp(r[0].name, "v") == 0 && strcmp(r[1].name, "w") == 0);
        CHECK_EQ_U64(r[0].loads, 3);
        CHECK_EQ_U64(r[0].stores, 3);
        CHECK_EQ_U64(r[1].loads, 3);
        CHECK_EQ_U64(r[1].stores, 0);
    }
    free(r);
    OK(vyre_backend_oob_report(be, &r, &nr, &e_));
    CHECK_EQ_U64(nr, 0);
    free(r);
    OK(vyre_backend_set_debug(be, false, &e_));
    vyre_backend_buffer_free(v);
    vyre_backend_buffer_free(w);
    vyre_backend_kernel_free(k);
}

static void compare_u32(vyre_backend *be, const char *what, const uint32_t *want,
                        const uint32_t *got, uint64_t n) {
    long at = differs(VYRE_U32, want, got, n, 0);
    harness_checks++;
    if (at >= 0)
        harness_fail(__FILE__, __LINE__,
                     "%s: %s differs from the reference at element %ld: %u vs %u",
                     vyre_backend_name(be), what, at, want[at], got[at]);
}

static void test_operations(vyre_backend *be, vyre_backend *ref) {
    vyre_backend *bes[2] = {ref, be};
    static uint32_t bo[2][64], vo[2][100], rb[2][2][20], go[2][100], mo[2][2][100], dbg[2][16];
    static float yo[2][300];
    static unsigned char ty[2][VYRE_TYPE_COUNT][37 * 8];
    /* The fake driver runs a launch on the interpreter only when its kernel has the
     * program's own parameters, which a cooperative grid kernel does not, while the host
     * split's section kernels do: there the megakernel runs split (its own mode, for
     * that call only); elsewhere in the backend's mode. */
    enum vyre_grid_sync mega_mode = control && !is_ref(be) ? VYRE_GRID_SPLIT : VYRE_GRID_AUTO;
    for (int w = 0; w < 2; w++) {
        buffers_scenario(bes[w], bo[w]);
        types_scenario(bes[w], ty[w]);
        launch_scenario(bes[w], yo[w], vo[w]);
        sequence_scenario(bes[w], rb[w], go[w]);
        mega_scenario(bes[w], mega_mode, mo[w]);
        debug_scenario(bes[w], dbg[w]);
    }
    compare_u32(be, "buffer ops", bo[0], bo[1], 64);
    for (int t = 0; t < VYRE_TYPE_COUNT; t++) {
        harness_checks++;
        if (memcmp(ty[0][t], ty[1][t], 37 * vyre_type_size((enum vyre_type)t)) != 0)
            harness_fail(__FILE__, __LINE__, "%s: %s buffer ops differ from the reference",
                         vyre_backend_name(be), vyre_type_name((enum vyre_type)t));
    }
    long at = differs(VYRE_F32, yo[0], yo[1], 300, 0);
    harness_checks++;
    if (at >= 0)
        harness_fail(__FILE__, __LINE__, "%s: saxpy differs at %ld", vyre_backend_name(be), at);
    compare_u32(be, "prepared launches", vo[0], vo[1], 100);
    compare_u32(be, "sequence readback 1", rb[0][0], rb[1][0], 20);
    compare_u32(be, "sequence readback 2", rb[0][1], rb[1][1], 20);
    compare_u32(be, "graph replay", go[0], go[1], 100);
    compare_u32(be, "megakernel v", mo[0][0], mo[1][0], 100);
    compare_u32(be, "megakernel w", mo[0][1], mo[1][1], 100);
    compare_u32(be, "debug run", dbg[0], dbg[1], 16);
    /* the values themselves, so a backend equal to a broken reference still fails */
    CHECK_EQ_U64(bo[0][10], 7);
    CHECK_EQ_U64(bo[0][20], 99);
    CHECK_EQ_U64(bo[0][25], 0);
    CHECK_EQ_U64(vo[0][10], 10 * 27 + 1); /* 3 prepared launches of x3, then inc */
    CHECK_EQ_U64(vo[0][60], 61);          /* n = 37 is one workgroup of 64: elements 0..63 */
    CHECK_EQ_U64(vo[0][70], 70);
    CHECK_EQ_U64(rb[0][0][0], 5 * 2 + 4); /* v[5]: x2 once, +1 four times */
    CHECK_EQ_U64(rb[0][1][0], 40 + 4);    /* w[40]: n = 50 covers it */
    CHECK_EQ_U64(rb[0][1][19], 59 + 4);   /* w[59]: n = 50 launches one workgroup of 64 */
    CHECK_EQ_U64(go[0][1], 111); /* v[1] = 6 after the sequence, then 4 replays of x2, +1 */
    CHECK_EQ_U64(mo[0][0][2], 6 * 5 + 3);
    CHECK_EQ_U64(mo[0][1][2], 6 + 3);
    CHECK_EQ_U64(dbg[0][3], 2);
}

/* ---- megakernel modes ------------------------------------------------------------------ */

static const char COUNT[] = "(program gcount (workgroup 32)\n"
                            "  (buffer x u32 read_write)\n"
                            "  (buffer flag u32 read_write)\n"
                            "  (param max u32)\n"
                            "  (converge flag max\n"
                            "    (let i (gid x))\n"
                            "    (if (lt i (len x))\n"
                            "      (then\n"
                            "        (if (gt (load x i) 0u32)\n"
                            "          (then\n"
                            "            (store x i (sub (load x i) 1u32))\n"
                            "            (store flag 0u32 1u32)))))))";

/* The countdown converge run once on be: by a launch in the backend's mode (grid_run
 * false), or by vyre_backend_grid_run in `mode` for that run only. x and the rounds come
 * back; `ran` gets how a native device ran it ("" without one). */
static void count_scenario(vyre_backend *be, bool grid_run, enum vyre_grid_sync mode, uint32_t x[8],
                           uint64_t *rounds, char ran[16]) {
    vyre_backend_kernel *k = compile_text(be, COUNT);
    static const uint32_t x0[8] = {3, 0, 1, 5, 2, 0, 4, 1};
    uint32_t seven = 7;
    vyre_backend_buffer *bx = buffer(be, VYRE_U32, 8, x0), *bf = buffer(be, VYRE_U32, 1, &seven);
    vyre_backend_buffer *bufs[2] = {bx, bf};
    vyre_bits max = 100;
    struct vyre_backend_args a = {
        .buffers = bufs, .nbuffers = 2, .params = &max, .nparams = 1, .n = 0, .grid = NULL};
    *rounds = 99;
    if (grid_run) {
        struct vyre_timing t;
        struct vyre_grid_run_options o = {.grid_sync = mode, .timing = &t, .rounds = rounds};
        OK(vyre_backend_grid_run(k, &a, &o, &e_));
        CHECK(t.wall_ns > 0);
    } else {
        OK(vyre_backend_launch(k, &a, &e_));
        OK(vyre_backend_synchronize(be, &e_));
        OK(vyre_backend_kernel_rounds(k, rounds, &e_));
    }
    download(bx, x);
    uint32_t blocks = 0;
    void *nk = vyre_backend_kernel_native(k);
    snprintf(ran, 16, "%s", nk ? vyre_cuda_kernel_grid_mode(nk, &blocks) : "");
    vyre_backend_buffer_free(bx);
    vyre_backend_buffer_free(bf);
    vyre_backend_kernel_free(k);
}

/* The grid sync mode: kept per backend object (another object keeps its own), passed to
 * each launch, and a grid run's own mode is for that run only; results and rounds equal
 * the reference's in every mode. */
static void test_grid_modes(vyre_backend *be, vyre_backend *ref) {
    const char *env = getenv("VYRE_GRID_SYNC");
    if (!env || !*env) CHECK(vyre_backend_grid_sync(be) == VYRE_GRID_AUTO);
    OK(vyre_backend_set_grid_sync(be, VYRE_GRID_SPLIT, &e_));
    CHECK(vyre_backend_grid_sync(be) == VYRE_GRID_SPLIT);
    FAILS(VYRE_ERR_ARG, vyre_backend_set_grid_sync(be, (enum vyre_grid_sync)9, &e_));
    CHECK(vyre_backend_grid_sync(be) == VYRE_GRID_SPLIT);
    FAILS(VYRE_ERR_ARG, vyre_backend_set_grid_sync(NULL, VYRE_GRID_SPLIT, &e_));
    CHECK(vyre_backend_grid_sync(NULL) == VYRE_GRID_AUTO);
    vyre_backend *other = NULL;
    OK(vyre_backend_open(vyre_backend_name(be), 0, NULL, &other, &e_));
    if (other && (!env || !*env)) CHECK(vyre_backend_grid_sync(other) == VYRE_GRID_AUTO);
    vyre_backend_close(other);

    uint32_t want[8], got[8];
    uint64_t wr = 0, gr = 0;
    char ran[16];
    count_scenario(ref, false, VYRE_GRID_AUTO, want, &wr, ran);
    CHECK_EQ_U64(wr, 6); /* 5 rounds count the largest element down, the 6th sees no change */
    CHECK_EQ_U64(want[3], 0);
    /* the backend's mode (split) reaches an ordinary launch */
    count_scenario(be, false, VYRE_GRID_AUTO, got, &gr, ran);
    compare_u32(be, "grid launch (split)", want, got, 8);
    CHECK_EQ_U64(gr, wr);
    if (vyre_backend_native_device(be)) CHECK(strcmp(ran, "split") == 0);
    /* a grid run's own mode, for that run only */
    count_scenario(be, true, VYRE_GRID_GRAPH, got, &gr, ran);
    compare_u32(be, "grid run (graph)", want, got, 8);
    CHECK_EQ_U64(gr, wr);
    if (vyre_backend_native_device(be)) CHECK(strcmp(ran, "graph") == 0);
    CHECK(vyre_backend_grid_sync(be) == VYRE_GRID_SPLIT);
    /* AUTO: the backend's mode (split here); the fake cannot compute a cooperative run */
    count_scenario(be, true, VYRE_GRID_AUTO, got, &gr, ran);
    compare_u32(be, "grid run (the backend's mode)", want, got, 8);
    CHECK_EQ_U64(gr, wr);
    if (vyre_backend_native_device(be)) CHECK(strcmp(ran, "split") == 0);
    FAILS(VYRE_ERR_ARG, vyre_backend_grid_run(NULL, NULL, NULL, &e_));
    OK(vyre_backend_set_grid_sync(be, VYRE_GRID_AUTO, &e_));
}

/* Counters: the names both backends share move the same way. */
static void test_stats(vyre_backend *be) {
    uint64_t l0 = 0, l1 = 0, live0 = 0, live1 = 0;
    CHECK(vyre_backend_stat(be, "launches", &l0));
    CHECK(vyre_backend_stat(be, "live_buffers", &live0));
    vyre_backend_kernel *k = compile_text(be, INC);
    vyre_backend_buffer *v = buffer(be, VYRE_U32, 10, NULL);
    uint64_t mid = 0;
    CHECK(vyre_backend_stat(be, "live_buffers", &mid));
    CHECK_EQ_U64(mid, live0 + 1);
    struct vyre_backend_args a = {
        .buffers = &v, .nbuffers = 1, .params = NULL, .nparams = 0, .n = 0, .grid = NULL};
    for (int i = 0; i < 5; i++) OK(vyre_backend_launch(k, &a, &e_));
    OK(vyre_backend_synchronize(be, &e_));
    CHECK(vyre_backend_stat(be, "launches", &l1));
    CHECK_EQ_U64(l1 - l0, 5);
    vyre_backend_buffer_free(v);
    vyre_backend_kernel_free(k);
    CHECK(vyre_backend_stat(be, "live_buffers", &live1));
    CHECK_EQ_U64(live1, live0);
    struct vyre_backend_stat s[VYRE_BACKEND_MAX_STATS];
    size_t n = 0;
    OK(vyre_backend_stats(be, s, VYRE_BACKEND_MAX_STATS, &n, &e_));
    CHECK(n >= 9);
    uint64_t x;
    CHECK(!vyre_backend_stat(be, "no_such_counter", &x));
    /* trim, lost and the native device: the reference has none, "cuda" its device */
    OK(vyre_backend_trim(be, &e_));
    CHECK(!vyre_backend_lost(be));
    CHECK((vyre_backend_native_device(be) == NULL) == is_ref(be));
    FAILS(VYRE_ERR_ARG, vyre_backend_trim(NULL, &e_));
    CHECK(!vyre_backend_lost(NULL));
    CHECK(vyre_backend_native_device(NULL) == NULL);
    /* a buffer's address and native object; host memory is the address itself */
    struct vyre_backend_info in;
    OK(vyre_backend_info(be, &in, &e_));
    CHECK(in.host_memory == is_ref(be));
    uint32_t vals[4] = {1, 2, 3, 4};
    vyre_backend_buffer *hb = buffer(be, VYRE_U32, 4, vals), *hv = NULL;
    OK(vyre_backend_buffer_view(hb, 2, 2, &hv, &e_));
    CHECK(vyre_backend_buffer_address(hb) != 0);
    CHECK_EQ_U64(vyre_backend_buffer_address(hv) - vyre_backend_buffer_address(hb), 8);
    if (in.host_memory)
        CHECK_EQ_U64(((const uint32_t *)(uintptr_t)vyre_backend_buffer_address(hv))[0], 3);
    CHECK((vyre_backend_buffer_native(hb) != NULL) == (vyre_backend_native_device(be) != NULL));
    vyre_backend_buffer_free(hv);
    vyre_backend_buffer_free(hb);
    CHECK(vyre_backend_buffer_address(NULL) == 0);
    CHECK(vyre_backend_buffer_native(NULL) == NULL);
    vyre_backend_kernel *kk = compile_text(be, INC);
    CHECK((vyre_backend_kernel_native(kk) != NULL) == (vyre_backend_native_device(be) != NULL));
    vyre_backend_kernel_free(kk);
    CHECK(vyre_backend_kernel_native(NULL) == NULL);
}

/* supports, info and the wrapper's checks: misuse is an error with a Fix, never a crash. */
static void test_misuse(vyre_backend *be, vyre_backend *other) {
    struct vyre_backend_info in;
    OK(vyre_backend_info(be, &in, &e_));
    CHECK(strcmp(in.backend, vyre_backend_name(be)) == 0);
    CHECK(in.max_threads_per_block >= 64);
    char why[1024];
    vyre_program *good = parse(INC);
    CHECK(vyre_backend_supports(be, good, why, sizeof why));
    vyre_program *bad = parse("(program bad (workgroup 1) (buffer o u32 write)"
                              " (store o 0u32 (add 1u32 1i32)))");
    CHECK(!vyre_backend_supports(be, bad, why, sizeof why));
    CHECK_STR_CONTAINS(why, "Fix:");
    vyre_backend_kernel *k = NULL;
    FAILS(VYRE_ERR_INVALID, vyre_backend_compile(be, bad, &k, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_compile(NULL, good, &k, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_compile(be, NULL, &k, &e_));
    vyre_backend_buffer *b = NULL;
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_alloc(NULL, VYRE_U32, 4, &b, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_upload(NULL, 0, why, 1, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_download(NULL, 0, why, 1, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(NULL, NULL, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_sequence(NULL, NULL, 0, NULL, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_graph_launch(NULL, 1, NULL, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_synchronize(NULL, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_info(NULL, &in, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_oob_report(NULL, NULL, NULL, &e_));
    CHECK(!vyre_backend_supports(NULL, good, why, sizeof why));
    vyre_backend_buffer_free(NULL);
    vyre_backend_kernel_free(NULL);
    vyre_backend_graph_free(NULL);
    vyre_backend_prepared_free(NULL);
    vyre_backend_close(NULL);
    k = compile_text(be, INC);
    vyre_backend_buffer *f = buffer(be, VYRE_F32, 4, NULL), *u = buffer(be, VYRE_U32, 4, NULL);
    vyre_backend_buffer *o = buffer(other, VYRE_U32, 4, NULL);
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &BARGS(&f, 1, NULL, 0, 0, NULL), &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &BARGS(&o, 1, NULL, 0, 0, NULL), &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &BARGS(&u, 0, NULL, 0, 0, NULL), &e_));
    vyre_backend_buffer *nul = NULL;
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &BARGS(&nul, 1, NULL, 0, 0, NULL), &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_alloc(be, (enum vyre_type)99, 4, &b, &e_));
    /* err may be NULL: the status alone comes back */
    CHECK_EQ_U64(vyre_backend_launch(NULL, NULL, NULL), VYRE_ERR_ARG);
    CHECK_EQ_U64(vyre_backend_compile(be, bad, &k, NULL), VYRE_ERR_INVALID);
    CHECK_EQ_U64(vyre_backend_buffer_view(u, 3, 9, &b, NULL), VYRE_ERR_ARG);
    /* a view whose owner was freed: every use is an error, freeing it is fine */
    vyre_backend_buffer *owner = buffer(be, VYRE_U32, 8, NULL), *view = NULL;
    OK(vyre_backend_buffer_view(owner, 2, 4, &view, &e_));
    vyre_backend_buffer_free(owner);
    uint32_t four[4];
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_download(view, 0, four, 4, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_buffer_zero(view, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &BARGS(&view, 1, NULL, 0, 0, NULL), &e_));
    vyre_backend_buffer_free(view);
    vyre_backend_buffer_free(f);
    vyre_backend_buffer_free(u);
    vyre_backend_buffer_free(o);
    vyre_backend_kernel_free(k);
    vyre_program_free(good);
    vyre_program_free(bad);
}

/* Two threads, each with its own backend object of the same kind, at once: the
 * interface keeps no global state, so both compute what one thread alone does (the
 * ThreadSanitizer build, VYRE_TSAN, checks the absence of races). No CHECK in the
 * threads: the harness counters are not thread-safe. */
struct thread_job {
    const char *name;
    enum vyre_status st;
    char msg[256];
    uint32_t out[256];
};

static void *thread_main(void *arg) {
    struct thread_job *j = arg;
    struct vyre_error e;
    vyre_backend *be = NULL;
    vyre_backend_kernel *k = NULL;
    vyre_backend_buffer *v = NULL;
    vyre_program *p = NULL;
    j->st = vyre_text_parse(INC, strlen(INC), &p, &e);
    if (j->st == VYRE_OK) j->st = vyre_backend_open(j->name, 0, NULL, &be, &e);
    if (j->st == VYRE_OK) j->st = vyre_backend_compile(be, p, &k, &e);
    if (j->st == VYRE_OK) j->st = vyre_backend_buffer_alloc(be, VYRE_U32, 256, &v, &e);
    for (int r = 0; r < 50 && j->st == VYRE_OK; r++)
        j->st = vyre_backend_launch(k, &BARGS(&v, 1, NULL, 0, 0, NULL), &e);
    if (j->st == VYRE_OK) j->st = vyre_backend_buffer_download(v, 0, j->out, 256, &e);
    if (j->st != VYRE_OK) snprintf(j->msg, sizeof j->msg, "%.200s", e.message);
    vyre_backend_close(be);
    vyre_program_free(p);
    return NULL;
}

static void test_threads(vyre_backend *be) {
    if (control && !is_ref(be)) return; /* the fake's registrations are not thread-safe */
    struct thread_job jobs[2];
    pthread_t th[2];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 2; i++) {
        jobs[i].name = vyre_backend_name(be);
        CHECK(pthread_create(&th[i], NULL, thread_main, &jobs[i]) == 0);
    }
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
        CHECK_EQ_U64(jobs[i].st, VYRE_OK);
        if (jobs[i].st != VYRE_OK) printf("  thread %d: %s\n", i, jobs[i].msg);
        CHECK_EQ_U64(jobs[i].out[0], 50);
        CHECK_EQ_U64(jobs[i].out[255], 50);
    }
}

/* ---- registry ------------------------------------------------------------------------------ */

static void test_registry(void) {
    size_t n = 0;
    OK(vyre_backend_list(NULL, 0, &n, &e_));
    CHECK(n >= 2);
    struct vyre_backend_entry es[8];
    OK(vyre_backend_list(es, 8, &n, &e_));
    bool saw_ref = false, saw_cuda = false;
    for (size_t i = 0; i < n && i < 8; i++) {
        if (strcmp(es[i].name, "reference") == 0) {
            saw_ref = true;
            CHECK(es[i].available);
            CHECK_EQ_U64(es[i].reason[0], 0);
        }
        if (strcmp(es[i].name, "cuda") == 0) {
            saw_cuda = true;
            CHECK(es[i].priority > 0);
            if (!es[i].available) CHECK(es[i].reason[0] != 0); /* says why */
        }
    }
    CHECK(saw_ref && saw_cuda);
    vyre_backend *be = NULL;
    FAILS(VYRE_ERR_ARG, vyre_backend_open("tpu", 0, NULL, &be, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_open("reference", 1, NULL, &be, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_open("reference", 0, NULL, NULL, &e_));
    OK(vyre_backend_open(NULL, 0, NULL, &be, &e_));
    CHECK(be != NULL);
    /* the best available: cuda when it is */
    bool cuda_ok = false;
    for (size_t i = 0; i < n && i < 8; i++)
        if (strcmp(es[i].name, "cuda") == 0) cuda_ok = es[i].available;
    CHECK(strcmp(vyre_backend_name(be), cuda_ok ? "cuda" : "reference") == 0);
    /* closing frees whatever is still alive (ASan/LSan check this build) */
    vyre_backend_buffer *b = buffer(be, VYRE_U32, 8, NULL), *v = NULL;
    OK(vyre_backend_buffer_view(b, 2, 2, &v, &e_));
    (void)compile_text(be, INC);
    vyre_backend_close(be);
}

/* The reference's own counters keep the binding's names and meaning. */
static void test_reference_counters(vyre_backend *ref) {
    vyre_backend *be = NULL;
    OK(vyre_backend_open("reference", 0, &(struct vyre_backend_options){.debug = false}, &be, &e_));
    vyre_backend_kernel *k = compile_text(be, INC);
    vyre_backend_buffer *v = buffer(be, VYRE_U32, 100, NULL);
    struct vyre_backend_step st = {k, BARGS(&v, 1, NULL, 0, 0, NULL)};
    uint32_t dst[10];
    struct vyre_backend_readback r = {v, 0, 10, dst};
    OK(vyre_backend_sequence(be, &st, 1, &(struct vyre_sequence_options){0, 2, &r, 1, NULL}, &e_));
    const char *names[] = {"launches",     "invocations",     "compiles",          "sequences",
                           "live_buffers", "buffers_created", "live_buffer_bytes", "uploads",
                           "downloads",    "bytes_down",      "live_kernels"};
    const uint64_t want[] = {2, 2 * 128, 1, 1, 1, 1, 400, 0, 1, 40, 1};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t got = 0;
        CHECK(vyre_backend_stat(be, names[i], &got));
        harness_checks++;
        if (got != want[i])
            harness_fail(__FILE__, __LINE__, "reference counter %s: %llu, want %llu", names[i],
                         (unsigned long long)got, (unsigned long long)want[i]);
    }
    CHECK_EQ_U64(dst[9], 2);
    vyre_backend_close(be);
    (void)ref;
}

/* ---- one-shot runs (vyre_backend_run) ------------------------------------------------- */

static const char RUNP[] = "(program runp (workgroup 64)\n"
                           "  (buffer x u32 read)\n"
                           "  (buffer y u32 read_write)\n"
                           "  (buffer z u32 write)\n"
                           "  (param k u32)\n"
                           "  (let i (gid x))\n"
                           "  (if (lt i (len y))\n"
                           "    (then (store y i (add (load y i) (mul (load x i) k)))\n"
                           "          (store z i (add (load x i) 1u32)))))";

/* Host data in and out, a resident buffer, timing and rounds; results into out[2][100]
 * (y then z) and res[100] (the resident y). The caller's data must not change. */
static void run_scenario(vyre_backend *be, uint32_t out[2][100], uint32_t res[100]) {
    if (control && !is_ref(be)) vyre_backend_kernel_free(compile_text(be, RUNP)); /* register */
    vyre_program *p = parse(RUNP);
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
    CHECK_EQ_U64(y[7], 14); /* the caller's data is never written */
    CHECK_EQ_U64(x[7], 7);
    /* y resident: used in place; n = 50 covers one workgroup of 64 elements */
    vyre_backend_buffer *yb = buffer(be, VYRE_U32, 100, y);
    vyre_backend_buffer *resident[3] = {NULL, yb, NULL};
    uint32_t z2[100];
    void *dst2[3] = {NULL, NULL, z2};
    o.resident = resident;
    o.out = dst2;
    o.timing = NULL;
    o.n = 50;
    OK(vyre_backend_run(be, p, &o, &e_));
    download(yb, res);
    vyre_backend_buffer_free(yb);
    vyre_program_free(p);
}

/* The misuse vyre_backend_run answers with an error and a Fix. */
static void run_misuse(vyre_backend *be, vyre_backend *other) {
    vyre_program *p = parse(RUNP);
    uint32_t x[4] = {0};
    struct vyre_buffer_arg in[3] = {{x, 4}, {x, 4}, {NULL, 4}};
    vyre_bits k = 1;
    struct vyre_backend_run_options o = {.buffers = in, .nbuffers = 2, .params = &k, .nparams = 1};
    FAILS(VYRE_ERR_ARG, vyre_backend_run(be, p, &o, &e_)); /* 2 of 3 buffers */
    o.nbuffers = 3;
    vyre_backend_buffer *ob = buffer(other, VYRE_U32, 4, NULL), *fb = buffer(be, VYRE_F32, 4, NULL);
    vyre_backend_buffer *resident[3] = {ob, NULL, NULL};
    o.resident = resident;
    FAILS(VYRE_ERR_ARG, vyre_backend_run(be, p, &o, &e_)); /* another backend's buffer */
    resident[0] = fb;
    FAILS(VYRE_ERR_ARG, vyre_backend_run(be, p, &o, &e_)); /* f32 for u32 */
    vyre_backend_buffer_free(ob);
    vyre_backend_buffer_free(fb);
    FAILS(VYRE_ERR_ARG, vyre_backend_run(NULL, p, &o, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_run(be, p, NULL, &e_));
    vyre_program_free(p);
    vyre_program *w = parse("(program wr (workgroup 4) (buffer o u32 write) (worklist f u32)"
                            " (store o (gid x) (len f)))");
    struct vyre_backend_run_options ow = {.buffers = in, .nbuffers = 1};
    FAILS(VYRE_ERR_ARG, vyre_backend_run(be, w, &ow, &e_)); /* runs bind no worklist */
    vyre_program_free(w);
}

/* ---- worklists (vyre_backend_worklist_*) --------------------------------------------- */

/* Stores each current item into o and pushes item + 1 and item + 100 for the next round. */
static const char WLP[] = "(program wlp (workgroup 4)\n"
                          "  (buffer o u32 read_write)\n"
                          "  (worklist f u32)\n"
                          "  (let i (gid x))\n"
                          "  (if (lt i (len f))\n"
                          "    (then (store o i (load f i))\n"
                          "          (push f (add (load f i) 1u32))\n"
                          "          (push f (add (load f i) 100u32)))))";

/* One launch of WLP over 8 invocations with w bound (vyre_backend_args.worklists). */
static void wl_launch(vyre_backend_kernel *k, vyre_backend_buffer *o, vyre_backend_worklist *w) {
    static const uint32_t grid[3] = {2, 1, 1};
    struct vyre_backend_args a = {
        .buffers = &o, .nbuffers = 1, .grid = grid, .worklists = &w, .nworklists = 1};
    OK(vyre_backend_launch(k, &a, &e_));
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

#define WL_STATE(w, cur, next, cap, over)              \
    do {                                               \
        struct vyre_backend_worklist_state ws_;        \
        OK(vyre_backend_worklist_state(w, &ws_, &e_)); \
        CHECK_EQ_U64(ws_.cur_count, cur);              \
        CHECK_EQ_U64(ws_.next_count, next);            \
        CHECK_EQ_U64(ws_.capacity, cap);               \
        CHECK_EQ_U64(ws_.overflow_needed, over);       \
    } while (0)

/* push, state, items, a round of pushes, advance (no host sync), clear, an overflow
 * reported with the capacity needed; the items of the second round, sorted (a round's
 * items are a multiset), into items[6]. */
static void worklist_scenario(vyre_backend *be, uint32_t items[6]) {
    struct vyre_backend_info in;
    OK(vyre_backend_info(be, &in, &e_));
    vyre_backend_kernel *k = compile_text(be, WLP);
    vyre_backend_buffer *o = buffer(be, VYRE_U32, 8, NULL);
    vyre_backend_worklist *w = NULL;
    OK(vyre_backend_worklist_alloc(be, VYRE_U32, 8, &w, &e_));
    CHECK_EQ_U64(vyre_backend_worklist_type(w), VYRE_U32);
    CHECK_EQ_U64(vyre_backend_worklist_capacity(w), 8);
    CHECK(vyre_backend_worklist_backend(w) == be);
    CHECK((vyre_backend_worklist_native(w) != NULL) == (vyre_backend_native_device(be) != NULL));
    CHECK((vyre_backend_worklist_host(w) != NULL) == in.host_memory);
    WL_STATE(w, 0, 0, 8, 0);
    static const uint32_t seed[3] = {1, 2, 3};
    OK(vyre_backend_worklist_push(w, seed, 3, &e_));
    WL_STATE(w, 3, 0, 8, 0);
    uint32_t got[8] = {0};
    OK(vyre_backend_worklist_items(w, got, 3, &e_));
    CHECK(memcmp(got, seed, sizeof seed) == 0);
    FAILS(VYRE_ERR_LIMIT, vyre_backend_worklist_push(w, got, 6, &e_)); /* 3 + 6 > 8 */
    FAILS(VYRE_ERR_LIMIT, vyre_backend_worklist_push(w, got, 9, &e_)); /* past the capacity */
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_items(w, got, 9, &e_));
    wl_launch(k, o, w);
    WL_STATE(w, 3, 6, 8, 0);
    uint32_t ov[8];
    download(o, ov);
    CHECK_EQ_U64(ov[2], 3);
    /* advance is enqueued: no host synchronisation (the rounds of a converge loop) */
    uint64_t s0 = 0, s1 = 0;
    bool counted = vyre_backend_stat(be, "syncs", &s0);
    OK(vyre_backend_worklist_advance(w, &e_));
    CHECK(vyre_backend_stat(be, "syncs", &s1) == counted);
    CHECK_EQ_U64(s1, s0);
    WL_STATE(w, 6, 0, 8, 0);
    OK(vyre_backend_worklist_items(w, items, 6, &e_));
    qsort(items, 6, sizeof *items, cmp_u32);
    OK(vyre_backend_worklist_clear(w, &e_));
    WL_STATE(w, 0, 0, 8, 0);
    vyre_backend_worklist_free(w);
    /* overflow: 6 pushes into capacity 4 are counted, the 2 past it not stored */
    OK(vyre_backend_worklist_alloc(be, VYRE_U32, 4, &w, &e_));
    OK(vyre_backend_worklist_push(w, seed, 3, &e_));
    wl_launch(k, o, w);
    uint32_t known = vyre_backend_worklist_overflow(w); /* without waiting: 0 or 6 */
    CHECK(known == 0 || known == 6);
    CHECK(known == 6 || vyre_backend_worklist_host(w) == NULL);
    WL_STATE(w, 3, 6, 4, 6);
    OK(vyre_backend_worklist_advance(w, &e_));
    WL_STATE(w, 4, 0, 4, 6); /* current: what was stored; the record stays until clear */
    OK(vyre_backend_worklist_clear(w, &e_));
    WL_STATE(w, 0, 0, 4, 0);
    CHECK_EQ_U64(vyre_backend_worklist_overflow(w), 0);
    /* one left alive: vyre_backend_close frees it */
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_alloc(be, VYRE_BOOL, 4, &w, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_alloc(be, VYRE_U32, 0, &w, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_alloc(NULL, VYRE_U32, 4, &w, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_state(NULL, NULL, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_push(NULL, seed, 1, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_advance(NULL, &e_));
    FAILS(VYRE_ERR_ARG, vyre_backend_worklist_clear(NULL, &e_));
    CHECK(vyre_backend_worklist_native(NULL) == NULL && vyre_backend_worklist_host(NULL) == NULL);
    vyre_backend_worklist_free(NULL);
    vyre_backend_buffer_free(o);
    vyre_backend_kernel_free(k);
}

/* Adds 1 to o[item] for each current item and pushes item + 4 while it is below 16. */
static const char WLS[] = "(program wls (workgroup 4)\n"
                          "  (buffer o u32 read_write)\n"
                          "  (worklist f u32)\n"
                          "  (let i (gid x))\n"
                          "  (if (lt i (len f))\n"
                          "    (then (let v (load f i))\n"
                          "          (atomic add o v 1u32)\n"
                          "          (if (lt v 16u32) (then (push f (add v 4u32)))))))";

/* The same rounds converging on f inside one grid program (a megakernel's form). */
static const char WLC[] = "(program wlc (workgroup 4)\n"
                          "  (buffer o u32 read_write)\n"
                          "  (worklist f u32)\n"
                          "  (param maxr u32)\n"
                          "  (converge f maxr\n"
                          "    (let i (gid x))\n"
                          "    (if (lt i (len f))\n"
                          "      (then (let v (load f i))\n"
                          "            (atomic add o v 1u32)\n"
                          "            (if (lt v 16u32) (then (push f (add v 4u32))))))))";

/* Pushes two items per current item: with capacity 4, four items overflow. */
static const char WLO[] = "(program wlo (workgroup 4)\n"
                          "  (buffer o u32 read_write)\n"
                          "  (worklist f u32)\n"
                          "  (param maxr u32)\n"
                          "  (converge f maxr\n"
                          "    (let i (gid x))\n"
                          "    (if (lt i (len f))\n"
                          "      (then (store o 0u32 (len f))\n"
                          "            (push f 1u32) (push f 2u32)))))";

/* Worklists as launch arguments: a launch sized by a worklist's count, the same in a
 * sequence and a graph replay (the count read when each step runs), a grid run
 * converging on the worklist with its overflow watched, and the misuse. o gets the
 * counts per item value (32), *rounds the grid run's rounds. */
static void worklist_launch_scenario(vyre_backend *be, vyre_backend *other, uint32_t o_out[3][32],
                                     uint64_t *rounds) {
    vyre_backend_kernel *k = compile_text(be, WLS), *kc = compile_text(be, WLC);
    vyre_backend_buffer *o[3] = {buffer(be, VYRE_U32, 32, NULL), buffer(be, VYRE_U32, 32, NULL),
                                 buffer(be, VYRE_U32, 32, NULL)};
    vyre_backend_worklist *w = NULL;
    OK(vyre_backend_worklist_alloc(be, VYRE_U32, 16, &w, &e_));
    static const uint32_t seed[3] = {0, 1, 2};
    /* 1: launches sized by w, advanced between them, until nothing is pushed */
    OK(vyre_backend_worklist_push(w, seed, 3, &e_));
    struct vyre_backend_args a = {
        .buffers = &o[0], .nbuffers = 1, .worklists = &w, .nworklists = 1, .sized = w};
    for (int r = 0; r < 8; r++) {
        OK(vyre_backend_launch(k, &a, &e_));
        OK(vyre_backend_worklist_advance(w, &e_));
    }
    WL_STATE(w, 0, 0, 16, 0);
    /* 2: the same rounds as one sequence step each, then as a graph replayed */
    OK(vyre_backend_worklist_push(w, seed, 3, &e_));
    a.buffers = &o[1];
    struct vyre_backend_step st = {k, a};
    for (int r = 0; r < 8; r++) {
        OK(vyre_backend_sequence(be, &st, 1, NULL, &e_));
        OK(vyre_backend_worklist_advance(w, &e_));
    }
    OK(vyre_backend_worklist_push(w, seed, 3, &e_));
    a.buffers = &o[2];
    st.args = a;
    vyre_backend_graph *g = NULL;
    OK(vyre_backend_graph_capture(be, &st, 1, &g, &e_));
    for (int r = 0; r < 8; r++) {
        OK(vyre_backend_graph_launch(g, 1, NULL, &e_));
        OK(vyre_backend_worklist_advance(w, &e_));
    }
    vyre_backend_graph_free(g);
    for (int i = 0; i < 3; i++) download(o[i], o_out[i]);
    /* 3: the rounds in one grid run, the worklist watched */
    OK(vyre_backend_worklist_push(w, seed, 3, &e_));
    vyre_backend_buffer_free(o[0]);
    o[0] = buffer(be, VYRE_U32, 32, NULL);
    static const uint32_t grid[3] = {4, 1, 1};
    vyre_bits maxr = 100;
    struct vyre_backend_args ac = {.buffers = &o[0],
                                   .nbuffers = 1,
                                   .params = &maxr,
                                   .nparams = 1,
                                   .grid = grid,
                                   .worklists = &w,
                                   .nworklists = 1};
    struct vyre_grid_run_options go = {.rounds = rounds, .watch = w};
    OK(vyre_backend_grid_run(kc, &ac, &go, &e_));
    CHECK_EQ_U64(vyre_backend_worklist_overflow(w), 0);
    uint32_t conv[32];
    download(o[0], conv);
    compare_u32(be, "grid run == launches", o_out[0], conv, 32);
    /* an overflow of the watched worklist is known right after the run */
    vyre_backend_kernel *ko = compile_text(be, WLO);
    vyre_backend_worklist *small = NULL;
    OK(vyre_backend_worklist_alloc(be, VYRE_U32, 4, &small, &e_));
    OK(vyre_backend_worklist_push(small, seed, 3, &e_));
    maxr = 1;
    ac.worklists = &small;
    go = (struct vyre_grid_run_options){.watch = small};
    OK(vyre_backend_grid_run(ko, &ac, &go, &e_));
    CHECK_EQ_U64(vyre_backend_worklist_overflow(small), 6);
    OK(vyre_backend_worklist_clear(small, &e_));
    CHECK_EQ_U64(vyre_backend_worklist_overflow(small), 0);
    /* misuse: every one VYRE_ERR_ARG, nothing run */
    vyre_backend_worklist *wi = NULL, *wo = NULL;
    OK(vyre_backend_worklist_alloc(be, VYRE_I32, 4, &wi, &e_));
    OK(vyre_backend_worklist_alloc(other, VYRE_U32, 4, &wo, &e_));
    struct vyre_backend_args bad = {.buffers = &o[1], .nbuffers = 1, .n = 4};
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &bad, &e_)); /* no worklist bound */
    bad.worklists = &wi;
    bad.nworklists = 1;
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &bad, &e_)); /* i32 for a u32 worklist */
    bad.worklists = &wo;
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &bad, &e_)); /* another backend's */
    bad.worklists = &w;
    bad.sized = w;
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(k, &bad, &e_)); /* sized and n */
    bad.n = 0;
    bad.params = &maxr;
    bad.nparams = 1;
    FAILS(VYRE_ERR_ARG, vyre_backend_launch(kc, &bad, &e_)); /* sized grid program */
    go = (struct vyre_grid_run_options){.watch = wo};
    FAILS(VYRE_ERR_ARG, vyre_backend_grid_run(kc, &ac, &go, &e_)); /* watched: other's */
    vyre_backend_worklist_free(wi);
    vyre_backend_worklist_free(wo);
    vyre_backend_worklist_free(small);
    vyre_backend_worklist_free(w);
    for (int i = 0; i < 3; i++) vyre_backend_buffer_free(o[i]);
    vyre_backend_kernel_free(k);
    vyre_backend_kernel_free(kc);
    vyre_backend_kernel_free(ko);
}

/* vyre_backend_run and the worklist ops on be, against the reference. */
static void test_run_worklists(vyre_backend *be, vyre_backend *ref) {
    static uint32_t out[2][2][100], res[2][100], items[2][6], wo[2][3][32];
    uint64_t rounds[2] = {0, 0};
    vyre_backend *bes[2] = {ref, be};
    for (int w = 0; w < 2; w++) {
        run_scenario(bes[w], out[w], res[w]);
        worklist_scenario(bes[w], items[w]);
        worklist_launch_scenario(bes[w], bes[1 - w] == bes[w] ? NULL : bes[1 - w], wo[w],
                                 &rounds[w]);
    }
    for (int i = 0; i < 3; i++) compare_u32(be, "sized launches", wo[0][i], wo[1][i], 32);
    compare_u32(be, "launch == sequence", wo[0][0], wo[0][1], 32);
    compare_u32(be, "launch == graph", wo[0][0], wo[0][2], 32);
    /* item v is reached from seed v mod 4 <= 2 in v / 4 rounds; values <= 20 exist */
    for (uint32_t v = 0; v < 32; v++) CHECK_EQ_U64(wo[0][0][v], v <= 18 && v % 4 != 3 ? 1 : 0);
    CHECK_EQ_U64(rounds[0], 5);
    CHECK_EQ_U64(rounds[1], 5);
    compare_u32(be, "run y", out[0][0], out[1][0], 100);
    compare_u32(be, "run z", out[0][1], out[1][1], 100);
    compare_u32(be, "run resident y", res[0], res[1], 100);
    compare_u32(be, "worklist items", items[0], items[1], 6);
    CHECK_EQ_U64(out[0][0][7], 7 * 5); /* 2i + 3i */
    CHECK_EQ_U64(out[0][1][7], 8);
    CHECK_EQ_U64(res[0][63], 63 * 5); /* n = 50: one workgroup of 64 */
    CHECK_EQ_U64(res[0][64], 64 * 2);
    static const uint32_t want[6] = {2, 3, 4, 101, 102, 103};
    CHECK(memcmp(items[0], want, sizeof want) == 0);
    run_misuse(be, ref);
}

int main(void) {
    fake_open();
    if (control) fake_ctl("set ptxas 0", NULL, 0); /* structural checks only: fast */
    uint64_t skipped0 = control ? fake_skipped() : 0;
    RUN_TEST(test_registry);
    vyre_backend *ref = NULL, *ref2 = NULL;
    OK(vyre_backend_open("reference", 0, NULL, &ref, &e_));
    OK(vyre_backend_open("reference", 0, NULL, &ref2, &e_));
    harness_current = "test_reference_counters";
    test_reference_counters(ref);
    struct vyre_backend_entry es[8];
    size_t n = 0;
    OK(vyre_backend_list(es, 8, &n, &e_));
    const char *require = getenv("VYRE_BACKEND_OPS_REQUIRE");
    bool required_seen = require == NULL;
    for (size_t i = 0; i < n && i < 8; i++) {
        if (!es[i].available) {
            printf("  %s: not available (%s)\n", es[i].name, es[i].reason);
            continue;
        }
        if (require && strcmp(require, es[i].name) == 0) required_seen = true;
        vyre_backend *be = NULL;
        if (strcmp(es[i].name, "reference") == 0) be = ref2;
        else OK(vyre_backend_open(es[i].name, 0, NULL, &be, &e_));
        if (!be) continue;
        harness_current = "test_ops";
        test_ops(be, ref);
        harness_current = "test_atomics";
        test_atomics(be, ref);
        harness_current = "test_operations";
        test_operations(be, ref);
        harness_current = "test_grid_modes";
        test_grid_modes(be, ref);
        harness_current = "test_run_worklists";
        test_run_worklists(be, ref);
        harness_current = "test_stats";
        test_stats(be);
        harness_current = "test_threads";
        test_threads(be);
        harness_current = "test_misuse";
        test_misuse(be, be == ref2 ? ref : ref2);
        if (be != ref2) vyre_backend_close(be);
    }
    harness_current = "main";
    if (!required_seen)
        harness_fail(__FILE__, __LINE__, "VYRE_BACKEND_OPS_REQUIRE=%s but it is not available",
                     require);
    if (control) CHECK_EQ_U64(fake_skipped(), skipped0); /* the fake computed every launch */
    vyre_backend_close(ref);
    vyre_backend_close(ref2);
    return harness_finish();
}
