/* simplify.c — algebraic simplification that holds for EVERY input under the total
 * semantics of sem.c (docs/ARCHITECTURE.md §3), never only for "defined" inputs:
 *   - integers wrap, so x+0, x*1, x*0, x-x, x^x, x&x, x|x, shifts by a multiple of the
 *     width, x/1, x%1, constant chains (x+c1)+c2 and (x*c1)*c2 rewrite exactly;
 *     unsigned x/2^k is x>>k and x%2^k is x&(2^k-1) (signed division rounds toward
 *     zero, so not for i32/i64); x*2^k stays (see VYRE_OP_MUL below);
 *   - comparisons of x with itself are decided for integers and bools only (NaN);
 *   - floats: nothing arithmetic. x*1 quiets a signalling NaN and x*0 is NaN for
 *     infinities, x+(-0) likewise, x/x is NaN at 0; only the bit operations neg and
 *     abs (sem.c flips/clears the sign and keeps the payload) and min/max of x with
 *     itself (sem.c returns an operand) are rewritten;
 *   - approximate ops are never touched.
 * Every expression is free of side effects (loads and subgroup ops only read), so a
 * rewrite may drop an operand. */
#include "opt_int.h"
#include "sem.h"

static bool is_int(enum vyre_type t) { return vyre_type_is_int(t); }

static vyre_bits ones(enum vyre_type t) {
    return vyre_type_bits(t) == 64 ? ~(vyre_bits)0 : (vyre_bits)0xFFFFFFFFu;
}

static bool lit_is(const struct vyre_expr *e, vyre_bits v) {
    return e->kind == VYRE_EX_LIT && e->u.lit.bits == v;
}

/* log2 of a power-of-two integer literal, or -1. */
static int pow2(const struct vyre_expr *e) {
    if (e->kind != VYRE_EX_LIT || !is_int(e->type)) return -1;
    vyre_bits v = e->u.lit.bits;
    if (v == 0 || (v & (v - 1)) != 0) return -1;
    int k = 0;
    while (!(v & 1u)) {
        v >>= 1;
        k++;
    }
    return k;
}

/* Rewrites e (its operands already simplified); true when it changed. */
static bool binary(struct vyre_expr *e) {
    struct vyre_expr *a = e->u.op.a[0], *b = e->u.op.a[1];
    enum vyre_type t = a->type;
    bool eq = vyre_ir_expr_equal(a, b);
    switch (e->u.op.op) {
    case VYRE_OP_ADD:
        if (!is_int(t)) return false;
        if (lit_is(b, 0)) return opt_become(e, a), true;
        if (lit_is(a, 0)) return opt_become(e, b), true;
        if (b->kind == VYRE_EX_LIT && a->kind == VYRE_EX_BINARY && a->u.op.op == VYRE_OP_ADD &&
            a->u.op.a[1]->kind == VYRE_EX_LIT) {
            /* (x + c1) + c2 = x + (c1 + c2), wrapping */
            b->u.lit.bits =
                vyre_sem_binary(VYRE_OP_ADD, t, a->u.op.a[1]->u.lit.bits, b->u.lit.bits);
            e->u.op.a[0] = a->u.op.a[0];
            return true;
        }
        return false;
    case VYRE_OP_SUB:
        if (!is_int(t)) return false;
        if (lit_is(b, 0)) return opt_become(e, a), true;
        if (eq) return opt_become_lit(e, 0), true;
        return false;
    case VYRE_OP_MUL: {
        if (!is_int(t)) return false;
        if (lit_is(b, 1)) return opt_become(e, a), true;
        if (lit_is(a, 1)) return opt_become(e, b), true;
        if (lit_is(a, 0) || lit_is(b, 0)) return opt_become_lit(e, 0), true;
        if (b->kind == VYRE_EX_LIT && a->kind == VYRE_EX_BINARY && a->u.op.op == VYRE_OP_MUL &&
            a->u.op.a[1]->kind == VYRE_EX_LIT) {
            b->u.lit.bits =
                vyre_sem_binary(VYRE_OP_MUL, t, a->u.op.a[1]->u.lit.bits, b->u.lit.bits);
            e->u.op.a[0] = a->u.op.a[0];
            return true;
        }
        /* x*2^k stays a mul: ptxas fuses mul+add into one IMAD, a shl it would not
         * (measured, bench/results/opt_counts.md) */
        return false;
    }
    case VYRE_OP_DIV: {
        if (!is_int(t)) return false;
        if (lit_is(b, 1)) return opt_become(e, a), true;
        int k = pow2(b);
        if (k > 0 && !vyre_type_is_signed(t)) {
            e->u.op.op = VYRE_OP_SHR;
            b->u.lit.bits = (vyre_bits)k;
            return true;
        }
        return false;
    }
    case VYRE_OP_REM: {
        if (lit_is(b, 1)) return opt_become_lit(e, 0), true;
        int k = pow2(b);
        if (k > 0 && !vyre_type_is_signed(t)) {
            e->u.op.op = VYRE_OP_AND;
            b->u.lit.bits = b->u.lit.bits - 1u;
            return true;
        }
        return false;
    }
    case VYRE_OP_AND:
        if (eq) return opt_become(e, a), true;
        if (lit_is(a, 0) || lit_is(b, 0)) return opt_become_lit(e, 0), true;
        if (lit_is(b, t == VYRE_BOOL ? 1u : ones(t))) return opt_become(e, a), true;
        if (lit_is(a, t == VYRE_BOOL ? 1u : ones(t))) return opt_become(e, b), true;
        return false;
    case VYRE_OP_OR:
        if (eq) return opt_become(e, a), true;
        if (lit_is(b, 0)) return opt_become(e, a), true;
        if (lit_is(a, 0)) return opt_become(e, b), true;
        if (lit_is(b, t == VYRE_BOOL ? 1u : ones(t)) || lit_is(a, t == VYRE_BOOL ? 1u : ones(t)))
            return opt_become_lit(e, t == VYRE_BOOL ? 1u : ones(t)), true;
        return false;
    case VYRE_OP_XOR:
        if (eq) return opt_become_lit(e, 0), true;
        if (lit_is(b, 0)) return opt_become(e, a), true;
        if (lit_is(a, 0)) return opt_become(e, b), true;
        return false;
    case VYRE_OP_SHL:
    case VYRE_OP_SHR:
        /* the amount is taken modulo the width (§3) */
        if (b->kind == VYRE_EX_LIT && b->u.lit.bits % vyre_type_bits(t) == 0)
            return opt_become(e, a), true;
        return false;
    case VYRE_OP_LAND:
        if (eq || lit_is(b, 1)) return opt_become(e, a), true;
        if (lit_is(a, 1)) return opt_become(e, b), true;
        if (lit_is(a, 0) || lit_is(b, 0)) return opt_become_lit(e, 0), true;
        return false;
    case VYRE_OP_LOR:
        if (eq || lit_is(b, 0)) return opt_become(e, a), true;
        if (lit_is(a, 0)) return opt_become(e, b), true;
        if (lit_is(a, 1) || lit_is(b, 1)) return opt_become_lit(e, 1), true;
        return false;
    case VYRE_OP_MIN:
    case VYRE_OP_MAX:
        /* sem.c returns one of the operands, NaN or not: both are x */
        if (eq) return opt_become(e, a), true;
        return false;
    case VYRE_OP_EQ:
    case VYRE_OP_LE:
    case VYRE_OP_GE:
        if (eq && (is_int(t) || t == VYRE_BOOL)) return opt_become_lit(e, 1), true;
        return false;
    case VYRE_OP_NE:
    case VYRE_OP_LT:
    case VYRE_OP_GT:
        if (eq && (is_int(t) || t == VYRE_BOOL)) return opt_become_lit(e, 0), true;
        return false;
    default: return false;
    }
}

