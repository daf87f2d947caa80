/* fold.c — constant folding: an expression whose operands are all literals becomes
 * the literal it evaluates to. The values come from sem.c, the same functions the
 * reference interpreter runs, so folding never changes what a program computes.
 * Approximate ops are not folded: the CPU's libm and the GPU's approximations differ
 * within their ULP bound, and folding would make the GPU result depend on the host. */
#include "opt.h"

#include "sem.h"

static bool is_lit(const struct vyre_expr *e) { return e && e->kind == VYRE_EX_LIT; }

static void become_lit(struct vyre_expr *e, vyre_bits bits) {
    /* the node keeps its id and validated type; only its kind and payload change */
    e->kind = VYRE_EX_LIT;
    e->u.lit.bits = vyre_sem_from_memory(e->type, bits);
}

/* Post-order: children first, so nested literal trees collapse in one walk. Depth is
 * bounded by the validator's expression-depth limit. Returns the number of folds. */
static uint32_t fold_expr(struct vyre_expr *e) {
    if (!e) return 0;
    uint32_t n = 0;
    switch (e->kind) {
    case VYRE_EX_LOAD: return fold_expr(e->u.access.index);
    case VYRE_EX_UNARY:
        n += fold_expr(e->u.op.a[0]);
        if (is_lit(e->u.op.a[0]) && !vyre_op_is_approx(e->u.op.op)) {
            become_lit(e, vyre_sem_unary(e->u.op.op, e->u.op.a[0]->type, e->u.op.a[0]->u.lit.bits));
            n++;
        }
        return n;
    case VYRE_EX_BINARY:
        n += fold_expr(e->u.op.a[0]);
        n += fold_expr(e->u.op.a[1]);
        if (is_lit(e->u.op.a[0]) && is_lit(e->u.op.a[1])) {
            become_lit(e, vyre_sem_binary(e->u.op.op, e->u.op.a[0]->type, e->u.op.a[0]->u.lit.bits,
                                          e->u.op.a[1]->u.lit.bits));
            n++;
        }
        return n;
    case VYRE_EX_SELECT:
        for (int i = 0; i < 3; i++) n += fold_expr(e->u.op.a[i]);
        if (is_lit(e->u.op.a[0])) {
            /* both arms are side-effect free, so the unchosen one can go */
            uint32_t id = e->id;
            *e = *(e->u.op.a[0]->u.lit.bits ? e->u.op.a[1] : e->u.op.a[2]);
            e->id = id;
            n++;
        }
        return n;
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST:
        n += fold_expr(e->u.op.a[0]);
        if (is_lit(e->u.op.a[0])) {
            const struct vyre_expr *a = e->u.op.a[0];
            vyre_bits v = e->kind == VYRE_EX_CAST
                              ? vyre_sem_cast(e->u.op.to, a->type, a->u.lit.bits)
                              : vyre_sem_bitcast(e->u.op.to, a->type, a->u.lit.bits);
            become_lit(e, v);
            n++;
        }
        return n;
    case VYRE_EX_FMA:
        for (int i = 0; i < 3; i++) n += fold_expr(e->u.op.a[i]);
        if (is_lit(e->u.op.a[0]) && is_lit(e->u.op.a[1]) && is_lit(e->u.op.a[2])) {
            become_lit(e, vyre_sem_fma(e->type, e->u.op.a[0]->u.lit.bits, e->u.op.a[1]->u.lit.bits,
                                       e->u.op.a[2]->u.lit.bits));
            n++;
        }
        return n;
    case VYRE_EX_SUBGROUP:
        /* operands fold; the op itself combines lanes, so it never becomes a literal */
        for (int i = 0; i < 3; i++) n += fold_expr(e->u.op.a[i]);
        return n;
    case VYRE_EX_LIT:
    case VYRE_EX_NAME:
    case VYRE_EX_BUILTIN:
    case VYRE_EX_LEN: return 0;
    }
    return 0;
}

static uint32_t fold_block(struct vyre_block *b);

static uint32_t fold_stmt(struct vyre_stmt *s) {
    uint32_t n = 0;
    n += fold_expr(s->value);
    n += fold_expr(s->index);
    n += fold_expr(s->expected);
    n += fold_expr(s->cond);
    n += fold_expr(s->from);
    n += fold_expr(s->to);
    n += fold_expr(s->step);
    if (vyre_stmt_has_blocks(s)) {
        n += fold_block(&s->then_);
        n += fold_block(&s->else_);
    }
    return n;
}

/* Statement nesting is bounded by the validator's limit, so recursion is shallow. */
static uint32_t fold_block(struct vyre_block *b) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->count; i++) n += fold_stmt(b->items[i]);
    return n;
}

enum vyre_status vyre_opt_fold(vyre_program *p, struct vyre_error *err) {
    if (!p)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_opt_fold: program is NULL. Fix: pass a program.");
    enum vyre_status st = vyre_ensure_valid(p, err);
    if (st != VYRE_OK) return st;
    /* types and variable slots are untouched, so the validation result still holds */
    (void)fold_block(&p->body);
    return VYRE_OK;
}

uint32_t vyre_opt_fold_count(vyre_program *p) { return p->validated ? fold_block(&p->body) : 0; }
