/* test_subgroup.c — subgroup (warp) ops through every layer (docs/SUBGROUPS.md): the
 * text format round trip and its syntax errors, the validator's typing and placement
 * rules with their problem codes, the interpreter against an independent model of the
 * document (every op on every type it takes, on workgroups of 32, 64, 48, 1 and
 * partial 3-D ones, with NaN, signed zeros, subnormals and infinities), the PTX of all
 * of them assembled by ptxas for sm_70, sm_80 and sm_90, and random programs made with
 * allow_subgroup. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ir.h"
#include "sem.h"

#define W 32u

static struct vyre_error err;

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_text_parse(text, strlen(text), &p, &err);
    if (st != VYRE_OK) fprintf(stderr, "parse failed: %s\n%s\n", err.message, text);
    CHECK_EQ_U64(st, VYRE_OK);
    return p;
}

static char *text_of(const vyre_program *p) {
    char *t = NULL;
    CHECK_EQ_U64(vyre_text_print(p, &t, NULL), VYRE_OK);
    return t;
}

static char *emit(vyre_program *p, unsigned sm) {
    struct vyre_ptx_options o = {.sm = sm};
    char *ptx = NULL;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_ptx_emit(p, &o, &ptx, NULL, &err);
    if (st != VYRE_OK) fprintf(stderr, "ptx sm_%u: %s\n", sm, err.message);
    CHECK_EQ_U64(st, VYRE_OK);
    return ptx;
}

/* ---- text format --------------------------------------------------------------------- */

static const char ALL_FORMS[] = "(program forms (workgroup 48)\n"
                                "  (buffer x f32 read)\n"
                                "  (buffer o u32 write)\n"
                                "  (let v (load x (lid x)))\n"
                                "  (let n (subgroup_size))\n"
                                "  (let l (subgroup_lane))\n"
                                "  (let b (ballot (gt v 0x0p+0f32)))\n"
                                "  (let a (subgroup_all (lt v 0x1p+0f32)))\n"
                                "  (let y (subgroup_any (ne v v)))\n"
                                "  (let s0 (shuffle v l))\n"
                                "  (let s1 (shuffle_xor v 1u32))\n"
                                "  (let s2 (shuffle_up v 2u32))\n"
                                "  (let s3 (shuffle_down (shuffle v 0u32) n))\n"
                                "  (let r (subgroup_reduce max v))\n"
                                "  (let q (subgroup_scan add (subgroup_reduce xor l)))\n"
                                "  (let m (match_any (cast f64 v)))\n"
                                "  (store o (lid x) (add (add b q) (match_any l))))\n";

static void test_text(void) {
    vyre_program *p = parse(ALL_FORMS);
    if (!p) return;
    char *t = text_of(p);
    CHECK(t && strcmp(t, ALL_FORMS) == 0); /* the canonical layout */
    vyre_program *q = t ? parse(t) : NULL;
    CHECK(q && vyre_program_equal(p, q));
    if (q) CHECK_EQ_U64(vyre_program_hash(p), vyre_program_hash(q));
    /* structural equality sees the kind and the combining op */
    vyre_program *r1 = parse("(program a (workgroup 32) (buffer o u32 write)"
                             " (store o 0u32 (subgroup_reduce add (subgroup_lane))))");
    vyre_program *r2 = parse("(program a (workgroup 32) (buffer o u32 write)"
                             " (store o 0u32 (subgroup_scan add (subgroup_lane))))");
    vyre_program *r3 = parse("(program a (workgroup 32) (buffer o u32 write)"
                             " (store o 0u32 (subgroup_reduce or (subgroup_lane))))");
    CHECK(r1 && r2 && r3 && !vyre_program_equal(r1, r2) && !vyre_program_equal(r1, r3));
    CHECK(r1 && r2 && vyre_program_hash(r1) != vyre_program_hash(r2));
    vyre_program_free(r1);
    vyre_program_free(r2);
    vyre_program_free(r3);
    vyre_free(t);
    vyre_program_free(q);
    vyre_program_free(p);

    static const struct {
        const char *expr, *says;
    } bad[] = {
        {"(subgroup_reduce sub v)", "a combining op (add min max and or xor)"},
        {"(subgroup_scan v)", "a combining op"},
        {"(shuffle v)", "an expression"},
        {"(shuffle_up v 1u32 2u32)", "')' closing (shuffle_up VALUE DELTA)"},
        {"(subgroup_size 1u32)", "')' closing (subgroup_size)"},
        {"(ballot)", "an expression"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "(program e (workgroup 32) (buffer o u32 write) (let v 1u32) (store o 0u32 %s))",
                 bad[i].expr);
        vyre_program *e = NULL;
        vyre_error_clear(&err);
        CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &e, &err), VYRE_ERR_SYNTAX);
        CHECK_STR_CONTAINS(err.message, bad[i].says);
        CHECK(e == NULL);
    }
}

