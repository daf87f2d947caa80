/* ptx_subgroup.c — lowers subgroup (warp) ops to PTX, bit-identical to the reference
 * interpreter (interp_subgroup.c) and docs/SUBGROUPS.md. A vyre subgroup is a CUDA
 * warp: 32 threads of consecutive linear thread id, lane = linear id % 32. Every
 * .sync instruction names the member mask of the lanes present in this warp (all 32,
 * or for the last warp of a workgroup whose size is not a multiple of 32, its
 * low n lanes), so absent lanes are never waited for and never read:
 *   - shuffles compute their source lane themselves (own lane when the source is
 *     absent or out of range) and use shfl.sync.idx, so the hardware's clamping and
 *     modulo-32 rules never decide a result;
 *   - ballot/all/any are vote.sync over the present lanes;
 *   - reduce is the butterfly of the document (shfl.sync.bfly in a full warp; in a
 *     partial one shfl.sync.idx with absent partners skipped, then lane 0's value to
 *     all lanes); 32-bit integers use redux.sync on sm_80 and later, exact because
 *     wrapping add, min, max and the bitwise ops do not depend on the order; sm_70/75
 *     take the butterfly;
 *   - scan is Hillis-Steele with shfl.sync.up (the source lane - d is always present);
 *   - match_any is match.any.sync over the present lanes (bits compared, any type);
 *   - 64-bit values move as two 32-bit shuffles.
 * Float combinations keep the document's operand order (the lower lane's value on
 * the left), so every lane of a pair computes the same bits. The validator allows the
 * ops only in uniform control flow, so every present lane reaches each instruction. */
#include "ptx.h"

#include <stdio.h>

#define W VYRE_SUBGROUP_WIDTH

/* ---- does the program use subgroup ops? ------------------------------------- */

static bool expr_has(const struct vyre_expr *e) {
    if (!e) return false;
    if (e->kind == VYRE_EX_SUBGROUP) return true;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++)
        if (expr_has(ops[i])) return true;
    return false;
}

static bool block_has(const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (expr_has(s->value) || expr_has(s->index) || expr_has(s->expected) ||
            expr_has(s->cond) || expr_has(s->from) || expr_has(s->to) || expr_has(s->step))
            return true;
        if (block_has(&s->then_) || block_has(&s->else_)) return true;
    }
    return false;
}

static uint32_t wg_total(const struct ptx_ctx *c) {
    const uint32_t *w = c->p->workgroup;
    return w[0] * w[1] * w[2];
}

/* Lane, present count and member mask once at entry, outside any branch, so every
 * op in the body can use them. Only the last warp of a workgroup can be partial. */
void vyre_ptx_subgroup_prologue(struct ptx_ctx *c) {
    if (!block_has(&c->p->body)) return;
    const uint32_t *w = c->p->workgroup;
    uint32_t total = wg_total(c);
    c->sg = true;
    vyre_pbuf_puts(&c->body, "\t// subgroup: lane, lanes present, member mask\n");
    struct ptx_reg lin = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.x", lin.s);
    if (w[1] > 1 || w[2] > 1) {
        struct ptx_reg ty = vyre_ptx_reg(c, PTX_R), tz = vyre_ptx_reg(c, PTX_R);
        struct ptx_reg yz = vyre_ptx_reg(c, PTX_R), l2 = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "mov.u32 %s, %%tid.y", ty.s);
        vyre_ptx_ins(c, "mov.u32 %s, %%tid.z", tz.s);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", yz.s, tz.s, (unsigned)w[1], ty.s);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", l2.s, yz.s, (unsigned)w[0], lin.s);
        lin = l2;
    }
    c->sg_lane = vyre_ptx_reg(c, PTX_R);
    c->sg_n = vyre_ptx_reg(c, PTX_R);
    c->sg_mask = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "and.b32 %s, %s, %u", c->sg_lane.s, lin.s, W - 1u);
    uint32_t rest = total % W;
    if (rest == 0) {
        vyre_ptx_ins(c, "mov.u32 %s, %u", c->sg_n.s, W);
        vyre_ptx_ins(c, "mov.b32 %s, 0xffffffff", c->sg_mask.s);
        return;
    }
    struct ptx_reg base = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg last = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "and.b32 %s, %s, 0x%08x", base.s, lin.s, ~(W - 1u));
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, %u", last.s, base.s, (unsigned)(total - rest));
    vyre_ptx_ins(c, "selp.b32 %s, %u, %u, %s", c->sg_n.s, (unsigned)rest, W, last.s);
    vyre_ptx_ins(c, "selp.b32 %s, 0x%08x, 0xffffffff, %s", c->sg_mask.s,
                 (unsigned)((1u << rest) - 1u), last.s);
}

