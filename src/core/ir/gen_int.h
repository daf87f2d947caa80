/* gen_int.h — private to the random program generator (gen.c builds valid programs,
 * gen_mutate.c turns them into invalid ones): the generator's state and the helpers
 * both files use. Every random choice goes through vyre_gen_below. */
#ifndef VYRE_GEN_INT_H
#define VYRE_GEN_INT_H

#include "ir.h"

#define GEN_MAX_VARS 512
#define GEN_MAX_MEM 8
#define GEN_STMT_DEPTH 4 /* statement nesting of the generated body */
#define GEN_LOOP_DEPTH 2 /* nested loops multiply trip counts: keep two */
#define GEN_NAME 24
struct rng {
    uint64_t s[4];
};

enum mode { MODE_NONE, MODE_READ, MODE_OWN, MODE_ATOMIC };

struct gmem {
    char name[GEN_NAME];
    enum vyre_type type;
    bool shared;
    enum vyre_access access;
    enum mode mode;
    enum vyre_atomic_op aop; /* MODE_ATOMIC: the single op used on it (this phase) */
};

struct gvar {
    char name[GEN_NAME];
    enum vyre_type type;
    bool uniform;  /* same value in every invocation of a workgroup */
    bool settable; /* let and atomic-result variables (not params or loop vars) */
};

struct gen {
    vyre_program *p;
    struct rng r;
    uint32_t max_stmts, max_depth;
    bool barriers, approx;
    bool subgroup; /* allow_subgroup */
    bool sg_ok;    /* the statement being built is in uniform control: subgroup ops may go */
    struct gvar vars[GEN_MAX_VARS];
    uint32_t nvars;
    struct gmem mem[GEN_MAX_MEM];
    uint32_t nmem;
    uint32_t next_name;
    uint32_t nbarriers; /* barriers emitted so far (detects a barrier inside a construct) */
    bool div_return;    /* a return under divergent control was emitted: no barrier after */
    bool fail;          /* allocation failed */
    uint32_t budget;    /* statements left for the whole body */
    bool has_li;
    bool elementwise;                /* opts->elementwise: programs the vector entry applies to */
    bool grid;                       /* allow_grid: sections, grid loops, converge */
    char gi[GEN_NAME], li[GEN_NAME]; /* the current section's own-index variables */
};

/* Where a statement is being generated. */
struct ctx {
    uint32_t depth, loop_depth;
    bool divergent;  /* some enclosing condition/bound/exit differs per invocation */
    bool barrier_ok; /* every enclosing construct allows a barrier */
    bool in_loop;
    bool loop_body_div;   /* innermost loop body was divergent from its start */
    bool in_barrier_loop; /* inside (at any depth) a loop that holds barriers */
};

/* A uniform draw in [0, n) (0 when n is 0) / true with probability pct percent. */
VYRE_INTERNAL uint32_t vyre_gen_below(struct gen *g, uint32_t n);
VYRE_INTERNAL bool vyre_gen_chance(struct gen *g, uint32_t pct);
VYRE_INTERNAL enum vyre_type vyre_gen_int_type(struct gen *g);
/* Node builders that record an allocation failure in g->fail (they return NULL then). */
VYRE_INTERNAL struct vyre_expr *vyre_gen_chk(struct gen *g, struct vyre_expr *e);
VYRE_INTERNAL struct vyre_expr *vyre_gen_lit(struct gen *g, enum vyre_type t, vyre_bits v);
VYRE_INTERNAL struct vyre_expr *vyre_gen_rand_lit(struct gen *g, enum vyre_type t);
VYRE_INTERNAL struct vyre_expr *vyre_gen_name_ex(struct gen *g, const char *n);
VYRE_INTERNAL struct vyre_expr *vyre_gen_bin(struct gen *g, enum vyre_op op, struct vyre_expr *a,
                                             struct vyre_expr *b);
VYRE_INTERNAL struct vyre_expr *vyre_gen_un(struct gen *g, enum vyre_op op, struct vyre_expr *a);
VYRE_INTERNAL struct vyre_expr *vyre_gen_bitcast(struct gen *g, enum vyre_type to,
                                                 struct vyre_expr *a);
VYRE_INTERNAL struct vyre_expr *vyre_gen_builtin(struct gen *g, enum vyre_builtin b, unsigned axis);
VYRE_INTERNAL void vyre_gen_push(struct gen *g, struct vyre_block *b, struct vyre_stmt *s);
/* gen.c's builders, for gen_grid.c (one section = ids, a block, like a whole body). */
struct ctx;
VYRE_INTERNAL void vyre_gen_block(struct gen *g, const struct ctx *c, struct vyre_block *b,
                                  uint32_t n);
VYRE_INTERNAL void vyre_gen_ids(struct gen *g, struct vyre_block *b);
VYRE_INTERNAL void vyre_gen_pick_shared(struct gen *g);
/* One store into an OWN output (or an atomic); false when nothing fits. */
VYRE_INTERNAL bool vyre_gen_final(struct gen *g, struct vyre_block *b);
VYRE_INTERNAL void vyre_gen_add_var(struct gen *g, const char *name, enum vyre_type t,
                                    bool uniform);
VYRE_INTERNAL void vyre_gen_fresh(struct gen *g, char out[GEN_NAME], char prefix);
VYRE_INTERNAL struct vyre_expr *vyre_gen_expr(struct gen *g, enum vyre_type t, bool *div);
VYRE_INTERNAL bool vyre_gen_order_free(enum vyre_type t);
VYRE_INTERNAL enum vyre_atomic_op vyre_gen_commutative(struct gen *g, enum vyre_type t);
/* A program body of sections and grid statements (gen_grid.c). */
VYRE_INTERNAL void vyre_gen_grid(struct gen *g, const struct ctx *c);

/* Mutates the valid program in g->p into one the validator rejects (gen_mutate.c). */
VYRE_INTERNAL void vyre_gen_invalid(struct gen *g);
/* Adds the optimiser's target shapes to the valid program (gen_opt.c). */
VYRE_INTERNAL void vyre_gen_opt_shapes(struct gen *g);

#endif
