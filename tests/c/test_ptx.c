/* test_ptx.c — the PTX emitter and the bounds-check pass: programs built with the
 * ir.h builder cover every type, op, statement, cast, atomic and builtin; each is
 * emitted for every target of the table (sm_70 ... sm_121) and assembled by ptxas
 * (batched into one module per target; harness_ptxas_arch says for which -arch). Also checks the kernel ABI order, determinism, that a guarded
 * saxpy carries no per-access check, which accesses the pass proves, and that an
 * unknown target fails with VYRE_ERR_UNSUPPORTED. ptxas missing is a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bounds.h"
#include "harness.h"
#include "ir.h"

/* ---- building helpers (act on the program under construction) ------------------ */

static vyre_program *P;

static struct vyre_expr *lit(enum vyre_type t, vyre_bits b) { return vyre_ir_lit(P, t, b); }
static struct vyre_expr *u32(uint32_t v) { return lit(VYRE_U32, v); }
static struct vyre_expr *nm(const char *n) { return vyre_ir_name(P, n); }
static struct vyre_expr *bin(enum vyre_op op, struct vyre_expr *a, struct vyre_expr *b) {
    return vyre_ir_binary(P, op, a, b);
}
static struct vyre_expr *un(enum vyre_op op, struct vyre_expr *a) {
    return vyre_ir_unary(P, op, a);
}
static struct vyre_expr *ld(const char *buf, struct vyre_expr *i) {
    return vyre_ir_load(P, buf, i);
}
static struct vyre_expr *len(const char *buf) { return vyre_ir_len(P, buf); }
static struct vyre_expr *gid(void) { return vyre_ir_builtin(P, VYRE_GID, 0); }

static struct vyre_stmt *put(struct vyre_block *b, struct vyre_stmt *s) {
    CHECK(s != NULL);
    CHECK(vyre_ir_push(P, b, s));
    return s;
}
static void let(struct vyre_block *b, const char *n, struct vyre_expr *v) {
    put(b, vyre_ir_let(P, n, v));
}
static void store(struct vyre_block *b, const char *buf, struct vyre_expr *i, struct vyre_expr *v) {
    put(b, vyre_ir_store(P, buf, i, v));
}

static const enum vyre_type numeric[] = {VYRE_I32, VYRE_U32, VYRE_I64,
                                         VYRE_U64, VYRE_F32, VYRE_F64};
static const enum vyre_type all_types[] = {VYRE_BOOL, VYRE_I32, VYRE_U32, VYRE_I64,
                                           VYRE_U64,  VYRE_F32, VYRE_F64};

/* ---- ptxas ------------------------------------------------------------------------ */

/* ---- emission helpers ---------------------------------------------------------- */

static char *emit(vyre_program *p, unsigned sm) {
    struct vyre_ptx_options o = {.sm = sm};
    struct vyre_error err;
    vyre_error_clear(&err);
    char *ptx = NULL;
    size_t n = 0;
    enum vyre_status st = vyre_ptx_emit(p, &o, &ptx, &n, &err);
    if (st != VYRE_OK)
        fprintf(stderr, "emit(%s, sm_%u): %s\n", vyre_program_name(p), sm, err.message);
    CHECK_EQ_U64(st, VYRE_OK);
    if (ptx) CHECK_EQ_U64(strlen(ptx), n);
    return ptx;
}

/* Ends the text before the second entry: the vector entry of an elementwise program
 * (test_vec checks it); these tests count instructions of the program's own entry. */
static void own_entry_only(char *ptx) {
    char *first = ptx ? strstr(ptx, ".visible .entry") : NULL;
    char *second = first ? strstr(first + 1, ".visible .entry") : NULL;
    if (second) *second = '\0';
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *q = hay; (q = strstr(q, needle)) != NULL; q += strlen(needle)) n++;
    return n;
}

/* ---- programs -------------------------------------------------------------------- */

