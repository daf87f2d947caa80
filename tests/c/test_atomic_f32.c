/* test_atomic_f32.c — f32 atomic min and max (docs/ARCHITECTURE.md §10): the semantics function
 * against an independent model on every pair of special values (±0, ±inf, NaN payloads
 * of both signs, quiet and signalling, subnormals, extremes, equal values); the
 * interpreter on global buffers and shared arrays with the returned old values;
 * out of bounds; the final word under many invocations hitting one address, in several
 * orders; the validator's f32 rules; and the emitted compare-and-swap loop, assembled by
 * ptxas for sm_70 (as sm_75), sm_80 and sm_90. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sem.h"

/* ---- the model, written from the rule and not from sem.c -------------------------- */

static bool is_nan(uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu); }

/* Non-NaN floats in vyre's order (-0 below +0) as unsigned integers. */
static uint32_t order_key(uint32_t b) { return (b & 0x80000000u) ? ~b : (b | 0x80000000u); }

/* New word of (atomic min|max) with old word `old` and value v. */
static uint32_t model(bool max, uint32_t old, uint32_t v) {
    if (is_nan(v)) return old; /* a NaN value leaves the word, bits and all */
    if (is_nan(old)) return v; /* a NaN word gives way to the value */
    bool v_below = order_key(v) < order_key(old);
    return max ? (v_below ? old : v) : (v_below ? v : old);
}

static const uint32_t specials[] = {
    0x00000000u, /* +0 */
    0x80000000u, /* -0 */
    0x3F800000u, /* 1 */
    0xBF800000u, /* -1 */
    0x3F800001u, /* 1 + ulp */
    0x7F800000u, /* +inf */
    0xFF800000u, /* -inf */
    0x7F7FFFFFu, /* largest */
    0xFF7FFFFFu, /* most negative */
    0x00800000u, /* smallest normal */
    0x00000001u, /* smallest subnormal */
    0x80000001u, /* -smallest subnormal */
    0x007FFFFFu, /* largest subnormal */
    0x807FFFFFu, /* -largest subnormal */
    0x7FC00000u, /* quiet NaN */
    0xFFC00000u, /* negative quiet NaN */
    0x7FFFFFFFu, /* the GPU's canonical NaN */
    0x7F800001u, /* signalling NaN */
    0xFF812345u, /* negative signalling NaN with payload */
    0x7FC0BEEFu, /* quiet NaN with payload */
};
#define NSPEC (sizeof specials / sizeof specials[0])
#define NPAIR (NSPEC * NSPEC)

/* ---- helpers ----------------------------------------------------------------------- */

static struct vyre_error err;

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_text_parse(text, strlen(text), &p, &err);
    if (st != VYRE_OK) harness_fail(__FILE__, __LINE__, "parse: %s", err.message);
    return p;
}

static enum vyre_status run(vyre_program *p, struct vyre_buffer_arg *bufs, size_t n,
                            uint32_t groups) {
    struct vyre_run_args a;
    memset(&a, 0, sizeof a);
    a.buffers = bufs;
    a.nbuffers = n;
    a.grid[0] = groups;
    a.grid[1] = 1;
    a.grid[2] = 1;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_ref_run(p, &a, NULL, &err);
    if (st != VYRE_OK) harness_fail(__FILE__, __LINE__, "run: %s", err.message);
    return st;
}

/* ---- semantics function ------------------------------------------------------------- */

