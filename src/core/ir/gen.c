/* gen.c — a deterministic random program generator for property tests and fuzzing.
 *
 * vyre_gen_random(seed, opts) builds a Program through the ir.h builder. The same seed
 * and options always give the same program (xoshiro256** seeded by splitmix64, no
 * global state). Programs are valid by construction: every expression is built for
 * a requested type following the typing rules, names are unique, barriers sit only in
 * uniform control flow. They are also race-free, so a GPU run must match the reference
 * interpreter bit for bit (up to approximate ops, only with allow_approx):
 *   - global output buffers are either OWN (store/load/any atomic only at the
 *     invocation's linear global id `gi`, or at an index that is always out of bounds)
 *     or ATOMIC (one commutative atomic op, result unbound, any index; on f32 only
 *     min/max, whose final word does not depend on the order, docs/ARCHITECTURE.md §10);
 *   - shared arrays get a mode per barrier phase: READ (loads anywhere), OWN (at the
 *     local linear id `li`), ATOMIC (one commutative op) or NONE (no access; used after
 *     a construct whose phase at run time is not known statically);
 *   - loop trip counts are small (literal bounds, or len/rem-bounded), so interpreting
 *     thousands of programs stays fast;
 *   - a float that may be NaN is never bitcast to an integer as is (NaN bits are not
 *     specified, §3): it goes through (max x -inf) first.
 * With allow_subgroup, subgroup ops (docs/SUBGROUPS.md) that exchange values (match_any
 * included) appear only where a barrier could (uniform control flow),
 * subgroup_size/subgroup_lane anywhere;
 * without it no draw changes, so every seed gives the program it always gave.
 * Random draws are never two arguments of one call (C leaves their order unspecified,
 * so gcc and clang would build different programs for a seed): siblings go through
 * locals, in order.
 * With elementwise, programs are elementwise (docs/ARCHITECTURE.md §5): a 1-D workgroup,
 * gi is (gid x), the only builtin read; no shared memory, barrier, atomic or subgroup op;
 * written buffers accessed only at gi; ifs often guard on (lt gi (len b)), so the
 * vector entry's fast path and tail both run. Without it no draw changes.
 * With allow_invalid the valid program gets 1-3 mutations that usually break a rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_int.h"

/* ---- PRNG: splitmix64 seeds xoshiro256** --------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, unsigned k) { return (x << k) | (x >> (64u - k)); }

static uint64_t rng_next(struct rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl64(s[1] * 5u, 7) * 9u;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* ---- generator state ------------------------------------------------------------ */

uint32_t vyre_gen_below(struct gen *g, uint32_t n) {
    return n ? (uint32_t)(rng_next(&g->r) % n) : 0u;
}

bool vyre_gen_chance(struct gen *g, uint32_t pct) { return vyre_gen_below(g, 100) < pct; }

static void fresh_name(struct gen *g, char out[GEN_NAME], char prefix) {
    /* "i32", "u64", "f32"... are type names, reserved (a loop variable i32 was invalid) */
    enum vyre_type t;
    do snprintf(out, GEN_NAME, "%c%u", prefix, (unsigned)g->next_name++);
    while (vyre_type_from_name(out, &t));
}

static enum vyre_type any_type(struct gen *g) {
    return (enum vyre_type)vyre_gen_below(g, VYRE_TYPE_COUNT);
}

static enum vyre_type num_type(struct gen *g) {
    return (enum vyre_type)(1u + vyre_gen_below(g, 6));
}

enum vyre_type vyre_gen_int_type(struct gen *g) {
    return (enum vyre_type)(1u + vyre_gen_below(g, 4));
}

static bool atomic_type(enum vyre_type t) {
    return t == VYRE_I32 || t == VYRE_U32 || t == VYRE_U64;
}

struct vyre_expr *vyre_gen_chk(struct gen *g, struct vyre_expr *e) {
    if (!e) g->fail = true;
    return e;
}

/* ---- literals ----------------------------------------------------------------------- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t f64_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static const uint32_t edge_i32[] = {0u, 1u,          0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu,
                                    2u, 0xFFFFFFFEu, 31u,         32u,         33u};
static const uint32_t edge_u32[] = {0u, 1u,  0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu,
                                    2u, 31u, 32u,         255u,        0x10000u};
static const uint64_t edge_64[] = {0u,  1u,  ~0ull, 0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull,
                                   63u, 64u, 65u,   0xFFFFFFFFull,         0x100000000ull};
static const uint32_t edge_f32[] = {0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u, 0x3F000000u,
                                    0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu,
                                    0x00800000u, 0x00000001u, 0x807FFFFFu, 0x4F000000u, 0xCF000000u,
                                    0x5F000000u, 0x40490FDBu, 0x3FC00000u, 0x40200000u};
static const uint64_t edge_f64[] = {
    0x0000000000000000ull, 0x8000000000000000ull, 0x3FF0000000000000ull, 0xBFF0000000000000ull,
    0x3FE0000000000000ull, 0x7FF8000000000000ull, 0xFFF8000000000001ull, 0x7FF0000000000000ull,
    0xFFF0000000000000ull, 0x7FEFFFFFFFFFFFFFull, 0x0010000000000000ull, 0x0000000000000001ull,
    0x800FFFFFFFFFFFFFull, 0x43E0000000000000ull, 0xC3E0000000000000ull, 0x41E0000000000000ull,
    0x400921FB54442D18ull, 0x3FF8000000000000ull, 0x4004000000000000ull};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A literal value of type t: edge values half the time, else small or random bits. */
static vyre_bits lit_bits(struct gen *g, enum vyre_type t) {
    uint32_t k = vyre_gen_below(g, 10);
    int32_t small = (int32_t)vyre_gen_below(g, 33) - 16;
    switch (t) {
    case VYRE_BOOL: return vyre_gen_below(g, 2);
    case VYRE_I32:
        if (k < 5) return edge_i32[vyre_gen_below(g, NELEM(edge_i32))];
        if (k < 9) return (uint32_t)small;
        return (uint32_t)rng_next(&g->r);
    case VYRE_U32:
        if (k < 5) return edge_u32[vyre_gen_below(g, NELEM(edge_u32))];
        if (k < 9) return vyre_gen_below(g, 17);
        return (uint32_t)rng_next(&g->r);
    case VYRE_I64:
        if (k < 5) return edge_64[vyre_gen_below(g, NELEM(edge_64))];
        if (k < 9) return (uint64_t)(int64_t)small;
        return rng_next(&g->r);
    case VYRE_U64:
        if (k < 5) return edge_64[vyre_gen_below(g, NELEM(edge_64))];
        if (k < 9) return vyre_gen_below(g, 17);
        return rng_next(&g->r);
    case VYRE_F32:
        if (k < 5) return edge_f32[vyre_gen_below(g, NELEM(edge_f32))];
        if (k < 9) return f32_bits((float)small / (float)(1u << vyre_gen_below(g, 3)));
        return (uint32_t)rng_next(&g->r);
    case VYRE_F64:
        if (k < 5) return edge_f64[vyre_gen_below(g, NELEM(edge_f64))];
        if (k < 9) return f64_bits((double)small / (double)(1u << vyre_gen_below(g, 3)));
        return rng_next(&g->r);
    default: return 0;
    }
}

