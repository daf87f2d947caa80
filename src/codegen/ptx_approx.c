/* ptx_approx.c — the approximate ops of ARCHITECTURE.md §3 (exp exp2 log log2 sin cos
 * tanh rsqrt), f32 and f64. Each op is built as a straight-line "va" program
 * (ptx_approx.h) of exactly rounded IEEE operations and then printed as PTX; the C
 * test tests/c/test_approx.c evaluates the same program on the CPU, so the ULP bounds
 * in docs/ULP.md are proved for the code the GPU runs, bit for bit. No hardware
 * approximation (ex2/lg2/sin/cos/tanh/rsqrt .approx) is used, no .ftz anywhere
 * (subnormal inputs and results are kept), no branches (selp only).
 *
 *   exp    clamp x to [-110, 100] (f64 [-760, 720]); n = rint(x log2 e);
 *          r = x - n ln2 with ln2 in two parts (Cody-Waite, fma); e^r by the Taylor
 *          polynomial to degree 7 (f64: 13) in Horner form with fma; times 2^(n>>1)
 *          times 2^(n - (n>>1)) built from integer exponent bits, so results that
 *          overflow give inf and subnormal results are rounded once. NaN selected.
 *   exp2   the same with n = rint(x), r = (x - n) ln2 (x - n is exact).
 *   log    x = 2^e m with m in [sqrt(1/2), sqrt(2)) from the bits (subnormal x is
 *          scaled by 2^24 / 2^54 first); f = m - 1 (exact); s = f / (2 + f);
 *          log(1+f) = f - s (f - s^2 R(s^2)) with R the atanh series 2/3 + 2/5 z + ...
 *          (4 terms f32, 10 terms f64); result e ln2_hi + ((e ln2_lo - h) + f).
 *          x = 0: -inf, x < 0: NaN, +inf: +inf, NaN: NaN.
 *   log2   the same split; e + (f log2e_hi + (f log2e_lo - h log2e_hi)).
 *   sin    k = rint(x 2/pi), r = x - k pi/2. f32: the reduction runs in f64 (two
 *   cos    fma with pi/2 in two f64 parts) and r is split into f32 hi + lo. f64:
 *          three fma with pi/2 in three parts. Then Taylor polynomials on
 *          [-pi/4, pi/4] (sin to r^9 / r^17, cos to r^10 / r^16) and the quadrant
 *          k mod 4 picks +-sin / +-cos. sin keeps x when |x| < 2^-12 (2^-27).
 *   tanh   a = |x|; a < 0.55: E = expm1(a) (Taylor to a^9 / a^15), then
 *          tanh = E(E+2) / (E(E+2) + 2) (only positive terms, no cancellation),
 *          the quotient refined by one fma residual step;
 *          a >= 0.55: 1 - 2 / (exp(2a) + 1) with the exp above; sign copied from x.
 *   rsqrt  div.rn(1, sqrt.rn(x)).
 *
 * The ranges where the bounds hold and the bounds themselves are in docs/ULP.md. */
#include "ptx.h"
#include "ptx_approx.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- building va programs ---------------------------------------------------- */

static uint16_t ins(struct va_prog *p, enum va_op op, enum va_kind kind, uint16_t a, uint16_t b,
                    uint16_t c, uint64_t k) {
    if (p->n >= VA_MAX_INS) {
        p->overflow = true;
        return 0;
    }
    struct va_ins *i = &p->ins[p->n];
    i->op = (uint8_t)op;
    i->kind = (uint8_t)kind;
    i->a = a;
    i->b = b;
    i->c = c;
    i->k = k;
    return p->n++;
}

static enum va_kind kind_of(const struct va_prog *p, uint16_t v) {
    return (enum va_kind)p->ins[v].kind;
}

static bool is_wide(const struct va_prog *p, uint16_t v) {
    enum va_kind k = kind_of(p, v);
    return k == VA_F64 || k == VA_I64;
}