static bool unary(struct vyre_expr *e) {
    struct vyre_expr *a = e->u.op.a[0];
    enum vyre_op op = e->u.op.op;
    bool inner_same = a->kind == VYRE_EX_UNARY && a->u.op.op == op;
    switch (op) {
    case VYRE_OP_NEG:
    case VYRE_OP_NOT:
    case VYRE_OP_LNOT:
        /* involutions: integer negation wraps, float negation flips the sign bit only */
        if (inner_same) return opt_become(e, a->u.op.a[0]), true;
        return false;
    case VYRE_OP_ABS:
        if (inner_same) return opt_become(e, a), true;
        /* |-x| = |x| when abs clears the sign (floats) or negates negatives (signed) */
        if (a->kind == VYRE_EX_UNARY && a->u.op.op == VYRE_OP_NEG &&
            (vyre_type_is_float(e->type) || vyre_type_is_signed(e->type))) {
            e->u.op.a[0] = a->u.op.a[0];
            return true;
        }
        return false;
    default: return false;
    }
}

static bool select_(struct vyre_expr *e) {
    struct vyre_expr *c = e->u.op.a[0], *x = e->u.op.a[1], *y = e->u.op.a[2];
    if (vyre_ir_expr_equal(x, y)) return opt_become(e, x), true;
    if (c->kind == VYRE_EX_UNARY && c->u.op.op == VYRE_OP_LNOT) {
        e->u.op.a[0] = c->u.op.a[0];
        e->u.op.a[1] = y;
        e->u.op.a[2] = x;
        return true;
    }
    if (e->type == VYRE_BOOL && lit_is(x, 1) && lit_is(y, 0)) return opt_become(e, c), true;
    if (e->type == VYRE_BOOL && lit_is(x, 0) && lit_is(y, 1)) {
        e->kind = VYRE_EX_UNARY;
        e->u.op.op = VYRE_OP_LNOT;
        e->u.op.a[0] = c;
        e->u.op.a[1] = e->u.op.a[2] = NULL;
        return true;
    }
    return false;
}

/* Post-order, repeated at a node until no rule applies (each rule shrinks the tree or
 * turns an op into a cheaper one that no rule turns back). */
static uint32_t simplify_expr(vyre_program *p, struct vyre_expr *e) {
    if (!e) return 0;
    uint32_t n = 0;
    struct vyre_expr *ops[3];
    unsigned k = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < k; i++) n += simplify_expr(p, ops[i]);
    for (int guard = 0; guard < 16; guard++) {
        bool ch = false;
        if (e->kind == VYRE_EX_BINARY) ch = binary(e);
        else if (e->kind == VYRE_EX_UNARY) ch = unary(e);
        else if (e->kind == VYRE_EX_SELECT) ch = select_(e);
        else if ((e->kind == VYRE_EX_CAST || e->kind == VYRE_EX_BITCAST) &&
                 e->u.op.a[0]->type == e->u.op.to &&
                 (e->kind == VYRE_EX_BITCAST || !vyre_type_is_float(e->type)))
            ch = (opt_become(e, e->u.op.a[0]), true); /* float->same float may quiet a NaN */
        if (!ch) break;
        n++;
    }
    return n;
}

static uint32_t simplify_block(vyre_program *p, struct vyre_block *b) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        struct vyre_expr **es[5];
        unsigned k = opt_stmt_exprs(s, es);
        for (unsigned j = 0; j < k; j++) n += simplify_expr(p, *es[j]);
        n += simplify_block(p, &s->then_);
        n += simplify_block(p, &s->else_);
    }
    return n;
}

uint32_t vyre_opt_simplify(vyre_program *p) { return simplify_block(p, &p->body); }
