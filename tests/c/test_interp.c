/* test_interp.c — the reference interpreter (vyre_ref_run), launch-grid sizing
 * (vyre_launch_grid) and constant folding (vyre_opt_fold), on programs built with the ir.h
 * builder: data-parallel kernels, bounds rules, atomics, barriers and shared memory,
 * loops, early returns, multi-dimensional geometry, and the run-time barrier check. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "ir.h"
#include "opt.h"

/* ---- builder shorthands (they use a local `p`) --------------------------------------- */

#define LU(v) vyre_ir_lit(p, VYRE_U32, (vyre_bits)(v))
#define LI(v) vyre_ir_lit(p, VYRE_I32, (vyre_bits)(uint32_t)(int32_t)(v))
#define LB(v) vyre_ir_lit(p, VYRE_BOOL, (v))
#define NM(n) vyre_ir_name(p, (n))
#define BIN(op, a, b) vyre_ir_binary(p, VYRE_OP_##op, (a), (b))
#define UN(op, a) vyre_ir_unary(p, VYRE_OP_##op, (a))
#define GID(ax) vyre_ir_builtin(p, VYRE_GID, (ax))
#define LID(ax) vyre_ir_builtin(p, VYRE_LID, (ax))
#define WGID(ax) vyre_ir_builtin(p, VYRE_WGID, (ax))
#define LOAD(b, i) vyre_ir_load(p, (b), (i))
#define LEN(b) vyre_ir_len(p, (b))
#define PUSH(blk, s) CHECK(vyre_ir_push(p, (blk), (s)))
#define BODY (&p->body)

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static struct vyre_error err;

/* Runs with the given buffers/params on a grid; returns the status. */
static enum vyre_status run(vyre_program *p, struct vyre_buffer_arg *bufs, size_t nbufs,
                            const vyre_bits *params, size_t nparams, uint32_t gx, uint32_t gy,
                            uint32_t gz) {
    struct vyre_run_args a;
    memset(&a, 0, sizeof a);
    a.buffers = bufs;
    a.nbuffers = nbufs;
    a.params = params;
    a.nparams = nparams;
    a.grid[0] = gx;
    a.grid[1] = gy;
    a.grid[2] = gz;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_ref_run(p, &a, NULL, &err);
    return st;
}

/* (if (lt i (len buf)) (then S)) */
static struct vyre_stmt *guard(vyre_program *p, const char *i, const char *buf,
                               struct vyre_stmt *s) {
    struct vyre_stmt *iff = vyre_ir_if(p, BIN(LT, NM(i), LEN(buf)));
    PUSH(&iff->then_, s);
    return iff;
}

/* ---- data-parallel kernels ------------------------------------------------------------- */

static vyre_program *saxpy_program(void) {
    vyre_program *p = vyre_program_new("saxpy", 256, 1, 1);
    vyre_ir_buffer(p, "x", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "y", VYRE_F32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(p, "a", VYRE_F32);
    PUSH(BODY, vyre_ir_let(p, "i", GID(0)));
    struct vyre_expr *v = BIN(ADD, BIN(MUL, NM("a"), LOAD("x", NM("i"))), LOAD("y", NM("i")));
    PUSH(BODY, guard(p, "i", "y", vyre_ir_store(p, "y", NM("i"), v)));
    return p;
}

static void saxpy_case(uint32_t n, bool timed) {
    vyre_program *p = saxpy_program();
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    CHECK(x && y);
    if (!x || !y) return;
    for (uint32_t i = 0; i < n; i++) {
        x[i] = (float)i * 0.37f;
        y[i] = 1.0f / (float)(i + 1);
    }
    struct vyre_buffer_arg b[2] = {{x, n}, {y, n}};
    vyre_bits a = f_bits(2.5f);
    uint32_t grid[3];
    uint64_t counts[2] = {n, n};
    struct vyre_grid_options go = {.buffer_counts = counts, .nbuffers = 2};
    CHECK_EQ_U64(vyre_launch_grid(p, &go, grid, &err), VYRE_OK);
    clock_t t0 = clock();
    CHECK_EQ_U64(run(p, b, 2, &a, 1, grid[0], grid[1], grid[2]), VYRE_OK);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (timed) printf("saxpy over %u elements: %.3f s\n", n, secs);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        float prod = 2.5f * ((float)i * 0.37f); /* separate roundings, as the program */
        float want = prod + 1.0f / (float)(i + 1);
        if (f_bits(y[i]) != f_bits(want)) bad++;
    }
    CHECK_EQ_U64(bad, 0);
    free(x);
    free(y);
    vyre_program_free(p);
}

static void test_saxpy(void) {
    saxpy_case(1000, false);
    saxpy_case(1u << 20, true); /* the interpreter must stay fast enough for real sizes */
}

