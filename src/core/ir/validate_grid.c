/* validate_grid.c — the rules of grid barriers and convergence loops (ARCHITECTURE.md
 * §3, "Grid barriers, sections and convergence loops"). A grid statement is a
 * grid_barrier, a converge, or an if/for holding one; the runtime may run each
 * section between them as a kernel of its own and the grid-level control flow on the
 * host, so that control flow must be the same for every workgroup and computable
 * without the device: grid-uniform conditions, bounds and round limits, and no break
 * out of a grid loop. Variables of a section that a grid statement closes are
 * reported where they are used (validate_stmt.c / validate_expr.c call
 * vyre_vv_grid_scope). */
#include <stdlib.h>

#include "validate_int.h"

/* ---- marking --------------------------------------------------------------------- */

static bool mark_block(struct vyre_block *b, unsigned depth);

static bool mark_stmt(struct vyre_stmt *s, unsigned depth) {
    if (!s || depth > VYRE_MAX_NESTING) return false;
    bool g = s->kind == VYRE_ST_GRID_BARRIER || s->kind == VYRE_ST_CONVERGE;
    if (vyre_stmt_has_blocks(s)) {
        g = mark_block(&s->then_, depth + 1) || g;
        if (s->kind == VYRE_ST_IF) g = mark_block(&s->else_, depth + 1) || g;
    }
    s->grid = g;
    return g;
}

static bool mark_block(struct vyre_block *b, unsigned depth) {
    if (b->count && !b->items) return false;
    bool g = false;
    for (uint32_t i = 0; i < b->count; i++) g = mark_stmt(b->items[i], depth) || g;
    return g;
}

void vyre_vv_grid_mark(struct vyre_vv *v) { v->p->has_grid = mark_block(&v->p->body, 1); }

void vyre_vv_grid_scope(struct vyre_vv *v, const char *name) {
    vyre_vv_report(v, "grid-scope",
                   "store the value in a buffer before the grid statement and load it after, "
                   "or compute it again after it",
                   "'%.64s' was declared in an earlier section: invocation-local variables do "
                   "not survive a grid_barrier, converge or grid loop boundary",
                   name);
}

/* ---- checking ---------------------------------------------------------------------- */

struct gv {
    struct vyre_vv *v;
    bool *grid_var; /* per slot: loop variable of an enclosing grid loop */
};

/* The first part of e that is not grid-uniform, or NULL. *why names it. */
static const struct vyre_expr *nonuniform(const struct gv *g, const struct vyre_expr *e,
                                          const char **why, unsigned depth) {
    if (!e || depth > VYRE_MAX_EXPR_DEPTH) return NULL;
    switch (e->kind) {
    case VYRE_EX_LIT: return NULL;
    case VYRE_EX_LEN:
        /* a worklist's length changes at every round its converge advances it */
        if (e->u.access.decl < g->v->p->ndecls &&
            g->v->p->decls[e->u.access.decl].kind == VYRE_DECL_WORKLIST) {
            *why = "the length of a worklist (it changes from round to round)";
            return e;
        }
        return NULL;
    case VYRE_EX_NAME:
        if (e->u.name.ref == VYRE_REF_PARAM) return NULL;
        if (e->u.name.ref == VYRE_REF_VAR && e->u.name.index < g->v->nslots &&
            g->grid_var[e->u.name.index])
            return NULL;
        *why = "a variable that is not a grid loop's";
        return e;
    case VYRE_EX_BUILTIN:
        if (e->u.builtin.which == VYRE_WGSIZE || e->u.builtin.which == VYRE_NGROUPS) return NULL;
        *why = "an invocation or workgroup id";
        return e;
    case VYRE_EX_LOAD: *why = "a load"; return e;
    case VYRE_EX_SUBGROUP: *why = "a subgroup op"; return e;
    case VYRE_EX_UNARY:
    case VYRE_EX_BINARY:
        if (vyre_op_is_approx(e->u.op.op)) {
            *why = "an approximate op (the host and the GPU may round it differently)";
            return e;
        }
        break;
    default: break;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) {
        const struct vyre_expr *q = nonuniform(g, ops[i], why, depth + 1);
        if (q) return q;
    }
    return NULL;
}

