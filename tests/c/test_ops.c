/* test_ops.c — the operator table (src/core/ir/ops.h) against everything it drives.
 * For every row and every operand type its class admits: the reference semantics
 * (vyre_sem_op) gives a result on sample values and the interpreter stores the same,
 * the validator accepts (op a b) with the row's result type, and PTX for sm_70 and
 * sm_90 is emitted and assembled by ptxas. For every type the class does not admit,
 * the validator rejects the op. So a row added without semantics in sem.c, or
 * without a lowering in ptx_ops.c / ptx_approx.c, fails here (docs/OPS.md). Also
 * checks the public accessors that the Lua binding reads (vyre_op_info, reserved
 * names, atomic names). ptxas missing is a failure, as in test_ptx.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ir.h"
#include "sem.h"

static const enum vyre_type all_types[] = {VYRE_BOOL, VYRE_I32, VYRE_U32, VYRE_I64,
                                           VYRE_U64,  VYRE_F32, VYRE_F64};
#define NTYPES (sizeof all_types / sizeof all_types[0])

/* ---- sample operand values per type (bits, as vyre_bits hold them) ------------- */

static const vyre_bits s_bool[] = {0, 1};
static const vyre_bits s_32[] = {0, 1, 2, 31, 12345, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu};
static const vyre_bits s_64[] = {0,
                                 1,
                                 2,
                                 63,
                                 UINT64_C(0x123456789),
                                 UINT64_C(0x7FFFFFFFFFFFFFFF),
                                 UINT64_C(0x8000000000000000),
                                 ~UINT64_C(0)};
static const vyre_bits s_f32[] = {0,
                                  0x80000000u /* -0 */,
                                  0x3FC00000u /* 1.5 */,
                                  0xC0100000u /* -2.25 */,
                                  1 /* subnormal */,
                                  0x7F800000u /* inf */,
                                  0xFF800000u /* -inf */,
                                  0x7FC00000u /* NaN */,
                                  0x7149F2CAu /* 1e30 */};
static const vyre_bits s_f64[] = {0,
                                  UINT64_C(0x8000000000000000),
                                  UINT64_C(0x3FF8000000000000),
                                  UINT64_C(0xC002000000000000),
                                  1,
                                  UINT64_C(0x7FF0000000000000),
                                  UINT64_C(0xFFF0000000000000),
                                  UINT64_C(0x7FF8000000000000),
                                  UINT64_C(0x46293E5939A08CEA)};

static const vyre_bits *samples(enum vyre_type t, size_t *n) {
#define S_(arr) (*n = sizeof arr / sizeof arr[0], arr)
    switch (t) {
    case VYRE_BOOL: return S_(s_bool);
    case VYRE_I32:
    case VYRE_U32: return S_(s_32);
    case VYRE_I64:
    case VYRE_U64: return S_(s_64);
    case VYRE_F32: return S_(s_f32);
    default: return S_(s_f64);
    }
#undef S_
}

/* The result bits fit the result type: bool 0/1, 32-bit types zero-extended. */
static bool fits(enum vyre_type rt, vyre_bits b) {
    if (rt == VYRE_BOOL) return b <= 1u;
    return vyre_type_bits(rt) == 64 || (b >> 32) == 0;
}

static enum vyre_type expected_result(const struct vyre_op_info *info, enum vyre_type t) {
    return strcmp(info->result, "BOOL") == 0 ? VYRE_BOOL : t;
}

static bool info_of(enum vyre_op op, struct vyre_op_info *info) {
    bool ok = vyre_op_info((unsigned)op, info);
    CHECK(ok);
    return ok;
}

/* ---- tiny programs ------------------------------------------------------------ */

/* (program NAME (workgroup 1) (buffer o RT write 1) (param a T) [(param b T)]
 *   (store o 0u32 (OP a [b])))  — or with (let v ...) when rt is VOID. */
