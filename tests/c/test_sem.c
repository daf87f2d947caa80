/* test_sem.c — every row of the §3 semantics table, checked bit-exactly against the
 * sem.c functions that the interpreter and the constant folder share. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "sem.h"

/* ---- value helpers ---------------------------------------------------------- */

static uint64_t F(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t D(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static float toF(uint64_t b) {
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double toD(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* 32-bit negative numbers as zero-extended bits */
static uint64_t I32(int32_t v) { return (uint32_t)v; }

static uint64_t I64(int64_t v) { return (uint64_t)v; }

#define B(op, t, a, b) vyre_sem_binary(VYRE_OP_##op, VYRE_##t, (a), (b))
#define U(op, t, a) vyre_sem_unary(VYRE_OP_##op, VYRE_##t, (a))
#define C(to, from, a) vyre_sem_cast(VYRE_##to, VYRE_##from, (a))

#define I32MIN UINT64_C(0x80000000)
#define I32MAX UINT64_C(0x7FFFFFFF)
#define U32MAX UINT64_C(0xFFFFFFFF)
#define I64MIN UINT64_C(0x8000000000000000)
#define I64MAX UINT64_C(0x7FFFFFFFFFFFFFFF)
#define U64MAX UINT64_C(0xFFFFFFFFFFFFFFFF)
#define F32_QNAN UINT64_C(0x7FC00000)
#define F64_QNAN UINT64_C(0x7FF8000000000000)
#define F32_INF UINT64_C(0x7F800000)
#define F32_NINF UINT64_C(0xFF800000)
#define F32_NZERO UINT64_C(0x80000000)
#define F64_NZERO UINT64_C(0x8000000000000000)

static int isnan32(uint64_t b) {
    return (b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFFu) != 0 && (b >> 32) == 0;
}

static int isnan64(uint64_t b) { return isnan(toD(b)); }

/* ---- integer arithmetic ---------------------------------------------------------- */

static void test_wrap(void) {
    CHECK_EQ_U64(B(ADD, U32, U32MAX, 1), 0);
    CHECK_EQ_U64(B(ADD, I32, I32MAX, 1), I32MIN);
    CHECK_EQ_U64(B(SUB, I32, I32MIN, 1), I32MAX);
    CHECK_EQ_U64(B(SUB, U32, 0, 1), U32MAX);
    CHECK_EQ_U64(B(MUL, U32, 0x10000, 0x10000), 0);
    CHECK_EQ_U64(B(MUL, I32, I32(-3), 7), I32(-21));
    CHECK_EQ_U64(B(MUL, I32, I32MIN, I32(-1)), I32MIN);
    CHECK_EQ_U64(B(ADD, U64, U64MAX, 2), 1);
    CHECK_EQ_U64(B(ADD, I64, I64MAX, 1), I64MIN);
    CHECK_EQ_U64(B(SUB, I64, I64MIN, 1), I64MAX);
    CHECK_EQ_U64(B(MUL, U64, UINT64_C(1) << 32, UINT64_C(1) << 32), 0);
    CHECK_EQ_U64(B(MUL, I64, I64(-5), I64(-6)), 30);
    /* 32-bit results stay zero-extended in the 64-bit carrier */
    CHECK_EQ_U64(B(SUB, I32, 0, 1), U32MAX);
}

static void test_div_rem(void) {
    /* unsigned */
    CHECK_EQ_U64(B(DIV, U32, 10, 0), U32MAX);
    CHECK_EQ_U64(B(REM, U32, 10, 0), 10);
    CHECK_EQ_U64(B(DIV, U32, 100, 7), 14);
    CHECK_EQ_U64(B(REM, U32, 100, 7), 2);
    CHECK_EQ_U64(B(DIV, U32, U32MAX, 2), I32MAX);
    CHECK_EQ_U64(B(DIV, U64, 10, 0), U64MAX);
    CHECK_EQ_U64(B(REM, U64, 10, 0), 10);
    CHECK_EQ_U64(B(DIV, U64, U64MAX, 3), UINT64_C(0x5555555555555555));
    CHECK_EQ_U64(B(REM, U64, U64MAX, 10), 5);
    /* signed, truncating toward zero */
    CHECK_EQ_U64(B(DIV, I32, I32(-7), 3), I32(-2));
    CHECK_EQ_U64(B(REM, I32, I32(-7), 3), I32(-1));
    CHECK_EQ_U64(B(DIV, I32, 7, I32(-3)), I32(-2));
    CHECK_EQ_U64(B(REM, I32, 7, I32(-3)), 1);
    CHECK_EQ_U64(B(DIV, I32, I32(-7), I32(-3)), 2);
    CHECK_EQ_U64(B(REM, I32, I32(-7), I32(-3)), I32(-1));
    CHECK_EQ_U64(B(DIV, I32, 10, 0), U32MAX); /* -1 */
    CHECK_EQ_U64(B(DIV, I32, I32(-10), 0), U32MAX);
    CHECK_EQ_U64(B(REM, I32, I32(-10), 0), I32(-10));
    CHECK_EQ_U64(B(DIV, I32, I32MIN, I32(-1)), I32MIN);
    CHECK_EQ_U64(B(REM, I32, I32MIN, I32(-1)), 0);
    CHECK_EQ_U64(B(DIV, I32, I32MIN, 1), I32MIN);
    CHECK_EQ_U64(B(DIV, I64, I64(-7), 3), I64(-2));
    CHECK_EQ_U64(B(REM, I64, I64(-7), 3), I64(-1));
    CHECK_EQ_U64(B(DIV, I64, 5, 0), U64MAX);
    CHECK_EQ_U64(B(REM, I64, I64(-5), 0), I64(-5));
    CHECK_EQ_U64(B(DIV, I64, I64MIN, I64(-1)), I64MIN);
    CHECK_EQ_U64(B(REM, I64, I64MIN, I64(-1)), 0);
    CHECK_EQ_U64(B(DIV, I64, I64MIN, 2), UINT64_C(0xC000000000000000));
}

static void test_bitwise_shift(void) {
    CHECK_EQ_U64(B(AND, U32, 0xF0F0, 0xFF00), 0xF000);
    CHECK_EQ_U64(B(OR, I32, I32(-16), 3), I32(-13));
    CHECK_EQ_U64(B(XOR, U64, U64MAX, 1), U64MAX - 1);
    CHECK_EQ_U64(B(AND, BOOL, 1, 0), 0);
    CHECK_EQ_U64(B(OR, BOOL, 1, 0), 1);
    CHECK_EQ_U64(B(XOR, BOOL, 1, 1), 0);
    /* shift amount is taken modulo the width */
    CHECK_EQ_U64(B(SHL, U32, 1, 32), 1);
    CHECK_EQ_U64(B(SHL, U32, 1, 33), 2);
    CHECK_EQ_U64(B(SHL, U32, 1, 31), I32MIN);
    CHECK_EQ_U64(B(SHL, U32, 3, 31), I32MIN);
    CHECK_EQ_U64(B(SHL, I32, 1, I32(-1)), I32MIN); /* -1 mod 32 = 31 */
    CHECK_EQ_U64(B(SHR, U32, I32MIN, 31), 1);
    CHECK_EQ_U64(B(SHR, U32, I32MIN, 32), I32MIN);
    CHECK_EQ_U64(B(SHR, I32, I32MIN, 31), U32MAX); /* arithmetic */
    CHECK_EQ_U64(B(SHR, I32, I32(-8), 1), I32(-4));
    CHECK_EQ_U64(B(SHR, I32, 8, 1), 4);
    CHECK_EQ_U64(B(SHR, I32, I32(-1), 33), U32MAX);
    CHECK_EQ_U64(B(SHL, U64, 1, 64), 1);
    CHECK_EQ_U64(B(SHL, U64, 1, 65), 2);
    CHECK_EQ_U64(B(SHL, U64, 1, 63), I64MIN);
    CHECK_EQ_U64(B(SHR, U64, I64MIN, 63), 1);
    CHECK_EQ_U64(B(SHR, I64, I64MIN, 63), U64MAX);
    CHECK_EQ_U64(B(SHR, I64, I64(-256), 4), I64(-16));
    CHECK_EQ_U64(B(SHR, I64, I64(-256), 68), I64(-16));
}

static void test_compare(void) {
    CHECK_EQ_U64(B(LT, I32, I32(-1), 0), 1);
    CHECK_EQ_U64(B(LT, U32, U32MAX, 0), 0);
    CHECK_EQ_U64(B(GT, U32, U32MAX, 0), 1);
    CHECK_EQ_U64(B(LE, I32, 5, 5), 1);
    CHECK_EQ_U64(B(GE, I32, I32MIN, I32MAX), 0);
    CHECK_EQ_U64(B(LT, I64, I64MIN, 0), 1);
    CHECK_EQ_U64(B(LT, U64, I64MIN, 0), 0);
    CHECK_EQ_U64(B(EQ, U64, 7, 7), 1);
    CHECK_EQ_U64(B(NE, I64, 7, 7), 0);
    CHECK_EQ_U64(B(EQ, BOOL, 1, 1), 1);
    CHECK_EQ_U64(B(NE, BOOL, 1, 0), 1);
    /* IEEE: NaN is unordered, ne is true for NaN, -0 == +0 */
    CHECK_EQ_U64(B(EQ, F32, F32_QNAN, F32_QNAN), 0);
    CHECK_EQ_U64(B(NE, F32, F32_QNAN, F32_QNAN), 1);
    CHECK_EQ_U64(B(LT, F32, F32_QNAN, F(1)), 0);
    CHECK_EQ_U64(B(GE, F32, F32_QNAN, F(1)), 0);
    CHECK_EQ_U64(B(EQ, F32, F32_NZERO, 0), 1);
    CHECK_EQ_U64(B(LT, F32, F32_NZERO, 0), 0);
    CHECK_EQ_U64(B(LT, F32, F32_NINF, F(-1e30f)), 1);
    CHECK_EQ_U64(B(LE, F64, D(1.5), D(1.5)), 1);
    CHECK_EQ_U64(B(GT, F64, D(2), D(1.5)), 1);
    CHECK_EQ_U64(B(NE, F64, F64_QNAN, D(0)), 1);
    CHECK_EQ_U64(B(EQ, F64, F64_QNAN, F64_QNAN), 0);
}

static void test_minmax(void) {
    CHECK_EQ_U64(B(MIN, I32, I32(-1), 1), I32(-1));
    CHECK_EQ_U64(B(MIN, U32, U32MAX, 1), 1);
    CHECK_EQ_U64(B(MAX, I32, I32(-1), 1), 1);
    CHECK_EQ_U64(B(MAX, U32, U32MAX, 1), U32MAX);
    CHECK_EQ_U64(B(MIN, I64, I64MIN, I64MAX), I64MIN);
    CHECK_EQ_U64(B(MAX, U64, I64MIN, I64MAX), I64MIN);
    CHECK_EQ_U64(B(MIN, F32, F(1), F(2)), F(1));
    CHECK_EQ_U64(B(MAX, F32, F(1), F(2)), F(2));
    /* the non-NaN operand wins, in either position */
    CHECK_EQ_U64(B(MIN, F32, F32_QNAN, F(3)), F(3));
    CHECK_EQ_U64(B(MIN, F32, F(3), F32_QNAN), F(3));
    CHECK_EQ_U64(B(MAX, F32, F32_QNAN, F(-3)), F(-3));
    CHECK_EQ_U64(B(MAX, F32, F(-3), F32_QNAN), F(-3));
    CHECK(isnan32(B(MIN, F32, F32_QNAN, F32_QNAN)));
    CHECK_EQ_U64(B(MIN, F64, F64_QNAN, D(-2)), D(-2));
    CHECK_EQ_U64(B(MAX, F64, D(7), F64_QNAN), D(7));
    CHECK(isnan64(B(MAX, F64, F64_QNAN, F64_QNAN)));
    /* -0 orders below +0, independent of operand order */
    CHECK_EQ_U64(B(MIN, F32, 0, F32_NZERO), F32_NZERO);
    CHECK_EQ_U64(B(MIN, F32, F32_NZERO, 0), F32_NZERO);
    CHECK_EQ_U64(B(MAX, F32, F32_NZERO, 0), 0);
    CHECK_EQ_U64(B(MAX, F64, 0, F64_NZERO), 0);
    CHECK_EQ_U64(B(MIN, F64, 0, F64_NZERO), F64_NZERO);
    CHECK_EQ_U64(B(MIN, F32, F32_NINF, F(0)), F32_NINF);
    CHECK_EQ_U64(B(MAX, F32, F32_INF, F(0)), F32_INF);
}

static void test_logic_mulhi(void) {
    CHECK_EQ_U64(B(LAND, BOOL, 1, 1), 1);
    CHECK_EQ_U64(B(LAND, BOOL, 1, 0), 0);
    CHECK_EQ_U64(B(LOR, BOOL, 0, 0), 0);
    CHECK_EQ_U64(B(LOR, BOOL, 0, 1), 1);
    /* high half of the double-width product */
    CHECK_EQ_U64(B(MULHI, U32, U32MAX, U32MAX), 0xFFFFFFFEu);
    CHECK_EQ_U64(B(MULHI, U32, 0x10000, 0x10000), 1);
    CHECK_EQ_U64(B(MULHI, U32, 5, 7), 0);
    CHECK_EQ_U64(B(MULHI, I32, I32(-1), I32(-1)), 0);
    CHECK_EQ_U64(B(MULHI, I32, I32(-1), 1), U32MAX);
    CHECK_EQ_U64(B(MULHI, I32, I32MIN, I32MIN), 0x40000000u);
    CHECK_EQ_U64(B(MULHI, I32, I32MIN, I32MAX), 0xC0000000u);
    CHECK_EQ_U64(B(MULHI, I32, 0x10000, I32(-0x10000)), U32MAX);
    CHECK_EQ_U64(B(MULHI, U64, U64MAX, U64MAX), U64MAX - 1);
    CHECK_EQ_U64(B(MULHI, U64, UINT64_C(1) << 32, UINT64_C(1) << 32), 1);
    CHECK_EQ_U64(B(MULHI, U64, UINT64_C(0x123456789ABCDEF0), UINT64_C(0xFEDCBA9876543210)),
                 UINT64_C(0x121FA00AD77D7422));
    CHECK_EQ_U64(B(MULHI, I64, I64(-1), I64(-1)), 0);
    CHECK_EQ_U64(B(MULHI, I64, I64(-1), 1), U64MAX);
    CHECK_EQ_U64(B(MULHI, I64, I64MIN, I64MIN), UINT64_C(0x4000000000000000));
    CHECK_EQ_U64(B(MULHI, I64, I64MIN, I64MAX), UINT64_C(0xC000000000000000));
    CHECK_EQ_U64(B(MULHI, I64, I64(-2), I64MAX), U64MAX);
    CHECK_EQ_U64(B(MULHI, I64, I64(-3), I64(-INT64_C(0x4000000000000000))), 0);
    CHECK_EQ_U64(B(MULHI, I64, I64(-3), I64MIN), 1);
}

/* ---- floats ----------------------------------------------------------------------- */

static void test_float_arith(void) {
    CHECK_EQ_U64(B(ADD, F32, F(1.5f), F(2.25f)), F(3.75f));
    CHECK_EQ_U64(B(SUB, F32, F(1), F(3)), F(-2));
    CHECK_EQ_U64(B(MUL, F32, F(3), F(-0.5f)), F(-1.5f));
    CHECK_EQ_U64(B(DIV, F32, F(1), F(3)), 0x3EAAAAABu);
    CHECK_EQ_U64(B(DIV, F32, F(1), 0), F32_INF);
    CHECK_EQ_U64(B(DIV, F32, F(-1), 0), F32_NINF);
    CHECK(isnan32(B(DIV, F32, 0, 0)));
    CHECK(isnan32(B(SUB, F32, F32_INF, F32_INF)));
    /* single precision, ties to even: 1 + 2^-24 is a tie between 1 and 1+2^-23 */
    CHECK_EQ_U64(B(ADD, F32, F(1), 0x33800000u), F(1));
    CHECK_EQ_U64(B(ADD, F32, 0x3F800001u, 0x33800000u), 0x3F800002u);
    /* the f32 product is rounded in f32, not kept in double: (1+2^-12)^2 */
    CHECK_EQ_U64(B(MUL, F32, 0x3F800800u, 0x3F800800u), 0x3F801000u);
    /* subnormals are kept */
    CHECK_EQ_U64(B(MUL, F32, 1, F(1)), 1);
    CHECK_EQ_U64(B(DIV, F32, 0x00800000u, F(2)), 0x00400000u);
    CHECK_EQ_U64(B(ADD, F32, 1, 1), 2);
    CHECK_EQ_U64(B(SUB, F32, 0x00800000u, 0x007FFFFFu), 1);
    CHECK_EQ_U64(B(MUL, F64, 1, D(0.5)), 0); /* 2^-1075 ties to even: 0 */
    CHECK_EQ_U64(B(MUL, F64, 3, D(0.5)), 2); /* 1.5 * 2^-1074 ties to 2 * 2^-1074 */
    CHECK_EQ_U64(B(ADD, F64, D(0.1), D(0.2)), D(0.1 + 0.2));
    CHECK_EQ_U64(B(DIV, F64, D(1), D(3)), UINT64_C(0x3FD5555555555555));
    CHECK_EQ_U64(B(ADD, F64, D(1), UINT64_C(0x3CA0000000000000)), D(1)); /* 1 + 2^-53 */
    /* -0 arithmetic */
    CHECK_EQ_U64(B(ADD, F32, F32_NZERO, F32_NZERO), F32_NZERO);
    CHECK_EQ_U64(B(ADD, F32, F32_NZERO, 0), 0);
    CHECK_EQ_U64(B(SUB, F64, 0, 0), 0);
    CHECK_EQ_U64(B(MUL, F64, F64_NZERO, D(5)), F64_NZERO);
}

static void test_fma(void) {
    /* (1+2^-13)(1-2^-13) - 1 = -2^-26: exact with one rounding, 0 with two */
    uint64_t a = F(1.0f + 0x1p-13f), b = F(1.0f - 0x1p-13f), c = F(-1);
    CHECK_EQ_U64(vyre_sem_fma(VYRE_F32, a, b, c), F(-0x1p-26f));
    CHECK_EQ_U64(B(ADD, F32, B(MUL, F32, a, b), c), 0);
    uint64_t da = D(1.0 + 0x1p-30), db = D(1.0 - 0x1p-30), dc = D(-1);
    CHECK_EQ_U64(vyre_sem_fma(VYRE_F64, da, db, dc), D(-0x1p-60));
    CHECK_EQ_U64(B(ADD, F64, B(MUL, F64, da, db), dc), 0);
    CHECK_EQ_U64(vyre_sem_fma(VYRE_F32, F(2), F(3), F(4)), F(10));
    CHECK(isnan32(vyre_sem_fma(VYRE_F32, F32_INF, 0, F(1))));
}

static void test_float_unary(void) {
    CHECK_EQ_U64(U(NEG, F32, F(1)), F(-1));
    CHECK_EQ_U64(U(NEG, F32, 0), F32_NZERO);
    CHECK_EQ_U64(U(NEG, F64, D(2.5)), D(-2.5));
    CHECK(isnan32(U(NEG, F32, F32_QNAN)));
    CHECK_EQ_U64(U(ABS, F32, F32_NZERO), 0);
    CHECK_EQ_U64(U(ABS, F32, F(-3)), F(3));
    CHECK_EQ_U64(U(ABS, F64, D(-3)), D(3));
    CHECK_EQ_U64(U(SQRT, F32, F(4)), F(2));
    CHECK_EQ_U64(U(SQRT, F32, F(2)), 0x3FB504F3u);
    CHECK_EQ_U64(U(SQRT, F32, F32_NZERO), F32_NZERO);
    CHECK(isnan32(U(SQRT, F32, F(-1))));
    CHECK_EQ_U64(U(SQRT, F64, D(2)), UINT64_C(0x3FF6A09E667F3BCD));
    CHECK_EQ_U64(U(RSQRT, F32, F(4)), F(0.5f));
    CHECK_EQ_U64(U(RSQRT, F64, D(0.25)), D(2));
    CHECK_EQ_U64(U(RSQRT, F32, 0), F32_INF);
    CHECK_EQ_U64(U(FLOOR, F32, F(-1.5f)), F(-2));
    CHECK_EQ_U64(U(FLOOR, F32, F(1.5f)), F(1));
    CHECK_EQ_U64(U(CEIL, F32, F(1.25f)), F(2));
    CHECK_EQ_U64(U(CEIL, F32, F(-0.5f)), F32_NZERO);
    CHECK_EQ_U64(U(TRUNC, F32, F(-2.7f)), F(-2));
    CHECK_EQ_U64(U(TRUNC, F64, D(2.7)), D(2));
    CHECK_EQ_U64(U(FLOOR, F64, D(-0.25)), D(-1));
    CHECK_EQ_U64(U(CEIL, F64, D(-0.25)), F64_NZERO);
    /* round: half to even */
    CHECK_EQ_U64(U(ROUND, F32, F(2.5f)), F(2));
    CHECK_EQ_U64(U(ROUND, F32, F(3.5f)), F(4));
    CHECK_EQ_U64(U(ROUND, F32, F(-2.5f)), F(-2));
    CHECK_EQ_U64(U(ROUND, F32, F(-3.5f)), F(-4));
    CHECK_EQ_U64(U(ROUND, F32, F(0.5f)), 0);
    CHECK_EQ_U64(U(ROUND, F32, F(-0.5f)), F32_NZERO);
    CHECK_EQ_U64(U(ROUND, F32, F(1.5f)), F(2));
    CHECK_EQ_U64(U(ROUND, F32, F(2.5000002f)), F(3));
    CHECK_EQ_U64(U(ROUND, F32, F(-0.7f)), F(-1));
    CHECK_EQ_U64(U(ROUND, F32, F(0.49999997f)), 0);
    CHECK_EQ_U64(U(ROUND, F32, F(8388609.0f)), F(8388609.0f));
    CHECK_EQ_U64(U(ROUND, F32, F32_INF), F32_INF);
    CHECK(isnan32(U(ROUND, F32, F32_QNAN)));
    CHECK_EQ_U64(U(ROUND, F64, D(2.5)), D(2));
    CHECK_EQ_U64(U(ROUND, F64, D(3.5)), D(4));
    CHECK_EQ_U64(U(ROUND, F64, D(-0.5)), F64_NZERO);
    CHECK_EQ_U64(U(ROUND, F64, D(4503599627370497.0)), D(4503599627370497.0));
    CHECK_EQ_U64(U(ROUND, F64, D(0.49999999999999994)), 0);
}

/* Approximate ops: the C library in the type's precision; checked loosely. */
static void test_approx(void) {
    CHECK_EQ_U64(U(EXP, F32, 0), F(1));
    CHECK(fabsf(toF(U(EXP, F32, F(1))) - 2.7182817f) <= 1e-6f);
    CHECK_EQ_U64(U(EXP2, F32, F(3)), F(8));
    CHECK_EQ_U64(U(LOG, F32, F(1)), 0);
    CHECK_EQ_U64(U(LOG2, F32, F(8)), F(3));
    CHECK_EQ_U64(U(LOG, F32, 0), F32_NINF);
    CHECK(isnan32(U(LOG, F32, F(-1))));
    CHECK_EQ_U64(U(SIN, F32, 0), 0);
    CHECK_EQ_U64(U(COS, F32, 0), F(1));
    CHECK(fabsf(toF(U(SIN, F32, F(1.5707964f))) - 1.0f) <= 1e-6f);
    CHECK_EQ_U64(U(TANH, F32, 0), 0);
    CHECK_EQ_U64(U(TANH, F32, F(100)), F(1));
    CHECK(fabs(toD(U(EXP, F64, D(1))) - 2.718281828459045) <= 1e-15);
    CHECK_EQ_U64(U(EXP2, F64, D(-2)), D(0.25));
    CHECK_EQ_U64(U(LOG2, F64, D(1024)), D(10));
    CHECK(fabs(toD(U(LOG, F64, D(2.718281828459045))) - 1.0) <= 1e-15);
    CHECK(fabs(toD(U(COS, F64, D(3.141592653589793))) + 1.0) <= 1e-15);
    CHECK(fabs(toD(U(SIN, F64, D(0.5))) - 0.479425538604203) <= 1e-15);
    CHECK(fabs(toD(U(TANH, F64, D(0.5))) - 0.46211715726000974) <= 1e-15);
}

/* ---- integer unary ------------------------------------------------------------------ */

static void test_int_unary(void) {
    CHECK_EQ_U64(U(NEG, U32, 1), U32MAX);
    CHECK_EQ_U64(U(NEG, U32, 0), 0);
    CHECK_EQ_U64(U(NEG, I32, 5), I32(-5));
    CHECK_EQ_U64(U(NEG, I32, I32MIN), I32MIN);
    CHECK_EQ_U64(U(NEG, I64, I64MIN), I64MIN);
    CHECK_EQ_U64(U(NEG, U64, 1), U64MAX);
    CHECK_EQ_U64(U(NOT, U32, 0), U32MAX);
    CHECK_EQ_U64(U(NOT, I32, I32(-1)), 0);
    CHECK_EQ_U64(U(NOT, U64, 0), U64MAX);
    CHECK_EQ_U64(U(NOT, I64, 5), I64(-6));
    CHECK_EQ_U64(U(LNOT, BOOL, 1), 0);
    CHECK_EQ_U64(U(LNOT, BOOL, 0), 1);
    CHECK_EQ_U64(U(ABS, I32, I32(-5)), 5);
    CHECK_EQ_U64(U(ABS, I32, I32MIN), I32MIN);
    CHECK_EQ_U64(U(ABS, U32, U32MAX), U32MAX);
    CHECK_EQ_U64(U(ABS, I64, I64(-9)), 9);
    CHECK_EQ_U64(U(ABS, I64, I64MIN), I64MIN);
    CHECK_EQ_U64(U(ABS, U64, U64MAX), U64MAX);

    CHECK_EQ_U64(U(POPCOUNT, U32, 0), 0);
    CHECK_EQ_U64(U(POPCOUNT, U32, U32MAX), 32);
    CHECK_EQ_U64(U(POPCOUNT, I32, I32(-1)), 32);
    CHECK_EQ_U64(U(POPCOUNT, U64, U64MAX), 64);
    CHECK_EQ_U64(U(POPCOUNT, I64, 0xF0F0), 8);
    CHECK_EQ_U64(U(CLZ, U32, 0), 32);
    CHECK_EQ_U64(U(CLZ, U32, 1), 31);
    CHECK_EQ_U64(U(CLZ, I32, I32(-1)), 0);
    CHECK_EQ_U64(U(CLZ, U64, 0), 64);
    CHECK_EQ_U64(U(CLZ, U64, 1), 63);
    CHECK_EQ_U64(U(CLZ, I64, UINT64_C(0x00000000FFFFFFFF)), 32);
    CHECK_EQ_U64(U(CTZ, U32, 0), 32);
    CHECK_EQ_U64(U(CTZ, U32, I32MIN), 31);
    CHECK_EQ_U64(U(CTZ, I32, 8), 3);
    CHECK_EQ_U64(U(CTZ, U64, 0), 64);
    CHECK_EQ_U64(U(CTZ, I64, I64MIN), 63);
    CHECK_EQ_U64(U(BREV, U32, 1), I32MIN);
    CHECK_EQ_U64(U(BREV, U32, 0x12345678u), 0x1E6A2C48u);
    CHECK_EQ_U64(U(BREV, I32, I32MIN), 1);
    CHECK_EQ_U64(U(BREV, U64, 1), I64MIN);
    CHECK_EQ_U64(U(BREV, I64, UINT64_C(0x00000000000000F0)), UINT64_C(0x0F00000000000000));
}

/* ---- conversions ------------------------------------------------------------------------ */

static void test_cast_float_to_int(void) {
    /* truncate toward zero, saturate, NaN -> 0 */
    CHECK_EQ_U64(C(I32, F32, F(3e9f)), I32MAX);
    CHECK_EQ_U64(C(I32, F32, F(-3e9f)), I32MIN);
    CHECK_EQ_U64(C(I32, F32, F32_QNAN), 0);
    CHECK_EQ_U64(C(I32, F32, F(-2.5f)), I32(-2));
    CHECK_EQ_U64(C(I32, F32, F(2.9f)), 2);
    CHECK_EQ_U64(C(I32, F32, F32_INF), I32MAX);
    CHECK_EQ_U64(C(I32, F32, F32_NINF), I32MIN);
    CHECK_EQ_U64(C(I32, F32, F(2147483648.0f)), I32MAX);
    CHECK_EQ_U64(C(I32, F32, F(-2147483648.0f)), I32MIN);
    CHECK_EQ_U64(C(I32, F32, F(2147483520.0f)), 2147483520u);
    CHECK_EQ_U64(C(I32, F64, D(2147483647.9)), I32MAX);
    CHECK_EQ_U64(C(I32, F64, D(-2147483648.9)), I32MIN);
    CHECK_EQ_U64(C(I32, F64, D(-2147483649.0)), I32MIN);
    CHECK_EQ_U64(C(U32, F32, F(-1.5f)), 0);
    CHECK_EQ_U64(C(U32, F32, F(-0.5f)), 0);
    CHECK_EQ_U64(C(U32, F32, F(5e9f)), U32MAX);
    CHECK_EQ_U64(C(U32, F32, F(4294967040.0f)), 4294967040u);
    CHECK_EQ_U64(C(U32, F64, D(4294967295.5)), U32MAX);
    CHECK_EQ_U64(C(U32, F64, D(4294967296.0)), U32MAX);
    CHECK_EQ_U64(C(U32, F32, F32_QNAN), 0);
    CHECK_EQ_U64(C(I64, F64, D(9223372036854775808.0)), I64MAX); /* 2^63 is out of range */
    CHECK_EQ_U64(C(I64, F64, D(-9223372036854775808.0)), I64MIN);
    CHECK_EQ_U64(C(I64, F64, D(-1e300)), I64MIN);
    CHECK_EQ_U64(C(I64, F64, D(9223372036854774784.0)), UINT64_C(9223372036854774784));
    CHECK_EQ_U64(C(I64, F32, F(-3.75f)), I64(-3));
    CHECK_EQ_U64(C(I64, F32, F(1e19f)), I64MAX);
    CHECK_EQ_U64(C(I64, F64, F64_QNAN), 0);
    CHECK_EQ_U64(C(U64, F64, D(18446744073709551616.0)), U64MAX);
    CHECK_EQ_U64(C(U64, F64, D(18446744073709549568.0)), UINT64_C(18446744073709549568));
    CHECK_EQ_U64(C(U64, F64, D(-1.0)), 0);
    CHECK_EQ_U64(C(U64, F32, F(1e19f)), UINT64_C(9999999980506447872));
    CHECK_EQ_U64(C(U64, F32, F32_INF), U64MAX);
    CHECK_EQ_U64(C(U64, F32, F32_QNAN), 0);
}

static void test_cast_int_to_float(void) {
    /* round to nearest even */
    CHECK_EQ_U64(C(F32, I32, 16777217), 0x4B800000u); /* -> 16777216 */
    CHECK_EQ_U64(C(F32, I32, 16777219), 0x4B800002u); /* -> 16777220 */
    CHECK_EQ_U64(C(F32, I32, I32(-16777217)), 0xCB800000u);
    CHECK_EQ_U64(C(F32, I32, I32MIN), 0xCF000000u);
    CHECK_EQ_U64(C(F32, U32, U32MAX), 0x4F800000u); /* 2^32 */
    CHECK_EQ_U64(C(F32, U32, I32MIN), 0x4F000000u);
    CHECK_EQ_U64(C(F64, I32, I32(-7)), D(-7));
    CHECK_EQ_U64(C(F64, U32, U32MAX), D(4294967295.0));
    /* u64 -> f32 converts directly: via double the sticky bit would be lost
     * (2^63 + 2^39 + 1 must round up to 2^63 + 2^40) */
    CHECK_EQ_U64(C(F32, U64, UINT64_C(0x8000008000000001)), 0x5F000001u);
    CHECK_EQ_U64(C(F32, U64, UINT64_C(0x8000008000000000)), 0x5F000000u);
    CHECK_EQ_U64(C(F32, U64, U64MAX), 0x5F800000u);
    CHECK_EQ_U64(C(F32, I64, I64(-(INT64_C(0x4000004000000001)))), 0xDE800001u);
    CHECK_EQ_U64(C(F32, I64, I64MIN), 0xDF000000u);
    CHECK_EQ_U64(C(F64, U64, U64MAX), D(18446744073709551616.0));
    CHECK_EQ_U64(C(F64, U64, UINT64_C(0x20000000000001)), D(9007199254740992.0));
    CHECK_EQ_U64(C(F64, U64, UINT64_C(0x20000000000003)), D(9007199254740996.0));
    CHECK_EQ_U64(C(F64, I64, I64(-9007199254740993)), D(-9007199254740992.0));
    CHECK_EQ_U64(C(F64, I64, I64MIN), D(-9223372036854775808.0));
    CHECK_EQ_U64(C(F32, BOOL, 1), F(1));
    CHECK_EQ_U64(C(F64, BOOL, 0), 0);
}

static void test_cast_other(void) {
    /* narrowing keeps the low bits; widening extends by the source's signedness */
    CHECK_EQ_U64(C(I32, I64, UINT64_C(0x180000001)), 0x80000001u);
    CHECK_EQ_U64(C(U32, U64, U64MAX), U32MAX);
    CHECK_EQ_U64(C(U64, I32, I32(-1)), U64MAX);
    CHECK_EQ_U64(C(I64, I32, I32MIN), UINT64_C(0xFFFFFFFF80000000));
    CHECK_EQ_U64(C(I64, U32, U32MAX), U32MAX);
    CHECK_EQ_U64(C(U32, I32, I32(-1)), U32MAX);
    CHECK_EQ_U64(C(I32, U32, U32MAX), U32MAX);
    CHECK_EQ_U64(C(U64, I64, I64(-2)), I64(-2));
    /* -> bool is x != 0 (NaN -> true), bool -> number is 0/1 */
    CHECK_EQ_U64(C(BOOL, F32, F32_QNAN), 1);
    CHECK_EQ_U64(C(BOOL, F32, F32_NZERO), 0);
    CHECK_EQ_U64(C(BOOL, F32, F(0.5f)), 1);
    CHECK_EQ_U64(C(BOOL, F64, F64_QNAN), 1);
    CHECK_EQ_U64(C(BOOL, F64, 1), 1); /* smallest subnormal */
    CHECK_EQ_U64(C(BOOL, I64, UINT64_C(1) << 32), 1);
    CHECK_EQ_U64(C(BOOL, U32, 0), 0);
    CHECK_EQ_U64(C(BOOL, I32, I32(-1)), 1);
    CHECK_EQ_U64(C(I32, BOOL, 1), 1);
    CHECK_EQ_U64(C(U64, BOOL, 1), 1);
    CHECK_EQ_U64(C(I64, BOOL, 0), 0);
    CHECK_EQ_U64(C(BOOL, BOOL, 1), 1);
    /* float <-> float */
    CHECK_EQ_U64(C(F64, F32, F(0.1f)), D((double)0.1f));
    CHECK_EQ_U64(C(F64, F32, 1), D(0x1p-149));
    CHECK_EQ_U64(C(F32, F64, D(1.0 + 0x1p-24)), F(1)); /* tie -> even */
    CHECK_EQ_U64(C(F32, F64, D(1.0 + 0x1p-24 + 0x1p-50)), F(1.0f + 0x1p-23f));
    CHECK_EQ_U64(C(F32, F64, D(1e300)), F32_INF);
    CHECK_EQ_U64(C(F32, F64, D(-1e300)), F32_NINF);
    CHECK_EQ_U64(C(F32, F64, D(0x1p-149)), 1);
    CHECK_EQ_U64(C(F32, F64, D(0x1p-151)), 0);
    CHECK(isnan32(C(F32, F64, F64_QNAN)));
    CHECK(isnan64(C(F64, F32, F32_QNAN)));
    CHECK_EQ_U64(C(F32, F32, F(2)), F(2));
}

static void test_bitcast(void) {
    CHECK_EQ_U64(vyre_sem_bitcast(VYRE_U32, VYRE_F32, F(1)), 0x3F800000u);
    CHECK_EQ_U64(vyre_sem_bitcast(VYRE_F32, VYRE_I32, I32(-1)), U32MAX);
    CHECK_EQ_U64(vyre_sem_bitcast(VYRE_I32, VYRE_U32, I32MIN), I32MIN);
    CHECK_EQ_U64(vyre_sem_bitcast(VYRE_F64, VYRE_I64, I64(-1)), U64MAX);
    CHECK_EQ_U64(vyre_sem_bitcast(VYRE_U64, VYRE_F64, D(1)), UINT64_C(0x3FF0000000000000));
    CHECK_EQ_U64(vyre_sem_bitcast(VYRE_I64, VYRE_U64, I64MIN), I64MIN);
}

static void test_atomic(void) {
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_U32, U32MAX, 2, 0), 1);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_SUB, VYRE_I32, 0, 1, 0), U32MAX);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_I32, 5, I32(-1), 0), I32(-1));
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MIN, VYRE_U32, 5, U32MAX, 0), 5);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_I32, 5, I32(-1), 0), 5);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_MAX, VYRE_U64, 5, U64MAX, 0), U64MAX);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_AND, VYRE_U32, 0xFF, 0x0F, 0), 0x0F);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_OR, VYRE_U64, 0xF0, 0x0F, 0), 0xFF);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_XOR, VYRE_I32, 0xFF, 0x0F, 0), 0xF0);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_EXCHANGE, VYRE_U32, 1, 9, 0), 9);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_CAS, VYRE_U32, 3, 9, 3), 9);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_CAS, VYRE_U32, 4, 9, 3), 4);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_CAS, VYRE_U64, U64MAX, 1, U64MAX), 1);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_F32, F(1.5f), F(2), 0), F(3.5f));
    /* f32 atomic add flushes subnormal inputs and results to signed zero (as atom.add.f32) */
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_F32, 0x00000100u, 0, 0), 0);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_F32, 0x80000100u, 0x80000000u, 0),
                 0x80000000u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_F32, F(1.5f), 0x00000001u, 0), F(1.5f));
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_F32, 0x00800000u, 0x80800001u, 0),
                 0x80000000u);
    CHECK_EQ_U64(vyre_sem_atomic(VYRE_ATOMIC_ADD, VYRE_I64, I64MAX, 1, 0), I64MIN);
}

