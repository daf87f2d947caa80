/* gen_opt.c — shapes the optimiser targets, added to a valid generated program
 * (vyre_gen_random with allow_opt_shapes) so the property test of tests/c/test_opt.c
 * meets them often: repeated subexpressions, dead lets, copies, expressions that are
 * invariant in a loop, constant branches and algebraic identities. The program is
 * validated first (types of let values are needed), every shape keeps it valid and
 * race-free: no store, atomic or barrier is added, a constant branch wraps only a
 * statement that declares nothing, and the values added are uniform where they join a
 * value (wgsize, ngroups, literals, params). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_int.h"
#include "opt_int.h"

#define SHAPE_LETS 256
#define SHAPE_NELEM(a) (sizeof(a) / sizeof((a)[0]))

struct site {
    struct vyre_block *b;
    uint32_t at;
    bool in_loop;
};

struct shapes {
    struct gen *g;
    struct site lets[SHAPE_LETS];
    uint32_t nlets;
    struct site other[SHAPE_LETS]; /* stores, sets, unbound atomics */
    uint32_t nother;
};

static void collect(struct shapes *s, struct vyre_block *b, bool in_loop) {
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *st = b->items[i];
        struct site x = {b, i, in_loop};
        if (st->kind == VYRE_ST_LET && s->nlets < SHAPE_LETS) s->lets[s->nlets++] = x;
        if ((st->kind == VYRE_ST_STORE || st->kind == VYRE_ST_SET ||
             (st->kind == VYRE_ST_ATOMIC && !st->name)) &&
            s->nother < SHAPE_LETS)
            s->other[s->nother++] = x;
        collect(s, &st->then_, in_loop || st->kind == VYRE_ST_FOR);
        collect(s, &st->else_, in_loop);
    }
}

static struct vyre_expr *lit(struct gen *g, enum vyre_type t, vyre_bits v) {
    return vyre_gen_chk(g, vyre_ir_lit(g->p, t, v));
}

/* A uniform value of type t that never changes in a run: cast of wgsize*ngroups + k. */
static struct vyre_expr *invariant(struct gen *g, enum vyre_type t) {
    struct vyre_expr *e =
        vyre_gen_bin(g, VYRE_OP_ADD,
                     vyre_gen_bin(g, VYRE_OP_MUL, vyre_gen_builtin(g, VYRE_WGSIZE, 0),
                                  vyre_gen_builtin(g, VYRE_NGROUPS, 0)),
                     lit(g, VYRE_U32, 1u + vyre_gen_below(g, 9)));
    if (t == VYRE_U32 || !e) return e;
    return vyre_gen_chk(g, vyre_ir_cast(g->p, t, e));
}

/* The combining op of two values of type t. */
static enum vyre_op join_op(struct gen *g, enum vyre_type t) {
    if (t == VYRE_BOOL) return vyre_gen_chance(g, 50) ? VYRE_OP_LAND : VYRE_OP_LOR;
    if (vyre_type_is_float(t)) return vyre_gen_chance(g, 50) ? VYRE_OP_ADD : VYRE_OP_MUL;
    static const enum vyre_op ops[] = {VYRE_OP_ADD, VYRE_OP_XOR, VYRE_OP_MUL, VYRE_OP_SUB};
    return ops[vyre_gen_below(g, 4)];
}

/* An identity wrapped around e (an int e for most of them): x+0, x*1, x*2^k, x/2^k... */
static struct vyre_expr *identity(struct gen *g, struct vyre_expr *e) {
    enum vyre_type t = e->type;
    struct vyre_program *p = g->p;
    if (t == VYRE_BOOL || vyre_type_is_float(t)) {
        switch (vyre_gen_below(g, 4)) {
        case 0:
            return vyre_gen_bin(g, t == VYRE_BOOL ? VYRE_OP_AND : VYRE_OP_MIN, e, opt_copy(p, e));
        case 1:
            return vyre_gen_chk(g, vyre_ir_select(p, vyre_gen_chk(g, vyre_ir_lit(p, VYRE_BOOL, 1)),
                                                  e, opt_copy(p, e)));
        case 2:
            if (t == VYRE_BOOL)
                return vyre_gen_un(g, VYRE_OP_LNOT, vyre_gen_un(g, VYRE_OP_LNOT, e));
            return vyre_gen_un(g, VYRE_OP_NEG, vyre_gen_un(g, VYRE_OP_NEG, e));
        default:
            if (t == VYRE_BOOL) return vyre_gen_bin(g, VYRE_OP_LAND, e, lit(g, t, 1));
            return vyre_gen_un(g, VYRE_OP_ABS, vyre_gen_un(g, VYRE_OP_NEG, e));
        }
    }
    static const enum vyre_op ops[] = {VYRE_OP_ADD, VYRE_OP_MUL, VYRE_OP_MUL, VYRE_OP_DIV,
                                       VYRE_OP_REM, VYRE_OP_SHL, VYRE_OP_SHR, VYRE_OP_XOR,
                                       VYRE_OP_SUB, VYRE_OP_AND, VYRE_OP_OR,  VYRE_OP_MAX};
    enum vyre_op op = ops[vyre_gen_below(g, SHAPE_NELEM(ops))];
    vyre_bits k = 1u << vyre_gen_below(g, 6);
    switch (op) {
    case VYRE_OP_ADD: return vyre_gen_bin(g, op, e, lit(g, t, 0));
    case VYRE_OP_SHL:
    case VYRE_OP_SHR: return vyre_gen_bin(g, op, e, lit(g, t, vyre_type_bits(t)));
    case VYRE_OP_XOR:
    case VYRE_OP_SUB:
        /* x op x is 0: keep x by adding it back */
        return vyre_gen_bin(g, VYRE_OP_ADD, vyre_gen_bin(g, op, e, opt_copy(p, e)), opt_copy(p, e));
    case VYRE_OP_AND:
    case VYRE_OP_OR:
    case VYRE_OP_MAX: return vyre_gen_bin(g, op, e, opt_copy(p, e));
    default: return vyre_gen_bin(g, op, e, lit(g, t, k)); /* mul div rem by 2^k */
    }
}

