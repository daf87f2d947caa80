/* test_mega.c — the megakernel planner and composition of vyre_mega.h without Lua or a
 * GPU: Kahn layering and its errors (self-dependency, cycle), the dependencies of a
 * sequence by buffer identity (RAW, WAW, WAR), and composed programs run on the
 * interpreter against the steps run one after the other (times, prefix, converge,
 * re-mapped workgroups), plus the refusals; dependencies by memory (a view and its
 * parent); NULL arguments refused by every entry point; the plan cache (counters,
 * eviction of a plan still held, four threads on one cache). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ir.h"
#include "vyre_mega.h"

static struct vyre_error err;

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK ||
        vyre_program_check(p, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "%s", err.message);
        vyre_program_free(p);
        return NULL;
    }
    return p;
}

static void test_layers(void) {
    uint32_t layer[5], n = 0;
    struct vyre_mega_dep d[] = {{0, 1, 0, VYRE_DEP_RAW},
                                {1, 3, 0, VYRE_DEP_WAR},
                                {2, 3, 1, VYRE_DEP_WAW},
                                {0, 4, 2, VYRE_DEP_RAW}};
    CHECK(vyre_mega_layers(5, d, 4, layer, &n, &err) == VYRE_OK);
    CHECK_EQ_U64(n, 3);
    CHECK(layer[0] == 0 && layer[1] == 1 && layer[2] == 0 && layer[3] == 2 && layer[4] == 1);
    struct vyre_mega_dep self[] = {{2, 2, 0, VYRE_DEP_RAW}};
    CHECK(vyre_mega_layers(3, self, 1, layer, &n, &err) == VYRE_ERR_INVALID);
    CHECK_STR_CONTAINS(err.message, "depends on itself");
    CHECK_STR_CONTAINS(err.message, "Fix:");
    struct vyre_mega_dep cyc[] = {
        {0, 1, 0, VYRE_DEP_RAW}, {1, 2, 0, VYRE_DEP_RAW}, {2, 1, 0, VYRE_DEP_RAW}};
    CHECK(vyre_mega_layers(3, cyc, 3, layer, &n, &err) == VYRE_ERR_INVALID);
    CHECK_STR_CONTAINS(err.message, "cycle; steps 2 3");
    CHECK(layer[0] == 0 && layer[1] == UINT32_MAX && layer[2] == UINT32_MAX); /* unscheduled */
    struct vyre_mega_dep far[] = {{0, 7, 0, VYRE_DEP_RAW}};
    CHECK(vyre_mega_layers(3, far, 1, layer, &n, &err) == VYRE_ERR_ARG);
    CHECK_EQ_U64(vyre_mega_layers(0, NULL, 0, layer, &n, &err), VYRE_OK);
    CHECK_EQ_U64(n, 0);
}

static const char INC[] = "(program inc (workgroup 32) (buffer x u32 read_write) (param k u32)"
                          " (let i (gid x)) (if (lt i (len x)) (then (store x i (add (mul (load"
                          " x i) 3u32) k)))))";
static const char COPY[] = "(program copy (workgroup 64) (buffer src u32 read) (buffer dst u32"
                           " write) (shared t u32 64) (let i (gid x)) (store t (lid x) (load src"
                           " i)) (barrier) (store dst i (add (load t (sub 63u32 (lid x))) 1u32)))";
static const char SUM[] = "(program sum (workgroup 16 2) (buffer x u32 read) (buffer acc u32"
                          " read_write) (let i (add (gid x) (mul (gid y) 32u32)))"
                          " (atomic add acc (rem i 4u32) (load x i)))";
static const char DEC[] = "(program dec (workgroup 64) (buffer x u32 read_write) (buffer flag u32"
                          " read_write) (let i (gid x)) (if (lt i (len x)) (then (if (gt (load x"
                          " i) 0u32) (then (store x i (sub (load x i) 1u32)) (store flag 0u32"
                          " 1u32))))))";