static void test_out_of_bounds(void) {
    vyre_program *p = vyre_program_new("oob", 8, 1, 1);
    vyre_ir_buffer(p, "in", VYRE_U32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_buffer(p, "neg", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    PUSH(BODY, vyre_ir_let(p, "i", GID(0)));
    /* unguarded: lanes 4..7 load zero and their stores are dropped */
    PUSH(BODY, vyre_ir_store(p, "out", NM("i"), BIN(ADD, LOAD("in", NM("i")), LU(100))));
    /* an i32 index of -1 is 0xFFFFFFFF unsigned: out of bounds */
    PUSH(BODY, vyre_ir_store(p, "neg", NM("i"), BIN(ADD, LOAD("in", LI(-1)), LU(7))));
    PUSH(BODY, vyre_ir_store(p, "neg", LI(-1), LU(99)));
    uint32_t in[4] = {1, 2, 3, 4};
    uint32_t out[8] = {0, 0, 0, 0, 0xAAAA, 0xAAAA, 0xAAAA, 0xAAAA};
    uint32_t neg[8] = {0};
    struct vyre_buffer_arg b[3] = {{in, 4}, {out, 4}, {neg, 8}};
    CHECK_EQ_U64(run(p, b, 3, NULL, 0, 1, 1, 1), VYRE_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_U64(out[i], in[i] + 100);
    for (int i = 4; i < 8; i++) CHECK_EQ_U64(out[i], 0xAAAA); /* past count: untouched */
    for (int i = 0; i < 8; i++) CHECK_EQ_U64(neg[i], 7);
    vyre_program_free(p);
}

static void test_bool_and_wide_types(void) {
    vyre_program *p = vyre_program_new("types", 4, 1, 1);
    vyre_ir_buffer(p, "flags", VYRE_BOOL, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "nflags", VYRE_BOOL, VYRE_ACCESS_WRITE, 0);
    vyre_ir_buffer(p, "sel", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_buffer(p, "w", VYRE_I64, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_buffer(p, "d", VYRE_F64, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(p, "k", VYRE_I64);
    PUSH(BODY, vyre_ir_let(p, "i", GID(0)));
    PUSH(BODY, vyre_ir_store(p, "nflags", NM("i"), UN(LNOT, LOAD("flags", NM("i")))));
    PUSH(BODY,
         vyre_ir_store(p, "sel", NM("i"), vyre_ir_select(p, LOAD("flags", NM("i")), LU(7), LU(9))));
    PUSH(BODY, vyre_ir_store(p, "w", NM("i"), BIN(MUL, LOAD("w", NM("i")), NM("k"))));
    PUSH(BODY, vyre_ir_store(p, "d", NM("i"),
                             vyre_ir_fma(p, LOAD("d", NM("i")), LOAD("d", NM("i")),
                                         vyre_ir_cast(p, VYRE_F64, NM("k")))));
    uint32_t flags[4] = {0, 5, 0xFFFFFFFFu, 1};
    uint32_t nflags[4] = {77, 77, 77, 77};
    uint32_t sel[4] = {0};
    int64_t w[4] = {1, -2, INT64_MAX, 1LL << 40};
    double d[4] = {1.5, -2.0, 0.25, 3.0};
    struct vyre_buffer_arg b[5] = {{flags, 4}, {nflags, 4}, {sel, 4}, {w, 4}, {d, 4}};
    vyre_bits k = (vyre_bits)(int64_t)-3;
    CHECK_EQ_U64(run(p, b, 5, &k, 1, 1, 1, 1), VYRE_OK);
    CHECK_EQ_U64(nflags[0], 1);
    CHECK_EQ_U64(nflags[1], 0);
    CHECK_EQ_U64(nflags[2], 0);
    CHECK_EQ_U64(nflags[3], 0);
    CHECK_EQ_U64(sel[0], 9);
    CHECK_EQ_U64(sel[1], 7);
    CHECK_EQ_U64(sel[2], 7);
    CHECK_EQ_U64(w[0], (uint64_t)(int64_t)-3);
    CHECK_EQ_U64(w[1], 6);
    CHECK_EQ_U64(w[2], (uint64_t)INT64_MAX * UINT64_C(0xFFFFFFFFFFFFFFFD)); /* wraps */
    CHECK_EQ_U64(w[3], (uint64_t)(-(3LL << 40)));
    CHECK(d[0] == 1.5 * 1.5 - 3.0);
    CHECK(d[1] == 1.0);
    CHECK(d[3] == 6.0);
    vyre_program_free(p);
}

/* ---- atomics ---------------------------------------------------------------------------- */

static void test_atomic_counter(void) {
    vyre_program *p = vyre_program_new("count", 256, 1, 1);
    vyre_ir_buffer(p, "c", VYRE_U32, VYRE_ACCESS_READ_WRITE, 1);
    vyre_ir_buffer(p, "seen", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    PUSH(BODY, vyre_ir_atomic(p, "old", VYRE_ATOMIC_ADD, "c", LU(0), NULL, LU(1)));
    /* every old value is handed out exactly once */
    PUSH(BODY, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_ADD, "seen", NM("old"), NULL, LU(1)));
    /* out of bounds atomics: no effect, old value reads 0 */
    PUSH(BODY, vyre_ir_atomic(p, "oob", VYRE_ATOMIC_ADD, "c", LU(5), NULL, LU(1)));
    PUSH(BODY, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_OR, "seen", LU(4096), NULL,
                              BIN(ADD, NM("oob"), LU(1))));
    uint32_t c = 0;
    uint32_t *seen = calloc(4097, sizeof *seen);
    CHECK(seen != NULL);
    if (!seen) return;
    struct vyre_buffer_arg b[2] = {{&c, 1}, {seen, 4097}};
    CHECK_EQ_U64(run(p, b, 2, NULL, 0, 16, 1, 1), VYRE_OK);
    CHECK_EQ_U64(c, 4096);
    uint32_t ones = 0;
    for (int i = 0; i < 4096; i++) ones += seen[i] == 1;
    CHECK_EQ_U64(ones, 4096);
    CHECK_EQ_U64(seen[4096], 1);
    free(seen);
    vyre_program_free(p);
}

/* A compare-and-swap retry loop: the first guess is wrong, so every invocation takes
 * the failure path once and then succeeds with the value it was handed back. */
static void test_cas_loop(void) {
    vyre_program *p = vyre_program_new("cas", 32, 1, 1);
    vyre_ir_buffer(p, "c", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_buffer(p, "tries", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    PUSH(BODY, vyre_ir_let(p, "cur", LU(12345)));
    PUSH(BODY, vyre_ir_let(p, "n", LU(0)));
    struct vyre_stmt *loop = vyre_ir_for(p, "t", LU(0), LU(100), LU(1));
    PUSH(&loop->then_, vyre_ir_set(p, "n", BIN(ADD, NM("n"), LU(1))));
    PUSH(&loop->then_, vyre_ir_atomic(p, "prev", VYRE_ATOMIC_CAS, "c", LU(0), NM("cur"),
                                      BIN(ADD, NM("cur"), GID(0))));
    struct vyre_stmt *done = vyre_ir_if(p, BIN(EQ, NM("prev"), NM("cur")));
    PUSH(&done->then_, vyre_ir_simple(p, VYRE_ST_BREAK));
    PUSH(&loop->then_, done);
    PUSH(&loop->then_, vyre_ir_set(p, "cur", NM("prev")));
    PUSH(BODY, loop);
    PUSH(BODY, vyre_ir_store(p, "tries", GID(0), NM("n")));
    uint32_t c = 0, tries[64] = {0};
    struct vyre_buffer_arg b[2] = {{&c, 1}, {tries, 64}};
    CHECK_EQ_U64(run(p, b, 2, NULL, 0, 2, 1, 1), VYRE_OK);
    CHECK_EQ_U64(c, 63 * 64 / 2);
    for (int i = 0; i < 64; i++) CHECK_EQ_U64(tries[i], 2);
    vyre_program_free(p);
}

/* ---- barriers and shared memory ---------------------------------------------------------- */

static void test_tree_reduction(void) {
    vyre_program *p = vyre_program_new("reduce", 64, 1, 1);
    vyre_ir_buffer(p, "in", VYRE_U32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_shared(p, "s", VYRE_U32, 64);
    PUSH(BODY, vyre_ir_let(p, "l", LID(0)));
    PUSH(BODY, vyre_ir_store(p, "s", NM("l"), LOAD("in", GID(0))));
    PUSH(BODY, vyre_ir_simple(p, VYRE_ST_BARRIER));
    struct vyre_stmt *loop = vyre_ir_for(p, "j", LU(0), LU(6), LU(1));
    PUSH(&loop->then_, vyre_ir_let(p, "stride", BIN(SHR, LU(32), NM("j"))));
    struct vyre_stmt *iff = vyre_ir_if(p, BIN(LT, NM("l"), NM("stride")));
    PUSH(&iff->then_,
         vyre_ir_store(p, "s", NM("l"),
                       BIN(ADD, LOAD("s", NM("l")), LOAD("s", BIN(ADD, NM("l"), NM("stride"))))));
    PUSH(&loop->then_, iff);
    PUSH(&loop->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    PUSH(BODY, loop);
    struct vyre_stmt *first = vyre_ir_if(p, BIN(EQ, NM("l"), LU(0)));
    PUSH(&first->then_, vyre_ir_store(p, "out", WGID(0), LOAD("s", LU(0))));
    PUSH(BODY, first);
    uint32_t in[256], out[4] = {0}, want[4] = {0};
    for (uint32_t i = 0; i < 256; i++) {
        in[i] = i * i + 3;
        want[i / 64] += in[i];
    }
    struct vyre_buffer_arg b[2] = {{in, 256}, {out, 4}};
    CHECK_EQ_U64(run(p, b, 2, NULL, 0, 4, 1, 1), VYRE_OK);
    for (int g = 0; g < 4; g++) CHECK_EQ_U64(out[g], want[g]);
    vyre_program_free(p);
}

/* Hillis-Steele inclusive scan: read, barrier, write, barrier. */
static void test_prefix_sum(void) {
    vyre_program *p = vyre_program_new("scan", 64, 1, 1);
    vyre_ir_buffer(p, "data", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_shared(p, "a", VYRE_U32, 64);
    PUSH(BODY, vyre_ir_let(p, "l", LID(0)));
    PUSH(BODY, vyre_ir_store(p, "a", NM("l"), LOAD("data", NM("l"))));
    PUSH(BODY, vyre_ir_simple(p, VYRE_ST_BARRIER));
    struct vyre_stmt *loop = vyre_ir_for(p, "d", LU(0), LU(6), LU(1));
    PUSH(&loop->then_, vyre_ir_let(p, "off", BIN(SHL, LU(1), NM("d"))));
    PUSH(&loop->then_, vyre_ir_let(p, "addend",
                                   vyre_ir_select(p, BIN(GE, NM("l"), NM("off")),
                                                  LOAD("a", BIN(SUB, NM("l"), NM("off"))), LU(0))));
    PUSH(&loop->then_, vyre_ir_let(p, "mine", LOAD("a", NM("l"))));
    PUSH(&loop->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    PUSH(&loop->then_, vyre_ir_store(p, "a", NM("l"), BIN(ADD, NM("mine"), NM("addend"))));
    PUSH(&loop->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    PUSH(BODY, loop);
    PUSH(BODY, vyre_ir_store(p, "data", NM("l"), LOAD("a", NM("l"))));
    uint32_t data[64], want[64], acc = 0;
    for (uint32_t i = 0; i < 64; i++) {
        data[i] = (i * 7 + 1) % 13;
        acc += data[i];
        want[i] = acc;
    }
    struct vyre_buffer_arg b[1] = {{data, 64}};
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 1, 1, 1), VYRE_OK);
    for (int i = 0; i < 64; i++) CHECK_EQ_U64(data[i], want[i]);
    vyre_program_free(p);
}

static void test_shared_zeroed_per_workgroup(void) {
    vyre_program *p = vyre_program_new("zero", 4, 1, 1);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_shared(p, "s", VYRE_U32, 2);
    vyre_ir_shared(p, "w", VYRE_U64, 1);
    PUSH(BODY, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_ADD, "s", LU(0), NULL, LU(1)));
    PUSH(BODY, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_ADD, "w", LU(0), NULL,
                              vyre_ir_lit(p, VYRE_U64, UINT64_C(1) << 33)));
    PUSH(BODY, vyre_ir_store(p, "s", LU(2), LU(9))); /* out of bounds: dropped */
    PUSH(BODY, vyre_ir_simple(p, VYRE_ST_BARRIER));
    struct vyre_stmt *first = vyre_ir_if(p, BIN(EQ, LID(0), LU(0)));
    PUSH(
        &first->then_,
        vyre_ir_store(p, "out", WGID(0),
                      BIN(ADD, BIN(ADD, LOAD("s", LU(0)), LOAD("s", LU(1))),
                          vyre_ir_cast(p, VYRE_U32,
                                       BIN(SHR, LOAD("w", LU(0)), vyre_ir_lit(p, VYRE_U64, 20))))));
    PUSH(BODY, first);
    uint32_t out[3] = {0};
    struct vyre_buffer_arg b[1] = {{out, 3}};
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 3, 1, 1), VYRE_OK);
    for (int g = 0; g < 3; g++) CHECK_EQ_U64(out[g], 4 + 4 * (1u << 13));
    vyre_program_free(p);
}

/* A valid program's barrier is uniform, so the run-time check can only be reached by
 * changing the tree after validation: build a program with conditions on (wgid x),
 * validate it, then turn those builtins into (lid x) behind the validator's back. */
static void make_divergent(struct vyre_expr *e) { e->u.builtin.which = VYRE_LID; }

static void test_divergent_barrier_return(void) {
    vyre_program *p = vyre_program_new("diverge", 64, 1, 1);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    struct vyre_expr *w = WGID(0);
    struct vyre_stmt *iff = vyre_ir_if(p, BIN(LT, w, LU(3)));
    PUSH(&iff->then_, vyre_ir_simple(p, VYRE_ST_RETURN));
    PUSH(BODY, iff);
    PUSH(BODY, vyre_ir_simple(p, VYRE_ST_BARRIER));
    PUSH(BODY, vyre_ir_store(p, "out", GID(0), LU(1)));
    uint32_t out[64] = {0};
    struct vyre_buffer_arg b[1] = {{out, 64}};
    CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_OK);
    make_divergent(w);
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 1, 1, 1), VYRE_ERR_RUNTIME);
    CHECK_STR_CONTAINS(err.message, "barrier at body[1]");
    CHECK_STR_CONTAINS(err.message, "reached by 61 of 64 invocations of workgroup (0,0,0)");
    CHECK_STR_CONTAINS(err.message, "other 3 returned");
    CHECK_STR_CONTAINS(err.message, "Fix:");
    CHECK_EQ_U64(out[10], 0); /* nobody got past the barrier */
    vyre_program_free(p);
}

static void test_divergent_barrier_mismatch(void) {
    vyre_program *p = vyre_program_new("mismatch", 16, 1, 1);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    struct vyre_expr *w = WGID(0);
    struct vyre_stmt *iff = vyre_ir_if(p, BIN(LT, w, LU(4)));
    PUSH(&iff->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    PUSH(&iff->else_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    PUSH(BODY, iff);
    uint32_t out[16] = {0};
    struct vyre_buffer_arg b[1] = {{out, 16}};
    /* as validated: every lane takes the same arm, fine */
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 2, 1, 1), VYRE_OK);
    make_divergent(w);
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 2, 1, 1), VYRE_ERR_RUNTIME);
    CHECK_STR_CONTAINS(err.message, "different barriers");
    CHECK_STR_CONTAINS(err.message, "4 of 16 at body[0].then[0]");
    CHECK_STR_CONTAINS(err.message, "body[0].else[0]");
    vyre_program_free(p);
}

/* ---- control flow ------------------------------------------------------------------------ */

/* One invocation; each loop counts iterations into out[slot] and sums the loop var
 * into out[slot + 1]. */
static void push_counting_loop(vyre_program *p, const char *var, struct vyre_expr *from,
                               struct vyre_expr *to, struct vyre_expr *step, uint32_t slot) {
    struct vyre_stmt *loop = vyre_ir_for(p, var, from, to, step);
    PUSH(&loop->then_, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_ADD, "out", LU(slot), NULL, LU(1)));
    struct vyre_expr *v = NM(var);
    if (from->type != VYRE_U32) v = vyre_ir_cast(p, VYRE_U32, v);
    PUSH(&loop->then_, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_ADD, "out", LU(slot + 1), NULL, v));
    PUSH(BODY, loop);
}