static void want_uniform(struct gv *g, const char *seg, const struct vyre_expr *e,
                         const char *what) {
    const char *why = "";
    const struct vyre_expr *q = nonuniform(g, e, &why, 1);
    if (!q) return;
    char qe[VYRE_VV_QUOTE], qq[VYRE_VV_QUOTE];
    size_t old = vyre_vv_push(g->v, "%s", seg);
    vyre_vv_report(g->v, "grid-nonuniform",
                   "make it depend only on params, len, wgsize, ngroups, literals and grid loop "
                   "variables; for a data-dependent exit use (converge FLAG MAX ...)",
                   "%s %s holds a grid barrier, so every workgroup must see the same value, but "
                   "%s is %s",
                   what, vyre_vv_qe(e, qe), vyre_vv_qe(q, qq), why);
    vyre_vv_pop(g->v, old);
}

static void breaks_in(struct gv *g, const struct vyre_stmt *s, bool inner, unsigned depth);

static void breaks_block(struct gv *g, const struct vyre_block *b, const char *seg, bool inner,
                         unsigned depth) {
    if (depth > VYRE_MAX_NESTING || (b->count && !b->items)) return;
    for (uint32_t i = 0; i < b->count && !g->v->full; i++) {
        size_t old = vyre_vv_push(g->v, "%s[%u]", seg, i);
        breaks_in(g, b->items[i], inner, depth);
        vyre_vv_pop(g->v, old);
    }
}

/* A break of a section statement s whose innermost loop is a grid loop (inner false). */
static void breaks_in(struct gv *g, const struct vyre_stmt *s, bool inner, unsigned depth) {
    if (!s) return;
    if (s->kind == VYRE_ST_BREAK && !inner)
        vyre_vv_report(g->v, "grid-break",
                       "give the loop a grid-uniform trip count and guard the rest of the body "
                       "with if, or leave data-dependent loops through converge",
                       "break would leave a loop that holds a grid barrier, which every "
                       "workgroup must run the same number of times");
    if (s->kind == VYRE_ST_IF) {
        breaks_block(g, &s->then_, "then", inner, depth + 1);
        breaks_block(g, &s->else_, "else", inner, depth + 1);
    } else if (s->kind == VYRE_ST_FOR) {
        breaks_block(g, &s->then_, "body", true, depth + 1);
    }
}

static void grid_block(struct gv *g, const struct vyre_block *b, const char *seg, bool in_loop,
                       unsigned depth);

static void grid_stmt(struct gv *g, const struct vyre_stmt *s, bool in_loop, unsigned depth) {
    switch (s->kind) {
    case VYRE_ST_IF:
        want_uniform(g, "cond", s->cond, "the condition of an if that");
        grid_block(g, &s->then_, "then", in_loop, depth + 1);
        grid_block(g, &s->else_, "else", in_loop, depth + 1);
        break;
    case VYRE_ST_FOR: {
        want_uniform(g, "from", s->from, "the start of a loop that");
        want_uniform(g, "to", s->to, "the end of a loop that");
        want_uniform(g, "step", s->step, "the step of a loop that");
        bool var = s->slot < g->v->nslots;
        if (var) g->grid_var[s->slot] = true;
        grid_block(g, &s->then_, "body", true, depth + 1);
        if (var) g->grid_var[s->slot] = false;
        break;
    }
    case VYRE_ST_CONVERGE:
        want_uniform(g, "value", s->value, "the round limit of a converge that");
        grid_block(g, &s->then_, "body", in_loop, depth + 1);
        break;
    default: break;
    }
}

static void grid_block(struct gv *g, const struct vyre_block *b, const char *seg, bool in_loop,
                       unsigned depth) {
    if (depth > VYRE_MAX_NESTING || (b->count && !b->items)) return;
    for (uint32_t i = 0; i < b->count && !g->v->full; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (!s) continue;
        size_t old = vyre_vv_push(g->v, "%s[%u]", seg, i);
        if (s->grid) grid_stmt(g, s, in_loop, depth);
        else if (in_loop) breaks_in(g, s, false, depth);
        vyre_vv_pop(g->v, old);
    }
}

void vyre_vv_grid_check(struct vyre_vv *v) {
    struct gv g = {v, calloc(v->nslots ? v->nslots : 1u, sizeof(bool))};
    if (!g.grid_var) {
        v->nomem = v->full = true;
        return;
    }
    grid_block(&g, &v->p->body, "body", false, 1);
    free(g.grid_var);
}
