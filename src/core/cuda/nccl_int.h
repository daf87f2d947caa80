/* nccl_int.h — private interface of the NCCL files (nccl.c: loading; nccl_group.c:
 * communicators, collectives, steps): the entry-point table built from
 * VYRE_NCCL_ENTRIES (nccl_abi.h) and the communicator struct. */
#ifndef VYRE_NCCL_INT_H
#define VYRE_NCCL_INT_H

#include "cuda_int.h"
#include "nccl_abi.h"

struct vyre_nccl_lib {
    struct vyre_nccl_info info;
    void *handle;
#define VYRE_NCCL_MEMBER(n, req) vyre_nccl_fn_##n *n;
    VYRE_NCCL_ENTRIES(VYRE_NCCL_MEMBER)
#undef VYRE_NCCL_MEMBER
};

/* Loads (once) and returns the table; check ->info.usable. Thread-safe. */
VYRE_INTERNAL const struct vyre_nccl_lib *vyre_nccl_load(void);
/* Fills err with "CALL failed: NAME (ncclGetErrorString). Fix: ..." (VYRE_ERR_CUDA). */
VYRE_INTERNAL enum vyre_status vyre_nccl_fail(ncclResult_t r, const char *call,
                                              struct vyre_error *err);
/* "ncclInvalidArgument", ... */
VYRE_INTERNAL const char *vyre_nccl_result_name(ncclResult_t r);

struct vyre_nccl_comm {
    ncclComm_t comm;
    struct vyre_cuda_device *dev; /* a reference is held */
    int rank, size;
    int local; /* ranks this process drives: size (init_all) or 1 (init_rank) */
    double timeout_s;
    bool blocking; /* ncclConfig_t.blocking: enqueues on the caller's thread */
    bool failed; /* an error or a timeout: destroyed by abort */
    int refs;    /* the owner's and one per collective step; the NCCL comm goes first */
};

/* Drops a collective step's reference (vyre_cuda_kernel_free of a collective step). */
VYRE_INTERNAL void vyre_nccl_comm_unref(vyre_nccl_comm *c);

/* Runs one call of a collective step (launch.c's hook for collective kernels). */
VYRE_INTERNAL enum vyre_status vyre_nccl_step_run(const struct vyre_nccl_call *call,
                                                  struct vyre_error *err);

#endif
