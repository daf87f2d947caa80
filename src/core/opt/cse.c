/* cse.c — common-subexpression elimination over statement blocks.
 *
 * A candidate is a movable (opt_int.h), non-trivial, non-bool expression: its value is
 * the same wherever it appears after its variables are declared, because those are
 * never `set` (loop variables are fixed within one iteration, and a candidate that
 * reads one lives in that loop's body). Walking each block in order:
 *   - after `let x e` with e a candidate and x never set, later copies of e in the
 *     block (nested blocks included) read x;
 *   - a candidate that occurs twice or more from statement s on, one occurrence in s's
 *     own expressions (evaluated whenever s runs), becomes `let cseN e` just before s
 *     and every occurrence reads cseN.
 * Expressions cheaper than OPT_CSE_MIN_COST stay (opt_int.h); bool expressions stay: they are cheap predicates, and the bounds-check
 * pass recognises `(if (lt v (len buf)) ...)` only when written out. */
#include "opt.h"
#include "opt_int.h"

struct cse {
    vyre_program *p;
    struct opt_vars v;
    uint32_t n;
};

static bool candidate(const struct cse *c, const struct vyre_expr *e) {
    return !opt_trivial(e) && e->type != VYRE_BOOL && opt_cost(e) >= vyre_opt_min_cost.cse &&
           opt_movable(c->p, &c->v, e);
}

/* The first candidate in pre-order (largest first) within e that occurs at least twice
 * in b[at..]. */
static const struct vyre_expr *repeated(const struct cse *c, const struct vyre_expr *e,
                                        const struct vyre_block *b, uint32_t at) {
    if (!e) return NULL;
    if (candidate(c, e) && opt_count_block(b, at, e) >= 2) return e;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) {
        const struct vyre_expr *r = repeated(c, ops[i], b, at);
        if (r) return r;
    }
    return NULL;
}

static void cse_block(struct cse *c, struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count && !c->p->oom; i++) {
        struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_LET && s->slot < c->v.n && c->v.sets[s->slot] == 0 &&
            candidate(c, s->value))
            c->n += opt_replace_block(c->p, b, i + 1, s->value, s->name);
        struct vyre_expr **es[5];
        unsigned n = opt_stmt_exprs(s, es);
        const struct vyre_expr *r = NULL;
        for (unsigned j = 0; j < n && !r; j++) r = repeated(c, *es[j], b, i);
        if (r) {
            struct vyre_expr *val = opt_copy(c->p, r);
            char *name = opt_fresh_name(c->p, "cse");
            if (!val || !name) return;
            struct vyre_stmt *let = vyre_ir_let(c->p, name, val);
            if (!let || !opt_insert(c->p, b, i, let)) return;
            uint32_t k = opt_replace_block(c->p, b, i + 1, val, name);
            if (!k) return; /* out of memory: the pipeline undoes the pass */
            c->n += k - 1u; /* n occurrences became n reads and one let */
            i--;            /* look at the new let (and then s) again */
            continue;
        }
        cse_block(c, &s->then_);
        cse_block(c, &s->else_);
    }
}

uint32_t vyre_opt_cse(vyre_program *p) {
    struct cse c = {.p = p, .n = 0};
    if (!opt_vars_scan(p, &c.v)) return 0;
    cse_block(&c, &p->body);
    opt_vars_free(&c.v);
    return c.n;
}