static vyre_program *make_saxpy(const char *name) {
    P = vyre_program_new(name, 256, 1, 1);
    vyre_ir_buffer(P, "x", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(P, "y", VYRE_F32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(P, "a", VYRE_F32);
    let(&P->body, "i", gid());
    struct vyre_stmt *s = put(&P->body, vyre_ir_if(P, bin(VYRE_OP_LT, nm("i"), len("y"))));
    store(&s->then_, "y", nm("i"),
          bin(VYRE_OP_ADD, bin(VYRE_OP_MUL, nm("a"), ld("x", nm("i"))), ld("y", nm("i"))));
    return P;
}

static bool is_approx(enum vyre_op op) {
    return op == VYRE_OP_EXP || op == VYRE_OP_EXP2 || op == VYRE_OP_LOG || op == VYRE_OP_LOG2 ||
           op == VYRE_OP_SIN || op == VYRE_OP_COS || op == VYRE_OP_TANH || op == VYRE_OP_RSQRT;
}

/* Every binary and unary op valid on numeric type t. */
static vyre_program *make_arith(enum vyre_type t) {
    char name[32];
    snprintf(name, sizeof name, "arith_%s", vyre_type_name(t));
    P = vyre_program_new(name, 64, 1, 1);
    vyre_ir_buffer(P, "src", t, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(P, "dst", t, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_buffer(P, "flags", VYRE_BOOL, VYRE_ACCESS_WRITE, 0);
    struct vyre_block *b = &P->body;
    let(b, "x", ld("src", gid()));
    let(b, "y", ld("src", u32(1)));
    bool fl = vyre_type_is_float(t);
    uint32_t k = 0, kb = 0;
    for (int op = 0; op < VYRE_OP_FIRST_UNARY; op++) {
        if (op == VYRE_OP_LAND || op == VYRE_OP_LOR) continue;
        if (fl &&
            (op == VYRE_OP_REM || op == VYRE_OP_AND || op == VYRE_OP_OR || op == VYRE_OP_XOR ||
             op == VYRE_OP_SHL || op == VYRE_OP_SHR || op == VYRE_OP_MULHI))
            continue;
        struct vyre_expr *e = bin((enum vyre_op)op, nm("x"), nm("y"));
        if (vyre_op_is_compare((enum vyre_op)op)) store(b, "flags", u32(kb++), e);
        else store(b, "dst", u32(k++), e);
    }
    for (int op = VYRE_OP_FIRST_UNARY; op < VYRE_OP_COUNT; op++) {
        if (op == VYRE_OP_LNOT) continue;
        bool float_only = op == VYRE_OP_SQRT || op == VYRE_OP_FLOOR || op == VYRE_OP_CEIL ||
                          op == VYRE_OP_ROUND || op == VYRE_OP_TRUNC || is_approx((enum vyre_op)op);
        bool int_only = op == VYRE_OP_NOT || op == VYRE_OP_POPCOUNT || op == VYRE_OP_CLZ ||
                        op == VYRE_OP_CTZ || op == VYRE_OP_BREV;
        if ((fl && int_only) || (!fl && float_only)) continue;
        store(b, "dst", u32(k++), un((enum vyre_op)op, nm("x")));
    }
    store(b, "dst", u32(k++),
          vyre_ir_select(P, bin(VYRE_OP_LT, nm("x"), nm("y")), nm("x"), nm("y")));
    if (fl) store(b, "dst", u32(k++), vyre_ir_fma(P, nm("x"), nm("y"), nm("x")));
    return P;
}

/* Every cast between the 7 types and every bitcast pair. */
static vyre_program *make_casts(void) {
    P = vyre_program_new("casts", 32, 1, 1);
    char names[VYRE_TYPE_COUNT][16];
    for (int i = 0; i < VYRE_TYPE_COUNT; i++) {
        snprintf(names[i], sizeof names[i], "v_%s", vyre_type_name(all_types[i]));
        vyre_ir_buffer(P, names[i], all_types[i], VYRE_ACCESS_READ_WRITE, 0);
    }
    struct vyre_block *b = &P->body;
    for (int i = 0; i < VYRE_TYPE_COUNT; i++) {
        char x[16];
        snprintf(x, sizeof x, "x_%s", vyre_type_name(all_types[i]));
        let(b, x, ld(names[i], gid()));
        for (int j = 0; j < VYRE_TYPE_COUNT; j++)
            store(b, names[j], u32((uint32_t)i + 1), vyre_ir_cast(P, all_types[j], nm(x)));
        for (int j = 1; j < VYRE_TYPE_COUNT; j++)
            if (i > 0 && i != j && vyre_type_bits(all_types[i]) == vyre_type_bits(all_types[j]))
                store(b, names[j], u32(100u + (uint32_t)i),
                      vyre_ir_bitcast(P, all_types[j], nm(x)));
    }
    return P;
}

/* bool in registers and memory, params of every type, literals of every type. */
static vyre_program *make_bools(void) {
    P = vyre_program_new("bools", 32, 1, 1);
    vyre_ir_buffer(P, "bb", VYRE_BOOL, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_buffer(P, "ii", VYRE_I64, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(P, "flag", VYRE_BOOL);
    vyre_ir_param(P, "pf", VYRE_F64);
    vyre_ir_param(P, "pi", VYRE_I64);
    struct vyre_block *b = &P->body;
    let(b, "a", ld("bb", u32(0)));
    let(b, "c", ld("bb", u32(1)));
    store(b, "bb", u32(2), bin(VYRE_OP_LAND, nm("a"), nm("c")));
    store(b, "bb", u32(3), bin(VYRE_OP_LOR, nm("a"), nm("flag")));
    store(b, "bb", u32(4), bin(VYRE_OP_XOR, nm("a"), nm("c")));
    store(b, "bb", u32(5), bin(VYRE_OP_AND, nm("a"), nm("c")));
    store(b, "bb", u32(6), bin(VYRE_OP_OR, nm("a"), nm("c")));
    store(b, "bb", u32(7), bin(VYRE_OP_EQ, nm("a"), nm("c")));
    store(b, "bb", u32(8), bin(VYRE_OP_NE, nm("a"), lit(VYRE_BOOL, 1)));
    store(b, "bb", u32(9), un(VYRE_OP_LNOT, nm("a")));
    store(b, "bb", u32(10), vyre_ir_select(P, nm("flag"), nm("a"), lit(VYRE_BOOL, 0)));
    store(b, "bb", u32(11), bin(VYRE_OP_LT, nm("pf"), lit(VYRE_F64, 0x7ff0000000000000ull)));
    store(b, "ii", u32(0), vyre_ir_select(P, nm("a"), nm("pi"), lit(VYRE_I64, (vyre_bits)-9)));
    struct vyre_stmt *s = put(b, vyre_ir_if(P, nm("flag")));
    store(&s->then_, "ii", u32(1), lit(VYRE_I64, 7));
    store(&s->else_, "ii", u32(1), vyre_ir_cast(P, VYRE_I64, nm("pf")));
    return P;
}

/* if/else, for with positive/negative/param steps in all integer types, break,
 * return, set. */
static vyre_program *make_control(void) {
    P = vyre_program_new("control", 128, 1, 1);
    vyre_ir_buffer(P, "out", VYRE_I32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(P, "n", VYRE_I32);
    vyre_ir_param(P, "m", VYRE_U64);
    vyre_ir_param(P, "st", VYRE_U32);
    struct vyre_block *b = &P->body;
    let(b, "g", gid());
    struct vyre_stmt *r = put(b, vyre_ir_if(P, bin(VYRE_OP_GE, nm("g"), len("out"))));
    put(&r->then_, vyre_ir_simple(P, VYRE_ST_RETURN));
    let(b, "acc", lit(VYRE_I32, 0));
    struct vyre_stmt *f1 =
        put(b, vyre_ir_for(P, "i", lit(VYRE_I32, (uint32_t)-5), nm("n"), lit(VYRE_I32, 2)));
    put(&f1->then_, vyre_ir_set(P, "acc", bin(VYRE_OP_ADD, nm("acc"), nm("i"))));
    struct vyre_stmt *brk =
        put(&f1->then_, vyre_ir_if(P, bin(VYRE_OP_GT, nm("i"), lit(VYRE_I32, 10))));
    put(&brk->then_, vyre_ir_simple(P, VYRE_ST_BREAK));
    struct vyre_stmt *f2 = put(
        b, vyre_ir_for(P, "j", lit(VYRE_I64, 10), lit(VYRE_I64, 0), lit(VYRE_I64, (vyre_bits)-1)));
    put(&f2->then_, vyre_ir_set(P, "acc", bin(VYRE_OP_SUB, nm("acc"), lit(VYRE_I32, 1))));
    struct vyre_stmt *f3 = put(b, vyre_ir_for(P, "k", lit(VYRE_U64, 0), nm("m"), lit(VYRE_U64, 3)));
    struct vyre_stmt *f4 = put(&f3->then_, vyre_ir_for(P, "q", u32(0), len("out"), nm("st")));
    put(&f4->then_, vyre_ir_set(P, "acc", bin(VYRE_OP_ADD, nm("acc"), ld("out", nm("q")))));
    struct vyre_stmt *inner =
        put(&f4->then_, vyre_ir_if(P, bin(VYRE_OP_EQ, nm("acc"), lit(VYRE_I32, 99))));
    put(&inner->then_, vyre_ir_simple(P, VYRE_ST_BREAK));
    put(&f3->then_, vyre_ir_set(P, "acc", bin(VYRE_OP_XOR, nm("acc"), lit(VYRE_I32, 1))));
    struct vyre_stmt *ie = put(b, vyre_ir_if(P, bin(VYRE_OP_EQ, nm("acc"), lit(VYRE_I32, 5))));
    store(&ie->then_, "out", nm("g"), nm("acc"));
    store(&ie->else_, "out", nm("g"), un(VYRE_OP_NEG, nm("acc")));
    return P;
}

/* Shared arrays of every memory type, barriers, atomics (every op, global and
 * shared, bound and unbound results, cas), a 3-D workgroup and every builtin. */
static vyre_program *make_atomics(void) {
    P = vyre_program_new("atomics", 8, 4, 2);
    vyre_ir_buffer(P, "gu", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_buffer(P, "gi", VYRE_I32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_buffer(P, "g64", VYRE_U64, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_buffer(P, "gf", VYRE_F32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_shared(P, "tile", VYRE_U32, 64);
    vyre_ir_shared(P, "si", VYRE_I32, 16);
    vyre_ir_shared(P, "s64", VYRE_U64, 16);
    vyre_ir_shared(P, "sf", VYRE_F32, 16);
    vyre_ir_shared(P, "sd", VYRE_F64, 8);
    vyre_ir_shared(P, "sb", VYRE_BOOL, 8);
    struct vyre_block *b = &P->body;
    let(b, "l", vyre_ir_builtin(P, VYRE_LID, 0));
    store(b, "tile", nm("l"), gid());
    store(b, "sb", u32(3), lit(VYRE_BOOL, 1));
    store(b, "sd", u32(9), lit(VYRE_F64, 0x3ff8000000000000ull));
    put(b, vyre_ir_simple(P, VYRE_ST_BARRIER));
    let(b, "t", ld("tile", bin(VYRE_OP_SUB, u32(63), nm("l"))));
    let(b, "flagb", ld("sb", u32(3)));
    let(b, "dd", ld("sd", u32(7)));
    static const char *const bufs[][2] = {{"gu", "tile"}, {"gi", "si"}, {"g64", "s64"}};
    static const enum vyre_type types[] = {VYRE_U32, VYRE_I32, VYRE_U64};
    int nres = 0;
    for (int ti = 0; ti < 3; ti++) {
        for (int w = 0; w < 2; w++) {
            const char *buf = bufs[ti][w];
            for (int op = 0; op < VYRE_ATOMIC_COUNT; op++) {
                char res[16];
                snprintf(res, sizeof res, "o%d", nres++);
                bool bind = (op % 2) == 0;
                struct vyre_expr *idx = w ? u32((uint32_t)op) : nm("t");
                struct vyre_expr *v = lit(types[ti], (vyre_bits)(op + 3));
                struct vyre_expr *ex = op == VYRE_ATOMIC_CAS ? lit(types[ti], 1) : NULL;
                put(b,
                    vyre_ir_atomic(P, bind ? res : NULL, (enum vyre_atomic_op)op, buf, idx, ex, v));
                if (bind) store(b, bufs[ti][0], u32(200u + (uint32_t)op), nm(res));
            }
        }
    }
    put(b,
        vyre_ir_atomic(P, "of", VYRE_ATOMIC_ADD, "gf", nm("l"), NULL, lit(VYRE_F32, 0x3f800000)));
    put(b, vyre_ir_atomic(P, NULL, VYRE_ATOMIC_ADD, "sf", u32(2), NULL, nm("of")));
    put(b, vyre_ir_simple(P, VYRE_ST_BARRIER));
    static const enum vyre_builtin bl[] = {VYRE_GID, VYRE_LID, VYRE_WGID, VYRE_WGSIZE,
                                           VYRE_NGROUPS};
    uint32_t k = 300;
    for (int i = 0; i < 5; i++)
        for (unsigned ax = 0; ax < 3; ax++) store(b, "gu", u32(k++), vyre_ir_builtin(P, bl[i], ax));
    store(b, "gu", u32(k++), bin(VYRE_OP_ADD, nm("t"), vyre_ir_cast(P, VYRE_U32, nm("flagb"))));
    store(b, "gf", u32(0), vyre_ir_cast(P, VYRE_F32, nm("dd")));
    store(b, "gu", u32(k++), len("tile"));
    return P;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_saxpy(void) {
    vyre_program *p = make_saxpy("saxpy");
    char *ptx = emit(p, 90);
    CHECK(ptx != NULL);
    if (!ptx) return;
    CHECK_STR_CONTAINS(ptx, ".visible .entry saxpy_v4(");
    own_entry_only(ptx);
    CHECK_STR_CONTAINS(ptx, ".version 7.8\n.target sm_90\n.address_size 64\n");
    CHECK_STR_CONTAINS(ptx, ".visible .entry saxpy(\n\t.param .u64 b_x,\n\t.param .u64 b_y,\n"
                            "\t.param .u32 n_x,\n\t.param .u32 n_y,\n\t.param .f32 p_a\n)");
    CHECK_STR_CONTAINS(ptx, ".maxntid 256, 1, 1");
    /* One compare-branch guard. y[i] (load and store) is proven by it and carries no
     * check; x[i] keeps its predicated check because len(x) may be shorter than
     * len(y), and an out-of-bounds load must read 0. */
    CHECK_EQ_U64(count(ptx, "bra "), 1);
    CHECK_EQ_U64(count(ptx, "setp.lt.u32 %p0, %r6, %r1;\n\t@!%p0 bra L"), 1);
    CHECK_EQ_U64(count(ptx, "setp."), 2);
    /* x is `read`: its load takes the non-coherent path; y is read_write. */
    CHECK_EQ_U64(count(ptx, "@%p1 ld.global.nc.f32"), 1);
    CHECK_EQ_U64(count(ptx, "\tld.global.f32"), 1);
    CHECK_EQ_U64(count(ptx, "\tst.global.f32"), 1);
    CHECK_EQ_U64(count(ptx, "@%p1 st"), 0);
    /* exact float ops, no contraction, no ftz */
    CHECK_STR_CONTAINS(ptx, "mul.rn.f32");
    CHECK_STR_CONTAINS(ptx, "add.rn.f32");
    CHECK(strstr(ptx, "fma") == NULL);
    CHECK(strstr(ptx, ".ftz") == NULL);
    /* readable listing: a comment per statement, labels from node ids */
    CHECK_STR_CONTAINS(ptx, "// (let i (gid x))");
    CHECK_STR_CONTAINS(ptx, "// (if (lt i (len y))");
    CHECK_STR_CONTAINS(ptx, "_end:\n");
    CHECK(harness_ptxas_ok(ptx, 90, false));
    vyre_free(ptx);
    vyre_program_free(p);

    /* Guarded on both buffers: the guard's compares are the only ones left. */
    P = vyre_program_new("saxpy2", 256, 1, 1);
    vyre_ir_buffer(P, "x", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(P, "y", VYRE_F32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(P, "a", VYRE_F32);
    let(&P->body, "i", gid());
    struct vyre_stmt *s =
        put(&P->body, vyre_ir_if(P, bin(VYRE_OP_LAND, bin(VYRE_OP_LT, nm("i"), len("x")),
                                        bin(VYRE_OP_LT, nm("i"), len("y")))));
    store(&s->then_, "y", nm("i"),
          bin(VYRE_OP_ADD, bin(VYRE_OP_MUL, nm("a"), ld("x", nm("i"))), ld("y", nm("i"))));
    p = P;
    ptx = emit(p, 80);
    own_entry_only(ptx);
    if (ptx) {
        CHECK_EQ_U64(count(ptx, "bra "), 1);
        CHECK_EQ_U64(count(ptx, "setp."), 2);
        CHECK_EQ_U64(count(ptx, "and.pred"), 1);
        CHECK_EQ_U64(count(ptx, "@%p"), 0);
        CHECK_EQ_U64(count(ptx, "@!%p"), 1);
        CHECK_EQ_U64(count(ptx, "\tld.global.nc.f32"), 1);
        CHECK_EQ_U64(count(ptx, "\tld.global.f32"), 1);
        CHECK(harness_ptxas_ok(ptx, 80, false));
    }
    vyre_free(ptx);
    vyre_program_free(p);
}

static void test_unguarded_checks(void) {
    /* Without the guard, every access is predicated on its own bounds compare. */
    P = vyre_program_new("raw", 64, 1, 1);
    vyre_ir_buffer(P, "x", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(P, "y", VYRE_F32, VYRE_ACCESS_WRITE, 0);
    store(&P->body, "y", gid(), ld("x", gid()));
    vyre_program *p = P;
    char *ptx = emit(p, 80);
    own_entry_only(ptx);
    if (ptx) {
        CHECK_EQ_U64(count(ptx, "setp.lt.u32"), 2);
        CHECK_STR_CONTAINS(ptx, "mov.b32 %f0, 0f00000000;\n\t@%p0 ld.global.nc.f32 %f0");
        CHECK_STR_CONTAINS(ptx, "@%p1 st.global.f32");
        CHECK(harness_ptxas_ok(ptx, 80, false));
    }
    vyre_free(ptx);
    vyre_program_free(p);
}

static void test_bad_sm(void) {
    vyre_program *p = make_saxpy("saxpy");
    unsigned bad[] = {0, 61, 71, 95, 130};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct vyre_ptx_options o = {.sm = bad[i]};
        struct vyre_error err;
        vyre_error_clear(&err);
        char *ptx = (char *)"untouched";
        size_t n = 7;
        CHECK_EQ_U64(vyre_ptx_emit(p, &o, &ptx, &n, &err), VYRE_ERR_UNSUPPORTED);
        CHECK_EQ_U64(err.status, VYRE_ERR_UNSUPPORTED);
        CHECK(ptx == NULL);
        CHECK_EQ_U64(n, 0);
        char want[32];
        snprintf(want, sizeof want, "sm_%u", bad[i]);
        CHECK_STR_CONTAINS(err.message, want);
        CHECK_STR_CONTAINS(err.message,
                           "70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120 or 121");
        CHECK_STR_CONTAINS(err.message, "Fix:");
    }
    /* NULL options are a bad target too */
    struct vyre_error err;
    char *ptx = NULL;
    CHECK_EQ_U64(vyre_ptx_emit(p, NULL, &ptx, NULL, &err), VYRE_ERR_UNSUPPORTED);
    vyre_program_free(p);
}

static void test_invalid_program(void) {
    P = vyre_program_new("broken", 64, 1, 1);
    store(&P->body, "nowhere", u32(0), u32(1));
    vyre_program *p = P;
    struct vyre_ptx_options o = {.sm = 80};
    struct vyre_error err;
    char *ptx = NULL;
    CHECK_EQ_U64(vyre_ptx_emit(p, &o, &ptx, NULL, &err), VYRE_ERR_INVALID);
    CHECK(ptx == NULL);
    CHECK_STR_CONTAINS(err.message, "nowhere");
    vyre_program_free(p);
}

/* Every target of the table: its own header (test_ptx_targets checks the table against
 * the documented minimums), the same ABI, and ptxas accepts the kernel. */
static void test_targets_and_abi(void) {
    P = vyre_program_new("abi", 32, 2, 1);
    vyre_ir_buffer(P, "a", VYRE_U32, VYRE_ACCESS_READ, 0);
    vyre_ir_param(P, "s", VYRE_I32);
    vyre_ir_buffer(P, "b", VYRE_F64, VYRE_ACCESS_WRITE, 16);
    vyre_ir_shared(P, "tmp", VYRE_F32, 10);
    vyre_ir_param(P, "t", VYRE_BOOL);
    vyre_ir_buffer(P, "c", VYRE_U64, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(P, "u", VYRE_U64);
    put(&P->body, vyre_ir_simple(P, VYRE_ST_BARRIER));
    vyre_program *p = P;
    CHECK_EQ_U64(vyre_ptx_target_count(), 15);
    for (size_t i = 0; i < vyre_ptx_target_count(); i++) {
        const struct vyre_ptx_target *t = vyre_ptx_target_at(i);
        char *ptx = emit(p, t->sm);
        if (!ptx) continue;
        char want[64];
        snprintf(want, sizeof want, ".version %s\n.target sm_%u\n", t->isa, t->sm);
        CHECK_STR_CONTAINS(ptx, want);
        CHECK_STR_CONTAINS(ptx, "(\n\t.param .u64 b_a,\n\t.param .u64 b_b,\n\t.param .u64 b_c,\n"
                                "\t.param .u32 n_a,\n\t.param .u32 n_b,\n\t.param .u32 n_c,\n"
                                "\t.param .s32 p_s,\n\t.param .u32 p_t,\n\t.param .u64 p_u\n)");
        CHECK_STR_CONTAINS(ptx, ".maxntid 32, 2, 1\n{\n\t.shared .align 8 .b8 s_tmp[40];");
        CHECK_STR_CONTAINS(ptx, "st.shared.u32 [%r"); /* the zero fill */
        CHECK_EQ_U64(count(ptx, "bar.sync 0"), 2);    /* after the fill, and the program's */
        CHECK(harness_ptxas_ok(ptx, t->sm, false));
        vyre_free(ptx);
    }
    vyre_program_free(p);
}

static void test_determinism(void) {
    vyre_program *p1 = make_control(), *p2 = make_control();
    char *a = emit(p1, 80), *b = emit(p1, 80), *c = emit(p2, 80);
    CHECK(a && b && c);
    if (a && b && c) {
        CHECK(strcmp(a, b) == 0);
        CHECK(strcmp(a, c) == 0);
    }
    vyre_free(a);
    vyre_free(b);
    vyre_free(c);
    vyre_program_free(p1);
    vyre_program_free(p2);
}

/* PTX without its comment lines (they quote the statements as written). */
static void strip_comments(char *s) {
    char *w = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        const char *t = line;
        while (*t == ' ' || *t == '\t') t++;
        if (strncmp(t, "//", 2) != 0) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = '\0';
}

static vyre_program *parse_text(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error err;
    CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &p, &err), VYRE_OK);
    return p;
}

/* Emission folds constants (the optimiser runs before PTX) on a copy: the caller's
 * program keeps its text, and a literal expression emits what its value would. */
static void test_emit_folds_a_copy(void) {
    vyre_program *p = parse_text("(program k (workgroup 1) (buffer o u32 write 1)\n"
                                 "  (store o 0u32 (mul (add 2u32 4u32) 7u32)))\n");
    vyre_program *q = parse_text("(program k (workgroup 1) (buffer o u32 write 1)\n"
                                 "  (store o 0u32 42u32))\n");
    char *before = NULL, *after = NULL;
    size_t n = 0;
    CHECK_EQ_U64(vyre_text_print(p, &before, &n), VYRE_OK);
    char *a = emit(p, 90), *b = emit(q, 90);
    CHECK_EQ_U64(vyre_text_print(p, &after, &n), VYRE_OK);
    CHECK(before && after && strcmp(before, after) == 0);
    CHECK(a && b);
    if (a && b) {
        strip_comments(a);
        strip_comments(b);
        CHECK(strcmp(a, b) == 0);
    }
    vyre_free(before);
    vyre_free(after);
    vyre_free(a);
    vyre_free(b);
    vyre_program_free(p);
    vyre_program_free(q);
}

/* Text-level checks of the exact-semantics templates. */
static void test_templates(void) {
    vyre_program *p = make_arith(VYRE_I32);
    char *ptx = emit(p, 90);
    if (ptx) {
        CHECK_STR_CONTAINS(ptx, "setp.eq.b32"); /* div/rem guards */
        CHECK_STR_CONTAINS(ptx, "0x80000000");  /* MIN / -1 */
        CHECK_STR_CONTAINS(ptx, "and.b32 %r");  /* masked shift amount */
        CHECK_STR_CONTAINS(ptx, ", 31;");
        CHECK_STR_CONTAINS(ptx, "shr.s32");
        CHECK_STR_CONTAINS(ptx, "brev.b32");
        CHECK_STR_CONTAINS(ptx, "mul.hi.s32");
    }
    vyre_free(ptx);
    vyre_program_free(p);
    p = make_arith(VYRE_F32);
    ptx = emit(p, 70);
    if (ptx) {
        CHECK_STR_CONTAINS(ptx, "div.rn.f32");
        CHECK_STR_CONTAINS(ptx, "sqrt.rn.f32");
        CHECK_STR_CONTAINS(ptx, "cvt.rni.f32.f32");
        CHECK_STR_CONTAINS(ptx, "setp.neu.f32");
        CHECK_STR_CONTAINS(ptx, "fma.rn.f32");
        /* approximate ops are built from exactly rounded ops (docs/ULP.md) */
        CHECK(strstr(ptx, ".approx") == NULL);
        CHECK_STR_CONTAINS(ptx, "copysign.f32"); /* tanh restores the sign */
        CHECK(strstr(ptx, ".ftz") == NULL);
    }
    vyre_free(ptx);
    ptx = emit(p, 80);
    if (ptx) CHECK(strstr(ptx, ".approx") == NULL); /* the same on every target */
    vyre_free(ptx);
    vyre_program_free(p);
    p = make_casts();
    ptx = emit(p, 90);
    if (ptx) {
        CHECK_STR_CONTAINS(ptx, "cvt.rzi.sat.s32.f32");
        CHECK_STR_CONTAINS(ptx, "setp.nan.f32");
        CHECK_STR_CONTAINS(ptx, "cvt.rn.f32.s64");
        CHECK_STR_CONTAINS(ptx, "setp.neu.f64");
    }
    vyre_free(ptx);
    vyre_program_free(p);
}

/* Every program for every target through ptxas, one module per target: each target's
 * minimum ISA (the .version it is emitted with) must know every construct it gets. */
static void test_ptxas_all(void) {
    for (size_t s = 0; s < vyre_ptx_target_count(); s++) {
        unsigned sm = vyre_ptx_target_at(s)->sm;
        vyre_program *progs[16];
        size_t n = 0;
        progs[n++] = make_saxpy("saxpy");
        for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
            progs[n++] = make_arith(numeric[i]);
        progs[n++] = make_casts();
        progs[n++] = make_bools();
        progs[n++] = make_control();
        progs[n++] = make_atomics();
        struct harness_batch b = {0};
        for (size_t i = 0; i < n; i++) {
            char *ptx = emit(progs[i], sm);
            if (ptx) harness_batch_add(&b, ptx);
            vyre_free(ptx);
        }
        CHECK(b.text != NULL);
        if (b.text) {
            /* saxpy also has its vector entry */
            CHECK_EQ_U64(count(b.text, ".visible .entry"), n + 1);
            CHECK_EQ_U64(count(b.text, ".version"), 1);
            CHECK(harness_ptxas_ok(b.text, sm, false));
        }
        free(b.text);
        for (size_t i = 0; i < n; i++) vyre_program_free(progs[i]);
    }
}

/* ---- the bounds pass ---------------------------------------------------------------- */

/* Indexes whose value range the workgroup size and literals bound: a 16x16 tile. */
static void test_bounds_ranges(void) {
    P = vyre_program_new("tile", 16, 16, 1);
    vyre_ir_buffer(P, "o", VYRE_F32, VYRE_ACCESS_WRITE, 256);
    vyre_ir_buffer(P, "q", VYRE_F32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_shared(P, "t", VYRE_F32, 256);
    vyre_ir_shared(P, "small", VYRE_F32, 255);
    struct vyre_block *b = &P->body;
    let(b, "lx", vyre_ir_builtin(P, VYRE_LID, 0));
    let(b, "ly", vyre_ir_builtin(P, VYRE_LID, 1));
    let(b, "c", bin(VYRE_OP_ADD, bin(VYRE_OP_MUL, nm("ly"), u32(16)), nm("lx")));
    struct vyre_stmt *st = put(b, vyre_ir_store(P, "t", nm("c"), lit(VYRE_F32, 0)));
    struct vyre_stmt *so = put(b, vyre_ir_store(P, "o", nm("c"), lit(VYRE_F32, 0)));
    struct vyre_stmt *sq = put(b, vyre_ir_store(P, "q", nm("c"), lit(VYRE_F32, 0)));
    struct vyre_stmt *ss = put(b, vyre_ir_store(P, "small", nm("c"), lit(VYRE_F32, 0)));
    struct vyre_stmt *f = put(b, vyre_ir_for(P, "k", u32(0), u32(16), NULL));
    struct vyre_expr *lk = ld("t", bin(VYRE_OP_ADD, bin(VYRE_OP_MUL, nm("ly"), u32(16)), nm("k")));
    struct vyre_expr *lmask = ld("t", bin(VYRE_OP_AND, vyre_ir_builtin(P, VYRE_GID, 0), u32(255)));
    put(&f->then_, vyre_ir_store(P, "o", nm("c"), bin(VYRE_OP_ADD, lk, lmask)));
    /* What must stay checked: a mask too wide, a variable that is `set`, a loop whose end
     * is a param, and a shift of an unbounded value. */
    vyre_ir_param(P, "n", VYRE_U32);
    struct vyre_expr *wide = ld("t", bin(VYRE_OP_AND, vyre_ir_builtin(P, VYRE_GID, 0), u32(511)));
    put(b, vyre_ir_store(P, "o", u32(0), wide));
    let(b, "m", vyre_ir_builtin(P, VYRE_LID, 0));
    put(b, vyre_ir_set(P, "m", bin(VYRE_OP_ADD, nm("m"), u32(1000))));
    struct vyre_expr *lm = ld("t", nm("m"));
    put(b, vyre_ir_store(P, "o", u32(1), lm));
    struct vyre_stmt *fn = put(b, vyre_ir_for(P, "j", u32(0), nm("n"), NULL));
    struct vyre_expr *lq = ld("t", nm("j"));
    put(&fn->then_, vyre_ir_store(P, "o", u32(2), lq));
    struct vyre_expr *lshr = ld("t", bin(VYRE_OP_SHR, vyre_ir_builtin(P, VYRE_GID, 0), u32(24)));
    put(b, vyre_ir_store(P, "o", u32(3), lshr));
    vyre_program *p = P;
    struct vyre_error err;
    CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_OK);
    if (!p->validated) {
        fprintf(stderr, "%s\n", err.message);
        vyre_program_free(p);
        return;
    }
    vyre_opt_bounds(p);
    CHECK(st->in_bounds);             /* ly*16 + lx < 256 = count(t) */
    CHECK(so->in_bounds);             /* o declares 256 elements */
    CHECK(!sq->in_bounds);            /* q is sized at launch: unknown */
    CHECK(!ss->in_bounds);            /* 255 < 256: not proven */
    CHECK(lk->u.access.in_bounds);    /* k < 16 */
    CHECK(lmask->u.access.in_bounds); /* x & 255 < 256 */
    CHECK(!wide->u.access.in_bounds); /* x & 511 may reach 511 */
    CHECK(!lm->u.access.in_bounds);   /* m is set: its let value bounds nothing */
    CHECK(!lq->u.access.in_bounds);   /* j < n, and n is unknown */
    CHECK(!lshr->u.access.in_bounds); /* gid has no static bound (conservative) */
    char *ptx = emit(p, 90);
    if (ptx) CHECK(harness_ptxas_ok(ptx, 90, false));
    vyre_free(ptx);
    vyre_program_free(p);
}

static void test_bounds_pass(void) {
    P = vyre_program_new("bounds", 64, 1, 1);
    vyre_ir_buffer(P, "x", VYRE_U32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(P, "y", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_shared(P, "sh", VYRE_U32, 4);
    vyre_ir_param(P, "pn", VYRE_U32);
    struct vyre_block *b = &P->body;
    let(b, "i", gid());
    let(b, "m", gid());
    put(b, vyre_ir_set(P, "m", bin(VYRE_OP_ADD, nm("m"), u32(1))));
    /* conjunction, gt form, param index */
    struct vyre_stmt *g = put(b, vyre_ir_if(P, bin(VYRE_OP_LAND, bin(VYRE_OP_LT, nm("i"), len("x")),
                                                   bin(VYRE_OP_GT, len("y"), nm("i")))));
    struct vyre_expr *lx = ld("x", nm("i"));
    struct vyre_stmt *sy = put(&g->then_, vyre_ir_store(P, "y", nm("i"), lx));
    struct vyre_expr *lsh_in = ld("sh", u32(3)), *lsh_out = ld("sh", u32(4));
    struct vyre_stmt *s2 =
        put(&g->then_, vyre_ir_store(P, "y", u32(0), bin(VYRE_OP_ADD, lsh_in, lsh_out)));
    struct vyre_expr *lelse = ld("x", nm("i"));
    struct vyre_stmt *se = put(&g->else_, vyre_ir_store(P, "y", u32(1), lelse));
    struct vyre_stmt *after = put(b, vyre_ir_store(P, "y", nm("i"), u32(5)));
    /* mutated variable: never proven */
    struct vyre_stmt *gm = put(b, vyre_ir_if(P, bin(VYRE_OP_LT, nm("m"), len("x"))));
    struct vyre_expr *lm = ld("x", nm("m"));
    put(&gm->then_, vyre_ir_store(P, "y", u32(2), lm));
    /* param guard; guard on x does not prove y */
    struct vyre_stmt *gp = put(b, vyre_ir_if(P, bin(VYRE_OP_LT, nm("pn"), len("x"))));
    struct vyre_expr *lp = ld("x", nm("pn"));
    struct vyre_stmt *sp = put(&gp->then_, vyre_ir_store(P, "y", nm("pn"), lp));
    /* for over len(y): y[j] proven, x[j] not; atomic on y[j] proven */
    struct vyre_stmt *f = put(b, vyre_ir_for(P, "j", u32(0), len("y"), NULL));
    struct vyre_expr *lyj = ld("y", nm("j")), *lxj = ld("x", nm("j"));
    struct vyre_stmt *sf =
        put(&f->then_, vyre_ir_store(P, "y", nm("j"), bin(VYRE_OP_ADD, lyj, lxj)));
    struct vyre_stmt *af =
        put(&f->then_, vyre_ir_atomic(P, NULL, VYRE_ATOMIC_ADD, "y", nm("j"), NULL, u32(1)));
    vyre_program *p = P;
    struct vyre_error err;
    CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_OK);
    if (!p->validated) {
        fprintf(stderr, "%s\n", err.message);
        vyre_program_free(p);
        return;
    }
    vyre_opt_bounds(p);
    CHECK(lx->u.access.in_bounds);
    CHECK(sy->in_bounds);
    CHECK(lsh_in->u.access.in_bounds);
    CHECK(!lsh_out->u.access.in_bounds);
    CHECK(!s2->in_bounds); /* literal index into a global buffer: count unknown */
    CHECK(!lelse->u.access.in_bounds);
    CHECK(!se->in_bounds);
    CHECK(!after->in_bounds);
    CHECK(!lm->u.access.in_bounds);
    CHECK(lp->u.access.in_bounds);
    CHECK(!sp->in_bounds);
    CHECK(lyj->u.access.in_bounds);
    CHECK(!lxj->u.access.in_bounds);
    CHECK(sf->in_bounds);
    CHECK(af->in_bounds);
    /* checks remain only where unproven: 9 accesses (s2, sh[4], the else arm's load
     * and store, after, x[m], y[2], sp, x[j]) plus the 3 `lt` conditions. */
    char *ptx = emit(p, 90);
    if (ptx) {
        CHECK_EQ_U64(count(ptx, "setp.lt.u32"), 12);
        CHECK(harness_ptxas_ok(ptx, 90, false));
    }
    vyre_free(ptx);
    /* stale marks are cleared when the program changes */
    sy->in_bounds = true;
    put(&g->then_, vyre_ir_store(P, "y", nm("m"), u32(9)));
    CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_OK);
    vyre_opt_bounds(p);
    CHECK(sy->in_bounds);
    CHECK(!g->then_.items[g->then_.count - 1]->in_bounds);
    vyre_program_free(p);
}

/* Worklists (ptx_worklist.c): the header parameter, len as min(cur_count, capacity), the
 * warp-aggregated push (sm_70: one atomic per item), the NAME_wl entry with vyre_wn after
 * a debug entry's counters (marked `worklist` for tools), and no vector entry; every
 * variant assembles. */
static void test_worklist(void) {
    static const char text[] =
        "(program wlp (workgroup 64) (buffer o f64 read_write) (shared s f64 64)"
        " (worklist f f64) (worklist g i64)"
        " (let i (gid x)) (store s (lid x) (load f i)) (barrier)"
        " (let r (subgroup_reduce add (lid x)))"
        " (if (lt i (len f)) (then (push g (cast i64 (load s (lid x))))"
        "   (push f (mul (load f i) 2.0f64)) (return)))"
        " (store o (wgid x) (cast f64 (add (ngroups x) r))))";
    vyre_program *p = NULL;
    struct vyre_error err;
    CHECK_EQ_U64(vyre_text_parse(text, strlen(text), &p, &err), VYRE_OK);
    static const unsigned sms[] = {70, 80, 90};
    for (size_t k = 0; p && k < sizeof sms / sizeof sms[0]; k++) {
        for (int dbg = 0; dbg < 2; dbg++) {
            struct vyre_ptx_options o = {.sm = sms[k], .debug = dbg != 0};
            char *ptx = NULL;
            size_t n = 0;
            CHECK_EQ_U64(vyre_ptx_emit(p, &o, &ptx, &n, &err), VYRE_OK);
            if (!ptx) continue;
            CHECK_STR_CONTAINS(ptx, ".param .u64 w_f,\n\t.param .u64 w_g");
            CHECK_STR_CONTAINS(ptx, ".visible .entry wlp_wl(");
            /* ptx_meta.c: the fake driver knows NAME_wl by its kind, not its name */
            CHECK_STR_CONTAINS(ptx, dbg ? "// vyre.entry wlp plain debug\n"
                                        : "// vyre.entry wlp plain\n");
            CHECK_STR_CONTAINS(ptx, dbg ? "// vyre.entry wlp_wl worklist debug\n"
                                        : "// vyre.entry wlp_wl worklist\n");
            CHECK(strstr(ptx, "wlp_v4") == NULL);
            CHECK_STR_CONTAINS(ptx, dbg ? ".param .u64 vy_oob,\n\t.param .u64 vyre_wn\n"
                                        : ".param .u64 w_g,\n\t.param .u64 vyre_wn\n");
            CHECK_EQ_U64(count(ptx, "activemask.b32"), sms[k] < 75 ? 0u : 4u);
            CHECK_EQ_U64(count(ptx, "min.u32"), 5); /* 2 headers per entry + vyre_wn */
            CHECK(harness_ptxas_ok(ptx, sms[k], false));
            vyre_free(ptx);
        }
    }
    vyre_program_free(p);
}

int main(void) {
    RUN_TEST(test_worklist);
    RUN_TEST(test_saxpy);
    RUN_TEST(test_unguarded_checks);
    RUN_TEST(test_bad_sm);
    RUN_TEST(test_invalid_program);
    RUN_TEST(test_targets_and_abi);
    RUN_TEST(test_determinism);
    RUN_TEST(test_emit_folds_a_copy);
    RUN_TEST(test_templates);
    RUN_TEST(test_ptxas_all);
    RUN_TEST(test_bounds_pass);
    RUN_TEST(test_bounds_ranges);
    return harness_finish();
}
