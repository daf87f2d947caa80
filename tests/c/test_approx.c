/* test_approx.c — proves on the CPU the ULP bounds of the approximate ops (exp exp2
 * log log2 sin cos tanh rsqrt, f32 and f64) that the PTX emitter generates. The
 * emitter builds each op as a straight-line program of exactly rounded IEEE
 * operations (ptx_approx.h); this test evaluates the SAME program instruction by
 * instruction with fmaf/fma, rintf, division and sqrt, which the GPU computes
 * bit-identically (fma.rn, div.rn, sqrt.rn, cvt.rni, no .ftz). The results are
 * compared with a reference carrying extra precision (double libm for f32,
 * long double libm for f64, rounded to the type) over dense sweeps and edge cases,
 * and with the plain C library (what the reference backend uses, sem.c) over the
 * inputs of spec/22_cuda_parity_spec.lua. Finally every program is assembled by
 * ptxas for sm_70 (checked as sm_75 where CUDA 13 refuses sm_70), sm_80 and sm_90.
 * VYRE_APPROX_SCALE=k multiplies the sweep sizes (k = 64 was used for docs/ULP.md). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "ir.h"
#include "ptx_approx.h"

/* ---- evaluating a va program ---------------------------------------------------- */

union val {
    float f;
    double d;
    int32_t i;
    int64_t l;
    bool p;
};

static int32_t sat_i32(float f) {
    if (isnan(f)) return 0;
    if (f >= 0x1p31f) return INT32_MAX;
    if (f < -0x1p31f) return INT32_MIN;
    return (int32_t)f;
}

static int64_t sat_i64(double d) {
    if (isnan(d)) return 0;
    if (d >= 0x1p63) return INT64_MAX;
    if (d < -0x1p63) return INT64_MIN;
    return (int64_t)d;
}

static double eval(const struct va_prog *p, double xin) {
    union val V[VA_MAX_INS];
    for (uint16_t v = 0; v < p->n; v++) {
        const struct va_ins *in = &p->ins[v];
        const union val A = V[in->a], B = V[in->b], C = V[in->c];
        enum va_kind ka = (enum va_kind)p->ins[in->a].kind;
        bool w = ka == VA_F64 || ka == VA_I64; /* width of the operands */
        union val r;
        memset(&r, 0, sizeof r);
        switch ((enum va_op)in->op) {
        case VA_IN:
            if (in->kind == VA_F64) r.d = xin;
            else r.f = (float)xin;
            break;
        case VA_FK:
            if (in->kind == VA_F64) memcpy(&r.d, &in->k, 8);
            else {
                uint32_t b = (uint32_t)in->k;
                memcpy(&r.f, &b, 4);
            }
            break;
        case VA_IK:
            if (in->kind == VA_I64) r.l = (int64_t)in->k;
            else r.i = (int32_t)(uint32_t)in->k;
            break;
        case VA_FMA:
            if (w) r.d = fma(A.d, B.d, C.d);
            else r.f = fmaf(A.f, B.f, C.f);
            break;
        case VA_MUL:
            if (w) r.d = A.d * B.d;
            else r.f = A.f * B.f;
            break;
        case VA_ADD:
            if (w) r.d = A.d + B.d;
            else r.f = A.f + B.f;
            break;
        case VA_SUB:
            if (w) r.d = A.d - B.d;
            else r.f = A.f - B.f;
            break;
        case VA_DIV:
            if (w) r.d = A.d / B.d;
            else r.f = A.f / B.f;
            break;
        case VA_SQRT:
            if (w) r.d = sqrt(A.d);
            else r.f = sqrtf(A.f);
            break;
        case VA_RINT:
            if (w) r.d = rint(A.d);
            else r.f = rintf(A.f);
            break;
        case VA_ABS:
            if (w) r.d = fabs(A.d);
            else r.f = fabsf(A.f);
            break;
        case VA_NEG:
            if (w) r.d = -A.d;
            else r.f = -A.f;
            break;
        case VA_MIN:
            if (w) r.d = fmin(A.d, B.d);
            else r.f = fminf(A.f, B.f);
            break;
        case VA_MAX:
            if (w) r.d = fmax(A.d, B.d);
            else r.f = fmaxf(A.f, B.f);
            break;
        case VA_COPYSIGN:
            if (w) r.d = copysign(A.d, B.d);
            else r.f = copysignf(A.f, B.f);
            break;
        case VA_FLT: r.p = w ? A.d < B.d : A.f < B.f; break;
        case VA_FEQ: r.p = w ? A.d == B.d : A.f == B.f; break;
        case VA_FNAN: r.p = w ? isnan(A.d) : isnan(A.f); break;
        case VA_SELP: r = A.p ? B : C; break;
        case VA_F2B:
        case VA_B2F: r = A; break; /* same bits, other view */
        case VA_F2I:
            if (w) r.l = sat_i64(A.d);
            else r.i = sat_i32(A.f);
            break;
        case VA_I2F:
            if (w) r.d = (double)A.l;
            else r.f = (float)A.i;
            break;
        case VA_WIDEN: r.d = (double)A.f; break;
        case VA_NARROW: r.f = (float)A.d; break;
        case VA_IADD:
            if (w) r.l = (int64_t)((uint64_t)A.l + (uint64_t)B.l);
            else r.i = (int32_t)((uint32_t)A.i + (uint32_t)B.i);
            break;
        case VA_ISUB:
            if (w) r.l = (int64_t)((uint64_t)A.l - (uint64_t)B.l);
            else r.i = (int32_t)((uint32_t)A.i - (uint32_t)B.i);
            break;
        case VA_ISHL:
            if (w) r.l = (int64_t)((uint64_t)A.l << in->k);
            else r.i = (int32_t)((uint32_t)A.i << in->k);
            break;
        case VA_ISHR:
            if (w) r.l = A.l >> in->k;
            else r.i = A.i >> in->k;
            break;
        case VA_IBIT: r.p = w ? ((uint64_t)A.l & in->k) != 0 : ((uint32_t)A.i & in->k) != 0; break;
        }
        V[v] = r;
    }
    const union val o = V[p->out];
    return p->ins[p->out].kind == VA_F64 ? o.d : (double)o.f;
}

