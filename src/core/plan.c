/* plan.c — occupancy, the residency-sized grid and the capability check
 * (include/vyre_plan.h). vyre.planners.occupancy and .capability call these through
 * the binding, and the CUDA runtime calls them when it sizes a cooperative or
 * worklist-bounded grid and when it refuses a kernel: one rule, so a plan reports what
 * the runtime does and a refusal reads like the planner's diagnostic. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vyre_plan.h"

static const char *const limiter_names[] = {NULL, "threads", "registers", "shared", "blocks"};
static const char *const zero_names[] = {NULL, "workgroup_size", "registers_per_thread",
                                         "registers_per_block", "shared_per_block"};
static const char *const cap_names[] = {"sm_version",         "threads_per_block", "shared_memory",
                                        "cooperative_launch", "co_residency",      "tensor_cores"};

const char *vyre_occ_limiter_name(enum vyre_occ_limiter l) {
    return (unsigned)l <= VYRE_OCC_BLOCKS ? limiter_names[l] : NULL;
}

const char *vyre_occ_zero_name(enum vyre_occ_zero z) {
    return (unsigned)z <= VYRE_OCC_ZERO_SHARED ? zero_names[z] : NULL;
}

const char *vyre_cap_code_name(enum vyre_cap_code c) {
    return (unsigned)c < VYRE_CAP_NCODES ? cap_names[c] : NULL;
}

/* ---- occupancy ----------------------------------------------------------------------------- */

enum vyre_status vyre_occupancy_calc(const struct vyre_device_limits *d, uint32_t wg, uint32_t regs,
                                     uint64_t shared, struct vyre_occupancy *out,
                                     struct vyre_error *err) {
    if (!d || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_occupancy_calc: NULL argument. Fix: pass the limits and "
                              "a struct vyre_occupancy");
    if (!d->warp_size || d->max_threads_per_sm < d->warp_size)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_occupancy_calc: the limits have warp size %u and %u threads "
                              "per SM. Fix: fill both from the device (warp size >= 1, threads "
                              "per SM >= one warp)",
                              d->warp_size, d->max_threads_per_sm);
    memset(out, 0, sizeof *out);
    out->workgroup = wg;
    char *r = out->reason;
    size_t rn = sizeof out->reason;
    if (wg == 0 || wg > d->max_threads_per_block) {
        out->zero = VYRE_OCC_ZERO_WORKGROUP;
        snprintf(r, rn, "workgroup %u is not in 1..%u", wg, d->max_threads_per_block);
    } else if (regs > d->max_registers_per_thread) {
        out->zero = VYRE_OCC_ZERO_REGISTERS_THREAD;
        snprintf(r, rn, "%u registers per thread exceed %u", regs, d->max_registers_per_thread);
    } else if ((uint64_t)regs * wg > d->registers_per_block) {
        out->zero = VYRE_OCC_ZERO_REGISTERS_BLOCK;
        snprintf(r, rn, "%u registers x %u threads exceed %u per block", regs, wg,
                 d->registers_per_block);
    } else if (shared > d->shared_bytes_per_block) {
        out->zero = VYRE_OCC_ZERO_SHARED;
        snprintf(r, rn, "%llu shared bytes exceed %llu per block", (unsigned long long)shared,
                 (unsigned long long)d->shared_bytes_per_block);
    }
    if (out->zero != VYRE_OCC_RUNS) return VYRE_OK;
    uint32_t warps_per_block = (wg + d->warp_size - 1) / d->warp_size;
    uint32_t max_warps = d->max_threads_per_sm / d->warp_size;
    /* The SM allocates whole warps: a block of 100 threads takes 4 warps, so the thread
     * limit is counted in warps, not threads / workgroup (which would allow 20 blocks of
     * 100 on a 2048-thread SM: 125% occupancy). */
    uint64_t lim[4] = {
        max_warps / warps_per_block,
        regs > 0 ? d->registers_per_sm / ((uint64_t)regs * wg) : UINT64_MAX,
        shared > 0 ? d->shared_bytes_per_sm / shared : UINT64_MAX,
        d->max_blocks_per_sm,
    };
    uint32_t best = 0;
    for (uint32_t i = 1; i < 4; i++)
        if (lim[i] < lim[best]) best = i;
    out->blocks_per_sm = (uint32_t)lim[best];
    out->limiter = (enum vyre_occ_limiter)(best + 1);
    out->warps_per_sm = out->blocks_per_sm * warps_per_block;
    out->occupancy_bps = (uint32_t)((uint64_t)out->warps_per_sm * 10000u / max_warps);
    snprintf(r, rn, "%u blocks of %u threads per SM (limited by %s): %u of %u warps",
             out->blocks_per_sm, wg, limiter_names[out->limiter], out->warps_per_sm, max_warps);
    return VYRE_OK;
}