static void test_memory(void) {
    CHECK_EQ_U64(vyre_sem_from_memory(VYRE_BOOL, 0x100), 1);
    CHECK_EQ_U64(vyre_sem_from_memory(VYRE_BOOL, 0), 0);
    CHECK_EQ_U64(vyre_sem_from_memory(VYRE_BOOL, UINT64_C(0x100000000)), 0); /* a 32-bit word */
    CHECK_EQ_U64(vyre_sem_from_memory(VYRE_U32, UINT64_C(0x1FFFFFFFF)), U32MAX);
    CHECK_EQ_U64(vyre_sem_from_memory(VYRE_F32, UINT64_C(0xAB3F800000)), F(1));
    CHECK_EQ_U64(vyre_sem_from_memory(VYRE_U64, U64MAX), U64MAX);
}

int main(void) {
    RUN_TEST(test_wrap);
    RUN_TEST(test_div_rem);
    RUN_TEST(test_bitwise_shift);
    RUN_TEST(test_compare);
    RUN_TEST(test_minmax);
    RUN_TEST(test_logic_mulhi);
    RUN_TEST(test_float_arith);
    RUN_TEST(test_fma);
    RUN_TEST(test_float_unary);
    RUN_TEST(test_approx);
    RUN_TEST(test_int_unary);
    RUN_TEST(test_cast_float_to_int);
    RUN_TEST(test_cast_int_to_float);
    RUN_TEST(test_cast_other);
    RUN_TEST(test_bitcast);
    RUN_TEST(test_atomic);
    RUN_TEST(test_memory);
    return harness_finish();
}
