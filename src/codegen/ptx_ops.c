/* ptx_ops.c — one small template per exact op (unary, binary, cast), each written so
 * the GPU result is bit-identical to the reference semantics of ARCHITECTURE.md §3:
 * every float op carries an explicit rounding modifier (.rn) so ptxas never
 * contracts a mul and an add into an fma, no .ftz anywhere (subnormals kept),
 * integer division guards zero and MIN/-1 with selects rather than trusting the
 * hardware, shift amounts are masked to the bit width, and float->int casts map
 * NaN to 0 explicitly. Which operand types each op takes comes from the op table
 * (ops.h); a type outside it is refused before any template runs. Approximate ops
 * are in ptx_approx.c. */
#include "ptx.h"

#include <stdio.h>

static void unsupported(struct ptx_ctx *c, const char *what, enum vyre_type t) {
    vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                  "ptx: %s on %s is not supported for sm_%u. Fix: use an operand type the op "
                  "accepts (see the typing rules)",
                  what, vyre_type_name(t), c->sm);
}

static bool is64(enum vyre_type t) { return vyre_type_bits(t) == 64; }

/* Type suffix for integer ops whose signedness does not matter (wrapping ops). */
static const char *isfx(enum vyre_type t) { return vyre_ptx_sfx(t); }

/* ---- unary --------------------------------------------------------------------- */

/* popc/clz give a u32 count; a 64-bit operand's result is widened back. */
static void count_op(struct ptx_ctx *c, const char *opc, enum vyre_type t, struct ptx_reg d,
                     struct ptx_reg a) {
    if (!is64(t)) {
        vyre_ptx_ins(c, "%s.b32 %s, %s", opc, d.s, a.s);
        return;
    }
    struct ptx_reg n = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "%s.b64 %s, %s", opc, n.s, a.s);
    vyre_ptx_ins(c, "cvt.u64.u32 %s, %s", d.s, n.s);
}

/* A row of ops.h whose lowering is missing here: tests/c/test_ops.c fails on it. */
static void no_template(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t) {
    vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                  "ptx: %s on %s has no PTX template for sm_%u. Fix: add its lowering to "
                  "src/codegen/ptx_ops.c (docs/OPS.md)",
                  vyre_op_name(op), vyre_type_name(t), c->sm);
}

/* The op table (ops.h) says which operand types an op takes; the validator enforces
 * it, and the templates here assume it, so anything outside is refused up front. */
static bool lowerable(struct ptx_ctx *c, enum vyre_op op, unsigned arity, enum vyre_type t) {
    if (vyre_op_arity(op) == arity && vyre_op_admits(op, t)) return true;
    unsupported(c, vyre_op_name(op), t);
    return false;
}

void vyre_ptx_unary(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t, struct ptx_reg d,
                    struct ptx_reg a) {
    if (!lowerable(c, op, 1, t)) return;
    bool fl = vyre_type_is_float(t);
    const char *b = vyre_ptx_bsfx(t);
    switch (op) {
    case VYRE_OP_NEG:
        vyre_ptx_ins(c, "neg%s %s, %s", fl ? vyre_ptx_sfx(t) : is64(t) ? ".s64" : ".s32", d.s, a.s);
        return;
    case VYRE_OP_NOT: vyre_ptx_ins(c, "not%s %s, %s", b, d.s, a.s); return;
    case VYRE_OP_LNOT: vyre_ptx_ins(c, "not.pred %s, %s", d.s, a.s); return;
    case VYRE_OP_ABS:
        if (fl || vyre_type_is_signed(t)) /* abs(MIN) wraps to MIN */
            vyre_ptx_ins(c, "abs%s %s, %s", vyre_ptx_sfx(t), d.s, a.s);
        else /* unsigned: identity */ vyre_ptx_ins(c, "mov%s %s, %s", b, d.s, a.s);
        return;
    case VYRE_OP_SQRT: vyre_ptx_ins(c, "sqrt.rn%s %s, %s", vyre_ptx_sfx(t), d.s, a.s); return;
    case VYRE_OP_FLOOR:
    case VYRE_OP_CEIL:
    case VYRE_OP_ROUND:
    case VYRE_OP_TRUNC: {
        /* Integral rounding in float: rmi floor, rpi ceil, rni half-to-even, rzi trunc. */
        const char *m = op == VYRE_OP_FLOOR   ? ".rmi"
                        : op == VYRE_OP_CEIL  ? ".rpi"
                        : op == VYRE_OP_ROUND ? ".rni"
                                              : ".rzi";
        vyre_ptx_ins(c, "cvt%s%s%s %s, %s", m, vyre_ptx_sfx(t), vyre_ptx_sfx(t), d.s, a.s);
        return;
    }
    case VYRE_OP_POPCOUNT: count_op(c, "popc", t, d, a); return;
    case VYRE_OP_CLZ: /* clz(0) = bit width, as §3 wants */ count_op(c, "clz", t, d, a); return;
    case VYRE_OP_CTZ: { /* ctz(x) = clz(brev(x)); ctz(0) = bit width */
        struct ptx_reg r = vyre_ptx_treg(c, t);
        vyre_ptx_ins(c, "brev%s %s, %s", b, r.s, a.s);
        count_op(c, "clz", t, d, r);
        return;
    }
    case VYRE_OP_BREV: vyre_ptx_ins(c, "brev%s %s, %s", b, d.s, a.s); return;
    default: break;
    }
    no_template(c, op, t);
}