uint32_t vyre_occupancy_grid(const struct vyre_device_limits *d, enum vyre_grid_sizing how,
                             uint32_t per_sm, uint64_t virtual_workgroups) {
    if (!d) return 0;
    uint64_t max_grid = d->max_grid_x ? d->max_grid_x : 2147483647u;
    uint64_t sms = d->sms ? d->sms : 1u;
    if (how == VYRE_SIZE_BOUNDED) {
        /* a grid-stride loop needs no co-residency: one wave of resident blocks, at least
         * one block per SM so every SM takes part */
        uint64_t n = sms * (per_sm ? per_sm : 1u);
        return (uint32_t)(n < max_grid ? n : max_grid);
    }
    uint64_t most = (uint64_t)per_sm * sms;
    if (most > max_grid) most = max_grid;
    return (uint32_t)(virtual_workgroups < most ? virtual_workgroups : most);
}

/* ---- capability ------------------------------------------------------------------------------ */

void vyre_cap_failure_text(const struct vyre_device_limits *d, const struct vyre_cap_failure *f,
                           char *why, size_t nwhy, char *fix, size_t nfix) {
    unsigned long long a = (unsigned long long)f->asked, h = (unsigned long long)f->have;
    switch (f->code) {
    case VYRE_CAP_SM_VERSION:
        snprintf(why, nwhy, "it needs compute capability %llu.%llu, the device has %llu.%llu",
                 a / 10, a % 10, h / 10, h % 10);
        snprintf(fix, nfix,
                 "use a device of compute capability %llu.%llu or newer, or the reference "
                 "backend (vyre.reference.new())",
                 a / 10, a % 10);
        break;
    case VYRE_CAP_THREADS_PER_BLOCK: {
        bool own = d && h < d->max_threads_per_block;
        snprintf(why, nwhy, "it asks %llu threads per workgroup, the limit is %llu (%s)", a, h,
                 own ? "the function's own, from its register use" : "the device's");
        snprintf(fix, nfix, "use a smaller workgroup (at most %llu threads)", h);
        break;
    }
    case VYRE_CAP_SHARED_MEMORY:
        snprintf(why, nwhy, "its shared arrays need %llu bytes, the device allows %llu per block",
                 a, h);
        snprintf(fix, nfix, "shrink the shared arrays or split the workgroup's work");
        break;
    case VYRE_CAP_COOPERATIVE_LAUNCH:
        snprintf(why, nwhy,
                 "it needs a cooperative launch (its grid barrier), which the device or "
                 "driver does not offer");
        snprintf(fix, nfix,
                 "run it without one: grid sync \"split\", \"graph\" or \"auto\" (one kernel "
                 "per section)");
        break;
    case VYRE_CAP_CO_RESIDENCY:
        snprintf(why, nwhy,
                 "a cooperative launch needs at least %llu block co-resident per SM, the "
                 "device holds %llu of this kernel",
                 a, h);
        snprintf(fix, nfix,
                 "use a smaller workgroup, fewer registers or less shared memory, or grid "
                 "sync \"split\", \"graph\" or \"auto\" (one kernel per section)");
        break;
    case VYRE_CAP_TENSOR_CORES:
        snprintf(why, nwhy, "it needs tensor cores, which the device does not have");
        snprintf(fix, nfix, "use a device with tensor cores (compute capability 7.0 or newer)");
        break;
    default:
        snprintf(why, nwhy, "unknown requirement");
        snprintf(fix, nfix, "report this");
        break;
    }
}

