/* capability.c — the CUDA runtime's side of the planners (include/vyre_plan.h): the
 * device's limits as the planners read them, the residency of a function (the driver's
 * answer where it has one, else the occupancy rule), and the refusals of a kernel that
 * cannot run, worded by the capability check so they read exactly like
 * vyre.planners.capability's diagnostic on the same device (docs/PLANNERS.md §3.2). */
#include <stdio.h>
#include <string.h>

#include "cuda_int.h"

/* vyre's oldest PTX target (target.c): every kernel needs at least this. */
#define VYRE_MIN_SM 70u

void vyre_cu_limits(const struct vyre_cuda_device *d, struct vyre_device_limits *out) {
    const struct vyre_cuda_info *in = &d->info;
    memset(out, 0, sizeof *out);
    out->name = in->name;
    out->sm = in->sm;
    out->sms = in->sms > 0 ? (uint32_t)in->sms : 0;
    out->warp_size = in->warp_size > 0 ? (uint32_t)in->warp_size : 32u;
    out->max_threads_per_block =
        (uint32_t)(in->max_threads_per_block > 0 ? in->max_threads_per_block : 0);
    out->max_threads_per_sm = (uint32_t)(in->max_threads_per_sm > 0 ? in->max_threads_per_sm : 0);
    out->max_blocks_per_sm = (uint32_t)(in->max_blocks_per_sm > 0 ? in->max_blocks_per_sm : 0);
    out->registers_per_sm = (uint32_t)(in->registers_per_sm > 0 ? in->registers_per_sm : 0);
    out->registers_per_block =
        (uint32_t)(in->registers_per_block > 0 ? in->registers_per_block : 0);
    out->max_registers_per_thread = 255; /* every sm_70+ part (profiles.lua says the same) */
    out->shared_bytes_per_sm =
        (uint64_t)(in->shared_bytes_per_sm > 0 ? in->shared_bytes_per_sm : 0);
    int shared = in->shared_bytes_per_block_optin > 0 ? in->shared_bytes_per_block_optin
                                                      : in->shared_bytes_per_block;
    out->shared_bytes_per_block = (uint64_t)(shared > 0 ? shared : 0);
    out->max_grid_x = (uint64_t)(in->max_grid[0] > 0 ? in->max_grid[0] : 0);
    out->cooperative_launch = in->cooperative_launch && vyre_cu.cuLaunchCooperativeKernel;
    out->tensor_cores = in->cc_major >= 7;
}

enum vyre_status vyre_cuda_device_limits(vyre_cuda_device *d, struct vyre_device_limits *out,
                                         struct vyre_error *err) {
    if (!d || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_device_limits: NULL argument. Fix: pass a device and a "
                              "struct vyre_device_limits");
    vyre_cu_limits(d, out);
    return VYRE_OK;
}

enum vyre_status vyre_cu_resident(vyre_cuda_kernel *k, CUfunction fn, int *per_sm,
                                  struct vyre_error *err) {
    const uint32_t *wg = k->geom.workgroup;
    uint32_t threads = wg[0] * wg[1] * wg[2];
    *per_sm = 0;
    if (vyre_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor) {
        VYRE_CU_CHECK(
            k->dev,
            vyre_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, fn, (int)threads, 0),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor", k->name, err);
        return VYRE_OK;
    }
    /* No driver query: the occupancy rule on the function's registers and static shared
     * memory (vyre.planners.occupancy.calc on be:profile() gives the same). */
    int regs = 0, shared = 0;
    VYRE_CU_CHECK(k->dev, vyre_cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn),
                  "cuFuncGetAttribute", k->name, err);
    VYRE_CU_CHECK(k->dev,
                  vyre_cu.cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                  "cuFuncGetAttribute", k->name, err);
    struct vyre_device_limits lim;
    struct vyre_occupancy o;
    vyre_cu_limits(k->dev, &lim);
    enum vyre_status st = vyre_occupancy_calc(&lim, threads, regs > 0 ? (uint32_t)regs : 0,
                                              shared > 0 ? (uint64_t)shared : 0, &o, err);
    if (st == VYRE_OK) *per_sm = (int)o.blocks_per_sm;
    return st;
}

static void request_of(const vyre_cuda_kernel *k, int max_threads, bool cooperative, int per_sm,
                       struct vyre_cap_request *r) {
    const uint32_t *wg = k->geom.workgroup;
    memset(r, 0, sizeof *r);
    r->kernel = k->name;
    r->min_sm = VYRE_MIN_SM;
    r->threads_per_block = (uint64_t)wg[0] * wg[1] * wg[2];
    r->kernel_max_threads = max_threads > 0 ? (uint32_t)max_threads : 0;
    r->cooperative = cooperative;
    r->blocks_per_sm = cooperative ? per_sm : -1;
}

enum vyre_status vyre_cuda_kernel_capability(vyre_cuda_kernel *k, bool cooperative,
                                             struct vyre_cap_verdict *out, struct vyre_error *err) {
    if (!k || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_kernel_capability: NULL argument. Fix: pass a kernel "
                              "and a struct vyre_cap_verdict");
    int per_sm = -1;
    if (cooperative && k->grid) {
        bool coop = false;
        enum vyre_status st = vyre_cuda_kernel_occupancy(k, &per_sm, &coop, err);
        if (st != VYRE_OK) return st;
    }
    struct vyre_device_limits lim;
    struct vyre_cap_request r;
    vyre_cu_limits(k->dev, &lim);
    request_of(k, k->max_threads, cooperative, per_sm, &r);
    return vyre_capability_check(&lim, &r, out, err);
}

enum vyre_status vyre_cu_refuse(vyre_cuda_kernel *k, const char *name, uint64_t threads,
                                int max_threads, bool cooperative, int per_sm,
                                enum vyre_status status, struct vyre_error *err) {
    struct vyre_device_limits lim;
    struct vyre_cap_request r;
    struct vyre_cap_verdict v;
    vyre_cu_limits(k->dev, &lim);
    request_of(k, max_threads, cooperative, per_sm, &r);
    if (name) r.kernel = name;
    if (threads) r.threads_per_block = threads;
    if (vyre_capability_check(&lim, &r, &v, err) != VYRE_OK) return err ? err->status : status;
    if (v.ok)
        snprintf(v.message, sizeof v.message,
                 "kernel '%s' passes the capability check, yet the launch cannot run. Fix: "
                 "report this with the program [%s]",
                 r.kernel, v.line);
    return vyre_error_set(err, status, "launch of '%s' refused: %s", r.kernel, v.message);
}