/* ---- validator ------------------------------------------------------------------------- */

/* Body statements after (buffer x f32 read) (buffer o u32 write) (buffer d f64 write)
 * (param pu u32) (param pi i32) (let v (load x (lid x))), workgroup 64; "" = valid. */
static const struct {
    const char *body, *code, *path;
} vcases[] = {
    {"(store o 0u32 (ballot (ne (lid x) 3u32)))", "", ""},
    {"(if (lt pu 4u32) (then (store o 0u32 (subgroup_reduce add (lid x)))))", "", ""},
    {"(for j 0u32 pu 1u32 (store o j (shuffle (lid x) j)))", "", ""},
    {"(if (lt (lid x) 4u32) (then (store o 0u32 (subgroup_lane))))", "", ""},
    {"(if (lt (lid x) 4u32) (then (store o (subgroup_size) 0u32)))", "", ""},
    {"(if (subgroup_any (gt v 0x0p+0f32)) (then (store o 0u32 1u32)))", "", ""},
    {"(let s (subgroup_reduce add v)) (if (gt s 0x0p+0f32) (then (store o 0u32 1u32)))", "", ""},
    {"(store d 0u32 (subgroup_scan min (cast f64 v)))", "", ""},
    {"(store o 0u32 (ballot 1u32))", "operand-type", "body[1].value"},
    {"(store o 0u32 (match_any v))", "", ""},
    {"(store o 0u32 (match_any (gt v 0x0p+0f32)))", "operand-type", "body[1].value"},
    {"(if (lt (lid x) 4u32) (then (store o 0u32 (match_any (lid x)))))", "subgroup-divergent",
     "body[1].then[0].value"},
    {"(store o 0u32 (cast u32 (subgroup_all (lid x))))", "operand-type", "body[1].value.arg"},
    {"(store o 0u32 (shuffle (lid x) pi))", "lane-type", "body[1].value.b"},
    {"(store o 0u32 (cast u32 (shuffle (gt v v) 0u32)))", "operand-type", "body[1].value.arg"},
    {"(store o 0u32 (bitcast u32 (subgroup_reduce xor v)))", "operand-type", "body[1].value.arg"},
    {"(store o 0u32 (cast u32 (subgroup_scan and (gt v v))))", "operand-type", "body[1].value.arg"},
    {"(if (lt (lid x) 4u32) (then (store o 0u32 (ballot true))))", "subgroup-divergent",
     "body[1].then[0].value"},
    {"(if (lt (lid x) 4u32) (then (if (subgroup_all true) (then (store o 0u32 1u32)))))",
     "subgroup-divergent", "body[1].then[0].cond"},
    {"(if (gt v 0x0p+0f32) (then (return))) (store o 0u32 (shuffle_xor 1u32 1u32))",
     "subgroup-divergent", "body[2].value"},
    {"(for j 0u32 4u32 1u32 (if (lt (lid x) j) (then (break))) (store o j (shuffle_up j 1u32)))",
     "subgroup-divergent", "body[1].body[1].value"},
    {"(let s (subgroup_any true)) (if s (then (store o 0u32 (shuffle 1u32 0u32))))",
     "subgroup-divergent", "body[2].then[0].value"},
    {"(for j 0u32 (load o 0u32) 1u32 (store o j (subgroup_reduce add j)))", "subgroup-divergent",
     "body[1].body[0].value"},
    {"(let q (atomic add o 0u32 1u32)) (if (eq q 0u32) (then (atomic add o 1u32 (ballot true))))",
     "subgroup-divergent", "body[2].then[0].value"},
};