static bool lit_is_nan(enum vyre_type t, vyre_bits b) {
    if (t == VYRE_F32) return (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0;
    return (b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (b & 0x000FFFFFFFFFFFFFull) != 0;
}

struct vyre_expr *vyre_gen_lit(struct gen *g, enum vyre_type t, vyre_bits v) {
    return vyre_gen_chk(g, vyre_ir_lit(g->p, t, v));
}

struct vyre_expr *vyre_gen_rand_lit(struct gen *g, enum vyre_type t) {
    return vyre_gen_lit(g, t, lit_bits(g, t));
}

/* A small non-negative integer literal of integer type t. */
static struct vyre_expr *small_lit(struct gen *g, enum vyre_type t, uint32_t v) {
    return vyre_gen_lit(g, t, (vyre_bits)v);
}

/* ---- expression building helpers (NULL-propagating) --------------------------- */

struct vyre_expr *vyre_gen_name_ex(struct gen *g, const char *n) {
    return vyre_gen_chk(g, vyre_ir_name(g->p, n));
}

struct vyre_expr *vyre_gen_bin(struct gen *g, enum vyre_op op, struct vyre_expr *a,
                               struct vyre_expr *b) {
    if (!a || !b) return NULL;
    return vyre_gen_chk(g, vyre_ir_binary(g->p, op, a, b));
}

struct vyre_expr *vyre_gen_un(struct gen *g, enum vyre_op op, struct vyre_expr *a) {
    if (!a) return NULL;
    return vyre_gen_chk(g, vyre_ir_unary(g->p, op, a));
}

static struct vyre_expr *cast(struct gen *g, enum vyre_type to, struct vyre_expr *a) {
    if (!a) return NULL;
    return vyre_gen_chk(g, vyre_ir_cast(g->p, to, a));
}

struct vyre_expr *vyre_gen_bitcast(struct gen *g, enum vyre_type to, struct vyre_expr *a) {
    if (!a) return NULL;
    return vyre_gen_chk(g, vyre_ir_bitcast(g->p, to, a));
}

struct vyre_expr *vyre_gen_builtin(struct gen *g, enum vyre_builtin b, unsigned axis) {
    return vyre_gen_chk(g, vyre_ir_builtin(g->p, b, axis));
}

static struct vyre_expr *len_ex(struct gen *g, const char *buf) {
    return vyre_gen_chk(g, vyre_ir_len(g->p, buf));
}

/* ---- expressions ------------------------------------------------------------------- */

static struct vyre_expr *gen_expr(struct gen *g, enum vyre_type t, uint32_t depth, bool uni,
                                  bool *div);

/* The invocation's own index into a global buffer (gi) or shared array (li), spelled
 * as u32 or reinterpreted as i32 (same value: ids are far below 2^31). */
static struct vyre_expr *own_index(struct gen *g, bool shared) {
    struct vyre_expr *e = vyre_gen_name_ex(g, shared ? g->li : g->gi);
    switch (vyre_gen_below(g, 4)) {
    case 0: return cast(g, VYRE_I32, e);
    case 1: return vyre_gen_bitcast(g, VYRE_I32, e);
    default: return e;
    }
}

/* An index no invocation owns: always out of bounds (count < 2^32, ids are small). */
static struct vyre_expr *oob_index(struct gen *g, const struct gmem *m) {
    switch (vyre_gen_below(g, 3)) {
    case 0: return vyre_gen_lit(g, VYRE_U32, 0xFFFFFFFFu);
    case 1: return vyre_gen_lit(g, VYRE_I32, 0xFFFFFFFFu);
    default:
        return vyre_gen_bin(g, VYRE_OP_ADD, vyre_gen_name_ex(g, m->shared ? g->li : g->gi),
                            len_ex(g, m->name));
    }
}

/* Index for an OWN-mode access: the own slot most of the time. */
static struct vyre_expr *owned_index(struct gen *g, const struct gmem *m) {
    if (g->elementwise) return own_index(g, false);
    return vyre_gen_chance(g, 85) ? own_index(g, m->shared) : oob_index(g, m);
}

/* Index for an access that may touch any element (READ loads, ATOMIC-mode atomics):
 * in range, out of range, negative i32, or computed. */
static struct vyre_expr *any_index(struct gen *g, const struct gmem *m, uint32_t depth, bool *div) {
    switch (vyre_gen_below(g, 8)) {
    case 0: *div = true; return own_index(g, g->has_li && vyre_gen_chance(g, 50));
    case 1: return small_lit(g, VYRE_U32, vyre_gen_below(g, 9));
    case 2: return oob_index(g, m);
    case 3:
        *div = true;
        return vyre_gen_bin(g, VYRE_OP_ADD, vyre_gen_name_ex(g, g->gi),
                            small_lit(g, VYRE_U32, 1u + vyre_gen_below(g, 3)));
    case 4:
        return vyre_gen_bin(g, VYRE_OP_REM, gen_expr(g, VYRE_U32, depth + 1, false, div),
                            len_ex(g, m->name));
    case 5: return gen_expr(g, VYRE_I32, depth + 1, false, div);
    default: return gen_expr(g, VYRE_U32, depth + 1, false, div);
    }
}

static bool can_load(const struct gmem *m) { return m->mode == MODE_READ || m->mode == MODE_OWN; }

static struct vyre_expr *gen_load(struct gen *g, const struct gmem *m, uint32_t depth, bool *div) {
    /* Elementwise programs read their inputs mostly at the own index, as real ones do. */
    bool own = m->mode == MODE_OWN || (g->elementwise && vyre_gen_chance(g, 60));
    struct vyre_expr *idx = own ? owned_index(g, m) : any_index(g, m, depth, div);
    *div = true;
    if (!idx) return NULL;
    return vyre_gen_chk(g, vyre_ir_load(g->p, m->name, idx));
}

/* A leaf (or load) of type t; uniform-only leaves when `uni`. */
static struct vyre_expr *gen_leaf(struct gen *g, enum vyre_type t, uint32_t depth, bool uni,
                                  bool *div) {
    /* subgroup_size (uniform) and subgroup_lane exchange nothing: any control flow. */
    if (g->subgroup && t == VYRE_U32 && vyre_gen_chance(g, 8)) {
        bool lane = !uni && vyre_gen_chance(g, 70);
        if (lane) *div = true;
        return vyre_gen_chk(g, vyre_ir_subgroup(g->p, lane ? VYRE_SG_LANE : VYRE_SG_SIZE,
                                                VYRE_OP_COUNT, NULL, NULL));
    }
    for (int tries = 0; tries < 4; tries++) {
        uint32_t k = vyre_gen_below(g, 10);
        if (k < 4) {
            uint32_t cand[GEN_MAX_VARS], n = 0;
            for (uint32_t i = 0; i < g->nvars; i++)
                if (g->vars[i].type == t && (!uni || g->vars[i].uniform)) cand[n++] = i;
            if (!n) continue;
            const struct gvar *v = &g->vars[cand[vyre_gen_below(g, n)]];
            if (!v->uniform) *div = true;
            return vyre_gen_name_ex(g, v->name);
        }
        if (k < 6 && t == VYRE_U32) {
            if (g->elementwise) {
                if (uni) continue;
                *div = true;
                return vyre_gen_builtin(g, VYRE_GID, 0);
            }
            enum vyre_builtin b = (enum vyre_builtin)vyre_gen_below(g, VYRE_BUILTIN_COUNT);
            if (uni && (b == VYRE_GID || b == VYRE_LID)) b = VYRE_WGSIZE;
            if (b == VYRE_GID || b == VYRE_LID) *div = true;
            return vyre_gen_builtin(g, b, vyre_gen_below(g, 3));
        }
        if (k < 7 && t == VYRE_U32 && g->nmem)
            return len_ex(g, g->mem[vyre_gen_below(g, g->nmem)].name);
        if (k < 9 && !uni) {
            uint32_t cand[GEN_MAX_MEM], n = 0;
            for (uint32_t i = 0; i < g->nmem; i++)
                if (g->mem[i].type == t && can_load(&g->mem[i])) cand[n++] = i;
            if (!n) continue;
            return gen_load(g, &g->mem[cand[vyre_gen_below(g, n)]], depth, div);
        }
        break;
    }
    return vyre_gen_rand_lit(g, t);
}

/* Ops are picked from the op table (ops.h) by what they take and give, so a new row
 * is generated without touching this file. Groups, each in table order:
 *   GEN_GENERIC   binary ops over any numeric type (add sub mul div min max)
 *   GEN_SPECIFIC  binary ops over a narrower class (rem and or xor shl shr mulhi)
 *   GEN_EXACT     unary ops that are not approximate
 *   GEN_APPROX    unary approximate ops (only with allow_approx)
 *   GEN_COMPARE   comparisons (binary, bool result)
 *   GEN_LOGIC     binary non-comparisons over bool (and or xor land lor) */
enum gen_group { GEN_GENERIC, GEN_SPECIFIC, GEN_EXACT, GEN_APPROX, GEN_COMPARE, GEN_LOGIC };

static bool in_group(enum vyre_op op, enum gen_group grp) {
    bool generic = vyre_op_class_has(vyre_op_operands(op), VYRE_I32) &&
                   vyre_op_class_has(vyre_op_operands(op), VYRE_F32);
    switch (grp) {
    case GEN_GENERIC: return vyre_op_arity(op) == 2 && !vyre_op_is_compare(op) && generic;
    case GEN_SPECIFIC: return vyre_op_arity(op) == 2 && !vyre_op_is_compare(op) && !generic;
    case GEN_EXACT: return vyre_op_arity(op) == 1 && !vyre_op_is_approx(op);
    case GEN_APPROX: return vyre_op_arity(op) == 1 && vyre_op_is_approx(op);
    case GEN_COMPARE: return vyre_op_is_compare(op);
    case GEN_LOGIC: return vyre_op_arity(op) == 2 && !vyre_op_is_compare(op);
    }
    return false;
}

/* A random op of group grp that takes operands of type t and gives type `result`.
 * Every group the generator asks for has ops in today's table; should a table change
 * leave one empty, generation fails (NULL program) rather than build invalid IR. */
static enum vyre_op pick_op(struct gen *g, enum gen_group grp, enum vyre_type t,
                            enum vyre_type result) {
    enum vyre_op cand[VYRE_OP_COUNT];
    uint32_t n = 0;
    for (unsigned i = 0; i < VYRE_OP_COUNT; i++) {
        enum vyre_op op = (enum vyre_op)i;
        if (in_group(op, grp) && vyre_op_result_type(op, t) == result) cand[n++] = op;
    }
    if (n == 0) {
        g->fail = true;
        return VYRE_OP_ADD;
    }
    /* A single candidate (lnot for bool) takes no random draw, as when it was
     * written by hand: the rest of the program stays the same for the seed. */
    return n == 1 ? cand[0] : cand[vyre_gen_below(g, n)];
}

/* Same-width sibling type for bitcast (i32/u32/f32 or i64/u64/f64). */
static enum vyre_type bitcast_source(struct gen *g, enum vyre_type t) {
    static const enum vyre_type w32[] = {VYRE_I32, VYRE_U32, VYRE_F32};
    static const enum vyre_type w64[] = {VYRE_I64, VYRE_U64, VYRE_F64};
    return vyre_type_bits(t) == 64 ? w64[vyre_gen_below(g, 3)] : w32[vyre_gen_below(g, 3)];
}

/* A NaN may have any bit pattern (§3), so a float e of type t whose value could be NaN
 * becomes (max e -inf) where its bits are observed (a bitcast, match_any): NaN becomes
 * -inf, every other value is kept, and the bits are the same on every backend. */
static struct vyre_expr *no_nan(struct gen *g, enum vyre_type t, struct vyre_expr *e) {
    if (!e || (e->kind == VYRE_EX_LIT && !lit_is_nan(t, e->u.lit.bits))) return e;
    return vyre_gen_bin(g, VYRE_OP_MAX, e,
                        vyre_gen_lit(g, t, t == VYRE_F32 ? 0xFF800000u : 0xFFF0000000000000ull));
}

/* vyre_gen_bitcast(t, e), a float source through no_nan. */
static struct vyre_expr *gen_bitcast(struct gen *g, enum vyre_type t, uint32_t d, bool uni,
                                     bool *div) {
    enum vyre_type src = bitcast_source(g, t);
    struct vyre_expr *e = gen_expr(g, src, d, uni, div);
    if (vyre_type_is_float(src) && vyre_type_is_int(t)) e = no_nan(g, src, e);
    return vyre_gen_bitcast(g, t, e);
}

static struct vyre_expr *gen_subgroup(struct gen *g, enum vyre_type t, uint32_t d, bool *div);

static struct vyre_expr *gen_bool(struct gen *g, uint32_t d, bool uni, bool *div) {
    if (g->sg_ok && !uni && vyre_gen_chance(g, 12)) return gen_subgroup(g, VYRE_BOOL, d, div);
    switch (vyre_gen_below(g, 9)) {
    case 0:
    case 1:
    case 2: {
        enum vyre_type ot = num_type(g);
        enum vyre_op op = pick_op(g, GEN_COMPARE, ot, VYRE_BOOL);
        struct vyre_expr *a = gen_expr(g, ot, d, uni, div);
        return vyre_gen_bin(g, op, a, gen_expr(g, ot, d, uni, div));
    }
    case 3: { /* comparisons of bools: eq ne */
        enum vyre_op op = pick_op(g, GEN_COMPARE, VYRE_BOOL, VYRE_BOOL);
        struct vyre_expr *a = gen_expr(g, VYRE_BOOL, d, uni, div);
        return vyre_gen_bin(g, op, a, gen_expr(g, VYRE_BOOL, d, uni, div));
    }
    case 4: {
        enum vyre_op op = pick_op(g, GEN_LOGIC, VYRE_BOOL, VYRE_BOOL);
        struct vyre_expr *a = gen_expr(g, VYRE_BOOL, d, uni, div);
        return vyre_gen_bin(g, op, a, gen_expr(g, VYRE_BOOL, d, uni, div));
    }
    case 5: {
        enum vyre_op op = pick_op(g, GEN_EXACT, VYRE_BOOL, VYRE_BOOL);
        return vyre_gen_un(g, op, gen_expr(g, VYRE_BOOL, d, uni, div));
    }
    case 6: return cast(g, VYRE_BOOL, gen_expr(g, any_type(g), d, uni, div));
    default: return gen_leaf(g, VYRE_BOOL, d, uni, div);
    }
}

static struct vyre_expr *gen_numeric(struct gen *g, enum vyre_type t, uint32_t d, bool uni,
                                     bool *div) {
    bool is_int = vyre_type_is_int(t);
    if (g->sg_ok && !uni && vyre_gen_chance(g, 12)) return gen_subgroup(g, t, d, div);
    switch (vyre_gen_below(g, 11)) {
    case 0:
    case 1:
    case 2: {
        enum vyre_op op = pick_op(g, GEN_GENERIC, t, t);
        struct vyre_expr *a = gen_expr(g, t, d, uni, div);
        return vyre_gen_bin(g, op, a, gen_expr(g, t, d, uni, div));
    }
    case 3:
    case 4:
        if (is_int) {
            enum vyre_op op = pick_op(g, GEN_SPECIFIC, t, t);
            struct vyre_expr *a = gen_expr(g, t, d, uni, div);
            return vyre_gen_bin(g, op, a, gen_expr(g, t, d, uni, div));
        }
        if (vyre_gen_chance(g, 50)) {
            struct vyre_expr *a = gen_expr(g, t, d, uni, div);
            struct vyre_expr *b = gen_expr(g, t, d, uni, div);
            return vyre_gen_chk(g, vyre_ir_fma(g->p, a, b, gen_expr(g, t, d, uni, div)));
        }
        if (g->approx && vyre_gen_chance(g, 60)) {
            enum vyre_op op = pick_op(g, GEN_APPROX, t, t);
            return vyre_gen_un(g, op, gen_expr(g, t, d, uni, div));
        } else {
            enum vyre_op op = pick_op(g, GEN_EXACT, t, t);
            return vyre_gen_un(g, op, gen_expr(g, t, d, uni, div));
        }
    case 5: {
        enum vyre_op op = pick_op(g, GEN_EXACT, t, t);
        return vyre_gen_un(g, op, gen_expr(g, t, d, uni, div));
    }
    case 6: {
        struct vyre_expr *c = gen_expr(g, VYRE_BOOL, d, uni, div);
        struct vyre_expr *a = gen_expr(g, t, d, uni, div);
        struct vyre_expr *b = gen_expr(g, t, d, uni, div);
        if (!c || !a || !b) return NULL;
        return vyre_gen_chk(g, vyre_ir_select(g->p, c, a, b));
    }
    case 7: return cast(g, t, gen_expr(g, any_type(g), d, uni, div));
    case 8: return gen_bitcast(g, t, d, uni, div);
    default: return gen_leaf(g, t, d, uni, div);
    }
}

/* The lane, mask or delta of a shuffle: mostly in range (0..40, or derived from the
 * own lane), sometimes anything (out of range keeps the own value). */
static struct vyre_expr *gen_lane_arg(struct gen *g, uint32_t d, bool *div) {
    switch (vyre_gen_below(g, 5)) {
    case 0:
    case 1: return small_lit(g, VYRE_U32, vyre_gen_below(g, 41));
    case 2: {
        struct vyre_expr *lane =
            vyre_gen_chk(g, vyre_ir_subgroup(g->p, VYRE_SG_LANE, VYRE_OP_COUNT, NULL, NULL));
        enum vyre_op op = vyre_gen_chance(g, 50) ? VYRE_OP_XOR : VYRE_OP_ADD;
        return vyre_gen_bin(g, op, lane, small_lit(g, VYRE_U32, vyre_gen_below(g, 33)));
    }
    case 3:
        return vyre_gen_bin(g, VYRE_OP_REM, gen_expr(g, VYRE_U32, d, false, div),
                            small_lit(g, VYRE_U32, 33));
    default: return gen_expr(g, VYRE_U32, d, false, div);
    }
}

/* The operand of a (match_any V): a value of any numeric type. Masks are only
 * interesting when lanes collide, so most values are narrowed to a few distinct ones
 * (an integer and'ed with 1, 3 or 7; a float cast from such a u32). match_any compares
 * bits and a NaN may have any bits (§3), so a float that may be NaN goes through
 * no_nan, as a bitcast source does: the mask is then the same on every backend. */
static struct vyre_expr *gen_match_value(struct gen *g, uint32_t d, bool *div) {
    static const uint32_t masks[] = {1u, 3u, 7u};
    enum vyre_type vt = num_type(g);
    bool is_float = vyre_type_is_float(vt);
    if (vyre_gen_chance(g, 60)) {
        enum vyre_type it = is_float ? VYRE_U32 : vt;
        struct vyre_expr *v = gen_expr(g, it, d, false, div);
        uint32_t mask = masks[vyre_gen_below(g, NELEM(masks))];
        struct vyre_expr *n = vyre_gen_bin(g, VYRE_OP_AND, v, small_lit(g, it, mask));
        return is_float ? cast(g, vt, n) : n;
    }
    struct vyre_expr *v = gen_expr(g, vt, d, false, div);
    return is_float ? no_nan(g, vt, v) : v;
}

/* A subgroup op with a result of type t (docs/SUBGROUPS.md), only where g->sg_ok
 * (uniform control flow, like a barrier). Its result differs between lanes. One time
 * in ten it is a match_any (its popcount, cast, for a type other than u32); a u32
 * result is a ballot one time in ten too. */
static struct vyre_expr *gen_subgroup(struct gen *g, enum vyre_type t, uint32_t d, bool *div) {
    static const enum vyre_op combiners[] = {VYRE_OP_ADD, VYRE_OP_MIN, VYRE_OP_MAX,
                                             VYRE_OP_AND, VYRE_OP_OR,  VYRE_OP_XOR};
    *div = true;
    vyre_program *p = g->p;
    if (t == VYRE_BOOL) {
        struct vyre_expr *c = gen_expr(g, VYRE_BOOL, d, false, div);
        if (!c) return NULL;
        return vyre_gen_chk(g,
                            vyre_ir_subgroup(p, vyre_gen_chance(g, 50) ? VYRE_SG_ALL : VYRE_SG_ANY,
                                             VYRE_OP_COUNT, c, NULL));
    }
    uint32_t k = vyre_gen_below(g, 10);
    if (t == VYRE_U32 && k == 0) {
        struct vyre_expr *c = gen_expr(g, VYRE_BOOL, d, false, div);
        if (!c) return NULL;
        return vyre_gen_chk(g, vyre_ir_subgroup(p, VYRE_SG_BALLOT, VYRE_OP_COUNT, c, NULL));
    }
    if (k == 1) {
        struct vyre_expr *m = gen_match_value(g, d, div);
        if (!m) return NULL;
        m = vyre_gen_chk(g, vyre_ir_subgroup(p, VYRE_SG_MATCH_ANY, VYRE_OP_COUNT, m, NULL));
        /* another type gets how many lanes share the value (1..32): exact in every type */
        return t == VYRE_U32 ? m : cast(g, t, vyre_gen_un(g, VYRE_OP_POPCOUNT, m));
    }
    struct vyre_expr *v = gen_expr(g, t, d, false, div);
    if (!v) return NULL;
    if (k < 6) {
        static const enum vyre_subgroup shuffles[] = {VYRE_SG_SHUFFLE, VYRE_SG_SHUFFLE_XOR,
                                                      VYRE_SG_SHUFFLE_UP, VYRE_SG_SHUFFLE_DOWN};
        enum vyre_subgroup sk = shuffles[vyre_gen_below(g, NELEM(shuffles))];
        struct vyre_expr *arg = gen_lane_arg(g, d, div);
        if (!arg) return NULL;
        return vyre_gen_chk(g, vyre_ir_subgroup(p, sk, VYRE_OP_COUNT, v, arg));
    }
    enum vyre_op op = combiners[vyre_gen_below(g, vyre_type_is_int(t) ? NELEM(combiners) : 3u)];
    return vyre_gen_chk(g, vyre_ir_subgroup(p, k < 8 ? VYRE_SG_REDUCE : VYRE_SG_SCAN, op, v, NULL));
}

/* An expression of type t at expression depth `depth`; sets *div when it may differ
 * between invocations of a workgroup. `uni` restricts it to uniform values. */
static struct vyre_expr *gen_expr(struct gen *g, enum vyre_type t, uint32_t depth, bool uni,
                                  bool *div) {
    if (g->fail) return NULL;
    if (depth >= g->max_depth || vyre_gen_chance(g, 25)) return gen_leaf(g, t, depth, uni, div);
    if (t == VYRE_BOOL) return gen_bool(g, depth + 1, uni, div);
    return gen_numeric(g, t, depth + 1, uni, div);
}

/* ---- statements ----------------------------------------------------------------------- */

void vyre_gen_push(struct gen *g, struct vyre_block *b, struct vyre_stmt *s) {
    if (!s) {
        g->fail = true;
        return;
    }
    if (!vyre_ir_push(g->p, b, s)) g->fail = true;
}

static struct gvar *add_var(struct gen *g, const char *name, enum vyre_type t, bool uniform,
                            bool settable) {
    if (g->nvars >= GEN_MAX_VARS) return NULL;
    struct gvar *v = &g->vars[g->nvars++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->type = t;
    v->uniform = uniform;
    v->settable = settable;
    return v;
}

/* Whether memory of type t can be in MODE_ATOMIC (words hit by many invocations): the
 * integer types, and f32, whose min/max leave a result independent of the order the
 * atomics land in (docs/ARCHITECTURE.md §10) -- unlike f32 add, which rounds. */
static bool order_free_atomic_type(enum vyre_type t) { return atomic_type(t) || t == VYRE_F32; }

/* The commutative op of a MODE_ATOMIC memory of type t. */
static enum vyre_atomic_op commutative_op(struct gen *g, enum vyre_type t) {
    static const enum vyre_atomic_op comm[] = {VYRE_ATOMIC_ADD, VYRE_ATOMIC_MIN, VYRE_ATOMIC_MAX,
                                               VYRE_ATOMIC_AND, VYRE_ATOMIC_OR,  VYRE_ATOMIC_XOR};
    if (t == VYRE_F32) return vyre_gen_chance(g, 50) ? VYRE_ATOMIC_MIN : VYRE_ATOMIC_MAX;
    return comm[vyre_gen_below(g, NELEM(comm))];
}

/* Every shared array gets a new random access mode for the phase after a barrier. */
static void pick_shared_modes(struct gen *g) {
    for (uint32_t i = 0; i < g->nmem; i++) {
        struct gmem *m = &g->mem[i];
        if (!m->shared) continue;
        uint32_t k = vyre_gen_below(g, 3);
        m->mode = k == 0 ? MODE_READ : k == 1 ? MODE_OWN : MODE_ATOMIC;
        if (m->mode == MODE_ATOMIC && !order_free_atomic_type(m->type)) m->mode = MODE_OWN;
        m->aop = commutative_op(g, m->type);
    }
}

static void shared_modes_none(struct gen *g) {
    for (uint32_t i = 0; i < g->nmem; i++)
        if (g->mem[i].shared) g->mem[i].mode = MODE_NONE;
}

static void save_modes(const struct gen *g, enum mode out[GEN_MAX_MEM]) {
    for (uint32_t i = 0; i < g->nmem; i++) out[i] = g->mem[i].mode;
}

static void restore_modes(struct gen *g, const enum mode in[GEN_MAX_MEM]) {
    for (uint32_t i = 0; i < g->nmem; i++) g->mem[i].mode = in[i];
}

static void gen_block(struct gen *g, const struct ctx *c, struct vyre_block *b, uint32_t n);

static void gen_let(struct gen *g, const struct ctx *c, struct vyre_block *b) {
    enum vyre_type t = any_type(g);
    bool div = false;
    struct vyre_expr *v = gen_expr(g, t, 0, false, &div);
    char name[GEN_NAME];
    fresh_name(g, name, 'v');
    if (!v) return;
    vyre_gen_push(g, b, vyre_ir_let(g->p, name, v));
    add_var(g, name, t, !div && !c->divergent, true);
}

static bool gen_set(struct gen *g, const struct ctx *c, struct vyre_block *b) {
    uint32_t cand[GEN_MAX_VARS], n = 0;
    for (uint32_t i = 0; i < g->nvars; i++) {
        const struct gvar *v = &g->vars[i];
        /* A uniform variable stays uniform: set only in uniform control, uniform value. */
        if (v->settable && (!v->uniform || !c->divergent)) cand[n++] = i;
    }
    if (!n) return false;
    const struct gvar *v = &g->vars[cand[vyre_gen_below(g, n)]];
    bool div = false;
    struct vyre_expr *e = gen_expr(g, v->type, 0, v->uniform, &div);
    if (!e) return true;
    vyre_gen_push(g, b, vyre_ir_set(g->p, v->name, e));
    return true;
}

static bool gen_store(struct gen *g, struct vyre_block *b) {
    uint32_t cand[GEN_MAX_MEM], n = 0;
    for (uint32_t i = 0; i < g->nmem; i++)
        if (g->mem[i].mode == MODE_OWN) cand[n++] = i;
    if (!n) return false;
    const struct gmem *m = &g->mem[cand[vyre_gen_below(g, n)]];
    bool div = false;
    struct vyre_expr *idx = owned_index(g, m);
    struct vyre_expr *v = gen_expr(g, m->type, 0, false, &div);
    if (!idx || !v) return true;
    vyre_gen_push(g, b, vyre_ir_store(g->p, m->name, idx, v));
    return true;
}

static bool gen_atomic(struct gen *g, struct vyre_block *b) {
    if (g->elementwise) return false;
    uint32_t cand[GEN_MAX_MEM], n = 0;
    for (uint32_t i = 0; i < g->nmem; i++) {
        const struct gmem *m = &g->mem[i];
        bool own_ok = m->mode == MODE_OWN && (atomic_type(m->type) || m->type == VYRE_F32);
        if (m->mode == MODE_ATOMIC || own_ok) cand[n++] = i;
    }
    if (!n) return false;
    const struct gmem *m = &g->mem[cand[vyre_gen_below(g, n)]];
    bool div = false;
    if (m->mode == MODE_ATOMIC) {
        /* Many invocations hit the same words: one commutative op, old value unused. */
        struct vyre_expr *idx = any_index(g, m, 1, &div);
        struct vyre_expr *v = gen_expr(g, m->type, 1, false, &div);
        if (!idx || !v) return true;
        vyre_gen_push(g, b, vyre_ir_atomic(g->p, NULL, m->aop, m->name, idx, NULL, v));
        return true;
    }
    static const enum vyre_atomic_op f32_ops[] = {VYRE_ATOMIC_ADD, VYRE_ATOMIC_MIN,
                                                  VYRE_ATOMIC_MAX};
    enum vyre_atomic_op op = m->type == VYRE_F32
                                 ? f32_ops[vyre_gen_below(g, NELEM(f32_ops))]
                                 : (enum vyre_atomic_op)vyre_gen_below(g, VYRE_ATOMIC_COUNT);
    struct vyre_expr *idx = owned_index(g, m);
    struct vyre_expr *exp = op == VYRE_ATOMIC_CAS ? gen_expr(g, m->type, 1, false, &div) : NULL;
    struct vyre_expr *v = gen_expr(g, m->type, 1, false, &div);
    if (!idx || !v || (op == VYRE_ATOMIC_CAS && !exp)) return true;
    char name[GEN_NAME];
    bool bound = vyre_gen_chance(g, 50);
    if (bound) fresh_name(g, name, 'a');
    vyre_gen_push(g, b, vyre_ir_atomic(g->p, bound ? name : NULL, op, m->name, idx, exp, v));
    if (bound) add_var(g, name, m->type, false, true);
    return true;
}

/* (lt gi (len b)) for a random global buffer b, sometimes spelled (gt (len b) gi). */
static struct vyre_expr *gid_guard(struct gen *g) {
    const char *name = g->mem[vyre_gen_below(g, g->nmem)].name;
    if (vyre_gen_chance(g, 25))
        return vyre_gen_bin(g, VYRE_OP_GT, len_ex(g, name), vyre_gen_name_ex(g, g->gi));
    return vyre_gen_bin(g, VYRE_OP_LT, vyre_gen_name_ex(g, g->gi), len_ex(g, name));
}

static void gen_if(struct gen *g, const struct ctx *c, struct vyre_block *b) {
    bool div = false;
    /* In barrier-capable code prefer uniform conditions so barriers get nested. */
    bool uni = c->barrier_ok && vyre_gen_chance(g, 60);
    struct vyre_expr *cond = NULL;
    if (g->elementwise && g->nmem && vyre_gen_chance(g, 50)) {
        div = true;
        cond = gid_guard(g);
        if (vyre_gen_chance(g, 30)) cond = vyre_gen_bin(g, VYRE_OP_LAND, cond, gid_guard(g));
    } else {
        cond = gen_expr(g, VYRE_BOOL, 0, uni, &div);
    }
    if (!cond) return;
    struct vyre_stmt *s = vyre_ir_if(g->p, cond);
    vyre_gen_push(g, b, s);
    if (!s) return;
    struct ctx in = *c;
    in.depth++;
    in.divergent = c->divergent || div;
    in.barrier_ok = c->barrier_ok && !div;
    uint32_t before = g->nbarriers;
    enum mode modes[GEN_MAX_MEM];
    save_modes(g, modes);
    gen_block(g, &in, &s->then_, 1 + vyre_gen_below(g, 3));
    enum mode then_modes[GEN_MAX_MEM];
    save_modes(g, then_modes);
    restore_modes(g, modes);
    if (vyre_gen_chance(g, 45)) gen_block(g, &in, &s->else_, 1 + vyre_gen_below(g, 2));
    /* Which phase follows the if is not known statically once either branch holds
     * a barrier: no shared access until the next barrier. */
    if (g->nbarriers != before) shared_modes_none(g);
}

/* Loop bounds: [from, to) with small trip counts, in the loop variable's type. */
static void gen_bounds(struct gen *g, enum vyre_type t, struct vyre_expr **from,
                       struct vyre_expr **to, struct vyre_expr **step, bool *div, bool top) {
    bool sgn = vyre_type_is_signed(t);
    uint32_t k = vyre_gen_below(g, 10);
    if (k < 5) {
        int32_t a = sgn ? (int32_t)vyre_gen_below(g, 7) - 3 : (int32_t)vyre_gen_below(g, 4);
        int32_t end = a + (int32_t)vyre_gen_below(g, 8) - 1; /* sometimes empty */
        if (!sgn && end < 0) end = 0;
        *from = vyre_gen_lit(g, t, (vyre_bits)(int64_t)a);
        *to = vyre_gen_lit(g, t, (vyre_bits)(int64_t)end);
    } else if (k < 8) {
        /* len-bounded: uniform; capped below the top level so nests stay cheap. */
        const struct gmem *m = &g->mem[vyre_gen_below(g, g->nmem)];
        struct vyre_expr *l = len_ex(g, m->name);
        if (!top || vyre_gen_chance(g, 50))
            l = vyre_gen_bin(g, VYRE_OP_MIN, l, small_lit(g, VYRE_U32, 1u + vyre_gen_below(g, 6)));
        *from = small_lit(g, t, vyre_gen_below(g, 2));
        *to = t == VYRE_U32 ? l : cast(g, t, l);
    } else {
        /* Divergent but bounded: (rem e K) lies in (-K, K). */
        struct vyre_expr *e = gen_expr(g, t, 1, false, div);
        *from = small_lit(g, t, 0);
        *to = vyre_gen_bin(g, VYRE_OP_REM, e, small_lit(g, t, 1u + vyre_gen_below(g, 6)));
    }
    uint32_t sk = vyre_gen_below(g, 10);
    if (sk < 6) {
        *step = small_lit(g, t, 1);
    } else if (sk < 8) {
        *step = small_lit(g, t, 2u + vyre_gen_below(g, 2));
    } else {
        /* A param (any value, even <= 0 or huge) as step when one fits. */
        uint32_t cand[GEN_MAX_VARS], n = 0;
        for (uint32_t i = 0; i < g->nvars; i++) {
            const struct gvar *v = &g->vars[i];
            if (v->type == t && v->uniform && !v->settable && v->name[0] == 'p') cand[n++] = i;
        }
        *step = n ? vyre_gen_name_ex(g, g->vars[cand[vyre_gen_below(g, n)]].name)
                  : vyre_gen_rand_lit(g, t);
    }
}

static void gen_for(struct gen *g, const struct ctx *c, struct vyre_block *b) {
    enum vyre_type t = vyre_gen_int_type(g);
    struct vyre_expr *from = NULL, *to = NULL, *step = NULL;
    bool div = false;
    gen_bounds(g, t, &from, &to, &step, &div, c->loop_depth == 0);
    if (!from || !to || !step) return;
    char name[GEN_NAME];
    fresh_name(g, name, 'i');
    struct vyre_stmt *s = vyre_ir_for(g->p, name, from, to, step);
    vyre_gen_push(g, b, s);
    if (!s) return;
    struct ctx in = *c;
    in.depth++;
    in.loop_depth++;
    in.in_loop = true;
    /* A loop that may hold barriers has uniform bounds and exits; one whose body may
     * exit divergently is treated as divergent throughout (later iterations run on a
     * subset), so it holds no barrier and sets no uniform variable. */
    bool barrier_loop = c->barrier_ok && !div && !g->div_return && vyre_gen_chance(g, 50);
    bool div_exit = !barrier_loop && !c->in_barrier_loop && vyre_gen_chance(g, 35);
    in.divergent = c->divergent || div || div_exit;
    in.barrier_ok = barrier_loop;
    in.loop_body_div = in.divergent;
    in.in_barrier_loop = c->in_barrier_loop || barrier_loop;
    uint32_t saved = g->nvars;
    add_var(g, name, t, !div && !c->divergent, false);
    if (barrier_loop) shared_modes_none(g);
    gen_block(g, &in, &s->then_, 1 + vyre_gen_below(g, 3));
    g->nvars = saved;
    if (barrier_loop) shared_modes_none(g);
}

static void gen_stmt(struct gen *g, const struct ctx *c, struct vyre_block *b) {
    g->budget--;
    /* Where a barrier could go, a subgroup op can: every invocation gets there. */
    g->sg_ok = g->subgroup && c->barrier_ok && !c->divergent && !g->div_return;
    for (int tries = 0; tries < 8 && !g->fail; tries++) {
        uint32_t k = vyre_gen_below(g, 100);
        if (k < 22) {
            gen_let(g, c, b);
            return;
        }
        if (k < 32) {
            if (gen_set(g, c, b)) return;
            continue;
        }
        if (k < 52) {
            if (gen_store(g, b)) return;
            continue;
        }
        if (k < 64) {
            if (c->depth >= GEN_STMT_DEPTH) continue;
            gen_if(g, c, b);
            return;
        }
        if (k < 72) {
            if (c->depth >= GEN_STMT_DEPTH || c->loop_depth >= GEN_LOOP_DEPTH) continue;
            gen_for(g, c, b);
            return;
        }
        if (k < 82) {
            if (gen_atomic(g, b)) return;
            continue;
        }
        if (k < 91) {
            if (!g->barriers || !c->barrier_ok || c->divergent || g->div_return) continue;
            vyre_gen_push(g, b, vyre_ir_simple(g->p, VYRE_ST_BARRIER));
            g->nbarriers++;
            pick_shared_modes(g);
            return;
        }
        if (k < 97) {
            if (!c->in_loop || (c->divergent && (!c->loop_body_div || c->in_barrier_loop)))
                continue;
            vyre_gen_push(g, b, vyre_ir_simple(g->p, VYRE_ST_BREAK));
            return;
        }
        /* return: rare at top level (everything after it is dead). */
        if (c->depth == 0 && vyre_gen_chance(g, 80)) continue;
        if (c->divergent) {
            if (c->in_barrier_loop) continue;
            g->div_return = true;
        }
        vyre_gen_push(g, b, vyre_ir_simple(g->p, VYRE_ST_RETURN));
        return;
    }
}

static void gen_block(struct gen *g, const struct ctx *c, struct vyre_block *b, uint32_t n) {
    uint32_t saved = g->nvars;
    for (uint32_t i = 0; i < n && g->budget > 0 && !g->fail; i++) gen_stmt(g, c, b);
    g->nvars = saved;
}

/* ---- declarations and the program ---------------------------------------------------- */

static void gen_decls(struct gen *g) {
    uint32_t nbuf = 1u + vyre_gen_below(g, 4);
    uint32_t out = vyre_gen_below(g, nbuf);
    for (uint32_t i = 0; i < nbuf && !g->fail; i++) {
        struct gmem *m = &g->mem[g->nmem++];
        fresh_name(g, m->name, 'b');
        m->type = any_type(g);
        m->shared = false;
        uint32_t a = vyre_gen_below(g, 3);
        if (i == out && a == 0) a = 1u + vyre_gen_below(g, 2);
        m->access = (enum vyre_access)a;
        uint32_t count = vyre_gen_chance(g, 75) ? 0u : 1u + vyre_gen_below(g, 200);
        if (m->access == VYRE_ACCESS_READ) {
            m->mode = MODE_READ;
        } else if (!g->elementwise && order_free_atomic_type(m->type) && vyre_gen_chance(g, 25)) {
            m->mode = MODE_ATOMIC;
            m->aop = commutative_op(g, m->type);
        } else {
            m->mode = MODE_OWN;
        }
        if (!vyre_ir_buffer(g->p, m->name, m->type, m->access, count)) g->fail = true;
    }
    if (g->barriers && vyre_gen_chance(g, 80)) {
        uint32_t wg = g->p->workgroup[0] * g->p->workgroup[1] * g->p->workgroup[2];
        uint32_t nsh = 1u + vyre_gen_below(g, 2);
        for (uint32_t i = 0; i < nsh && !g->fail; i++) {
            struct gmem *m = &g->mem[g->nmem++];
            fresh_name(g, m->name, 's');
            m->type = any_type(g);
            m->shared = true;
            m->access = VYRE_ACCESS_READ_WRITE;
            uint32_t k = vyre_gen_below(g, 4);
            uint32_t count = k == 0   ? wg
                             : k == 1 ? 1u
                             : k == 2 ? 1u + vyre_gen_below(g, 256)
                                      : 2u * wg;
            if (!vyre_ir_shared(g->p, m->name, m->type, count)) g->fail = true;
        }
        g->has_li = true;
        pick_shared_modes(g);
    }
    uint32_t npar = vyre_gen_below(g, 4);
    for (uint32_t i = 0; i < npar && !g->fail; i++) {
        char name[GEN_NAME];
        fresh_name(g, name, 'p');
        enum vyre_type t = any_type(g);
        if (!vyre_ir_param(g->p, name, t)) g->fail = true;
        add_var(g, name, t, true, false);
    }
}

/* gi: linear global id over a grid of any shape; li: linear local id. */
static void gen_ids(struct gen *g, struct vyre_block *b) {
    if (g->elementwise) {
        /* g->gi, not "gi": each grid section names its own (gi_<n>) */
        vyre_gen_push(g, b, vyre_ir_let(g->p, g->gi, vyre_gen_builtin(g, VYRE_GID, 0)));
        add_var(g, g->gi, VYRE_U32, false, false);
        return;
    }
    struct vyre_expr *sx = vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_WGSIZE, 0),
                                        vyre_gen_builtin(g, VYRE_NGROUPS, 0));
    struct vyre_expr *sy = vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_WGSIZE, 1),
                                        vyre_gen_builtin(g, VYRE_NGROUPS, 1));
    struct vyre_expr *sxy =
        vyre_gen_bin(g, VYRE_OP_MUL,
                     vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_WGSIZE, 0),
                                  vyre_gen_builtin(g, VYRE_NGROUPS, 0)),
                     sy);
    struct vyre_expr *gi = vyre_gen_bin(
        g, VYRE_OP_ADD,
        vyre_gen_bin(g, VYRE_OP_ADD, vyre_gen_builtin(g, VYRE_GID, 0),
                     vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_GID, 1), sx)),
        vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_GID, 2), sxy));
    if (!gi) return;
    vyre_gen_push(g, b, vyre_ir_let(g->p, g->gi, gi));
    add_var(g, g->gi, VYRE_U32, false, false);
    if (!g->has_li) return;
    const uint32_t *w = g->p->workgroup;
    struct vyre_expr *li = vyre_gen_builtin(g, VYRE_LID, 0);
    if (w[1] > 1 || w[2] > 1) {
        struct vyre_expr *y = vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_LID, 1),
                                           vyre_gen_builtin(g, VYRE_WGSIZE, 0));
        struct vyre_expr *wxy = vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_WGSIZE, 0),
                                             vyre_gen_builtin(g, VYRE_WGSIZE, 1));
        struct vyre_expr *z = vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_LID, 2), wxy);
        li = vyre_gen_bin(g, VYRE_OP_ADD, vyre_gen_bin(g, VYRE_OP_ADD, li, y), z);
    }
    if (!li) return;
    vyre_gen_push(g, b, vyre_ir_let(g->p, g->li, li));
    add_var(g, g->li, VYRE_U32, false, false);
}