/* ---- ULP distance -------------------------------------------------------------- */

static int64_t ord32(float f) {
    int32_t b;
    memcpy(&b, &f, 4);
    return b < 0 ? (int64_t)INT32_MIN - b : b;
}

static int64_t ord64(double d) {
    int64_t b;
    memcpy(&b, &d, 8);
    return b < 0 ? INT64_MIN - b : b;
}

/* Distance in ULPs between got and want of the type; NaN vs NaN is 0, NaN vs a
 * number is "infinite". */
static int64_t ulps(bool wide, double got, double want) {
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want) ? 0 : INT64_MAX;
    if (!wide) {
        int64_t d = ord32((float)got) - ord32((float)want);
        return d < 0 ? -d : d;
    }
    int64_t a = ord64(got), b = ord64(want);
    if ((a < 0) != (b < 0) && (a - b > INT64_MAX / 2 || b - a > INT64_MAX / 2)) return INT64_MAX;
    int64_t d = a - b;
    return d < 0 ? -d : d;
}

/* ---- references ------------------------------------------------------------------ */

/* Extra-precision reference rounded to the type (stands in for the correctly
 * rounded result). */
static double ref_hi(enum vyre_op op, bool wide, double x) {
    if (!wide) {
        double y;
        switch (op) {
        case VYRE_OP_EXP: y = exp(x); break;
        case VYRE_OP_EXP2: y = exp2(x); break;
        case VYRE_OP_LOG: y = log(x); break;
        case VYRE_OP_LOG2: y = log2(x); break;
        case VYRE_OP_SIN: y = sin(x); break;
        case VYRE_OP_COS: y = cos(x); break;
        case VYRE_OP_TANH: y = tanh(x); break;
        default: y = 1.0 / sqrt(x); break;
        }
        return (double)(float)y;
    }
    long double X
    = x, y;
    switch (op) {
    case VYRE_OP_EXP: y = expl(X); break;
    case VYRE_OP_EXP2: y = exp2l(X); break;
    case VYRE_OP_LOG: y = logl(X); break;
    case VYRE_OP_LOG2: y = log2l(X); break;
    case VYRE_OP_SIN: y = sinl(X); break;
    case VYRE_OP_COS: y = cosl(X); break;
    case VYRE_OP_TANH: y = tanhl(X); break;
    default: y = 1.0L / sqrtl(X); break;
    }
    return (double)y;
}