/* A float constant of the given width. f32 constants are written below with at most
 * 24 significant bits, so the conversion is exact. */
static uint16_t fk(struct va_prog *p, bool wide, double v) {
    uint64_t bits;
    if (wide) {
        memcpy(&bits, &v, sizeof bits);
        return ins(p, VA_FK, VA_F64, 0, 0, 0, bits);
    }
    float f = (float)v;
    uint32_t b32;
    memcpy(&b32, &f, sizeof b32);
    return ins(p, VA_FK, VA_F32, 0, 0, 0, b32);
}

static uint16_t ik(struct va_prog *p, bool wide, int64_t v) {
    return ins(p, VA_IK, wide ? VA_I64 : VA_I32, 0, 0, 0, (uint64_t)v);
}

static uint16_t op1(struct va_prog *p, enum va_op op, uint16_t a) {
    return ins(p, op, kind_of(p, a), a, 0, 0, 0);
}

static uint16_t op2(struct va_prog *p, enum va_op op, uint16_t a, uint16_t b) {
    return ins(p, op, kind_of(p, a), a, b, 0, 0);
}

static uint16_t fma3(struct va_prog *p, uint16_t a, uint16_t b, uint16_t c) {
    return ins(p, VA_FMA, kind_of(p, a), a, b, c, 0);
}

static uint16_t cmp(struct va_prog *p, enum va_op op, uint16_t a, uint16_t b) {
    return ins(p, op, VA_PRED, a, b, 0, 0);
}

static uint16_t selp(struct va_prog *p, uint16_t pred, uint16_t a, uint16_t b) {
    return ins(p, VA_SELP, kind_of(p, a), pred, a, b, 0);
}

static uint16_t cvt(struct va_prog *p, enum va_op op, uint16_t a) {
    bool w = is_wide(p, a);
    enum va_kind k = op == VA_F2B     ? (w ? VA_I64 : VA_I32)
                     : op == VA_B2F   ? (w ? VA_F64 : VA_F32)
                     : op == VA_F2I   ? (w ? VA_I64 : VA_I32)
                     : op == VA_I2F   ? (w ? VA_F64 : VA_F32)
                     : op == VA_WIDEN ? VA_F64
                                      : VA_F32;
    return ins(p, op, k, a, 0, 0, 0);
}

static uint16_t shift(struct va_prog *p, enum va_op op, uint16_t a, unsigned by) {
    return ins(p, op, kind_of(p, a), a, 0, 0, by);
}

/* Horner: c[n-1] x^(n-1) + ... + c[0], each step one fma. */
static uint16_t horner(struct va_prog *p, bool wide, uint16_t x, const double *c, unsigned n) {
    uint16_t acc = fk(p, wide, c[n - 1]);
    for (unsigned i = n - 1; i-- > 0;) acc = fma3(p, acc, x, fk(p, wide, c[i]));
    return acc;
}

/* ---- constants ----------------------------------------------------------------
 * Derived from pi, ln 2 and log2 e computed to 90 decimal digits; each part is the
 * previous remainder rounded to nearest (24 bits for f32, 53 bits for f64). The
 * polynomial coefficients are 1/k! and 2/(2k+1), rounded to nearest. */

/* 1/k!, k = 0..17 */
static const double INV_FACT32[18] = {1.0,
                                      1.0,
                                      0x1p-1,
                                      0x1.555556p-3,
                                      0x1.555556p-5,
                                      0x1.111112p-7,
                                      0x1.6c16c2p-10,
                                      0x1.a01a02p-13,
                                      0x1.a01a02p-16,
                                      0x1.71de3ap-19,
                                      0x1.27e4fcp-22,
                                      0x1.ae6456p-26,
                                      0x1.1eed8ep-29,
                                      0x1.612462p-33,
                                      0x1.93974ap-37,
                                      0x1.ae7f3ep-41,
                                      0x1.ae7f3ep-45,
                                      0x1.952c78p-49};
