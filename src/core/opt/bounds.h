/* bounds.h — the bounds-check elimination pass (ARCHITECTURE.md §3: "the optimiser
 * removes checks that an enclosing guard or a loop bound already proves"). */
#ifndef VYRE_OPT_BOUNDS_H
#define VYRE_OPT_BOUNDS_H

#include "ir.h"

/* On a validated program: clears, then sets, expr->u.access.in_bounds for loads and
 * stmt->in_bounds for stores/atomics whose index is proven below the buffer's
 * element count. Backends skip the run-time check for those accesses. No-op on a
 * program that is not validated. */
VYRE_INTERNAL void vyre_opt_bounds(vyre_program *p);

#endif
