/* gen_grid.c — random programs with grid statements (vyre_gen_options.allow_grid), so
 * the generator-driven tests (interpreter, ptxas, GPU parity) cover grid barriers,
 * grid loops, grid ifs and converge. The body is a tree of sections and grid
 * statements (ARCHITECTURE.md §3). Each section is built like a whole program body
 * by gen.c: its own `gi`/`li` (variables do not survive a boundary), fresh shared
 * modes (shared memory is zero again) and fresh modes for the writable global
 * buffers, which is where grid barriers matter: a buffer some section wrote at its
 * own index may be read anywhere (MODE_READ) by a later section. Every mode keeps a
 * section race-free, and sections never overlap, so GPU results stay bit-exact.
 * Grid-level conditions and bounds use only literals, params and len; a converge
 * loop's rounds set the flag `cf` with an order-free atomic max of 0 or 1 and run at
 * most 4 times. */
#include <stdio.h>
#include <string.h>

#include "gen_int.h"

#define GRID_DEPTH 2 /* nesting of grid loops / ifs / converge */

struct ggen {
    struct gen *g;
    const struct ctx *c;
    uint32_t nparams; /* g->vars[0 .. nparams) are the params */
    uint32_t sections;
    bool in_converge;
};

/* New access modes for a section: a writable global buffer is written at own
 * indices, updated by one commutative atomic, or only read (anywhere). */
static void section_modes(struct gen *g) {
    for (uint32_t i = 0; i < g->nmem; i++) {
        struct gmem *m = &g->mem[i];
        if (m->shared || m->access == VYRE_ACCESS_READ) continue;
        uint32_t k = vyre_gen_below(g, 10);
        if (k < 5 || (k < 7 && !vyre_gen_order_free(m->type))) {
            m->mode = MODE_OWN;
        } else if (k < 7) {
            m->mode = MODE_ATOMIC;
            m->aop = vyre_gen_commutative(g, m->type);
        } else {
            m->mode = MODE_READ;
        }
    }
    vyre_gen_pick_shared(g);
}

static void section(struct ggen *G, struct vyre_block *b, bool last) {
    struct gen *g = G->g;
    uint32_t saved = g->nvars;
    G->sections++;
    snprintf(g->gi, sizeof g->gi, "gi_%u", (unsigned)G->sections);
    snprintf(g->li, sizeof g->li, "li_%u", (unsigned)G->sections);
    section_modes(g);
    g->div_return = false;
    vyre_gen_ids(g, b);
    if (last) {
        if (!vyre_gen_final(g, b)) {
            for (uint32_t i = 0; i < g->nmem; i++)
                if (!g->mem[i].shared && g->mem[i].access != VYRE_ACCESS_READ)
                    g->mem[i].mode = MODE_OWN;
            vyre_gen_final(g, b);
        }
    } else {
        vyre_gen_block(g, G->c, b, 1u + vyre_gen_below(g, g->max_stmts));
    }
    if (G->in_converge && !last) {
        /* this round's vote: cf[0] = max(cf[0], cond ? 1 : 0) */
        bool div = false;
        struct vyre_expr *cond = vyre_gen_expr(g, VYRE_BOOL, &div);
        struct vyre_expr *v =
            vyre_gen_chk(g, vyre_ir_select(g->p, cond, vyre_gen_lit(g, VYRE_U32, 1),
                                           vyre_gen_lit(g, VYRE_U32, 0)));
        if (cond && v)
            vyre_gen_push(g, b,
                          vyre_ir_atomic(g->p, NULL, VYRE_ATOMIC_MAX, "cf",
                                         vyre_gen_lit(g, VYRE_U32, 0), NULL, v));
    }
    g->nvars = saved;
}

/* A grid-uniform u32: a literal, a len, or an integer param folded into a small range. */
static struct vyre_expr *uniform_u32(struct ggen *G, uint32_t cap) {
    struct gen *g = G->g;
    uint32_t k = vyre_gen_below(g, 3);
    if (k == 0 || g->nmem == 0) return vyre_gen_lit(g, VYRE_U32, vyre_gen_below(g, cap + 1u));
    if (k == 1) {
        const struct gmem *m = &g->mem[vyre_gen_below(g, g->nmem)];
        struct vyre_expr *l = vyre_gen_chk(g, vyre_ir_len(g->p, m->name));
        return vyre_gen_bin(g, VYRE_OP_MIN, l, vyre_gen_lit(g, VYRE_U32, cap));
    }
    for (uint32_t i = 0; i < G->nparams; i++) {
        const struct gvar *v = &g->vars[i];
        if (v->type != VYRE_U32 && v->type != VYRE_I32) continue;
        struct vyre_expr *e = vyre_gen_name_ex(g, v->name);
        if (v->type == VYRE_I32) e = vyre_gen_bitcast(g, VYRE_U32, e);
        return vyre_gen_bin(g, VYRE_OP_REM, e, vyre_gen_lit(g, VYRE_U32, cap + 1u));
    }
    return vyre_gen_lit(g, VYRE_U32, vyre_gen_below(g, cap + 1u));
}