static const double INV_FACT64[18] = {1.0,
                                      1.0,
                                      0x1p-1,
                                      0x1.5555555555555p-3,
                                      0x1.5555555555555p-5,
                                      0x1.1111111111111p-7,
                                      0x1.6c16c16c16c17p-10,
                                      0x1.a01a01a01a01ap-13,
                                      0x1.a01a01a01a01ap-16,
                                      0x1.71de3a556c734p-19,
                                      0x1.27e4fb7789f5cp-22,
                                      0x1.ae64567f544e4p-26,
                                      0x1.1eed8eff8d898p-29,
                                      0x1.6124613a86d09p-33,
                                      0x1.93974a8c07c9dp-37,
                                      0x1.ae7f3e733b81fp-41,
                                      0x1.ae7f3e733b81fp-45,
                                      0x1.952c77030ad4ap-49};
/* 2/(2k+1), k = 1..10 */
static const double ATANH32[10] = {0x1.555556p-1, 0x1.99999ap-2, 0x1.24924ap-2, 0x1.c71c72p-3,
                                   0x1.745d18p-3, 0x1.3b13b2p-3, 0x1.111112p-3, 0x1.e1e1e2p-4,
                                   0x1.af286cp-4, 0x1.861862p-4};
static const double ATANH64[10] = {0x1.5555555555555p-1, 0x1.999999999999ap-2, 0x1.2492492492492p-2,
                                   0x1.c71c71c71c71cp-3, 0x1.745d1745d1746p-3, 0x1.3b13b13b13b14p-3,
                                   0x1.1111111111111p-3, 0x1.e1e1e1e1e1e1ep-4, 0x1.af286bca1af28p-4,
                                   0x1.8618618618618p-4};

#define LOG2E32 0x1.715476p+0
#define LN2_32 0x1.62e430p-1
#define LN2HI32 0x1.62e430p-1
#define LN2LO32 (-0x1.05c610p-29)
#define L2EHI32 0x1.715476p+0
#define L2ELO32 0x1.4ae0c0p-26
#define LOG2E64 0x1.71547652b82fep+0
#define LN2HI64 0x1.62e42fefa39efp-1
#define LN2LO64 0x1.abc9e3b39803fp-56
#define L2EHI64 0x1.71547652b82fep+0
#define L2ELO64 0x1.777d0ffda0d24p-56
#define TWO_PI64 0x1.45f306dc9c883p-1 /* 2/pi */
#define PIO2_1 0x1.921fb54442d18p+0
#define PIO2_2 0x1.1a62633145c07p-54
#define PIO2_3 (-0x1.f1976b7ed8fbcp-110)

/* ---- exp / exp2 ---------------------------------------------------------------- */

/* e^r for the reduced r, times 2^n (n an integral float); x is the original input,
 * selected back when it is NaN. */
static uint16_t exp_tail(struct va_prog *p, bool wide, uint16_t x, uint16_t n, uint16_t r) {
    uint16_t poly = horner(p, wide, r, wide ? INV_FACT64 : INV_FACT32, wide ? 14u : 8u);
    uint16_t ni = cvt(p, VA_F2I, n);
    uint16_t n1 = shift(p, VA_ISHR, ni, 1);
    uint16_t n2 = op2(p, VA_ISUB, ni, n1);
    unsigned mant = wide ? 52u : 23u;
    int64_t bias = wide ? 1023 : 127;
    uint16_t s1 = cvt(p, VA_B2F, shift(p, VA_ISHL, op2(p, VA_IADD, n1, ik(p, wide, bias)), mant));
    uint16_t s2 = cvt(p, VA_B2F, shift(p, VA_ISHL, op2(p, VA_IADD, n2, ik(p, wide, bias)), mant));
    uint16_t y = op2(p, VA_MUL, op2(p, VA_MUL, poly, s1), s2);
    return selp(p, cmp(p, VA_FNAN, x, x), x, y);
}