static vyre_program *tiny(enum vyre_op op, enum vyre_type t, enum vyre_type rt,
                          struct vyre_expr **out_e) {
    char name[64];
    snprintf(name, sizeof name, "op_%s_%s", vyre_op_name(op), vyre_type_name(t));
    vyre_program *p = vyre_program_new(name, 1, 1, 1);
    if (!p) return NULL;
    if (rt != VYRE_VOID) vyre_ir_buffer(p, "o", rt, VYRE_ACCESS_WRITE, 1);
    vyre_ir_param(p, "a", t);
    bool unary = vyre_op_arity(op) == 1;
    if (!unary) vyre_ir_param(p, "b", t);
    struct vyre_expr *e = unary ? vyre_ir_unary(p, op, vyre_ir_name(p, "a"))
                                : vyre_ir_binary(p, op, vyre_ir_name(p, "a"), vyre_ir_name(p, "b"));
    struct vyre_stmt *s = rt != VYRE_VOID ? vyre_ir_store(p, "o", vyre_ir_lit(p, VYRE_U32, 0), e)
                                          : vyre_ir_let(p, "v", e);
    CHECK(e != NULL && s != NULL);
    CHECK(vyre_ir_push(p, &p->body, s));
    if (out_e) *out_e = e;
    return p;
}

static enum vyre_status validate(vyre_program *p, char code[48]) {
    struct vyre_problems probs = {0};
    enum vyre_status st = vyre_validate(p, &probs);
    code[0] = '\0';
    if (probs.count) snprintf(code, 48, "%s", probs.items[0].code);
    vyre_problems_free(&probs);
    return st;
}

/* ---- the table itself ----------------------------------------------------------- */

static void test_table(void) {
    CHECK_EQ_U64(vyre_op_count(), VYRE_OP_COUNT);
    struct vyre_op_info info;
    CHECK(!vyre_op_info(VYRE_OP_COUNT, &info));
    for (unsigned i = 0; i < VYRE_OP_COUNT; i++) {
        enum vyre_op op = (enum vyre_op)i;
        if (!info_of(op, &info)) continue;
        harness_current = info.name;
        CHECK(strcmp(info.name, vyre_op_name(op)) == 0);
        enum vyre_op back;
        CHECK(vyre_op_from_name(info.name, &back) && back == op);
        CHECK(info.arity == 1 || info.arity == 2);
        CHECK(vyre_op_is_unary(op) == (info.arity == 1));
        CHECK((i < (unsigned)VYRE_OP_FIRST_UNARY) == (info.arity == 2));
        CHECK(vyre_op_is_approx(op) == info.approximate);
        CHECK(vyre_op_class_name(info.operand_class) != NULL &&
              strcmp(vyre_op_class_name(info.operand_class), info.operands) == 0);
        CHECK(strcmp(info.result, "SAME") == 0 || strcmp(info.result, "BOOL") == 0);
        CHECK(info.dsl_method && info.dsl_method[0] != '\0');
        CHECK(info.dsl_metamethods != NULL);
        if (info.dsl_metamethods[0]) CHECK(strncmp(info.dsl_metamethods, "__", 2) == 0);
        /* approximate ops are float ops: ptx_approx.c builds f32/f64 programs only */
        if (info.approximate) CHECK(strcmp(info.operands, "FLOAT") == 0);
        size_t admitted = 0;
        for (size_t k = 0; k < NTYPES; k++)
            admitted += vyre_op_class_admits(info.operand_class, all_types[k]);
        CHECK(admitted > 0);
        /* names and DSL methods are unique */
        for (unsigned j = 0; j < i; j++) {
            struct vyre_op_info other;
            if (!vyre_op_info(j, &other)) continue;
            CHECK(strcmp(other.name, info.name) != 0);
            CHECK(strcmp(other.dsl_method, info.dsl_method) != 0);
        }
    }
    CHECK(vyre_op_class_name((unsigned)vyre_op_class_count()) == NULL);
    CHECK(!vyre_op_class_admits((unsigned)vyre_op_class_count(), VYRE_I32));
}

/* ---- semantics: sem.c and the interpreter ------------------------------------------ */

