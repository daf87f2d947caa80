/* test_vec.c — the vector entry of elementwise programs (docs/ARCHITECTURE.md §5): the
 * analysis (which programs are elementwise and why not, which buffers get vector loads
 * and stores, which guards hold on the fast path), the PTX of the vector entry (vector
 * instructions where they belong, none for other programs), ptxas on every target
 * (sm_70 through sm_90) for hand-written and generated elementwise programs, and the
 * generator's elementwise option. GPU parity is spec 23. */
#include <stdlib.h>

#include "bounds.h"
#include "elementwise.h"
#include "harness.h"
#include "ir.h"
#include "opt.h"

static const unsigned all_sms[] = {70, 75, 80, 86, 89, 90};

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "parse: %s\n%s", err.message, text);
        return NULL;
    }
    if (vyre_ensure_valid(p, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "validate: %s\n%s", err.message, text);
        vyre_program_free(p);
        return NULL;
    }
    return p;
}

static char *emit(vyre_program *p, unsigned sm) {
    struct vyre_ptx_options o = {.sm = sm};
    struct vyre_error err;
    char *ptx = NULL;
    size_t n = 0;
    if (vyre_ptx_emit(p, &o, &ptx, &n, &err) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "emit %s: %s", vyre_program_name(p), err.message);
    return ptx;
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *q = hay; q && (q = strstr(q, needle)) != NULL; q += strlen(needle)) n++;
    return n;
}

/* The copy vyre_ptx_emit analyses: the canonical text parsed again, folded, bounds
 * marked. */
static vyre_program *optimized(vyre_program *p) {
    char *text = NULL;
    size_t len = 0;
    vyre_program *q = NULL;
    struct vyre_error err;
    if (vyre_text_print(p, &text, &len) != VYRE_OK) return NULL;
    /* what vyre_ptx_emit does to its copy: the optimiser's passes, then bounds */
    struct vyre_opt_options o;
    if (vyre_text_parse(text, len, &q, &err) == VYRE_OK && vyre_ensure_valid(q, &err) == VYRE_OK &&
        vyre_opt_resolve(NULL, &o, &err) == VYRE_OK &&
        vyre_opt_run(&q, &o, NULL, NULL, &err) == VYRE_OK) {
        vyre_opt_bounds(q);
    } else {
        vyre_program_free(q);
        q = NULL;
    }
    vyre_free(text);
    return q;
}

/* The role flags of the buffer named `name`. */
static unsigned role(const vyre_program *p, const struct vyre_ew *ew, const char *name) {
    for (uint32_t i = 0; i < p->ndecls; i++)
        if (strcmp(p->decls[i].name, name) == 0) return ew->role[i];
    harness_fail(__FILE__, __LINE__, "no declaration %s", name);
    return 0;
}

#define G VYRE_EW_GID
#define VL VYRE_EW_VLOAD
#define VS VYRE_EW_VSTORE
#define L VYRE_EW_LIMIT

/* ---- the analysis ------------------------------------------------------------------ */

#define SAXPY                                                                                \
    "(program saxpy (workgroup 256) (buffer x f32 read) (buffer y f32 read_write) (param a " \
    "f32)\n (let i (gid x))\n (if (lt i (len y)) (then (store y i (add (mul a (load x i)) "  \
    "(load y i))))))"

static void test_saxpy_roles(void) {
    vyre_program *p = parse(SAXPY);
    if (!p) return;
    struct vyre_ew ew;
    CHECK_EQ_U64(vyre_opt_elementwise(p, &ew), VYRE_OK);
    CHECK(ew.ok);
    CHECK_EQ_U64(role(p, &ew, "x"), G | VL);
    CHECK_EQ_U64(role(p, &ew, "y"), G | VL | VS | L);
    CHECK_EQ_U64(ew.nvload, 2);
    CHECK_EQ_U64(ew.nvstore, 1);
    /* the guard holds on the fast path */
    const struct vyre_stmt *guard = p->body.items[1];
    CHECK(vyre_ew_fast_true(&ew, p, guard->cond));
    vyre_ew_free(&ew);
    vyre_program_free(p);
}

