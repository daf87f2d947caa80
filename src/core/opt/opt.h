/* opt.h — optimiser passes over a validated program. Each pass rewrites the IR in
 * place and leaves a program that is still valid (types and slots unchanged). */
#ifndef VYRE_OPT_H
#define VYRE_OPT_H

#include "ir.h"

/* Replaces every subexpression whose operands are all literals by the literal it
 * evaluates to (using the §3 semantics in sem.c), and a select whose condition is a
 * literal by the chosen arm. Approximate ops (exp, sin, rsqrt, ...) are left alone so
 * the GPU computes them exactly as it would without folding. Validates first if
 * needed; VYRE_ERR_INVALID (problems in err) when the program is not valid. */
VYRE_INTERNAL enum vyre_status vyre_opt_fold(vyre_program *p, struct vyre_error *err);

/* The same on a validated program; returns the number of folds. */
VYRE_INTERNAL uint32_t vyre_opt_fold_count(vyre_program *p);

/* The pipeline (pipeline.c): the passes o enables, in rounds until nothing changes,
 * on *pp (validated), which may be replaced by another program. A pass whose result
 * does not validate is undone and not run again (stats->undone counts them; tests
 * require 0). report and stats may be NULL. */
struct vyre_opt_stats {
    uint32_t rounds, undone;
};
VYRE_INTERNAL enum vyre_status vyre_opt_run(vyre_program **pp, const struct vyre_opt_options *o,
                                            struct vyre_opt_report *report,
                                            struct vyre_opt_stats *stats, struct vyre_error *err);
/* The cheapest expression cse / licm give a variable (opt_cost in opt_int.h): 2 and 3.
 * Tests lower them to 0 to put every rewrite through the property test; nothing else
 * writes them. */
struct vyre_opt_min_cost {
    uint32_t cse, licm;
};
VYRE_INTERNAL extern struct vyre_opt_min_cost vyre_opt_min_cost;

/* The enabled passes as bits (cache keys), 1 << pass number. */
VYRE_INTERNAL uint32_t vyre_opt_mask(const struct vyre_opt_options *o);
/* The options vyre_ptx_emit uses when given none: $VYRE_OPT applied to all-on. */
VYRE_INTERNAL enum vyre_status vyre_opt_resolve(const struct vyre_opt_options *given,
                                                struct vyre_opt_options *out,
                                                struct vyre_error *err);

#endif
