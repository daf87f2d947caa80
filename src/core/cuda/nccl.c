/* nccl.c — loads NCCL at run time, like driver.c loads libcuda: nothing links it, and
 * without it everything else works. The file comes from $VYRE_LIBNCCL when set (and
 * only from there), else "libnccl.so.2" on the loader's path, else the first
 * nvidia/nccl/lib/libnccl.so.2 of the Python environments where pip's NCCL wheel
 * (PyTorch's dependency) puts it — a fixed list of globs, see `search` below and
 * docs/MULTIGPU.md. Before the first dlopen NCCL_NVLS_ENABLE=0 is set unless the
 * environment sets it: NVLink multicast can put shared GPUs out of service, and vyre
 * never asks for it (nor creates driver multicast objects). Also the unique id as hex text and
 * NCCL's errors as vyre errors. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_int.h"

static struct vyre_nccl_lib lib;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Python environments where a pip-installed nvidia-nccl wheel keeps libnccl.so.2,
 * searched in this order after the loader's path. */
static const char *const search[] = {
    "$VIRTUAL_ENV/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "$CONDA_PREFIX/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/opt/*/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
    "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
    "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
    "$HOME/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
};

typedef void *any_sym;
#define VYRE_FN_FROM_SYM(dst, sym) memcpy(&(dst), &(sym), sizeof(dst))

/* Expands a leading $VAR of a pattern; false when the variable is unset or empty. */
static bool expand(const char *pattern, char *out, size_t size) {
    if (pattern[0] != '$') {
        snprintf(out, size, "%s", pattern);
        return true;
    }
    const char *slash = strchr(pattern, '/');
    char var[64];
    size_t n = (size_t)(slash - pattern - 1);
    if (!slash || n >= sizeof var) return false;
    memcpy(var, pattern + 1, n);
    var[n] = '\0';
    const char *v = getenv(var);
    if (!v || !*v) return false;
    snprintf(out, size, "%s%s", v, slash);
    return true;
}

/* dlopen of the first match of the globs, or NULL; *where gets the file. */
static void *open_from_python(char *where, size_t size) {
    for (size_t i = 0; i < sizeof search / sizeof search[0]; i++) {
        char pat[1024];
        if (!expand(search[i], pat, sizeof pat)) continue;
        glob_t g;
        if (glob(pat, 0, NULL, &g) != 0) continue;
        void *h = NULL;
        for (size_t j = g.gl_pathc; j-- > 0 && !h;) { /* newest python3.N last: try it first */
            h = dlopen(g.gl_pathv[j], RTLD_NOW | RTLD_LOCAL);
            if (h) snprintf(where, size, "%s", g.gl_pathv[j]);
        }
        globfree(&g);
        if (h) return h;
    }
    return NULL;
}

static void unusable(const char *fmt, const char *a, const char *b) {
    lib.info.usable = false;
    snprintf(lib.info.reason, sizeof lib.info.reason, fmt, a, b);
}

static void load(void) {
    memset(&lib, 0, sizeof lib);
    /* Before NCCL reads its environment: multicast (NVLS) stays off unless the user
     * explicitly asked for it. */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    const char *env = getenv("VYRE_LIBNCCL");
    void *h = NULL;
    if (env && *env) {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *why = dlerror();
            unusable("no NCCL: dlopen(\"%s\") (from $VYRE_LIBNCCL) failed: %.400s. Fix: point "
                     "VYRE_LIBNCCL at a libnccl.so.2, or unset it to search the default places.",
                     env, why ? why : "unknown error");
            return;
        }
        snprintf(lib.info.path, sizeof lib.info.path, "%s", env);
    } else {
        h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!h) h = open_from_python(lib.info.path, sizeof lib.info.path);
        if (!h) {
            unusable("no NCCL: libnccl.so.2 is not on the loader's path%s%s and no Python "
                     "environment holds nvidia/nccl/lib/libnccl.so.2. Fix: pip install "
                     "nvidia-nccl-cu12 (or -cu13; PyTorch installs it), install NCCL from "
                     "NVIDIA's packages, or set VYRE_LIBNCCL=/path/to/libnccl.so.2.",
                     "", "");
            return;
        }
    }
    lib.handle = h;
    if (!lib.info.path[0]) {
        void *sym = dlsym(h, "ncclGetVersion");
        Dl_info dl;
        if (sym && dladdr(sym, &dl) && dl.dli_fname)
            snprintf(lib.info.path, sizeof lib.info.path, "%s", dl.dli_fname);
        else snprintf(lib.info.path, sizeof lib.info.path, "libnccl.so.2");
    }
