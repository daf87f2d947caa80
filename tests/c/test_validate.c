/* test_validate.c — the validator: every typing, naming, scoping, memory-access,
 * control-flow and limit rule with its exact problem code and node path; valid
 * programs validate with zero problems and get types, slots and references filled
 * in; the barrier uniformity analysis; robustness against NULL children and very
 * deep trees (run under ASan/UBSan in CI). Core cases use the ir.h builder so they
 * do not depend on the parser; the rest use the text format for brevity. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ir.h"

/* ---- helpers ------------------------------------------------------------------- */

static struct vyre_expr *u32(vyre_program *p, uint32_t x) { return vyre_ir_lit(p, VYRE_U32, x); }

static struct vyre_expr *f32(vyre_program *p, float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return vyre_ir_lit(p, VYRE_F32, b);
}

static struct vyre_expr *nm(vyre_program *p, const char *n) { return vyre_ir_name(p, n); }

static struct vyre_expr *bin(vyre_program *p, enum vyre_op op, struct vyre_expr *a,
                             struct vyre_expr *b) {
    return vyre_ir_binary(p, op, a, b);
}

static struct vyre_expr *gid(vyre_program *p) { return vyre_ir_builtin(p, VYRE_GID, 0); }

static void push(vyre_program *p, struct vyre_block *b, struct vyre_stmt *s) {
    if (!vyre_ir_push(p, b, s)) harness_fail(__FILE__, __LINE__, "vyre_ir_push failed");
}

static const struct vyre_problem *find(const struct vyre_problems *ps, const char *code,
                                       const char *path) {
    for (size_t i = 0; i < ps->count; i++)
        if (strcmp(ps->items[i].code, code) == 0 && (!path || strcmp(ps->items[i].path, path) == 0))
            return &ps->items[i];
    return NULL;
}

static void dump(const struct vyre_problems *ps) {
    for (size_t i = 0; i < ps->count; i++)
        fprintf(stderr, "    %s at %s: %s Fix: %s\n", ps->items[i].code, ps->items[i].path,
                ps->items[i].message, ps->items[i].fix);
}

/* Validates p expecting exactly `n` problems, one of them `code` at `path`;
 * returns that problem's copy (message checks) and frees p. */
static struct vyre_problem expect_n(vyre_program *p, size_t n, const char *code, const char *path,
                                    int line) {
    struct vyre_problem out;
    memset(&out, 0, sizeof out);
    if (!p) {
        harness_fail(__FILE__, line, "no program");
        return out;
    }
    struct vyre_problems ps = {0};
    enum vyre_status st = vyre_validate(p, &ps);
    harness_checks++;
    const struct vyre_problem *pr = find(&ps, code, path);
    if (st != VYRE_ERR_INVALID || !pr || (n && ps.count != n)) {
        harness_fail(__FILE__, line, "expected %zu problem(s) incl. %s at %s, got status %d:", n,
                     code, path, (int)st);
        dump(&ps);
    } else {
        out = *pr;
    }
    CHECK(!p->validated);
    vyre_problems_free(&ps);
    vyre_program_free(p);
    return out;
}
#define EXPECT(p, code, path) expect_n((p), 1, (code), (path), __LINE__)
#define EXPECT_SOME(p, code, path) expect_n((p), 0, (code), (path), __LINE__)

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error err;
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "parse failed: %s\n%s", err.message, text);
        return NULL;
    }
    return p;
}

/* Validates and expects no problem; keeps p. */
static bool valid(vyre_program *p, int line) {
    if (!p) return false;
    struct vyre_problems ps = {0};
    enum vyre_status st = vyre_validate(p, &ps);
    harness_checks++;
    if (st != VYRE_OK || ps.count) {
        harness_fail(__FILE__, line, "expected a valid program, got status %d:", (int)st);
        dump(&ps);
    }
    vyre_problems_free(&ps);
    return st == VYRE_OK && p->validated;
}
#define VALID(p) valid((p), __LINE__)

static void valid_text(const char *text, int line) {
    vyre_program *p = parse(text);
    valid(p, line);
    vyre_program_free(p);
}
#define VALID_TEXT(t) valid_text((t), __LINE__)

#define HDR                                                                    \
    "(program t (workgroup 64) (buffer x f32 read) (buffer y f32 read_write) " \
    "(buffer h u32 read_write) (param a f32) (param n u32) "

/* ---- valid programs, resolution ---------------------------------------------------- */

static vyre_program *build_saxpy(void) {
    vyre_program *p = vyre_program_new("saxpy", 256, 1, 1);
    vyre_ir_buffer(p, "x", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "y", VYRE_F32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(p, "a", VYRE_F32);
    push(p, &p->body, vyre_ir_let(p, "i", gid(p)));
    struct vyre_stmt *s = vyre_ir_if(p, bin(p, VYRE_OP_LT, nm(p, "i"), vyre_ir_len(p, "y")));
    struct vyre_expr *v =
        bin(p, VYRE_OP_ADD, bin(p, VYRE_OP_MUL, nm(p, "a"), vyre_ir_load(p, "x", nm(p, "i"))),
            vyre_ir_load(p, "y", nm(p, "i")));
    push(p, &s->then_, vyre_ir_store(p, "y", nm(p, "i"), v));
    push(p, &p->body, s);
    return p;
}

static void test_saxpy_resolved(void) {
    vyre_program *p = build_saxpy();
    CHECK(VALID(p));
    CHECK_EQ_U64(p->nslots, 1);
    CHECK_EQ_U64(p->slot_types[0], VYRE_U32);
    CHECK(strcmp(p->slot_names[0], "i") == 0);
    struct vyre_stmt *let = p->body.items[0], *ifs = p->body.items[1];
    CHECK_EQ_U64(let->slot, 0);
    CHECK_EQ_U64(let->value->type, VYRE_U32);
    CHECK_EQ_U64(ifs->cond->type, VYRE_BOOL);
    CHECK_EQ_U64(ifs->cond->u.op.a[0]->u.name.ref, VYRE_REF_VAR);
    CHECK_EQ_U64(ifs->cond->u.op.a[0]->u.name.index, 0);
    CHECK_EQ_U64(ifs->cond->u.op.a[1]->u.access.decl, 1);
    struct vyre_stmt *st = ifs->then_.items[0];
    CHECK_EQ_U64(st->decl, 1);
    CHECK_EQ_U64(st->value->type, VYRE_F32);
    struct vyre_expr *mul = st->value->u.op.a[0];
    CHECK_EQ_U64(mul->type, VYRE_F32);
    CHECK_EQ_U64(mul->u.op.a[0]->u.name.ref, VYRE_REF_PARAM);
    CHECK_EQ_U64(mul->u.op.a[0]->u.name.index, 2);
    CHECK_EQ_U64(mul->u.op.a[1]->u.access.decl, 0);
    /* Validating again is idempotent. */
    CHECK(VALID(p));
    CHECK_EQ_U64(p->nslots, 1);
    struct vyre_error err;
    vyre_error_clear(&err);
    CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_OK);
    vyre_program_free(p);
}

