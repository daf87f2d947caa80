/* lgen.c — the element generators of a:fill / a:iota / a:random and of the Buffer
 * methods of the same names: the arguments are read once (vyre_lua_gen_parse) into a
 * description that the host loop (vyre_lua_gen_host) and the device kernels of
 * vyre.lib.basic (CUDA buffers) turn into the same elements, bit for bit. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lvyre.h"
#include "lvyre_box.h"

/* The optional value at idx (default def) as bits of type t. */
static vyre_bits opt_bits(lua_State *L, int idx, lua_Integer def, enum vyre_type t,
                          const char *fname, const char *what) {
    if (!lua_isnoneornil(L, idx)) return vyre_lua_tobits(L, idx, t, fname, what);
    lua_pushinteger(L, def);
    vyre_bits v = vyre_lua_tobits(L, -1, t, fname, what);
    lua_pop(L, 1);
    return v;
}

static vyre_bits f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_of(vyre_bits b) {
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static vyre_bits f64_bits(double d) {
    vyre_bits u;
    memcpy(&u, &d, 8);
    return u;
}

static double f64_of(vyre_bits b) {
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* random(seed [, lo, hi]) at 2..4. Floats: [lo, hi) in the element type, with the value
 * just below hi for draws that round up to hi. Integers: [lo, hi] inclusive. */
static void parse_random(lua_State *L, struct vyre_lua_gen *g, const char *fname) {
    enum vyre_type t = g->type;
    if (lua_isnoneornil(L, 2))
        vyre_lua_fail(L, "arg", "%s: a seed is needed. Fix: a:random(42)", fname);
    g->seed = (uint64_t)vyre_lua_optint(L, 2, 0, fname, "the seed", "a:random(42)");
    bool ranged = !lua_isnoneornil(L, 3) || !lua_isnoneornil(L, 4);
    double flo = 0.0, fhi = 1.0;
    if (ranged && t == VYRE_BOOL)
        vyre_lua_fail(L, "arg", "%s: a bool array takes no range. Fix: a:random(seed)", fname);
    if (ranged && vyre_type_is_float(t)) {
        if (lua_type(L, 3) != LUA_TNUMBER || lua_type(L, 4) != LUA_TNUMBER)
            vyre_lua_fail(L, "arg",
                          "%s: lo and hi must be numbers (got %s, %s). Fix: "
                          "a:random(seed, 0.0, 1.0)",
                          fname, luaL_typename(L, 3), luaL_typename(L, 4));
        flo = lua_tonumber(L, 3);
        fhi = lua_tonumber(L, 4);
        if (!(flo < fhi) || isinf(flo) || isinf(fhi))
            vyre_lua_fail(L, "arg",
                          "%s: the range [%f, %f) is empty or not finite. Fix: pass "
                          "finite lo < hi",
                          fname, flo, fhi);
    } else if (ranged) {
        vyre_bits lo = vyre_lua_tobits(L, 3, t, fname, "lo");
        vyre_bits hi = vyre_lua_tobits(L, 4, t, fname, "hi");
        bool sgn = vyre_type_is_signed(t);
        int64_t slo = t == VYRE_I32 ? (int32_t)(uint32_t)lo : (int64_t)lo;
        int64_t shi = t == VYRE_I32 ? (int32_t)(uint32_t)hi : (int64_t)hi;
        if (sgn ? slo > shi : lo > hi)
            vyre_lua_fail(L, "arg", "%s: lo is above hi. Fix: pass lo <= hi (both included)",
                          fname);
        g->ilo = sgn ? (uint64_t)slo : lo;
        g->span = (sgn ? (uint64_t)shi - (uint64_t)slo : hi - lo) + 1; /* 0: all 2^64 */
    }
    if (t == VYRE_F32) {
        float lo = (float)flo, hi = (float)fhi;
        g->lo = f32_bits(lo);
        g->hi = f32_bits(hi);
        g->prev = f32_bits(nextafterf(hi, lo));
    } else if (t == VYRE_F64) {
        g->lo = f64_bits(flo);
        g->hi = f64_bits(fhi);
        g->prev = f64_bits(nextafter(fhi, flo));
    }
}

void vyre_lua_gen_parse(lua_State *L, enum vyre_lua_gen_kind kind, enum vyre_type t,
                        const char *fname, struct vyre_lua_gen *g) {
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->type = t;
    switch (kind) {
    case VYRE_LUA_FILL: g->a = vyre_lua_tobits(L, 2, t, fname, "the value"); break;
    case VYRE_LUA_IOTA:
        if (t == VYRE_BOOL)
            vyre_lua_fail(L, "arg",
                          "%s: a bool array has no sequence. Fix: use a:fill(true) or a "
                          "numeric type",
                          fname);
        g->a = opt_bits(L, 2, 0, t, fname, "start");
        g->b = opt_bits(L, 3, 1, t, fname, "step");
        break;
    case VYRE_LUA_RANDOM: parse_random(L, g, fname); break;
    }
}

/* ---- the host loop -------------------------------------------------------------- */

/* start + T(i) * step in the element type: integers wrap, floats round each operation
 * (separate statements: never contracted into an fma), as vyre.lib.iota computes it. */
static vyre_bits iota_at(const struct vyre_lua_gen *g, uint64_t i) {
    if (g->type == VYRE_F32) {
        float m = (float)i * f32_of(g->b);
        float r = f32_of(g->a) + m;
        return f32_bits(r);
    }
    if (g->type == VYRE_F64) {
        double m = (double)i * f64_of(g->b);
        double r = f64_of(g->a) + m;
        return f64_bits(r);
    }
    return g->a + (vyre_bits)i * g->b; /* storebits keeps 32 bits for 32-bit types */
}

/* The one description of a:random's draws: splitmix64's increment, its two multipliers
 * and three shifts, and per float type the bits kept and their scale. The host loop
 * below and the kernel text of buf:random on CUDA (random_kernel_text) are both written
 * from it, so the two cannot drift apart. */
static const uint64_t SM_GAMMA = 0x9e3779b97f4a7c15ull;
static const uint64_t SM_MUL[2] = {0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull};
static const unsigned SM_SHIFT[3] = {30, 27, 31};
static const unsigned F32_DROP = 40, F64_DROP = 11; /* x >> DROP: the top 24 / 53 bits */
#define F32_SCALE 0x1p-24f                          /* 2^-(64 - F32_DROP) */
#define F64_SCALE 0x1p-53                           /* 2^-(64 - F64_DROP) */

/* Draw i (0-based) of splitmix64 from the seed: the state after i + 1 steps, mixed. */
static uint64_t splitmix64_at(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * SM_GAMMA;
    z = (z ^ (z >> SM_SHIFT[0])) * SM_MUL[0];
    z = (z ^ (z >> SM_SHIFT[1])) * SM_MUL[1];
    return z ^ (z >> SM_SHIFT[2]);
}

/* High 64 bits of a * b (portable: no 128-bit type). */
static uint64_t mulhi64(uint64_t a, uint64_t b) {
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t p0 = al * bl, p1 = al * bh, p2 = ah * bl, p3 = ah * bh;
    uint64_t mid = (p0 >> 32) + (uint32_t)p1 + (uint32_t)p2;
    return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

/* One draw as an element: bool a fair coin (the top bit); floats uniform in [lo, hi)
 * from the top 24 / 53 bits; integers ilo + floor(x * span / 2^64), or x itself. */
static vyre_bits random_at(const struct vyre_lua_gen *g, uint64_t i) {
    uint64_t x = splitmix64_at(g->seed, i);
    switch (g->type) {
    case VYRE_BOOL: return x >> 63;
    case VYRE_F32: {
        float u = (float)(x >> F32_DROP) * F32_SCALE, lo = f32_of(g->lo), hi = f32_of(g->hi);
        float w = hi - lo, m = w * u, r = lo + m;
        return r >= hi ? g->prev : f32_bits(r);
    }
    case VYRE_F64: {
        double u = (double)(x >> F64_DROP) * F64_SCALE, lo = f64_of(g->lo), hi = f64_of(g->hi);
        double w = hi - lo, m = w * u, r = lo + m;
        return r >= hi ? g->prev : f64_bits(r);
    }
    default: return g->span ? g->ilo + mulhi64(x, g->span) : x;
    }
}

void vyre_lua_gen_host(const struct vyre_lua_gen *g, void *data, uint64_t count) {
    for (uint64_t i = 0; i < count; i++) {
        vyre_bits v = g->kind == VYRE_LUA_FILL   ? g->a
                      : g->kind == VYRE_LUA_IOTA ? iota_at(g, i)
                                                 : random_at(g, i);
        vyre_lua_storebits(data, g->type, i, v);
    }
}

/* core.random_kernel_text(type) -> the program buf:random launches on CUDA for that
 * element type (vyre.lib.basic.generate), written from the description above: params
 * seed, lo, hi, prev (floats: the value just below hi), ilo, span, n as
 * vyre_lua_gen holds them. */
static int core_random_kernel_text(lua_State *L) {
    enum vyre_type t = vyre_lua_checktype(L, 1, "vyre.core.random_kernel_text");
    const char *tn = vyre_type_name(t);
    bool flt = t == VYRE_F32 || t == VYRE_F64;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L,
                    "(program lib_random_%s (workgroup 256)\n"
                    "  (buffer buf %s write)\n"
                    "  (param seed u64)\n"
                    "  (param lo %s)\n"
                    "  (param hi %s)\n"
                    "  (param prev %s)\n"
                    "  (param ilo u64)\n"
                    "  (param span u64)\n"
                    "  (param n u32)\n"
                    "  (let i (gid x))\n"
                    "  (if (lt i n) (then\n",
                    tn, tn, flt ? tn : "u64", flt ? tn : "u64", flt ? tn : "u64");
    luaL_addvalue(&b);
    char line[160];
    snprintf(line, sizeof line,
             "    (let z0 (add seed (mul (add (cast u64 i) 1u64) %" PRIu64 "u64)))\n", SM_GAMMA);
    luaL_addstring(&b, line);
    for (int k = 0; k < 2; k++) {
        snprintf(line, sizeof line,
                 "    (let z%d (mul (xor z%d (shr z%d %uu64)) %" PRIu64 "u64))\n", k + 1, k, k,
                 SM_SHIFT[k], SM_MUL[k]);
        luaL_addstring(&b, line);
    }
    snprintf(line, sizeof line, "    (let x (xor z2 (shr z2 %uu64)))\n", SM_SHIFT[2]);
    luaL_addstring(&b, line);
    /* the element from draw x, as random_at makes it */
    static const char *const int_value = "(select (eq span 0u64) x (add ilo (mulhi x span)))";
    switch (t) {
    case VYRE_BOOL: luaL_addstring(&b, "    (store buf i (ne (shr x 63u64) 0u64))"); break;
    case VYRE_F32:
    case VYRE_F64:
        snprintf(line, sizeof line,
                 "    (let r (add lo (mul (sub hi lo) (mul (cast %s (shr x %uu64)) 0x1p-%u%s))))\n"
                 "    (store buf i (select (ge r hi) prev r))",
                 tn, t == VYRE_F32 ? F32_DROP : F64_DROP,
                 64 - (t == VYRE_F32 ? F32_DROP : F64_DROP), tn);
        luaL_addstring(&b, line);
        break;
    case VYRE_U64:
        lua_pushfstring(L, "    (store buf i %s)", int_value);
        luaL_addvalue(&b);
        break;
    case VYRE_I64:
        lua_pushfstring(L, "    (store buf i (bitcast i64 %s))", int_value);
        luaL_addvalue(&b);
        break;
    default:
        lua_pushfstring(L, "    (store buf i (cast %s %s))", tn, int_value);
        luaL_addvalue(&b);
        break;
    }
    luaL_addstring(&b, ")))\n");
    luaL_pushresult(&b);
    return 1;
}

void vyre_lua_open_gen(lua_State *L) {
    lua_pushcfunction(L, core_random_kernel_text);
    lua_setfield(L, -2, "random_kernel_text");
}

/* ---- the Array methods' shared part (larray.c) ------------------------------------ */

static void array_gen(lua_State *L, struct vyre_lua_array *a, enum vyre_lua_gen_kind kind,
                      const char *fname) {
    struct vyre_lua_gen g;
    vyre_lua_gen_parse(L, kind, a->type, fname, &g);
    vyre_lua_gen_host(&g, a->data, a->count);
}

void vyre_lua_array_fill(lua_State *L, struct vyre_lua_array *a, const char *fname) {
    array_gen(L, a, VYRE_LUA_FILL, fname);
}

void vyre_lua_array_iota(lua_State *L, struct vyre_lua_array *a, const char *fname) {
    array_gen(L, a, VYRE_LUA_IOTA, fname);
}

void vyre_lua_array_random(lua_State *L, struct vyre_lua_array *a, const char *fname) {
    array_gen(L, a, VYRE_LUA_RANDOM, fname);
}