/* ---- building blocks ------------------------------------------------------- */

static bool wide(enum vyre_type t) { return vyre_type_bits(t) == 64; }

/* d = p ? a : b for a value of type t (not bool). */
static void selp(struct ptx_ctx *c, enum vyre_type t, struct ptx_reg d, struct ptx_reg a,
                 struct ptx_reg b, struct ptx_reg p) {
    const char *sfx = t == VYRE_F32 ? ".f32" : t == VYRE_F64 ? ".f64" : vyre_ptx_bsfx(t);
    vyre_ptx_ins(c, "selp%s %s, %s, %s, %s", sfx, d.s, a.s, b.s, p.s);
}

static struct ptx_reg copy(struct ptx_ctx *c, enum vyre_type t, struct ptx_reg a) {
    struct ptx_reg d = vyre_ptx_treg(c, t);
    vyre_ptx_ins(c, "mov%s %s, %s", vyre_ptx_bsfx(t), d.s, a.s);
    return d;
}

/* shfl.sync.MODE of a value of type t (32 or 64 bits) with lane operand `b` and clamp
 * operand `cl`, over the present lanes. */
static struct ptx_reg shuffle(struct ptx_ctx *c, enum vyre_type t, struct ptx_reg v,
                              const char *mode, const char *b, const char *cl) {
    struct ptx_reg d = vyre_ptx_treg(c, t);
    const char *m = c->sg_mask.s;
    if (!wide(t)) {
        vyre_ptx_ins(c, "shfl.sync.%s.b32 %s, %s, %s, %s, %s", mode, d.s, v.s, b, cl, m);
        return d;
    }
    struct ptx_reg bits = v, lo = vyre_ptx_reg(c, PTX_R), hi = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg lo2 = vyre_ptx_reg(c, PTX_R), hi2 = vyre_ptx_reg(c, PTX_R);
    if (v.cls != PTX_RD) {
        bits = vyre_ptx_reg(c, PTX_RD);
        vyre_ptx_ins(c, "mov.b64 %s, %s", bits.s, v.s);
    }
    vyre_ptx_ins(c, "mov.b64 {%s, %s}, %s", lo.s, hi.s, bits.s);
    vyre_ptx_ins(c, "shfl.sync.%s.b32 %s, %s, %s, %s, %s", mode, lo2.s, lo.s, b, cl, m);
    vyre_ptx_ins(c, "shfl.sync.%s.b32 %s, %s, %s, %s, %s", mode, hi2.s, hi.s, b, cl, m);
    if (d.cls == PTX_RD) {
        vyre_ptx_ins(c, "mov.b64 %s, {%s, %s}", d.s, lo2.s, hi2.s);
    } else {
        struct ptx_reg r = vyre_ptx_reg(c, PTX_RD);
        vyre_ptx_ins(c, "mov.b64 %s, {%s, %s}", r.s, lo2.s, hi2.s);
        vyre_ptx_ins(c, "mov.b64 %s, %s", d.s, r.s);
    }
    return d;
}

/* The value of lane `src` (a %r register holding a present lane). */
static struct ptx_reg from_lane(struct ptx_ctx *c, enum vyre_type t, struct ptx_reg v,
                                struct ptx_reg src) {
    return shuffle(c, t, v, "idx", src.s, "31");
}

/* Butterfly step at distance d: op(lower lane's value, upper lane's value), w being
 * this lane's value and o its partner's. Integer ops here are commutative to the bit,
 * so only floats pay for the operand order. */
static struct ptx_reg combine_pair(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t,
                                   struct ptx_reg w, struct ptx_reg o, uint32_t dist) {
    struct ptx_reg d = vyre_ptx_treg(c, t);
    if (!vyre_type_is_float(t)) {
        vyre_ptx_binary(c, op, t, d, w, o);
        return d;
    }
    struct ptx_reg upper = vyre_ptx_reg(c, PTX_P), bit = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "and.b32 %s, %s, %u", bit.s, c->sg_lane.s, (unsigned)dist);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", upper.s, bit.s);
    struct ptx_reg lo = vyre_ptx_treg(c, t), hi = vyre_ptx_treg(c, t);
    selp(c, t, lo, o, w, upper);
    selp(c, t, hi, w, o, upper);
    vyre_ptx_binary(c, op, t, d, lo, hi);
    return d;
}

