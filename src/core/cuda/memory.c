/* memory.c — device memory: cuMemAlloc with the out-of-memory protocol (host
 * callback that runs a full Lua GC, trim the pools, retry once, then a clear error
 * with sizes), the size-class caching pools (transient device memory for `run`,
 * pinned host staging), and the Buffer object with checked byte-range copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

#define MIN_CLASS 8u /* 256 bytes */

unsigned vyre_cu_size_class(uint64_t bytes) {
    unsigned c = MIN_CLASS;
    while (c < VYRE_CU_NCLASSES - 1 && (UINT64_C(1) << c) < bytes) c++;
    return c;
}

static void trim_all(struct vyre_cuda_device *d) {
    /* Cached blocks may be in use by queued copies of an earlier run; the stream
     * has finished them once it is idle. */
    if (vyre_cu_alive(d)) vyre_cu.cuStreamSynchronize(d->stream);
    vyre_cu_pool_trim(d, &d->pool);
    vyre_cu_pool_trim(d, &d->pinned);
}

static CUresult raw_alloc(bool pinned, uint64_t bytes, uint64_t *out) {
    if (pinned) {
        void *h = NULL;
        CUresult r = vyre_cu.cuMemHostAlloc(&h, (size_t)bytes, 0);
        *out = (uint64_t)(uintptr_t)h;
        return r;
    }
    CUdeviceptr p = 0;
    CUresult r = vyre_cu.cuMemAlloc(&p, (size_t)bytes);
    *out = (uint64_t)p;
    return r;
}

static CUresult raw_free(bool pinned, uint64_t block) {
    if (pinned) return vyre_cu.cuMemFreeHost((void *)(uintptr_t)block);
    return vyre_cu.cuMemFree((CUdeviceptr)block);
}

/* The out-of-memory protocol shared by device and pinned allocations. */
static enum vyre_status alloc_retry(struct vyre_cuda_device *d, bool pinned, uint64_t bytes,
                                    uint64_t *out, const char *what, struct vyre_error *err) {
    CUresult r = raw_alloc(pinned, bytes, out);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        d->st.oom_retries++;
        if (d->oom) d->oom(d->oom_ud); /* may free buffers through finalizers */
        if (d->lost) return vyre_cu_enter(d, err);
        vyre_cu.cuCtxSetCurrent(d->ctx); /* finalizers may have switched contexts */
        trim_all(d);
        r = raw_alloc(pinned, bytes, out);
    }
    if (r == CUDA_SUCCESS) return VYRE_OK;
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        return vyre_cu_fail(d, r, pinned ? "cuMemHostAlloc" : "cuMemAlloc", NULL, err);
    size_t free_b = 0, total_b = 0;
    vyre_cu.cuMemGetInfo(&free_b, &total_b);
    vyre_error_set(err, VYRE_ERR_CUDA,
                   "out of %s memory allocating %llu bytes for %s (%s: "
                   "CUDA_ERROR_OUT_OF_MEMORY), even after a full garbage collection and "
                   "trimming the pools (device: %llu of %llu bytes free; live buffers hold %llu "
                   "bytes). Fix: free buffers you no longer need (buf:free()), keep fewer "
                   "results alive, or process the data in smaller pieces.",
                   pinned ? "pinned host" : "device", (unsigned long long)bytes, what,
                   pinned ? "cuMemHostAlloc" : "cuMemAlloc", (unsigned long long)free_b,
                   (unsigned long long)total_b, (unsigned long long)d->st.live_buffer_bytes);
    if (err) {
        snprintf(err->call, sizeof err->call, "%s", pinned ? "cuMemHostAlloc" : "cuMemAlloc");
        snprintf(err->result, sizeof err->result, "CUDA_ERROR_OUT_OF_MEMORY");
    }
    return VYRE_ERR_CUDA;
}

