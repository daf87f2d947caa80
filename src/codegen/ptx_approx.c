/* ptx_approx.c — templates for the approximate ops of ARCHITECTURE.md §3 (exp exp2
 * log log2 sin cos tanh rsqrt). Their results only need to be within a documented
 * ULP bound of the correctly rounded value; the bounds are measured on a GPU later.
 * No .ftz anywhere: subnormal inputs and outputs are kept.
 *
 * Which PTX each op uses:
 *
 *   op     f32                                          f64
 *   exp    mul.rn.f32 (x * log2 e), ex2.approx.f32      via f32 (see below)
 *   exp2   ex2.approx.f32                               via f32
 *   log    lg2.approx.f32, mul.rn.f32 (* ln 2)          via f32
 *   log2   lg2.approx.f32                               via f32
 *   sin    range reduction by 2 pi (cvt.rni.f32.f32 of  via f32
 *          x/(2 pi), two fma.rn.f32 with 2 pi split
 *          hi+lo), then sin.approx.f32
 *   cos    the same reduction, then cos.approx.f32      via f32
 *   tanh   sm_80+: tanh.approx.f32 (needs PTX ISA 7.0,   via f32
 *          which sm_70/sm_75 targets do not declare);
 *          sm_70, sm_75: emulated, |x| < 1/16:
 *          x + x^3 (-1/3 + 2/15 x^2) with fma.rn, else
 *          sign(x) (1 - 2 / (ex2.approx(2|x| log2 e) + 1))
 *   rsqrt  rsqrt.approx.f32                             exact formula: div.rn.f64(1,
 *                                                        sqrt.rn.f64(x)), within 1 ULP
 *
 * "via f32": PTX has no f64 ex2/lg2/sin/cos/tanh instruction, so the f64 op converts
 * to f32 (cvt.rn.f32.f64), runs the f32 template and widens back (cvt.f64.f32). The
 * result therefore has f32 accuracy (about 2^-22 relative, not f64 ULPs) and f32
 * range: exp of x > ~88.7 gives +inf, log of inputs outside the f32 range (or below
 * the smallest f32 subnormal) gives +-inf.
 *
 * First measurement (H200, sm_90, a few dozen special inputs; not the final bound):
 * f32 rsqrt 1, exp2 1, log2 2, log 3, exp 30, tanh 114 ULP; sin/cos have an
 * absolute (not relative) error bound near their zeros, and the 2 pi reduction
 * loses all accuracy once |x| * 2^-24 approaches 2 pi (|x| beyond ~1e5), so their
 * ULP distance is unbounded there. The f64 rows inherit f32 accuracy and range. */
#include "ptx.h"

#include <stdio.h>

#define F32_LOG2E "0f3FB8AA3B"   /* log2(e) */
#define F32_LN2 "0f3F317218"     /* ln(2) */
#define F32_2LOG2E "0f4038AA3B"  /* 2 log2(e) */
#define F32_2_15 "0f3E088889"    /* 2/15 */
#define F32_M1_3 "0fBEAAAAAB"    /* -1/3 */
#define F32_1_16 "0f3D800000"    /* 1/16 */
#define F32_INV_2PI "0f3E22F983" /* 1/(2 pi) */
#define F32_M2PI_HI "0fC0C90FDB" /* -(2 pi) rounded to f32 */
#define F32_M2PI_LO "0f343BBD2E" /* -(2 pi - that), the remainder */
#define F32_ONE "0f3F800000"
#define F32_TWO "0f40000000"

/* tanh for targets without tanh.approx: a short odd series near zero (where
 * 1 - 2/(e+1) cancels) and the exponential form elsewhere; inf -> +-1, NaN stays
 * NaN (it fails the |x| < 1/16 test and propagates through ex2). */
static void tanh_emulated(struct ptx_ctx *c, struct ptx_reg d, struct ptx_reg a)
{
    struct ptx_reg ax = vyre_ptx_reg(c, PTX_F), small = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg x2 = vyre_ptx_reg(c, PTX_F), q = vyre_ptx_reg(c, PTX_F);
    struct ptx_reg q2 = vyre_ptx_reg(c, PTX_F), rs = vyre_ptx_reg(c, PTX_F);
    struct ptx_reg y = vyre_ptx_reg(c, PTX_F), e = vyre_ptx_reg(c, PTX_F);
    struct ptx_reg e1 = vyre_ptx_reg(c, PTX_F), h = vyre_ptx_reg(c, PTX_F);
    struct ptx_reg t = vyre_ptx_reg(c, PTX_F), rl = vyre_ptx_reg(c, PTX_F);
    struct ptx_reg bx = vyre_ptx_reg(c, PTX_R), sg = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg bt = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "abs.f32 %s, %s", ax.s, a.s);
    vyre_ptx_ins(c, "setp.lt.f32 %s, %s, " F32_1_16, small.s, ax.s);
    vyre_ptx_ins(c, "mul.rn.f32 %s, %s, %s", x2.s, a.s, a.s);
    vyre_ptx_ins(c, "fma.rn.f32 %s, %s, " F32_2_15 ", " F32_M1_3, q.s, x2.s);
    vyre_ptx_ins(c, "mul.rn.f32 %s, %s, %s", q2.s, q.s, x2.s);
    vyre_ptx_ins(c, "fma.rn.f32 %s, %s, %s, %s", rs.s, q2.s, a.s, a.s);
    vyre_ptx_ins(c, "mul.rn.f32 %s, %s, " F32_2LOG2E, y.s, ax.s);
    vyre_ptx_ins(c, "ex2.approx.f32 %s, %s", e.s, y.s);
    vyre_ptx_ins(c, "add.rn.f32 %s, %s, " F32_ONE, e1.s, e.s);
    vyre_ptx_ins(c, "div.rn.f32 %s, " F32_TWO ", %s", h.s, e1.s);
    vyre_ptx_ins(c, "sub.rn.f32 %s, " F32_ONE ", %s", t.s, h.s);
    vyre_ptx_ins(c, "mov.b32 %s, %s", bx.s, a.s);
    vyre_ptx_ins(c, "and.b32 %s, %s, 0x80000000", sg.s, bx.s);
    vyre_ptx_ins(c, "mov.b32 %s, %s", bt.s, t.s);
    vyre_ptx_ins(c, "or.b32 %s, %s, %s", bt.s, bt.s, sg.s);
    vyre_ptx_ins(c, "mov.b32 %s, %s", rl.s, bt.s);
    vyre_ptx_ins(c, "selp.f32 %s, %s, %s, %s", d.s, rs.s, rl.s, small.s);
}