/* ---- the ops ------------------------------------------------------------------- */

/* shuffle, shuffle_xor, shuffle_up, shuffle_down: the source lane, or the own lane when
 * it is absent or out of range (docs/SUBGROUPS.md), then one indexed shuffle. */
static struct ptx_reg user_shuffle(struct ptx_ctx *c, const struct vyre_expr *e) {
    enum vyre_type t = e->type;
    struct ptx_reg v = vyre_ptx_expr(c, e->u.op.a[0]);
    struct ptx_reg arg = vyre_ptx_expr(c, e->u.op.a[1]);
    struct ptx_reg src = vyre_ptx_reg(c, PTX_R), ok = vyre_ptx_reg(c, PTX_P);
    const char *lane = c->sg_lane.s, *n = c->sg_n.s;
    switch (e->u.op.sg) {
    case VYRE_SG_SHUFFLE:
        vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", ok.s, arg.s, n);
        vyre_ptx_ins(c, "mov.u32 %s, %s", src.s, arg.s);
        break;
    case VYRE_SG_SHUFFLE_XOR:
        vyre_ptx_ins(c, "xor.b32 %s, %s, %s", src.s, lane, arg.s);
        vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", ok.s, src.s, n);
        break;
    case VYRE_SG_SHUFFLE_UP:
        vyre_ptx_ins(c, "setp.le.u32 %s, %s, %s", ok.s, arg.s, lane);
        vyre_ptx_ins(c, "sub.u32 %s, %s, %s", src.s, lane, arg.s);
        break;
    default: { /* down: lane + delta < n, asked as delta < n - lane so it cannot wrap */
        struct ptx_reg room = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "sub.u32 %s, %s, %s", room.s, n, lane);
        vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", ok.s, arg.s, room.s);
        vyre_ptx_ins(c, "add.u32 %s, %s, %s", src.s, lane, arg.s);
        break;
    }
    }
    vyre_ptx_ins(c, "selp.b32 %s, %s, %s, %s", src.s, src.s, lane, ok.s);
    return from_lane(c, t, v, src);
}

static const char *redux_name(enum vyre_op op, enum vyre_type t) {
    bool s = t == VYRE_I32;
    switch (op) {
    case VYRE_OP_ADD: return s ? "add.s32" : "add.u32";
    case VYRE_OP_MIN: return s ? "min.s32" : "min.u32";
    case VYRE_OP_MAX: return s ? "max.s32" : "max.u32";
    case VYRE_OP_AND: return "and.b32";
    case VYRE_OP_OR: return "or.b32";
    default: return "xor.b32";
    }
}

static struct ptx_reg reduce(struct ptx_ctx *c, const struct vyre_expr *e) {
    enum vyre_op op = e->u.op.op;
    enum vyre_type t = e->type;
    struct ptx_reg v = vyre_ptx_expr(c, e->u.op.a[0]);
    if (c->sm >= 80 && (t == VYRE_I32 || t == VYRE_U32)) {
        struct ptx_reg d = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "redux.sync.%s %s, %s, %s", redux_name(op, t), d.s, v.s, c->sg_mask.s);
        return d;
    }
    bool full = wg_total(c) % W == 0;
    struct ptx_reg w = copy(c, t, v);
    for (uint32_t d = W / 2; d >= 1; d /= 2) {
        if (full) {
            char dist[16];
            snprintf(dist, sizeof dist, "%u", (unsigned)d);
            struct ptx_reg o = shuffle(c, t, w, "bfly", dist, "31");
            w = combine_pair(c, op, t, w, o, d);
            continue;
        }
        /* partial warp: an absent partner is not read; the lane keeps its value */
        struct ptx_reg partner = vyre_ptx_reg(c, PTX_R), ok = vyre_ptx_reg(c, PTX_P);
        vyre_ptx_ins(c, "xor.b32 %s, %s, %u", partner.s, c->sg_lane.s, (unsigned)d);
        vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", ok.s, partner.s, c->sg_n.s);
        vyre_ptx_ins(c, "selp.b32 %s, %s, %s, %s", partner.s, partner.s, c->sg_lane.s, ok.s);
        struct ptx_reg o = from_lane(c, t, w, partner);
        struct ptx_reg both = combine_pair(c, op, t, w, o, d);
        struct ptx_reg next = vyre_ptx_treg(c, t);
        selp(c, t, next, both, w, ok);
        w = next;
    }
    if (full) return w;
    return shuffle(c, t, w, "idx", "0", "31"); /* lane 0's chain is the reduction */
}