static void test_validate(void) {
    for (size_t i = 0; i < sizeof vcases / sizeof vcases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "(program v (workgroup 64) (buffer x f32 read) (buffer o u32 read_write) "
                 "(buffer d f64 write) (param pu u32) (param pi i32) (let v (load x (lid x))) "
                 "%s)",
                 vcases[i].body);
        vyre_program *p = parse(text);
        if (!p) continue;
        struct vyre_problems pr = {0};
        enum vyre_status st = vyre_validate(p, &pr);
        bool want_ok = vcases[i].code[0] == '\0';
        harness_checks++;
        if (want_ok ? st != VYRE_OK
                    : (pr.count == 0 || strcmp(pr.items[0].code, vcases[i].code) != 0 ||
                       strcmp(pr.items[0].path, vcases[i].path) != 0))
            harness_fail(__FILE__, __LINE__, "case %zu: %s\n  got %zu problem(s): %s at %s: %s", i,
                         vcases[i].body, pr.count, pr.count ? pr.items[0].code : "-",
                         pr.count ? pr.items[0].path : "-", pr.count ? pr.items[0].message : "");
        if (!want_ok && pr.count) {
            CHECK_EQ_U64(pr.count, 1);
            CHECK(pr.items[0].fix[0] != '\0');
            if (strcmp(vcases[i].code, "subgroup-divergent") == 0)
                CHECK_STR_CONTAINS(pr.items[0].fix, "out of divergent control flow");
        }
        vyre_problems_free(&pr);
        vyre_program_free(p);
    }
    /* Built through the C API: a combining op the parser would refuse. */
    vyre_program *p = vyre_program_new("b", 32, 1, 1);
    vyre_ir_buffer(p, "o", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    struct vyre_expr *bad =
        vyre_ir_subgroup(p, VYRE_SG_REDUCE, VYRE_OP_SUB, vyre_ir_lit(p, VYRE_U32, 1), NULL);
    CHECK(vyre_ir_push(p, &p->body, vyre_ir_store(p, "o", vyre_ir_lit(p, VYRE_U32, 0), bad)));
    struct vyre_problems pr = {0};
    CHECK_EQ_U64(vyre_validate(p, &pr), VYRE_ERR_INVALID);
    CHECK(pr.count == 1 && strcmp(pr.items[0].code, "invalid-op") == 0);
    vyre_problems_free(&pr);
    vyre_program_free(p);
}

/* ---- the model: docs/SUBGROUPS.md written out again, top-down ------------------------- */

static vyre_bits op2(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits b) {
    return vyre_sem_binary(op, t, a, b);
}

/* Lane j's butterfly value once the steps 16 .. d are done (d = 32: the input). */
static vyre_bits bfly(enum vyre_op op, enum vyre_type t, const vyre_bits *v, uint32_t n, uint32_t j,
                      uint32_t d) {
    if (d == W) return v[j];
    uint32_t p = j ^ d;
    if (p >= n) return bfly(op, t, v, n, j, 2 * d);
    uint32_t lo = j < p ? j : p, hi = j < p ? p : j;
    return op2(op, t, bfly(op, t, v, n, lo, 2 * d), bfly(op, t, v, n, hi, 2 * d));
}

/* Lane j's Hillis-Steele value after `steps` of the distances 1, 2, 4, 8, 16. */
static vyre_bits hs(enum vyre_op op, enum vyre_type t, const vyre_bits *v, uint32_t j,
                    unsigned steps) {
    if (steps == 0) return v[j];
    uint32_t d = 1u << (steps - 1);
    vyre_bits own = hs(op, t, v, j, steps - 1);
    return j >= d ? op2(op, t, hs(op, t, v, j - d, steps - 1), own) : own;
}