static void test_for_loops(void) {
    vyre_program *p = vyre_program_new("loops", 1, 1, 1);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(p, "n", VYRE_U32);
    push_counting_loop(p, "a", LU(3), LU(20), LU(4), 0);                    /* 3 7 11 15 19 */
    push_counting_loop(p, "b", LU(0), LU(10), LU(0), 2);                    /* step 0: none */
    push_counting_loop(p, "c", LI(0), LI(10), LI(-1), 4);                   /* step < 0: none */
    push_counting_loop(p, "d", LU(0xFFFFFFF0u), LU(0xFFFFFFFFu), LU(8), 6); /* wraps: 2 */
    push_counting_loop(p, "e", LI(INT32_MAX - 5), LI(INT32_MAX), LI(3), 8); /* 2 */
    push_counting_loop(p, "f", LI(-3), LI(2), NULL, 10);                    /* -3..1 step 1 */
    push_counting_loop(p, "g", LU(10), LU(5), LU(1), 12);                   /* from >= to: none */
    push_counting_loop(p, "h", LU(0), NM("n"), LU(1), 14);                  /* param bound */
    push_counting_loop(p, "k", vyre_ir_lit(p, VYRE_U64, UINT64_C(0xFFFFFFFFFFFFFFFE)),
                       vyre_ir_lit(p, VYRE_U64, UINT64_MAX), vyre_ir_lit(p, VYRE_U64, 5), 16);
    uint32_t out[18] = {0};
    struct vyre_buffer_arg b[1] = {{out, 18}};
    vyre_bits n = 6;
    CHECK_EQ_U64(run(p, b, 1, &n, 1, 1, 1, 1), VYRE_OK);
    CHECK_EQ_U64(out[0], 5);
    CHECK_EQ_U64(out[1], 3 + 7 + 11 + 15 + 19);
    CHECK_EQ_U64(out[2], 0);
    CHECK_EQ_U64(out[4], 0);
    CHECK_EQ_U64(out[6], 2);
    CHECK_EQ_U64(out[7], (uint32_t)(0xFFFFFFF0u + 0xFFFFFFF8u));
    CHECK_EQ_U64(out[8], 2);
    CHECK_EQ_U64(out[9], (uint32_t)(INT32_MAX - 5) + (uint32_t)(INT32_MAX - 2));
    CHECK_EQ_U64(out[10], 5);
    CHECK_EQ_U64(out[11], (uint32_t)(-3 - 2 - 1 + 0 + 1));
    CHECK_EQ_U64(out[12], 0);
    CHECK_EQ_U64(out[14], 6);
    CHECK_EQ_U64(out[15], 15);
    CHECK_EQ_U64(out[16], 1);
    CHECK_EQ_U64(out[17], 0xFFFFFFFEu);
    vyre_program_free(p);
}

