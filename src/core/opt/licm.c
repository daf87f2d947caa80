/* licm.c — loop-invariant code motion. In a `for` body, a movable (opt_int.h),
 * non-trivial, non-bool expression whose variables are all declared outside the loop
 * has one value for every iteration; it is computed once, as `let licmN e` just
 * before the loop, and the body reads licmN. Evaluating it when the loop runs zero
 * times is harmless: every expression is total and free of side effects (a load out of
 * bounds reads zero). Inner loops go first, so an expression invariant in several
 * nested loops climbs one loop per round of the pipeline. Expressions cheaper than
 * vyre_opt_min_cost.licm stay (a register across the loop costs more). Bool ones stay, as in
 * cse.c, so the bounds-check pass still sees its guards. */
#include <stdlib.h>

#include "opt.h"
#include "opt_int.h"

struct licm {
    vyre_program *p;
    struct opt_vars v;
    bool *inside; /* per slot: declared in the loop being looked at */
    uint32_t n;
};

static void mark_decls(struct licm *c, const struct vyre_block *b, bool on) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->name && s->kind != VYRE_ST_SET && s->slot < c->v.n) c->inside[s->slot] = on;
        mark_decls(c, &s->then_, on);
        mark_decls(c, &s->else_, on);
    }
}

static bool invariant(const struct licm *c, const struct vyre_expr *e) {
    if (e->kind == VYRE_EX_NAME && e->u.name.ref == VYRE_REF_VAR)
        return e->u.name.index < c->v.n && !c->inside[e->u.name.index];
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++)
        if (!invariant(c, ops[i])) return false;
    return true;
}

/* The first maximal invariant candidate in e (pre-order). */
static const struct vyre_expr *find_expr(const struct licm *c, const struct vyre_expr *e) {
    if (!e) return NULL;
    if (!opt_trivial(e) && e->type != VYRE_BOOL && opt_cost(e) >= vyre_opt_min_cost.licm &&
        opt_movable(c->p, &c->v, e) && invariant(c, e))
        return e;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) {
        const struct vyre_expr *r = find_expr(c, ops[i]);
        if (r) return r;
    }
    return NULL;
}

static const struct vyre_expr *find_block(const struct licm *c, struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        struct vyre_expr **es[5];
        unsigned n = opt_stmt_exprs(s, es);
        for (unsigned j = 0; j < n; j++) {
            const struct vyre_expr *r = find_expr(c, *es[j]);
            if (r) return r;
        }
        const struct vyre_expr *r = find_block(c, &s->then_);
        if (!r) r = find_block(c, &s->else_);
        if (r) return r;
    }
    return NULL;
}

static void licm_block(struct licm *c, struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count && !c->p->oom; i++) {
        struct vyre_stmt *s = b->items[i];
        licm_block(c, &s->then_);
        licm_block(c, &s->else_);
        if (s->kind != VYRE_ST_FOR) continue;
        if (s->slot < c->v.n) c->inside[s->slot] = true; /* the loop variable */
        mark_decls(c, &s->then_, true);
        const struct vyre_expr *r;
        while ((r = find_block(c, &s->then_)) != NULL) {
            struct vyre_expr *val = opt_copy(c->p, r);
            char *name = opt_fresh_name(c->p, "licm");
            if (!val || !name) break;
            struct vyre_stmt *let = vyre_ir_let(c->p, name, val);
            if (!let || !opt_insert(c->p, b, i, let)) break;
            i++; /* s moved one place on */
            uint32_t k = opt_replace_block(c->p, &s->then_, 0, val, name);
            if (!k) break; /* out of memory: nothing more to do safely */
            c->n += k;
        }
        mark_decls(c, &s->then_, false);
        if (s->slot < c->v.n) c->inside[s->slot] = false;
    }
}

uint32_t vyre_opt_licm(vyre_program *p) {
    struct licm c = {.p = p, .n = 0};
    if (!opt_vars_scan(p, &c.v)) return 0;
    c.inside = calloc(c.v.n ? c.v.n : 1, sizeof *c.inside);
    if (c.inside) licm_block(&c, &p->body);
    free(c.inside);
    opt_vars_free(&c.v);
    return c.n;
}