enum vyre_status vyre_cu_malloc(struct vyre_cuda_device *d, uint64_t bytes, CUdeviceptr *out,
                                const char *what, struct vyre_error *err) {
    uint64_t block = 0;
    enum vyre_status st = alloc_retry(d, false, bytes ? bytes : 1, &block, what, err);
    *out = (CUdeviceptr)block;
    return st;
}

/* ---- size-class pools --------------------------------------------------- */

void vyre_cu_pool_init(struct vyre_cu_pool *pool, bool pinned, uint64_t cap) {
    memset(pool, 0, sizeof *pool);
    pool->pinned = pinned;
    pool->cap = cap;
}

enum vyre_status vyre_cu_pool_get(struct vyre_cuda_device *d, struct vyre_cu_pool *pool,
                                  uint64_t bytes, uint64_t *out, uint64_t *cls_bytes,
                                  struct vyre_error *err) {
    unsigned c = vyre_cu_size_class(bytes);
    uint64_t size = UINT64_C(1) << c;
    struct vyre_cu_freelist *fl = &pool->cls[c];
    *cls_bytes = size;
    if (fl->count > 0) {
        *out = fl->items[--fl->count];
        pool->held -= size;
        d->st.pool_hits++;
        return VYRE_OK;
    }
    d->st.pool_misses++;
    return alloc_retry(d, pool->pinned, size, out,
                       pool->pinned ? "pinned staging" : "a transient buffer", err);
}

void vyre_cu_pool_put(struct vyre_cuda_device *d, struct vyre_cu_pool *pool, uint64_t block,
                      uint64_t cls_bytes) {
    if (!block) return;
    if (!vyre_cu_alive(d)) return; /* the context owns it and frees it on reset */
    unsigned c = vyre_cu_size_class(cls_bytes);
    struct vyre_cu_freelist *fl = &pool->cls[c];
    if (pool->held + cls_bytes <= pool->cap) {
        if (fl->count == fl->cap) {
            uint32_t ncap = fl->cap ? fl->cap * 2 : 8;
            uint64_t *n = realloc(fl->items, ncap * sizeof *n);
            if (n) {
                fl->items = n;
                fl->cap = ncap;
            }
        }
        if (fl->count < fl->cap) {
            fl->items[fl->count++] = block;
            pool->held += cls_bytes;
            return;
        }
    }
    CUresult r = raw_free(pool->pinned, block);
    if (r != CUDA_SUCCESS) {
        struct vyre_error e;
        vyre_cu_fail(d, r, pool->pinned ? "cuMemFreeHost" : "cuMemFree", NULL, &e);
        vyre_cu_defer(d, &e);
    }
}

void vyre_cu_pool_trim(struct vyre_cuda_device *d, struct vyre_cu_pool *pool) {
    bool alive = vyre_cu_alive(d);
    for (unsigned c = 0; c < VYRE_CU_NCLASSES; c++) {
        struct vyre_cu_freelist *fl = &pool->cls[c];
        for (uint32_t i = 0; i < fl->count; i++) {
            if (!alive) continue;
            CUresult r = raw_free(pool->pinned, fl->items[i]);
            if (r != CUDA_SUCCESS) {
                struct vyre_error e;
                vyre_cu_fail(d, r, pool->pinned ? "cuMemFreeHost" : "cuMemFree", NULL, &e);
                vyre_cu_defer(d, &e);
                alive = vyre_cu_alive(d);
            }
        }
        fl->count = 0;
    }
    pool->held = 0;
}

void vyre_cu_pool_destroy(struct vyre_cuda_device *d, struct vyre_cu_pool *pool) {
    vyre_cu_pool_trim(d, pool);
    for (unsigned c = 0; c < VYRE_CU_NCLASSES; c++) {
        free(pool->cls[c].items);
        pool->cls[c].items = NULL;
        pool->cls[c].cap = 0;
    }
}

/* ---- buffers -------------------------------------------------------------- */