static void check_sem(enum vyre_op op, enum vyre_type t, enum vyre_type rt) {
    size_t n;
    const vyre_bits *v = samples(t, &n);
    bool unary = vyre_op_arity(op) == 1;
    size_t bad = 0, unfit = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < (unary ? 1 : n); j++) {
            vyre_bits r = 0;
            if (!vyre_sem_op(op, t, v[i], unary ? 0 : v[j], &r)) bad++;
            else if (!fits(rt, r)) unfit++;
        }
    if (bad || unfit)
        harness_fail(__FILE__, __LINE__,
                     "%s on %s: %zu operands without semantics in sem.c, "
                     "%zu results that do not fit %s",
                     vyre_op_name(op), vyre_type_name(t), bad, unfit, vyre_type_name(rt));
    harness_checks++;

    /* The interpreter stores what sem.c says (last sample pair, a NaN/-inf for floats). */
    vyre_program *p = tiny(op, t, rt, NULL);
    if (!p) return;
    vyre_bits want = 0, params[2] = {v[n - 1], v[n / 2]};
    CHECK(vyre_sem_op(op, t, params[0], params[1], &want));
    uint64_t word = 0xA5A5A5A5A5A5A5A5u;
    struct vyre_buffer_arg o = {&word, 1};
    struct vyre_run_args args = {&o, 1, params, unary ? 1u : 2u, {1, 1, 1}};
    struct vyre_error err;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_ref_run(p, &args, NULL, &err);
    if (st != VYRE_OK) fprintf(stderr, "%s: %s\n", vyre_program_name(p), err.message);
    CHECK_EQ_U64(st, VYRE_OK);
    vyre_bits got = vyre_type_size(rt) == 8 ? word : (word & 0xFFFFFFFFu);
    if (rt == VYRE_BOOL) got = got != 0;
    /* A NaN may have any bits (§3); both sides come from the same function anyway. */
    CHECK_EQ_U64(got, want);
    vyre_program_free(p);
}

/* ---- validator: admitted types pass with the row's result type, others fail ------- */

static void check_validator(enum vyre_op op, const struct vyre_op_info *info, enum vyre_type t,
                            bool admitted) {
    struct vyre_expr *e = NULL;
    vyre_program *p = tiny(op, t, VYRE_VOID, &e);
    if (!p) return;
    char code[48];
    enum vyre_status st = validate(p, code);
    if (admitted) {
        if (st != VYRE_OK)
            harness_fail(__FILE__, __LINE__,
                         "validator rejects (%s a) on %s (%s) although the "
                         "class %s admits it",
                         info->name, vyre_type_name(t), code, info->operands);
        else CHECK_EQ_U64(e->type, expected_result(info, t));
        harness_checks++;
    } else {
        CHECK_EQ_U64(st, VYRE_ERR_INVALID);
        CHECK(strcmp(code, "operand-type") == 0 || strcmp(code, "rem-float") == 0);
        /* sem.c has no meaning for it either: nothing outside the class runs silently */
        vyre_bits r;
        CHECK(!vyre_sem_op(op, t, 1, 1, &r));
    }
    vyre_program_free(p);
}

/* ---- PTX -------------------------------------------------------------------------------- */

static const unsigned sms[] = {70, 90};
#define NSMS (sizeof sms / sizeof sms[0])

/* Emits the tiny program of (op, t) for every target into the batches. */
static void check_ptx(enum vyre_op op, enum vyre_type t, enum vyre_type rt,
                      struct harness_batch *b) {
    for (size_t s = 0; s < NSMS; s++) {
        vyre_program *p = tiny(op, t, rt, NULL);
        if (!p) return;
        struct vyre_ptx_options o = {.sm = sms[s]};
        struct vyre_error err;
        vyre_error_clear(&err);
        char *ptx = NULL;
        size_t n = 0;
        enum vyre_status st = vyre_ptx_emit(p, &o, &ptx, &n, &err);
        if (st != VYRE_OK)
            harness_fail(__FILE__, __LINE__, "no PTX for %s on %s, sm_%u: %s", vyre_op_name(op),
                         vyre_type_name(t), sms[s], err.message);
        harness_checks++;
        if (ptx) harness_batch_add(&b[s], ptx);
        vyre_free(ptx);
        vyre_program_free(p);
    }
}

/* Assembles each target's module; on failure, each (op, type) alone, to name it. */
static void assemble(struct harness_batch *b) {
    for (size_t s = 0; s < NSMS; s++) {
        CHECK(b[s].text != NULL && b[s].n > 0);
        if (!b[s].text) continue;
        if (harness_ptxas_ok(b[s].text, sms[s], false)) {
            harness_checks++;
        } else {
            for (unsigned i = 0; i < VYRE_OP_COUNT; i++)
                for (size_t k = 0; k < NTYPES; k++) {
                    enum vyre_op op = (enum vyre_op)i;
                    enum vyre_type t = all_types[k];
                    if (!vyre_op_admits(op, t)) continue;
                    vyre_program *p = tiny(op, t, vyre_op_result_type(op, t), NULL);
                    struct vyre_ptx_options o = {.sm = sms[s]};
                    char *ptx = NULL;
                    size_t n = 0;
                    if (p && vyre_ptx_emit(p, &o, &ptx, &n, NULL) == VYRE_OK &&
                        !harness_ptxas_ok(ptx, sms[s], true))
                        harness_fail(__FILE__, __LINE__, "ptxas rejects %s on %s for sm_%u",
                                     vyre_op_name(op), vyre_type_name(t), sms[s]);
                    vyre_free(ptx);
                    vyre_program_free(p);
                }
        }
        free(b[s].text);
    }
}

