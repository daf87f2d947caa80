/* sem.h — the per-op semantics of ARCHITECTURE.md §3, written once as a table of C
 * functions. The reference interpreter, the constant folder and the tests all call
 * these, so there is exactly one definition of what every op means. */
#ifndef VYRE_SEM_H
#define VYRE_SEM_H

#include "ir.h"

/* Any op of the table (ops.h) on operand type t (b is ignored by unary ops): stores
 * the result bits (bool results 0/1, others of type t) and returns true; returns
 * false, storing 0, when t is outside the op's operand class or the op has no
 * semantics written here (tests/c/test_ops.c checks that no row of ops.h does). */
VYRE_INTERNAL bool vyre_sem_op(enum vyre_op op, enum vyre_type t, vyre_bits a, vyre_bits b,
                               vyre_bits *out);
/* vyre_sem_op for callers that hold validated IR: 0 where vyre_sem_op fails. */
VYRE_INTERNAL vyre_bits vyre_sem_unary(enum vyre_op op, enum vyre_type t, vyre_bits a);
VYRE_INTERNAL vyre_bits vyre_sem_binary(enum vyre_op op, enum vyre_type t, vyre_bits a,
                                        vyre_bits b);
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