static uint16_t build_exp(struct va_prog *p, bool wide, uint16_t x) {
    uint16_t xc = op2(p, VA_MAX, op2(p, VA_MIN, x, fk(p, wide, wide ? 720.0 : 100.0)),
                      fk(p, wide, wide ? -760.0 : -110.0));
    uint16_t n = op1(p, VA_RINT, op2(p, VA_MUL, xc, fk(p, wide, wide ? LOG2E64 : LOG2E32)));
    uint16_t r = fma3(p, n, fk(p, wide, wide ? -LN2HI64 : -LN2HI32), xc);
    r = fma3(p, n, fk(p, wide, wide ? -LN2LO64 : -LN2LO32), r);
    return exp_tail(p, wide, x, n, r);
}

static uint16_t build_exp2(struct va_prog *p, bool wide, uint16_t x) {
    uint16_t xc = op2(p, VA_MAX, op2(p, VA_MIN, x, fk(p, wide, wide ? 1030.0 : 130.0)),
                      fk(p, wide, wide ? -1100.0 : -160.0));
    uint16_t n = op1(p, VA_RINT, xc);
    uint16_t f = op2(p, VA_SUB, xc, n); /* exact: |f| <= 1/2 */
    uint16_t lo = op2(p, VA_MUL, f, fk(p, wide, wide ? LN2LO64 : LN2LO32));
    uint16_t r = fma3(p, f, fk(p, wide, wide ? LN2HI64 : LN2HI32), lo);
    return exp_tail(p, wide, x, n, r);
}

/* ---- log / log2 ---------------------------------------------------------------- */

static uint16_t build_log(struct va_prog *p, bool wide, uint16_t x, bool base2) {
    unsigned mant = wide ? 52u : 23u;
    /* subnormal x: scale into the normal range first */
    uint16_t tiny = cmp(p, VA_FLT, x, fk(p, wide, wide ? 0x1p-1022 : 0x1p-126));
    uint16_t xs = selp(p, tiny, op2(p, VA_MUL, x, fk(p, wide, wide ? 0x1p54 : 0x1p24)), x);
    uint16_t eadj = selp(p, tiny, ik(p, wide, wide ? -54 : -24), ik(p, wide, 0));
    uint16_t bits = cvt(p, VA_F2B, xs);
    /* e = floor(log2(x / sqrt(1/2))); m = x 2^-e in [sqrt(1/2), sqrt(2)) */
    uint16_t d = op2(p, VA_ISUB, bits, ik(p, wide, wide ? 0x3FE6A09E667F3BCD : 0x3F3504F3));
    uint16_t e = shift(p, VA_ISHR, d, mant);
    uint16_t m = cvt(p, VA_B2F, op2(p, VA_ISUB, bits, shift(p, VA_ISHL, e, mant)));
    uint16_t ef = cvt(p, VA_I2F, op2(p, VA_IADD, e, eadj));
    uint16_t one = fk(p, wide, 1.0);
    uint16_t f = op2(p, VA_SUB, m, one); /* exact (Sterbenz) */
    uint16_t s = op2(p, VA_DIV, f, op2(p, VA_ADD, f, fk(p, wide, 2.0)));
    uint16_t z = op2(p, VA_MUL, s, s);
    uint16_t R = horner(p, wide, z, wide ? ATANH64 : ATANH32, wide ? 10u : 4u);
    /* log(1+f) = f - h, h = s (f - z R) */
    uint16_t h = op2(p, VA_MUL, s, fma3(p, op1(p, VA_NEG, z), R, f));
    uint16_t hn = op1(p, VA_NEG, h);
    uint16_t y;
    if (!base2) {
        uint16_t t = fma3(p, ef, fk(p, wide, wide ? LN2LO64 : LN2LO32), hn);
        y = fma3(p, ef, fk(p, wide, wide ? LN2HI64 : LN2HI32), op2(p, VA_ADD, t, f));
    } else {
        uint16_t v = op2(p, VA_MUL, f, fk(p, wide, wide ? L2ELO64 : L2ELO32));
        v = fma3(p, hn, fk(p, wide, wide ? L2EHI64 : L2EHI32), v);
        uint16_t w = fma3(p, f, fk(p, wide, wide ? L2EHI64 : L2EHI32), v);
        y = op2(p, VA_ADD, ef, w);
    }
    uint16_t inf = fk(p, wide, (double)INFINITY);
    y = selp(p, cmp(p, VA_FEQ, x, inf), inf, y);
    y = selp(p, cmp(p, VA_FEQ, x, fk(p, wide, 0.0)), fk(p, wide, -(double)INFINITY), y);
    y = selp(p, cmp(p, VA_FLT, x, fk(p, wide, 0.0)), fk(p, wide, (double)NAN), y);
    return selp(p, cmp(p, VA_FNAN, x, x), x, y);
}

