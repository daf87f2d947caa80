/* copy.c — copy and constant propagation: after `let x y`, where y is a literal, a
 * param or a variable that is never `set`, and x itself is never `set`, every read of
 * x is a read of y. Names are unique program-wide (§2) and x's reads all lie in its
 * scope, the rest of its block, where y is in scope too and has the same value. The
 * let, now unread, is left for dead-code elimination. Literals reaching an `if` or an
 * operator feed folding and branch elimination on the next round. */
#include <string.h>

#include "opt_int.h"

struct cp {
    vyre_program *p;
    struct opt_vars v;
};

/* Replaces reads of variable `slot` in e by copies of y. */
static uint32_t subst_expr(vyre_program *p, struct vyre_expr *e, uint32_t slot,
                           const struct vyre_expr *y) {
    if (!e) return 0;
    if (e->kind == VYRE_EX_NAME && e->u.name.ref == VYRE_REF_VAR && e->u.name.index == slot) {
        uint32_t id = e->id;
        enum vyre_type t = e->type;
        *e = *y;
        e->id = id;
        e->type = t;
        return 1;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    uint32_t k = 0;
    for (unsigned i = 0; i < n; i++) k += subst_expr(p, ops[i], slot, y);
    return k;
}

static uint32_t subst_block(vyre_program *p, struct vyre_block *b, uint32_t from, uint32_t slot,
                            const struct vyre_expr *y) {
    uint32_t k = 0;
    for (uint32_t i = from; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        struct vyre_expr **es[5];
        unsigned n = opt_stmt_exprs(s, es);
        for (unsigned j = 0; j < n; j++) k += subst_expr(p, *es[j], slot, y);
        k += subst_block(p, &s->then_, 0, slot, y);
        k += subst_block(p, &s->else_, 0, slot, y);
    }
    return k;
}

static bool copyable(const struct cp *c, const struct vyre_expr *y) {
    if (y->kind == VYRE_EX_LIT) return true;
    if (y->kind != VYRE_EX_NAME) return false;
    if (y->u.name.ref == VYRE_REF_PARAM) return true;
    return y->u.name.ref == VYRE_REF_VAR && y->u.name.index < c->v.n &&
           c->v.sets[y->u.name.index] == 0;
}

static uint32_t copy_block(struct cp *c, struct vyre_block *b) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_LET && s->slot < c->v.n && c->v.sets[s->slot] == 0 &&
            c->v.reads[s->slot] > 0 && copyable(c, s->value)) {
            uint32_t n = subst_block(c->p, b, i + 1, s->slot, s->value);
            c->v.reads[s->slot] -= n < c->v.reads[s->slot] ? n : c->v.reads[s->slot];
            k += n;
        }
        k += copy_block(c, &s->then_);
        k += copy_block(c, &s->else_);
    }
    return k;
}

uint32_t vyre_opt_copy(vyre_program *p) {
    struct cp c;
    c.p = p;
    if (!opt_vars_scan(p, &c.v)) return 0;
    uint32_t k = copy_block(&c, &p->body);
    opt_vars_free(&c.v);
    return k;
}