/* ---- binary -------------------------------------------------------------------- */

/* Integer div/rem, total: x/0 = all ones (-1 signed), x%0 = x, MIN/-1 = MIN,
 * MIN%-1 = 0. The divisor is replaced by 1 in the special cases (which also yields
 * MIN/1 = MIN and MIN%1 = 0 directly), then the zero case is selected. */
static void divrem(struct ptx_ctx *c, bool rem, enum vyre_type t, struct ptx_reg d,
                   struct ptx_reg a, struct ptx_reg b) {
    const char *bs = vyre_ptx_bsfx(t);
    struct ptx_reg z = vyre_ptx_reg(c, PTX_P), bad = z;
    vyre_ptx_ins(c, "setp.eq%s %s, %s, 0", bs, z.s, b.s);
    if (vyre_type_is_signed(t)) {
        struct ptx_reg m = vyre_ptx_reg(c, PTX_P), n = vyre_ptx_reg(c, PTX_P);
        bad = vyre_ptx_reg(c, PTX_P);
        vyre_ptx_ins(c, "setp.eq%s %s, %s, %s", bs, m.s, a.s,
                     is64(t) ? "0x8000000000000000" : "0x80000000");
        vyre_ptx_ins(c, "setp.eq%s %s, %s, %s", bs, n.s, b.s,
                     is64(t) ? "0xffffffffffffffff" : "0xffffffff");
        vyre_ptx_ins(c, "and.pred %s, %s, %s", m.s, m.s, n.s);
        vyre_ptx_ins(c, "or.pred %s, %s, %s", bad.s, z.s, m.s);
    }
    struct ptx_reg safe = vyre_ptx_treg(c, t), q = vyre_ptx_treg(c, t);
    vyre_ptx_ins(c, "selp%s %s, 1, %s, %s", bs, safe.s, b.s, bad.s);
    vyre_ptx_ins(c, "%s%s %s, %s, %s", rem ? "rem" : "div", vyre_ptx_sfx(t), q.s, a.s, safe.s);
    if (rem) vyre_ptx_ins(c, "selp%s %s, %s, %s, %s", bs, d.s, a.s, q.s, z.s);
    else
        vyre_ptx_ins(c, "selp%s %s, %s, %s, %s", bs, d.s,
                     is64(t) ? "0xffffffffffffffff" : "0xffffffff", q.s, z.s);
}

