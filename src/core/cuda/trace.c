/* trace.c — the switch and the slow paths of trace.h: NVTX 3 ranges (header-only, from
 * the CUDA toolkit, no link-time dependency: the NVTX header loads an injection
 * library only when a profiler sets one) and the counting mode of the tests. */
#include "trace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vyre_cuda.h"

#ifdef VYRE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

atomic_int vyre_trace_state = -1;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t n_push, n_pop;
static _Thread_local char last_name[160];

/* $VYRE_NVTX=1 turns NVTX on at the first range (or the first query of the switch);
 * ignored when NVTX is not built in. */
static void read_env(void) {
    const char *e = getenv("VYRE_NVTX");
    int want = e && strcmp(e, "1") == 0 && vyre_cuda_nvtx_built() ? VYRE_TRACE_NVTX : 0;
    int unset = -1;
    atomic_compare_exchange_strong(&vyre_trace_state, &unset, want);
}

static int state(void) {
    pthread_once(&env_once, read_env);
    return atomic_load_explicit(&vyre_trace_state, memory_order_relaxed);
}

int vyre_trace_push_slow(const char *what, const char *name) {
    int s = state();
    if (s <= 0) return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "vyre %s%s%s", what, name ? " " : "", name ? name : "");
    if (s & VYRE_TRACE_COUNT) {
        atomic_fetch_add(&n_push, 1);
        snprintf(last_name, sizeof last_name, "%s", msg);
    }
#ifdef VYRE_HAVE_NVTX
    if (s & VYRE_TRACE_NVTX) nvtxRangePushA(msg);
#endif
    return s;
}

void vyre_trace_pop_slow(int token) {
    /* Closes what the push opened even when the switch changed in between. */
    if (token & VYRE_TRACE_COUNT) atomic_fetch_add(&n_pop, 1);
#ifdef VYRE_HAVE_NVTX
    if (token & VYRE_TRACE_NVTX) nvtxRangePop();
#endif
}

static void set_bit(int bit, bool on) {
    pthread_once(&env_once, read_env);
    int old = atomic_load(&vyre_trace_state), want;
    do {
        want = on ? (old | bit) : (old & ~bit);
    } while (!atomic_compare_exchange_weak(&vyre_trace_state, &old, want));
}

void vyre_trace_set_counting(bool on) {
    atomic_store(&n_push, 0);
    atomic_store(&n_pop, 0);
    last_name[0] = '\0';
    set_bit(VYRE_TRACE_COUNT, on);
}

void vyre_trace_counts(uint64_t *pushes, uint64_t *pops, char *last, size_t size) {
    if (pushes) *pushes = (uint64_t)atomic_load(&n_push);
    if (pops) *pops = (uint64_t)atomic_load(&n_pop);
    if (last && size) snprintf(last, size, "%s", last_name);
}

/* ---- public switch (vyre_cuda.h) ---------------------------------------------------- */

bool vyre_cuda_nvtx_built(void) {
#ifdef VYRE_HAVE_NVTX
    return true;
#else
    return false;
#endif
}

bool vyre_cuda_nvtx_enabled(void) { return (state() & VYRE_TRACE_NVTX) != 0; }

enum vyre_status vyre_cuda_set_nvtx(bool on, struct vyre_error *err) {
    if (on && !vyre_cuda_nvtx_built())
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "nvtx: NVTX is not built in (CMake found no nvtx3/nvToolsExt.h). "
                              "Fix: build with the CUDA toolkit's headers "
                              "(-DVYRE_NVTX_INCLUDE=DIR holding nvtx3/)");
    set_bit(VYRE_TRACE_NVTX, on);
    return VYRE_OK;
}