/* ---- sin / cos ----------------------------------------------------------------- */

static const double SIN32[4] = {-0x1.555556p-3, 0x1.111112p-7, -0x1.a01a02p-13, 0x1.71de3ap-19};
static const double COS32[4] = {0x1.555556p-5, -0x1.6c16c2p-10, 0x1.a01a02p-16, -0x1.27e4fcp-22};
static const double SIN64[8] = {
    -0x1.5555555555555p-3,  0x1.1111111111111p-7,  -0x1.a01a01a01a01ap-13, 0x1.71de3a556c734p-19,
    -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49};
static const double COS64[7] = {
    0x1.5555555555555p-5,  -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22,
    0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45};

static uint16_t build_sincos(struct va_prog *p, bool wide, uint16_t x, bool is_cos) {
    uint16_t k, hi, lo = 0;
    bool has_lo = !wide;
    if (wide) {
        k = op1(p, VA_RINT, op2(p, VA_MUL, x, fk(p, true, TWO_PI64)));
        hi = fma3(p, k, fk(p, true, -PIO2_1), x);
        hi = fma3(p, k, fk(p, true, -PIO2_2), hi);
        hi = fma3(p, k, fk(p, true, -PIO2_3), hi);
    } else {
        /* f32: reduce in f64, where x - k pi/2 is accurate far beyond f32 needs */
        uint16_t xd = cvt(p, VA_WIDEN, x);
        k = op1(p, VA_RINT, op2(p, VA_MUL, xd, fk(p, true, TWO_PI64)));
        uint16_t rd = fma3(p, k, fk(p, true, -PIO2_1), xd);
        rd = fma3(p, k, fk(p, true, -PIO2_2), rd);
        hi = cvt(p, VA_NARROW, rd);
        lo = cvt(p, VA_NARROW, op2(p, VA_SUB, rd, cvt(p, VA_WIDEN, hi)));
    }
    uint16_t z = op2(p, VA_MUL, hi, hi);
    /* sin(hi + lo) ~ hi + (hi z S(z) + lo) */
    uint16_t S = horner(p, wide, z, wide ? SIN64 : SIN32, wide ? 8u : 4u);
    uint16_t hz = op2(p, VA_MUL, hi, z);
    uint16_t sp = has_lo ? op2(p, VA_ADD, hi, fma3(p, hz, S, lo)) : fma3(p, hz, S, hi);
    /* cos(hi + lo) ~ w + ((1 - w - z/2) + (z^2 C(z) - hi lo)), w = 1 - z/2 */
    uint16_t one = fk(p, wide, 1.0);
    uint16_t hz2 = op2(p, VA_MUL, z, fk(p, wide, 0.5));
    uint16_t w = op2(p, VA_SUB, one, hz2);
    uint16_t corr = op2(p, VA_SUB, op2(p, VA_SUB, one, w), hz2);
    if (has_lo) corr = fma3(p, hi, op1(p, VA_NEG, lo), corr);
    uint16_t C = horner(p, wide, z, wide ? COS64 : COS32, wide ? 7u : 4u);
    uint16_t cp = op2(p, VA_ADD, w, fma3(p, op2(p, VA_MUL, z, z), C, corr));
    /* quadrant */
    uint16_t q = cvt(p, VA_F2I, k);
    if (is_cos) q = op2(p, VA_IADD, q, ik(p, true, 1));
    uint16_t swap = ins(p, VA_IBIT, VA_PRED, q, 0, 0, 1);
    uint16_t neg = ins(p, VA_IBIT, VA_PRED, q, 0, 0, 2);
    uint16_t v = selp(p, swap, cp, sp);
    uint16_t y = selp(p, neg, op1(p, VA_NEG, v), v);
    if (!is_cos) {
        uint16_t small = cmp(p, VA_FLT, op1(p, VA_ABS, x), fk(p, wide, wide ? 0x1p-27 : 0x1p-12));
        y = selp(p, small, x, y);
    }
    return y;
}

