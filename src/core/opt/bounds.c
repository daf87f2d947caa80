/* bounds.c — bounds-check elimination. Walks a validated program with a stack of
 * facts "value v is below len(buf)" and marks every load/store/atomic whose index is
 * such a v as in_bounds, so the PTX emitter drops its run-time check.
 *
 * Facts come from:
 *   - an enclosing `if` whose condition is (lt v (len buf)), (gt (len buf) v), or a
 *     land-conjunction containing one (valid inside the then-block only);
 *   - a for loop (for v FROM (len buf) STEP ...): v is u32 there (len is u32), so
 *     FROM >= 0 trivially and every iteration has v < len(buf);
 *   - arrays whose size is static (shared arrays, buffers declared with a COUNT): an
 *     index whose value range is below that size needs no fact. The range comes from a
 *     small interval analysis over u32 expressions: literals, (lid a) < workgroup[a],
 *     (subgroup_lane) < 32,
 *     add/mul/and-with-a-literal/rem/shr, immutable lets (their value's range) and for
 *     loop variables (below the loop's end). So a tiled kernel's tile[ly * 16 + lx]
 *     with a 16x16 workgroup is proven, whatever the grid.
 * v must be a variable that is never `set` anywhere (lets, loop variables and atomic
 * results that no `set` targets) or a scalar param, so its value at the access is the
 * value the guard compared; buffer counts are fixed for a launch. Comparisons are on
 * u32 (len is u32 and comparisons need equal types), i.e. unsigned, which is exactly
 * how the access reads the index. */
#include "bounds.h"

#include <stdlib.h>

struct fact {
    enum vyre_ref_kind ref; /* VAR or PARAM */
    uint32_t index;         /* slot or param decl */
    uint32_t decl;          /* the buffer whose count bounds it */
};

struct bctx {
    vyre_program *p;
    bool *mutated;                     /* per slot: target of some `set`; NULL: prove nothing */
    const struct vyre_expr **bound_by; /* per slot: let value, or a for loop's end */
    bool *is_loop;                     /* per slot: bound_by is a for loop's end */
    struct fact *facts;
    uint32_t nfacts, cap;
    bool oom;
};

static void find_sets(struct bctx *b, const struct vyre_block *blk) {
    for (uint32_t i = 0; i < blk->count; i++) {
        const struct vyre_stmt *s = blk->items[i];
        if (s->kind == VYRE_ST_SET && s->slot < b->p->nslots) b->mutated[s->slot] = true;
        if ((s->kind == VYRE_ST_LET || s->kind == VYRE_ST_FOR) && s->slot < b->p->nslots &&
            b->bound_by) {
            b->bound_by[s->slot] = s->kind == VYRE_ST_LET ? s->value : s->to;
            b->is_loop[s->slot] = s->kind == VYRE_ST_FOR;
        }
        if (vyre_stmt_has_blocks(s)) find_sets(b, &s->then_);
        if (s->kind == VYRE_ST_IF) find_sets(b, &s->else_);
    }
}

/* The immutable variable or param an expression reads, if it is one. */
static bool stable_name(const struct bctx *b, const struct vyre_expr *e, enum vyre_ref_kind *ref,
                        uint32_t *index) {
    if (!e || e->kind != VYRE_EX_NAME) return false;
    if (e->u.name.ref == VYRE_REF_PARAM) {
        *ref = VYRE_REF_PARAM;
        *index = e->u.name.index;
        return true;
    }
    if (!b->mutated || e->u.name.ref != VYRE_REF_VAR || e->u.name.index >= b->p->nslots)
        return false;
    if (b->mutated[e->u.name.index]) return false;
    *ref = VYRE_REF_VAR;
    *index = e->u.name.index;
    return true;
}

static bool is_buffer_len(const struct bctx *b, const struct vyre_expr *e, uint32_t *decl) {
    if (!e || e->kind != VYRE_EX_LEN || e->u.access.decl >= b->p->ndecls) return false;
    enum vyre_decl_kind k = b->p->decls[e->u.access.decl].kind;
    if (k != VYRE_DECL_BUFFER && k != VYRE_DECL_SHARED) return false;
    *decl = e->u.access.decl;
    return true;
}