#define VYRE_NCCL_RESOLVE(n, req)                                                          \
    do {                                                                                   \
        any_sym s_ = dlsym(h, #n);                                                         \
        if (s_) VYRE_FN_FROM_SYM(lib.n, s_);                                               \
        if (!s_ && (req)) {                                                                \
            unusable("%s does not export %s, which vyre needs (NCCL 2.12 or newer). Fix: " \
                     "install a newer NCCL or point VYRE_LIBNCCL at one.",                 \
                     lib.info.path, #n);                                                   \
            return;                                                                        \
        }                                                                                  \
    } while (0);
    VYRE_NCCL_ENTRIES(VYRE_NCCL_RESOLVE)
#undef VYRE_NCCL_RESOLVE
    int v = 0;
    ncclResult_t r = lib.ncclGetVersion(&v);
    if (r != ncclSuccess) {
        unusable("%s: ncclGetVersion failed (%s). Fix: reinstall NCCL or set VYRE_LIBNCCL.",
                 lib.info.path, vyre_nccl_result_name(r));
        return;
    }
    lib.info.version = v;
    lib.info.usable = true;
}

const struct vyre_nccl_lib *vyre_nccl_load(void) {
    pthread_once(&load_once, load);
    return &lib;
}

void vyre_nccl_probe(struct vyre_nccl_info *out) {
    if (out) *out = vyre_nccl_load()->info;
}

const char *vyre_nccl_result_name(ncclResult_t r) {
    switch ((int)r) {
    case 0: return "ncclSuccess";
    case 1: return "ncclUnhandledCudaError";
    case 2: return "ncclSystemError";
    case 3: return "ncclInternalError";
    case 4: return "ncclInvalidArgument";
    case 5: return "ncclInvalidUsage";
    case 6: return "ncclRemoteError";
    case 7: return "ncclInProgress";
    case 8: return "ncclTimeout";
    default: return "ncclUnknownResult";
    }
}

static const char *fix_for(ncclResult_t r) {
    switch ((int)r) {
    case 1:
        return "a CUDA call inside NCCL failed; check the devices (nvidia-smi) and the "
               "driver, and open the group again.";
    case 2:
        return "a system call failed (sockets, shared memory, /dev/shm full?); NCCL_DEBUG=WARN "
               "shows which, and check that every rank can reach the others.";
    case 4:
        return "an argument was out of range for NCCL (counts, root, peer); check the "
               "buffers and ranks.";
    case 5:
        return "NCCL was used out of order (collectives must be called by every rank in "
               "the same order); check that all ranks run the same collectives.";
    case 6:
        return "another rank failed or went away; check its output, then start every "
               "rank again with a new id.";
    default: return "run with NCCL_DEBUG=WARN for NCCL's own log, and open the group again.";
    }
}

enum vyre_status vyre_nccl_fail(ncclResult_t r, const char *call, struct vyre_error *err) {
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    const char *text = l->ncclGetErrorString ? l->ncclGetErrorString(r) : NULL;
    enum vyre_status st =
        vyre_error_set(err, VYRE_ERR_CUDA, "%s failed: %s (%s). Fix: %s", call,
                       vyre_nccl_result_name(r), text ? text : "no text", fix_for(r));
    if (err) {
        snprintf(err->call, sizeof err->call, "%s", call);
        snprintf(err->result, sizeof err->result, "%s", vyre_nccl_result_name(r));
    }
    return st;
}

enum vyre_status vyre_nccl_id(char out[VYRE_NCCL_ID_CHARS + 1], struct vyre_error *err) {
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_nccl_id: out is NULL. Fix: pass a "
                              "buffer of VYRE_NCCL_ID_CHARS + 1 bytes.");
    out[0] = '\0';
    if (!l->info.usable) return vyre_error_set(err, VYRE_ERR_UNSUPPORTED, "%s", l->info.reason);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = l->ncclGetUniqueId(&id);
    if (r != ncclSuccess) return vyre_nccl_fail(r, "ncclGetUniqueId", err);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < VYRE_NCCL_UNIQUE_ID_BYTES; i++) {
        unsigned char b = (unsigned char)id.internal[i];
        out[2 * i] = hex[b >> 4];
        out[2 * i + 1] = hex[b & 15];
    }
    out[VYRE_NCCL_ID_CHARS] = '\0';
    return VYRE_OK;
}
