/* ops.h — the one table of expression operators (X-macro). Every fact about an op
 * that more than one place needs lives in its row: the text-format name, arity,
 * operand class, result rule, whether it is approximate, and how the Lua DSL spells
 * it. From this table come enum vyre_op, the name table, vyre_op_is_unary/
 * is_compare/is_approx, the validator's operand and result typing, the generator's
 * op choices and the public vyre_op_info() that the Lua binding exposes as
 * core.ops(). Adding an op is one row here plus its meaning in src/core/ref/sem.c
 * and its lowering in src/codegen/ptx_ops.c (or ptx_approx.c); docs/OPS.md says
 * which tests fail until all three exist. */
#ifndef VYRE_OPS_H
#define VYRE_OPS_H

/* The rows are aligned by column so that the table reads as one: keep clang-format
 * (scripts/format.sh) out of this file. */
/* clang-format off */

/* Operand classes: the operand types an op takes (ARCHITECTURE.md §10, typing
 * rules). Binary ops always take two operands of the same type.
 *   NUMERIC      i32 u32 i64 u64 f32 f64
 *   INT          i32 u32 i64 u64
 *   INT_OR_BOOL  the integers and bool
 *   FLOAT        f32 f64
 *   BOOL         bool
 *   ANY          all seven types */
#define VYRE_OP_CLASSES(X) X(NUMERIC) X(INT) X(INT_OR_BOOL) X(FLOAT) X(BOOL) X(ANY)

enum vyre_op_class {
#define VYRE_OPC_ENUM_(C) VYRE_OPC_##C,
    VYRE_OP_CLASSES(VYRE_OPC_ENUM_)
#undef VYRE_OPC_ENUM_
    VYRE_OPC_COUNT
};

/* Result rules: SAME gives the operand type, BOOL gives bool. */
#define VYRE_OP_RESULTS(X) X(SAME) X(BOOL)

enum vyre_op_result {
#define VYRE_OPR_ENUM_(R) VYRE_OPR_##R,
    VYRE_OP_RESULTS(VYRE_OPR_ENUM_)
#undef VYRE_OPR_ENUM_
    VYRE_OPR_COUNT
};

/* X(ID, NAME, ARITY, CLASS, RESULT, APPROX, METHOD, METAMETHODS)
 *   ID           enum vyre_op is VYRE_OP_<ID>
 *   NAME         the name in the text format, "(NAME a b)"
 *   ARITY        1 or 2; every binary row comes before every unary row (ir.c checks
 *                this at compile time), because VYRE_OP_FIRST_UNARY splits the enum
 *   CLASS        operand class (above)
 *   RESULT       result rule (above)
 *   APPROX       1 for ops whose GPU result is within a ULP bound instead of
 *                bit-exact (docs/ULP.md); parity tests and the folder treat them apart
 *   METHOD       the DSL method on expressions, e:METHOD(b); differs from NAME where
 *                NAME is a Lua keyword (and, or, not)
 *   METAMETHODS  Lua metamethods that build the op, space separated, "" for none.
 *                Comparisons have none: Lua turns < <= > >= into booleans.
 * The row order is the enum order; appending a row keeps every existing value. */
#define VYRE_OPS(X)                                                          \
    /* binary */                                                             \
    X(ADD,      "add",      2, NUMERIC,     SAME, 0, "add",      "__add")    \
    X(SUB,      "sub",      2, NUMERIC,     SAME, 0, "sub",      "__sub")    \
    X(MUL,      "mul",      2, NUMERIC,     SAME, 0, "mul",      "__mul")    \
    X(DIV,      "div",      2, NUMERIC,     SAME, 0, "div",      "__div __idiv") \
    X(REM,      "rem",      2, INT,         SAME, 0, "rem",      "__mod")    \
    X(AND,      "and",      2, INT_OR_BOOL, SAME, 0, "band",     "__band")   \
    X(OR,       "or",       2, INT_OR_BOOL, SAME, 0, "bor",      "__bor")    \
    X(XOR,      "xor",      2, INT_OR_BOOL, SAME, 0, "bxor",     "__bxor")   \
    X(SHL,      "shl",      2, INT,         SAME, 0, "shl",      "__shl")    \
    X(SHR,      "shr",      2, INT,         SAME, 0, "shr",      "__shr")    \
    X(EQ,       "eq",       2, ANY,         BOOL, 0, "eq",       "")         \
    X(NE,       "ne",       2, ANY,         BOOL, 0, "ne",       "")         \
    X(LT,       "lt",       2, NUMERIC,     BOOL, 0, "lt",       "")         \
    X(LE,       "le",       2, NUMERIC,     BOOL, 0, "le",       "")         \
    X(GT,       "gt",       2, NUMERIC,     BOOL, 0, "gt",       "")         \
    X(GE,       "ge",       2, NUMERIC,     BOOL, 0, "ge",       "")         \
    X(MIN,      "min",      2, NUMERIC,     SAME, 0, "min",      "")         \
    X(MAX,      "max",      2, NUMERIC,     SAME, 0, "max",      "")         \
    X(LAND,     "land",     2, BOOL,        BOOL, 0, "land",     "")         \
    X(LOR,      "lor",      2, BOOL,        BOOL, 0, "lor",      "")         \
    X(MULHI,    "mulhi",    2, INT,         SAME, 0, "mulhi",    "")         \
    /* unary */                                                              \
    X(NEG,      "neg",      1, NUMERIC,     SAME, 0, "neg",      "__unm")    \
    X(NOT,      "not",      1, INT,         SAME, 0, "bnot",     "__bnot")   \
    X(LNOT,     "lnot",     1, BOOL,        BOOL, 0, "lnot",     "")         \
    X(ABS,      "abs",      1, NUMERIC,     SAME, 0, "abs",      "")         \
    X(SQRT,     "sqrt",     1, FLOAT,       SAME, 0, "sqrt",     "")         \
    X(RSQRT,    "rsqrt",    1, FLOAT,       SAME, 1, "rsqrt",    "")         \
    X(FLOOR,    "floor",    1, FLOAT,       SAME, 0, "floor",    "")         \
    X(CEIL,     "ceil",     1, FLOAT,       SAME, 0, "ceil",     "")         \
    X(ROUND,    "round",    1, FLOAT,       SAME, 0, "round",    "")         \
    X(TRUNC,    "trunc",    1, FLOAT,       SAME, 0, "trunc",    "")         \
    X(EXP,      "exp",      1, FLOAT,       SAME, 1, "exp",      "")         \
    X(EXP2,     "exp2",     1, FLOAT,       SAME, 1, "exp2",     "")         \
    X(LOG,      "log",      1, FLOAT,       SAME, 1, "log",      "")         \
    X(LOG2,     "log2",     1, FLOAT,       SAME, 1, "log2",     "")         \
    X(SIN,      "sin",      1, FLOAT,       SAME, 1, "sin",      "")         \
    X(COS,      "cos",      1, FLOAT,       SAME, 1, "cos",      "")         \
    X(TANH,     "tanh",     1, FLOAT,       SAME, 1, "tanh",     "")         \
    X(POPCOUNT, "popcount", 1, INT,         SAME, 0, "popcount", "")         \
    X(CLZ,      "clz",      1, INT,         SAME, 0, "clz",      "")         \
    X(CTZ,      "ctz",      1, INT,         SAME, 0, "ctz",      "")         \
    X(BREV,     "brev",     1, INT,         SAME, 0, "brev",     "")

/* clang-format on */
#endif
