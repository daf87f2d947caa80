/* validate_flow.c — the uniformity analysis behind "barrier only in uniform control
 * flow", which also places subgroup ops (docs/SUBGROUPS.md: an op that exchanges
 * values between lanes needs what a barrier needs). A value is divergent when it may
 * differ between invocations of one workgroup: gid, lid, any load, an atomic's old
 * value, a subgroup result other than subgroup_size, and anything computed from
 * those through variables. Control is divergent under an if or for whose condition
 * or bounds are divergent, after a return taken under divergent control, and inside
 * a loop that some invocations leave early through a break under divergent control.
 * A variable assigned under divergent control becomes divergent too.
 *
 * The analysis walks in program order, so a variable is divergent only from the
 * point where it becomes so; a loop body is walked again until nothing changes,
 * because a later iteration sees what the earlier one assigned. Every flag only
 * ever turns on, so this terminates; a visit budget turns a pathological program
 * into the conservative answer ("everything divergent") instead of a slow one. */
#include <stdlib.h>
#include <string.h>

#include "validate_int.h"

#define FLOW_BUDGET (1u << 25) /* node visits before the analysis gives up */

/* Why control is divergent; FL_UNIFORM (0) when it is not. */
enum fl_reason { FL_UNIFORM, FL_COND, FL_RETURN, FL_BREAK };

struct fl_loop {
    bool broke_div; /* a break under divergent control leaves this loop */
};

struct fl_mark {
    const struct vyre_stmt *s;
    enum fl_reason why;
};

struct fl {
    struct vyre_vv *v;
    uint8_t *vdiv; /* per variable slot */
    uint32_t nslots;
    bool ret_div; /* a return under divergent control happened earlier */
    bool all_div; /* gave up: every value is divergent */
    uint64_t changes, visits;
    struct fl_mark *marks;
    size_t nmarks, cap;
};

static bool fl_expr(struct fl *f, const struct vyre_expr *e, unsigned depth) {
    if (!e || depth > VYRE_MAX_EXPR_DEPTH) return false;
    f->visits++;
    if (f->all_div) return true;
    switch (e->kind) {
    case VYRE_EX_NAME:
        return e->u.name.ref == VYRE_REF_VAR && e->u.name.index < f->nslots &&
               f->vdiv[e->u.name.index];
    case VYRE_EX_BUILTIN: return e->u.builtin.which == VYRE_GID || e->u.builtin.which == VYRE_LID;
    case VYRE_EX_LOAD: return true;
    case VYRE_EX_UNARY:
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST: return fl_expr(f, e->u.op.a[0], depth + 1);
    case VYRE_EX_BINARY:
        return fl_expr(f, e->u.op.a[0], depth + 1) || fl_expr(f, e->u.op.a[1], depth + 1);
    case VYRE_EX_SELECT:
    case VYRE_EX_FMA:
        return fl_expr(f, e->u.op.a[0], depth + 1) || fl_expr(f, e->u.op.a[1], depth + 1) ||
               fl_expr(f, e->u.op.a[2], depth + 1);
    case VYRE_EX_SUBGROUP:
        /* subgroup_size is 32 everywhere. Every other result differs between lanes or
         * between the subgroups of one workgroup (even all/any/ballot/reduce, which
         * agree only within a subgroup), so it counts as divergent. */
        return e->u.op.sg != VYRE_SG_SIZE;
    default: /* literals, len */ return false;
    }
}

/* The first subgroup op in e that exchanges values between lanes (everything but
 * subgroup_size and subgroup_lane), or NULL. Depth is bounded by the validator. */
static const struct vyre_expr *fl_sync_op(const struct vyre_expr *e, unsigned depth) {
    if (!e || depth > VYRE_MAX_EXPR_DEPTH) return NULL;
    if (e->kind == VYRE_EX_SUBGROUP && vyre_subgroup_communicates(e->u.op.sg)) return e;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) {
        const struct vyre_expr *q = fl_sync_op(ops[i], depth + 1);
        if (q) return q;
    }
    return NULL;
}

/* The statement's own operands (not its blocks), in the order the path names them. */
struct fl_field {
    const char *name;
    const struct vyre_expr *e;
};

static const struct vyre_expr *fl_stmt_sync_op(const struct vyre_stmt *s, const char **field) {
    const struct fl_field fields[] = {
        {"cond", s->cond},   {"from", s->from},         {"to", s->to},      {"step", s->step},
        {"index", s->index}, {"expected", s->expected}, {"value", s->value}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const struct vyre_expr *q = fl_sync_op(fields[i].e, 1);
        if (q) {
            if (field) *field = fields[i].name;
            return q;
        }
    }
    return NULL;
}

static void taint(struct fl *f, uint32_t slot) {
    if (slot < f->nslots && !f->vdiv[slot]) {
        f->vdiv[slot] = 1;
        f->changes++;
    }
}

