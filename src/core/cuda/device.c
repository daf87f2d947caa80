/* device.c — device objects: the retained primary context of an ordinal, its stream
 * and timing events, capabilities probed once, the entry check every public call
 * makes (lost device, deferred destructor error, current context), telemetry,
 * synchronisation and teardown.
 *
 * Device loss is per ordinal: the primary context is shared by every device object
 * of that ordinal, so a sticky fault poisons all of them. Opening a new object on a
 * lost ordinal resets the primary context (cuDevicePrimaryCtxReset) and bumps the
 * ordinal's generation; objects of an older generation stay lost and never pass
 * their stale pointers to the driver again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_int.h"

struct ordinal_state {
    atomic_uint generation;
    atomic_bool lost;
    struct vyre_error cause; /* written once before `lost` is set */
};

static struct ordinal_state ordinals[VYRE_CU_MAX_ORDINALS];

uint64_t vyre_cu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool vyre_cu_alive(const struct vyre_cuda_device *d) {
    return d && !d->lost && d->ctx &&
           atomic_load(&ordinals[d->ordinal].generation) == d->generation &&
           !atomic_load(&ordinals[d->ordinal].lost);
}

bool vyre_cu_current(struct vyre_cuda_device *d) {
    if (!vyre_cu_alive(d)) return false;
    CUcontext cur = NULL;
    if (vyre_cu.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != d->ctx)
        return vyre_cu.cuCtxSetCurrent(d->ctx) == CUDA_SUCCESS;
    return true;
}

void vyre_cu_mark_lost(struct vyre_cuda_device *d, const struct vyre_error *cause) {
    if (d->lost) return;
    d->lost = true;
    d->lost_err = *cause;
    d->lost_err.status = VYRE_ERR_DEVICE_LOST;
    struct ordinal_state *o = &ordinals[d->ordinal];
    if (atomic_load(&o->generation) == d->generation && !atomic_load(&o->lost)) {
        o->cause = d->lost_err;
        atomic_store(&o->lost, true);
    }
}

static enum vyre_status lost_error(struct vyre_cuda_device *d, struct vyre_error *err) {
    if (err) {
        *err = d->lost_err;
        err->status = VYRE_ERR_DEVICE_LOST;
    }
    return VYRE_ERR_DEVICE_LOST;
}

enum vyre_status vyre_cu_enter(struct vyre_cuda_device *d, struct vyre_error *err) {
    if (!d)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "no device given. Fix: open one with "
                              "vyre_cuda_device_open.");
    if (d->lost) return lost_error(d, err);
    struct ordinal_state *o = &ordinals[d->ordinal];
    if (atomic_load(&o->generation) != d->generation) {
        struct vyre_error e;
        vyre_error_set(&e, VYRE_ERR_DEVICE_LOST,
                       "device %d was reset by a newer device object after a fault; this "
                       "object and its buffers and kernels are no longer usable. Fix: use the "
                       "new device object and recreate buffers and kernels on it.",
                       d->ordinal);
        d->lost = true;
        d->lost_err = e;
        return lost_error(d, err);
    }
    if (atomic_load(&o->lost)) {
        d->lost = true;
        d->lost_err = o->cause;
        return lost_error(d, err);
    }
    if (d->pending) {
        d->pending = false;
        if (err) *err = d->pending_err;
        return d->pending_err.status;
    }
    CUcontext cur = NULL;
    if (vyre_cu.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != d->ctx)
        VYRE_CU_CHECK(d, vyre_cu.cuCtxSetCurrent(d->ctx), "cuCtxSetCurrent", NULL, err);
    return VYRE_OK;
}

/* One capability; after the first failure the rest are skipped and *r keeps it. */
static int attr(CUdevice dev, CUdevice_attribute a, CUresult *r) {
    int v = 0;
    if (*r == CUDA_SUCCESS) *r = vyre_cu.cuDeviceGetAttribute(&v, a, dev);
    return *r == CUDA_SUCCESS ? v : 0;
}