static void test_sem_pairs(void) {
    for (size_t i = 0; i < NSPEC; i++) {
        for (size_t j = 0; j < NSPEC; j++) {
            uint32_t a = specials[i], b = specials[j];
            CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_F32, a, b, 0), model(false, a, b));
            CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_F32, a, b, 0), model(true, a, b));
        }
    }
    /* the rule spelled out on a few cases */
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_F32, 0x00000000u, 0x80000000u, 0),
                 0x80000000u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_F32, 0x80000000u, 0x00000000u, 0),
                 0x80000000u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_F32, 0x80000000u, 0x00000000u, 0),
                 0x00000000u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_F32, 0x00000000u, 0x80000000u, 0),
                 0x00000000u);
    /* subnormals kept (unlike f32 atomic add) */
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_F32, 0x3F800000u, 0x00000001u, 0),
                 0x00000001u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_F32, 0x80000001u, 0x807FFFFFu, 0),
                 0x80000001u);
    /* NaN word, number value: the value; number word, NaN value: unchanged */
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_F32, 0x7FC00000u, 0xBF800000u, 0),
                 0xBF800000u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_F32, 0xBF800000u, 0x7FC00000u, 0),
                 0xBF800000u);
    /* both NaN: the word's own bits stay, whatever the value's payload */
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_F32, 0xFF812345u, 0x7FC00000u, 0),
                 0xFF812345u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_F32, 0x7F800001u, 0x7FFFFFFFu, 0),
                 0x7F800001u);
    /* integer min/max are untouched by the f32 rule */
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_I32, 0xFFFFFFFFu, 1, 0), 0xFFFFFFFFu);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_U32, 0x7FC00000u, 0x7FC00001u, 0),
                 0x7FC00001u);
}

/* ---- interpreter: every pair, old values returned ----------------------------------- */

static const char *const PAIRS_GLOBAL = "(program pairs (workgroup 64)\n"
                                        "  (buffer m f32 read_write)\n"
                                        "  (buffer v f32 read)\n"
                                        "  (buffer r f32 write)\n"
                                        "  (let i (gid x))\n"
                                        "  (if (lt i (len m)) (then\n"
                                        "    (let old (atomic %s m i (load v i)))\n"
                                        "    (store r i old))))\n";

/* The same on a shared array: m -> s, atomic on s, s -> m (the index is not proven
 * in bounds here, so the emitted loop also has its bounds guard). */
static const char *const PAIRS_SHARED = "(program pairs_shared (workgroup 64)\n"
                                        "  (buffer m f32 read_write)\n"
                                        "  (buffer v f32 read)\n"
                                        "  (buffer r f32 write)\n"
                                        "  (shared s f32 64)\n"
                                        "  (let i (gid x))\n"
                                        "  (let l (lid x))\n"
                                        "  (store s l (load m i))\n"
                                        "  (barrier)\n"
                                        "  (let old (atomic %s s l (load v i)))\n"
                                        "  (store r i old)\n"
                                        "  (barrier)\n"
                                        "  (store m i (load s l)))\n";

static void check_pairs(const char *fmt, const char *op) {
    char text[1024];
    snprintf(text, sizeof text, fmt, op);
    vyre_program *p = parse(text);
    if (!p) return;
    bool max = strcmp(op, "max") == 0;
    static uint32_t m[NPAIR], v[NPAIR], r[NPAIR];
    for (size_t i = 0; i < NSPEC; i++) {
        for (size_t j = 0; j < NSPEC; j++) {
            m[i * NSPEC + j] = specials[i];
            v[i * NSPEC + j] = specials[j];
            r[i * NSPEC + j] = 0xDEADBEEFu;
        }
    }
    struct vyre_buffer_arg b[3] = {{m, NPAIR}, {v, NPAIR}, {r, NPAIR}};
    uint32_t groups = (uint32_t)((NPAIR + 63) / 64);
    if (run(p, b, 3, groups) == VYRE_OK) {
        for (size_t k = 0; k < NPAIR; k++) {
            uint32_t a = specials[k / NSPEC], x = specials[k % NSPEC];
            CHECK_EQ_U64(r[k], a);                /* the old value */
            CHECK_EQ_U64(m[k], model(max, a, x)); /* the new word */
        }
    }
    vyre_program_free(p);
}

static void test_interp_pairs(void) {
    check_pairs(PAIRS_GLOBAL, "min");
    check_pairs(PAIRS_GLOBAL, "max");
    check_pairs(PAIRS_SHARED, "min");
    check_pairs(PAIRS_SHARED, "max");
}

/* ---- out of bounds --------------------------------------------------------------------- */