static void test_histogram_atomics(void) {
    vyre_program *p = vyre_program_new("hist", 128, 1, 1);
    vyre_ir_buffer(p, "data", VYRE_U32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "hist", VYRE_U32, VYRE_ACCESS_READ_WRITE, 16);
    vyre_ir_shared(p, "local", VYRE_U32, 16);
    vyre_ir_buffer(p, "fsum", VYRE_F32, VYRE_ACCESS_WRITE, 1);
    push(p, &p->body, vyre_ir_let(p, "i", gid(p)));
    struct vyre_stmt *s = vyre_ir_if(p, bin(p, VYRE_OP_LT, nm(p, "i"), vyre_ir_len(p, "data")));
    struct vyre_expr *bucket = bin(p, VYRE_OP_REM, vyre_ir_load(p, "data", nm(p, "i")), u32(p, 16));
    push(p, &s->then_, vyre_ir_atomic(p, "old", VYRE_ATOMIC_ADD, "hist", bucket, NULL, u32(p, 1)));
    push(p, &s->then_, vyre_ir_set(p, "old", bin(p, VYRE_OP_ADD, nm(p, "old"), u32(p, 1))));
    push(p, &s->then_,
         vyre_ir_atomic(p, NULL, VYRE_ATOMIC_MAX, "local", u32(p, 0), NULL, nm(p, "old")));
    push(p, &s->then_,
         vyre_ir_atomic(p, "prev", VYRE_ATOMIC_CAS, "local", u32(p, 1), u32(p, 0), u32(p, 7)));
    push(p, &s->then_,
         vyre_ir_atomic(p, NULL, VYRE_ATOMIC_ADD, "fsum", u32(p, 0), NULL, f32(p, 1.0f)));
    push(p, &p->body, s);
    CHECK(VALID(p));
    CHECK_EQ_U64(p->nslots, 3);
    CHECK_EQ_U64(p->slot_types[1], VYRE_U32);
    CHECK(strcmp(p->slot_names[1], "old") == 0);
    CHECK(strcmp(p->slot_names[2], "prev") == 0);
    CHECK_EQ_U64(s->then_.items[0]->slot, 1);
    CHECK_EQ_U64(s->then_.items[0]->decl, 1);
    CHECK_EQ_U64(s->then_.items[1]->slot, 1);
    CHECK_EQ_U64(s->then_.items[2]->decl, 2);
    CHECK_EQ_U64(s->then_.items[3]->slot, 2);
    vyre_program_free(p);
}

/* Shared-memory tree reduction: barriers inside a loop whose bounds are uniform
 * (literals, wgsize, params) and outside the divergent if. */