static void push(struct bctx *b, enum vyre_ref_kind ref, uint32_t index, uint32_t decl) {
    if (b->nfacts == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 16;
        struct fact *nf = realloc(b->facts, cap * sizeof *nf);
        if (!nf) { /* without the fact the access simply keeps its check */
            b->oom = true;
            return;
        }
        b->facts = nf;
        b->cap = cap;
    }
    b->facts[b->nfacts++] = (struct fact){ref, index, decl};
}

/* Pushes every fact a (true) condition proves. */
static void cond_facts(struct bctx *b, const struct vyre_expr *c) {
    if (!c || c->kind != VYRE_EX_BINARY) return;
    enum vyre_ref_kind ref;
    uint32_t index, decl;
    switch (c->u.op.op) {
    case VYRE_OP_LAND:
        cond_facts(b, c->u.op.a[0]);
        cond_facts(b, c->u.op.a[1]);
        return;
    case VYRE_OP_LT:
        if (stable_name(b, c->u.op.a[0], &ref, &index) && is_buffer_len(b, c->u.op.a[1], &decl))
            push(b, ref, index, decl);
        return;
    case VYRE_OP_GT:
        if (stable_name(b, c->u.op.a[1], &ref, &index) && is_buffer_len(b, c->u.op.a[0], &decl))
            push(b, ref, index, decl);
        return;
    default: return;
    }
}

#define UNBOUNDED UINT64_MAX
#define U32_RANGE (UINT64_C(1) << 32)

/* An exclusive upper bound of a u32 expression's value (UNBOUNDED when unknown), with
 * no wraparound possible below it: every result is checked against 2^32. Depth is
 * limited because a let's value may read other lets. */
static uint64_t upper(const struct bctx *b, const struct vyre_expr *e, unsigned depth) {
    if (!e || e->type != VYRE_U32 || depth > 32) return UNBOUNDED;
    uint64_t r = UNBOUNDED;
    switch (e->kind) {
    case VYRE_EX_LIT: r = (uint32_t)e->u.lit.bits + UINT64_C(1); break;
    case VYRE_EX_BUILTIN:
        if (e->u.builtin.which == VYRE_LID) r = b->p->workgroup[e->u.builtin.axis];
        if (e->u.builtin.which == VYRE_WGSIZE) r = b->p->workgroup[e->u.builtin.axis] + 1u;
        break;
    case VYRE_EX_NAME: {
        uint32_t s = e->u.name.index;
        if (e->u.name.ref != VYRE_REF_VAR || s >= b->p->nslots || b->mutated[s] || !b->bound_by[s])
            break;
        uint64_t u = upper(b, b->bound_by[s], depth + 1);
        /* a loop variable stays below the loop's end: end - 1 at most */
        r = b->is_loop[s] ? (u == UNBOUNDED ? u : (u > 1 ? u - 1 : 1)) : u;
        break;
    }
    case VYRE_EX_SUBGROUP: /* (subgroup_lane) < 32; (subgroup_size) = 32 */
        if (e->u.op.sg == VYRE_SG_LANE) r = 32;
        if (e->u.op.sg == VYRE_SG_SIZE) r = 33;
        break;
    case VYRE_EX_BINARY: {
        const struct vyre_expr *x = e->u.op.a[0], *y = e->u.op.a[1];
        uint64_t ux = upper(b, x, depth + 1), uy = upper(b, y, depth + 1);
        switch (e->u.op.op) {
        case VYRE_OP_ADD:
            if (ux != UNBOUNDED && uy != UNBOUNDED) r = ux + uy - 1;
            break;
        case VYRE_OP_MUL:
            if (ux != UNBOUNDED && uy != UNBOUNDED) r = (ux - 1) * (uy - 1) + 1;
            break;
        case VYRE_OP_AND: r = ux < uy ? ux : uy; break; /* x & y <= min(x, y) */
        case VYRE_OP_REM: /* x % y < y, and x % 0 = x: both bounds hold */
            r = ux > uy ? ux : uy;
            if (uy != UNBOUNDED && uy > 1 && y->kind == VYRE_EX_LIT && y->u.lit.bits != 0)
                r = (uint32_t)y->u.lit.bits;
            break;
        case VYRE_OP_SHR:
            if (ux != UNBOUNDED && y->kind == VYRE_EX_LIT)
                r = ((ux - 1) >> (y->u.lit.bits & 31u)) + 1;
            break;
        case VYRE_OP_MIN: r = ux < uy ? ux : uy; break;
        default: break;
        }
        break;
    }
    default: break;
    }
    return r <= U32_RANGE ? r : UNBOUNDED;
}