static void test_break_nested(void) {
    vyre_program *p = vyre_program_new("brk", 1, 1, 1);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    PUSH(BODY, vyre_ir_let(p, "count", LU(0)));
    PUSH(BODY, vyre_ir_let(p, "inner", LU(0)));
    struct vyre_stmt *outer = vyre_ir_for(p, "i", LU(0), LU(100), LU(1));
    struct vyre_stmt *stop = vyre_ir_if(p, BIN(EQ, NM("i"), LU(7)));
    PUSH(&stop->then_, vyre_ir_simple(p, VYRE_ST_BREAK));
    PUSH(&outer->then_, stop);
    PUSH(&outer->then_, vyre_ir_set(p, "count", BIN(ADD, NM("count"), LU(1))));
    /* inner loop breaks at j == 3: only the inner loop ends */
    struct vyre_stmt *in = vyre_ir_for(p, "j", LU(0), LU(50), LU(1));
    struct vyre_stmt *stop2 = vyre_ir_if(p, BIN(GE, NM("j"), LU(3)));
    PUSH(&stop2->then_, vyre_ir_simple(p, VYRE_ST_BREAK));
    PUSH(&stop2->else_, vyre_ir_set(p, "inner", BIN(ADD, NM("inner"), LU(1))));
    PUSH(&in->then_, stop2);
    PUSH(&outer->then_, in);
    PUSH(BODY, outer);
    PUSH(BODY, vyre_ir_store(p, "out", LU(0), NM("count")));
    PUSH(BODY, vyre_ir_store(p, "out", LU(1), NM("inner")));
    uint32_t out[2] = {0};
    struct vyre_buffer_arg b[1] = {{out, 2}};
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 1, 1, 1), VYRE_OK);
    CHECK_EQ_U64(out[0], 7);
    CHECK_EQ_U64(out[1], 21);
    vyre_program_free(p);
}