/* What the reference backend computes (src/core/ref/sem.c): the plain C library. */
static double ref_libm(enum vyre_op op, bool wide, double x) {
    if (!wide) {
        float f = (float)x, y;
        switch (op) {
        case VYRE_OP_EXP: y = expf(f); break;
        case VYRE_OP_EXP2: y = exp2f(f); break;
        case VYRE_OP_LOG: y = logf(f); break;
        case VYRE_OP_LOG2: y = log2f(f); break;
        case VYRE_OP_SIN: y = sinf(f); break;
        case VYRE_OP_COS: y = cosf(f); break;
        case VYRE_OP_TANH: y = tanhf(f); break;
        default: y = 1.0f / sqrtf(f); break;
        }
        return (double)y;
    }
    switch (op) {
    case VYRE_OP_EXP: return exp(x);
    case VYRE_OP_EXP2: return exp2(x);
    case VYRE_OP_LOG: return log(x);
    case VYRE_OP_LOG2: return log2(x);
    case VYRE_OP_SIN: return sin(x);
    case VYRE_OP_COS: return cos(x);
    case VYRE_OP_TANH: return tanh(x);
    default: return 1.0 / sqrt(x);
    }
}

/* ---- sweeps ---------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void) {
    uint64_t s = rng_state;
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    rng_state = s;
    return s * 0x2545F4914F6CDD1Du;
}

static double uniform(double lo, double hi) {
    return lo + (hi - lo) * ((double)(rng() >> 11) * 0x1p-53);
}

/* A random value of the type with random bits (so every binade is hit equally),
 * inside [lo, hi]. */
static double random_bits(bool wide, double lo, double hi) {
    for (;;) {
        double x;
        if (wide) {
            uint64_t b = rng();
            memcpy(&x, &b, 8);
        } else {
            uint32_t b = (uint32_t)(rng() >> 32);
            float f;
            memcpy(&f, &b, 4);
            x = (double)f;
        }
        if (x >= lo && x <= hi) return x;
    }
}

struct op_case {
    enum vyre_op op;
    const char *name;
    double lo32, hi32, lo64, hi64; /* documented domain where the bound holds */
    double spec_lo, spec_hi;       /* the inputs of the parity spec */
    int64_t bound32, bound64;      /* ULP bound vs the correctly rounded result */
    int64_t spec32, spec64;        /* bound vs the C library on the spec inputs */
};

#define BIG32 0x1.fffffep127
#define BIG64 0x1.fffffffffffffp1023
#define PI 3.141592653589793

static const struct op_case cases[] = {
    {VYRE_OP_EXP, "exp", -BIG32, BIG32, -BIG64, BIG64, -10, 10, 2, 2, 3, 3},
    {VYRE_OP_EXP2, "exp2", -BIG32, BIG32, -BIG64, BIG64, -10, 10, 2, 2, 3, 3},
    {VYRE_OP_LOG, "log", 0, BIG32, 0, BIG64, 0, 100, 2, 2, 3, 3},
    {VYRE_OP_LOG2, "log2", 0, BIG32, 0, BIG64, 0, 100, 2, 2, 3, 3},
    {VYRE_OP_SIN, "sin", -0x1p20, 0x1p20, -0x1p20, 0x1p20, -PI, PI, 2, 2, 3, 3},
    {VYRE_OP_COS, "cos", -0x1p20, 0x1p20, -0x1p20, 0x1p20, -PI, PI, 2, 2, 3, 3},
    {VYRE_OP_TANH, "tanh", -BIG32, BIG32, -BIG64, BIG64, -10, 10, 3, 3, 4, 4},
    {VYRE_OP_RSQRT, "rsqrt", 0, BIG32, 0, BIG64, 0, 100, 1, 1, 2, 2},
};

static long scale(void) {
    const char *s = getenv("VYRE_APPROX_SCALE");
    long k = s ? strtol(s, NULL, 10) : 1;
    return k < 1 ? 1 : k;
}