static vyre_program *gen_valid(struct gen *g, uint64_t seed) {
    static const uint32_t wx[] = {1u, 2u, 32u, 64u, 128u, 256u};
    char name[40];
    snprintf(name, sizeof name, "prog_%llx", (unsigned long long)seed);
    uint32_t x = wx[vyre_gen_below(g, NELEM(wx))], y = 1, z = 1;
    if (!g->elementwise && vyre_gen_chance(g, 25)) {
        y = 1u + vyre_gen_below(g, 4);
        z = vyre_gen_chance(g, 50) ? 1u : 1u + vyre_gen_below(g, 2);
        while (x * y * z > 1024u && y > 1) y--;
        if (x * y * z > 1024u) z = 1;
    }
    g->p = vyre_program_new(name, x, y, z);
    if (!g->p) return NULL;
    gen_decls(g);
    struct ctx c;
    memset(&c, 0, sizeof c);
    /* Subgroup ops need the uniform constructs barriers need (barrier_ok marks them;
     * barrier statements themselves still need allow_barriers). */
    c.barrier_ok = g->barriers || g->subgroup;
    if (g->grid) {
        vyre_gen_grid(g, &c); /* sections, grid loops, converge (gen_grid.c) */
        return g->p;
    }
    gen_ids(g, &g->p->body);
    uint32_t n = 1u + vyre_gen_below(g, g->max_stmts);
    g->budget = g->max_stmts * 5u;
    gen_block(g, &c, &g->p->body, n);
    /* End with one store into an own-slot output, so results are visible. */
    g->budget = 1;
    g->sg_ok = g->subgroup && !g->div_return;
    if (!gen_store(g, &g->p->body)) gen_atomic(g, &g->p->body);
    return g->p;
}

