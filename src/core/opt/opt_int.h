/* opt_int.h — private to the optimiser passes (src/core/opt): what every pass needs to
 * know about variables, the purity rule, and node surgery. Every pass takes a validated
 * program (names unique program-wide, slots resolved, §2) and returns how many rewrites
 * it made; the pipeline (pipeline.c) validates again after each pass. */
#ifndef VYRE_OPT_INT_H
#define VYRE_OPT_INT_H

#include "ir.h"

/* Per variable slot, over the whole program. */
struct opt_vars {
    uint32_t n;
    uint32_t *reads;      /* NAME reads */
    uint32_t *self_reads; /* reads inside a `set` of the same variable */
    uint32_t *sets;       /* `set` statements */
};

VYRE_INTERNAL bool opt_vars_scan(const vyre_program *p, struct opt_vars *v);
VYRE_INTERNAL void opt_vars_free(struct opt_vars *v);

/* A value that is the same wherever it is evaluated in its variables' scope: no
 * subgroup op (lanes), no load from memory the program can write (only `read` global
 * buffers, which no invocation changes), and only variables that are never `set`. */
VYRE_INTERNAL bool opt_movable(const vyre_program *p, const struct opt_vars *v,
                               const struct vyre_expr *e);
/* A rough cost of evaluating e on the GPU, in simple ALU operations: a load 4, an
 * integer division 8, an approximate op 8, a float division or square root 4. cse and
 * licm leave expressions cheaper than vyre_opt_min_cost (opt.h) alone: a variable that lives across a loop costs a
 * register for its whole life, and ptxas recomputes an add as cheaply as it keeps one
 * (measured: bench/results/opt_counts.md). */
VYRE_INTERNAL uint32_t opt_cost(const struct vyre_expr *e);

/* Not worth a variable: literals, names, ids, len. */
VYRE_INTERNAL bool opt_trivial(const struct vyre_expr *e);

/* A deep copy of e in p's arena (NULL on OOM, p->oom set). */
VYRE_INTERNAL struct vyre_expr *opt_copy(vyre_program *p, const struct vyre_expr *e);
/* Turns e into a read of variable `name` of e's type. */
VYRE_INTERNAL bool opt_become_var(vyre_program *p, struct vyre_expr *e, const char *name);
/* Turns e into the literal bits of its type. */
VYRE_INTERNAL void opt_become_lit(struct vyre_expr *e, vyre_bits bits);
/* Replaces e by (a copy of the node) x, one of its own operands. */
VYRE_INTERNAL void opt_become(struct vyre_expr *e, const struct vyre_expr *x);

/* A fresh variable name "<prefix>N" used nowhere in p. */
VYRE_INTERNAL char *opt_fresh_name(vyre_program *p, const char *prefix);

/* Inserts s into b at position at. */
VYRE_INTERNAL bool opt_insert(vyre_program *p, struct vyre_block *b, uint32_t at,
                              struct vyre_stmt *s);
VYRE_INTERNAL void opt_remove(struct vyre_block *b, uint32_t at);

/* The statement's own expressions (evaluated every time the statement runs), in
 * out; returns how many (at most 5). Nested blocks are not included. */
VYRE_INTERNAL unsigned opt_stmt_exprs(struct vyre_stmt *s, struct vyre_expr **out[5]);

/* Replaces every occurrence of `what` (structural equality) inside e / inside the
 * statements b[from..] (nested blocks included) by a read of `name`; returns how many. */
VYRE_INTERNAL uint32_t opt_replace_expr(vyre_program *p, struct vyre_expr *e,
                                        const struct vyre_expr *what, const char *name);
VYRE_INTERNAL uint32_t opt_replace_block(vyre_program *p, struct vyre_block *b, uint32_t from,
                                         const struct vyre_expr *what, const char *name);
/* Counts occurrences of `what` in the same places. */
VYRE_INTERNAL uint32_t opt_count_expr(const struct vyre_expr *e, const struct vyre_expr *what);
VYRE_INTERNAL uint32_t opt_count_block(const struct vyre_block *b, uint32_t from,
                                       const struct vyre_expr *what);

/* The passes (fold is vyre_opt_fold in fold.c). */
VYRE_INTERNAL uint32_t vyre_opt_simplify(vyre_program *p);
VYRE_INTERNAL uint32_t vyre_opt_copy(vyre_program *p);
VYRE_INTERNAL uint32_t vyre_opt_cse(vyre_program *p);
VYRE_INTERNAL uint32_t vyre_opt_licm(vyre_program *p);
VYRE_INTERNAL uint32_t vyre_opt_dce(vyre_program *p);

#endif