/* Shifts: the amount is taken modulo the width; PTX wants a 32-bit amount. */
static void shift(struct ptx_ctx *c, bool left, enum vyre_type t, struct ptx_reg d,
                  struct ptx_reg a, struct ptx_reg b) {
    struct ptx_reg amt = vyre_ptx_reg(c, PTX_R);
    if (is64(t)) {
        struct ptx_reg m = vyre_ptx_reg(c, PTX_RD);
        vyre_ptx_ins(c, "and.b64 %s, %s, 63", m.s, b.s);
        vyre_ptx_ins(c, "cvt.u32.u64 %s, %s", amt.s, m.s);
    } else {
        vyre_ptx_ins(c, "and.b32 %s, %s, 31", amt.s, b.s);
    }
    if (left) vyre_ptx_ins(c, "shl%s %s, %s, %s", vyre_ptx_bsfx(t), d.s, a.s, amt.s);
    else /* shr.s is arithmetic, shr.u logical */
        vyre_ptx_ins(c, "shr%s %s, %s, %s", vyre_ptx_sfx(t), d.s, a.s, amt.s);
}

static const char *cmp_name(enum vyre_op op, bool fl) {
    switch (op) {
    case VYRE_OP_EQ: return "eq";
    case VYRE_OP_NE: return fl ? "neu" : "ne"; /* IEEE: NaN != x is true */
    case VYRE_OP_LT: return "lt";
    case VYRE_OP_LE: return "le";
    case VYRE_OP_GT: return "gt";
    default: return "ge";
    }
}

static void compare(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t, struct ptx_reg d,
                    struct ptx_reg a, struct ptx_reg b) {
    if (t == VYRE_BOOL) {
        if (op == VYRE_OP_NE) {
            vyre_ptx_ins(c, "xor.pred %s, %s, %s", d.s, a.s, b.s);
        } else if (op == VYRE_OP_EQ) {
            struct ptx_reg x = vyre_ptx_reg(c, PTX_P);
            vyre_ptx_ins(c, "xor.pred %s, %s, %s", x.s, a.s, b.s);
            vyre_ptx_ins(c, "not.pred %s, %s", d.s, x.s);
        } else {
            unsupported(c, vyre_op_name(op), t);
        }
        return;
    }
    vyre_ptx_ins(c, "setp.%s%s %s, %s, %s", cmp_name(op, vyre_type_is_float(t)), vyre_ptx_sfx(t),
                 d.s, a.s, b.s);
}

void vyre_ptx_binary(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t, struct ptx_reg d,
                     struct ptx_reg a, struct ptx_reg b) {
    if (!lowerable(c, op, 2, t)) return;
    bool fl = vyre_type_is_float(t);
    const char *sfx = vyre_ptx_sfx(t);
    /* Where the PTX mnemonic is the op's own name (add sub mul and or xor min max),
     * it is taken from the op table. */
    const char *name = vyre_op_name(op);
    switch (op) {
    case VYRE_OP_ADD:
    case VYRE_OP_SUB:
    case VYRE_OP_MUL:
        if (fl) /* explicit .rn: never contracted into an fma */
            vyre_ptx_ins(c, "%s.rn%s %s, %s, %s", name, sfx, d.s, a.s, b.s);
        else
            vyre_ptx_ins(c, "%s%s%s %s, %s, %s", name, op == VYRE_OP_MUL ? ".lo" : "", isfx(t), d.s,
                         a.s, b.s);
        return;
    case VYRE_OP_DIV:
        if (fl) vyre_ptx_ins(c, "div.rn%s %s, %s, %s", sfx, d.s, a.s, b.s);
        else divrem(c, false, t, d, a, b);
        return;
    case VYRE_OP_REM: divrem(c, true, t, d, a, b); return;
    case VYRE_OP_AND:
    case VYRE_OP_OR:
    case VYRE_OP_XOR:
        vyre_ptx_ins(c, "%s%s %s, %s, %s", name, vyre_ptx_bsfx(t), d.s, a.s, b.s);
        return;
    case VYRE_OP_SHL:
    case VYRE_OP_SHR: shift(c, op == VYRE_OP_SHL, t, d, a, b); return;
    case VYRE_OP_EQ:
    case VYRE_OP_NE:
    case VYRE_OP_LT:
    case VYRE_OP_LE:
    case VYRE_OP_GT:
    case VYRE_OP_GE: compare(c, op, t, d, a, b); return;
    case VYRE_OP_MIN:
    case VYRE_OP_MAX:
        /* PTX min/max.f32/.f64 return the non-NaN operand when one is NaN. */
        vyre_ptx_ins(c, "%s%s %s, %s, %s", name, sfx, d.s, a.s, b.s);
        return;
    case VYRE_OP_LAND:
    case VYRE_OP_LOR:
        vyre_ptx_ins(c, "%s.pred %s, %s, %s", op == VYRE_OP_LAND ? "and" : "or", d.s, a.s, b.s);
        return;
    case VYRE_OP_MULHI: vyre_ptx_ins(c, "mul.hi%s %s, %s, %s", sfx, d.s, a.s, b.s); return;
    default: break;
    }
    no_template(c, op, t);
}

