/* shared_layout.c — where the shared arrays of a program with grid statements live
 * (ARCHITECTURE.md §3, sections). The PTX of such a program has one shared window: each
 * section lays out the arrays it uses from offset 0, and inside a section an array used
 * only in one branch of a workgroup-uniform if shares space with the other branch's
 * (no workgroup runs both). A megakernel is exactly that: one section per layer, one
 * exclusive branch per step. The emitter (ptx_grid.c) places the arrays with this code
 * and the validator checks the window against the workgroup limit with it, so the two
 * agree on what a program needs: the largest section, not the sum of every array. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* lens: also an array whose (len A) alone is read (it must stay declared, but needs no
 * room: its length is a constant). */
static void mark_expr(const vyre_program *p, const struct vyre_expr *e, bool *used,
                      unsigned depth, bool lens) {
    if (!e || depth > VYRE_MAX_EXPR_DEPTH + 8u) return;
    if ((e->kind == VYRE_EX_LOAD || (lens && e->kind == VYRE_EX_LEN)) &&
        e->u.access.decl < p->ndecls &&
        p->decls[e->u.access.decl].kind == VYRE_DECL_SHARED)
        used[e->u.access.decl] = true;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) mark_expr(p, ops[i], used, depth + 1, lens);
}

static void mark_block(const vyre_program *p, const struct vyre_block *b, uint32_t first,
                       uint32_t count, bool *used, unsigned depth, bool lens) {
    if (depth > VYRE_MAX_NESTING + 2u) return;
    for (uint32_t i = first; i < first + count; i++) {
        const struct vyre_stmt *s = b->items[i];
        const struct vyre_expr *es[] = {s->value, s->index, s->expected, s->cond,
                                        s->from,  s->to,    s->step};
        for (size_t k = 0; k < sizeof es / sizeof es[0]; k++) mark_expr(p, es[k], used, 0, lens);
        if ((s->kind == VYRE_ST_STORE || s->kind == VYRE_ST_ATOMIC) && s->decl < p->ndecls &&
            p->decls[s->decl].kind == VYRE_DECL_SHARED)
            used[s->decl] = true;
        mark_block(p, &s->then_, 0, s->then_.count, used, depth + 1, lens);
        mark_block(p, &s->else_, 0, s->else_.count, used, depth + 1, lens);
    }
}

void vyre_shared_used(const vyre_program *p, const struct vyre_block *b, uint32_t first,
                      uint32_t count, bool *used) {
    mark_block(p, b, first, count, used, 0, true);
}

/* An if that no workgroup runs both branches of: its condition reads only wgid, wgsize,
 * ngroups, params, len and literals, so every invocation of a workgroup takes the same
 * branch (the megakernel's step dispatch is a chain of these). */
static bool wg_uniform(const struct vyre_expr *e) {
    if (!e) return true;
    switch (e->kind) {
    case VYRE_EX_NAME: return e->u.name.ref == VYRE_REF_PARAM;
    case VYRE_EX_LOAD:
    case VYRE_EX_SUBGROUP: return false;
    case VYRE_EX_BUILTIN: return e->u.builtin.which != VYRE_GID && e->u.builtin.which != VYRE_LID;
    default: break;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned k = 0; k < n; k++)
        if (!wg_uniform(ops[k])) return false;
    return true;
}

static bool exclusive_if(const struct vyre_stmt *s) {
    return s->kind == VYRE_ST_IF && wg_uniform(s->cond);
}

static uint64_t align8(uint64_t x) { return (x + 7u) & ~(uint64_t)7u; }

/* Places the arrays in `place` that statements [first, first + count) of b use, from
 * offset base; returns the end. */