static vyre_program *build_reduction(bool divergent_bound) {
    vyre_program *p = vyre_program_new("reduce", 256, 1, 1);
    vyre_ir_buffer(p, "in", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "out", VYRE_F32, VYRE_ACCESS_WRITE, 0);
    vyre_ir_shared(p, "tmp", VYRE_F32, 256);
    vyre_ir_param(p, "rounds", VYRE_U32);
    push(p, &p->body, vyre_ir_let(p, "l", vyre_ir_builtin(p, VYRE_LID, 0)));
    push(p, &p->body, vyre_ir_store(p, "tmp", nm(p, "l"), vyre_ir_load(p, "in", gid(p))));
    push(p, &p->body, vyre_ir_simple(p, VYRE_ST_BARRIER));
    push(p, &p->body, vyre_ir_let(p, "width", vyre_ir_builtin(p, VYRE_WGSIZE, 0)));
    struct vyre_expr *to = divergent_bound ? nm(p, "l") : nm(p, "rounds");
    struct vyre_stmt *loop = vyre_ir_for(p, "k", u32(p, 0), to, u32(p, 1));
    push(p, &loop->then_, vyre_ir_set(p, "width", bin(p, VYRE_OP_SHR, nm(p, "width"), u32(p, 1))));
    struct vyre_stmt *g = vyre_ir_if(p, bin(p, VYRE_OP_LT, nm(p, "l"), nm(p, "width")));
    struct vyre_expr *sum =
        bin(p, VYRE_OP_ADD, vyre_ir_load(p, "tmp", nm(p, "l")),
            vyre_ir_load(p, "tmp", bin(p, VYRE_OP_ADD, nm(p, "l"), nm(p, "width"))));
    push(p, &g->then_, vyre_ir_store(p, "tmp", nm(p, "l"), sum));
    push(p, &loop->then_, g);
    push(p, &loop->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    push(p, &p->body, loop);
    struct vyre_stmt *w = vyre_ir_if(p, bin(p, VYRE_OP_EQ, nm(p, "l"), u32(p, 0)));
    push(p, &w->then_,
         vyre_ir_store(p, "out", vyre_ir_builtin(p, VYRE_WGID, 0),
                       vyre_ir_load(p, "tmp", u32(p, 0))));
    push(p, &p->body, w);
    return p;
}

static void test_reduction(void) {
    vyre_program *p = build_reduction(false);
    CHECK(VALID(p));
    CHECK_EQ_U64(p->nslots, 3); /* l, width, k */
    CHECK_EQ_U64(p->slot_types[2], VYRE_U32);
    vyre_program_free(p);
    /* The same loop bounded by lid: the barrier inside is divergent. */
    EXPECT(build_reduction(true), "barrier-divergent", "body[4].body[2]");
}

static void test_parsed_valid(void) {
    VALID_TEXT("(program saxpy (workgroup 256)\n"
               "  (buffer x f32 read)\n  (buffer y f32 read_write)\n  (param a f32)\n"
               "  (let i (gid x))\n"
               "  (if (lt i (len y))\n"
               "    (then (store y i (add (mul a (load x i)) (load y i))))))\n");
    VALID_TEXT(HDR "(let b (eq true false)) (let c (land b (lnot b))) (let d (and b c))"
                   "(let e (popcount 7u64)) (let f (shl e 3u64)) (let g (select c 1.5f32 a))"
                   "(let h2 (bitcast u32 g)) (let j (bitcast f64 -3i64)) (let k (cast bool j))"
                   "(let m (fma a a a)) (let q (mulhi 3i32 -4i32)) (let r (rem n 3u32))"
                   "(let s (abs -3i32)) (let t2 (neg n)) (let u (not n)) (let v (sqrt 2.0f64))"
                   "(let w (min a 1.0f32)) (let z (ne b true)) (let idx (load x -1i32)))");
    /* Loops: every integer type; loop variable read; atomic results may be set. */
    VALID_TEXT(HDR
               "(for i 0i64 10i64 2i64 (let v (cast u32 i)) (store h v v))"
               "(for j 0u32 n 1u32 (if (gt j 5u32) (then (break))) (let old (atomic xor h j 1u32))"
               "  (set old (add old j))))");
}

/* ---- typing rules ----------------------------------------------------------------- */

static void test_types(void) {
    struct vyre_problem pr;
    pr = EXPECT(parse(HDR "(let v (add a n)))"), "type-mismatch", "body[0].value");
    CHECK_STR_CONTAINS(pr.message, "(add a n)");
    CHECK_STR_CONTAINS(pr.fix, "(cast f32 ...)");
    pr = EXPECT(parse(HDR "(let v (rem a a)))"), "rem-float", "body[0].value");
    CHECK_STR_CONTAINS(pr.message, "rem is integer-only");
    EXPECT(parse(HDR "(let v (and a a)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (shl n 3i32)))"), "type-mismatch", "body[0].value");
    EXPECT(parse(HDR "(let v (shl a a)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (lt true false)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (land n n)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (mulhi a a)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (add true true)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (lnot n)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (not a)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (neg true)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (sqrt n)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (clz a)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (select n a a)))"), "condition-type", "body[0].value.a");
    EXPECT(parse(HDR "(let v (select true a n)))"), "type-mismatch", "body[0].value");
    EXPECT(parse(HDR "(let v (bitcast u32 1.0f64)))"), "bitcast-type", "body[0].value");
    EXPECT(parse(HDR "(let v (bitcast bool 1u32)))"), "bitcast-type", "body[0].value");
    EXPECT(parse(HDR "(let v (bitcast u32 true)))"), "bitcast-type", "body[0].value");
    EXPECT(parse(HDR "(let v (fma 1i32 2i32 3i32)))"), "operand-type", "body[0].value");
    EXPECT(parse(HDR "(let v (fma a a 1.0f64)))"), "type-mismatch", "body[0].value");
    EXPECT(parse(HDR "(let v (load x a)))"), "index-type", "body[0].value.index");
    EXPECT(parse(HDR "(let v (load x 1u64)))"), "index-type", "body[0].value.index");
    EXPECT(parse(HDR "(if n (then (return))))"), "condition-type", "body[0].cond");
    EXPECT_SOME(parse(HDR "(for i 0.0f32 1.0f32 1.0f32 (return)))"), "loop-type", "body[0].from");
    EXPECT(parse(HDR "(for i 0u32 a 1u32 (return)))"), "loop-type", "body[0].to");
    EXPECT(parse(HDR "(for i 0u32 10i32 1u32 (return)))"), "type-mismatch", "body[0].to");
    EXPECT(parse(HDR "(for i 0u32 n 1u64 (return)))"), "type-mismatch", "body[0].step");
    /* Nested operands keep their path segments. */
    EXPECT(parse(HDR "(let v (add 1u32 (mul (abs a) (select true 1.0f32 (sqrt 2.0f64))))))"),
           "type-mismatch", "body[0].value.b.b");
    /* Results: popcount keeps the operand type; comparisons give bool. */
    vyre_program *p = parse(HDR "(let v (popcount 7u64)) (let c (lt a a)))");
    CHECK(VALID(p));
    if (p) {
        CHECK_EQ_U64(p->slot_types[0], VYRE_U64);
        CHECK_EQ_U64(p->slot_types[1], VYRE_BOOL);
    }
    vyre_program_free(p);
}

/* An expression whose operand already failed reports nothing more. */
static void test_no_cascade(void) {
    EXPECT(parse(HDR "(let v (add (add 1.0f32 1u32) 2u32)) (let w (mul v v))"
                     "(store y 0u32 w) (if (lt w 1u32) (then (return))))"),
           "type-mismatch", "body[0].value.a");
    EXPECT(parse(HDR "(let v (sqrt (load nope 0u32))) (let w (add v 1u32)))"), "undeclared-name",
           "body[0].value.arg");
}

/* ---- names and scopes --------------------------------------------------------------- */

static void test_names(void) {
    struct vyre_problem pr;
    pr = EXPECT(parse(HDR "(let v (add q 1u32)))"), "undeclared-name", "body[0].value.a");
    CHECK_STR_CONTAINS(pr.message, "'q'");
    EXPECT(parse(HDR "(let v w) (let w 1u32))"), "undeclared-name", "body[0].value");
    EXPECT(parse(HDR "(let v (add v 1u32)))"), "undeclared-name", "body[0].value.a");
    EXPECT(parse(HDR "(if true (then (let t1 1u32))) (store h 0u32 t1))"), "out-of-scope",
           "body[1].value");
    EXPECT(parse(HDR "(for i 0u32 4u32 1u32 (return)) (store h i 0u32))"), "out-of-scope",
           "body[1].index");
    EXPECT(parse(HDR "(let v 1u32) (if true (then (let v 2u32))))"), "shadowing",
           "body[1].then[0]");
    EXPECT(parse(HDR "(let n 1u32))"), "shadowing", "body[0]");
    EXPECT(parse(HDR "(for a 0u32 1u32 1u32 (return)))"), "shadowing", "body[0]");
    EXPECT(parse(HDR "(if true (then (let v 1u32)) (else (let v 2u32))))"), "duplicate-name",
           "body[0].else[0]");
    EXPECT(parse(HDR "(let old (atomic add h 0u32 1u32)) (let old 3u32))"), "shadowing", "body[1]");
    EXPECT(parse("(program t (workgroup 1) (buffer x f32 read) (param x u32))"), "duplicate-name",
           "decls[1]");
    EXPECT(parse(HDR "(let v (add x 1.0f32)))"), "not-a-value", "body[0].value.a");
    EXPECT(parse(HDR "(let v (load a 0u32)))"), "not-a-buffer", "body[0].value");
    EXPECT(parse(HDR "(let v 1u32) (let w (len v)))"), "not-a-buffer", "body[1].value");
    EXPECT(parse(HDR "(store zz 0u32 1u32))"), "undeclared-name", "body[0]");

    /* Identifier rules need the builder: the parser rejects these spellings itself. */
    vyre_program *p = vyre_program_new("t", 1, 1, 1);
    push(p, &p->body, vyre_ir_let(p, "f32", u32(p, 1)));
    pr = EXPECT(p, "reserved-name", "body[0]");
    CHECK_STR_CONTAINS(pr.message, "'f32'");
    p = vyre_program_new("t", 1, 1, 1);
    push(p, &p->body, vyre_ir_let(p, "true", u32(p, 1)));
    EXPECT(p, "reserved-name", "body[0]");
    p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_param(p, "nan", VYRE_F32);
    EXPECT(p, "reserved-name", "decls[0]");
    p = vyre_program_new("t", 1, 1, 1);
    push(p, &p->body, vyre_ir_let(p, "1x", u32(p, 1)));
    EXPECT(p, "invalid-name", "body[0]");
    p = vyre_program_new("t", 1, 1, 1);
    push(p, &p->body, vyre_ir_let(p, "a-b", u32(p, 1)));
    EXPECT(p, "invalid-name", "body[0]");
    char longname[80];
    memset(longname, 'q', 65);
    longname[65] = '\0';
    p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_buffer(p, longname, VYRE_U32, VYRE_ACCESS_READ, 0);
    EXPECT(p, "name-too-long", "decls[0]");
    longname[64] = '\0'; /* exactly 64 is fine */
    p = vyre_program_new(longname, 1, 1, 1);
    CHECK(VALID(p));
    vyre_program_free(p);
    p = vyre_program_new("bad name", 1, 1, 1);
    EXPECT(p, "invalid-name", "name");
    p = vyre_program_new("", 1, 1, 1);
    EXPECT(p, "invalid-name", "name");
}

/* ---- assignments, memory, control ----------------------------------------------------- */

static void test_set_store_atomic(void) {
    struct vyre_problem pr;
    EXPECT(parse(HDR "(set n 1u32))"), "set-not-variable", "body[0]");
    EXPECT(parse(HDR "(set y 1.0f32))"), "set-not-variable", "body[0]");
    EXPECT(parse(HDR "(for i 0u32 4u32 1u32 (set i 2u32)))"), "set-loop-variable",
           "body[0].body[0]");
    EXPECT(parse(HDR "(set q 1u32))"), "undeclared-name", "body[0]");
    EXPECT(parse(HDR "(let v 1u32) (set v 1.0f32))"), "type-mismatch", "body[1].value");
    EXPECT(parse(HDR "(if true (then (let v 1u32))) (set v 2u32))"), "out-of-scope", "body[1]");
    pr = EXPECT(parse(HDR "(store x 0u32 1.0f32))"), "store-read-only", "body[0]");
    CHECK_STR_CONTAINS(pr.message, "(store x 0u32 0x1p+0f32)");
    EXPECT(parse(HDR "(store y 0u32 1u32))"), "type-mismatch", "body[0].value");
    EXPECT(parse(HDR "(store y 1.0f32 1.0f32))"), "index-type", "body[0].index");
    EXPECT(parse(HDR "(atomic add x 0u32 1.0f32))"), "atomic-target", "body[0]");
    EXPECT(parse(HDR "(atomic sub y 0u32 1.0f32))"), "atomic-type", "body[0]");
    EXPECT(parse(HDR "(atomic add h 0u32 1i32))"), "type-mismatch", "body[0].value");
    EXPECT(parse(HDR "(atomic cas h 0u32 1.0f32 2u32))"), "type-mismatch", "body[0].expected");
    EXPECT(parse(HDR "(atomic add h 0.5f32 2u32))"), "index-type", "body[0].index");
    EXPECT(parse(HDR "(atomic add n 0u32 2u32))"), "not-a-buffer", "body[0]");
    EXPECT(parse("(program t (workgroup 1) (buffer d f64 read_write) (atomic add d 0u32 1.0f64))"),
           "atomic-type", "body[0]");
    EXPECT(parse("(program t (workgroup 1) (buffer d i64 read_write) (atomic min d 0u32 1i64))"),
           "atomic-type", "body[0]");
    VALID_TEXT("(program t (workgroup 1) (buffer d u64 read_write) (shared s i32 4)"
               "(atomic exchange d 0u32 1u64) (let o (atomic min s 1u32 -1i32)) (set o 3i32))");
    vyre_program *p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_buffer(p, "h", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    push(p, &p->body, vyre_ir_atomic(p, NULL, VYRE_ATOMIC_CAS, "h", u32(p, 0), NULL, u32(p, 1)));
    EXPECT(p, "atomic-operands", "body[0]");
    p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_buffer(p, "h", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    push(p, &p->body,
         vyre_ir_atomic(p, NULL, VYRE_ATOMIC_OR, "h", u32(p, 0), u32(p, 2), u32(p, 1)));
    EXPECT(p, "atomic-operands", "body[0]");
}

static void test_break(void) {
    EXPECT(parse(HDR "(break))"), "break-outside-loop", "body[0]");
    EXPECT(parse(HDR "(if true (then (break))))"), "break-outside-loop", "body[0].then[0]");
    VALID_TEXT(HDR "(for i 0u32 4u32 1u32 (if (eq i 2u32) (then (break)))))");
}

/* ---- barriers ----------------------------------------------------------------------- */

static void test_barrier_divergent_if(void) {
    /* A barrier under `if gid < 3` is rejected. */
    vyre_program *p = vyre_program_new("t", 64, 1, 1);
    struct vyre_stmt *s = vyre_ir_if(p, bin(p, VYRE_OP_LT, gid(p), u32(p, 3)));
    push(p, &s->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    push(p, &p->body, s);
    struct vyre_problem pr = EXPECT(p, "barrier-divergent", "body[0].then[0]");
    CHECK_STR_CONTAINS(pr.fix, "move the barrier");
    /* Uniform conditions are fine. */
    VALID_TEXT(
        HDR "(if (lt (wgid x) 3u32) (then (barrier)) (else (barrier)))"
            "(if (lt n (len x)) (then (barrier))) (if (lt (wgsize y) (ngroups z)) (then (barrier)))"
            "(for i 0u32 n 1u32 (if (eq i 2u32) (then (barrier)))) (barrier))");
}

static void test_barrier_taint(void) {
    /* Through variables, loads and atomic results. */
    EXPECT(parse(HDR "(let l (lid x)) (let m (mul l 2u32)) (if (lt m n) (then (barrier))))"),
           "barrier-divergent", "body[2].then[0]");
    EXPECT(parse(HDR "(if (lt (load x 0u32) a) (then (barrier))))"), "barrier-divergent",
           "body[0].then[0]");
    EXPECT(parse(HDR "(let o (atomic add h 0u32 1u32)) (if (eq o 0u32) (then (barrier))))"),
           "barrier-divergent", "body[1].then[0]");
    /* A variable set under divergent control becomes divergent. */
    EXPECT(parse(HDR "(let u 0u32) (if (lt (gid x) 3u32) (then (set u 1u32)))"
                     "(if (eq u 1u32) (then (barrier))))"),
           "barrier-divergent", "body[2].then[0]");
    VALID_TEXT(HDR "(let u 0u32) (if (lt (wgid x) 3u32) (then (set u 1u32)))"
                   "(if (eq u 1u32) (then (barrier))))");
    /* Program order: tainting after the barrier does not reach back... */
    VALID_TEXT(HDR "(let u 0u32) (if (eq u 0u32) (then (barrier))) (set u (gid x)))");
    /* ...except around a loop, where the next iteration sees it. */
    EXPECT(parse(HDR "(let u 0u32) (for i 0u32 4u32 1u32 (if (eq u 0u32) (then (barrier)))"
                     "(set u (lid x))))"),
           "barrier-divergent", "body[1].body[0].then[0]");
    /* A chain that needs several loop passes to reach the barrier. */
    EXPECT(parse(HDR "(let u1 0u32) (let u2 0u32) (let u3 0u32)"
                     "(for i 0u32 4u32 1u32 (if (eq u3 0u32) (then (barrier)))"
                     "(set u3 u2) (set u2 u1) (set u1 (gid x))))"),
           "barrier-divergent", "body[3].body[0].then[0]");
    /* Divergent loop bounds. */
    EXPECT(parse(HDR "(for i 0u32 (gid x) 1u32 (barrier)))"), "barrier-divergent",
           "body[0].body[0]");
}

static void test_barrier_return_break(void) {
    struct vyre_problem pr;
    pr = EXPECT(parse(HDR "(if (lt (gid x) 3u32) (then (return))) (barrier))"), "barrier-divergent",
                "body[1]");
    CHECK_STR_CONTAINS(pr.message, "return");
    VALID_TEXT(HDR "(barrier) (if (lt (gid x) 3u32) (then (return))))");
    VALID_TEXT(HDR "(if (lt n 3u32) (then (return))) (barrier))");
    /* A divergent return inside a loop also hits the barrier of the next iteration. */
    EXPECT(parse(HDR "(for i 0u32 4u32 1u32 (barrier) (if (lt (lid x) i) (then (return)))))"),
           "barrier-divergent", "body[0].body[0]");
    pr =
        EXPECT(parse(HDR "(for i 0u32 4u32 1u32 (barrier) (if (lt (gid x) 3u32) (then (break)))))"),
               "barrier-divergent", "body[0].body[0]");
    CHECK_STR_CONTAINS(pr.message, "break");
    /* After the loop, control has reconverged. */
    VALID_TEXT(HDR "(for i 0u32 4u32 1u32 (if (lt (gid x) 3u32) (then (break)))) (barrier))");
    /* Nested: the inner loop's divergent break does not make the outer loop divergent
     * (and the outer fixpoint terminates although the inner flag starts afresh). */
    VALID_TEXT(HDR "(for i 0u32 4u32 1u32 (for j 0u32 4u32 1u32 (if (lt (gid x) j) (then (break))))"
                   "(barrier)))");
    EXPECT(parse(HDR "(for i 0u32 4u32 1u32 (for j 0u32 4u32 1u32 (barrier)"
                     "(if (lt (gid x) j) (then (break))))))"),
           "barrier-divergent", "body[0].body[0].body[0]");
    /* Uniform breaks are fine; a variable set in a loop with a divergent break is not. */
    VALID_TEXT(HDR "(for i 0u32 4u32 1u32 (barrier) (if (eq i n) (then (break)))))");
    EXPECT(parse(HDR "(let c 0u32) (for i 0u32 4u32 1u32 (if (lt (gid x) i) (then (break)))"
                     "(set c (add c 1u32))) (if (eq c 2u32) (then (barrier))))"),
           "barrier-divergent", "body[2].then[0]");
}

/* ---- declarations and limits ---------------------------------------------------------- */

static void test_decls_limits(void) {
    EXPECT(vyre_program_new("t", 0, 1, 1), "workgroup-size", "workgroup");
    EXPECT(vyre_program_new("t", 2048, 1, 1), "workgroup-size", "workgroup");
    EXPECT(vyre_program_new("t", 64, 4, 8), "workgroup-size", "workgroup");
    EXPECT(vyre_program_new("t", 1, 1, 65), "workgroup-size", "workgroup");
    vyre_program *p = vyre_program_new("t", 1024, 1, 1);
    CHECK(VALID(p));
    vyre_program_free(p);
    p = vyre_program_new("t", 4, 4, 64);
    CHECK(VALID(p));
    vyre_program_free(p);

    p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_shared(p, "s", VYRE_F32, 0);
    EXPECT(p, "shared-count", "decls[0]");
    p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_shared(p, "s", VYRE_F32, 8192);
    vyre_ir_shared(p, "t2", VYRE_F64, 2048); /* 32768 + 16384 = 49152: still fits */
    CHECK(VALID(p));
    vyre_ir_shared(p, "u", VYRE_BOOL, 1);
    EXPECT(p, "shared-size", "decls[2]");

    p = vyre_program_new("t", 1, 1, 1);
    char name[16];
    for (int i = 0; i < 129; i++) {
        snprintf(name, sizeof name, "p%d", i);
        vyre_ir_param(p, name, VYRE_U32);
    }
    EXPECT(p, "limit-params", "decls[128]");
    p = vyre_program_new("t", 1, 1, 1);
    for (int i = 0; i < 129; i++) {
        snprintf(name, sizeof name, "b%d", i);
        vyre_ir_buffer(p, name, VYRE_U32, VYRE_ACCESS_READ, 0);
    }
    vyre_ir_shared(p, "s", VYRE_U32, 1);
    EXPECT(p, "limit-buffers", "decls[128]");
    p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_buffer(p, "b", (enum vyre_type)42, VYRE_ACCESS_READ, 0);
    push(p, &p->body, vyre_ir_let(p, "v", vyre_ir_load(p, "b", u32(p, 0))));
    EXPECT(p, "invalid-type", "decls[0]");
}

static void test_nesting_limit(void) {
    /* 64 nested levels are allowed, the 65th is not. */
    for (int levels = 64; levels <= 65; levels++) {
        vyre_program *p = vyre_program_new("t", 1, 1, 1);
        struct vyre_block *b = &p->body;
        for (int i = 0; i < levels - 1; i++) {
            struct vyre_stmt *s = vyre_ir_if(p, vyre_ir_lit(p, VYRE_BOOL, 1));
            push(p, b, s);
            b = &s->then_;
        }
        push(p, b, vyre_ir_simple(p, VYRE_ST_RETURN));
        if (levels == 64) {
            CHECK(VALID(p));
            vyre_program_free(p);
        } else {
            struct vyre_problem pr = EXPECT(p, "limit-nesting", NULL);
            /* The full path (519 chars) is cut to its innermost tail. */
            CHECK_EQ_U64(strlen(pr.path), sizeof pr.path - 1);
            CHECK(strncmp(pr.path, "...", 3) == 0);
            CHECK(strcmp(pr.path + strlen(pr.path) - 16, ".then[0].then[0]") == 0);
        }
    }
    /* Far beyond the limit: nothing below is visited, no crash. */
    vyre_program *p = vyre_program_new("t", 1, 1, 1);
    struct vyre_block *b = &p->body;
    for (int i = 0; i < 20000; i++) {
        struct vyre_stmt *s = vyre_ir_for(p, "i", u32(p, 0), u32(p, 1), u32(p, 1));
        push(p, b, s);
        b = &s->then_;
    }
    EXPECT_SOME(p, "limit-nesting", NULL);
    /* A wide block past the limit is one problem, not one per statement. */
    p = vyre_program_new("t", 1, 1, 1);
    b = &p->body;
    for (int i = 0; i < 64; i++) {
        struct vyre_stmt *s = vyre_ir_if(p, vyre_ir_lit(p, VYRE_BOOL, 1));
        push(p, b, s);
        b = &s->then_;
    }
    for (int i = 0; i < 300; i++) push(p, b, vyre_ir_simple(p, VYRE_ST_RETURN));
    EXPECT(p, "limit-nesting", NULL);
}

static void test_expr_depth_limit(void) {
    for (int depth = 128; depth <= 129; depth++) {
        vyre_program *p = vyre_program_new("t", 1, 1, 1);
        struct vyre_expr *e = u32(p, 1);
        for (int i = 1; i < depth; i++) e = vyre_ir_unary(p, VYRE_OP_NOT, e);
        push(p, &p->body, vyre_ir_let(p, "v", e));
        if (depth == 128) {
            CHECK(VALID(p));
            vyre_program_free(p);
        } else {
            struct vyre_problem pr = EXPECT(p, "limit-expr-depth", NULL);
            CHECK_EQ_U64(strlen(pr.path), sizeof pr.path - 1);
            CHECK(strcmp(pr.path + strlen(pr.path) - 8, ".arg.arg") == 0);
            CHECK_STR_CONTAINS(pr.message, "exceeds 128 levels at 1u32");
        }
    }
    /* A wide tree crossing the limit in many places is one problem. */
    vyre_program *w = vyre_program_new("t", 1, 1, 1);
    struct vyre_expr *leaves[32];
    for (int i = 0; i < 32; i++) leaves[i] = u32(w, 1);
    for (int n = 32; n > 1; n /= 2)
        for (int i = 0; i < n / 2; i++)
            leaves[i] = bin(w, VYRE_OP_ADD, leaves[2 * i], leaves[2 * i + 1]);
    struct vyre_expr *x = leaves[0]; /* 6 levels, 32 leaves */
    for (int i = 0; i < 126; i++) x = bin(w, VYRE_OP_ADD, u32(w, 2), x);
    push(w, &w->body, vyre_ir_let(w, "v", x));
    push(w, &w->body, vyre_ir_let(w, "z", x));
    struct vyre_problems ps = {0};
    CHECK_EQ_U64(vyre_validate(w, &ps), VYRE_ERR_INVALID);
    CHECK_EQ_U64(ps.count, 2);
    vyre_problems_free(&ps);
    vyre_program_free(w);
    /* Shared subexpressions: a 140-level DAG is 2^140 nodes as a tree; the node
     * limit stops the walk. */
    w = vyre_program_new("t", 1, 1, 1);
    x = u32(w, 1);
    for (int i = 1; i < 140; i++) x = bin(w, VYRE_OP_ADD, x, x);
    push(w, &w->body, vyre_ir_let(w, "v", x));
    EXPECT_SOME(w, "limit-nodes", NULL);
    /* A million-level chain: rejected without descending (and without a stack overflow). */
    vyre_program *p = vyre_program_new("t", 1, 1, 1);
    struct vyre_expr *e = u32(p, 1);
    for (int i = 0; i < 1000000; i++) e = bin(p, VYRE_OP_ADD, e, u32(p, 1));
    push(p, &p->body, vyre_ir_let(p, "v", e));
    EXPECT_SOME(p, "limit-expr-depth", NULL);
}

static void test_node_limit(void) {
    vyre_program *p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_buffer(p, "o", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    for (int i = 0; i < 34000; i++) /* 3 nodes each */
        push(p, &p->body, vyre_ir_store(p, "o", u32(p, 0), u32(p, 1)));
    struct vyre_problem pr = EXPECT(p, "limit-nodes", NULL);
    CHECK_STR_CONTAINS(pr.path, "body[33333]");
}

/* ---- robustness and reporting ------------------------------------------------------------ */

static void test_null_children(void) {
    vyre_program *p = vyre_program_new("t", 1, 1, 1);
    vyre_ir_buffer(p, "o", VYRE_U32, VYRE_ACCESS_WRITE, 0);
    push(p, &p->body, vyre_ir_let(p, "v", NULL));
    push(p, &p->body, vyre_ir_store(p, "o", NULL, bin(p, VYRE_OP_ADD, NULL, u32(p, 1))));
    struct vyre_stmt *s = vyre_ir_if(p, NULL);
    push(p, &p->body, s);
    push(p, &p->body, vyre_ir_for(p, "i", nm(p, "v"), NULL, NULL));
    push(p, &p->body, vyre_ir_atomic(p, "r", VYRE_ATOMIC_CAS, "o", NULL, NULL, NULL));
    p->body.items[2]->then_.count = 3; /* a block whose list was lost */
    struct vyre_problems ps = {0};
    CHECK_EQ_U64(vyre_validate(p, &ps), VYRE_ERR_INVALID);
    CHECK(find(&ps, "missing-node", "body[0].value") != NULL);
    CHECK(find(&ps, "missing-node", "body[1].index") != NULL);
    CHECK(find(&ps, "missing-node", "body[1].value.a") != NULL);
    CHECK(find(&ps, "missing-node", "body[2].cond") != NULL);
    CHECK(find(&ps, "missing-node", "body[2].then") != NULL);
    CHECK(find(&ps, "missing-node", "body[3].to") != NULL);
    CHECK(find(&ps, "atomic-operands", "body[4]") != NULL);
    vyre_problems_free(&ps);
    /* A builder that ran out of memory: reported, status NOMEM. */
    p->oom = true;
    CHECK_EQ_U64(vyre_validate(p, &ps), VYRE_ERR_NOMEM);
    CHECK(find(&ps, "out-of-memory", "program") != NULL);
    vyre_problems_free(&ps);
    /* No problem list wanted. */
    CHECK_EQ_U64(vyre_validate(p, NULL), VYRE_ERR_NOMEM);
    CHECK_EQ_U64(vyre_validate(NULL, NULL), VYRE_ERR_ARG);
    vyre_program_free(p);
    /* Bad enums from a corrupted program. */
    p = vyre_program_new("t", 1, 1, 1);
    push(p, &p->body, vyre_ir_let(p, "v", vyre_ir_binary(p, VYRE_OP_NEG, u32(p, 1), u32(p, 2))));
    push(p, &p->body, vyre_ir_let(p, "w", vyre_ir_unary(p, VYRE_OP_ADD, u32(p, 1))));
    push(p, &p->body, vyre_ir_let(p, "z", vyre_ir_builtin(p, (enum vyre_builtin)9, 0)));
    push(p, &p->body, vyre_ir_simple(p, (enum vyre_stmt_kind)77));
    struct vyre_expr *lit = vyre_ir_lit(p, VYRE_U32, 1);
    lit->u.lit.bits = 1ull << 40;
    push(p, &p->body, vyre_ir_let(p, "k", lit));
    CHECK_EQ_U64(vyre_validate(p, &ps), VYRE_ERR_INVALID);
    CHECK_EQ_U64(ps.count, 5);
    CHECK(find(&ps, "invalid-op", "body[0].value") != NULL);
    CHECK(find(&ps, "invalid-op", "body[1].value") != NULL);
    CHECK(find(&ps, "invalid-builtin", "body[2].value") != NULL);
    CHECK(find(&ps, "invalid-statement", "body[3]") != NULL);
    CHECK(find(&ps, "invalid-literal", "body[4].value") != NULL);
    vyre_problems_free(&ps);
    vyre_program_free(p);
}

static void test_many_problems(void) {
    /* Several independent problems are all reported, in program order. */
    vyre_program *p = parse(HDR "(let v (add a n)) (store x 0u32 1.0f32) (break)"
                                "(if (lt (gid x) 2u32) (then (barrier))) (let v 2u32))");
    struct vyre_problems ps = {0};
    CHECK_EQ_U64(vyre_validate(p, &ps), VYRE_ERR_INVALID);
    CHECK_EQ_U64(ps.count, 5);
    if (ps.count == 5) {
        CHECK(strcmp(ps.items[0].code, "type-mismatch") == 0);
        CHECK(strcmp(ps.items[1].code, "store-read-only") == 0);
        CHECK(strcmp(ps.items[2].code, "break-outside-loop") == 0);
        CHECK(strcmp(ps.items[3].code, "shadowing") == 0);
        CHECK(strcmp(ps.items[3].path, "body[4]") == 0);
        CHECK(strcmp(ps.items[4].code, "barrier-divergent") == 0);
        CHECK(strcmp(ps.items[4].path, "body[3].then[0]") == 0);
    }
    /* The formatted error lists them all. */
    struct vyre_error err;
    vyre_error_clear(&err);
    vyre_problems_format(p, &ps, &err);
    CHECK_EQ_U64(err.status, VYRE_ERR_INVALID);
    CHECK_STR_CONTAINS(err.message, "invalid program 't': 5 problems:\n  body[0].value: add needs");
    CHECK_STR_CONTAINS(err.message, "\n  body[2]: break is only allowed inside a for loop. Fix: ");
    vyre_problems_free(&ps);
    /* ensure_valid formats the same way and leaves the program unvalidated. */
    vyre_error_clear(&err);
    CHECK_EQ_U64(vyre_ensure_valid(p, &err), VYRE_ERR_INVALID);
    CHECK_STR_CONTAINS(err.message, "invalid program 't': 5 problems:");
    CHECK_STR_CONTAINS(err.message, "Fix: ");
    CHECK(!p->validated);
    vyre_program_free(p);

    /* The list is capped. */
    p = vyre_program_new("t", 1, 1, 1);
    for (int i = 0; i < 500; i++) push(p, &p->body, vyre_ir_simple(p, VYRE_ST_BREAK));
    CHECK_EQ_U64(vyre_validate(p, &ps), VYRE_ERR_INVALID);
    CHECK_EQ_U64(ps.count, 201);
    CHECK(strcmp(ps.items[200].code, "too-many-problems") == 0);
    CHECK(strcmp(ps.items[199].path, "body[199]") == 0);
    vyre_error_clear(&err);
    vyre_problems_format(p, &ps, &err);
    CHECK_STR_CONTAINS(err.message, "201 problems:");
    CHECK_STR_CONTAINS(err.message, "more");
    CHECK(strlen(err.message) < VYRE_MSG_MAX);
    vyre_problems_free(&ps);
    vyre_program_free(p);
}

/* Worklists: valid uses, and each rule with its code and Fix. */
static void test_worklist_rules(void) {
    VALID_TEXT("(program w (workgroup 32) (buffer o u32 read_write) (worklist f u32) "
               "(let i (gid x)) (if (lt i (len f)) (then (let v (load f i)) (store o v 1u32) "
               "(push f (add v 1u32)))))");
    VALID_TEXT("(program w (workgroup 32) (worklist f f32) (push f (load f (cast i32 (gid x)))))");
    struct vyre_problem pr;
    pr = EXPECT(parse("(program w (workgroup 1) (worklist f u32) (push g 1u32))"),
                "undeclared-name", "body[0]");
    CHECK_STR_CONTAINS(pr.message, "no worklist named 'g'");
    CHECK_STR_CONTAINS(pr.fix, "(worklist NAME TYPE)");
    EXPECT(parse("(program w (workgroup 1) (buffer o u32 write) (push o 1u32))"), "not-a-worklist",
           "body[0]");
    pr = EXPECT(parse("(program w (workgroup 1) (worklist f u32) (push f 1i32))"), "type-mismatch",
                "body[0].value");
    CHECK_STR_CONTAINS(pr.fix, "(cast u32 ...)");
    EXPECT(parse("(program w (workgroup 1) (worklist f u32) (let x (load f 1.0f32)))"),
           "index-type", "body[0].value.index");
    EXPECT(parse("(program w (workgroup 1) (worklist f bool))"), "worklist-type", "decls[0]");
    EXPECT(parse("(program w (workgroup 1) (worklist f u32) (store f 0u32 1u32))"), "not-a-buffer",
           "body[0]");
    /* docs/GRID.md: worklists and grid statements go together; a converge may run on a
     * worklist (advanced at every round's end); its len is not grid-uniform */
    VALID_TEXT("(program w (workgroup 1) (worklist f u32) (grid_barrier))");
    VALID_TEXT("(program w (workgroup 4) (worklist f u32) (param m u32) (converge f m "
               "(let i (gid x)) (if (lt i (len f)) (then (push f (load f i))))))");
    pr = EXPECT(parse("(program w (workgroup 1) (worklist f u32) (buffer o u32 write) "
                      "(for k 0u32 (len f) (grid_barrier)))"),
                "grid-nonuniform", "body[0].to");
    CHECK_STR_CONTAINS(pr.message, "the length of a worklist");
    pr = EXPECT(parse("(program w (workgroup 1) (shared f u32 4) (param m u32) (converge f m))"),
                "converge-flag", "body[0]");
}

int main(void) {
    RUN_TEST(test_worklist_rules);
    RUN_TEST(test_saxpy_resolved);
    RUN_TEST(test_histogram_atomics);
    RUN_TEST(test_reduction);
    RUN_TEST(test_parsed_valid);
    RUN_TEST(test_types);
    RUN_TEST(test_no_cascade);
    RUN_TEST(test_names);
    RUN_TEST(test_set_store_atomic);
    RUN_TEST(test_break);
    RUN_TEST(test_barrier_divergent_if);
    RUN_TEST(test_barrier_taint);
    RUN_TEST(test_barrier_return_break);
    RUN_TEST(test_decls_limits);
    RUN_TEST(test_nesting_limit);
    RUN_TEST(test_expr_depth_limit);
    RUN_TEST(test_node_limit);
    RUN_TEST(test_null_children);
    RUN_TEST(test_many_problems);
    return harness_finish();
}
