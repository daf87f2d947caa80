/* sem.c — the meaning of every op on every type (ARCHITECTURE.md §3), written once.
 * The reference interpreter, the constant folder and the tests call these functions,
 * so the spec lives in exactly one place. Values travel as vyre_bits: 32-bit types in
 * the low 32 bits with the upper half zero, bool as 0/1.
 *
 * Portability notes (why the code looks the way it does):
 * - Integer arithmetic is done on unsigned types so wrap-around is defined C; signed
 *   values are decoded with sign-bit arithmetic rather than implementation-defined
 *   conversions.
 * - Float arithmetic must be single-rounded IEEE in the operand's precision and never
 *   contracted into an FMA: each op is one C operation on float/double, compiled with
 *   contraction off (ISO C mode already defaults to that in GCC; the pragmas make it
 *   explicit for other modes and compilers). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sem.h"

#include <math.h>
#include <string.h>

#define M32 UINT64_C(0xFFFFFFFF)
#define SIGN32 UINT64_C(0x80000000)
#define SIGN64 UINT64_C(0x8000000000000000)

/* ---- bit helpers -------------------------------------------------------- */

static float f32_of(vyre_bits b) {
    uint32_t u = (uint32_t)(b & M32);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static vyre_bits bits_of_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (vyre_bits)u;
}