/* ---- entry point ------------------------------------------------------------------------ */

vyre_program *vyre_gen_random(uint64_t seed, const struct vyre_gen_options *opt) {
    struct gen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) g->r.s[i] = splitmix64(&x);
    g->max_stmts = opt && opt->max_stmts ? opt->max_stmts : 8u;
    if (g->max_stmts > 500u) g->max_stmts = 500u; /* stays under the node limit */
    g->max_depth = opt && opt->max_depth ? opt->max_depth : 4u;
    if (g->max_depth > 32) g->max_depth = 32; /* keep within the expression limit */
    g->barriers = opt && opt->allow_barriers;
    g->approx = opt && opt->allow_approx;
    g->subgroup = opt && opt->allow_subgroup;
    g->elementwise = opt && opt->elementwise;
    if (g->elementwise) g->barriers = g->subgroup = false;
    g->grid = opt && opt->allow_grid;
    snprintf(g->gi, sizeof g->gi, "gi");
    snprintf(g->li, sizeof g->li, "li");
    vyre_program *p = gen_valid(g, seed);
    if (p && !g->fail && opt && opt->allow_opt_shapes) vyre_gen_opt_shapes(g);
    if (p && !g->fail && opt && opt->allow_invalid) vyre_gen_invalid(g);
    if (p && (g->fail || p->oom)) {
        vyre_program_free(p);
        p = NULL;
    }
    free(g);
    return p;
}

/* ---- for gen_grid.c: the section builders ---------------------------------------------- */

void vyre_gen_block(struct gen *g, const struct ctx *c, struct vyre_block *b, uint32_t n) {
    gen_block(g, c, b, n);
}

void vyre_gen_ids(struct gen *g, struct vyre_block *b) { gen_ids(g, b); }

void vyre_gen_pick_shared(struct gen *g) { pick_shared_modes(g); }

bool vyre_gen_final(struct gen *g, struct vyre_block *b) {
    return gen_store(g, b) || gen_atomic(g, b);
}

void vyre_gen_add_var(struct gen *g, const char *name, enum vyre_type t, bool uniform) {
    add_var(g, name, t, uniform, false);
}

void vyre_gen_fresh(struct gen *g, char out[GEN_NAME], char prefix) { fresh_name(g, out, prefix); }

struct vyre_expr *vyre_gen_expr(struct gen *g, enum vyre_type t, bool *div) {
    return gen_expr(g, t, 0, false, div);
}

bool vyre_gen_order_free(enum vyre_type t) { return order_free_atomic_type(t); }

enum vyre_atomic_op vyre_gen_commutative(struct gen *g, enum vyre_type t) {
    return commutative_op(g, t);
}
