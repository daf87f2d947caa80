/* peer.c — copies between buffers of two devices, and the path they take: the
 * driver's peer path when cuDeviceCanAccessPeer allows it (peer access is enabled
 * once per ordered pair with cuCtxEnablePeerAccess), else staged through pinned host
 * memory. The copy is ordered like a kernel: it waits for the work queued on both
 * devices, runs on the source's stream, and later work on the destination's stream
 * waits for it (events across the two streams), so a script never synchronises by
 * hand. Also the device stream accessor that other code orders its work with. */
#include <string.h>

#include "cuda_int.h"

/* cuCtxEnablePeerAccess when access is already on (the driver's value; harmless). */
#define PEER_ALREADY_ENABLED ((CUresult)704)

/* What was decided for each ordered pair of ordinals: 0 unknown, else path + 1. */
static _Atomic int pair_path[VYRE_CU_MAX_ORDINALS][VYRE_CU_MAX_ORDINALS];

void *vyre_cuda_device_stream(vyre_cuda_device *d) { return d ? (void *)d->stream : NULL; }

const char *vyre_cuda_peer_path_name(enum vyre_cuda_peer_path p) {
    switch (p) {
    case VYRE_PEER_SAME: return "same";
    case VYRE_PEER_DIRECT: return "peer";
    case VYRE_PEER_STAGED: return "staged";
    }
    return "staged";
}

static bool peer_entries(void) {
    return vyre_cu.cuDeviceCanAccessPeer && vyre_cu.cuCtxEnablePeerAccess &&
           vyre_cu.cuMemcpyPeerAsync && vyre_cu.cuStreamWaitEvent;
}

enum vyre_status vyre_cuda_peer_path(vyre_cuda_device *src, vyre_cuda_device *dst,
                                     enum vyre_cuda_peer_path *out, struct vyre_error *err) {
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_peer_path: out is NULL. Fix: pass a pointer.");
    *out = VYRE_PEER_STAGED;
    enum vyre_status st = vyre_cu_enter(dst, err);
    if (st == VYRE_OK) st = vyre_cu_enter(src, err);
    if (st != VYRE_OK) return st;
    if (src->ordinal == dst->ordinal) {
        *out = VYRE_PEER_SAME;
        return VYRE_OK;
    }
    int known = atomic_load(&pair_path[src->ordinal][dst->ordinal]);
    if (known) {
        *out = (enum vyre_cuda_peer_path)(known - 1);
        return VYRE_OK;
    }
    int can = 0;
    if (peer_entries() && vyre_cu.cuDeviceCanAccessPeer(&can, src->dev, dst->dev) == CUDA_SUCCESS &&
        can) {
        /* The source's context reads and writes the destination's memory: enable access
         * to dst's context from src's (already current). */
        CUresult r = vyre_cu.cuCtxEnablePeerAccess(dst->ctx, 0);
        if (r == CUDA_SUCCESS || r == PEER_ALREADY_ENABLED) *out = VYRE_PEER_DIRECT;
    }
    atomic_store(&pair_path[src->ordinal][dst->ordinal], (int)*out + 1);
    return VYRE_OK;
}

enum vyre_status vyre_cuda_peer_path_of(int src_ordinal, int dst_ordinal,
                                        enum vyre_cuda_peer_path *out, struct vyre_error *err) {
    const struct vyre_cu_driver *drv = vyre_cu_load();
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_peer_path_of: out is NULL. Fix: pass a pointer.");
    *out = VYRE_PEER_STAGED;
    if (!drv->usable) return vyre_error_set(err, VYRE_ERR_NO_CUDA, "%s", drv->reason);
    if (src_ordinal < 0 || dst_ordinal < 0 || src_ordinal >= drv->device_count ||
        dst_ordinal >= drv->device_count || src_ordinal >= VYRE_CU_MAX_ORDINALS ||
        dst_ordinal >= VYRE_CU_MAX_ORDINALS)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "peer path: ordinals %d and %d are not both devices of this "
                              "machine (%d). Fix: use ordinals 0 .. count - 1.",
                              src_ordinal, dst_ordinal, drv->device_count);
    if (src_ordinal == dst_ordinal) {
        *out = VYRE_PEER_SAME;
        return VYRE_OK;
    }
    int known = atomic_load(&pair_path[src_ordinal][dst_ordinal]);
    if (known) {
        *out = (enum vyre_cuda_peer_path)(known - 1);
        return VYRE_OK;
    }
    CUdevice a = 0, b = 0;
    int can = 0;
    if (peer_entries() && vyre_cu.cuDeviceGet(&a, src_ordinal) == CUDA_SUCCESS &&
        vyre_cu.cuDeviceGet(&b, dst_ordinal) == CUDA_SUCCESS &&
        vyre_cu.cuDeviceCanAccessPeer(&can, a, b) == CUDA_SUCCESS && can)
        *out = VYRE_PEER_DIRECT;
    return VYRE_OK;
}