/* ---- tanh ---------------------------------------------------------------------- */

static uint16_t build_tanh(struct va_prog *p, bool wide, uint16_t x) {
    uint16_t a = op1(p, VA_ABS, x);
    uint16_t two = fk(p, wide, 2.0), one = fk(p, wide, 1.0);
    /* small: E = expm1(a) = a + a (a (1/2! + a/3! + ...)), one rounding at the end */
    const double *c = (wide ? INV_FACT64 : INV_FACT32) + 2;
    uint16_t aq = op2(p, VA_MUL, a, horner(p, wide, a, c, wide ? 14u : 8u));
    uint16_t E = fma3(p, a, aq, a);
    /* num = E (E + 2) = E^2 + 2E in one rounding; den = num + 2 and its exact
     * rounding error dl (Fast2Sum: num < 4); t0 = num / den, then one correction
     * step t0 + (num - t0 (den + dl)) / (den + dl) with 1/(num+2) = (1 - t)/2 */
    uint16_t num = fma3(p, E, E, op2(p, VA_ADD, E, E));
    uint16_t den = op2(p, VA_ADD, num, two);
    uint16_t dl = op2(p, VA_SUB, num, op2(p, VA_SUB, den, two));
    uint16_t t0 = op2(p, VA_DIV, num, den);
    uint16_t nt = op1(p, VA_NEG, t0);
    uint16_t res = fma3(p, nt, dl, fma3(p, nt, den, num));
    uint16_t rcp = fma3(p, t0, fk(p, wide, -0.5), fk(p, wide, 0.5));
    uint16_t ts = fma3(p, res, rcp, t0);
    /* large: 1 - 2 / (e^(2a) + 1) */
    uint16_t e = build_exp(p, wide, op2(p, VA_ADD, a, a));
    uint16_t tb = op2(p, VA_SUB, one, op2(p, VA_DIV, two, op2(p, VA_ADD, e, one)));
    uint16_t t = selp(p, cmp(p, VA_FLT, a, fk(p, wide, 0.55)), ts, tb);
    return ins(p, VA_COPYSIGN, kind_of(p, t), t, x, 0, 0);
}

bool vyre_approx_build(struct va_prog *p, enum vyre_op op, bool wide) {
    memset(p, 0, sizeof *p);
    uint16_t x = ins(p, VA_IN, wide ? VA_F64 : VA_F32, 0, 0, 0, 0);
    uint16_t y;
    switch (op) {
    case VYRE_OP_EXP: y = build_exp(p, wide, x); break;
    case VYRE_OP_EXP2: y = build_exp2(p, wide, x); break;
    case VYRE_OP_LOG: y = build_log(p, wide, x, false); break;
    case VYRE_OP_LOG2: y = build_log(p, wide, x, true); break;
    case VYRE_OP_SIN: y = build_sincos(p, wide, x, false); break;
    case VYRE_OP_COS: y = build_sincos(p, wide, x, true); break;
    case VYRE_OP_TANH: y = build_tanh(p, wide, x); break;
    case VYRE_OP_RSQRT: y = op2(p, VA_DIV, fk(p, wide, 1.0), op1(p, VA_SQRT, x)); break;
    default: return false; /* an approximate row of ops.h without a va program */
    }
    p->out = y;
    return true;
}