static void test_deps(void) {
    vyre_program *inc = parse(INC), *copy = parse(COPY);
    if (!inc || !copy) return;
    uint32_t b0[] = {0}, b01[] = {0, 1}, b10[] = {1, 0};
    struct vyre_mega_step s[] = {
        {inc, b0, {4, 1, 1}}, {copy, b01, {2, 1, 1}}, {copy, b10, {2, 1, 1}}, {inc, b0, {4, 1, 1}}};
    struct vyre_mega_dep *d = NULL;
    uint32_t n = 0;
    CHECK(vyre_mega_deps(s, 4, NULL, &d, &n, &err) == VYRE_OK);
    /* 1->2 RAW(0); 2->3 WAR(0) and RAW(1); 3->4 RAW(0) (inc reads what copy wrote) */
    bool raw12 = false, war23 = false, raw23 = false, raw34 = false;
    for (uint32_t i = 0; i < n; i++) {
        raw12 |= d[i].from == 0 && d[i].to == 1 && d[i].kind == VYRE_DEP_RAW && d[i].buffer == 0;
        war23 |= d[i].from == 1 && d[i].to == 2 && d[i].kind == VYRE_DEP_WAR && d[i].buffer == 0;
        raw23 |= d[i].from == 1 && d[i].to == 2 && d[i].kind == VYRE_DEP_RAW && d[i].buffer == 1;
        raw34 |= d[i].from == 2 && d[i].to == 3 && d[i].kind == VYRE_DEP_RAW && d[i].buffer == 0;
    }
    CHECK(raw12 && war23 && raw23 && raw34);
    /* write after write: two stores into one buffer, nothing read */
    vyre_program *fill =
        parse("(program fill (workgroup 1) (buffer y u32 write) (store y 0u32 1u32))");
    struct vyre_mega_step w[] = {{fill, b0, {1, 1, 1}}, {fill, b0, {1, 1, 1}}};
    free(d);
    CHECK(vyre_mega_deps(w, 2, NULL, &d, &n, &err) == VYRE_OK);
    CHECK(n == 1 && d[0].kind == VYRE_DEP_WAW);
    vyre_program_free(fill);
    free(d);
    vyre_program_free(inc);
    vyre_program_free(copy);
}

/* Runs p on the interpreter with u32 buffers. */
static uint64_t run(vyre_program *p, uint32_t **bufs, const uint64_t *n, const vyre_bits *params,
                    size_t np, const uint32_t grid[3]) {
    struct vyre_buffer_arg a[8];
    for (uint32_t i = 0; i < p->nbuffers; i++) a[i] = (struct vyre_buffer_arg){bufs[i], n[i]};
    struct vyre_run_args ra = {a, p->nbuffers, params, np, {grid[0], grid[1], grid[2]}};
    uint64_t rounds = 0;
    if (vyre_ref_run(p, &ra, &(struct vyre_ref_run_options){.rounds = &rounds}, &err) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "%s", err.message);
    return rounds;
}