static int64_t worst_x_dist;
static double worst_x;

static void track(const struct va_prog *p, enum vyre_op op, bool wide, double x, int64_t *worst) {
    double got = eval(p, x), want = ref_hi(op, wide, x);
    int64_t d = ulps(wide, got, want);
    if (d > *worst) {
        *worst = d;
        worst_x = x;
        worst_x_dist = d;
    }
}

/* The spec's 4096 inputs (spec/22_cuda_parity_spec.lua), compared as the spec does:
 * against the C library, skipping NaN and |want| <= 1e-3. */
static int64_t spec_sweep(const struct va_prog *p, const struct op_case *c, bool wide) {
    int64_t worst = 0;
    for (int i = 1; i <= 4096; i++) {
        double u = (i - 0.5) / 4096;
        double x = c->spec_lo + u * (c->spec_hi - c->spec_lo);
        if (c->op == VYRE_OP_LOG || c->op == VYRE_OP_LOG2 || c->op == VYRE_OP_RSQRT) x = u * 100.0;
        else if (c->op == VYRE_OP_SIN || c->op == VYRE_OP_COS) x = (u - 0.5) * 6.283185307179586;
        else x = (u - 0.5) * 20.0;
        if (!wide) x = (double)(float)x;
        double got = eval(p, x), want = ref_libm(c->op, wide, x);
        if (isnan(got) || isnan(want) || fabs(want) <= 1e-3) continue;
        int64_t d = ulps(wide, got, want);
        if (d > worst) worst = d;
    }
    return worst;
}

static void test_bounds(void) {
    long k = scale();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const struct op_case *c = &cases[ci];
        for (int wi = 0; wi < 2; wi++) {
            bool wide = wi == 1;
            struct va_prog p;
            CHECK(vyre_approx_build(&p, c->op, wide));
            CHECK(!p.overflow);
            double lo = wide ? c->lo64 : c->lo32, hi = wide ? c->hi64 : c->hi32;
            long n = (wide ? 150000 : 300000) * k;
            int64_t worst = 0;
            worst_x = 0;
            for (long i = 0; i < n; i++) {
                track(&p, c->op, wide, random_bits(wide, lo, hi), &worst);
                double x = uniform(c->spec_lo, c->spec_hi);
                track(&p, c->op, wide, wide ? x : (double)(float)x, &worst);
            }
            /* around where the algorithm switches or the result changes scale */
            static const double around[] = {
                0.55,   -0.55, 1.0,    0.5,    2.0,    88.0,    -87.0,   -103.0, 127.0,  -126.0,
                -149.0, 709.0, -708.0, -745.0, 1023.0, -1022.0, -1074.0, PI / 4, PI / 2, PI};
            for (size_t j = 0; j < sizeof around / sizeof around[0]; j++) {
                double x = wide ? around[j] : (double)(float)around[j];
                for (int s = 0; s < 2000; s++) {
                    double y = x;
                    if (wide) {
                        for (int t = 0; t < s; t++) y = nextafter(y, INFINITY);
                    } else {
                        for (int t = 0; t < s; t++) y = (double)nextafterf((float)y, INFINITY);
                    }
                    if (y >= lo && y <= hi) track(&p, c->op, wide, y, &worst);
                    if (-y >= lo && -y <= hi) track(&p, c->op, wide, -y, &worst);
                    if (s > 40) s += 37; /* sparser further away */
                }
            }
            /* sin/cos: the floats nearest to multiples of pi/2, where x - k pi/2
             * cancels most (k up to the documented |x| limit) */
            if (c->op == VYRE_OP_SIN || c->op == VYRE_OP_COS) {
                long double pio2 = 1.5707963267948966192313216916397514L;
                for (long i = 1; i < 60000 * k; i++) {
                    long double kk = i < 20000
                                         ? (long double)i
                                         : floorl((long double)uniform(1, hi / 1.5707963267948966));
                    double x = wide ? (double)(kk * pio2) : (double)(float)(kk * pio2);
                    if (x <= hi) track(&p, c->op, wide, x, &worst);
                    if (-x >= lo) track(&p, c->op, wide, -x, &worst);
                }
            }
            int64_t spec = spec_sweep(&p, c, wide);
            printf("  %-5s %s: max %2" PRId64 " ULP vs correctly rounded (worst x = %a), "
                   "%2" PRId64 " ULP vs C library on the spec inputs, %u instructions\n",
                   c->name, wide ? "f64" : "f32", worst, worst_x, spec, (unsigned)p.n);
            CHECK(worst <= (wide ? c->bound64 : c->bound32));
            CHECK(spec <= (wide ? c->spec64 : c->spec32));
        }
    }
}

