/* sem.h — the per-op semantics of ARCHITECTURE.md §3, written once as a table of C
 * functions. The reference interpreter, the constant folder and the tests all call
 * these, so there is exactly one definition of what every op means. */
#ifndef VYRE_SEM_H
#define VYRE_SEM_H

#include "ir.h"

/* Unary op on operand type t (result type is t; lnot works on bool). */
VYRE_INTERNAL vyre_bits vyre_sem_unary(enum vyre_op op, enum vyre_type t, vyre_bits a);
/* Binary op on operand type t; comparisons return bool bits (0/1), others type t. */
VYRE_INTERNAL vyre_bits vyre_sem_binary(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits b);
/* Value conversion (§3 cast rows). */
VYRE_INTERNAL vyre_bits vyre_sem_cast(enum vyre_type to, enum vyre_type from, vyre_bits a);
/* Same-width reinterpretation (upper bits cleared for 32-bit targets). */
VYRE_INTERNAL vyre_bits vyre_sem_bitcast(enum vyre_type to, enum vyre_type from, vyre_bits a);
/* Fused multiply-add, one rounding (f32/f64). */
VYRE_INTERNAL vyre_bits vyre_sem_fma(enum vyre_type t, vyre_bits a, vyre_bits b, vyre_bits c);
/* New memory word of an atomic on type t given the old word; cas uses expected. */
VYRE_INTERNAL vyre_bits vyre_sem_atomic(enum vyre_atomic_op op, enum vyre_type t, vyre_bits old,
                                        vyre_bits value, vyre_bits expected);
/* Normalises raw memory bits read from a buffer of type t (bool: nonzero word -> 1). */
VYRE_INTERNAL vyre_bits vyre_sem_from_memory(enum vyre_type t, vyre_bits raw);

#endif
