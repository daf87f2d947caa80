/* interp_subgroup.c — the subgroup (warp) operations of the reference interpreter,
 * which are their specification (docs/SUBGROUPS.md). A subgroup is 32 invocations of
 * consecutive linear local id; the last one of a workgroup whose size is not a
 * multiple of 32 has fewer lanes present (always lanes 0..n-1).
 *
 * Ops that exchange values run in two parts. Each lane, on reaching the op's
 * SUBGROUP instruction, stores its operands into two hidden slots and parks like at
 * a barrier (vyre_interp_subgroup_arrive). When the whole workgroup waits there, the
 * results of every subgroup are computed from all present lanes' operands, in the
 * exact combination order of the document, and written back into the first slot
 * (vyre_interp_subgroup_release). The expression then reads that slot. */
#include "interp.h"

#include "sem.h"

#define W VYRE_SUBGROUP_WIDTH

static uint32_t linear_id(const struct vyre_exec *x, const struct vyre_lane *lane) {
    return lane->lid[0] + lane->lid[1] * x->wgsize[0] + lane->lid[2] * x->wgsize[0] * x->wgsize[1];
}

vyre_bits vyre_interp_subgroup_value(const struct vyre_exec *x, const struct vyre_lane *lane,
                                     const struct vyre_expr *e) {
    switch (e->u.op.sg) {
    case VYRE_SG_SIZE: return W;
    case VYRE_SG_LANE: return linear_id(x, lane) % W;
    default: break;
    }
    const struct vyre_code *code = x->code;
    if (!code->sg_slot || e->id >= code->nids || code->sg_slot[e->id] == UINT32_MAX) return 0;
    return lane->slots[code->sg_slot[e->id]];
}

void vyre_interp_subgroup_arrive(const struct vyre_exec *x, struct vyre_lane *lane,
                                 const struct vyre_ins *in) {
    const struct vyre_expr *e = in->e;
    unsigned n = vyre_subgroup_arity(e->u.op.sg);
    lane->slots[in->slot] = n >= 1 ? vyre_interp_eval(x, lane, e->u.op.a[0]) : 0;
    lane->slots[in->slot + 1] = n >= 2 ? vyre_interp_eval(x, lane, e->u.op.a[1]) : 0;
}

/* The source lane of a shuffle for lane i of a subgroup with n present lanes, or i
 * itself when the source is absent or outside the subgroup (the lane keeps its own
 * value). arg is the u32 LANE, MASK or DELTA. */
static uint32_t shuffle_source(enum vyre_subgroup k, uint32_t i, uint32_t n, uint32_t arg) {
    uint64_t src;
    switch (k) {
    case VYRE_SG_SHUFFLE: src = arg; break;
    case VYRE_SG_SHUFFLE_XOR: src = i ^ arg; break;
    case VYRE_SG_SHUFFLE_UP: src = arg <= i ? (uint64_t)(i - arg) : n; break;
    default: /* down: computed in 64 bits, so a huge delta cannot wrap into range */
        src = (uint64_t)i + arg;
        break;
    }
    return src < n ? (uint32_t)src : i;
}

/* subgroup_reduce: a butterfly over distances 16, 8, 4, 2, 1. At distance d lane i
 * combines with lane i^d, the lower lane's value being the left operand, so both
 * lanes of a pair compute the same bits; a lane whose partner is absent keeps its
 * value (as if combined with the op's identity). Every lane gets lane 0's final
 * value: in a full subgroup all lanes hold it anyway, and in a partial one lane 0's
 * chain is exactly the tree reduction of the present lanes. */
static vyre_bits reduce(enum vyre_op op, enum vyre_type t, vyre_bits *w, uint32_t n) {
    vyre_bits next[W];
    for (uint32_t d = W / 2; d >= 1; d /= 2) {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t p = i ^ d;
            if (p >= n) next[i] = w[i];
            else if (i < p) next[i] = vyre_sem_binary(op, t, w[i], w[p]);
            else next[i] = vyre_sem_binary(op, t, w[p], w[i]);
        }
        for (uint32_t i = 0; i < n; i++) w[i] = next[i];
    }
    return w[0];
}

/* subgroup_scan (inclusive): Hillis-Steele over distances 1, 2, 4, 8, 16; lane i >= d
 * becomes op(w[i-d], w[i]) (in that operand order), the others keep their value. */
static void scan(enum vyre_op op, enum vyre_type t, vyre_bits *w, uint32_t n) {
    vyre_bits next[W];
    for (uint32_t d = 1; d < W; d *= 2) {
        for (uint32_t i = 0; i < n; i++)
            next[i] = i >= d ? vyre_sem_binary(op, t, w[i - d], w[i]) : w[i];
        for (uint32_t i = 0; i < n; i++) w[i] = next[i];
    }
}

/* The results of one subgroup: v[i] and arg[i] are lane i's operands, out[i] its
 * result, for the n present lanes. */
static void subgroup_results(const struct vyre_expr *e, const vyre_bits *v, const vyre_bits *arg,
                             uint32_t n, vyre_bits *out) {
    enum vyre_subgroup k = e->u.op.sg;
    enum vyre_type t = e->u.op.a[0] ? e->u.op.a[0]->type : VYRE_U32;
    vyre_bits acc = 0;
    switch (k) {
    case VYRE_SG_BALLOT:
        for (uint32_t i = 0; i < n; i++) acc |= (vyre_bits)(v[i] != 0) << i;
        break;
    case VYRE_SG_ALL:
        acc = 1;
        for (uint32_t i = 0; i < n; i++) acc &= v[i] != 0;
        break;
    case VYRE_SG_ANY:
        for (uint32_t i = 0; i < n; i++) acc |= v[i] != 0;
        break;
    case VYRE_SG_SHUFFLE:
    case VYRE_SG_SHUFFLE_XOR:
    case VYRE_SG_SHUFFLE_UP:
    case VYRE_SG_SHUFFLE_DOWN:
        for (uint32_t i = 0; i < n; i++)
            out[i] = v[shuffle_source(k, i, n, (uint32_t)(arg[i] & UINT32_MAX))];
        return;
    case VYRE_SG_REDUCE: {
        vyre_bits w[W];
        for (uint32_t i = 0; i < n; i++) w[i] = v[i];
        acc = reduce(e->u.op.op, t, w, n);
        break;
    }
    case VYRE_SG_SCAN:
        for (uint32_t i = 0; i < n; i++) out[i] = v[i];
        scan(e->u.op.op, t, out, n);
        return;
    case VYRE_SG_MATCH_ANY: /* bit j: lane j present with the same bits (floats too) */
        for (uint32_t i = 0; i < n; i++) {
            vyre_bits m = 0;
            for (uint32_t j = 0; j < n; j++) m |= (vyre_bits)(v[j] == v[i]) << j;
            out[i] = m;
        }
        return;
    default: /* size and lane are never hoisted */ break;
    }
    for (uint32_t i = 0; i < n; i++) out[i] = acc;
}

void vyre_interp_subgroup_release(struct vyre_lane *lanes, uint32_t nlanes,
                                  const struct vyre_ins *in) {
    vyre_bits v[W], arg[W], out[W];
    for (uint32_t base = 0; base < nlanes; base += W) {
        uint32_t n = nlanes - base < W ? nlanes - base : W;
        for (uint32_t i = 0; i < n; i++) {
            v[i] = lanes[base + i].slots[in->slot];
            arg[i] = lanes[base + i].slots[in->slot + 1];
        }
        subgroup_results(in->e, v, arg, n, out);
        for (uint32_t i = 0; i < n; i++) lanes[base + i].slots[in->slot] = out[i];
    }
}