static double f64_of(vyre_bits b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static vyre_bits bits_of_f64(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static bool is64(enum vyre_type t) { return t == VYRE_I64 || t == VYRE_U64 || t == VYRE_F64; }

static vyre_bits mask_of(enum vyre_type t) {
    if (t == VYRE_BOOL) return 1;
    return is64(t) ? ~UINT64_C(0) : M32;
}

static vyre_bits sign_of(enum vyre_type t) { return is64(t) ? SIGN64 : SIGN32; }

/* Signed value of an i32/i64 bit pattern, without implementation-defined casts. */
static int64_t as_signed(enum vyre_type t, vyre_bits b) {
    if (!is64(t)) {
        b &= M32;
        return (int64_t)(b ^ SIGN32) - (int64_t)SIGN32;
    }
    if (b <= (vyre_bits)INT64_MAX) return (int64_t)b;
    return -(int64_t)(~b) - 1;
}

/* Signed order as unsigned order after flipping the sign bit. */
static bool int_less(enum vyre_type t, vyre_bits a, vyre_bits b) {
    if (vyre_type_is_signed(t)) {
        a ^= sign_of(t);
        b ^= sign_of(t);
    }
    return a < b;
}

static unsigned popcount64(uint64_t x) {
    unsigned n = 0;
    while (x) {
        x &= x - 1;
        n++;
    }
    return n;
}

static unsigned clz_w(uint64_t x, unsigned bits) {
    unsigned n = 0;
    for (unsigned i = bits; i-- > 0;) {
        if ((x >> i) & 1u) break;
        n++;
    }
    return n;
}

static unsigned ctz_w(uint64_t x, unsigned bits) {
    unsigned n = 0;
    for (unsigned i = 0; i < bits; i++) {
        if ((x >> i) & 1u) break;
        n++;
    }
    return n;
}

static uint64_t brev_w(uint64_t x, unsigned bits) {
    uint64_t r = 0;
    for (unsigned i = 0; i < bits; i++) r |= ((x >> i) & 1u) << (bits - 1u - i);
    return r;
}

/* High 64 bits of the 128-bit unsigned product, from 32-bit limbs. */
static uint64_t mulhi_u64(uint64_t a, uint64_t b) {
    uint64_t a0 = a & M32, a1 = a >> 32, b0 = b & M32, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & M32) + (p10 & M32);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

static vyre_bits int_mulhi(enum vyre_type t, vyre_bits a, vyre_bits b) {
    if (!is64(t)) {
        if (t == VYRE_U32) return ((a & M32) * (b & M32)) >> 32;
        /* The high word of the two's-complement 64-bit product is the signed high half. */
        int64_t p = as_signed(t, a) * as_signed(t, b);
        return ((uint64_t)p >> 32) & M32;
    }
    uint64_t hi = mulhi_u64(a, b);
    if (t == VYRE_I64) {
        /* signed = unsigned high half minus the other operand for each negative one */
        if (a & SIGN64) hi -= b;
        if (b & SIGN64) hi -= a;
    }
    return hi;
}

static vyre_bits int_div(enum vyre_type t, vyre_bits a, vyre_bits b, bool rem) {
    vyre_bits m = mask_of(t);
    a &= m;
    b &= m;
    if (b == 0) return rem ? a : m; /* x/0 = all ones (-1 signed), x%0 = x */
    if (!vyre_type_is_signed(t)) return rem ? a % b : a / b;
    if (a == sign_of(t) && b == m) return rem ? 0 : a; /* MIN / -1 = MIN, MIN % -1 = 0 */
    int64_t sa = as_signed(t, a), sb = as_signed(t, b);
    int64_t r = rem ? sa % sb : sa / sb; /* C99: truncation toward zero */
    return (vyre_bits)r & m;
}

static vyre_bits int_shift(enum vyre_type t, vyre_bits a, vyre_bits b, bool left) {
    unsigned bits = vyre_type_bits(t);
    vyre_bits m = mask_of(t);
    unsigned amt = (unsigned)(b & (bits - 1u));
    a &= m;
    if (left) return (a << amt) & m;
    if (vyre_type_is_signed(t) && (a & sign_of(t))) return (~((~a & m) >> amt)) & m;
    return a >> amt;
}

/* ---- float helpers ------------------------------------------------------ */

/* Half-to-even without depending on the run-time rounding mode. */
static float round_even_f32(float x) {
    if (!(fabsf(x) < 8388608.0f)) return x; /* NaN, inf, or already integral */
    float t = truncf(x);
    float d = x - t; /* exact: both share the exponent range */
    float one = x < 0 ? -1.0f : 1.0f;
    float ad = fabsf(d);
    if (ad > 0.5f) return t + one;
    if (ad == 0.5f && fmodf(t, 2.0f) != 0.0f) return t + one;
    return t;
}

static double round_even_f64(double x) {
    if (!(fabs(x) < 4503599627370496.0)) return x;
    double t = trunc(x);
    double d = x - t;
    double one = x < 0 ? -1.0 : 1.0;
    double ad = fabs(d);
    if (ad > 0.5) return t + one;
    if (ad == 0.5 && fmod(t, 2.0) != 0.0) return t + one;
    return t;
}

/* min/max returning the non-NaN operand; -0.0 orders below +0.0 (as the GPU's
 * min/max instructions do), so the result never depends on operand order. */
static bool f_less(double a, double b) {
    if (a == b) return signbit(a) && !signbit(b);
    return a < b;
}

static vyre_bits float_minmax(enum vyre_type t, vyre_bits a, vyre_bits b, bool max) {
    double x = t == VYRE_F32 ? (double)f32_of(a) : f64_of(a);
    double y = t == VYRE_F32 ? (double)f32_of(b) : f64_of(b);
    if (isnan(x)) return b;
    if (isnan(y)) return a;
    bool take_a = max ? f_less(y, x) : f_less(x, y);
    if (x == y && !signbit(x) == !signbit(y)) take_a = true; /* same value: either */
    return take_a ? a : b;
}

/* Each evaluator below stores the result in *r and returns true, or returns false
 * when the op has no meaning for that type (the default branches): a row of ops.h
 * without semantics here is caught by tests/c/test_ops.c, not run as a silent 0. */

static bool f32_unary(enum vyre_op op, float x, vyre_bits *r) {
    float y;
    switch (op) {
    case VYRE_OP_SQRT: y = sqrtf(x); break;
    case VYRE_OP_RSQRT: y = 1.0f / sqrtf(x); break;
    case VYRE_OP_FLOOR: y = floorf(x); break;
    case VYRE_OP_CEIL: y = ceilf(x); break;
    case VYRE_OP_ROUND: y = round_even_f32(x); break;
    case VYRE_OP_TRUNC: y = truncf(x); break;
    case VYRE_OP_EXP: y = expf(x); break;
    case VYRE_OP_EXP2: y = exp2f(x); break;
    case VYRE_OP_LOG: y = logf(x); break;
    case VYRE_OP_LOG2: y = log2f(x); break;
    case VYRE_OP_SIN: y = sinf(x); break;
    case VYRE_OP_COS: y = cosf(x); break;
    case VYRE_OP_TANH: y = tanhf(x); break;
    default: return false;
    }
    *r = bits_of_f32(y);
    return true;
}

static bool f64_unary(enum vyre_op op, double x, vyre_bits *r) {
    double y;
    switch (op) {
    case VYRE_OP_SQRT: y = sqrt(x); break;
    case VYRE_OP_RSQRT: y = 1.0 / sqrt(x); break;
    case VYRE_OP_FLOOR: y = floor(x); break;
    case VYRE_OP_CEIL: y = ceil(x); break;
    case VYRE_OP_ROUND: y = round_even_f64(x); break;
    case VYRE_OP_TRUNC: y = trunc(x); break;
    case VYRE_OP_EXP: y = exp(x); break;
    case VYRE_OP_EXP2: y = exp2(x); break;
    case VYRE_OP_LOG: y = log(x); break;
    case VYRE_OP_LOG2: y = log2(x); break;
    case VYRE_OP_SIN: y = sin(x); break;
    case VYRE_OP_COS: y = cos(x); break;
    case VYRE_OP_TANH: y = tanh(x); break;
    default: return false;
    }
    *r = bits_of_f64(y);
    return true;
}

static bool f32_binary(enum vyre_op op, float x, float y, vyre_bits *r) {
    switch (op) {
    case VYRE_OP_ADD: *r = bits_of_f32(x + y); return true;
    case VYRE_OP_SUB: *r = bits_of_f32(x - y); return true;
    case VYRE_OP_MUL: *r = bits_of_f32(x * y); return true;
    case VYRE_OP_DIV: *r = bits_of_f32(x / y); return true;
    case VYRE_OP_EQ: *r = x == y; return true;
    case VYRE_OP_NE: *r = x != y; return true;
    case VYRE_OP_LT: *r = x < y; return true;
    case VYRE_OP_LE: *r = x <= y; return true;
    case VYRE_OP_GT: *r = x > y; return true;
    case VYRE_OP_GE: *r = x >= y; return true;
    default: return false;
    }
}

static bool f64_binary(enum vyre_op op, double x, double y, vyre_bits *r) {
    switch (op) {
    case VYRE_OP_ADD: *r = bits_of_f64(x + y); return true;
    case VYRE_OP_SUB: *r = bits_of_f64(x - y); return true;
    case VYRE_OP_MUL: *r = bits_of_f64(x * y); return true;
    case VYRE_OP_DIV: *r = bits_of_f64(x / y); return true;
    case VYRE_OP_EQ: *r = x == y; return true;
    case VYRE_OP_NE: *r = x != y; return true;
    case VYRE_OP_LT: *r = x < y; return true;
    case VYRE_OP_LE: *r = x <= y; return true;
    case VYRE_OP_GT: *r = x > y; return true;
    case VYRE_OP_GE: *r = x >= y; return true;
    default: return false;
    }
}

static bool sem_unary(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits *r) {
    if (t == VYRE_F32) {
        a &= M32;
        /* sign flip / clear, NaN payload kept */
        if (op == VYRE_OP_NEG || op == VYRE_OP_ABS) {
            *r = op == VYRE_OP_NEG ? a ^ SIGN32 : a & ~SIGN32;
            return true;
        }
        return f32_unary(op, f32_of(a), r);
    }
    if (t == VYRE_F64) {
        if (op == VYRE_OP_NEG || op == VYRE_OP_ABS) {
            *r = op == VYRE_OP_NEG ? a ^ SIGN64 : a & ~SIGN64;
            return true;
        }
        return f64_unary(op, f64_of(a), r);
    }
    if (t == VYRE_BOOL) {
        if (op != VYRE_OP_LNOT) return false;
        *r = a == 0;
        return true;
    }
    vyre_bits m = mask_of(t);
    unsigned bits = vyre_type_bits(t);
    a &= m;
    switch (op) {
    case VYRE_OP_NEG: *r = (0u - a) & m; return true;
    case VYRE_OP_NOT: *r = ~a & m; return true;
    case VYRE_OP_ABS:
        *r = vyre_type_is_signed(t) && (a & sign_of(t)) ? (0u - a) & m : a;
        return true;
    case VYRE_OP_POPCOUNT: *r = popcount64(a); return true;
    case VYRE_OP_CLZ: *r = clz_w(a, bits); return true;
    case VYRE_OP_CTZ: *r = ctz_w(a, bits); return true;
    case VYRE_OP_BREV: *r = brev_w(a, bits); return true;
    default: return false;
    }
}

static bool sem_binary(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits b, vyre_bits *r) {
    if (t == VYRE_F32 || t == VYRE_F64) {
        if (op == VYRE_OP_MIN || op == VYRE_OP_MAX) {
            if (t == VYRE_F32) {
                a &= M32;
                b &= M32;
            }
            *r = float_minmax(t, a, b, op == VYRE_OP_MAX);
            return true;
        }
        if (t == VYRE_F32) return f32_binary(op, f32_of(a), f32_of(b), r);
        return f64_binary(op, f64_of(a), f64_of(b), r);
    }
    vyre_bits m = mask_of(t);
    if (t == VYRE_BOOL) {
        a = a != 0;
        b = b != 0;
    }
    a &= m;
    b &= m;
    switch (op) {
    case VYRE_OP_ADD: *r = (a + b) & m; return true;
    case VYRE_OP_SUB: *r = (a - b) & m; return true;
    case VYRE_OP_MUL: *r = (a * b) & m; return true;
    case VYRE_OP_DIV: *r = int_div(t, a, b, false); return true;
    case VYRE_OP_REM: *r = int_div(t, a, b, true); return true;
    case VYRE_OP_AND: *r = a & b; return true;
    case VYRE_OP_OR: *r = a | b; return true;
    case VYRE_OP_XOR: *r = a ^ b; return true;
    case VYRE_OP_SHL: *r = int_shift(t, a, b, true); return true;
    case VYRE_OP_SHR: *r = int_shift(t, a, b, false); return true;
    case VYRE_OP_EQ: *r = a == b; return true;
    case VYRE_OP_NE: *r = a != b; return true;
    case VYRE_OP_LT: *r = int_less(t, a, b); return true;
    case VYRE_OP_LE: *r = !int_less(t, b, a); return true;
    case VYRE_OP_GT: *r = int_less(t, b, a); return true;
    case VYRE_OP_GE: *r = !int_less(t, a, b); return true;
    case VYRE_OP_MIN: *r = int_less(t, b, a) ? b : a; return true;
    case VYRE_OP_MAX: *r = int_less(t, a, b) ? b : a; return true;
    case VYRE_OP_LAND: *r = (a != 0) && (b != 0); return true;
    case VYRE_OP_LOR: *r = (a != 0) || (b != 0); return true;
    case VYRE_OP_MULHI: *r = int_mulhi(t, a, b) & m; return true;
    default: return false;
    }
}

/* ---- public table ------------------------------------------------------- */

bool vyre_sem_op(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits b, vyre_bits *out) {
    vyre_bits r = 0;
    /* The op table decides which types an op takes; outside them there is no meaning
     * to define, and the validator never lets such an expression through. */
    bool ok = vyre_op_admits(op, t) &&
              (vyre_op_is_unary(op) ? sem_unary(op, t, a, &r) : sem_binary(op, t, a, b, &r));
    if (out) *out = ok ? r : 0;
    return ok;
}

vyre_bits vyre_sem_unary(enum vyre_op op, enum vyre_type t, vyre_bits a) {
    vyre_bits r;
    vyre_sem_op(op, t, a, 0, &r);
    return r;
}

vyre_bits vyre_sem_binary(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits b) {
    vyre_bits r;
    vyre_sem_op(op, t, a, b, &r);
    return r;
}

/* Saturating truncation of a finite-or-not double to an integer type; NaN -> 0.
 * All bounds used are exact powers of two, so the comparisons are exact. */
static vyre_bits float_to_int(enum vyre_type to, double d) {
    if (isnan(d)) return 0;
    d = trunc(d);
    switch (to) {
    case VYRE_I32:
        if (d >= 2147483648.0) return 0x7FFFFFFFu;
        if (d < -2147483648.0) return SIGN32;
        return (vyre_bits)(int64_t)d & M32;
    case VYRE_U32:
        if (d >= 4294967296.0) return M32;
        if (d < 0.0) return 0;
        return (vyre_bits)d;
    case VYRE_I64:
        if (d >= 9223372036854775808.0) return (vyre_bits)INT64_MAX;
        if (d < -9223372036854775808.0) return SIGN64;
        return (vyre_bits)(int64_t)d;
    case VYRE_U64:
        if (d >= 18446744073709551616.0) return ~UINT64_C(0);
        if (d < 0.0) return 0;
        return (vyre_bits)d;
    default: return 0;
    }
}

/* Integer (or bool) source to float target; each C conversion rounds once,
 * to nearest even, directly from the integer (no detour through double for f32). */
static vyre_bits int_to_float(enum vyre_type to, enum vyre_type from, vyre_bits a) {
    bool f32 = to == VYRE_F32;
    switch (from) {
    case VYRE_BOOL: return f32 ? bits_of_f32(a ? 1.0f : 0.0f) : bits_of_f64(a ? 1.0 : 0.0);
    case VYRE_I32: {
        int32_t v = (int32_t)as_signed(VYRE_I32, a);
        return f32 ? bits_of_f32((float)v) : bits_of_f64((double)v);
    }
    case VYRE_U32: {
        uint32_t v = (uint32_t)(a & M32);
        return f32 ? bits_of_f32((float)v) : bits_of_f64((double)v);
    }
    case VYRE_I64: {
        int64_t v = as_signed(VYRE_I64, a);
        return f32 ? bits_of_f32((float)v) : bits_of_f64((double)v);
    }
    case VYRE_U64: return f32 ? bits_of_f32((float)a) : bits_of_f64((double)a);
    default: return 0;
    }
}

vyre_bits vyre_sem_cast(enum vyre_type to, enum vyre_type from, vyre_bits a) {
    if (from >= VYRE_TYPE_COUNT || to >= VYRE_TYPE_COUNT) return 0;
    a = vyre_sem_from_memory(from, a);
    if (from == VYRE_F32 || from == VYRE_F64) {
        double d = from == VYRE_F32 ? (double)f32_of(a) : f64_of(a);
        if (to == VYRE_BOOL) return d != 0.0; /* NaN != 0 is true */
        if (to == VYRE_F32) return from == VYRE_F32 ? a : bits_of_f32((float)d);
        if (to == VYRE_F64) return bits_of_f64(d);
        return float_to_int(to, d);
    }
    if (to == VYRE_BOOL) return a != 0;
    if (to == VYRE_F32 || to == VYRE_F64) return int_to_float(to, from, a);
    /* integer/bool to integer: sign-extend signed sources, keep the low bits */
    vyre_bits wide = vyre_type_is_signed(from) ? (vyre_bits)as_signed(from, a) : a;
    return wide & mask_of(to);
}

vyre_bits vyre_sem_bitcast(enum vyre_type to, enum vyre_type from, vyre_bits a) {
    (void)from;
    if (to >= VYRE_TYPE_COUNT) return 0;
    return to == VYRE_BOOL ? (a != 0) : a & mask_of(to);
}

vyre_bits vyre_sem_fma(enum vyre_type t, vyre_bits a, vyre_bits b, vyre_bits c) {
    if (t == VYRE_F32) return bits_of_f32(fmaf(f32_of(a), f32_of(b), f32_of(c)));
    if (t == VYRE_F64) return bits_of_f64(fma(f64_of(a), f64_of(b), f64_of(c)));
    /* not legal IR on integers; defined anyway as the wrapped a*b+c */
    vyre_bits m = mask_of(t);
    return (a * b + c) & m;
}

/* f32 subnormal -> zero of the same sign. */
static vyre_bits flush_f32(vyre_bits b) { return (b & 0x7F800000u) == 0 ? (b & 0x80000000u) : b; }

/* f32 atomic min/max (docs/ARCHITECTURE.md §10): a NaN value leaves the word as it is, bits and
 * all; otherwise the float min/max of §3 (a NaN word is replaced by the value, -0 < +0).
 * Defining "both NaN" as "unchanged" rather than as a fresh NaN makes the final word
 * independent of the order concurrent atomics land in, NaN payloads included, and the
 * GPU's compare-and-swap loop reproduces it exactly without relying on which NaN the
 * hardware's min.f32 makes (it only ever sees a non-NaN value). Subnormals are kept. */
static vyre_bits atomic_minmax_f32(enum vyre_op op, vyre_bits old, vyre_bits value) {
    bool value_nan = (value & 0x7F800000u) == 0x7F800000u && (value & 0x007FFFFFu) != 0;
    return value_nan ? old : vyre_sem_binary(op, VYRE_F32, old, value);
}

vyre_bits vyre_sem_atomic(enum vyre_atomic_op op, enum vyre_type t, vyre_bits old, vyre_bits value,
                          vyre_bits expected) {
    old = vyre_sem_from_memory(t, old);
    value = vyre_sem_from_memory(t, value);
    switch (op) {
    case VYRE_ATOMIC_ADD:
        /* f32 atomic add flushes subnormal inputs and results to signed zero: that is
         * what the hardware's atom.add.f32 does, and §10 of docs/ARCHITECTURE.md
         * defines it so (the one place subnormals are not kept). */
        if (t == VYRE_F32)
            return flush_f32(vyre_sem_binary(VYRE_OP_ADD, t, flush_f32(old), flush_f32(value)));
        return vyre_sem_binary(VYRE_OP_ADD, t, old, value);
    case VYRE_ATOMIC_SUB: return vyre_sem_binary(VYRE_OP_SUB, t, old, value);
    case VYRE_ATOMIC_MIN:
        if (t == VYRE_F32) return atomic_minmax_f32(VYRE_OP_MIN, old, value);
        return vyre_sem_binary(VYRE_OP_MIN, t, old, value);
    case VYRE_ATOMIC_MAX:
        if (t == VYRE_F32) return atomic_minmax_f32(VYRE_OP_MAX, old, value);
        return vyre_sem_binary(VYRE_OP_MAX, t, old, value);
    case VYRE_ATOMIC_AND: return vyre_sem_binary(VYRE_OP_AND, t, old, value);
    case VYRE_ATOMIC_OR: return vyre_sem_binary(VYRE_OP_OR, t, old, value);
    case VYRE_ATOMIC_XOR: return vyre_sem_binary(VYRE_OP_XOR, t, old, value);
    case VYRE_ATOMIC_EXCHANGE: return value;
    case VYRE_ATOMIC_CAS:
        /* compares raw words, as the hardware does */
        return old == vyre_sem_from_memory(t, expected) ? value : old;
    default: return old;
    }
}

vyre_bits vyre_sem_from_memory(enum vyre_type t, vyre_bits raw) {
    if (t == VYRE_BOOL) return (raw & M32) != 0;
    if (t >= VYRE_TYPE_COUNT) return raw;
    return raw & mask_of(t);
}