static bool is_set(const struct vyre_block *b, const char *n) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_SET && strcmp(s->name, n) == 0) return true;
        if (is_set(&s->then_, n) || is_set(&s->else_, n)) return true;
    }
    return false;
}

static void rename_expr(struct gen *g, struct vyre_expr *e, const char *from, const char *to) {
    if (!e) return;
    if (e->kind == VYRE_EX_NAME && strcmp(e->u.name.name, from) == 0) {
        e->u.name.name = vyre_arena_strdup(g->p, to);
        if (!e->u.name.name) g->fail = true;
        return;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) rename_expr(g, ops[i], from, to);
}

static void rename_stmt(struct gen *g, struct vyre_stmt *s, const char *from, const char *to) {
    struct vyre_expr **es[5];
    unsigned n = opt_stmt_exprs(s, es);
    for (unsigned i = 0; i < n; i++) rename_expr(g, *es[i], from, to);
    for (uint32_t i = 0; i < s->then_.count; i++) rename_stmt(g, s->then_.items[i], from, to);
    for (uint32_t i = 0; i < s->else_.count; i++) rename_stmt(g, s->else_.items[i], from, to);
}

/* "gi", "li", or a section's "gi_<n>", "li_<n>". */
static bool is_own_index(const char *name) {
    if ((name[0] != 'g' && name[0] != 'l') || name[1] != 'i') return false;
    if (name[2] == '\0') return true;
    if (name[2] != '_' || name[3] == '\0') return false;
    for (const char *c = name + 3; *c; c++)
        if (*c < '0' || *c > '9') return false;
    return true;
}

static void shape_let(struct shapes *s, struct site *x) {
    struct gen *g = s->g;
    struct vyre_stmt *st = x->b->items[x->at];
    struct vyre_expr *e = st->value;
    enum vyre_type t = e->type;
    if (t == VYRE_VOID || g->fail) return;
    /* gi and li index the invocation's own slots (race freedom): their values stay.
     * A grid program's sections name theirs gi_<n> and li_<n> (gen_grid.c). */
    bool own = is_own_index(st->name);
    uint32_t k = vyre_gen_below(g, 5);
    if (own && k != 1 && k != 4) return;
    switch (k) {
    case 0: /* a repeated subexpression */
        st->value = vyre_gen_bin(g, join_op(g, t), e, opt_copy(g->p, e));
        break;
    case 1: { /* a dead let right after, and a copy of it later */
        char name[GEN_NAME];
        snprintf(name, sizeof name, "dead%u", g->next_name++);
        struct vyre_stmt *d = vyre_ir_let(g->p, name, opt_copy(g->p, e));
        if (!d || !opt_insert(g->p, x->b, x->at + 1, d)) g->fail = true;
        break;
    }
    case 2: { /* invariant in the enclosing loop (harmless outside one) */
        enum vyre_op op = join_op(g, t); /* draws in sequence, not as sibling arguments */
        struct vyre_expr *inv = invariant(g, t);
        st->value = vyre_gen_bin(g, op, e, inv);
        break;
    }
    case 3: /* an algebraic identity */ st->value = identity(g, e); break;
    default: { /* a copy: `let cpN v` after `let v e`; later reads of v read cpN */
        if (is_set(&g->p->body, st->name)) break;
        char name[GEN_NAME];
        snprintf(name, sizeof name, "cp%u", g->next_name++);
        struct vyre_stmt *d = vyre_ir_let(g->p, name, vyre_gen_name_ex(g, st->name));
        if (!d || !opt_insert(g->p, x->b, x->at + 1, d)) {
            g->fail = true;
            break;
        }
        for (uint32_t i = x->at + 2; i < x->b->count; i++)
            rename_stmt(g, x->b->items[i], st->name, name);
        break;
    }
    }
    if (!st->value) g->fail = true;
}

static void shape_branch(struct shapes *s, struct site *x) {
    struct gen *g = s->g;
    struct vyre_stmt *st = x->b->items[x->at];
    bool taken = vyre_gen_chance(g, 50);
    struct vyre_expr *c =
        vyre_gen_bin(g, VYRE_OP_LT, lit(g, VYRE_U32, taken ? 1u : 2u), lit(g, VYRE_U32, 2u));
    struct vyre_stmt *ifs = c ? vyre_ir_if(g->p, c) : NULL;
    if (!ifs || !vyre_ir_push(g->p, taken ? &ifs->then_ : &ifs->else_, st)) {
        g->fail = true;
        return;
    }
    x->b->items[x->at] = ifs;
}

void vyre_gen_opt_shapes(struct gen *g) {
    struct vyre_problems pr = {0};
    bool ok = vyre_validate(g->p, &pr) == VYRE_OK;
    vyre_problems_free(&pr);
    if (!ok) return;
    struct shapes *s = calloc(1, sizeof *s);
    if (!s) {
        g->fail = true;
        return;
    }
    s->g = g;
    collect(s, &g->p->body, false);
    /* Later sites first, so inserting after a let never moves a site still to visit. */
    for (uint32_t i = s->nother; i-- > 0 && !g->fail;)
        if (vyre_gen_chance(g, 30)) shape_branch(s, &s->other[i]);
    for (uint32_t i = s->nlets; i-- > 0 && !g->fail;)
        if (vyre_gen_chance(g, 60)) shape_let(s, &s->lets[i]);
    free(s);
}