/* Appends printf output at *off of buf[n], never past the end. */
static void put(char *buf, size_t n, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t n, size_t *off, const char *fmt, ...) {
    if (*off >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *off, n - *off, fmt, ap);
    va_end(ap);
    if (w > 0) *off += (size_t)w < n - *off ? (size_t)w : n - *off - 1;
}

static void line_field(char *buf, size_t n, size_t *off, const struct vyre_cap_failure *f) {
    unsigned long long a = (unsigned long long)f->asked, h = (unsigned long long)f->have;
    const char *name = cap_names[f->code];
    switch (f->code) {
    case VYRE_CAP_SM_VERSION:
        put(buf, n, off, "%s(required=%llu.%llu,actual=%llu.%llu)", name, a / 10, a % 10, h / 10,
            h % 10);
        break;
    case VYRE_CAP_THREADS_PER_BLOCK:
    case VYRE_CAP_SHARED_MEMORY: put(buf, n, off, "%s(requested=%llu,max=%llu)", name, a, h); break;
    case VYRE_CAP_CO_RESIDENCY:
        put(buf, n, off, "%s(required=%llu,actual=%llu)", name, a, h);
        break;
    default:
        put(buf, n, off, "%s(required=%s,actual=%s)", name, a ? "true" : "false",
            h ? "true" : "false");
        break;
    }
}

static void fail(struct vyre_cap_verdict *v, enum vyre_cap_code c, uint64_t asked, uint64_t have) {
    v->failures[v->nfailures++] = (struct vyre_cap_failure){c, asked, have};
}

enum vyre_status vyre_capability_check(const struct vyre_device_limits *d,
                                       const struct vyre_cap_request *r, struct vyre_cap_verdict *v,
                                       struct vyre_error *err) {
    if (!d || !r || !v)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_capability_check: NULL argument. Fix: pass the limits, the "
                              "request and a struct vyre_cap_verdict");
    memset(v, 0, sizeof *v);
    const char *kernel = r->kernel && *r->kernel ? r->kernel : "kernel";
    if (r->min_sm && d->sm < r->min_sm) fail(v, VYRE_CAP_SM_VERSION, r->min_sm, d->sm);
    uint64_t max = d->max_threads_per_block;
    if (r->kernel_max_threads && r->kernel_max_threads < max) max = r->kernel_max_threads;
    if (r->threads_per_block > max) fail(v, VYRE_CAP_THREADS_PER_BLOCK, r->threads_per_block, max);
    if (r->shared_bytes > d->shared_bytes_per_block)
        fail(v, VYRE_CAP_SHARED_MEMORY, r->shared_bytes, d->shared_bytes_per_block);
    if (r->cooperative && !d->cooperative_launch) fail(v, VYRE_CAP_COOPERATIVE_LAUNCH, 1, 0);
    else if (r->cooperative && r->blocks_per_sm == 0) fail(v, VYRE_CAP_CO_RESIDENCY, 1, 0);
    if (r->tensor_cores && !d->tensor_cores) fail(v, VYRE_CAP_TENSOR_CORES, 1, 0);
    v->ok = v->nfailures == 0;
    size_t off = 0;
    put(v->line, sizeof v->line, &off, "%s|kernel=%s|status=%s", VYRE_CAPABILITY_VERSION, kernel,
        v->ok ? "ok" : "blocked");
    for (uint32_t i = 0; i < v->nfailures; i++) {
        put(v->line, sizeof v->line, &off, i ? "," : "|fix=");
        line_field(v->line, sizeof v->line, &off, &v->failures[i]);
    }
    if (v->ok) return VYRE_OK;
    char why[256], fix[256], fixes[1024] = "";
    size_t mo = 0, fo = 0;
    put(v->message, sizeof v->message, &mo, "kernel '%s' cannot run on %s: ", kernel,
        d->name && *d->name ? d->name : "the device");
    for (uint32_t i = 0; i < v->nfailures; i++) {
        vyre_cap_failure_text(d, &v->failures[i], why, sizeof why, fix, sizeof fix);
        put(v->message, sizeof v->message, &mo, "%s%s", i ? "; " : "", why);
        put(fixes, sizeof fixes, &fo, "%s%s", i ? "; " : "", fix);
    }
    put(v->message, sizeof v->message, &mo, ". Fix: %s. [%s]", fixes, v->line);
    return VYRE_OK;
}
