/* peer.c — the fake driver's entries for several devices: peer access (every pair
 * may access each other unless VYRE_FAKECUDA_PEER=0, so specs see both the peer and
 * the staged path), peer copies (device memory is host memory: a memmove between two
 * live allocations), cross-stream waits and stream queries (streams run everything at
 * once, so there is never anything to wait for), and vyre_fakecuda_stream_host, the
 * hook through which the fake NCCL puts a collective in stream order: run now, or
 * recorded into a graph while the stream captures. */
#include <stdlib.h>
#include <string.h>

#include "fake.h"

static bool ordinal_ok(CUdevice d) { return d >= 0 && d < fake_cfg.devices; }

CUresult fake_cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
    CUresult r = fake_begin("cuDeviceCanAccessPeer", 0);
    if (r == CUDA_SUCCESS && (!can || !ordinal_ok(dev) || !ordinal_ok(peer)))
        r = can ? FAKE_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *can = fake_cfg.peer && dev != peer;
    fake_end();
    return r;
}

CUresult fake_cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
    CUresult r = fake_begin("cuCtxEnablePeerAccess", F_CTX);
    struct fake_ctx *p = (struct fake_ctx *)(void *)peer;
    if (r == CUDA_SUCCESS &&
        (flags != 0 || !p || p < fake_ctxs || p >= fake_ctxs + FAKE_MAX_DEVICES))
        r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "cuCtxEnablePeerAccess: bad context or flags");
    if (r == CUDA_SUCCESS && (p == fake_current || !fake_cfg.peer))
        r = fake_misuse(FAKE_NOT_SUPPORTED, "cuCtxEnablePeerAccess: peer access not possible");
    fake_end();
    return r;
}

CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                CUcontext src_ctx, size_t bytes, CUstream stream) {
    CUresult r = fake_begin("cuMemcpyPeerAsync", F_CTX);
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS) r = fake_stream_plain_op(st);
    struct fake_mem *md = NULL, *ms = NULL;
    if (r == CUDA_SUCCESS) {
        md = fake_mem_find((uint64_t)dst, (uint64_t)bytes);
        ms = fake_mem_find((uint64_t)src, (uint64_t)bytes);
        if (!md || !ms)
            r = fake_misuse(CUDA_ERROR_INVALID_VALUE,
                            "cuMemcpyPeerAsync: a range of %zu bytes is not inside a live "
                            "allocation",
                            bytes);
        else if ((void *)md->h.ctx != (void *)dst_ctx || (void *)ms->h.ctx != (void *)src_ctx)
            r = fake_misuse(CUDA_ERROR_INVALID_VALUE,
                            "cuMemcpyPeerAsync: a pointer does not belong to the context given");
    }
    if (r == CUDA_SUCCESS) {
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
        fake_clock_ns += 500 + bytes / 32;
    }
    fake_end();
    return r;
}

CUresult fake_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
    CUresult r = fake_begin("cuStreamWaitEvent", F_CTX);
    if (r == CUDA_SUCCESS) fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS && (flags != 0 || !fake_obj_find(FK_EVENT, event)))
        r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "cuStreamWaitEvent: not a live event");
    fake_end();
    return r;
}

CUresult fake_cuStreamQuery(CUstream stream) {
    CUresult r = fake_begin("cuStreamQuery", F_CTX);
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS && st && st->capturing) r = fake_stream_plain_op(st);
    fake_end();
    return r;
}

FAKE_API int vyre_fakecuda_stream_host(CUstream stream, void (*fn)(void *), void *ud);

/* Runs fn(ud) in the order of `stream` (of the current context): now, or at every
 * replay of the graph the stream is capturing. Returns a CUresult. */
int vyre_fakecuda_stream_host(CUstream stream, void (*fn)(void *), void *ud) {
    CUresult r = fake_begin("vyre_fakecuda_stream_host", 0);
    /* NCCL issues a group's calls on their own devices' streams whatever context is
     * current: run in the stream's context. */
    struct fake_stream *st = stream ? fake_obj_find(FK_STREAM, stream) : NULL;
    if (r == CUDA_SUCCESS && stream && !st)
        r = fake_misuse(FAKE_INVALID_HANDLE, "vyre_fakecuda_stream_host: not a live stream");
    if (r == CUDA_SUCCESS && st && st->h.ctx->fault != CUDA_SUCCESS) r = st->h.ctx->fault;
    if (r == CUDA_SUCCESS) {
        struct fake_launch l;
        memset(&l, 0, sizeof l);
        l.host = fn;
        l.host_ud = ud;
        r = fake_stream_submit(st, &l);
    }
    fake_end();
    return (int)r;
}
