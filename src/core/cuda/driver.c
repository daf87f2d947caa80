/* driver.c — loads libcuda at run time into the one entry-point table built from
 * VYRE_CU_ENTRIES (cuda_int.h), and decides whether CUDA is usable and, if not, why.
 *
 * Order (the cudarc / CUDA.jl habit): dlopen("libcuda.so.1") — never the bare
 * "libcuda.so", which on toolkit-only machines is the link stub — then reject a stub
 * (path under a stubs/ directory, or cuInit answering CUDA_ERROR_STUB_LIBRARY), then
 * cuDriverGetVersion against VYRE_CUDA_MIN_DRIVER, then resolve every base name
 * through cuGetProcAddress_v2 with the version whose ABI cuda_abi.h describes. */
#define _GNU_SOURCE /* dladdr: where libcuda came from */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

struct vyre_cu_driver vyre_cu;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

struct entry_desc {
    const char *name;
    int version;
    bool required;
    size_t offset;
};

static const struct entry_desc entries[] = {
#define VYRE_CU_DESC(n, v, req) {#n, v, req, offsetof(struct vyre_cu_driver, n)},
    VYRE_CU_ENTRIES(VYRE_CU_DESC)
#undef VYRE_CU_DESC
};

static void unusable(struct vyre_cu_driver *drv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void unusable(struct vyre_cu_driver *drv, const char *fmt, ...) {
    drv->usable = false;
    drv->status = VYRE_ERR_NO_CUDA;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(drv->reason, sizeof drv->reason, fmt, ap);
    va_end(ap);
}

static bool is_stub_path(const char *path) { return strstr(path, "/stubs/") != NULL; }

/* Where the loaded library lives, via a symbol it exports. */
static void library_path(void *handle, char *out, size_t size) {
    out[0] = '\0';
    void *sym = dlsym(handle, "cuInit");
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname) snprintf(out, size, "%s", info.dli_fname);
}

typedef vyre_cu_fn_cuInit *init_fn;
typedef vyre_cu_fn_cuDriverGetVersion *version_fn;
typedef vyre_cu_fn_cuGetProcAddress_v2 *gpa_fn;

/* Turns a dlsym'd object pointer into a function pointer without a cast that
 * -Wpedantic rejects (POSIX guarantees the representation). */
#define VYRE_FN_FROM_SYM(dst, sym) memcpy(&(dst), &(sym), sizeof(dst))