/* Makes `waiter`'s stream wait for the work queued so far on `on`'s stream. */
static enum vyre_status stream_after(struct vyre_cuda_device *waiter, struct vyre_cuda_device *on,
                                     struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(on, err);
    if (st != VYRE_OK) return st;
    if (!vyre_cu.cuStreamWaitEvent) return vyre_cu_sync(on, NULL, err); /* old driver */
    CUevent ev = NULL;
    VYRE_CU_CHECK(on, vyre_cu.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate", NULL,
                  err);
    CUresult r = vyre_cu.cuEventRecord(ev, on->stream);
    /* The failed call, and its device, are the ones named (a failed record was reported
     * as cuStreamWaitEvent of the other device; spec 101's peer-copy sweep checks it). */
    struct vyre_cuda_device *failed_on = on;
    const char *failed = "cuEventRecord";
    if (r == CUDA_SUCCESS) {
        st = vyre_cu_enter(waiter, err);
        failed_on = waiter;
        failed = "cuStreamWaitEvent";
        if (st == VYRE_OK) r = vyre_cu.cuStreamWaitEvent(waiter->stream, ev, 0);
    }
    /* Destroying a recorded event is allowed: the driver frees it once it completes. A
     * failed destroy is cleanup: recorded and reported at the next call, as other
     * releases are (it used to be dropped; spec 101). */
    CUresult dr = vyre_cu.cuEventDestroy(ev);
    if (dr != CUDA_SUCCESS) {
        struct vyre_error de;
        vyre_error_clear(&de);
        (void)vyre_cu_fail(on, dr, "cuEventDestroy", NULL, &de);
        vyre_cu_defer(on, &de);
    }
    if (st != VYRE_OK) return st;
    if (r != CUDA_SUCCESS) return vyre_cu_fail(failed_on, r, failed, NULL, err);
    return VYRE_OK;
}

/* Through pinned host memory: download on src's stream (waits for it), then an
 * asynchronous upload on dst's stream; the staging block returns to the pool after
 * the upload completes (the next use of the pool on dst is ordered after it). */
static enum vyre_status staged(vyre_cuda_buffer *src, uint64_t so, vyre_cuda_buffer *dst,
                               uint64_t dof, uint64_t n, struct vyre_error *err) {
    struct vyre_cuda_device *s = src->dev, *d = dst->dev;
    uint64_t block = 0, cls = 0;
    enum vyre_status st = vyre_cu_enter(s, err);
    if (st == VYRE_OK) st = vyre_cu_pool_get(s, &s->pinned, n, &block, &cls, err);
    if (st != VYRE_OK) return st;
    void *host = (void *)(uintptr_t)block;
    CUresult r = vyre_cu.cuMemcpyDtoHAsync(host, src->ptr + so, n, s->stream);
    if (r != CUDA_SUCCESS) st = vyre_cu_fail(s, r, "cuMemcpyDtoHAsync", NULL, err);
    if (st == VYRE_OK) st = vyre_cu_sync(s, NULL, err);
    if (st == VYRE_OK) st = vyre_cu_enter(d, err);
    if (st == VYRE_OK) {
        r = vyre_cu.cuMemcpyHtoDAsync(dst->ptr + dof, host, n, d->stream);
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemcpyHtoDAsync", NULL, err);
    }
    /* The block must not be reused before the upload has read it. */
    if (st == VYRE_OK) st = vyre_cu_sync(d, NULL, err);
    if (vyre_cu_current(s)) vyre_cu_pool_put(s, &s->pinned, block, cls);
    if (st == VYRE_OK) {
        s->st.bytes_down += n;
        d->st.bytes_up += n;
    }
    return st;
}

enum vyre_status vyre_cuda_buffer_copy(vyre_cuda_buffer *src, uint64_t src_off,
                                       vyre_cuda_buffer *dst, uint64_t dst_off, uint64_t nbytes,
                                       struct vyre_error *err) {
    if (!src || !dst)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "copy: a buffer is NULL. Fix: pass two live buffers.");
    enum vyre_status st = vyre_cu_check_range(src, src_off, nbytes, "copy source", err);
    if (st == VYRE_OK) st = vyre_cu_check_range(dst, dst_off, nbytes, "copy destination", err);
    if (st != VYRE_OK || nbytes == 0) return st;
    enum vyre_cuda_peer_path path;
    st = vyre_cuda_peer_path(src->dev, dst->dev, &path, err);
    if (st != VYRE_OK) return st;
    struct vyre_cuda_device *s = src->dev, *d = dst->dev;
    if (path == VYRE_PEER_STAGED) return staged(src, src_off, dst, dst_off, nbytes, err);
    if (path == VYRE_PEER_SAME) {
        /* One ordinal (maybe two device objects sharing its primary context): a
         * device-to-device copy through the peer entry with the same context. */
        st = s == d ? vyre_cu_enter(s, err) : stream_after(s, d, err);
        if (st == VYRE_OK) st = vyre_cu_enter(s, err);
        if (st != VYRE_OK) return st;
        if (!vyre_cu.cuMemcpyPeerAsync) return staged(src, src_off, dst, dst_off, nbytes, err);
        VYRE_CU_CHECK(s,
                      vyre_cu.cuMemcpyPeerAsync(dst->ptr + dst_off, d->ctx, src->ptr + src_off,
                                                s->ctx, nbytes, s->stream),
                      "cuMemcpyPeerAsync", NULL, err);
        return s == d ? VYRE_OK : stream_after(d, s, err);
    }
    st = stream_after(s, d, err); /* the copy waits for queued work on dst */
    if (st == VYRE_OK) st = vyre_cu_enter(s, err);
    if (st != VYRE_OK) return st;
    VYRE_CU_CHECK(s,
                  vyre_cu.cuMemcpyPeerAsync(dst->ptr + dst_off, d->ctx, src->ptr + src_off, s->ctx,
                                            nbytes, s->stream),
                  "cuMemcpyPeerAsync", NULL, err);
    return stream_after(d, s, err); /* later work on dst waits for the copy */
}