static bool is_nan(enum vyre_type t, vyre_bits b) {
    if (t == VYRE_F32) return (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu);
    if (t == VYRE_F64)
        return (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (b & 0xFFFFFFFFFFFFFull);
    return false;
}

static void model(enum vyre_subgroup k, enum vyre_op op, enum vyre_type t, const vyre_bits *v,
                  const vyre_bits *arg, uint32_t n, uint32_t first_lane_linear, vyre_bits *out) {
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = arg[i], src = i;
        switch (k) {
        case VYRE_SG_SIZE: out[i] = W; continue;
        case VYRE_SG_LANE: out[i] = (first_lane_linear + i) % W; continue;
        case VYRE_SG_BALLOT:
        case VYRE_SG_ALL:
        case VYRE_SG_ANY: {
            uint32_t mask = 0, cnt = 0;
            for (uint32_t j = 0; j < n; j++) {
                mask |= (uint32_t)(v[j] != 0) << j;
                cnt += v[j] != 0;
            }
            out[i] = k == VYRE_SG_BALLOT ? mask : k == VYRE_SG_ALL ? cnt == n : cnt > 0;
            continue;
        }
        case VYRE_SG_SHUFFLE: src = a; break;
        case VYRE_SG_SHUFFLE_XOR: src = i ^ a; break;
        case VYRE_SG_SHUFFLE_UP: src = a <= i ? i - a : W; break;
        case VYRE_SG_SHUFFLE_DOWN: src = i + a; break;
        case VYRE_SG_REDUCE: out[i] = bfly(op, t, v, n, 0, 1); continue;
        case VYRE_SG_SCAN: out[i] = hs(op, t, v, i, 5); continue;
        case VYRE_SG_MATCH_ANY: { /* the bits compared, present lanes only */
            uint32_t mask = 0;
            for (uint32_t j = 0; j < n; j++) mask |= (uint32_t)(v[j] == v[i]) << j;
            out[i] = mask;
            continue;
        }
        default: continue;
        }
        out[i] = v[src < n ? src : i];
    }
    if (k == VYRE_SG_REDUCE) {
        /* In a full subgroup every lane's own butterfly already ends with lane 0's bits
         * (what the PTX relies on); integer results are any order's fold. */
        if (n == W && !is_nan(t, out[0]))
            for (uint32_t j = 1; j < n; j++) CHECK_EQ_U64(bfly(op, t, v, n, j, 1), out[0]);
        if (vyre_type_is_int(t)) {
            vyre_bits acc = v[n - 1];
            for (uint32_t j = n - 1; j-- > 0;) acc = op2(op, t, v[j], acc);
            CHECK_EQ_U64(acc, out[0]);
        }
    }
    if (k == VYRE_SG_SCAN && vyre_type_is_int(t)) {
        vyre_bits acc = v[0];
        for (uint32_t j = 0; j < n; j++) {
            if (j) acc = op2(op, t, acc, v[j]);
            CHECK_EQ_U64(acc, out[j]);
        }
    }
}

/* ---- interpreter against the model ------------------------------------------------------ */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static const uint32_t adv_f32[] = {0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u, 0x7FC00000u,
                                   0xFFC00001u, 0x7F800000u, 0xFF800000u, 0x00000001u, 0x807FFFFFu,
                                   0x7F7FFFFFu, 0x3DCCCCCDu, 0x00800000u, 0xC0200000u, 0x4F000000u};
static const uint64_t adv_f64[] = {0x0ull,
                                   0x8000000000000000ull,
                                   0x3FF0000000000000ull,
                                   0xBFF0000000000000ull,
                                   0x7FF8000000000000ull,
                                   0xFFF8000000000001ull,
                                   0x7FF0000000000000ull,
                                   0xFFF0000000000000ull,
                                   0x1ull,
                                   0x800FFFFFFFFFFFFFull,
                                   0x7FEFFFFFFFFFFFFFull,
                                   0x3FB999999999999Aull,
                                   0x0010000000000000ull,
                                   0xC004000000000000ull};
static const uint64_t adv_int[] = {
    0, 1, ~0ull, 0x80000000u, 0x7FFFFFFFu, 0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull, 2};

/* A value of type t: adversarial a third of the time, small or random otherwise. */
static vyre_bits value(enum vyre_type t) {
    uint64_t r = next_rand();
    uint32_t k = (uint32_t)(r % 3u);
    vyre_bits b;
    if (t == VYRE_F32)
        b = k == 0   ? adv_f32[(r >> 8) % (sizeof adv_f32 / 4)]
            : k == 1 ? 0x3F800000u + (uint32_t)((r >> 8) & 0x7FFFFFu)
                     : (uint32_t)(r >> 32);
    else if (t == VYRE_F64)
        b = k == 0   ? adv_f64[(r >> 8) % (sizeof adv_f64 / 8)]
            : k == 1 ? 0x3FF0000000000000ull + ((r >> 8) & 0xFFFFFFFFFFFFFull)
                     : next_rand();
    else
        b = k == 0   ? adv_int[(r >> 8) % (sizeof adv_int / 8)]
            : k == 1 ? (r >> 40) % 50
                     : next_rand();
    if (t == VYRE_BOOL) return b & 1u;
    return vyre_type_bits(t) == 32 ? b & 0xFFFFFFFFu : b;
}

/* A lane, mask or delta: mostly in range, sometimes far out. */
static vyre_bits lane_arg(void) {
    static const uint32_t far[] = {32, 33, 31, 64, 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFE0u};
    uint64_t r = next_rand();
    return r % 5u == 0 ? far[(r >> 8) % 7u] : (r >> 16) % 34u;
}

static void put(unsigned char *buf, enum vyre_type t, uint64_t i, vyre_bits v) {
    if (vyre_type_bits(t) == 64) memcpy(buf + i * 8, &v, 8);
    else {
        uint32_t w = (uint32_t)v;
        memcpy(buf + i * 4, &w, 4);
    }
}