static void test_return(void) {
    vyre_program *p = vyre_program_new("ret", 8, 1, 1);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    PUSH(BODY, vyre_ir_let(p, "i", GID(0)));
    struct vyre_stmt *early = vyre_ir_if(p, BIN(LT, NM("i"), LU(3)));
    PUSH(&early->then_, vyre_ir_simple(p, VYRE_ST_RETURN));
    PUSH(BODY, early);
    /* return from inside a loop: lanes stop after i iterations */
    struct vyre_stmt *loop = vyre_ir_for(p, "k", LU(0), LU(1000), LU(1));
    struct vyre_stmt *stop = vyre_ir_if(p, BIN(EQ, NM("k"), NM("i")));
    PUSH(&stop->then_, vyre_ir_simple(p, VYRE_ST_RETURN));
    PUSH(&loop->then_, stop);
    PUSH(&loop->then_, vyre_ir_store(p, "out", NM("i"), BIN(ADD, LOAD("out", NM("i")), LU(1))));
    PUSH(BODY, loop);
    PUSH(BODY, vyre_ir_store(p, "out", NM("i"), LU(0xDEAD))); /* never reached */
    uint32_t out[16];
    for (int i = 0; i < 16; i++) out[i] = 100;
    struct vyre_buffer_arg b[1] = {{out, 16}};
    CHECK_EQ_U64(run(p, b, 1, NULL, 0, 2, 1, 1), VYRE_OK);
    for (uint32_t i = 0; i < 16; i++) CHECK_EQ_U64(out[i], i < 3 ? 100 : 100 + i);
    vyre_program_free(p);
}

/* ---- geometry ------------------------------------------------------------------------------- */