void vyre_cu_probe(const char *path, struct vyre_cu_driver *drv) {
    memset(drv, 0, sizeof *drv);
    uint64_t t0 = vyre_cu_now_ns(); /* where opening goes: be:stats().open_*_ns */
    const char *name = path ? path : "libcuda.so.1";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        unusable(drv,
                 "no CUDA driver: dlopen(\"%s\") failed: %.300s. Fix: install the NVIDIA "
                 "driver (it provides libcuda.so.1) on a machine with an NVIDIA GPU; the CUDA "
                 "toolkit alone is not enough.",
                 name, why ? why : "unknown error");
        return;
    }
    drv->handle = h;
    library_path(h, drv->path, sizeof drv->path);
    if (is_stub_path(drv->path[0] ? drv->path : name)) {
        unusable(drv,
                 "libcuda was loaded from the CUDA toolkit's stub directory (%s), which has "
                 "no driver behind it. Fix: install the NVIDIA driver and make sure no "
                 "stubs/ directory is on LD_LIBRARY_PATH.",
                 drv->path[0] ? drv->path : name);
        return;
    }
    void *s_init = dlsym(h, "cuInit"), *s_ver = dlsym(h, "cuDriverGetVersion");
    void *s_gpa = dlsym(h, "cuGetProcAddress_v2");
    init_fn f_init = NULL;
    version_fn f_ver = NULL;
    gpa_fn f_gpa = NULL;
    if (s_init) VYRE_FN_FROM_SYM(f_init, s_init);
    if (s_ver) VYRE_FN_FROM_SYM(f_ver, s_ver);
    if (s_gpa) VYRE_FN_FROM_SYM(f_gpa, s_gpa);
    if (!f_init || !f_ver) {
        unusable(drv,
                 "%s does not export cuInit/cuDriverGetVersion; it is not a CUDA driver. "
                 "Fix: reinstall the NVIDIA driver.",
                 drv->path[0] ? drv->path : name);
        return;
    }
    int version = 0;
    if (f_ver(&version) == CUDA_ERROR_STUB_LIBRARY) {
        unusable(drv,
                 "%s is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY). Fix: "
                 "install the NVIDIA driver and remove the stubs directory from "
                 "LD_LIBRARY_PATH.",
                 drv->path[0] ? drv->path : name);
        return;
    }
    drv->version = version;
    if (version < VYRE_CUDA_MIN_DRIVER || !f_gpa) {
        unusable(drv,
                 "the NVIDIA driver is too old: it supports CUDA %d.%d, vyre needs CUDA 12.0 "
                 "or newer (cuGetProcAddress_v2). Fix: install NVIDIA driver >= %s (CUDA 12.0), "
                 "or the newer one your GPU needs.",
                 version / 1000, (version % 1000) / 10,
                 vyre_cuda_linux_driver_for(VYRE_CUDA_MIN_DRIVER));
        return;
    }
    uint64_t t_init = vyre_cu_now_ns();
    CUresult r = f_init(0);
    drv->init_ns = vyre_cu_now_ns() - t_init;
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        unusable(drv,
                 "%s is the CUDA toolkit's stub library. Fix: install the NVIDIA "
                 "driver.",
                 drv->path);
        return;
    }
    if (r == CUDA_ERROR_NO_DEVICE) {
        unusable(drv, "the NVIDIA driver found no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE). "
                      "Fix: run on a machine with an NVIDIA GPU, and check "
                      "CUDA_VISIBLE_DEVICES and nvidia-smi.");
        return;
    }
    if (r != CUDA_SUCCESS) {
        unusable(drv,
                 "cuInit failed with CUresult %d. Fix: check that the NVIDIA kernel "
                 "module is loaded (nvidia-smi) and that this user may open /dev/nvidia*.",
                 (int)r);
        return;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *fn = NULL;
        CUdriverProcAddressQueryResult qr = CU_GET_PROC_ADDRESS_SUCCESS;
        r = f_gpa(entries[i].name, &fn, entries[i].version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qr);
        if (r != CUDA_SUCCESS || qr != CU_GET_PROC_ADDRESS_SUCCESS) fn = NULL;
        if (!fn && entries[i].required) {
            unusable(drv,
                     "the NVIDIA driver lacks %s (ABI of CUDA %d), which vyre needs. "
                     "Fix: update the NVIDIA driver.",
                     entries[i].name, entries[i].version);
            return;
        }
        memcpy((char *)drv + entries[i].offset, &fn, sizeof fn);
    }
    int count = 0;
    r = drv->cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        unusable(drv,
                 "the NVIDIA driver reports no CUDA device (cuDeviceGetCount: result %d, "
                 "%d devices). Fix: run on a machine with an NVIDIA GPU; check "
                 "CUDA_VISIBLE_DEVICES.",
                 (int)r, count);
        return;
    }
    drv->device_count = count;
    drv->dlopen_ns = vyre_cu_now_ns() - t0 - drv->init_ns;
    drv->usable = true;
    drv->status = VYRE_OK;
    drv->reason[0] = '\0';
}

static void load_global(void) {
    /* VYRE_LIBCUDA lets tests and odd installs name the driver file explicitly. */
    const char *path = getenv("VYRE_LIBCUDA");
    vyre_cu_probe(path && *path ? path : NULL, &vyre_cu);
}

const struct vyre_cu_driver *vyre_cu_load(void) {
    pthread_once(&load_once, load_global);
    return &vyre_cu;
}

bool vyre_cuda_available(struct vyre_error *err) {
    const struct vyre_cu_driver *drv = vyre_cu_load();
    if (drv->usable) {
        vyre_error_clear(err);
        return true;
    }
    vyre_error_set(err, VYRE_ERR_NO_CUDA, "%s", drv->reason);
    return false;
}

enum vyre_status vyre_cuda_device_count(int *out, struct vyre_error *err) {
    const struct vyre_cu_driver *drv = vyre_cu_load();
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_device_count: out is NULL. "
                              "Fix: pass an int to receive the count.");
    *out = drv->usable ? drv->device_count : 0;
    if (!drv->usable) return vyre_error_set(err, VYRE_ERR_NO_CUDA, "%s", drv->reason);
    return VYRE_OK;
}

int vyre_cuda_driver_version(void) { return vyre_cu_load()->version; }