/* ---- printing a va program as PTX --------------------------------------------- */

static enum ptx_cls cls_of(enum va_kind k) {
    switch (k) {
    case VA_F32: return PTX_F;
    case VA_F64: return PTX_FD;
    case VA_I32: return PTX_R;
    case VA_I64: return PTX_RD;
    default: return PTX_P;
    }
}

/* Operand text: constants are printed as immediates, other values by register. */
static const char *opnd(const struct va_prog *p, const struct ptx_reg *regs, uint16_t v,
                        char buf[32]) {
    const struct va_ins *i = &p->ins[v];
    if (i->op == VA_FK) {
        if (i->kind == VA_F64) snprintf(buf, 32, "0d%016" PRIX64, i->k);
        else snprintf(buf, 32, "0f%08" PRIX32, (uint32_t)i->k);
        return buf;
    }
    if (i->op == VA_IK) {
        if (i->kind == VA_I64) snprintf(buf, 32, "%" PRId64, (int64_t)i->k);
        else snprintf(buf, 32, "%" PRId32, (int32_t)(uint32_t)i->k);
        return buf;
    }
    return regs[v].s;
}

static void emit_prog(struct ptx_ctx *c, const struct va_prog *p, struct ptx_reg d,
                      struct ptx_reg a) {
    struct ptx_reg regs[VA_MAX_INS];
    char A[32], B[32], C[32];
    for (uint16_t v = 0; v < p->n; v++) {
        const struct va_ins *i = &p->ins[v];
        enum va_kind k = (enum va_kind)i->kind;
        if (i->op == VA_IN) {
            regs[v] = a;
            continue;
        }
        if (i->op == VA_FK || i->op == VA_IK) continue;
        regs[v] = vyre_ptx_reg(c, cls_of(k));
        const char *r = regs[v].s;
        const char *x = opnd(p, regs, i->a, A);
        enum va_kind ka = (enum va_kind)p->ins[i->a].kind;
        bool w = ka == VA_F64 || ka == VA_I64;
        const char *fs = w ? ".f64" : ".f32", *ss = w ? ".s64" : ".s32", *bs = w ? ".b64" : ".b32";
        switch ((enum va_op)i->op) {
        case VA_FMA:
            vyre_ptx_ins(c, "fma.rn%s %s, %s, %s, %s", fs, r, x, opnd(p, regs, i->b, B),
                         opnd(p, regs, i->c, C));
            break;
        case VA_MUL:
        case VA_ADD:
        case VA_SUB:
        case VA_DIV: {
            const char *o = i->op == VA_MUL   ? "mul"
                            : i->op == VA_ADD ? "add"
                            : i->op == VA_SUB ? "sub"
                                              : "div";
            vyre_ptx_ins(c, "%s.rn%s %s, %s, %s", o, fs, r, x, opnd(p, regs, i->b, B));
            break;
        }
        case VA_SQRT: vyre_ptx_ins(c, "sqrt.rn%s %s, %s", fs, r, x); break;
        case VA_RINT: vyre_ptx_ins(c, "cvt.rni%s%s %s, %s", fs, fs, r, x); break;
        case VA_ABS: vyre_ptx_ins(c, "abs%s %s, %s", fs, r, x); break;
        case VA_NEG: vyre_ptx_ins(c, "neg%s %s, %s", fs, r, x); break;
        case VA_MIN:
        case VA_MAX:
            vyre_ptx_ins(c, "%s%s %s, %s, %s", i->op == VA_MIN ? "min" : "max", fs, r, x,
                         opnd(p, regs, i->b, B));
            break;
        case VA_COPYSIGN: /* PTX copysign d, a, b: the sign of a on the value of b */
            vyre_ptx_ins(c, "copysign%s %s, %s, %s", fs, r, opnd(p, regs, i->b, B), x);
            break;
        case VA_FLT:
        case VA_FEQ:
            vyre_ptx_ins(c, "setp.%s%s %s, %s, %s", i->op == VA_FLT ? "lt" : "eq", fs, r, x,
                         opnd(p, regs, i->b, B));
            break;
        case VA_FNAN: vyre_ptx_ins(c, "setp.nan%s %s, %s, %s", fs, r, x, x); break;
        case VA_SELP: {
            enum va_kind kb = (enum va_kind)p->ins[i->b].kind;
            const char *ts = kb == VA_F32   ? ".f32"
                             : kb == VA_F64 ? ".f64"
                             : kb == VA_I32 ? ".b32"
                                            : ".b64";
            vyre_ptx_ins(c, "selp%s %s, %s, %s, %s", ts, r, opnd(p, regs, i->b, B),
                         opnd(p, regs, i->c, C), x);
            break;
        }
        case VA_F2B:
        case VA_B2F: vyre_ptx_ins(c, "mov%s %s, %s", bs, r, x); break;
        case VA_F2I: vyre_ptx_ins(c, "cvt.rzi%s%s %s, %s", ss, fs, r, x); break;
        case VA_I2F: vyre_ptx_ins(c, "cvt.rn%s%s %s, %s", w ? ".f64" : ".f32", ss, r, x); break;
        case VA_WIDEN: vyre_ptx_ins(c, "cvt.f64.f32 %s, %s", r, x); break;
        case VA_NARROW: vyre_ptx_ins(c, "cvt.rn.f32.f64 %s, %s", r, x); break;
        case VA_IADD:
        case VA_ISUB:
            vyre_ptx_ins(c, "%s%s %s, %s, %s", i->op == VA_IADD ? "add" : "sub", ss, r, x,
                         opnd(p, regs, i->b, B));
            break;
        case VA_ISHL: vyre_ptx_ins(c, "shl%s %s, %s, %u", bs, r, x, (unsigned)i->k); break;
        case VA_ISHR: vyre_ptx_ins(c, "shr%s %s, %s, %u", ss, r, x, (unsigned)i->k); break;
        case VA_IBIT: {
            struct ptx_reg t = vyre_ptx_reg(c, w ? PTX_RD : PTX_R);
            vyre_ptx_ins(c, "and%s %s, %s, %u", bs, t.s, x, (unsigned)i->k);
            vyre_ptx_ins(c, "setp.ne%s %s, %s, 0", bs, r, t.s);
            break;
        }
        default:
            vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                          "ptx: approximate-op step %u has no PTX form. "
                          "Fix: report this as a codegen bug",
                          (unsigned)i->op);
            return;
        }
    }
    const struct va_ins *o = &p->ins[p->out];
    bool w = o->kind == VA_F64;
    vyre_ptx_ins(c, "mov%s %s, %s", w ? ".f64" : ".f32", d.s, opnd(p, regs, p->out, A));
}

void vyre_ptx_approx(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t, struct ptx_reg d,
                     struct ptx_reg a) {
    /* The op table (ops.h) marks the approximate ops and their operand types; the va
     * programs below exist for f32 and f64 only, which is all the table admits. */
    if (!vyre_op_is_approx(op) || !vyre_op_admits(op, t) || (t != VYRE_F32 && t != VYRE_F64)) {
        vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                      "ptx: %s on %s is not supported for sm_%u. Fix: %s takes f32 or f64",
                      vyre_op_name(op), vyre_type_name(t), c->sm, vyre_op_name(op));
        return;
    }
    struct va_prog p;
    if (!vyre_approx_build(&p, op, t == VYRE_F64) || p.overflow) {
        vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                      "ptx: %s on %s is not an approximate op for sm_%u. Fix: report this as "
                      "a codegen bug",
                      vyre_op_name(op), vyre_type_name(t), c->sm);
        return;
    }
    emit_prog(c, &p, d, a);
}