static enum vyre_status probe_info(struct vyre_cuda_device *d, struct vyre_error *err) {
    struct vyre_cuda_info *in = &d->info;
    memset(in, 0, sizeof *in);
    VYRE_CU_CHECK(d, vyre_cu.cuDeviceGetName(in->name, (int)sizeof in->name - 1, d->dev),
                  "cuDeviceGetName", NULL, err);
    size_t total = 0;
    VYRE_CU_CHECK(d, vyre_cu.cuDeviceTotalMem(&total, d->dev), "cuDeviceTotalMem", NULL, err);
    in->ordinal = d->ordinal;
    in->memory_bytes = total;
    CUresult r = CUDA_SUCCESS;
    in->cc_major = attr(d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &r);
    in->cc_minor = attr(d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &r);
    in->sm = (unsigned)(in->cc_major * 10 + in->cc_minor);
    in->sms = attr(d->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &r);
    in->max_threads_per_block = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &r);
    in->max_block[0] = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &r);
    in->max_block[1] = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &r);
    in->max_block[2] = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &r);
    in->max_grid[0] = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &r);
    in->max_grid[1] = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &r);
    in->max_grid[2] = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &r);
    in->shared_bytes_per_block = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &r);
    in->shared_bytes_per_block_optin =
        attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &r);
    in->warp_size = attr(d->dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &r);
    in->cooperative_launch = attr(d->dev, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, &r) != 0;
    in->l2_bytes = attr(d->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &r);
    in->clock_khz = attr(d->dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &r);
    in->memory_clock_khz = attr(d->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &r);
    in->memory_bus_bits = attr(d->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &r);
    in->driver_version = vyre_cu.version;
    in->max_threads_per_sm = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &r);
    in->max_blocks_per_sm = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, &r);
    in->registers_per_block = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &r);
    in->registers_per_sm = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &r);
    in->shared_bytes_per_sm =
        attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &r);
    in->concurrent_kernels = attr(d->dev, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, &r) != 0;
    /* A limit left at 0 would refuse every launch later with a misleading message. */
    if (r != CUDA_SUCCESS) return vyre_cu_fail(d, r, "cuDeviceGetAttribute", NULL, err);
    return VYRE_OK;
}

/* The PTX target (target.c), chosen at open so that a device vyre cannot serve, or a
 * driver too old for every target it could run, is refused here with its Fix, before
 * any program is compiled or JIT-ed. */
static enum vyre_status choose_target(struct vyre_cuda_device *d, struct vyre_error *err) {
    struct vyre_cuda_info *in = &d->info;
    struct vyre_cuda_target t;
    struct vyre_error e;
    if (vyre_cuda_target_choose(in->sm, in->driver_version, &t, &e) != VYRE_OK)
        return vyre_error_set(err, e.status, "device %d (%s): %s", d->ordinal, in->name, e.message);
    in->target = t.sm;
    snprintf(in->target_isa, sizeof in->target_isa, "%s", t.isa);
    snprintf(in->target_reason, sizeof in->target_reason, "%s", t.reason);
    return VYRE_OK;
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    return (end && *end == '\0') ? (uint64_t)v : dflt;
}

/* Releases what open acquired, in reverse; only touches the driver while the
 * context is still ours (not lost, not reset by a newer object). */
static void teardown(struct vyre_cuda_device *d) {
    bool alive = vyre_cu_alive(d);
    if (d->ctx && alive) vyre_cu.cuCtxSetCurrent(d->ctx);
    vyre_cu_caches_destroy(d);
    vyre_cu_debug_destroy(d);
    vyre_cu_pool_destroy(d, &d->pool);
    vyre_cu_pool_destroy(d, &d->pinned);
    if (alive) {
        if (d->ev_start) vyre_cu.cuEventDestroy(d->ev_start);
        if (d->ev_stop) vyre_cu.cuEventDestroy(d->ev_stop);
        if (d->stream) vyre_cu.cuStreamDestroy(d->stream);
    }
    /* The retain is a reference count on the primary context. A reset does not
     * drop it, and releasing after a reset is documented as safe: always return it. */
    if (d->ctx_retained) vyre_cu.cuDevicePrimaryCtxRelease(d->dev);
    free(d);
}