static void test_compose(void) {
    vyre_program *inc = parse(INC), *copy = parse(COPY), *sum = parse(SUM);
    if (!inc || !copy || !sum) return;
    uint32_t b0[] = {0}, b01[] = {0, 1}, b12[] = {1, 2};
    /* prefix: inc(x=0); rounds x3: copy(0->1), sum(1 into 2), inc(x=0) */
    struct vyre_mega_step s[] = {
        {inc, b0, {4, 1, 1}}, {copy, b01, {2, 1, 1}}, {sum, b12, {2, 2, 1}}, {inc, b0, {4, 1, 1}}};
    enum vyre_type types[] = {VYRE_U32, VYRE_U32, VYRE_U32};
    struct vyre_mega_options o = {1, true, false, 0, NULL, 0, NULL, false, 0, NULL, NULL};
    struct vyre_mega *m = NULL;
    CHECK(vyre_mega_build(s, 4, 3, types, &o, &m, &err) == VYRE_OK);
    if (!m) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    CHECK_EQ_U64(m->nlayers, 3); /* prefix {inc}; rounds {copy}, {sum, inc}: RAW y, WAR x */
    CHECK(m->workgroup[0] == 64 && m->workgroup[1] == 1);
    CHECK(m->program->has_grid);
    /* expected: the steps one after the other */
    uint32_t x[128], y[128], acc[4] = {0}, x2[128], y2[128], acc2[4] = {0};
    for (int i = 0; i < 128; i++) x[i] = x2[i] = (uint32_t)i * 2654435761u;
    memset(y, 0, sizeof y);
    memset(y2, 0, sizeof y2);
    uint64_t n1[] = {128}, n2[] = {128, 128}, n3[] = {128, 4};
    vyre_bits k1 = 7, k2 = 11;
    uint32_t *bx[] = {x}, *bxy[] = {x, y}, *bya[] = {y, acc};
    run(inc, bx, n1, &k1, 1, s[0].grid);
    for (int r = 0; r < 3; r++) {
        run(copy, bxy, n2, NULL, 0, s[1].grid);
        run(sum, bya, n3, NULL, 0, s[2].grid);
        run(inc, bx, n1, &k2, 1, s[3].grid);
    }
    const vyre_bits p0[] = {7}, p3[] = {11};
    const vyre_bits *sp[] = {p0, NULL, NULL, p3};
    vyre_bits params[64];
    uint32_t grid[3];
    struct vyre_mega_args_options ao = {.steps = s, .step_params = sp, .times = 3};
    CHECK(vyre_mega_args(m, &ao, params, grid, &err) == VYRE_OK);
    CHECK_EQ_U64(grid[0], 8); /* the widest layer: sum (2 x 2) and inc (4) side by side */
    uint32_t *mb[] = {x2, y2, acc2};
    uint64_t mn[] = {128, 128, 4};
    run(m->program, mb, mn, params, m->program->nparams, grid);
    CHECK(memcmp(x, x2, sizeof x) == 0);
    CHECK(memcmp(y, y2, sizeof y) == 0);
    CHECK(memcmp(acc, acc2, sizeof acc) == 0);
    vyre_mega_free(m);

    /* converge on a flag no step binds is refused for a non-word flag ... */
    vyre_program *dec = parse(DEC);
    uint32_t bd[] = {0, 1};
    struct vyre_mega_step sd[] = {{dec, bd, {2, 1, 1}}};
    enum vyre_type ft[] = {VYRE_U32, VYRE_F32};
    struct vyre_mega_options oc = {0, false, true, 1, NULL, 0, NULL, false, 0, NULL, NULL};
    CHECK(vyre_mega_build(sd, 1, 2, ft, &oc, &m, &err) == VYRE_ERR_ARG);
    /* ... and runs rounds until the flag stays 0 */
    ft[1] = VYRE_U32;
    CHECK(vyre_mega_build(sd, 1, 2, ft, &oc, &m, &err) == VYRE_OK);
    if (m) {
        uint32_t v[100], f[1] = {5};
        for (uint32_t i = 0; i < 100; i++) v[i] = i % 9;
        const vyre_bits *none[] = {NULL};
        struct vyre_mega_args_options ac = {.steps = sd, .step_params = none, .max_rounds = 50};
        CHECK(vyre_mega_args(m, &ac, params, grid, &err) == VYRE_OK);
        uint32_t *vb[] = {v, f};
        uint64_t vn[] = {100, 1};
        CHECK_EQ_U64(run(m->program, vb, vn, params, m->program->nparams, grid), 9);
        CHECK_EQ_U64(f[0], 0);
        for (int i = 0; i < 100; i++) CHECK_EQ_U64(v[i], 0);
        vyre_mega_free(m);
    }
    /* a step with a barrier and fewer invocations than the largest step */
    const char *small = "(program small (workgroup 32) (buffer x u32 read_write) (shared t u32"
                        " 32) (store t (lid x) 1u32) (barrier) (store x (gid x) (load t 0u32)))";
    vyre_program *sm = parse(small);
    struct vyre_mega_step mix[] = {{sm, b0, {1, 1, 1}}, {inc, b0, {1, 1, 1}}};
    inc->workgroup[0] = 64; /* make inc larger than small */
    inc->validated = false;
    CHECK(vyre_mega_build(mix, 2, 1, types, &(struct vyre_mega_options){0}, &m, &err) ==
          VYRE_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.message, "re-mapped");
    /* grid statements inside a step */
    vyre_program *g = parse("(program g (workgroup 1) (buffer x u32 read_write) (grid_barrier))");
    struct vyre_mega_step gs[] = {{g, b0, {1, 1, 1}}};
    CHECK(vyre_mega_build(gs, 1, 1, types, &(struct vyre_mega_options){0}, &m, &err) ==
          VYRE_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    vyre_program_free(g);
    vyre_program_free(sm);
    vyre_program_free(dec);
    vyre_program_free(inc);
    vyre_program_free(copy);
    vyre_program_free(sum);
}

static const char SET[] = "(program set (workgroup 1) (buffer y u32 write) (param v u32)"
                          " (store y 0u32 v))";
static const char CP[] = "(program cp (workgroup 1) (buffer src u32 read) (buffer dst u32 write)"
                         " (store dst 0u32 (load src 0u32)))";

/* set P=1; copy out=P; set view(P)=2: id 0 is P, 1 is out, 2 a view of P. By identity
 * the last step is independent of the copy (out = 2 in one layer); by memory it must
 * wait for it (WAR), as be:sequence runs it (out = 1). */
static void test_alias_deps(void) {
    vyre_program *set = parse(SET), *cp = parse(CP);
    if (!set || !cp) return;
    uint32_t b0[] = {0}, b01[] = {0, 1}, b2[] = {2};
    struct vyre_mega_step s[] = {{set, b0, {1, 1, 1}}, {cp, b01, {1, 1, 1}}, {set, b2, {1, 1, 1}}};
    struct vyre_mega_memory mem[] = {{0, 0, 16}, {1, 0, 4}, {0, 0, 8}};
    struct vyre_mega_dep *d = NULL;
    uint32_t n = 0;
    bool war = false;
    CHECK(vyre_mega_deps(s, 3, mem, &d, &n, &err) == VYRE_OK);
    for (uint32_t i = 0; i < n; i++)
        war |= d[i].from == 1 && d[i].to == 2 && d[i].kind == VYRE_DEP_WAR && d[i].buffer == 2;
    CHECK(war);
    free(d);
    /* a view past the bytes the copy reads: still one allocation, no overlap */
    struct vyre_mega_memory apart[] = {{0, 0, 4}, {1, 0, 4}, {0, 8, 8}};
    CHECK(vyre_mega_deps(s, 3, apart, &d, &n, &err) == VYRE_OK);
    for (uint32_t i = 0; i < n; i++) CHECK(!(d[i].from == 1 && d[i].to == 2));
    free(d);
    /* the composed program: three layers, out = 1 on the interpreter, and P is
     * read_write although only its view is written after the copy reads it */
    enum vyre_type types[] = {VYRE_U32, VYRE_U32, VYRE_U32};
    struct vyre_mega_options o = {0, false, false, 0, mem, 0, NULL, false, 0, NULL, NULL};
    struct vyre_mega *m = NULL;
    CHECK(vyre_mega_build(s, 3, 3, types, &o, &m, &err) == VYRE_OK);
    if (m) {
        CHECK_EQ_U64(m->nlayers, 3);
        uint32_t P[4] = {0}, out[1] = {0};
        const vyre_bits one[] = {1}, two[] = {2};
        const vyre_bits *sp[] = {one, NULL, two};
        vyre_bits params[64];
        uint32_t grid[3];
        struct vyre_mega_args_options ao = {.steps = s, .step_params = sp, .times = 1};
        CHECK(vyre_mega_args(m, &ao, params, grid, &err) == VYRE_OK);
        uint32_t *mb[] = {P, out, P};
        uint64_t mn[] = {4, 1, 2};
        run(m->program, mb, mn, params, m->program->nparams, grid);
        CHECK_EQ_U64(out[0], 1);
        CHECK_EQ_U64(P[0], 2);
        char *text = NULL;
        CHECK(vyre_text_print(m->program, &text, NULL) == VYRE_OK);
        if (text) CHECK_STR_CONTAINS(text, "(buffer mg_b0 u32 read_write)");
        vyre_free(text);
        vyre_mega_free(m);
    }
    vyre_program_free(set);
    vyre_program_free(cp);
}

/* Worklists (docs/GRID.md): a step's worklist declarations become the composed program's
 * (one per id), a step sized by a worklist gets ngroups from its len each round, and the
 * rounds converge on the worklist; bad ids are refused with a Fix. */
static const char WL_STEP[] = "(program halve (workgroup 4)\n"
                              "  (worklist w u32)\n"
                              "  (buffer seen u32 read_write)\n"
                              "  (let i (gid x))\n"
                              "  (if (lt i (len w))\n"
                              "    (then (atomic add seen 0u32 (cast u32 (ngroups x)))\n"
                              "      (push w (shr (load w i) 1u32)))))\n";

static void test_worklists(void) {
    vyre_program *hp = parse(WL_STEP);
    if (!hp) return;
    uint32_t b0[] = {0}, w0[] = {0}, sized[] = {0}, unsized[] = {UINT32_MAX};
    const uint32_t *swl[] = {w0};
    struct vyre_mega_step s[] = {{hp, b0, {3, 1, 1}}};
    enum vyre_type types[] = {VYRE_U32}, wtypes[] = {VYRE_U32};
    struct vyre_mega_options o = {0, false, false, 0, NULL, 1, wtypes, true, 0, swl, sized};
    struct vyre_mega *m = NULL;
    CHECK(vyre_mega_build(s, 1, 1, types, &o, &m, &err) == VYRE_OK);
    if (m) {
        char *text = NULL;
        CHECK(vyre_text_print(m->program, &text, NULL) == VYRE_OK);
        if (text) {
            CHECK_STR_CONTAINS(text, "(worklist mg_w0 u32)");
            CHECK_STR_CONTAINS(text, "(converge mg_w0 mg_max");
            CHECK_STR_CONTAINS(text, "(len mg_w0)");
            CHECK_STR_CONTAINS(text, "(push mg_w0");
            CHECK_STR_CONTAINS(text, "mg1_dgx"); /* ngroups from len, each round */
        }
        vyre_free(text);
        vyre_mega_free(m);
    }
    /* not sized: ngroups is the step's static grid again */
    o.sized_by = unsized;
    CHECK(vyre_mega_build(s, 1, 1, types, &o, &m, &err) == VYRE_OK);
    if (m) {
        char *text = NULL;
        CHECK(vyre_text_print(m->program, &text, NULL) == VYRE_OK);
        if (text) CHECK(strstr(text, "mg1_dgx") == NULL);
        vyre_free(text);
        vyre_mega_free(m);
    }
    o.sized_by = sized;
    o.wl = 1; /* no such worklist */
    CHECK_EQ_U64(vyre_mega_build(s, 1, 1, types, &o, &m, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    o.wl = 0;
    o.converge = true; /* both forms */
    CHECK_EQ_U64(vyre_mega_build(s, 1, 1, types, &o, &m, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "pick one");
    o.converge = false;
    o.step_worklists = NULL; /* the step's worklist unbound */
    CHECK_EQ_U64(vyre_mega_build(s, 1, 1, types, &o, &m, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "step_worklists");
    vyre_program_free(hp);
}

/* Every entry point answers VYRE_ERR_ARG with a Fix for a NULL it needs. */
static void test_null_args(void) {
    vyre_program *set = parse(SET);
    if (!set) return;
    uint32_t b0[] = {0}, layer[2], nl = 0, nd = 0, grid[3];
    struct vyre_mega_step s[] = {{set, b0, {1, 1, 1}}}, bad[] = {{NULL, b0, {1, 1, 1}}},
                          nobuf[] = {{set, NULL, {1, 1, 1}}};
    struct vyre_mega_dep *d = NULL, dep = {0, 1, 0, VYRE_DEP_RAW};
    enum vyre_type types[] = {VYRE_U32};
    struct vyre_mega_options o = {0, false, false, 0, NULL, 0, NULL, false, 0, NULL, NULL};
    struct vyre_mega *m = NULL;
    vyre_bits params[8];
#define NULL_ARG(call)                           \
    do {                                         \
        err.message[0] = '\0';                   \
        CHECK_EQ_U64((call), VYRE_ERR_ARG);      \
        CHECK_STR_CONTAINS(err.message, "Fix:"); \
    } while (0)
    NULL_ARG(vyre_mega_layers(2, &dep, 1, layer, NULL, &err));
    NULL_ARG(vyre_mega_layers(2, &dep, 1, NULL, &nl, &err));
    NULL_ARG(vyre_mega_layers(2, NULL, 1, layer, &nl, &err));
    NULL_ARG(vyre_mega_deps(s, 1, NULL, NULL, &nd, &err));
    NULL_ARG(vyre_mega_deps(s, 1, NULL, &d, NULL, &err));
    NULL_ARG(vyre_mega_deps(NULL, 1, NULL, &d, &nd, &err));
    NULL_ARG(vyre_mega_deps(bad, 1, NULL, &d, &nd, &err));
    NULL_ARG(vyre_mega_deps(nobuf, 1, NULL, &d, &nd, &err));
    NULL_ARG(vyre_mega_build(NULL, 1, 1, types, &o, &m, &err));
    NULL_ARG(vyre_mega_build(s, 1, 1, NULL, &o, &m, &err));
    NULL_ARG(vyre_mega_build(s, 1, 1, types, NULL, &m, &err));
    NULL_ARG(vyre_mega_build(s, 1, 1, types, &o, NULL, &err));
    NULL_ARG(vyre_mega_build(bad, 1, 1, types, &o, &m, &err));
    NULL_ARG(vyre_mega_build(nobuf, 1, 1, types, &o, &m, &err));
    CHECK(vyre_mega_build(s, 1, 1, types, &o, &m, &err) == VYRE_OK);
    const vyre_bits one[] = {1};
    const vyre_bits *sp[] = {one};
    struct vyre_mega_args_options ao = {.steps = s, .step_params = sp, .times = 1};
    struct vyre_mega_args_options nosteps = {.steps = NULL, .step_params = sp, .times = 1};
    struct vyre_mega_args_options noparams = {.steps = s, .step_params = NULL, .times = 1};
    NULL_ARG(vyre_mega_args(NULL, &ao, params, grid, &err));
    NULL_ARG(vyre_mega_args(m, NULL, params, grid, &err));
    NULL_ARG(vyre_mega_args(m, &nosteps, params, grid, &err));
    NULL_ARG(vyre_mega_args(m, &noparams, params, grid, &err));
    NULL_ARG(vyre_mega_args(m, &ao, NULL, grid, &err));
    NULL_ARG(vyre_mega_args(m, &ao, params, NULL, &err));
    struct vyre_mega_cache_stats st;
    vyre_mega_cache *c = NULL;
    NULL_ARG(vyre_mega_cache_new(0, NULL, &err));
    CHECK(vyre_mega_cache_new(0, &c, &err) == VYRE_OK);
    NULL_ARG(vyre_mega_cache_get(NULL, 1, &m, &err));
    NULL_ARG(vyre_mega_cache_get(c, 1, NULL, &err));
    NULL_ARG(vyre_mega_cache_put(NULL, 1, m, &err));
    NULL_ARG(vyre_mega_cache_put(c, 1, NULL, &err));
    NULL_ARG(vyre_mega_cache_stats(NULL, &st, &err));
    NULL_ARG(vyre_mega_cache_stats(c, NULL, &err));
    NULL_ARG(vyre_mega_cache_clear(NULL, &err));
#undef NULL_ARG
    CHECK(strcmp(vyre_mega_dep_name((enum vyre_mega_dep_kind)9), "?") == 0);
    vyre_mega_free(NULL);
    vyre_mega_cache_free(NULL);
    CHECK(vyre_mega_retain(NULL) == NULL);
    vyre_mega_cache_free(c);
    vyre_mega_free(m);
    vyre_program_free(set);
}

static vyre_program *cache_prog;

/* A plan of the one-step composition `set` (a fresh build each time). */
static struct vyre_mega *plan_set(void) {
    static const uint32_t b0[] = {0};
    struct vyre_mega_step s[] = {{cache_prog, b0, {1, 1, 1}}};
    enum vyre_type types[] = {VYRE_U32};
    struct vyre_mega_options o = {0, false, false, 0, NULL, 0, NULL, false, 0, NULL, NULL};
    struct vyre_mega *m = NULL;
    struct vyre_error e;
    if (vyre_mega_build(s, 1, 1, types, &o, &m, &e) != VYRE_OK) return NULL;
    return m;
}

static void test_cache(void) {
    cache_prog = parse(SET);
    if (!cache_prog || vyre_ensure_valid(cache_prog, &err) != VYRE_OK) return;
    vyre_mega_cache *c = NULL;
    CHECK(vyre_mega_cache_new(2, &c, &err) == VYRE_OK);
    struct vyre_mega *got = NULL, *a = plan_set(), *b = plan_set(), *x = plan_set();
    CHECK(a && b && x);
    CHECK(vyre_mega_cache_get(c, 1, &got, &err) == VYRE_OK && got == NULL);
    CHECK(vyre_mega_cache_put(c, 1, a, &err) == VYRE_OK);
    CHECK(vyre_mega_cache_put(c, 1, x, &err) == VYRE_OK); /* key taken: a stays */
    CHECK(vyre_mega_cache_get(c, 1, &got, &err) == VYRE_OK && got == a);
    vyre_mega_free(got);
    vyre_mega_free(x);
    CHECK(vyre_mega_cache_put(c, 2, b, &err) == VYRE_OK);
    /* key 1 held by this test, then evicted by key 3: it stays usable until released */
    CHECK(vyre_mega_cache_get(c, 1, &got, &err) == VYRE_OK && got == a);
    vyre_mega_free(a); /* the builder's reference */
    struct vyre_mega *third = plan_set();
    CHECK(vyre_mega_cache_get(c, 2, &x, &err) == VYRE_OK && x == b);
    vyre_mega_free(x); /* key 2 is now more recent than key 1 */
    CHECK(vyre_mega_cache_put(c, 3, third, &err) == VYRE_OK);
    vyre_mega_free(third);
    vyre_mega_free(b);
    CHECK(got->program && got->nsteps == 1); /* evicted, still ours (valgrind/ASan read) */
    vyre_mega_free(got);
    struct vyre_mega_cache_stats st;
    CHECK(vyre_mega_cache_stats(c, &st, &err) == VYRE_OK);
    CHECK_EQ_U64(st.hits, 3);
    CHECK_EQ_U64(st.misses, 1);
    CHECK_EQ_U64(st.evictions, 1);
    CHECK_EQ_U64(st.entries, 2);
    CHECK(vyre_mega_cache_clear(c, &err) == VYRE_OK);
    CHECK(vyre_mega_cache_stats(c, &st, &err) == VYRE_OK && st.entries == 0 && st.hits == 3);
    vyre_mega_cache_free(c);
}

/* Four threads share one small cache: lookups, builds, puts that evict, releases. */
struct worker {
    vyre_mega_cache *c;
    unsigned id, bad;
};

static void *work(void *arg) {
    struct worker *w = arg;
    for (unsigned i = 0; i < 200; i++) {
        uint64_t key = (w->id * 7u + i) % 5u;
        struct vyre_mega *m = NULL;
        struct vyre_error e;
        if (vyre_mega_cache_get(w->c, key, &m, &e) != VYRE_OK) w->bad++;
        if (!m) {
            m = plan_set();
            if (!m || vyre_mega_cache_put(w->c, key, m, &e) != VYRE_OK) w->bad++;
        }
        if (m && (!m->program || m->nsteps != 1)) w->bad++;
        vyre_mega_free(m);
    }
    return NULL;
}

static void test_cache_threads(void) {
    if (!cache_prog) return;
    vyre_mega_cache *c = NULL;
    CHECK(vyre_mega_cache_new(3, &c, &err) == VYRE_OK);
    pthread_t t[4];
    struct worker w[4];
    for (unsigned i = 0; i < 4; i++) {
        w[i] = (struct worker){c, i, 0};
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_U64(w[i].bad, 0);
    }
    struct vyre_mega_cache_stats st;
    CHECK(vyre_mega_cache_stats(c, &st, &err) == VYRE_OK);
    CHECK_EQ_U64(st.hits + st.misses, 800);
    CHECK(st.entries <= 3);
    vyre_mega_cache_free(c);
    vyre_program_free(cache_prog);
    cache_prog = NULL;
}

int main(void) {
    RUN_TEST(test_layers);
    RUN_TEST(test_deps);
    RUN_TEST(test_compose);
    RUN_TEST(test_alias_deps);
    RUN_TEST(test_null_args);
    RUN_TEST(test_worklists);
    RUN_TEST(test_cache);
    RUN_TEST(test_cache_threads);
    return harness_finish();
}