/* Records a barrier, or a statement holding a subgroup op, under divergent control. */
static void mark_barrier(struct fl *f, const struct vyre_stmt *s, enum fl_reason why) {
    if (f->nmarks == f->cap) {
        size_t cap = f->cap ? f->cap * 2u : 16u;
        struct fl_mark *m = realloc(f->marks, cap * sizeof *m);
        if (!m) {
            f->v->nomem = f->v->full = true;
            return;
        }
        f->marks = m;
        f->cap = cap;
    }
    f->marks[f->nmarks++] = (struct fl_mark){s, why};
}

static void fl_block(struct fl *f, const struct vyre_block *b, unsigned depth, enum fl_reason ctx,
                     struct fl_loop *loop);

static void fl_for(struct fl *f, const struct vyre_stmt *s, unsigned depth, enum fl_reason cd) {
    bool bounds = fl_expr(f, s->from, 1);
    bounds = fl_expr(f, s->to, 1) || bounds;
    bounds = fl_expr(f, s->step, 1) || bounds;
    if (bounds && !cd) cd = FL_COND;
    if (cd) taint(f, s->slot);
    struct fl_loop me = {false};
    if (cd) {
        /* Everything inside is divergent already; one walk marks it all. */
        fl_block(f, &s->then_, depth + 1, cd, &me);
        return;
    }
    /* `me` starts afresh on every visit of this loop, so its flag is a change for
     * this fixpoint only; variables and ret_div are global and only grow. */
    for (;;) {
        uint64_t before = f->changes;
        bool broke = me.broke_div;
        fl_block(f, &s->then_, depth + 1, FL_UNIFORM, &me);
        if (f->changes == before && me.broke_div == broke) break;
    }
}

static void fl_stmt(struct fl *f, const struct vyre_stmt *s, unsigned depth, enum fl_reason ctx,
                    struct fl_loop *loop) {
    if (!s || depth > VYRE_MAX_NESTING || f->v->full) return;
    if (++f->visits > FLOW_BUDGET) f->all_div = true;
    enum fl_reason cd = ctx                       ? ctx
                        : f->ret_div              ? FL_RETURN
                        : loop && loop->broke_div ? FL_BREAK
                                                  : FL_UNIFORM;
    /* A subgroup op needs what a barrier needs: every invocation evaluates it. Its
     * operands are evaluated where the statement runs (an if condition or loop bounds
     * before the block), so the statement's own control decides. */
    if (cd && s->kind != VYRE_ST_BARRIER && fl_stmt_sync_op(s, NULL)) mark_barrier(f, s, cd);
    switch (s->kind) {
    case VYRE_ST_LET:
    case VYRE_ST_SET:
        if (fl_expr(f, s->value, 1) || cd) taint(f, s->slot);
        break;
    case VYRE_ST_ATOMIC:
        if (s->name) taint(f, s->slot);
        break;
    case VYRE_ST_IF: {
        enum fl_reason c = fl_expr(f, s->cond, 1) && !cd ? FL_COND : cd;
        fl_block(f, &s->then_, depth + 1, c, loop);
        fl_block(f, &s->else_, depth + 1, c, loop);
        break;
    }
    case VYRE_ST_FOR: fl_for(f, s, depth, cd); break;
    case VYRE_ST_BREAK:
        if (cd && loop) loop->broke_div = true;
        break;
    case VYRE_ST_RETURN:
        if (cd && !f->ret_div) {
            f->ret_div = true;
            f->changes++;
        }
        break;
    case VYRE_ST_BARRIER:
        if (cd) mark_barrier(f, s, cd);
        break;
    default: break;
    }
}

/* A grid statement (validate_grid.c checks that it stands in uniform control with
 * grid-uniform bounds). Each block under it starts a section, which behaves like a
 * fresh dispatch: a divergent return of one section does not reach into the next, and
 * its variables are the section's own, so one walk of a grid loop's body suffices. */
static void fl_grid(struct fl *f, const struct vyre_stmt *s, unsigned depth) {
    if (depth > VYRE_MAX_NESTING) return;
    f->ret_div = false;
    if (s->kind == VYRE_ST_GRID_BARRIER) return;
    fl_block(f, &s->then_, depth + 1, FL_UNIFORM, NULL);
    f->ret_div = false;
    if (s->kind == VYRE_ST_IF) fl_block(f, &s->else_, depth + 1, FL_UNIFORM, NULL);
    f->ret_div = false;
}

static void fl_block(struct fl *f, const struct vyre_block *b, unsigned depth, enum fl_reason ctx,
                     struct fl_loop *loop) {
    if (b->count && !b->items) return;
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s && s->grid) fl_grid(f, s, depth);
        else fl_stmt(f, s, depth, ctx, loop);
    }
}

/* ---- reporting ------------------------------------------------------------------- */

static int cmp_mark(const void *a, const void *b) {
    const struct fl_mark *x = a, *y = b;
    uintptr_t px = (uintptr_t)x->s, py = (uintptr_t)y->s;
    if (px != py) return px < py ? -1 : 1;
    return (int)x->why - (int)y->why;
}