/* ---- casts --------------------------------------------------------------------- */

void vyre_ptx_cast(struct ptx_ctx *c, enum vyre_type to, enum vyre_type from, struct ptx_reg d,
                   struct ptx_reg a) {
    const char *ts = vyre_ptx_sfx(to), *fs = vyre_ptx_sfx(from);
    if (to == from) {
        vyre_ptx_ins(c, "mov%s %s, %s", to == VYRE_BOOL ? ".pred" : ts, d.s, a.s);
        return;
    }
    if (from == VYRE_BOOL) { /* 0/1 */
        if (to == VYRE_F32) vyre_ptx_ins(c, "selp.f32 %s, 0f3F800000, 0f00000000, %s", d.s, a.s);
        else if (to == VYRE_F64)
            vyre_ptx_ins(c, "selp.f64 %s, 0d3FF0000000000000, 0d0000000000000000, %s", d.s, a.s);
        else vyre_ptx_ins(c, "selp%s %s, 1, 0, %s", vyre_ptx_bsfx(to), d.s, a.s);
        return;
    }
    if (to == VYRE_BOOL) { /* x != 0, NaN -> true (unordered compare) */
        if (from == VYRE_F32) vyre_ptx_ins(c, "setp.neu.f32 %s, %s, 0f00000000", d.s, a.s);
        else if (from == VYRE_F64)
            vyre_ptx_ins(c, "setp.neu.f64 %s, %s, 0d0000000000000000", d.s, a.s);
        else vyre_ptx_ins(c, "setp.ne%s %s, %s, 0", vyre_ptx_bsfx(from), d.s, a.s);
        return;
    }
    bool fi = vyre_type_is_float(from), ti = vyre_type_is_float(to);
    if (!fi && !ti) {
        if (vyre_type_bits(from) == vyre_type_bits(to)) /* i32 <-> u32, i64 <-> u64 */
            vyre_ptx_ins(c, "mov%s %s, %s", vyre_ptx_bsfx(to), d.s, a.s);
        else if (is64(to)) /* widen: sign-extends from i32, zero-extends from u32 */
            vyre_ptx_ins(c, "cvt%s%s %s, %s", ts, fs, d.s, a.s);
        else /* narrow: keep the low bits */ vyre_ptx_ins(c, "cvt.u32.u64 %s, %s", d.s, a.s);
        return;
    }
    if (!fi && ti) { /* int -> float, nearest even */
        vyre_ptx_ins(c, "cvt.rn%s%s %s, %s", ts, fs, d.s, a.s);
        return;
    }
    if (fi && ti) {
        if (to == VYRE_F64) vyre_ptx_ins(c, "cvt.f64.f32 %s, %s", d.s, a.s);
        else vyre_ptx_ins(c, "cvt.rn.f32.f64 %s, %s", d.s, a.s);
        return;
    }
    /* float -> int: cvt.rzi truncates and clamps to the destination range; NaN is
     * mapped to 0 explicitly rather than relying on the conversion's NaN rule. */
    struct ptx_reg r = vyre_ptx_treg(c, to), nan = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "cvt.rzi.sat%s%s %s, %s", ts, fs, r.s, a.s);
    vyre_ptx_ins(c, "setp.nan%s %s, %s, %s", fs, nan.s, a.s, a.s);
    vyre_ptx_ins(c, "selp%s %s, 0, %s, %s", vyre_ptx_bsfx(to), d.s, r.s, nan.s);
}