/* ---- exact results at the edges ----------------------------------------------- */

static double run(enum vyre_op op, bool wide, double x) {
    struct va_prog p;
    CHECK(vyre_approx_build(&p, op, wide));
    return eval(&p, x);
}

/* Same bits (NaN: any NaN). */
static bool same(double got, double want) {
    if (isnan(want)) return isnan(got);
    return memcmp(&got, &want, sizeof got) == 0;
}

#define EXPECT(op, wide, x, want) CHECK(same(run(op, wide, x), want))

static void test_edges(void) {
    for (int wi = 0; wi < 2; wi++) {
        bool w = wi == 1;
        double sub = w ? 0x1p-1074 : 0x1p-149, maxexp = w ? 1023.0 : 127.0;
        EXPECT(VYRE_OP_EXP, w, 0.0, 1.0);
        EXPECT(VYRE_OP_EXP, w, -0.0, 1.0);
        EXPECT(VYRE_OP_EXP, w, INFINITY, INFINITY);
        EXPECT(VYRE_OP_EXP, w, -INFINITY, 0.0);
        EXPECT(VYRE_OP_EXP, w, NAN, NAN);
        EXPECT(VYRE_OP_EXP, w, w ? 710.0 : 89.0, INFINITY); /* overflow */
        EXPECT(VYRE_OP_EXP, w, w ? -746.0 : -104.0, 0.0);   /* underflow */
        EXPECT(VYRE_OP_EXP, w, sub, 1.0);
        EXPECT(VYRE_OP_EXP2, w, maxexp, ldexp(1.0, (int)maxexp));
        EXPECT(VYRE_OP_EXP2, w, maxexp + 1, INFINITY);
        EXPECT(VYRE_OP_EXP2, w, w ? -1074.0 : -149.0, sub); /* smallest subnormal */
        EXPECT(VYRE_OP_EXP2, w, w ? -1076.0 : -151.0, 0.0);
        EXPECT(VYRE_OP_EXP2, w, -1.0, 0.5);
        EXPECT(VYRE_OP_EXP2, w, NAN, NAN);
        EXPECT(VYRE_OP_EXP2, w, -INFINITY, 0.0);
        EXPECT(VYRE_OP_LOG, w, 1.0, 0.0);
        EXPECT(VYRE_OP_LOG, w, 0.0, -INFINITY);
        EXPECT(VYRE_OP_LOG, w, -0.0, -INFINITY);
        EXPECT(VYRE_OP_LOG, w, -1.0, NAN);
        EXPECT(VYRE_OP_LOG, w, -INFINITY, NAN);
        EXPECT(VYRE_OP_LOG, w, INFINITY, INFINITY);
        EXPECT(VYRE_OP_LOG, w, NAN, NAN);
        EXPECT(VYRE_OP_LOG2, w, sub, w ? -1074.0 : -149.0); /* subnormal input */
        EXPECT(VYRE_OP_LOG2, w, 0x1p-130, -130.0);
        EXPECT(VYRE_OP_LOG2, w, 1024.0, 10.0);
        EXPECT(VYRE_OP_LOG2, w, 0.0, -INFINITY);
        EXPECT(VYRE_OP_LOG2, w, INFINITY, INFINITY);
        EXPECT(VYRE_OP_SIN, w, 0.0, 0.0);
        EXPECT(VYRE_OP_SIN, w, -0.0, -0.0);
        EXPECT(VYRE_OP_SIN, w, -sub, -sub);
        EXPECT(VYRE_OP_SIN, w, INFINITY, NAN);
        EXPECT(VYRE_OP_SIN, w, NAN, NAN);
        EXPECT(VYRE_OP_COS, w, 0.0, 1.0);
        EXPECT(VYRE_OP_COS, w, -INFINITY, NAN);
        EXPECT(VYRE_OP_TANH, w, 0.0, 0.0);
        EXPECT(VYRE_OP_TANH, w, -0.0, -0.0);
        EXPECT(VYRE_OP_TANH, w, sub, sub);
        EXPECT(VYRE_OP_TANH, w, -sub, -sub);
        EXPECT(VYRE_OP_TANH, w, INFINITY, 1.0);
        EXPECT(VYRE_OP_TANH, w, -INFINITY, -1.0);
        EXPECT(VYRE_OP_TANH, w, w ? -20.0 : -9.5, -1.0);
        EXPECT(VYRE_OP_TANH, w, NAN, NAN);
        EXPECT(VYRE_OP_RSQRT, w, 4.0, 0.5);
        EXPECT(VYRE_OP_RSQRT, w, 0.0, INFINITY);
        EXPECT(VYRE_OP_RSQRT, w, -0.0, -INFINITY);
        EXPECT(VYRE_OP_RSQRT, w, INFINITY, 0.0);
        EXPECT(VYRE_OP_RSQRT, w, -1.0, NAN);
    }
    struct va_prog p;
    CHECK(!vyre_approx_build(&p, VYRE_OP_SQRT, false));
}

