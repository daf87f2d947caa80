/* ptx_approx.h — private to ptx_approx.c and tests/c/test_approx.c: the approximate
 * ops (exp exp2 log log2 sin cos tanh rsqrt) are written ONCE as a short straight-line
 * program over IEEE operations (a "va" program). ptx_approx.c prints it as PTX; the
 * test evaluates the very same program on the CPU with fmaf/fma, so the CPU proof of
 * the ULP bound follows the GPU code instruction for instruction. Every operation here
 * is exactly rounded on both sides (fma.rn, div.rn, sqrt.rn, cvt.rni, ...), so the CPU
 * evaluation is bit-identical to the GPU: no hardware approximation is used. */
#ifndef VYRE_PTX_APPROX_H
#define VYRE_PTX_APPROX_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

#define VA_MAX_INS 192

/* Value kinds: floats and integers of 32 or 64 bits, and predicates. */
enum va_kind { VA_F32, VA_F64, VA_I32, VA_I64, VA_PRED };

enum va_op {
    VA_IN,  /* the input x (ins[0]) */
    VA_FK,  /* float constant, bits in k */
    VA_IK,  /* integer constant, value in k (two's complement) */
    VA_FMA, /* a*b+c, one rounding */
    VA_MUL,
    VA_ADD,
    VA_SUB,
    VA_DIV,  /* .rn */
    VA_SQRT, /* sqrt.rn */
    VA_RINT, /* cvt.rni: nearest integral value, ties to even */
    VA_ABS,
    VA_NEG,
    VA_MIN,
    VA_MAX,      /* NaN operand: the other one */
    VA_COPYSIGN, /* magnitude of a, sign of b */
    VA_FLT,
    VA_FEQ,  /* ordered a < b, a == b -> pred */
    VA_FNAN, /* a is NaN -> pred */
    VA_SELP, /* a (pred) ? b : c */
    VA_F2B,
    VA_B2F,    /* reinterpret bits, same width */
    VA_F2I,    /* cvt.rzi.s32/s64 of an integral float (saturating, NaN -> 0) */
    VA_I2F,    /* cvt.rn.f32.s32 / f64.s64 */
    VA_WIDEN,  /* cvt.f64.f32 (exact) */
    VA_NARROW, /* cvt.rn.f32.f64 */
    VA_IADD,
    VA_ISUB,
    VA_ISHL,
    VA_ISHR, /* by the constant k; ISHR is arithmetic */
    VA_IBIT  /* (a & k) != 0 -> pred */
};

struct va_ins {
    uint8_t op;   /* enum va_op */
    uint8_t kind; /* enum va_kind of the result */
    uint16_t a, b, c;
    uint64_t k;
};

struct va_prog {
    uint16_t n;    /* instructions used */
    uint16_t out;  /* the result value */
    bool overflow; /* more than VA_MAX_INS instructions were asked for (a bug) */
    struct va_ins ins[VA_MAX_INS];
};

/* Builds the program for op on f32 (wide false) or f64 (wide true). Returns false if
 * op is not an approximate op. */
VYRE_INTERNAL bool vyre_approx_build(struct va_prog *p, enum vyre_op op, bool wide);

#endif