/* Programs that are not elementwise, each with the reason the analysis gives. */
static void test_not_elementwise(void) {
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) (lid x)))",
         "reads (lid x)"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) (wgid x)))",
         "reads (wgid x)"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) (ngroups x)))",
         "reads (ngroups x)"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) (wgsize x)))",
         "reads (wgsize x)"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) (gid y)))",
         "reads (gid y)"},
        {"(program a (workgroup 8 8) (buffer y u32 write) (store y (gid x) 1u32))",
         "has a workgroup of 8 x 8 x 1, not a 1-D one"},
        {"(program a (workgroup 64) (buffer y u32 write) (shared s u32 64)\n"
         " (store y (gid x) (load s 0u32)))",
         "uses the shared array s"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) 1u32) (barrier))",
         "has a barrier"},
        {"(program a (workgroup 64) (buffer y u32 read_write) (atomic add y (gid x) 1u32))",
         "has an atomic on y"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (gid x) (subgroup_lane)))",
         "uses the subgroup operation subgroup_lane"},
        {"(program a (workgroup 64) (buffer y u32 write) (store y (add (gid x) 1u32) 1u32))",
         "stores to y at (add (gid x) 1u32), not at its own index"},
        {"(program a (workgroup 64) (buffer y u32 read_write)\n"
         " (store y (gid x) (load y 0u32)))",
         "loads y (read_write) at 0u32, not at its own index"},
        /* a variable that is `set` is not the own index, even when it starts as one */
        {"(program a (workgroup 64) (buffer y u32 write) (param k u32)\n"
         " (let i (gid x)) (if (eq k 0u32) (then (set i 0u32))) (store y i 1u32))",
         "stores to y at i, not at its own index"},
        /* a store before every load: nothing left to vectorise */
        {"(program a (workgroup 64) (buffer y u32 read_write)\n"
         " (let i (gid x)) (store y i 0u32) (store y i (add (load y i) 1u32)))",
         "has no load or store that can be a vector access"},
        {"(program a (workgroup 64) (buffer x u32 read) (buffer y u32 write)\n"
         " (store y 0u32 (load x (gid x))))",
         "stores to y at 0u32, not at its own index"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_program *p = parse(cases[i].text);
        if (!p) continue;
        struct vyre_ew ew;
        CHECK_EQ_U64(vyre_opt_elementwise(p, &ew), VYRE_OK);
        CHECK(!ew.ok);
        CHECK_STR_CONTAINS(ew.why, cases[i].why);
        /* and no vector entry in its PTX */
        char *ptx = emit(p, 80);
        CHECK(ptx && !strstr(ptx, "_v4(") && !strstr(ptx, ".v4") && !strstr(ptx, ".v2"));
        vyre_free(ptx);
        vyre_ew_free(&ew);
        vyre_program_free(p);
    }
}