static vyre_bits get(const unsigned char *buf, enum vyre_type t, uint64_t i) {
    if (vyre_type_bits(t) == 64) {
        uint64_t v;
        memcpy(&v, buf + i * 8, 8);
        return v;
    }
    uint32_t w;
    memcpy(&w, buf + i * 4, 4);
    return t == VYRE_BOOL ? w != 0 : w;
}

static const uint32_t geometries[][3] = {{32, 1, 1}, {64, 1, 1}, {48, 1, 1},
                                         {1, 1, 1},  {8, 3, 2},  {7, 5, 1}};
#define NGEOM (sizeof geometries / sizeof geometries[0])
#define GROUPS 2u

static unsigned ncases;
static struct harness_batch ptx_batches[3];
static const unsigned sms[3] = {70, 80, 90};

/* One op on one type and geometry: run on two workgroups, compare with the model,
 * and add its PTX to the batches (geometries 0, 2 and 4 only: full, partial, 3-D). */
static void run_case(enum vyre_subgroup k, enum vyre_op op, enum vyre_type t, size_t geom) {
    const uint32_t *wg = geometries[geom];
    uint32_t total = wg[0] * wg[1] * wg[2], count = total * GROUPS;
    bool cond = k == VYRE_SG_BALLOT || k == VYRE_SG_ALL || k == VYRE_SG_ANY;
    enum vyre_type in_t = cond                                       ? VYRE_BOOL
                          : (k == VYRE_SG_SIZE || k == VYRE_SG_LANE) ? VYRE_U32
                                                                     : t;
    enum vyre_type out_t = k == VYRE_SG_BALLOT || k == VYRE_SG_MATCH_ANY ? VYRE_U32
                           : (k == VYRE_SG_ALL || k == VYRE_SG_ANY) ? VYRE_BOOL
                                                                    : in_t;
    char expr[96];
    const char *name = vyre_subgroup_name(k);
    switch (vyre_subgroup_arity(k)) {
    case 0: snprintf(expr, sizeof expr, "(%s)", name); break;
    case 1:
        if (k == VYRE_SG_REDUCE || k == VYRE_SG_SCAN)
            snprintf(expr, sizeof expr, "(%s %s v)", name, vyre_op_name(op));
        else snprintf(expr, sizeof expr, "(%s v)", name);
        break;
    default: snprintf(expr, sizeof expr, "(%s v a)", name); break;
    }
    char text[1024];
    snprintf(text, sizeof text,
             "(program sg_%u (workgroup %u %u %u)\n"
             "  (buffer x %s read)\n  (buffer l u32 read)\n  (buffer o %s write)\n"
             "  (let li (add (add (lid x) (mul (lid y) (wgsize x))) (mul (lid z) (mul (wgsize x) "
             "(wgsize y)))))\n"
             "  (let g (add li (mul (wgid x) %uu32)))\n"
             "  (let v (load x g))\n  (let a (load l g))\n  (store o g %s))\n",
             ncases++, wg[0], wg[1], wg[2], vyre_type_name(in_t), vyre_type_name(out_t), total,
             expr);
    vyre_program *p = parse(text);
    if (!p) return;
    unsigned char *x = calloc(count, 8), *l = calloc(count, 4), *o = calloc(count, 8);
    vyre_bits v[W], arg[W], want[W];
    for (uint32_t i = 0; i < count; i++) {
        put(x, in_t, i, value(in_t));
        put(l, VYRE_U32, i, lane_arg());
    }
    struct vyre_buffer_arg bufs[3] = {{x, count}, {l, count}, {o, count}};
    struct vyre_run_args args = {bufs, 3, NULL, 0, {GROUPS, 1, 1}};
    vyre_error_clear(&err);
    enum vyre_status st = vyre_ref_run(p, &args, NULL, &err);
    if (st != VYRE_OK) fprintf(stderr, "%s\n%s\n", err.message, text);
    CHECK_EQ_U64(st, VYRE_OK);
    for (uint32_t grp = 0; st == VYRE_OK && grp < GROUPS; grp++) {
        for (uint32_t sub = 0; sub < total; sub += W) {
            uint32_t base = grp * total + sub, n = total - sub < W ? total - sub : W;
            for (uint32_t i = 0; i < n; i++) {
                v[i] = get(x, in_t, base + i);
                arg[i] = get(l, VYRE_U32, base + i);
            }
            model(k, op, t, v, arg, n, sub, want);
            for (uint32_t i = 0; i < n; i++) {
                vyre_bits got = get(o, out_t, base + i);
                harness_checks++;
                if (got != want[i]) {
                    harness_fail(__FILE__, __LINE__,
                                 "%s on %s, workgroup %ux%ux%u, lane %u of %u at %u: got "
                                 "0x%llx, want 0x%llx",
                                 expr, vyre_type_name(in_t), wg[0], wg[1], wg[2], i, n, base,
                                 (unsigned long long)got, (unsigned long long)want[i]);
                    break;
                }
            }
        }
    }
    if (geom == 0 || geom == 2 || geom == 4) {
        for (size_t s = 0; s < 3; s++) {
            char *ptx = emit(p, sms[s]);
            if (ptx) harness_batch_add(&ptx_batches[s], ptx);
            vyre_free(ptx);
        }
    }
    free(x);
    free(l);
    free(o);
    vyre_program_free(p);
}