static void approx_f32(struct ptx_ctx *c, enum vyre_op op, struct ptx_reg d, struct ptx_reg a)
{
    switch (op) {
    case VYRE_OP_EXP: {
        struct ptx_reg t = vyre_ptx_reg(c, PTX_F);
        vyre_ptx_ins(c, "mul.rn.f32 %s, %s, " F32_LOG2E, t.s, a.s);
        vyre_ptx_ins(c, "ex2.approx.f32 %s, %s", d.s, t.s);
        return;
    }
    case VYRE_OP_EXP2: vyre_ptx_ins(c, "ex2.approx.f32 %s, %s", d.s, a.s); return;
    case VYRE_OP_LOG: {
        struct ptx_reg t = vyre_ptx_reg(c, PTX_F);
        vyre_ptx_ins(c, "lg2.approx.f32 %s, %s", t.s, a.s);
        vyre_ptx_ins(c, "mul.rn.f32 %s, %s, " F32_LN2, d.s, t.s);
        return;
    }
    case VYRE_OP_LOG2: vyre_ptx_ins(c, "lg2.approx.f32 %s, %s", d.s, a.s); return;
    case VYRE_OP_SIN:
    case VYRE_OP_COS: {
        /* sin/cos.approx are only accurate on [-pi, pi]: reduce first (Cody-Waite). */
        struct ptx_reg q = vyre_ptx_reg(c, PTX_F), k = vyre_ptx_reg(c, PTX_F);
        struct ptx_reg r1 = vyre_ptx_reg(c, PTX_F), r = vyre_ptx_reg(c, PTX_F);
        vyre_ptx_ins(c, "mul.rn.f32 %s, %s, " F32_INV_2PI, q.s, a.s);
        vyre_ptx_ins(c, "cvt.rni.f32.f32 %s, %s", k.s, q.s);
        vyre_ptx_ins(c, "fma.rn.f32 %s, %s, " F32_M2PI_HI ", %s", r1.s, k.s, a.s);
        vyre_ptx_ins(c, "fma.rn.f32 %s, %s, " F32_M2PI_LO ", %s", r.s, k.s, r1.s);
        vyre_ptx_ins(c, "%s.approx.f32 %s, %s", op == VYRE_OP_SIN ? "sin" : "cos", d.s, r.s);
        return;
    }
    case VYRE_OP_RSQRT: vyre_ptx_ins(c, "rsqrt.approx.f32 %s, %s", d.s, a.s); return;
    case VYRE_OP_TANH:
        if (c->sm >= 80) vyre_ptx_ins(c, "tanh.approx.f32 %s, %s", d.s, a.s);
        else tanh_emulated(c, d, a);
        return;
    default:
        vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                      "ptx: %s on f32 is not an approximate op for sm_%u. Fix: report this as "
                      "a codegen bug", vyre_op_name(op), c->sm);
        return;
    }
}

void vyre_ptx_approx(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t, struct ptx_reg d,
                     struct ptx_reg a)
{
    if (t == VYRE_F32) {
        approx_f32(c, op, d, a);
        return;
    }
    if (t != VYRE_F64) {
        vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                      "ptx: %s on %s is not supported for sm_%u. Fix: %s takes f32 or f64",
                      vyre_op_name(op), vyre_type_name(t), c->sm, vyre_op_name(op));
        return;
    }
    if (op == VYRE_OP_RSQRT) {
        struct ptx_reg s = vyre_ptx_reg(c, PTX_FD);
        vyre_ptx_ins(c, "sqrt.rn.f64 %s, %s", s.s, a.s);
        vyre_ptx_ins(c, "div.rn.f64 %s, 0d3FF0000000000000, %s", d.s, s.s);
        return;
    }
    struct ptx_reg n = vyre_ptx_reg(c, PTX_F), r = vyre_ptx_reg(c, PTX_F);
    vyre_ptx_ins(c, "cvt.rn.f32.f64 %s, %s", n.s, a.s);
    approx_f32(c, op, r, n);
    vyre_ptx_ins(c, "cvt.f64.f32 %s, %s", d.s, r.s);
}