/* ---- ptxas ----------------------------------------------------------------------- */

/* Every approximate op of one type in one kernel: y[i] = op1(x[i]) + op2(x[i]) + ... */
static vyre_program *all_ops(enum vyre_type t) {
    vyre_program *P = vyre_program_new(t == VYRE_F32 ? "approx32" : "approx64", 64, 1, 1);
    vyre_ir_buffer(P, "x", t, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(P, "y", t, VYRE_ACCESS_WRITE, 0);
    struct vyre_expr *sum = NULL;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        struct vyre_expr *x = vyre_ir_load(P, "x", vyre_ir_builtin(P, VYRE_GID, 0));
        struct vyre_expr *e = vyre_ir_unary(P, cases[ci].op, x);
        sum = sum ? vyre_ir_binary(P, VYRE_OP_ADD, sum, e) : e;
    }
    vyre_ir_push(P, &P->body, vyre_ir_store(P, "y", vyre_ir_builtin(P, VYRE_GID, 0), sum));
    return P;
}

static void test_ptxas(void) {
    if (!harness_ptxas_path()) {
        harness_fail(__FILE__, __LINE__, "ptxas not found on $PATH or in /usr/local/cuda/bin");
        return;
    }
    static const unsigned sms[] = {70, 80, 90};
    for (int ti = 0; ti < 2; ti++) {
        vyre_program *p = all_ops(ti ? VYRE_F64 : VYRE_F32);
        for (size_t s = 0; s < 3; s++) {
            struct vyre_ptx_options o = {.sm = sms[s]};
            struct vyre_error err;
            vyre_error_clear(&err);
            char *ptx = NULL;
            size_t n = 0;
            enum vyre_status st = vyre_ptx_emit(p, &o, &ptx, &n, &err);
            if (st != VYRE_OK) fprintf(stderr, "emit: %s\n", err.message);
            CHECK_EQ_U64(st, VYRE_OK);
            if (!ptx) continue;
            CHECK(strstr(ptx, ".approx") == NULL); /* no hardware approximations */
            CHECK(strstr(ptx, ".ftz") == NULL);
            CHECK_STR_CONTAINS(ptx, ti ? "fma.rn.f64" : "fma.rn.f32");
            CHECK_STR_CONTAINS(ptx, ti ? "copysign.f64" : "copysign.f32");
            char log[8192];
            int rc = harness_ptxas_run(ptx, sms[s], log, sizeof log);
            if (rc != 0 && sms[s] == 70 && strstr(log, "is not defined for option"))
                rc = harness_ptxas_run(ptx, 75, log, sizeof log);
            if (rc != 0) fprintf(stderr, "ptxas sm_%u failed:\n%s\n", sms[s], log);
            CHECK(rc == 0);
            vyre_free(ptx);
        }
        vyre_program_free(p);
    }
}

int main(void) {
    RUN_TEST(test_edges);
    RUN_TEST(test_ptxas);
    RUN_TEST(test_bounds);
    return harness_finish();
}