enum vyre_status vyre_cu_check_range(const struct vyre_cuda_buffer *b, uint64_t offset,
                                     uint64_t nbytes, const char *fname, struct vyre_error *err) {
    if (offset > b->bytes || nbytes > b->bytes - offset)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: byte range [%llu, %llu) is outside the %s buffer of %llu "
                              "elements (%llu bytes). Fix: keep offset + size within %llu bytes.",
                              fname, (unsigned long long)offset,
                              (unsigned long long)(offset + nbytes), vyre_type_name(b->type),
                              (unsigned long long)b->count, (unsigned long long)b->bytes,
                              (unsigned long long)b->bytes);
    return VYRE_OK;
}

enum vyre_status vyre_cuda_buffer_alloc(vyre_cuda_device *d, enum vyre_type t, uint64_t count,
                                        vyre_cuda_buffer **out, struct vyre_error *err) {
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_buffer_alloc: out is NULL. "
                              "Fix: pass a pointer to receive the buffer.");
    *out = NULL;
    if ((unsigned)t >= VYRE_TYPE_COUNT)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "buffer: unknown element type %d. Fix: use "
                              "one of bool i32 u32 i64 u64 f32 f64.",
                              (int)t);
    if (count > UINT32_MAX)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "buffer: %llu elements exceed the kernel ABI limit of 4294967295 "
                              "(element counts are u32). Fix: split the data into several "
                              "buffers.",
                              (unsigned long long)count);
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    struct vyre_cuda_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "buffer: out of host memory. Fix: free "
                              "memory.");
    b->type = t;
    b->count = count;
    b->bytes = count * vyre_type_size(t);
    char what[96];
    snprintf(what, sizeof what, "a %s buffer of %llu elements", vyre_type_name(t),
             (unsigned long long)count);
    st = vyre_cu_malloc(d, b->bytes, &b->ptr, what, err);
    if (st != VYRE_OK) {
        free(b);
        return st;
    }
    b->dev = d;
    b->generation = d->generation;
    vyre_cuda_device_retain(d);
    d->st.live_buffers++;
    d->st.live_buffer_bytes += b->bytes;
    if (d->st.live_buffer_bytes > d->st.peak_buffer_bytes)
        d->st.peak_buffer_bytes = d->st.live_buffer_bytes;
    *out = b;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_buffer_view(vyre_cuda_buffer *parent, uint64_t first, uint64_t count,
                                       vyre_cuda_buffer **out, struct vyre_error *err) {
    if (!out || !parent)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_buffer_view: parent or out is NULL. Fix: pass a "
                              "live buffer and a pointer to receive the view.");
    *out = NULL;
    if (first > parent->count || count > parent->count - first)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "view: elements [%llu, %llu) are outside the %s buffer of %llu "
                              "elements. Fix: keep first + count <= %llu.",
                              (unsigned long long)first, (unsigned long long)(first + count),
                              vyre_type_name(parent->type), (unsigned long long)parent->count,
                              (unsigned long long)parent->count);
    enum vyre_status st = vyre_cu_enter(parent->dev, err);
    if (st != VYRE_OK) return st;
    struct vyre_cuda_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "view: out of host memory. Fix: free memory.");
    *b = *parent;
    b->view = true;
    b->count = count;
    b->bytes = count * vyre_type_size(parent->type);
    b->ptr = parent->ptr + (CUdeviceptr)(first * vyre_type_size(parent->type));
    vyre_cuda_device_retain(b->dev);
    *out = b;
    return VYRE_OK;
}

