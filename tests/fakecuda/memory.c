/* memory.c — device memory as host memory: a CUdeviceptr is the address of a malloc'd
 * block (registered, so frees and copies are checked against live allocations), the
 * device's size is VYRE_FAKECUDA_MEMORY (an allocation past it is OUT_OF_MEMORY, as on
 * a full device), and new blocks start filled with 0xA5 — device memory is not zeroed,
 * so a runtime that forgets to clear a buffer shows it. Copies and memsets run at once
 * and advance the virtual clock. */
#include <stdlib.h>
#include <string.h>

#include "fake.h"

#define POISON_BYTES (1u << 20) /* fill at most this much of a new block */

static void clock_bytes(size_t n) { fake_clock_ns += 500 + n / 16; }

CUresult fake_cuMemAlloc(CUdeviceptr *dptr, size_t bytes) {
    CUresult r = fake_begin("cuMemAlloc", F_CTX);
    struct fake_ctx *cx = fake_current;
    if (r == CUDA_SUCCESS && (!dptr || bytes == 0)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && bytes > fake_cfg.memory - cx->mem_used) r = CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_mem *m = NULL;
    if (r == CUDA_SUCCESS) {
        m = fake_obj_new(FK_MEM, sizeof *m, cx);
        if (m) m->base = malloc(bytes);
        if (!m || !m->base) {
            if (m) fake_obj_free(m);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r == CUDA_SUCCESS) {
        m->size = bytes;
        memset(m->base, 0xA5, bytes < POISON_BYTES ? bytes : POISON_BYTES);
        cx->mem_used += bytes;
        *dptr = (CUdeviceptr)(uintptr_t)m->base;
    }
    fake_end();
    return r;
}

CUresult fake_cuMemFree(CUdeviceptr dptr) {
    CUresult r = fake_begin("cuMemFree", F_CTX);
    if (r == CUDA_SUCCESS) {
        struct fake_mem *m = fake_obj_find(FK_MEM, (void *)(uintptr_t)dptr);
        if (!m) {
            r = fake_misuse(CUDA_ERROR_INVALID_VALUE,
                            "cuMemFree(0x%llx): not a live allocation (double free or stale)",
                            (unsigned long long)dptr);
        } else {
            fake_destroy(&m->h);
        }
    }
    fake_end();
    return r;
}

CUresult fake_cuMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    CUresult r = fake_begin("cuMemGetInfo", F_CTX);
    if (r == CUDA_SUCCESS && (!free_bytes || !total_bytes)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *total_bytes = (size_t)fake_cfg.memory;
        uint64_t used = fake_current->mem_used;
        *free_bytes = (size_t)(used < fake_cfg.memory ? fake_cfg.memory - used : 0);
    }
    fake_end();
    return r;
}

CUresult fake_cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags) {
    CUresult r = fake_begin("cuMemHostAlloc", F_CTX);
    if (r == CUDA_SUCCESS && (!pp || bytes == 0 || flags > 0xf)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_mem *m = fake_obj_new(FK_HOST, sizeof *m, fake_current);
        if (m) m->base = malloc(bytes);
        if (!m || !m->base) {
            if (m) fake_obj_free(m);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            m->size = bytes;
            *pp = m->base;
        }
    }
    fake_end();
    return r;
}

CUresult fake_cuMemFreeHost(void *p) {
    CUresult r = fake_begin("cuMemFreeHost", F_CTX);
    if (r == CUDA_SUCCESS) {
        struct fake_mem *m = fake_obj_find(FK_HOST, p);
        if (!m)
            r = fake_misuse(CUDA_ERROR_INVALID_VALUE,
                            "cuMemFreeHost(%p): not a live pinned block (double free or stale)", p);
        else fake_destroy(&m->h);
    }
    fake_end();
    return r;
}

/* The device range [p, p+n) of a copy, checked against live allocations. */
static CUresult device_range(const char *call, CUdeviceptr p, size_t n, char **out) {
    struct fake_mem *m = fake_mem_find((uint64_t)p, (uint64_t)n);
    if (!m)
        return fake_misuse(CUDA_ERROR_INVALID_VALUE,
                           "%s: device range [0x%llx, +%zu) is not inside a live allocation", call,
                           (unsigned long long)p, n);
    *out = (char *)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult copy_begin(const char *call, CUstream stream, const void *host, size_t n,
                           struct fake_stream **st) {
    CUresult r = fake_begin(call, F_CTX);
    if (r != CUDA_SUCCESS) return r;
    *st = fake_stream_get(stream, &r);
    if (r != CUDA_SUCCESS) return r;
    if (!host && n) return fake_misuse(CUDA_ERROR_INVALID_VALUE, "%s: host pointer is NULL", call);
    return fake_stream_plain_op(*st);
}

CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream) {
    struct fake_stream *st = NULL;
    char *d = NULL;
    CUresult r = copy_begin("cuMemcpyHtoDAsync", stream, src, bytes, &st);
    if (r == CUDA_SUCCESS) r = device_range("cuMemcpyHtoDAsync", dst, bytes, &d);
    if (r == CUDA_SUCCESS) {
        memmove(d, src, bytes);
        clock_bytes(bytes);
    }
    fake_end();
    return r;
}

CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream) {
    struct fake_stream *st = NULL;
    char *s = NULL;
    CUresult r = copy_begin("cuMemcpyDtoHAsync", stream, dst, bytes, &st);
    if (r == CUDA_SUCCESS) r = device_range("cuMemcpyDtoHAsync", src, bytes, &s);
    if (r == CUDA_SUCCESS) {
        memmove(dst, s, bytes);
        clock_bytes(bytes);
    }
    fake_end();
    return r;
}

CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
    struct fake_stream *st = NULL;
    char *d = NULL;
    CUresult r = copy_begin("cuMemsetD8Async", stream, &value, n, &st);
    if (r == CUDA_SUCCESS) r = device_range("cuMemsetD8Async", dst, n, &d);
    if (r == CUDA_SUCCESS) {
        memset(d, value, n);
        clock_bytes(n);
    }
    fake_end();
    return r;
}
