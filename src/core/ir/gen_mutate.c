/* gen_mutate.c — the random generator's invalid programs (vyre_gen_random with
 * allow_invalid): a valid program from gen.c is mutated one to three times, each time in
 * a way the validator must reject (type mismatches, undeclared or reserved names, stores
 * to read buffers, divergent barriers, limits ...), for the validator's property tests. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "gen_int.h"

/* ---- invalid mutations ------------------------------------------------------------------ */

#define GEN_COLLECT 4096

struct coll {
    struct vyre_expr *ex[GEN_COLLECT];
    uint32_t nex;
    struct vyre_block *blk[GEN_COLLECT];
    uint32_t nblk;
    struct vyre_stmt *st[GEN_COLLECT];
    uint32_t nst;
};

static void coll_expr(struct coll *c, struct vyre_expr *e) {
    if (!e || c->nex >= GEN_COLLECT) return;
    c->ex[c->nex++] = e;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) coll_expr(c, ops[i]);
}

static void coll_block(struct coll *c, struct vyre_block *b) {
    if (c->nblk < GEN_COLLECT) c->blk[c->nblk++] = b;
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        if (c->nst < GEN_COLLECT) c->st[c->nst++] = s;
        coll_expr(c, s->value);
        coll_expr(c, s->index);
        coll_expr(c, s->expected);
        coll_expr(c, s->cond);
        coll_expr(c, s->from);
        coll_expr(c, s->to);
        coll_expr(c, s->step);
        if (s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR) coll_block(c, &s->then_);
        if (s->kind == VYRE_ST_IF) coll_block(c, &s->else_);
    }
}

/* Appends s to b, then moves it to a random position. */
static void insert_at(struct gen *g, struct vyre_block *b, struct vyre_stmt *s, bool random_pos) {
    if (!s || !vyre_ir_push(g->p, b, s)) {
        g->fail = true;
        return;
    }
    if (!random_pos) return;
    uint32_t pos = vyre_gen_below(g, b->count);
    for (uint32_t i = b->count - 1; i > pos; i--) b->items[i] = b->items[i - 1];
    b->items[pos] = s;
}

static void add_let(struct gen *g, struct vyre_block *b, const char *name, struct vyre_expr *e) {
    insert_at(g, b, vyre_ir_let(g->p, name, e), true);
}

static struct vyre_block *rand_block(struct gen *g, struct coll *c) {
    return c->nblk ? c->blk[vyre_gen_below(g, c->nblk)] : &g->p->body;
}

static const char *decl_of_kind(struct gen *g, enum vyre_decl_kind k, bool want_read) {
    uint32_t cand[VYRE_MAX_BUFFERS], n = 0;
    for (uint32_t i = 0; i < g->p->ndecls && n < VYRE_MAX_BUFFERS; i++) {
        const struct vyre_decl *d = &g->p->decls[i];
        if (d->kind == k && (!want_read || d->access == VYRE_ACCESS_READ)) cand[n++] = i;
    }
    return n ? g->p->decls[cand[vyre_gen_below(g, n)]].name : NULL;
}