static struct ptx_reg scan(struct ptx_ctx *c, const struct vyre_expr *e) {
    enum vyre_op op = e->u.op.op;
    enum vyre_type t = e->type;
    struct ptx_reg w = copy(c, t, vyre_ptx_expr(c, e->u.op.a[0]));
    for (uint32_t d = 1; d < W; d *= 2) {
        char dist[16];
        snprintf(dist, sizeof dist, "%u", (unsigned)d);
        struct ptx_reg o = shuffle(c, t, w, "up", dist, "0");
        struct ptx_reg ok = vyre_ptx_reg(c, PTX_P), sum = vyre_ptx_treg(c, t);
        struct ptx_reg next = vyre_ptx_treg(c, t);
        vyre_ptx_ins(c, "setp.ge.u32 %s, %s, %u", ok.s, c->sg_lane.s, (unsigned)d);
        vyre_ptx_binary(c, op, t, sum, o, w); /* op(w[lane - d], w[lane]) */
        selp(c, t, next, sum, w, ok);
        w = next;
    }
    return w;
}

static struct ptx_reg vote(struct ptx_ctx *c, const struct vyre_expr *e) {
    struct ptx_reg p = vyre_ptx_expr(c, e->u.op.a[0]);
    enum vyre_subgroup k = e->u.op.sg;
    if (k == VYRE_SG_BALLOT) {
        struct ptx_reg d = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "vote.sync.ballot.b32 %s, %s, %s", d.s, p.s, c->sg_mask.s);
        return d;
    }
    struct ptx_reg d = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "vote.sync.%s.pred %s, %s, %s", k == VYRE_SG_ALL ? "all" : "any", d.s, p.s,
                 c->sg_mask.s);
    return d;
}

/* match.any.sync (sm_70+) over the present lanes: it compares the operand's bits,
 * which is the document's rule for floats too (-0 and +0 differ, equal NaNs match). */
static struct ptx_reg match_any(struct ptx_ctx *c, const struct vyre_expr *e) {
    struct ptx_reg v = vyre_ptx_expr(c, e->u.op.a[0]);
    struct ptx_reg d = vyre_ptx_reg(c, PTX_R);
    unsigned bits = vyre_type_size(e->u.op.a[0]->type) == 8 ? 64u : 32u;
    vyre_ptx_ins(c, "match.any.sync.b%u %s, %s, %s", bits, d.s, v.s, c->sg_mask.s);
    return d;
}

struct ptx_reg vyre_ptx_subgroup(struct ptx_ctx *c, const struct vyre_expr *e) {
    if (!c->sg) {
        vyre_ptx_fail(c, VYRE_ERR_INVALID,
                      "ptx: subgroup op outside the program body. Fix: validate the program "
                      "before emitting PTX");
        return vyre_ptx_treg(c, e->type);
    }
    switch (e->u.op.sg) {
    case VYRE_SG_SIZE: {
        struct ptx_reg d = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "mov.u32 %s, %u", d.s, W);
        return d;
    }
    case VYRE_SG_LANE: return c->sg_lane;
    case VYRE_SG_BALLOT:
    case VYRE_SG_ALL:
    case VYRE_SG_ANY: return vote(c, e);
    case VYRE_SG_REDUCE: return reduce(c, e);
    case VYRE_SG_SCAN: return scan(c, e);
    case VYRE_SG_MATCH_ANY: return match_any(c, e);
    case VYRE_SG_SHUFFLE:
    case VYRE_SG_SHUFFLE_XOR:
    case VYRE_SG_SHUFFLE_UP:
    case VYRE_SG_SHUFFLE_DOWN: return user_shuffle(c, e);
    default: break;
    }
    vyre_ptx_fail(c, VYRE_ERR_INVALID,
                  "ptx: subgroup op %d is unknown. Fix: validate the program before emitting PTX",
                  (int)e->u.op.sg);
    return vyre_ptx_treg(c, e->type);
}