static const char *const OOB = "(program oob (workgroup 1)\n"
                               "  (buffer m f32 read_write)\n"
                               "  (buffer r f32 write)\n"
                               "  (shared s f32 2)\n"
                               "  (store s 0u32 5.0f32)\n"
                               "  (store s 1u32 5.0f32)\n"
                               "  (let a (atomic min m 4u32 -1.0f32))\n"
                               "  (let b (atomic max m (len m) 1.0f32))\n"
                               "  (let c (atomic min s 2u32 -1.0f32))\n"
                               "  (let d (atomic max s 0xffffffffu32 9.0f32))\n"
                               "  (let e (atomic max m 0u32 -0x0p+0f32))\n"
                               "  (store r 0u32 a)\n"
                               "  (store r 1u32 b)\n"
                               "  (store r 2u32 c)\n"
                               "  (store r 3u32 d)\n"
                               "  (store r 4u32 e)\n"
                               "  (store r 5u32 (load s 0u32))\n"
                               "  (store r 6u32 (load s 1u32)))\n";

static void test_out_of_bounds(void) {
    vyre_program *p = parse(OOB);
    if (!p) return;
    uint32_t m[4] = {0x80000000u, 0x3F800000u, 0x7FC00000u, 0x00000001u};
    uint32_t r[7];
    memset(r, 0xAB, sizeof r);
    struct vyre_buffer_arg b[2] = {{m, 4}, {r, 7}};
    if (run(p, b, 2, 1) == VYRE_OK) {
        for (int i = 0; i < 4; i++) CHECK_EQ_U64(r[i], 0); /* old reads +0 */
        CHECK_EQ_U64(r[4], 0x80000000u);                   /* in bounds: old -0 */
        CHECK_EQ_U64(m[0], 0x80000000u);                   /* max(-0, -0) = -0 */
        CHECK_EQ_U64(m[1], 0x3F800000u);                   /* untouched */
        CHECK_EQ_U64(m[2], 0x7FC00000u);
        CHECK_EQ_U64(m[3], 0x00000001u);
        CHECK_EQ_U64(r[5], 0x40A00000u); /* shared words untouched */
        CHECK_EQ_U64(r[6], 0x40A00000u);
    }
    vyre_program_free(p);
}

/* ---- one address, many invocations ---------------------------------------------------- */

/* Every invocation hits m[0] and its workgroup's s[0]; one invocation per workgroup
 * then folds s[0] into m[1]. The final words must not depend on the order. */
static const char *const CONC =
    "(program conc (workgroup 64)\n"
    "  (buffer v f32 read)\n"
    "  (buffer m f32 read_write)\n"
    "  (shared s f32 1)\n"
    "  (let i (gid x))\n"
    "  (if (eq (lid x) 0u32) (then (store s 0u32 (load m 2u32))))\n"
    "  (barrier)\n"
    "  (atomic %s m 0u32 (load v i))\n"
    "  (atomic %s s 0u32 (load v i))\n"
    "  (barrier)\n"
    "  (if (eq (lid x) 0u32) (then (atomic %s m 1u32 (load s 0u32)))))\n";

#define NCONC 256u

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void check_conc(const char *op, uint32_t init, bool with_nan) {
    char text[1024];
    snprintf(text, sizeof text, CONC, op, op, op);
    vyre_program *p = parse(text);
    if (!p) return;
    bool max = strcmp(op, "max") == 0;
    uint32_t v[NCONC];
    uint64_t seed = 12345u + init;
    for (uint32_t i = 0; i < NCONC; i++) {
        uint32_t x = specials[lcg(&seed) % NSPEC];
        while (!with_nan && is_nan(x)) x = specials[lcg(&seed) % NSPEC];
        v[i] = x;
    }
    uint32_t want0 = init, want_s[NCONC / 64];
    for (uint32_t i = 0; i < NCONC; i++) want0 = model(max, want0, v[i]);
    for (uint32_t g = 0; g < NCONC / 64; g++) {
        want_s[g] = init;
        for (uint32_t i = 0; i < 64; i++) want_s[g] = model(max, want_s[g], v[g * 64 + i]);
    }
    uint32_t first1 = 0;
    for (int order = 0; order < 4; order++) {
        uint32_t w[NCONC];
        memcpy(w, v, sizeof w);
        if (order == 1) /* reversed */
            for (uint32_t i = 0; i < NCONC; i++) w[i] = v[NCONC - 1 - i];
        if (order >= 2) { /* shuffled */
            for (uint32_t i = NCONC - 1; i > 0; i--) {
                uint32_t j = (uint32_t)(lcg(&seed) % (i + 1)), t = w[i];
                w[i] = w[j];
                w[j] = t;
            }
        }
        uint32_t m[3] = {init, init, init};
        struct vyre_buffer_arg b[2] = {{w, NCONC}, {m, 3}};
        if (run(p, b, 2, NCONC / 64) != VYRE_OK) break;
        CHECK_EQ_U64(m[0], want0);
        if (order == 0) {
            /* m[1] folds the per-workgroup results (all that exist in this order) */
            uint32_t want1 = init;
            for (uint32_t g = 0; g < NCONC / 64; g++) want1 = model(max, want1, want_s[g]);
            CHECK_EQ_U64(m[1], want1);
            first1 = m[1];
        } else {
            /* other orders regroup the values, yet everything still lands in m[1] */
            CHECK_EQ_U64(m[1], first1);
        }
        CHECK_EQ_U64(m[1], want0); /* min/max of everything, whichever grouping */
    }
    vyre_program_free(p);
}

