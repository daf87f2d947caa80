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

#endif