void vyre_cuda_buffer_free(vyre_cuda_buffer *b) {
    if (!b) return;
    struct vyre_cuda_device *d = b->dev;
    if (b->view) { /* owns no memory and counts in no statistic */
        free(b);
        vyre_cuda_device_release(d);
        return;
    }
    if (b->ptr && vyre_cu_current(d)) {
        /* cuMemFree waits for work using the memory; a sticky fault reported here
         * is recorded for the next call (we may be inside __gc). */
        CUresult r = vyre_cu.cuMemFree(b->ptr);
        if (r != CUDA_SUCCESS) {
            struct vyre_error e;
            vyre_cu_fail(d, r, "cuMemFree", NULL, &e);
            vyre_cu_defer(d, &e);
        }
    }
    d->st.live_buffers--;
    d->st.live_buffer_bytes -= b->bytes;
    free(b);
    vyre_cuda_device_release(d);
}

enum vyre_type vyre_cuda_buffer_type(const vyre_cuda_buffer *b) { return b->type; }
uint64_t vyre_cuda_buffer_count(const vyre_cuda_buffer *b) { return b->count; }
uint64_t vyre_cuda_buffer_bytes(const vyre_cuda_buffer *b) { return b->bytes; }
uint64_t vyre_cuda_buffer_pointer(const vyre_cuda_buffer *b) { return (uint64_t)b->ptr; }
vyre_cuda_device *vyre_cuda_buffer_device(const vyre_cuda_buffer *b) { return b->dev; }

enum vyre_status vyre_cuda_buffer_upload(vyre_cuda_buffer *b, uint64_t offset, const void *src,
                                         uint64_t nbytes, struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(b->dev, err);
    if (st != VYRE_OK) return st;
    st = vyre_cu_check_range(b, offset, nbytes, "upload", err);
    if (st != VYRE_OK || nbytes == 0) return st;
    /* Pageable source: the driver stages it before returning, so src may be reused,
     * and the copy is ordered after launches already queued on the stream. */
    VYRE_CU_CHECK(b->dev,
                  vyre_cu.cuMemcpyHtoDAsync(b->ptr + offset, src, (size_t)nbytes, b->dev->stream),
                  "cuMemcpyHtoDAsync", NULL, err);
    b->dev->st.bytes_up += nbytes;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_buffer_download(vyre_cuda_buffer *b, uint64_t offset, void *dst,
                                           uint64_t nbytes, struct vyre_error *err) {
    struct vyre_cuda_device *d = b->dev;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    st = vyre_cu_check_range(b, offset, nbytes, "download", err);
    if (st != VYRE_OK) return st;
    if (nbytes == 0) return vyre_cu_sync(d, NULL, err);
    /* Small reads go through pinned staging (a true async copy, then one wait);
     * large ones straight into pageable memory, which the driver completes before
     * returning. */
    uint64_t stage = 0, cls = 0;
    bool staged = nbytes <= (UINT64_C(4) << 20) &&
                  vyre_cu_pool_get(d, &d->pinned, nbytes, &stage, &cls, NULL) == VYRE_OK;
    void *target = staged ? (void *)(uintptr_t)stage : dst;
    CUresult r = vyre_cu.cuMemcpyDtoHAsync(target, b->ptr + offset, (size_t)nbytes, d->stream);
    if (r != CUDA_SUCCESS) {
        if (staged) vyre_cu_pool_put(d, &d->pinned, stage, cls);
        return vyre_cu_fail(d, r, "cuMemcpyDtoHAsync", NULL, err);
    }
    st = vyre_cu_sync(d, NULL, err);
    if (st == VYRE_OK) {
        if (staged) memcpy(dst, target, (size_t)nbytes);
        d->st.bytes_down += nbytes;
    }
    if (staged) vyre_cu_pool_put(d, &d->pinned, stage, cls);
    return st;
}

enum vyre_status vyre_cuda_buffer_zero(vyre_cuda_buffer *b, struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(b->dev, err);
    if (st != VYRE_OK) return st;
    if (b->bytes == 0) return VYRE_OK;
    VYRE_CU_CHECK(b->dev, vyre_cu.cuMemsetD8Async(b->ptr, 0, (size_t)b->bytes, b->dev->stream),
                  "cuMemsetD8Async", NULL, err);
    return VYRE_OK;
}