static const enum vyre_type numeric[] = {VYRE_I32, VYRE_U32, VYRE_I64,
                                         VYRE_U64, VYRE_F32, VYRE_F64};
static const enum vyre_op combiners[] = {VYRE_OP_ADD, VYRE_OP_MIN, VYRE_OP_MAX,
                                         VYRE_OP_AND, VYRE_OP_OR,  VYRE_OP_XOR};

static void test_interp_and_ptx(void) {
    for (size_t g = 0; g < NGEOM; g++) {
        run_case(VYRE_SG_SIZE, VYRE_OP_COUNT, VYRE_U32, g);
        run_case(VYRE_SG_LANE, VYRE_OP_COUNT, VYRE_U32, g);
        run_case(VYRE_SG_BALLOT, VYRE_OP_COUNT, VYRE_BOOL, g);
        run_case(VYRE_SG_ALL, VYRE_OP_COUNT, VYRE_BOOL, g);
        run_case(VYRE_SG_ANY, VYRE_OP_COUNT, VYRE_BOOL, g);
        for (size_t ti = 0; ti < sizeof numeric / sizeof numeric[0]; ti++) {
            enum vyre_type t = numeric[ti];
            for (int k = VYRE_SG_SHUFFLE; k <= VYRE_SG_SHUFFLE_DOWN; k++)
                run_case((enum vyre_subgroup)k, VYRE_OP_COUNT, t, g);
            run_case(VYRE_SG_MATCH_ANY, VYRE_OP_COUNT, t, g);
            for (size_t c = 0; c < sizeof combiners / sizeof combiners[0]; c++) {
                if (!vyre_subgroup_op_admits(combiners[c], t)) continue;
                run_case(VYRE_SG_REDUCE, combiners[c], t, g);
                run_case(VYRE_SG_SCAN, combiners[c], t, g);
            }
        }
    }
    for (size_t s = 0; s < 3; s++) {
        struct harness_batch *b = &ptx_batches[s];
        CHECK(b->text != NULL);
        if (!b->text) continue;
        CHECK_EQ_U64(b->n, 3u * (ncases / NGEOM));
        CHECK_STR_CONTAINS(b->text, "shfl.sync.idx.b32");
        CHECK_STR_CONTAINS(b->text, "shfl.sync.bfly.b32");
        CHECK_STR_CONTAINS(b->text, "shfl.sync.up.b32");
        CHECK_STR_CONTAINS(b->text, "vote.sync.ballot.b32");
        CHECK_STR_CONTAINS(b->text, "vote.sync.all.pred");
        CHECK_STR_CONTAINS(b->text, "match.any.sync.b32");
        CHECK_STR_CONTAINS(b->text, "match.any.sync.b64");
        CHECK(harness_ptxas_ok(b->text, sms[s], false));
        /* redux.sync exists from sm_80: sm_70 takes the butterfly for every type */
        CHECK((strstr(b->text, "redux.sync") != NULL) == (sms[s] >= 80));
        free(b->text);
    }
}

/* ---- statements around the ops ------------------------------------------------------------ */

/* Ops nested in each other, in an if condition, in a loop bound (which makes the loop
 * divergent for the validator) and in a loop body (recomputed every iteration), and a
 * node the C builder shares between statements. */
