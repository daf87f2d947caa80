/* device.c — the fake's devices and primary contexts: ordinals, names, attributes
 * (an sm_XX device shaped like a small A100, configured by VYRE_FAKECUDA_*: any SM from
 * 50 to 200, so specs open sm_72 ... sm_121, an unknown sm_130 and a refused sm_60; the
 * per-SM limits stay the A100's for every SM, limits the fake's own launches and
 * occupancy answer consistently, not a model of each part), the
 * primary context of each ordinal (retain/release counting, reset), the per-thread
 * current context, and sticky faults, which poison a context until it is reset
 * (or, with VYRE_FAKECUDA_PERSIST=1, for the rest of the process, as driver 580
 * does after an illegal address). */
#include <stdio.h>
#include <string.h>

#include "fake.h"

static CUresult device_ok(CUdevice dev) {
    if (!fake_initialized) return FAKE_NOT_INITIALIZED;
    if (dev < 0 || dev >= fake_cfg.devices) return FAKE_INVALID_DEVICE;
    return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult r = fake_begin("cuDeviceGet", 0);
    if (r == CUDA_SUCCESS && !device) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = device_ok(ordinal);
    if (r == CUDA_SUCCESS) *device = ordinal;
    fake_end();
    return r;
}

CUresult fake_cuDeviceGetCount(int *count) {
    CUresult r = fake_begin("cuDeviceGetCount", 0);
    if (r == CUDA_SUCCESS && !count) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !fake_initialized) r = FAKE_NOT_INITIALIZED;
    if (r == CUDA_SUCCESS) *count = fake_cfg.devices;
    fake_end();
    return r;
}

CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
    CUresult r = fake_begin("cuDeviceGetName", 0);
    if (r == CUDA_SUCCESS && (!name || len <= 0)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = device_ok(dev);
    if (r == CUDA_SUCCESS)
        snprintf(name, (size_t)len, "vyre fakecuda %d (sm_%u)", (int)dev, fake_cfg.sm);
    fake_end();
    return r;
}

static int attribute(CUdevice_attribute a, bool *ok) {
    *ok = true;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 166912;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1410000;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return fake_cfg.sm_count;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 1215000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 40 << 20;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return (int)fake_cfg.sm / 10;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return (int)fake_cfg.sm % 10;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return fake_cfg.cooperative ? 1 : 0;
    /* per-SM limits of an A100 (sm_80), which the default fake device claims to be; other
     * SMs keep them (real parts differ, e.g. sm_75 has 1024 threads and 64 KiB per SM) */
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 167936;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    default: *ok = false; return 0;
    }
}

CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev) {
    CUresult r = fake_begin("cuDeviceGetAttribute", 0);
    if (r == CUDA_SUCCESS && !value) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = device_ok(dev);
    if (r == CUDA_SUCCESS) {
        bool ok;
        int v = attribute(attrib, &ok);
        if (ok) *value = v;
        else r = CUDA_ERROR_INVALID_VALUE;
    }
    fake_end();
    return r;
}

CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
    CUresult r = fake_begin("cuDeviceTotalMem", 0);
    if (r == CUDA_SUCCESS && !bytes) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = device_ok(dev);
    if (r == CUDA_SUCCESS) *bytes = (size_t)fake_cfg.memory;
    fake_end();
    return r;
}

/* ---- primary contexts ---------------------------------------------------------- */

static CUcontext handle_of(struct fake_ctx *c) { return (CUcontext)(void *)c; }

static struct fake_ctx *ctx_of(CUcontext h) {
    for (int i = 0; i < FAKE_MAX_DEVICES; i++)
        if ((void *)h == (void *)&fake_ctxs[i]) return &fake_ctxs[i];
    return NULL;
}

/* Ends the context's life: its objects die, a thread that has it current keeps a
 * handle that fails with INVALID_CONTEXT until another is made current. */
static void ctx_reset(struct fake_ctx *c) {
    fake_ctx_destroy_objects(c);
    c->gen++;
    if (!fake_cfg.persist) c->fault = CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    CUresult r = fake_begin("cuDevicePrimaryCtxRetain", 0);
    if (r == CUDA_SUCCESS && !ctx) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = device_ok(dev);
    if (r == CUDA_SUCCESS) {
        struct fake_ctx *c = &fake_ctxs[dev];
        /* A persistent sticky fault: the driver refuses the context for the process. */
        if (fake_cfg.persist && c->fault != CUDA_SUCCESS) r = c->fault;
        else {
            c->refs++;
            *ctx = handle_of(c);
        }
    }
    fake_end();
    return r;
}

CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
    CUresult r = fake_begin("cuDevicePrimaryCtxRelease", 0);
    if (r == CUDA_SUCCESS) r = device_ok(dev);
    if (r == CUDA_SUCCESS) {
        struct fake_ctx *c = &fake_ctxs[dev];
        if (c->refs <= 0) {
            r = fake_misuse(CUDA_ERROR_INVALID_CONTEXT,
                            "cuDevicePrimaryCtxRelease(%d) without a matching retain", (int)dev);
        } else if (--c->refs == 0) {
            ctx_reset(c);
        }
    }
    fake_end();
    return r;
}

CUresult fake_cuDevicePrimaryCtxReset(CUdevice dev) {
    CUresult r = fake_begin("cuDevicePrimaryCtxReset", 0);
    if (r == CUDA_SUCCESS) r = device_ok(dev);
    if (r == CUDA_SUCCESS) ctx_reset(&fake_ctxs[dev]);
    fake_end();
    return r;
}

CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
    CUresult r = fake_begin("cuCtxSetCurrent", 0);
    if (r == CUDA_SUCCESS) {
        struct fake_ctx *c = ctx_of(ctx);
        if (ctx && !c)
            r = fake_misuse(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent(%p): not a context",
                            (void *)ctx);
        else if (c && c->refs <= 0)
            r = fake_misuse(CUDA_ERROR_INVALID_CONTEXT,
                            "cuCtxSetCurrent: the primary context of device %d is not retained",
                            c->dev);
        else fake_current = c;
    }
    fake_end();
    return r;
}

CUresult fake_cuCtxGetCurrent(CUcontext *ctx) {
    CUresult r = fake_begin("cuCtxGetCurrent", 0);
    if (r == CUDA_SUCCESS && !ctx) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *ctx = fake_current ? handle_of(fake_current) : NULL;
    fake_end();
    return r;
}