static void mutate(struct gen *g, struct coll *c) {
    vyre_program *p = g->p;
    struct vyre_block *blk = rand_block(g, c);
    char nm[GEN_NAME];
    switch (vyre_gen_below(g, 26)) {
    case 0: { /* swap a literal's type */
        for (uint32_t i = 0; i < c->nex; i++) {
            struct vyre_expr *e = c->ex[vyre_gen_below(g, c->nex)];
            if (e->kind != VYRE_EX_LIT) continue;
            e->type = (enum vyre_type)((e->type + 1u + vyre_gen_below(g, 6)) % VYRE_TYPE_COUNT);
            if (vyre_type_bits(e->type) == 32) e->u.lit.bits &= 0xFFFFFFFFu;
            if (e->type == VYRE_BOOL) e->u.lit.bits &= 1u;
            return;
        }
        add_let(g, blk, "mut_t",
                vyre_gen_bin(g, VYRE_OP_ADD, vyre_gen_lit(g, VYRE_U32, 1),
                             vyre_gen_lit(g, VYRE_I32, 1)));
        return;
    }
    case 1: { /* undeclared name */
        for (uint32_t i = 0; i < c->nex; i++) {
            struct vyre_expr *e = c->ex[vyre_gen_below(g, c->nex)];
            if (e->kind != VYRE_EX_NAME) continue;
            e->u.name.name = vyre_arena_strdup(p, "undeclared_x");
            if (!e->u.name.name) g->fail = true;
            return;
        }
        insert_at(g, blk, vyre_ir_let(p, "mut_u", vyre_gen_name_ex(g, "nosuch")), true);
        return;
    }
    case 2: { /* duplicate name: a let reusing a declaration's name */
        /* draws in sequence: C leaves the order of sibling arguments unspecified */
        const char *dn = p->decls[vyre_gen_below(g, p->ndecls)].name;
        struct vyre_expr *v = vyre_gen_rand_lit(g, VYRE_U32);
        insert_at(g, blk, vyre_ir_let(p, dn, v), true);
        return;
    }
    case 3: /* duplicate name: reuse "gi" */
        insert_at(g, blk, vyre_ir_let(p, "gi", vyre_gen_rand_lit(g, VYRE_U32)), true);
        return;
    case 4: { /* set a param */
        const char *pn = decl_of_kind(g, VYRE_DECL_PARAM, false);
        if (!pn) {
            if (!vyre_ir_param(p, "mut_p", VYRE_U32)) g->fail = true;
            pn = "mut_p";
        }
        const struct vyre_decl *d = vyre_ir_find_decl(p, pn);
        insert_at(g, blk, vyre_ir_set(p, pn, vyre_gen_rand_lit(g, d ? d->type : VYRE_U32)), true);
        return;
    }
    case 5: { /* store to a read buffer */
        const char *bn = decl_of_kind(g, VYRE_DECL_BUFFER, true);
        if (!bn) {
            if (!vyre_ir_buffer(p, "mut_r", VYRE_U32, VYRE_ACCESS_READ, 0)) g->fail = true;
            bn = "mut_r";
        }
        const struct vyre_decl *d = vyre_ir_find_decl(p, bn);
        struct vyre_expr *v = vyre_gen_rand_lit(g, d ? d->type : VYRE_U32);
        insert_at(g, blk, vyre_ir_store(p, bn, vyre_gen_name_ex(g, "gi"), v), true);
        return;
    }
    case 6: { /* barrier under a gid condition */
        struct vyre_expr *c0 = vyre_gen_bin(g, VYRE_OP_EQ, vyre_gen_builtin(g, VYRE_GID, 0),
                                            vyre_gen_lit(g, VYRE_U32, 0));
        struct vyre_stmt *s = vyre_ir_if(p, c0);
        if (s) vyre_gen_push(g, &s->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
        insert_at(g, &p->body, s, true);
        return;
    }
    case 7: /* break outside any loop */
        insert_at(g, &p->body, vyre_ir_simple(p, VYRE_ST_BREAK), true);
        return;
    case 8: { /* statement nesting beyond the limit */
        struct vyre_block *b = &p->body;
        for (int i = 0; i < VYRE_MAX_NESTING + 6 && !g->fail; i++) {
            struct vyre_stmt *s = vyre_ir_if(p, vyre_gen_lit(g, VYRE_BOOL, 1));
            insert_at(g, b, s, false);
            if (!s) return;
            b = &s->then_;
        }
        insert_at(g, b, vyre_ir_let(p, "mut_deep", vyre_gen_lit(g, VYRE_U32, 1)), false);
        return;
    }
    case 9: { /* expression depth beyond the limit */
        struct vyre_expr *e = vyre_gen_lit(g, VYRE_I32, 1);
        for (int i = 0; i < VYRE_MAX_EXPR_DEPTH + 8; i++) e = vyre_gen_un(g, VYRE_OP_NEG, e);
        insert_at(g, blk, vyre_ir_let(p, "mut_e", e), true);
        return;
    }
    case 10: { /* workgroup geometry out of limits */
        uint32_t k = vyre_gen_below(g, 4);
        if (k == 0) p->workgroup[0] = 2048;
        else if (k == 1) p->workgroup[2] = 65;
        else if (k == 2) p->workgroup[vyre_gen_below(g, 3)] = 0;
        else {
            p->workgroup[0] = 64;
            p->workgroup[1] = 64;
        }
        return;
    }
    case 11: /* too much shared memory */
        if (!vyre_ir_shared(p, "mut_s", VYRE_F64, 7000u)) g->fail = true;
        return;
    case 12: /* bitcast of bool, or across widths */
        add_let(g, blk, "mut_bc",
                vyre_gen_chance(g, 50)
                    ? vyre_gen_bitcast(g, VYRE_U32, vyre_gen_lit(g, VYRE_BOOL, 1))
                    : vyre_gen_bitcast(g, VYRE_F64, vyre_gen_rand_lit(g, VYRE_U32)));
        return;
    case 13: /* rem on floats */
    {
        struct vyre_expr *a = vyre_gen_rand_lit(g, VYRE_F32); /* one draw after the other */
        add_let(g, blk, "mut_rem", vyre_gen_bin(g, VYRE_OP_REM, a, vyre_gen_rand_lit(g, VYRE_F32)));
        return;
    }
    case 14: { /* non-bool if condition */
        struct vyre_stmt *s = vyre_ir_if(p, vyre_gen_rand_lit(g, vyre_gen_int_type(g)));
        insert_at(g, blk, s, true);
        return;
    }
    case 15: { /* atomic min on an f64 buffer / xor on an f32 buffer */
        enum vyre_type bt = vyre_gen_chance(g, 50) ? VYRE_F64 : VYRE_F32;
        if (!vyre_ir_buffer(p, "mut_ab", bt, VYRE_ACCESS_READ_WRITE, 0)) g->fail = true;
        const struct vyre_decl *d = vyre_ir_find_decl(p, "mut_ab");
        enum vyre_type t = d ? d->type : VYRE_F32;
        struct vyre_expr *v = vyre_gen_rand_lit(g, t);
        struct vyre_expr *i = vyre_gen_name_ex(g, "gi");
        enum vyre_atomic_op op = t == VYRE_F32 ? VYRE_ATOMIC_XOR : VYRE_ATOMIC_MIN;
        insert_at(g, blk, vyre_ir_atomic(p, NULL, op, "mut_ab", i, NULL, v), true);
        return;
    }
    case 16: { /* loop bounds of different types */
        struct vyre_stmt *s =
            vyre_ir_for(p, "mut_i", vyre_gen_lit(g, VYRE_U32, 0), vyre_gen_lit(g, VYRE_I32, 4),
                        vyre_gen_lit(g, VYRE_U32, 1));
        insert_at(g, blk, s, true);
        return;
    }
    case 17: /* reserved word as a name */
        insert_at(
            g, blk,
            vyre_ir_let(p, vyre_gen_chance(g, 50) ? "true" : "f32", vyre_gen_lit(g, VYRE_U32, 1)),
            true);
        return;
    case 18: { /* use after the scope ended */
        struct vyre_stmt *s = vyre_ir_if(p, vyre_gen_lit(g, VYRE_BOOL, 1));
        if (s) vyre_gen_push(g, &s->then_, vyre_ir_let(p, "mut_in", vyre_gen_lit(g, VYRE_U32, 3)));
        insert_at(g, &p->body, s, false);
        insert_at(g, &p->body, vyre_ir_let(p, "mut_out", vyre_gen_name_ex(g, "mut_in")), false);
        return;
    }
    case 19: { /* set the loop variable */
        struct vyre_stmt *s = vyre_ir_for(p, "mut_lv", vyre_gen_lit(g, VYRE_U32, 0),
                                          vyre_gen_lit(g, VYRE_U32, 3), NULL);
        if (s) vyre_gen_push(g, &s->then_, vyre_ir_set(p, "mut_lv", vyre_gen_lit(g, VYRE_U32, 9)));
        insert_at(g, blk, s, true);
        return;
    }
    case 20: { /* a param used as a buffer */
        const char *pn = decl_of_kind(g, VYRE_DECL_PARAM, false);
        add_let(g, blk, "mut_lp",
                vyre_gen_chk(g, vyre_ir_load(p, pn ? pn : "nobuf", vyre_gen_lit(g, VYRE_U32, 0))));
        return;
    }
    case 21: { /* logical op on integers (operands drawn in sequence) */
        struct vyre_expr *a = vyre_gen_rand_lit(g, VYRE_U32);
        struct vyre_expr *b = vyre_gen_rand_lit(g, VYRE_U32);
        add_let(g, blk, "mut_land", vyre_gen_bin(g, VYRE_OP_LAND, a, b));
        return;
    }
    case 22: /* too many params */
        for (uint32_t i = 0; i < VYRE_MAX_PARAMS + 2 && !g->fail; i++) {
            snprintf(nm, sizeof nm, "mut_p%u", (unsigned)i);
            if (!vyre_ir_param(p, nm, VYRE_U32)) g->fail = true;
        }
        return;
    case 23: { /* change a buffer's element type under its uses */
        for (uint32_t i = 0; i < p->ndecls; i++) {
            struct vyre_decl *d = &p->decls[vyre_gen_below(g, p->ndecls)];
            if (d->kind == VYRE_DECL_PARAM) continue;
            d->type = (enum vyre_type)((d->type + 1u + vyre_gen_below(g, 6)) % VYRE_TYPE_COUNT);
            return;
        }
        return;
    }
    case 24: /* a buffer used as a value */
        insert_at(g, blk, vyre_ir_let(p, "mut_bv", vyre_gen_name_ex(g, p->decls[0].name)), true);
        return;
    default: /* name longer than the limit */
        add_let(g, blk, "a_name_that_is_far_too_long_for_the_identifier_limit_of_sixty_four_chars",
                vyre_gen_lit(g, VYRE_U32, 1));
        return;
    }
}

void vyre_gen_invalid(struct gen *g) {
    struct coll *c = calloc(1, sizeof *c);
    if (!c) {
        g->fail = true;
        return;
    }
    uint32_t n = 1u + vyre_gen_below(g, 3);
    for (uint32_t i = 0; i < n && !g->fail; i++) {
        c->nex = c->nblk = c->nst = 0;
        coll_block(c, &g->p->body);
        mutate(g, c);
    }
    free(c);
}