static void test_placement(void) {
    vyre_program *p =
        parse("(program place (workgroup 40)\n"
              "  (buffer o u32 write)\n"
              "  (let l (subgroup_lane))\n"
              "  (let t (shuffle (subgroup_reduce add l) (shuffle_down l 1u32)))\n"
              "  (store o (lid x) t)\n"
              "  (let bl (ballot (lt l 3u32)))\n"
              "  (if (subgroup_all (lt l 32u32)) (then (store o (add (lid x) 40u32) bl)))\n"
              "  (let acc l)\n"
              "  (for j 0u32 3u32 1u32 (set acc (subgroup_scan add acc)))\n"
              "  (store o (add (lid x) 80u32) acc)\n"
              "  (let cnt 0u32)\n"
              "  (for k (subgroup_reduce min (add l 3u32)) 6u32 1u32 (set cnt (add cnt 1u32)))\n"
              "  (store o (add (lid x) 120u32) cnt))\n");
    if (!p) return;
    uint32_t o[160];
    memset(o, 0, sizeof o);
    struct vyre_buffer_arg bufs[1] = {{o, 160}};
    struct vyre_run_args args = {bufs, 1, NULL, 0, {1, 1, 1}};
    CHECK_EQ_U64(vyre_ref_run(p, &args, NULL, &err), VYRE_OK);
    /* subgroup 0: lanes 0..31, sum 496; subgroup 1: lanes 0..7, sum 28 */
    for (uint32_t i = 0; i < 40; i++) {
        uint32_t sum = i < 32 ? 496u : 28u;
        CHECK_EQ_U64(o[i], sum);
        CHECK_EQ_U64(o[40 + i], 7u);
        /* three inclusive scans of the lane ids: C(lane + 3, 4) */
        uint32_t lane = i % 32u;
        CHECK_EQ_U64(o[80 + i], lane * (lane + 1) * (lane + 2) * (lane + 3) / 24u);
        CHECK_EQ_U64(o[120 + i], 3u); /* from min(lane + 3) = 3 to 6 */
    }
    for (size_t s = 0; s < 3; s++) {
        char *ptx = emit(p, sms[s]);
        if (ptx) CHECK(harness_ptxas_ok(ptx, sms[s], false));
        vyre_free(ptx);
    }
    vyre_program_free(p);

    /* One shuffle node used by two statements: each gets its own value. */
    p = vyre_program_new("dag", 32, 1, 1);
    vyre_ir_buffer(p, "o", VYRE_U32, VYRE_ACCESS_WRITE, 64);
    struct vyre_expr *lane = vyre_ir_subgroup(p, VYRE_SG_LANE, VYRE_OP_COUNT, NULL, NULL);
    CHECK(vyre_ir_push(p, &p->body, vyre_ir_let(p, "c", lane)));
    struct vyre_expr *sh = vyre_ir_subgroup(p, VYRE_SG_SHUFFLE_XOR, VYRE_OP_COUNT,
                                            vyre_ir_name(p, "c"), vyre_ir_lit(p, VYRE_U32, 1));
    CHECK(vyre_ir_push(p, &p->body, vyre_ir_store(p, "o", vyre_ir_name(p, "c"), sh)));
    CHECK(vyre_ir_push(p, &p->body,
                       vyre_ir_set(p, "c",
                                   vyre_ir_binary(p, VYRE_OP_ADD, vyre_ir_name(p, "c"),
                                                  vyre_ir_lit(p, VYRE_U32, 32)))));
    CHECK(vyre_ir_push(p, &p->body, vyre_ir_store(p, "o", vyre_ir_name(p, "c"), sh)));
    uint32_t d[64];
    struct vyre_buffer_arg db[1] = {{d, 64}};
    struct vyre_run_args da = {db, 1, NULL, 0, {1, 1, 1}};
    CHECK_EQ_U64(vyre_ref_run(p, &da, NULL, &err), VYRE_OK);
    for (uint32_t i = 0; i < 32; i++) {
        CHECK_EQ_U64(d[i], i ^ 1u);
        CHECK_EQ_U64(d[32 + i], (i ^ 1u) + 32u);
    }
    vyre_program_free(p);
}

/* ---- random programs ------------------------------------------------------------------------ */

