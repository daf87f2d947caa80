/* trace.h — profiler ranges of the CUDA runtime (docs/RUNTIME.md "Profiler ranges"):
 * NVTX ranges around compile, launch, sequence, run, graph replay and megakernel
 * sections, named by program, switched at run time ($VYRE_NVTX=1 or
 * vyre_cuda_set_nvtx). Off, a push costs one load and one predictable branch and the
 * pop one branch on the token the push returned, so a switch between push and pop
 * cannot unbalance the ranges. Without the toolkit's nvtx3 header (VYRE_HAVE_NVTX
 * undefined) the ranges compile to nothing but the counting mode tests use. */
#ifndef VYRE_TRACE_H
#define VYRE_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* Bits of vyre_trace_state; -1: $VYRE_NVTX not read yet (the slow path reads it). */
#define VYRE_TRACE_NVTX 1  /* NVTX ranges (only when built in) */
#define VYRE_TRACE_COUNT 2 /* count pushes and pops (tests) */

VYRE_INTERNAL extern atomic_int vyre_trace_state;

VYRE_INTERNAL int vyre_trace_push_slow(const char *what, const char *name);
VYRE_INTERNAL void vyre_trace_pop_slow(int token);

/* Opens the range "vyre WHAT NAME"; returns the token to pass to vyre_trace_pop (the
 * bits of what was opened, 0 for nothing). */
static inline int vyre_trace_push(const char *what, const char *name) {
    if (atomic_load_explicit(&vyre_trace_state, memory_order_relaxed) == 0) return 0;
    return vyre_trace_push_slow(what, name);
}

static inline void vyre_trace_pop(int token) {
    if (token) vyre_trace_pop_slow(token);
}

/* Test hooks: turn counting on or off (and zero the counters); read pushes, pops and
 * the last range's name. */
VYRE_INTERNAL void vyre_trace_set_counting(bool on);
VYRE_INTERNAL void vyre_trace_counts(uint64_t *pushes, uint64_t *pops, char *last, size_t size);

#endif