static void test_multi_dim(void) {
    vyre_program *p = vyre_program_new("dims", 4, 2, 2);
    vyre_ir_buffer(p, "out", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_buffer(p, "geo", VYRE_U32, VYRE_ACCESS_WRITE, 6);
    /* flat index from gid: x + y*8 + z*8*6 over a (2,3,2) grid of (4,2,2) groups */
    PUSH(BODY, vyre_ir_let(
                   p, "idx",
                   BIN(ADD, BIN(ADD, GID(0), BIN(MUL, GID(1), LU(8))), BIN(MUL, GID(2), LU(48)))));
    struct vyre_expr *packed = LID(0);
    packed = BIN(OR, packed, BIN(SHL, LID(1), LU(4)));
    packed = BIN(OR, packed, BIN(SHL, LID(2), LU(8)));
    packed = BIN(OR, packed, BIN(SHL, WGID(0), LU(12)));
    packed = BIN(OR, packed, BIN(SHL, WGID(1), LU(16)));
    packed = BIN(OR, packed, BIN(SHL, WGID(2), LU(20)));
    PUSH(BODY, vyre_ir_store(p, "out", NM("idx"), packed));
    for (unsigned a = 0; a < 3; a++) {
        PUSH(BODY, vyre_ir_store(p, "geo", LU(a), vyre_ir_builtin(p, VYRE_WGSIZE, a)));
        PUSH(BODY, vyre_ir_store(p, "geo", LU(3 + a), vyre_ir_builtin(p, VYRE_NGROUPS, a)));
    }
    uint32_t *out = calloc(192, sizeof *out), geo[6] = {0};
    CHECK(out != NULL);
    if (!out) return;
    struct vyre_buffer_arg b[2] = {{out, 192}, {geo, 6}};
    CHECK_EQ_U64(run(p, b, 2, NULL, 0, 2, 3, 2), VYRE_OK);
    uint32_t bad = 0;
    for (uint32_t z = 0; z < 4; z++)
        for (uint32_t y = 0; y < 6; y++)
            for (uint32_t x = 0; x < 8; x++) {
                uint32_t want = (x % 4) | (y % 2) << 4 | (z % 2) << 8 | (x / 4) << 12 |
                                (y / 2) << 16 | (z / 2) << 20;
                if (out[x + y * 8 + z * 48] != want) bad++;
            }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(geo[0], 4);
    CHECK_EQ_U64(geo[1], 2);
    CHECK_EQ_U64(geo[2], 2);
    CHECK_EQ_U64(geo[3], 2);
    CHECK_EQ_U64(geo[4], 3);
    CHECK_EQ_U64(geo[5], 2);
    free(out);
    vyre_program_free(p);
}

/* vyre_launch_grid with the options spelt out, as the cases below vary them. */
static enum vyre_status grid_of(vyre_program *p, const uint64_t *counts, size_t nb, uint64_t n,
                                const uint32_t *ex, uint32_t g[3]) {
    struct vyre_grid_options o = {counts, nb, n, ex};
    return vyre_launch_grid(p, &o, g, &err);
}

static void test_grid(void) {
    vyre_program *p = vyre_program_new("g", 256, 1, 1);
    uint32_t g[3];
    uint64_t counts[3] = {10, 1000, 257};
    CHECK_EQ_U64(grid_of(p, counts, 3, 0, NULL, g), VYRE_OK);
    CHECK_EQ_U64(g[0], 4);
    CHECK_EQ_U64(g[1], 1);
    CHECK_EQ_U64(g[2], 1);
    CHECK_EQ_U64(grid_of(p, counts, 3, 257, NULL, g), VYRE_OK);
    CHECK_EQ_U64(g[0], 2);
    CHECK_EQ_U64(grid_of(p, counts, 3, 256, NULL, g), VYRE_OK);
    CHECK_EQ_U64(g[0], 1);
    CHECK_EQ_U64(grid_of(p, NULL, 0, 0, NULL, g), VYRE_OK); /* at least 1 */
    CHECK_EQ_U64(g[0], 1);
    g[0] = 0;
    CHECK_EQ_U64(vyre_launch_grid(p, NULL, g, &err), VYRE_OK); /* NULL options: all 0 */
    CHECK_EQ_U64(g[0], 1);
    uint32_t ex[3] = {7, 8, 9};
    CHECK_EQ_U64(grid_of(p, counts, 3, 99999, ex, g), VYRE_OK);
    CHECK_EQ_U64(g[0], 7);
    CHECK_EQ_U64(g[1], 8);
    CHECK_EQ_U64(g[2], 9);
    uint32_t zero[3] = {4, 0, 1};
    CHECK_EQ_U64(grid_of(p, NULL, 0, 0, zero, g), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "axis y");
    CHECK_STR_CONTAINS(err.message, "Fix:");
    uint32_t big[3] = {1, 65536, 1};
    CHECK_EQ_U64(grid_of(p, NULL, 0, 0, big, g), VYRE_ERR_LIMIT);
    CHECK_STR_CONTAINS(err.message, "65535");
    uint32_t bigx[3] = {0x80000000u, 1, 1};
    CHECK_EQ_U64(grid_of(p, NULL, 0, 0, bigx, g), VYRE_ERR_LIMIT);
    CHECK_STR_CONTAINS(err.message, "2147483647");
    uint64_t huge = UINT64_C(1) << 40;
    CHECK_EQ_U64(grid_of(p, NULL, 0, huge, NULL, g), VYRE_ERR_LIMIT);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    uint32_t maxx[3] = {2147483647u, 65535, 65535};
    CHECK_EQ_U64(grid_of(p, NULL, 0, 0, maxx, g), VYRE_OK);
    struct vyre_grid_options lying = {.buffer_counts = NULL, .nbuffers = 2};
    CHECK_EQ_U64(vyre_launch_grid(p, &lying, g, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    p->workgroup[0] = 0; /* only reachable by poking the struct */
    CHECK_EQ_U64(grid_of(p, counts, 3, 0, NULL, g), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "workgroup size 0");
    vyre_program_free(p);
}

/* ---- argument errors ------------------------------------------------------------------------ */

static void test_run_errors(void) {
    vyre_program *p = saxpy_program();
    float x[4] = {0}, y[4] = {0};
    struct vyre_buffer_arg b[2] = {{x, 4}, {y, 4}};
    vyre_bits a = 0;
    CHECK_EQ_U64(run(p, b, 1, &a, 1, 1, 1, 1), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "declares 2 buffer(s) but 1");
    CHECK_EQ_U64(run(p, b, 2, NULL, 0, 1, 1, 1), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "param");
    CHECK_EQ_U64(run(p, b, 2, &a, 1, 0, 1, 1), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    CHECK_EQ_U64(run(p, b, 2, &a, 1, 1, 70000, 1), VYRE_ERR_LIMIT);
    struct vyre_buffer_arg nodata[2] = {{NULL, 4}, {y, 4}};
    CHECK_EQ_U64(run(p, nodata, 2, &a, 1, 1, 1, 1), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "'x'");
    struct vyre_buffer_arg empty[2] = {{NULL, 0}, {NULL, 0}};
    CHECK_EQ_U64(run(p, empty, 2, &a, 1, 1, 1, 1), VYRE_OK); /* nothing in bounds */
    vyre_program_free(p);

    /* declared counts must match the binding */
    p = vyre_program_new("counted", 1, 1, 1);
    vyre_ir_buffer(p, "c", VYRE_U32, VYRE_ACCESS_READ_WRITE, 4);
    PUSH(BODY, vyre_ir_store(p, "c", LU(0), LEN("c")));
    uint32_t c[4] = {0};
    struct vyre_buffer_arg cb[1] = {{c, 3}};
    CHECK_EQ_U64(run(p, cb, 1, NULL, 0, 1, 1, 1), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "declared with 4");
    cb[0].count = 4;
    CHECK_EQ_U64(run(p, cb, 1, NULL, 0, 1, 1, 1), VYRE_OK);
    CHECK_EQ_U64(c[0], 4);
    vyre_program_free(p);

    /* an invalid program is reported, not run */
    p = vyre_program_new("bad", 1, 1, 1);
    vyre_ir_buffer(p, "o", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    PUSH(BODY, vyre_ir_store(p, "o", LU(0), NM("nope")));
    uint32_t o = 5;
    struct vyre_buffer_arg ob[1] = {{&o, 1}};
    CHECK_EQ_U64(run(p, ob, 1, NULL, 0, 1, 1, 1), VYRE_ERR_INVALID);
    CHECK_EQ_U64(o, 5);
    vyre_program_free(p);
    CHECK_EQ_U64(vyre_ref_run(NULL, NULL, NULL, &err), VYRE_ERR_ARG);
}

/* ---- constant folding --------------------------------------------------------------------- */

static void test_fold(void) {
    vyre_program *p = vyre_program_new("fold", 1, 1, 1);
    vyre_ir_buffer(p, "o", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_buffer(p, "f", VYRE_F32, VYRE_ACCESS_WRITE, 0);
    struct vyre_expr *sum = BIN(ADD, BIN(MUL, LU(6), LU(7)), BIN(DIV, LU(10), LU(0)));
    PUSH(BODY, vyre_ir_store(p, "o", LU(0), sum));
    struct vyre_expr *mixed = BIN(ADD, GID(0), BIN(SHL, LU(1), LU(33)));
    PUSH(BODY, vyre_ir_store(p, "o", LU(1), mixed));
    struct vyre_expr *sel = vyre_ir_select(p, BIN(LT, LI(-1), LI(0)), GID(0), LU(77));
    PUSH(BODY, vyre_ir_store(p, "o", LU(2), BIN(ADD, sel, LU(5))));
    struct vyre_expr *conv = vyre_ir_cast(p, VYRE_U32, vyre_ir_lit(p, VYRE_F32, f_bits(-2.5f)));
    PUSH(BODY, vyre_ir_store(p, "o", LU(3), conv));
    struct vyre_expr *ex = UN(EXP, vyre_ir_lit(p, VYRE_F32, f_bits(1.0f)));
    PUSH(BODY, vyre_ir_store(p, "f", LU(0), ex));
    struct vyre_expr *fm =
        vyre_ir_fma(p, vyre_ir_lit(p, VYRE_F32, f_bits(2.0f)),
                    vyre_ir_lit(p, VYRE_F32, f_bits(3.0f)), vyre_ir_lit(p, VYRE_F32, f_bits(0.5f)));
    PUSH(BODY, vyre_ir_store(p, "f", LU(1), fm));
    CHECK_EQ_U64(vyre_opt_fold(p, &err), VYRE_OK);
    CHECK_EQ_U64(sum->kind, VYRE_EX_LIT);
    CHECK_EQ_U64(sum->u.lit.bits, (uint32_t)(42u + 0xFFFFFFFFu));
    CHECK_EQ_U64(mixed->kind, VYRE_EX_BINARY);
    CHECK_EQ_U64(mixed->u.op.a[1]->kind, VYRE_EX_LIT);
    CHECK_EQ_U64(mixed->u.op.a[1]->u.lit.bits, 2);
    CHECK_EQ_U64(sel->kind, VYRE_EX_BUILTIN); /* select(true, gid, 77) -> gid */
    CHECK_EQ_U64(conv->kind, VYRE_EX_LIT);
    CHECK_EQ_U64(conv->u.lit.bits, 0);     /* saturates */
    CHECK_EQ_U64(ex->kind, VYRE_EX_UNARY); /* approximate: left for the backend */
    CHECK_EQ_U64(fm->kind, VYRE_EX_LIT);
    CHECK_EQ_U64(fm->u.lit.bits, f_bits(6.5f));
    CHECK(p->validated);
    uint32_t o[4] = {0};
    float f[2] = {0};
    struct vyre_buffer_arg b[2] = {{o, 4}, {f, 2}};
    CHECK_EQ_U64(run(p, b, 2, NULL, 0, 1, 1, 1), VYRE_OK);
    CHECK_EQ_U64(o[0], 41);
    CHECK_EQ_U64(o[1], 2);
    CHECK_EQ_U64(o[2], 5);
    CHECK_EQ_U64(o[3], 0);
    CHECK(f[0] > 2.718f && f[0] < 2.719f);
    CHECK_EQ_U64(f_bits(f[1]), f_bits(6.5f));
    (void)bits_f;
    vyre_program_free(p);

    p = vyre_program_new("foldbad", 1, 1, 1);
    PUSH(BODY, vyre_ir_let(p, "x", BIN(ADD, LU(1), LI(2)))); /* type mismatch */
    CHECK_EQ_U64(vyre_opt_fold(p, &err), VYRE_ERR_INVALID);
    vyre_program_free(p);
}

/* ---- debug mode: out-of-bounds counts (vyre_ref_run_options.oob) ------------------------------------ */

static void test_oob_counts(void) {
    static const char text[] = "(program shift (workgroup 4) (buffer a u32 read)\n"
                               "  (buffer o u32 write) (param k u32) (let i (gid x))\n"
                               "  (store o (add i 2u32) (load a (add i k))))";
    vyre_program *p = NULL;
    CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &p, &err), VYRE_OK);
    uint32_t a[4] = {1, 2, 3, 4}, o[4] = {0}, o2[4] = {0};
    struct vyre_buffer_arg bufs[2] = {{a, 4}, {o, 4}};
    vyre_bits k = 1;
    struct vyre_run_args args = {bufs, 2, &k, 1, {1, 1, 1}};
    struct vyre_oob_count oob[3] = {{9, 9}, {0, 0}, {0, 0}}; /* counts are added */
    CHECK_EQ_U64(vyre_program_decl_count(p), 3);
    CHECK_EQ_U64(vyre_ref_run(p, &args, &(struct vyre_ref_run_options){.oob = oob}, &err), VYRE_OK);
    CHECK(oob[0].loads == 10 && oob[0].stores == 9); /* a[4] */
    CHECK(oob[1].loads == 0 && oob[1].stores == 2);  /* o[4], o[5] */
    CHECK(oob[2].loads == 0 && oob[2].stores == 0);  /* the param */
    /* The same results without counting. */
    bufs[1].data = o2;
    CHECK_EQ_U64(vyre_ref_run(p, &args, NULL, &err), VYRE_OK);
    CHECK(memcmp(o, o2, sizeof o) == 0 && o[2] == 2 && o[3] == 3 && o[0] == 0);
    vyre_program_free(p);
}

/* ---- run options: the step budget and the run's own interrupt flag ----------------------- */

static void test_run_options(void) {
    static const char text[] = "(program spin (workgroup 1) (buffer o u32 read_write)\n"
                               "  (for i 0u32 1000u32 (store o 0u32 (add (load o 0u32) 1u32))))";
    vyre_program *p = NULL;
    CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &p, &err), VYRE_OK);
    uint32_t o = 0;
    struct vyre_buffer_arg bufs[1] = {{&o, 1}};
    struct vyre_run_args args = {bufs, 1, NULL, 0, {1, 1, 1}};
    /* max_steps stops the run, naming the option that raises it */
    struct vyre_ref_run_options few = {.max_steps = 10};
    CHECK_EQ_U64(vyre_ref_run(p, &args, &few, &err), VYRE_ERR_RUNTIME);
    CHECK(strstr(err.message, "vyre_ref_run_options.max_steps") != NULL);
    CHECK(o < 1000);
    /* a raised flag stops this run (and says so); a lowered one changes nothing */
    volatile int flag = 1;
    struct vyre_ref_run_options stop = {.interrupt = &flag};
    o = 0;
    CHECK_EQ_U64(vyre_ref_run(p, &args, &stop, &err), VYRE_ERR_RUNTIME);
    CHECK(strstr(err.message, "interrupted") != NULL);
    CHECK(strstr(err.message, "vyre_ref_run_options.interrupt") != NULL);
    flag = 0;
    o = 0;
    uint64_t rounds = 7;
    stop.rounds = &rounds;
    CHECK_EQ_U64(vyre_ref_run(p, &args, &stop, &err), VYRE_OK);
    CHECK_EQ_U64(o, 1000);
    CHECK_EQ_U64(rounds, 0); /* no converge loop: 0, not left as it was */
    vyre_program_free(p);
}

/* ---- through the text format ------------------------------------------------------------------ */

static void test_parsed_programs(void) {
    static const char saxpy_text[] =
        "(program saxpy (workgroup 256)\n"
        "  (buffer x f32 read)\n"
        "  (buffer y f32 read_write)\n"
        "  (param a f32)\n"
        "  (let i (gid x))\n"
        "  (if (lt i (len y))\n"
        "    (then (store y i (add (mul a (load x i)) (load y i))))))\n";
    vyre_program *parsed = NULL, *built = saxpy_program();
    CHECK_EQ_U64(vyre_text_parse(saxpy_text, strlen(saxpy_text), &parsed, &err), VYRE_OK);
    if (!parsed) {
        vyre_program_free(built);
        return;
    }
    float x[300], y1[300], y2[300];
    for (int i = 0; i < 300; i++) {
        x[i] = (float)i / 7.0f;
        y1[i] = y2[i] = (float)(i % 11) - 5.0f;
    }
    struct vyre_buffer_arg b1[2] = {{x, 300}, {y1, 300}}, b2[2] = {{x, 300}, {y2, 300}};
    vyre_bits a = f_bits(-1.25f);
    CHECK_EQ_U64(run(parsed, b1, 2, &a, 1, 2, 1, 1), VYRE_OK);
    CHECK_EQ_U64(run(built, b2, 2, &a, 1, 2, 1, 1), VYRE_OK);
    CHECK(memcmp(y1, y2, sizeof y1) == 0);
    CHECK_EQ_U64(f_bits(y1[299]), f_bits(-1.25f * (299.0f / 7.0f) + -3.0f));
    vyre_program_free(parsed);
    vyre_program_free(built);

    /* folding shows in the canonical text */
    static const char fold_text[] = "(program f (workgroup 1)\n"
                                    "  (buffer o u32 write)\n"
                                    "  (store o 0u32 (add (mul 6u32 7u32) (shl 1u32 33u32)))\n"
                                    "  (store o 1u32 (cast i32 (sqrt 16.0f32))))\n";
    vyre_program *p = NULL;
    CHECK_EQ_U64(vyre_text_parse(fold_text, strlen(fold_text), &p, &err), VYRE_OK);
    if (!p) return;
    CHECK_EQ_U64(vyre_opt_fold(p, &err), VYRE_ERR_INVALID); /* cast to i32 stored in u32 */
    vyre_program_free(p);
    static const char fold_ok[] = "(program f (workgroup 1)\n"
                                  "  (buffer o u32 write)\n"
                                  "  (store o 0u32 (add (mul 6u32 7u32) (shl 1u32 33u32)))\n"
                                  "  (store o 1u32 (cast u32 (sqrt 16.0f32))))\n";
    CHECK_EQ_U64(vyre_text_parse(fold_ok, strlen(fold_ok), &p, &err), VYRE_OK);
    if (!p) return;
    CHECK_EQ_U64(vyre_opt_fold(p, &err), VYRE_OK);
    char *text = NULL;
    size_t len = 0;
    CHECK_EQ_U64(vyre_text_print(p, &text, &len), VYRE_OK);
    CHECK_STR_CONTAINS(text, "(store o 0u32 44u32)");
    CHECK_STR_CONTAINS(text, "(store o 1u32 4u32)");
    vyre_free(text);
    vyre_program_free(p);
}

/* Worklists: len is the current count, a load past it reads 0, pushes append to the
 * next array in invocation order, and a push past the capacity is counted, not stored. */
static void test_worklist(void) {
    static const char text[] =
        "(program wl (workgroup 4) (buffer o u32 write) (worklist f u32)"
        " (let i (gid x)) (store o i (add (load f i) (len f)))"
        " (if (lt i (len f)) (then (push f (mul (load f i) 10u32)) (push f i))))";
    vyre_program *p = NULL;
    CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &p, &err), VYRE_OK);
    uint32_t out[8] = {0}, cur[5] = {7, 8, 9, 0, 0}, next[5] = {0};
    struct vyre_buffer_arg b = {out, 8};
    struct vyre_worklist_arg w = {cur, next, 3, 0, 5, 0};
    struct vyre_run_args args = {&b, 1, NULL, 0, {2, 1, 1}};
    struct vyre_worklist_arg *wp = &w;
    struct vyre_ref_run_options o = {.worklists = &wp, .nworklists = 1};
    CHECK_EQ_U64(vyre_ref_run(p, &args, &o, &err), VYRE_OK);
    uint32_t want_out[8] = {10, 11, 12, 3, 3, 3, 3, 3};
    CHECK(memcmp(out, want_out, sizeof out) == 0);
    uint32_t want_next[5] = {70, 0, 80, 1, 90};
    CHECK(memcmp(next, want_next, sizeof next) == 0);
    CHECK_EQ_U64(w.next_count, 6);
    CHECK_EQ_U64(w.overflow_needed, 6); /* the sixth item did not fit: 6 needed */
    /* a missing worklist binding is an argument error with a Fix */
    CHECK_EQ_U64(vyre_ref_run(p, &args, NULL, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "worklist");
    CHECK_STR_CONTAINS(err.message, "Fix:");
    vyre_program_free(p);
}

int main(void) {
    RUN_TEST(test_worklist);
    RUN_TEST(test_saxpy);
    RUN_TEST(test_out_of_bounds);
    RUN_TEST(test_bool_and_wide_types);
    RUN_TEST(test_atomic_counter);
    RUN_TEST(test_cas_loop);
    RUN_TEST(test_tree_reduction);
    RUN_TEST(test_prefix_sum);
    RUN_TEST(test_shared_zeroed_per_workgroup);
    RUN_TEST(test_divergent_barrier_return);
    RUN_TEST(test_divergent_barrier_mismatch);
    RUN_TEST(test_for_loops);
    RUN_TEST(test_break_nested);
    RUN_TEST(test_return);
    RUN_TEST(test_multi_dim);
    RUN_TEST(test_grid);
    RUN_TEST(test_run_errors);
    RUN_TEST(test_fold);
    RUN_TEST(test_parsed_programs);
    RUN_TEST(test_oob_counts);
    RUN_TEST(test_run_options);
    return harness_finish();
}