enum vyre_status vyre_cuda_device_open(int ordinal, vyre_cuda_device **out,
                                       struct vyre_error *err) {
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_device_open: out is NULL. "
                              "Fix: pass a pointer to receive the device.");
    *out = NULL;
    /* Where opening goes (be:stats().open_*_ns): the driver's load and cuInit are the
     * process's (paid by its first CUDA call), the rest this object's. */
    uint64_t t_open = vyre_cu_now_ns();
    const struct vyre_cu_driver *drv = vyre_cu_load();
    if (!drv->usable) return vyre_error_set(err, VYRE_ERR_NO_CUDA, "%s", drv->reason);
    if (ordinal < 0 || ordinal >= drv->device_count || ordinal >= VYRE_CU_MAX_ORDINALS)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "device %d does not exist: this machine has %d CUDA device%s "
                              "(ordinals 0..%d). Fix: pass an ordinal below vyre.cuda.count().",
                              ordinal, drv->device_count, drv->device_count == 1 ? "" : "s",
                              drv->device_count - 1);
    struct vyre_cuda_device *d = calloc(1, sizeof *d);
    if (!d)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "out of host memory opening device %d. "
                              "Fix: free memory.",
                              ordinal);
    d->refs = 1;
    d->ordinal = ordinal;
    struct ordinal_state *o = &ordinals[ordinal];
    enum vyre_status st;
    CUresult r = vyre_cu.cuDeviceGet(&d->dev, ordinal);
    if (r != CUDA_SUCCESS) {
        st = vyre_cu_fail(NULL, r, "cuDeviceGet", NULL, err);
        free(d);
        return st;
    }
    bool was_lost = atomic_load(&o->lost);
    if (was_lost) {
        /* A sticky fault poisoned the primary context: destroy it so the retain
         * below creates a fresh one. Older objects see the generation change. */
        r = vyre_cu.cuDevicePrimaryCtxReset(d->dev);
        if (r != CUDA_SUCCESS) {
            st = vyre_cu_fail(NULL, r, "cuDevicePrimaryCtxReset", NULL, err);
            free(d);
            return st;
        }
        atomic_fetch_add(&o->generation, 1u);
        atomic_store(&o->lost, false);
    }
    d->generation = atomic_load(&o->generation);
    uint64_t t_ctx = vyre_cu_now_ns();
    r = vyre_cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
    if (r != CUDA_SUCCESS && was_lost) {
        /* Measured on driver 580: an illegal-address fault stays sticky for the
         * whole process even after cuDevicePrimaryCtxReset, so say so plainly. */
        struct vyre_error cause = o->cause;
        atomic_store(&o->lost, true);
        free(d);
        return vyre_error_set(err, VYRE_ERR_DEVICE_LOST,
                              "device %d cannot be reopened in this process: the driver keeps "
                              "the earlier fault sticky even after resetting the primary context "
                              "(cuDevicePrimaryCtxRetain returned %d). The fault was: %s Fix: "
                              "restart the process, and fix the kernel that faulted.",
                              ordinal, (int)r, cause.message);
    }
    /* From here failures pass d, so a sticky one marks the ordinal lost and the next
     * open resets the context even when no other object of the ordinal notices. */
    if (r != CUDA_SUCCESS) {
        st = vyre_cu_fail(d, r, "cuDevicePrimaryCtxRetain", NULL, err);
        free(d);
        return st;
    }
    d->ctx_retained = true;
    st = VYRE_OK;
    const char *call = "cuCtxSetCurrent";
    r = vyre_cu.cuCtxSetCurrent(d->ctx);
    uint64_t t_stream = vyre_cu_now_ns();
    if (r == CUDA_SUCCESS) {
        call = "cuStreamCreate";
        r = vyre_cu.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuEventCreate";
        r = vyre_cu.cuEventCreate(&d->ev_start, CU_EVENT_DEFAULT);
    }
    if (r == CUDA_SUCCESS) r = vyre_cu.cuEventCreate(&d->ev_stop, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, call, NULL, err);
    uint64_t t_probe = vyre_cu_now_ns();
    if (st == VYRE_OK) st = probe_info(d, err);
    if (st == VYRE_OK) st = choose_target(d, err);
    if (st != VYRE_OK) {
        teardown(d);
        return st;
    }
    uint64_t dflt_cap = d->info.memory_bytes / 8;
    if (dflt_cap > (UINT64_C(1) << 30)) dflt_cap = UINT64_C(1) << 30;
    vyre_cu_pool_init(&d->pool, false, env_u64("VYRE_POOL_MAX_BYTES", dflt_cap));
    vyre_cu_pool_init(&d->pinned, true, env_u64("VYRE_PINNED_MAX_BYTES", UINT64_C(64) << 20));
    /* Nothing else is acquired at open: pools, modules and debug counters come with
     * their first use. */
    uint64_t t_end = vyre_cu_now_ns();
    d->st.open_ns = t_end - t_open;
    d->st.open_dlopen_ns = drv->dlopen_ns;
    d->st.open_init_ns = drv->init_ns;
    d->st.open_ctx_ns = t_stream - t_ctx;
    d->st.open_stream_ns = t_probe - t_stream;
    d->st.open_probe_ns = t_end - t_probe;
    *out = d;
    return VYRE_OK;
}