/* Elementwise programs, with the roles each buffer gets. */
static void test_roles(void) {
    static const struct {
        const char *text;
        const char *buf[3];
        unsigned want[3];
    } cases[] = {
        /* a read buffer loaded anywhere is allowed; only own-index loads are vectors */
        {"(program a (workgroup 64) (buffer x f32 read) (buffer t f32 read) (buffer y f32 write)\n"
         " (let i (gid x)) (store y i (add (load x i) (load t 0u32))))",
         {"x", "t", "y"},
         {G | VL, 0, G | VS}},
        /* a load after a store of the same buffer: y scalar, z still a vector store */
        {"(program a (workgroup 64) (buffer y u32 read_write) (buffer z u32 write)\n"
         " (let i (gid x)) (store y i 1u32) (store z i (load y i)))",
         {"y", "z", NULL},
         {G, G | VS, 0}},
        /* a conditional store (not a fast-true guard) stays scalar; the load is a vector */
        {"(program a (workgroup 64) (buffer x f32 read) (buffer y f32 write)\n"
         " (let i (gid x)) (if (lt (load x i) 0x0p+0f32) (then (store y i (load x i)))))",
         {"x", "y", NULL},
         {G | VL, G, 0}},
        /* stores in a loop are scalar, and loads in it follow them */
        {"(program a (workgroup 64) (buffer y u32 read_write) (buffer x u32 read)\n"
         " (let i (gid x)) (for j 0u32 3u32 1u32 (store y i (add (load y i) (load x i)))))",
         {"y", "x", NULL},
         {G, G | VL, 0}},
        /* a return before the store: the store may not run, so it is scalar */
        {"(program a (workgroup 64) (buffer x i32 read) (buffer y i32 write)\n"
         " (let i (gid x)) (if (lt (load x i) 0i32) (then (return))) (store y i 1i32))",
         {"x", "y", NULL},
         {G | VL, G, 0}},
        /* a return after the store does not matter */
        {"(program a (workgroup 64) (buffer x i32 read) (buffer y i32 write)\n"
         " (let i (gid x)) (store y i 1i32) (if (lt (load x i) 0i32) (then (return))))",
         {"x", "y", NULL},
         {G | VL, G | VS, 0}},
        /* an i32 spelling of the own index, and a 64-bit and a bool buffer */
        {"(program a (workgroup 32) (buffer x f64 read) (buffer y bool write)\n"
         " (let j (bitcast i32 (gid x))) (let k (cast u32 j))\n"
         " (if (land (lt k (len x)) (gt (len y) k))\n"
         "  (then (store y j (lt (load x k) 0x0p+0f64)))\n"
         "  (else (store y k false))))",
         {"x", "y", NULL},
         {G | VL | L, G | VS | L, 0}},
        /* guards on a buffer not accessed at the own index, and on a u32 param, hold on
         * the fast path too (their bounds join its test) */
        {"(program a (workgroup 64) (buffer q u32 read) (buffer y u32 write) (param n u32)\n"
         " (let i (gid x)) (if (land (lt i (len q)) (lt i n)) (then (store y i 7u32))))",
         {"q", "y", "n"},
         {L, G | VS, L}},
        /* a guard that is not of that form keeps its store scalar */
        {"(program a (workgroup 64) (buffer y u32 write) (param n u32)\n"
         " (let i (gid x)) (if (le i n) (then (store y i 7u32))) (store y i 1u32))",
         {"y", NULL, NULL},
         {G, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_program *p = parse(cases[i].text);
        if (!p) continue;
        struct vyre_ew ew;
        CHECK_EQ_U64(vyre_opt_elementwise(p, &ew), VYRE_OK);
        bool any = false;
        for (int b = 0; b < 3 && cases[i].buf[b]; b++) {
            unsigned got = role(p, &ew, cases[i].buf[b]);
            if (got != cases[i].want[b])
                harness_fail(__FILE__, __LINE__, "case %zu: %s has roles %u, want %u (%s)", i,
                             cases[i].buf[b], got, cases[i].want[b], ew.why);
            harness_checks++;
            any |= (got & (VL | VS)) != 0;
        }
        CHECK(ew.ok == any);
        vyre_ew_free(&ew);
        vyre_program_free(p);
    }
}

static void test_fast_true(void) {
    vyre_program *p = parse("(program a (workgroup 64) (buffer x u32 read) (buffer q u32 read)\n"
                            " (buffer y u32 write) (param k u32)\n"
                            " (let i (gid x)) (store y i (load x i)))");
    if (!p) return;
    struct vyre_ew ew;
    CHECK_EQ_U64(vyre_opt_elementwise(p, &ew), VYRE_OK);
    CHECK(ew.ok);
    static const struct {
        const char *cond;
        bool want;
    } cases[] = {
        {"(lt i (len y))", true},
        {"(lt (gid x) (len x))", true},
        {"(gt (len y) i)", true},
        {"(land (lt i (len x)) (gt (len y) i))", true},
        {"(lt i (len q))", true}, /* a guard's bound joins the fast path's test */
        {"(lt i k)", true},
        {"(land (lt i (len x)) (lt i k))", true},
        {"(le i (len y))", false},
        {"(lt k (len y))", false},
        {"(lt (add i 1u32) (len y))", false},
        {"(lt i (add k 1u32))", false},
        {"(lor (lt i (len x)) (lt i (len y)))", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "(program a (workgroup 64) (buffer x u32 read) (buffer q u32 read)\n"
                 " (buffer y u32 write) (param k u32)\n"
                 " (let i (gid x)) (if %s (then (store y i (load x i)))))",
                 cases[i].cond);
        vyre_program *c = parse(text);
        if (!c) continue;
        struct vyre_ew ce;
        CHECK_EQ_U64(vyre_opt_elementwise(c, &ce), VYRE_OK);
        bool got = vyre_ew_fast_true(&ce, c, c->body.items[1]->cond);
        if (got != cases[i].want)
            harness_fail(__FILE__, __LINE__, "%s: fast-true %d, want %d", cases[i].cond, got,
                         cases[i].want);
        harness_checks++;
        vyre_ew_free(&ce);
        vyre_program_free(c);
    }
    vyre_ew_free(&ew);
    vyre_program_free(p);
}

/* ---- PTX ------------------------------------------------------------------------------ */

/* The vector entry's text (from its .entry line on), or NULL. */
static const char *vector_entry(const char *ptx, const char *name) {
    char want[96];
    snprintf(want, sizeof want, ".visible .entry %s_v4(", name);
    return ptx ? strstr(ptx, want) : NULL;
}

static void test_saxpy_ptx(void) {
    vyre_program *p = parse(SAXPY);
    if (!p) return;
    char *ptx = emit(p, 90);
    const char *v = vector_entry(ptx, "saxpy");
    CHECK(v != NULL);
    if (v) {
        /* same ABI as the program's entry, plus the invocation count */
        CHECK_STR_CONTAINS(v, "\t.param .f32 p_a,\n\t.param .u32 vyre_vn\n)\n.maxntid 256, 1, 1");
        /* x read: non-coherent vector load; y read_write: coherent vector load and store */
        CHECK_EQ_U64(count(v, "ld.global.nc.v4.f32"), 1);
        CHECK_EQ_U64(count(v, "ld.global.v4.f32"), 1);
        CHECK_EQ_U64(count(v, "st.global.v4.f32"), 1);
        /* four fast-path invocations with unchecked arithmetic; the guard is gone there */
        CHECK_EQ_U64(count(v, "// fast path: invocation base + "), 4);
        CHECK_EQ_U64(count(v, "// holds for every invocation of the step"), 4);
        CHECK_EQ_U64(count(v, "mul.rn.f32"), 5);
        /* the slow path keeps the program's checks: the guard and x's bounds check */
        CHECK_EQ_U64(count(v, "@%p"), 4);
        CHECK_EQ_U64(count(v, "ld.global.nc.f32"), 1);
        CHECK_EQ_U64(count(v, "st.global.f32"), 1);
        CHECK(strstr(v, ".ftz") == NULL && strstr(v, "fma") == NULL);
    }
    for (size_t s = 0; s < sizeof all_sms / sizeof all_sms[0]; s++) {
        char *t = emit(p, all_sms[s]);
        CHECK(vector_entry(t, "saxpy") != NULL);
        CHECK(harness_ptxas_ok(t, all_sms[s], false));
        vyre_free(t);
    }
    vyre_free(ptx);
    vyre_program_free(p);
}

/* Every type's vector form: 32-bit types one .v4, 64-bit types two .v2, bool as words. */
static void test_types_ptx(void) {
    static const struct {
        const char *type, *load, *store;
        size_t nload;
    } cases[] = {
        {"u32", "ld.global.nc.v4.u32", "st.global.v4.u32", 1},
        {"i32", "ld.global.nc.v4.u32", "st.global.v4.u32", 1},
        {"f32", "ld.global.nc.v4.f32", "st.global.v4.f32", 1},
        {"u64", "ld.global.nc.v2.u64", "st.global.v2.u64", 2},
        {"i64", "ld.global.nc.v2.u64", "st.global.v2.u64", 2},
        {"f64", "ld.global.nc.v2.f64", "st.global.v2.f64", 2},
        {"bool", "ld.global.nc.v4.u32", "st.global.v4.u32", 1},
    };
    struct harness_batch b[6] = {{0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512], name[32];
        snprintf(name, sizeof name, "copy_%s", cases[i].type);
        snprintf(text, sizeof text,
                 "(program %s (workgroup 128) (buffer x %s read) (buffer y %s write)\n"
                 " (let i (gid x)) (if (lt i (len y)) (then (store y i (load x i)))))",
                 name, cases[i].type, cases[i].type);
        vyre_program *p = parse(text);
        if (!p) continue;
        for (size_t s = 0; s < 6; s++) {
            char *ptx = emit(p, all_sms[s]);
            const char *v = vector_entry(ptx, name);
            CHECK(v != NULL);
            CHECK_EQ_U64(count(v, cases[i].load), cases[i].nload);
            CHECK_EQ_U64(count(v, cases[i].store), cases[i].nload);
            if (ptx) harness_batch_add(&b[s], ptx);
            vyre_free(ptx);
        }
        vyre_program_free(p);
    }
    for (size_t s = 0; s < 6; s++) {
        CHECK(b[s].text && harness_ptxas_ok(b[s].text, all_sms[s], false));
        free(b[s].text);
    }
}

/* ---- generated elementwise programs ---------------------------------------------------- */

#define N_GEN 240u

static void test_generated(void) {
    struct vyre_gen_options o;
    memset(&o, 0, sizeof o);
    o.elementwise = true;
    o.allow_approx = true;
    o.allow_barriers = true; /* overridden by elementwise */
    o.allow_subgroup = true;
    struct harness_batch b[6] = {{0}};
    size_t ok = 0, vload = 0, vstore = 0;
    for (uint64_t seed = 1; seed <= N_GEN; seed++) {
        vyre_program *p = vyre_gen_random(seed, &o);
        CHECK(p != NULL);
        if (!p) continue;
        struct vyre_error err;
        CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_OK);
        CHECK_EQ_U64(p->workgroup[1] * p->workgroup[2], 1);
        vyre_program *q = vyre_gen_random(seed, &o); /* deterministic */
        CHECK(q && vyre_program_equal(p, q));
        vyre_program_free(q);
        q = optimized(p);
        CHECK(q != NULL);
        if (!q) continue;
        struct vyre_ew ew;
        CHECK_EQ_U64(vyre_opt_elementwise(q, &ew), VYRE_OK);
        if (!ew.ok && !strstr(ew.why, "no load or store"))
            harness_fail(__FILE__, __LINE__, "seed %llu is not elementwise: %s",
                         (unsigned long long)seed, ew.why);
        ok += ew.ok;
        vload += ew.nvload > 0;
        vstore += ew.nvstore > 0;
        unsigned sm = all_sms[seed % 6];
        char *ptx = emit(p, sm);
        CHECK(ptx && (vector_entry(ptx, vyre_program_name(p)) != NULL) == ew.ok);
        if (ptx) harness_batch_add(&b[seed % 6], ptx);
        vyre_free(ptx);
        vyre_ew_free(&ew);
        vyre_program_free(q);
        vyre_program_free(p);
    }
    printf("generated: %zu of %u elementwise programs have a vector entry (%zu with vector "
           "loads, %zu with vector stores)\n",
           ok, N_GEN, vload, vstore);
    /* Most have one; the others mix loads and stores of one buffer (their fast path
     * would have no vector access), which spec 23 runs on the program's entry. */
    CHECK(ok >= N_GEN / 2);
    CHECK(vload >= N_GEN * 2 / 5 && vstore >= N_GEN / 4) /* after the optimiser: 117, 111 */;
    for (size_t s = 0; s < 6; s++) {
        CHECK(b[s].text && harness_ptxas_ok(b[s].text, all_sms[s], false));
        free(b[s].text);
    }
}

int main(void) {
    RUN_TEST(test_saxpy_roles);
    RUN_TEST(test_not_elementwise);
    RUN_TEST(test_roles);
    RUN_TEST(test_fast_true);
    RUN_TEST(test_saxpy_ptx);
    RUN_TEST(test_types_ptx);
    RUN_TEST(test_generated);
    return harness_finish();
}