/* The element count of an array whose size is known before launch, else 0. */
static uint32_t static_count(const struct vyre_decl *d) {
    return d->kind == VYRE_DECL_SHARED || d->kind == VYRE_DECL_BUFFER ? d->count : 0;
}

static bool proven(const struct bctx *b, uint32_t decl, const struct vyre_expr *idx) {
    if (!idx || !b->mutated) return false;
    const struct vyre_decl *d = &b->p->decls[decl];
    uint32_t count = static_count(d);
    if (idx->kind == VYRE_EX_LIT && count && (idx->type == VYRE_U32 || idx->type == VYRE_I32))
        return (uint32_t)idx->u.lit.bits < count;
    if (count && upper(b, idx, 0) <= count) return true;
    enum vyre_ref_kind ref;
    uint32_t index;
    if (!stable_name(b, idx, &ref, &index)) return false;
    for (uint32_t i = 0; i < b->nfacts; i++)
        if (b->facts[i].ref == ref && b->facts[i].index == index && b->facts[i].decl == decl)
            return true;
    return false;
}

static void visit_expr(struct bctx *b, struct vyre_expr *e) {
    if (!e) return;
    switch (e->kind) {
    case VYRE_EX_LOAD:
        visit_expr(b, e->u.access.index);
        e->u.access.in_bounds =
            e->u.access.decl < b->p->ndecls && proven(b, e->u.access.decl, e->u.access.index);
        return;
    case VYRE_EX_LEN: e->u.access.in_bounds = false; return;
    default: {
        struct vyre_expr *ops[3];
        unsigned n = vyre_expr_operands(e, ops);
        for (unsigned i = 0; i < n; i++) visit_expr(b, ops[i]);
        return;
    }
    }
}

static void visit_block(struct bctx *b, struct vyre_block *blk) {
    for (uint32_t i = 0; i < blk->count; i++) {
        struct vyre_stmt *s = blk->items[i];
        uint32_t mark = b->nfacts;
        switch (s->kind) {
        case VYRE_ST_LET:
        case VYRE_ST_SET: visit_expr(b, s->value); break;
        case VYRE_ST_STORE:
        case VYRE_ST_ATOMIC:
            visit_expr(b, s->index);
            visit_expr(b, s->value);
            visit_expr(b, s->expected);
            s->in_bounds = s->decl < b->p->ndecls && proven(b, s->decl, s->index);
            break;
        case VYRE_ST_IF:
            visit_expr(b, s->cond);
            cond_facts(b, s->cond);
            visit_block(b, &s->then_);
            b->nfacts = mark;
            visit_block(b, &s->else_);
            break;
        case VYRE_ST_FOR: {
            visit_expr(b, s->from);
            visit_expr(b, s->to);
            visit_expr(b, s->step);
            uint32_t decl;
            if (b->mutated && s->slot < b->p->nslots && b->p->slot_types[s->slot] == VYRE_U32 &&
                !b->mutated[s->slot] && is_buffer_len(b, s->to, &decl))
                push(b, VYRE_REF_VAR, s->slot, decl);
            visit_block(b, &s->then_);
            b->nfacts = mark;
            break;
        }
        case VYRE_ST_CONVERGE:
            visit_expr(b, s->value);
            visit_block(b, &s->then_);
            break;
        default: break;
        }
        b->nfacts = mark;
    }
}

void vyre_opt_bounds(vyre_program *p) {
    if (!p || !p->validated) return;
    struct bctx b = {0};
    b.p = p;
    /* Out of memory: mutated stays NULL, nothing is proven, but the walk still clears
     * stale marks (proving nothing is always safe; a stale mark is not). */
    size_t n = p->nslots ? p->nslots : 1;
    b.mutated = calloc(n, sizeof *b.mutated);
    b.bound_by = calloc(n, sizeof *b.bound_by);
    b.is_loop = calloc(n, sizeof *b.is_loop);
    if (!b.bound_by || !b.is_loop) {
        free(b.mutated);
        b.mutated = NULL;
    }
    if (b.mutated) find_sets(&b, &p->body);
    visit_block(&b, &p->body);
    free(b.facts);
    free(b.mutated);
    free(b.bound_by);
    free(b.is_loop);
}