void vyre_cuda_device_retain(vyre_cuda_device *d) {
    if (d) d->refs++;
}

void vyre_cuda_device_release(vyre_cuda_device *d) {
    if (!d || --d->refs > 0) return;
    teardown(d);
}

enum vyre_status vyre_cuda_device_info(vyre_cuda_device *d, struct vyre_cuda_info *out,
                                       struct vyre_error *err) {
    if (!d || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_device_info: NULL "
                              "argument. Fix: pass a device and an "
                              "info struct.");
    /* Capabilities were probed at open; they stay readable on a lost device. */
    *out = d->info;
    return VYRE_OK;
}

bool vyre_cuda_device_lost(const vyre_cuda_device *d) {
    if (!d) return false;
    if (d->lost) return true;
    const struct ordinal_state *o = &ordinals[d->ordinal];
    return atomic_load(&o->generation) != d->generation || atomic_load(&o->lost);
}

void vyre_cuda_set_oom_handler(vyre_cuda_device *d, vyre_cuda_oom_fn fn, void *ud) {
    if (!d) return;
    d->oom = fn;
    d->oom_ud = ud;
}

enum vyre_status vyre_cu_sync(struct vyre_cuda_device *d, const char *program,
                              struct vyre_error *err) {
    d->st.syncs++;
    VYRE_CU_CHECK(d, vyre_cu.cuStreamSynchronize(d->stream), "cuStreamSynchronize", program, err);
    return VYRE_OK;
}

enum vyre_status vyre_cuda_synchronize(vyre_cuda_device *d, struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    return vyre_cu_sync(d, NULL, err);
}

enum vyre_status vyre_cuda_trim(vyre_cuda_device *d, struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    /* Blocks in the pools may still be read by queued copies: wait first. */
    st = vyre_cu_sync(d, NULL, err);
    if (st != VYRE_OK) return st;
    vyre_cu_pool_trim(d, &d->pool);
    vyre_cu_pool_trim(d, &d->pinned);
    vyre_cu_modules_trim(d);
    return VYRE_OK;
}

void vyre_cuda_device_stats(vyre_cuda_device *d, struct vyre_cuda_stats *out) {
    if (!out) return;
    if (!d) {
        memset(out, 0, sizeof *out);
        return;
    }
    d->st.pool_bytes = d->pool.held;
    d->st.pinned_bytes = d->pinned.held;
    *out = d->st;
}

uint64_t vyre_cuda_now_ns(void) { return vyre_cu_now_ns(); }