/* ---- every row, every type ------------------------------------------------------------ */

static void test_every_op_every_type(void) {
    struct harness_batch b[NSMS];
    memset(b, 0, sizeof b);
    size_t pairs = 0;
    for (unsigned i = 0; i < VYRE_OP_COUNT; i++) {
        enum vyre_op op = (enum vyre_op)i;
        struct vyre_op_info info;
        if (!info_of(op, &info)) continue;
        for (size_t k = 0; k < NTYPES; k++) {
            enum vyre_type t = all_types[k];
            bool admitted = vyre_op_class_admits(info.operand_class, t);
            CHECK(admitted == vyre_op_admits(op, t));
            check_validator(op, &info, t, admitted);
            if (!admitted) {
                CHECK_EQ_U64(vyre_op_result_type(op, t), VYRE_VOID);
                continue;
            }
            enum vyre_type rt = expected_result(&info, t);
            CHECK_EQ_U64(vyre_op_result_type(op, t), rt);
            check_sem(op, t, rt);
            check_ptx(op, t, rt, b);
            pairs++;
        }
    }
    harness_current = "test_every_op_every_type";
    /* every pair got a kernel per target */
    for (size_t s = 0; s < NSMS; s++) CHECK_EQ_U64(b[s].n, pairs);
    assemble(b);
    printf("ops: %u ops, %zu (op, type) pairs, each run, validated, emitted and assembled for "
           "sm_70 and sm_90\n",
           (unsigned)VYRE_OP_COUNT, pairs);
}

/* ---- reserved names and atomics ---------------------------------------------------------- */

static void test_reserved_names(void) {
    size_t n = 0;
    const char *const *names = vyre_reserved_names(&n);
    CHECK(names != NULL && n > 0);
    /* every type name is reserved, and the literal spellings the lexer knows */
    static const char *const must[] = {"true",   "false",  "inf",    "nan",
                                       "inff32", "inff64", "nanf32", "nanf64"};
    for (size_t k = 0; k < NTYPES + sizeof must / sizeof must[0]; k++) {
        const char *w = k < NTYPES ? vyre_type_name(all_types[k]) : must[k - NTYPES];
        bool found = false;
        for (size_t i = 0; i < n; i++) found = found || strcmp(names[i], w) == 0;
        if (!found) harness_fail(__FILE__, __LINE__, "'%s' is not a reserved name", w);
        harness_checks++;
    }
    /* the validator rejects each of them as a variable name, with the list's words */
    for (size_t i = 0; i < n; i++) {
        vyre_program *p = vyre_program_new("t", 1, 1, 1);
        CHECK(vyre_ir_push(p, &p->body, vyre_ir_let(p, names[i], vyre_ir_lit(p, VYRE_U32, 1))));
        char code[48];
        CHECK_EQ_U64(validate(p, code), VYRE_ERR_INVALID);
        if (strcmp(code, "reserved-name") != 0)
            harness_fail(__FILE__, __LINE__, "'%s' as a name: %s, not reserved-name", names[i],
                         code);
        harness_checks++;
        vyre_program_free(p);
    }
}

static void test_atomics(void) {
    CHECK_EQ_U64(vyre_atomic_count(), VYRE_ATOMIC_COUNT);
    for (unsigned i = 0; i < VYRE_ATOMIC_COUNT; i++) {
        const char *name = vyre_atomic_op_name(i);
        CHECK(name != NULL);
        enum vyre_atomic_op back;
        CHECK(name && vyre_atomic_from_name(name, &back) && back == (enum vyre_atomic_op)i);
        CHECK(name && strcmp(name, vyre_atomic_name((enum vyre_atomic_op)i)) == 0);
    }
    CHECK(vyre_atomic_op_name(VYRE_ATOMIC_COUNT) == NULL);
}

int main(void) {
    RUN_TEST(test_table);
    RUN_TEST(test_every_op_every_type);
    RUN_TEST(test_reserved_names);
    RUN_TEST(test_atomics);
    return harness_finish();
}