static void grid_block(struct ggen *G, struct vyre_block *b, uint32_t depth);

static void grid_for(struct ggen *G, struct vyre_block *b, uint32_t depth) {
    struct gen *g = G->g;
    char name[GEN_NAME];
    vyre_gen_fresh(g, name, 'g');
    struct vyre_expr *from = vyre_gen_lit(g, VYRE_U32, vyre_gen_below(g, 2));
    struct vyre_stmt *s =
        vyre_ir_for(g->p, name, from, uniform_u32(G, 3), vyre_gen_lit(g, VYRE_U32, 1));
    vyre_gen_push(g, b, s);
    if (!s || g->fail) return;
    uint32_t saved = g->nvars;
    vyre_gen_add_var(g, name, VYRE_U32, true);
    uint32_t np = G->nparams;
    G->nparams = g->nvars; /* the loop variable joins the grid-uniform names */
    /* A loop whose body holds no grid statement would be a plain loop of the
     * enclosing section: the leading grid_barrier makes it a grid loop. */
    vyre_gen_push(g, &s->then_, vyre_ir_simple(g->p, VYRE_ST_GRID_BARRIER));
    grid_block(G, &s->then_, depth + 1);
    G->nparams = np;
    g->nvars = saved;
}

static void grid_if(struct ggen *G, struct vyre_block *b, uint32_t depth) {
    struct gen *g = G->g;
    static const enum vyre_op cmp[] = {VYRE_OP_LT, VYRE_OP_GE, VYRE_OP_EQ, VYRE_OP_NE};
    /* draws in sequence: C leaves the order of sibling arguments unspecified */
    enum vyre_op op = cmp[vyre_gen_below(g, 4)];
    struct vyre_expr *lhs = uniform_u32(G, 4);
    struct vyre_expr *rhs = vyre_gen_lit(g, VYRE_U32, vyre_gen_below(g, 4));
    struct vyre_expr *cond = vyre_gen_bin(g, op, lhs, rhs);
    struct vyre_stmt *s = vyre_gen_chk(g, cond) ? vyre_ir_if(g->p, cond) : NULL;
    vyre_gen_push(g, b, s);
    if (!s || g->fail) return;
    vyre_gen_push(g, &s->then_, vyre_ir_simple(g->p, VYRE_ST_GRID_BARRIER));
    grid_block(G, &s->then_, depth + 1);
    if (vyre_gen_chance(g, 50)) grid_block(G, &s->else_, depth + 1);
}

static void grid_converge(struct ggen *G, struct vyre_block *b, uint32_t depth) {
    struct gen *g = G->g;
    struct vyre_expr *max = vyre_gen_chance(g, 70) ? vyre_gen_lit(g, VYRE_U32, vyre_gen_below(g, 5))
                                                   : uniform_u32(G, 4);
    struct vyre_stmt *s = vyre_ir_converge(g->p, "cf", max);
    vyre_gen_push(g, b, s);
    if (!s || g->fail) return;
    G->in_converge = true;
    grid_block(G, &s->then_, depth + 1);
    G->in_converge = false;
}

/* 1-3 items: sections, grid barriers between them, and grid statements. */
static void grid_block(struct ggen *G, struct vyre_block *b, uint32_t depth) {
    struct gen *g = G->g;
    uint32_t n = 1u + vyre_gen_below(g, 3);
    bool after_section = false;
    for (uint32_t i = 0; i < n && !g->fail; i++) {
        uint32_t k = depth >= GRID_DEPTH ? 0u : vyre_gen_below(g, 100);
        bool sec = k < 55 || (k >= 85 && G->in_converge);
        /* two sections in a row without a grid statement between them are one */
        if (i > 0 && ((sec && after_section) || vyre_gen_chance(g, 50)))
            vyre_gen_push(g, b, vyre_ir_simple(g->p, VYRE_ST_GRID_BARRIER));
        if (sec) section(G, b, false);
        else if (k < 72) grid_for(G, b, depth);
        else if (k < 85) grid_if(G, b, depth);
        else grid_converge(G, b, depth);
        after_section = sec;
    }
}

void vyre_gen_grid(struct gen *g, const struct ctx *c) {
    if (!vyre_ir_buffer(g->p, "cf", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0)) {
        g->fail = true;
        return;
    }
    struct ggen G = {g, c, g->nvars, 0, false};
    g->budget = g->max_stmts * 8u;
    grid_block(&G, &g->p->body, 0);
    /* End with a section holding one store into an own-slot output. */
    g->budget = 1;
    vyre_gen_push(g, &g->p->body, vyre_ir_simple(g->p, VYRE_ST_GRID_BARRIER));
    section(&G, &g->p->body, true);
}