static void test_random(void) {
    unsigned with_ops = 0, with_match = 0, ptx_match = 0, nprog = 300;
    struct harness_batch b[3] = {{0}, {0}, {0}};
    for (uint64_t seed = 1; seed <= nprog; seed++) {
        struct vyre_gen_options o;
        memset(&o, 0, sizeof o);
        o.allow_subgroup = true;
        o.allow_barriers = seed % 2 == 0;
        o.allow_approx = seed % 3 == 0;
        vyre_program *p = vyre_gen_random(seed, &o);
        CHECK(p != NULL);
        if (!p) continue;
        char *t = text_of(p);
        struct vyre_problems pr = {0};
        enum vyre_status st = vyre_validate(p, &pr);
        if (st != VYRE_OK)
            fprintf(stderr, "seed %llu: %s at %s: %s\n%s", (unsigned long long)seed,
                    pr.count ? pr.items[0].code : "?", pr.count ? pr.items[0].path : "?",
                    pr.count ? pr.items[0].message : "?", t ? t : "");
        CHECK_EQ_U64(st, VYRE_OK);
        vyre_problems_free(&pr);
        if (t && (strstr(t, "(shuffle") || strstr(t, "(ballot") || strstr(t, "(subgroup_r") ||
                  strstr(t, "(subgroup_s") || strstr(t, "(subgroup_a")))
            with_ops++;
        if (t && strstr(t, "(match_any")) with_match++;
        vyre_program *q = t ? parse(t) : NULL;
        CHECK(q && vyre_program_equal(p, q));
        vyre_program_free(q);
        /* allow_subgroup off never makes one (and leaves those seeds as they were) */
        o.allow_subgroup = false;
        vyre_program *plain = vyre_gen_random(seed, &o);
        char *pt = plain ? text_of(plain) : NULL;
        CHECK(pt && !strstr(pt, "(subgroup_") && !strstr(pt, "(shuffle") && !strstr(pt, "(ballot"));
        vyre_free(pt);
        vyre_program_free(plain);
        if (st == VYRE_OK) {
            /* run: every buffer 70 elements of mixed bits, params from the seed */
            struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
            vyre_bits params[VYRE_MAX_PARAMS];
            uint64_t counts[VYRE_MAX_BUFFERS];
            size_t nb = 0, np = 0;
            for (uint32_t i = 0; i < p->ndecls; i++) {
                const struct vyre_decl *d = &p->decls[i];
                if (d->kind == VYRE_DECL_PARAM) {
                    params[np++] = value(d->type);
                } else if (d->kind == VYRE_DECL_BUFFER) {
                    uint64_t n = d->count ? d->count : 70u;
                    unsigned char *mem = calloc(n, 8);
                    for (uint64_t j = 0; j < n; j++) put(mem, d->type, j, value(d->type));
                    counts[nb] = n;
                    bufs[nb++] = (struct vyre_buffer_arg){mem, n};
                }
            }
            struct vyre_run_args args = {bufs, nb, params, np, {1, 1, 1}};
            struct vyre_grid_options go = {.buffer_counts = counts, .nbuffers = nb};
            CHECK_EQ_U64(vyre_launch_grid(p, &go, args.grid, &err), VYRE_OK);
            vyre_error_clear(&err);
            st = vyre_ref_run(p, &args, NULL, &err);
            if (st != VYRE_OK)
                fprintf(stderr, "seed %llu: %s\n%s", (unsigned long long)seed, err.message,
                        t ? t : "");
            CHECK_EQ_U64(st, VYRE_OK);
            for (size_t i = 0; i < nb; i++) free(bufs[i].data);
            for (size_t s = 0; s < 3; s++) {
                if (seed % 3 != s && seed % 10 != 0) continue;
                char *ptx = emit(p, sms[s]);
                if (ptx && strstr(ptx, "match.any.sync")) ptx_match++;
                if (ptx) harness_batch_add(&b[s], ptx);
                vyre_free(ptx);
            }
        }
        vyre_free(t);
        vyre_program_free(p);
    }
    /* most generated programs exchange values between lanes somewhere */
    harness_checks++;
    if (with_ops < nprog / 3)
        harness_fail(__FILE__, __LINE__, "only %u of %u programs use subgroup ops", with_ops,
                     nprog);
    /* match_any too (its PTX, match.any.sync, goes through ptxas below) */
    harness_checks++;
    if (with_match < nprog / 10)
        harness_fail(__FILE__, __LINE__, "only %u of %u programs use match_any", with_match, nprog);
    /* ...and some keep it through the emitter's optimiser, so ptxas sees match.any.sync */
    harness_checks++;
    if (ptx_match < 10)
        harness_fail(__FILE__, __LINE__, "only %u emitted kernels hold match.any.sync", ptx_match);
    printf("random subgroup programs: %u of %u use subgroup ops, %u match_any; %u of the kernels "
           "for ptxas hold match.any.sync\n",
           with_ops, nprog, with_match, ptx_match);
    for (size_t s = 0; s < 3; s++) {
        CHECK(b[s].text && harness_ptxas_ok(b[s].text, sms[s], false));
        free(b[s].text);
    }
}

int main(void) {
    RUN_TEST(test_text);
    RUN_TEST(test_validate);
    RUN_TEST(test_interp_and_ptx);
    RUN_TEST(test_placement);
    RUN_TEST(test_random);
    return harness_finish();
}