static void test_one_address(void) {
    const uint32_t inits[] = {0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000000u,
                              0x7FC00000u, 0xFF812345u, 0x00000001u};
    for (size_t k = 0; k < sizeof inits / sizeof inits[0]; k++) {
        check_conc("min", inits[k], true);
        check_conc("max", inits[k], true);
        check_conc("min", inits[k], false);
        check_conc("max", inits[k], false);
    }
    /* values that are all NaN: nothing changes, the word keeps its own NaN bits */
    vyre_program *p = parse("(program allnan (workgroup 32)\n"
                            "  (buffer v f32 read)\n"
                            "  (buffer m f32 read_write)\n"
                            "  (atomic min m 0u32 (load v (gid x)))\n"
                            "  (atomic max m 1u32 (load v (gid x))))\n");
    if (!p) return;
    uint32_t v[32], m[2] = {0xFF812345u, 0x7FC0BEEFu};
    for (uint32_t i = 0; i < 32; i++) v[i] = i % 2 ? 0x7FC00000u : 0xFFFFFFFFu;
    struct vyre_buffer_arg b[2] = {{v, 32}, {m, 2}};
    if (run(p, b, 2, 1) == VYRE_OK) {
        CHECK_EQ_U64(m[0], 0xFF812345u);
        CHECK_EQ_U64(m[1], 0x7FC0BEEFu);
    }
    vyre_program_free(p);
}

/* ---- validator ------------------------------------------------------------------------ */

static void expect_valid(const char *text) {
    vyre_program *p = parse(text);
    if (!p) return;
    struct vyre_problems pr = {0};
    enum vyre_status st = vyre_validate(p, &pr);
    CHECK(st == VYRE_OK);
    if (st != VYRE_OK && pr.count)
        fprintf(stderr, "unexpected problem: %s: %s\n", pr.items[0].code, pr.items[0].message);
    vyre_problems_free(&pr);
    vyre_program_free(p);
}

static void expect_atomic_type(const char *text) {
    vyre_program *p = parse(text);
    if (!p) return;
    struct vyre_problems pr = {0};
    CHECK(vyre_validate(p, &pr) == VYRE_ERR_INVALID);
    CHECK(pr.count == 1);
    if (pr.count >= 1) {
        CHECK_STR_CONTAINS(pr.items[0].code, "atomic-type");
        CHECK_STR_CONTAINS(pr.items[0].fix, "f32 supports only add, min and max");
    }
    vyre_problems_free(&pr);
    vyre_program_free(p);
}

