/* vyre_plan.h — the planners the runtime itself obeys (docs/PLANNERS.md §3.1-3.2): the
 * occupancy of a kernel shape on a device, the grid a grid-stride or cooperative launch
 * gets from it, and the capability check whose verdict is both what
 * vyre.planners.capability returns and what the CUDA runtime raises when it refuses a
 * kernel. One implementation each, so a plan says what the runtime will do. Pure C, no
 * GPU: a device is described by its limits (a profile), filled from the driver by the
 * runtime and from a Lua profile table by the planners. */
#ifndef VYRE_PLAN_H
#define VYRE_PLAN_H

#include "vyre.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The limits the planners read (lua/vyre/profiles.lua's fields of the same names). */
struct vyre_device_limits {
    const char *name; /* for messages; NULL: "the device" */
    unsigned sm;      /* 10 x major + minor */
    uint32_t sms, warp_size, max_threads_per_block, max_threads_per_sm, max_blocks_per_sm;
    uint32_t registers_per_sm, registers_per_block, max_registers_per_thread;
    uint64_t shared_bytes_per_sm, shared_bytes_per_block; /* per block: the opt-in maximum */
    uint64_t max_grid_x;                                  /* 0: 2^31 - 1 */
    bool cooperative_launch, tensor_cores;
};

/* ---- occupancy ------------------------------------------------------------------------- */

enum vyre_occ_limiter {
    VYRE_OCC_NONE, /* the kernel cannot run (see zero) */
    VYRE_OCC_THREADS,
    VYRE_OCC_REGISTERS,
    VYRE_OCC_SHARED,
    VYRE_OCC_BLOCKS
};
enum vyre_occ_zero {
    VYRE_OCC_RUNS,
    VYRE_OCC_ZERO_WORKGROUP,        /* 0 or over max_threads_per_block */
    VYRE_OCC_ZERO_REGISTERS_THREAD, /* over max_registers_per_thread */
    VYRE_OCC_ZERO_REGISTERS_BLOCK,  /* registers x workgroup over registers_per_block */
    VYRE_OCC_ZERO_SHARED            /* over shared_bytes_per_block */
};
const char *vyre_occ_limiter_name(enum vyre_occ_limiter l); /* "threads", ... or NULL */
const char *vyre_occ_zero_name(enum vyre_occ_zero z);       /* "workgroup_size", ... or NULL */

struct vyre_occupancy {
    uint32_t workgroup, blocks_per_sm, warps_per_sm, occupancy_bps; /* bps: 1/10000 */
    enum vyre_occ_limiter limiter;
    enum vyre_occ_zero zero;
    char reason[160];
};

/* The theoretical occupancy of blocks of `workgroup` threads using `registers` per
 * thread and `shared_bytes` per block (0: no limit from that resource): blocks per SM
 * = min(max warps/SM / warps per block, registers/SM / (registers x workgroup),
 * shared/SM / shared, max blocks/SM), the first limiter in that order on ties. Register
 * allocation granularity is not modelled (where a driver answers, it is asked).
 * VYRE_ERR_ARG for NULL or limits with a zero warp size or thread count. */
enum vyre_status vyre_occupancy_calc(const struct vyre_device_limits *d, uint32_t workgroup,
                                     uint32_t registers, uint64_t shared_bytes,
                                     struct vyre_occupancy *out, struct vyre_error *err);

/* The grid of a launch sized by residency, from blocks_per_sm (the driver's answer where
 * it has one, else vyre_occupancy_calc's):
 *   cooperative (a grid barrier: every block must be resident): min(virtual, blocks/SM x
 *     SMs, max_grid_x); 0 when nothing is co-resident (the launch is refused);
 *   bounded (a grid-stride loop over a worklist, `{n = wl}`): blocks/SM x SMs, at least
 *     one block per SM, at most max_grid_x; virtual is not read. */
enum vyre_grid_sizing { VYRE_SIZE_COOPERATIVE, VYRE_SIZE_BOUNDED };
uint32_t vyre_occupancy_grid(const struct vyre_device_limits *d, enum vyre_grid_sizing how,
                             uint32_t blocks_per_sm, uint64_t virtual_workgroups);

/* ---- capability -------------------------------------------------------------------------- */

#define VYRE_CAPABILITY_VERSION "cuda-kernel-capability-v1"

/* In the order a verdict lists them. */
enum vyre_cap_code {
    VYRE_CAP_SM_VERSION,         /* required, actual: sm as 10 x major + minor */
    VYRE_CAP_THREADS_PER_BLOCK,  /* requested, max (the device's, or the function's own) */
    VYRE_CAP_SHARED_MEMORY,      /* requested, max (the opt-in maximum per block) */
    VYRE_CAP_COOPERATIVE_LAUNCH, /* required = 1, actual = 0 */
    VYRE_CAP_CO_RESIDENCY,       /* required = 1 block per SM, actual = 0 */
    VYRE_CAP_TENSOR_CORES,       /* required = 1, actual = 0 */
    VYRE_CAP_NCODES
};
const char *vyre_cap_code_name(enum vyre_cap_code c); /* "sm_version", ... or NULL */

struct vyre_cap_request {
    const char *kernel;          /* the name in the verdict */
    unsigned min_sm;             /* 0: any */
    uint64_t threads_per_block;  /* the block's threads */
    uint32_t kernel_max_threads; /* the function's own limit (register use); 0: unknown */
    uint64_t shared_bytes;
    bool cooperative, tensor_cores;
    int blocks_per_sm; /* co-resident blocks (with cooperative); < 0: unknown */
};

struct vyre_cap_failure {
    enum vyre_cap_code code;
    uint64_t asked, have; /* required/requested; actual/max */
};

struct vyre_cap_verdict {
    bool ok;
    uint32_t nfailures;
    struct vyre_cap_failure failures[VYRE_CAP_NCODES];
    char line[512];     /* cuda-kernel-capability-v1|kernel=K|status=ok|blocked[|fix=...] */
    char message[1536]; /* "kernel 'K' cannot run on D: why; why. Fix: how; how. [line]" */
};

/* Checks every requirement and lists each unmet one, in the enum's order, with what was
 * asked and what the device has; `message` is the text the runtime raises when it
 * refuses the kernel (empty when ok). VYRE_ERR_ARG for NULL arguments. */
enum vyre_status vyre_capability_check(const struct vyre_device_limits *d,
                                       const struct vyre_cap_request *r,
                                       struct vyre_cap_verdict *out, struct vyre_error *err);
/* One failure's clause and its fix, as the message words them. */
void vyre_cap_failure_text(const struct vyre_device_limits *d, const struct vyre_cap_failure *f,
                           char *why, size_t nwhy, char *fix, size_t nfix);

#ifdef __cplusplus
}
#endif

#endif