static uint64_t region(const vyre_program *p, const struct vyre_block *b, uint32_t first,
                       uint32_t count, const bool *place, uint64_t base, unsigned depth,
                       uint64_t *off_out, bool *oom) {
    size_t nd = p->ndecls ? p->ndecls : 1u;
    /* owner: 0 unused, 1 local, 2 + 2*i + branch for branch (0 then, 1 else) of item i */
    uint32_t *owner = calloc(nd, sizeof *owner);
    bool *u = calloc(nd, sizeof *u);
    bool *sub = calloc(nd, sizeof *sub);
    if (!owner || !u || !sub || depth > VYRE_MAX_NESTING + 2u) {
        if (depth <= VYRE_MAX_NESTING + 2u) *oom = true;
        free(owner);
        free(u);
        free(sub);
        return base;
    }
    for (uint32_t i = first; i < first + count; i++) {
        const struct vyre_stmt *s = b->items[i];
        bool ex = exclusive_if(s);
        for (int br = 0; br < (ex ? 2 : 1); br++) {
            memset(u, 0, nd * sizeof *u);
            if (ex) {
                const struct vyre_block *blk = br ? &s->else_ : &s->then_;
                mark_block(p, blk, 0, blk->count, u, depth, false);
            } else {
                mark_block(p, b, i, 1, u, depth, false);
            }
            uint32_t tag = ex ? 2u + 2u * (i - first) + (uint32_t)br : 1u;
            for (uint32_t d = 0; d < p->ndecls; d++) {
                if (!u[d] || !place[d]) continue;
                if (owner[d] == 0) owner[d] = tag;
                else if (owner[d] != tag) owner[d] = 1u;
            }
        }
    }
    uint64_t off = base;
    for (uint32_t d = 0; d < p->ndecls; d++) {
        if (owner[d] != 1u) continue;
        off = align8(off);
        if (off_out) off_out[d] = off;
        off += (uint64_t)p->decls[d].count * vyre_type_size(p->decls[d].type);
    }
    for (uint32_t i = first; i < first + count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (!exclusive_if(s)) continue;
        uint64_t end = off;
        for (uint32_t br = 0; br < 2; br++) {
            uint32_t tag = 2u + 2u * (i - first) + br;
            bool any = false;
            for (uint32_t d = 0; d < p->ndecls; d++) {
                sub[d] = owner[d] == tag;
                any |= sub[d];
            }
            if (!any) continue;
            const struct vyre_block *blk = br ? &s->else_ : &s->then_;
            uint64_t e = region(p, blk, 0, blk->count, sub, off, depth + 1, off_out, oom);
            if (e > end) end = e;
        }
        off = end;
    }
    free(owner);
    free(u);
    free(sub);
    return off;
}

uint64_t vyre_shared_section(const vyre_program *p, const struct vyre_block *b, uint32_t first,
                             uint32_t count, uint64_t *off_out, bool *oom) {
    bool *place = malloc((p->ndecls ? p->ndecls : 1u) * sizeof *place);
    if (!place) {
        *oom = true;
        return 0;
    }
    for (uint32_t d = 0; d < p->ndecls; d++) place[d] = p->decls[d].kind == VYRE_DECL_SHARED;
    uint64_t off = region(p, b, first, count, place, 0, 1, off_out, oom);
    free(place);
    return align8(off);
}

/* The largest section of the grid-level block b (the walk of vyre_ptx_grid_block). */
static uint64_t grid_block(const vyre_program *p, const struct vyre_block *b, unsigned depth,
                           bool *oom) {
    uint64_t most = 0;
    uint32_t i = 0;
    if (depth > VYRE_MAX_NESTING + 2u) return 0;
    while (i < b->count) {
        const struct vyre_stmt *s = b->items[i];
        if (s->grid) {
            uint64_t a = grid_block(p, &s->then_, depth + 1, oom);
            uint64_t e = grid_block(p, &s->else_, depth + 1, oom);
            if (a > most) most = a;
            if (e > most) most = e;
            i++;
            continue;
        }
        uint32_t j = i;
        while (j < b->count && !b->items[j]->grid) j++;
        uint64_t n = vyre_shared_section(p, b, i, j - i, NULL, oom);
        if (n > most) most = n;
        i = j;
    }
    return most;
}

uint64_t vyre_shared_grid_bytes(const vyre_program *p, bool *oom) {
    return grid_block(p, &p->body, 1, oom) + VYRE_GRID_SHARED_WORD;
}