static const struct fl_mark *find_mark(const struct fl *f, const struct vyre_stmt *s) {
    size_t lo = 0, hi = f->nmarks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2u;
        if ((uintptr_t)f->marks[mid].s < (uintptr_t)s) lo = mid + 1u;
        else hi = mid;
    }
    return lo < f->nmarks && f->marks[lo].s == s ? &f->marks[lo] : NULL;
}

static void rep_block(struct fl *f, const struct vyre_block *b, const char *seg, unsigned depth);

/* "subgroup-divergent" at the statement's operand that holds the op. */
static void rep_sync_op(struct fl *f, const struct vyre_stmt *s, enum fl_reason why,
                        const char *gave_up) {
    struct vyre_vv *v = f->v;
    const char *field = "value";
    const struct vyre_expr *e = fl_stmt_sync_op(s, &field);
    if (!e) return;
    char q[VYRE_VV_QUOTE];
    vyre_vv_qe(e, q);
    size_t old = vyre_vv_push(v, "%s", field);
    if (why == FL_COND)
        vyre_vv_report(v, "subgroup-divergent",
                       "move it out of divergent control flow: compute it before the if/for "
                       "and use the result inside, or make the condition depend only on params, "
                       "wgid, wgsize, ngroups, len and literals",
                       "subgroup op %s under control flow that depends on gid, lid, a load, an "
                       "atomic result or a subgroup result, so the lanes of a subgroup may not "
                       "all reach it%s",
                       q, gave_up);
    else if (why == FL_RETURN)
        vyre_vv_report(v, "subgroup-divergent",
                       "move it out of divergent control flow: guard the work with if instead "
                       "of returning early, and keep the subgroup op outside that if",
                       "subgroup op %s can run after a return that only some invocations "
                       "take%s",
                       q, gave_up);
    else
        vyre_vv_report(v, "subgroup-divergent",
                       "move it out of divergent control flow: make the break's condition "
                       "uniform, or guard the loop body with if instead of breaking",
                       "subgroup op %s in a loop that some invocations leave early through a "
                       "break%s",
                       q, gave_up);
    vyre_vv_pop(v, old);
}

static void rep_stmt(struct fl *f, const struct vyre_stmt *s, unsigned depth) {
    if (!s || depth > VYRE_MAX_NESTING) return;
    struct vyre_vv *v = f->v;
    const char *gave_up = f->all_div ? " (the program is too large for the uniformity analysis, "
                                       "which then assumes every value may diverge)"
                                     : "";
    if (s->kind != VYRE_ST_BARRIER) {
        const struct fl_mark *m = find_mark(f, s);
        if (m) rep_sync_op(f, s, m->why, gave_up);
    }
    switch (s->kind) {
    case VYRE_ST_IF:
        rep_block(f, &s->then_, "then", depth + 1);
        rep_block(f, &s->else_, "else", depth + 1);
        break;
    case VYRE_ST_FOR:
    case VYRE_ST_CONVERGE: rep_block(f, &s->then_, "body", depth + 1); break;
    case VYRE_ST_BARRIER: {
        const struct fl_mark *m = find_mark(f, s);
        if (!m) break;
        if (m->why == FL_COND)
            vyre_vv_report(v, "barrier-divergent",
                           "move the barrier out of the if/for, or make its condition depend only "
                           "on params, wgid, wgsize, ngroups, len and literals",
                           "barrier under control flow that depends on gid, lid, a load or an "
                           "atomic result, so invocations of one workgroup may not all reach "
                           "it%s",
                           gave_up);
        else if (m->why == FL_RETURN)
            vyre_vv_report(v, "barrier-divergent",
                           "guard the work with if instead of returning early, and keep the "
                           "barrier outside that if",
                           "barrier can run after a return that only some invocations take%s",
                           gave_up);
        else
            vyre_vv_report(v, "barrier-divergent",
                           "make the break's condition uniform, or guard the loop body with if "
                           "instead of breaking",
                           "barrier in a loop that some invocations leave early through a "
                           "break%s",
                           gave_up);
        break;
    }
    default: break;
    }
}

static void rep_block(struct fl *f, const struct vyre_block *b, const char *seg, unsigned depth) {
    if (b->count && !b->items) return;
    for (uint32_t i = 0; i < b->count && !f->v->full; i++) {
        size_t old = vyre_vv_push(f->v, "%s[%u]", seg, i);
        rep_stmt(f, b->items[i], depth);
        vyre_vv_pop(f->v, old);
    }
}

void vyre_vv_flow(struct vyre_vv *v) {
    struct fl f;
    memset(&f, 0, sizeof f);
    f.v = v;
    f.nslots = v->nslots;
    f.vdiv = calloc(v->nslots ? v->nslots : 1u, 1);
    if (!f.vdiv) {
        v->nomem = v->full = true;
        return;
    }
    fl_block(&f, &v->p->body, 1, FL_UNIFORM, NULL);
    if (f.nmarks && !v->full) {
        qsort(f.marks, f.nmarks, sizeof *f.marks, cmp_mark);
        rep_block(&f, &v->p->body, "body", 1);
    }
    free(f.marks);
    free(f.vdiv);
}