static void test_validator(void) {
    expect_valid("(program t (workgroup 1) (buffer g f32 read_write) (shared s f32 4)\n"
                 "  (let a (atomic min g 0u32 1.0f32)) (let b (atomic max s 1u32 a))\n"
                 "  (atomic min s 2u32 nanf32) (atomic max g 3i32 -inff32) (set b 2.0f32))");
    expect_valid("(program t (workgroup 1) (buffer g f32 write) (atomic add g 0u32 1.0f32))");
    static const char *const bad_ops[] = {"sub", "and", "or", "xor", "exchange"};
    char text[256];
    for (size_t i = 0; i < sizeof bad_ops / sizeof bad_ops[0]; i++) {
        snprintf(text, sizeof text,
                 "(program t (workgroup 1) (buffer g f32 read_write) (atomic %s g 0u32 1.0f32))",
                 bad_ops[i]);
        expect_atomic_type(text);
    }
    expect_atomic_type("(program t (workgroup 1) (shared s f32 2) "
                       "(atomic cas s 0u32 1.0f32 2.0f32))");
    expect_atomic_type("(program t (workgroup 1) (buffer d f64 read_write) "
                       "(atomic min d 0u32 1.0f64))");
    expect_atomic_type("(program t (workgroup 1) (buffer d i64 read_write) "
                       "(atomic max d 0u32 1i64))");
    /* the value must still be f32 */
    vyre_program *p = parse("(program t (workgroup 1) (buffer g f32 read_write) "
                            "(atomic min g 0u32 1u32))");
    if (p) {
        struct vyre_problems pr = {0};
        CHECK(vyre_validate(p, &pr) == VYRE_ERR_INVALID);
        CHECK(pr.count == 1 && strcmp(pr.items[0].code, "type-mismatch") == 0);
        vyre_problems_free(&pr);
        vyre_program_free(p);
    }
}

/* ---- PTX ------------------------------------------------------------------------------ */

static char *emit(const char *text, unsigned sm) {
    vyre_program *p = parse(text);
    if (!p) return NULL;
    struct vyre_ptx_options o = {.sm = sm};
    char *ptx = NULL;
    size_t n = 0;
    vyre_error_clear(&err);
    if (vyre_ptx_emit(p, &o, &ptx, &n, &err) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "ptx sm_%u: %s", sm, err.message);
    vyre_program_free(p);
    return ptx;
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle)) n++;
    return n;
}

static void test_ptx(void) {
    static const unsigned sms[] = {70, 75, 80, 86, 89, 90};
    char text[4][1024];
    snprintf(text[0], sizeof text[0], PAIRS_GLOBAL, "min");
    snprintf(text[1], sizeof text[1], PAIRS_SHARED, "max");
    snprintf(text[2], sizeof text[2], CONC, "max", "min", "max");
    snprintf(text[3], sizeof text[3], "%s", OOB);
    for (size_t s = 0; s < sizeof sms / sizeof sms[0]; s++) {
        for (int k = 0; k < 4; k++) {
            char *ptx = emit(text[k], sms[s]);
            if (!ptx) continue;
            /* the same compare-and-swap loop on every target: no native f32 min/max
             * atom, no flush to zero */
            CHECK(strstr(ptx, "atom.global.min.f32") == NULL);
            CHECK(strstr(ptx, "atom.shared.max.f32") == NULL);
            CHECK(strstr(ptx, ".ftz") == NULL);
            CHECK(count(ptx, "setp.nan.f32") == 2 * count(ptx, ".cas.b32"));
            if (k == 0) {
                CHECK(count(ptx, "atom.global.cas.b32") == 1);
                CHECK(count(ptx, "min.f32") == 1);
                CHECK(strstr(ptx, "ld.relaxed.gpu.global.b32") != NULL);
            }
            if (k == 1) {
                CHECK(count(ptx, "atom.shared.cas.b32") == 1);
                CHECK(count(ptx, "max.f32") == 1);
                CHECK(strstr(ptx, "ld.relaxed.gpu.shared.b32") != NULL);
            }
            if (k == 2) {
                CHECK(count(ptx, "atom.global.cas.b32") == 2);
                CHECK(count(ptx, "atom.shared.cas.b32") == 1);
            }
            if (k == 3) CHECK(count(ptx, ".cas.b32") == 5);
            if (sms[s] == 70 || sms[s] == 80 || sms[s] == 90)
                CHECK(harness_ptxas_ok(ptx, sms[s], false));
            vyre_free(ptx);
        }
    }
}

int main(void) {
    RUN_TEST(test_sem_pairs);
    RUN_TEST(test_interp_pairs);
    RUN_TEST(test_out_of_bounds);
    RUN_TEST(test_one_address);
    RUN_TEST(test_validator);
    RUN_TEST(test_ptx);
    return harness_finish();
}
