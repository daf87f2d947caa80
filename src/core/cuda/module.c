/* module.c — from PTX to a launchable kernel: the JIT through the driver's linker
 * (cuLinkCreate / cuLinkAddData(PTX) / cuLinkComplete gives a cubin we can also
 * store on disk), loading an image with an error-log buffer, and the Kernel object:
 * its function handle, attributes, and the argument block built once at compile
 * time so launches only write values in place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "nccl_int.h"
#include "trace.h"

#define LOG_BYTES VYRE_CU_LOG_BYTES

/* "ptxas application ptx input, line 57; error : ..." -> 57 (0 if absent). */
static unsigned long failing_line(const char *log) {
    const char *p = strstr(log, "line ");
    if (!p) return 0;
    return strtoul(p + 5, NULL, 10);
}

/* Appends " PTX line N: <text>" for the failing line, if the log names one. */
static void quote_line(const char *ptx, const char *log, char *out, size_t size) {
    out[0] = '\0';
    unsigned long line = failing_line(log);
    if (!line || !ptx) return;
    const char *p = ptx;
    for (unsigned long i = 1; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p || !*p) return;
    const char *end = strchr(p, '\n');
    int n = end ? (int)(end - p) : (int)strlen(p);
    if (n > 300) n = 300;
    snprintf(out, size, " PTX line %lu: `%.*s`.", line, n, p);
}

static enum vyre_status jit_error(struct vyre_cuda_device *d, CUresult r, const char *call,
                                  const char *program, const char *ptx, const char *log,
                                  struct vyre_error *err) {
    struct vyre_error e;
    vyre_cu_fail(d, r, call, program, &e);
    char quoted[400];
    quote_line(ptx, log, quoted, sizeof quoted);
    vyre_error_set(err, e.status, "%s JIT log: %.2000s%s", e.message, log[0] ? log : "(empty)",
                   quoted);
    if (err) {
        memcpy(err->call, e.call, sizeof e.call);
        memcpy(err->result, e.result, sizeof e.result);
    }
    return e.status;
}

/* The JIT itself, touching no device state, so worker threads may run it at once
 * (compile_many.c): each call owns its link state. On failure *call names the driver
 * call that failed (NULL: host memory ran out) and log holds the JIT's log. */
CUresult vyre_cu_link(const char *ptx, size_t len, const char *program, char *log,
                      void **cubin, size_t *cubin_len, const char **call) {
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)VYRE_CU_LOG_BYTES};
    CUlinkState link = NULL;
    *call = "cuLinkCreate";
    CUresult r = vyre_cu.cuLinkCreate(2, opts, vals, &link);
    if (r != CUDA_SUCCESS) return r;
    /* The size includes the terminating NUL, as the driver reads PTX as a C string. */
    *call = "cuLinkAddData";
    r = vyre_cu.cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)(uintptr_t)ptx, len + 1,
                              program ? program : "vyre", 0, NULL, NULL);
    void *image = NULL;
    size_t image_len = 0;
    if (r == CUDA_SUCCESS) {
        *call = "cuLinkComplete";
        r = vyre_cu.cuLinkComplete(link, &image, &image_len);
        *cubin_len = image_len;
    }
    /* The image belongs to the link state: copy it before destroying that. */
    if (r == CUDA_SUCCESS) {
        *cubin = malloc(image_len);
        if (!*cubin) {
            *call = NULL;
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            memcpy(*cubin, image, image_len);
        }
    }
    vyre_cu.cuLinkDestroy(link);
    return r;
}

enum vyre_status vyre_cu_link_error(struct vyre_cuda_device *d, CUresult r, const char *call,
                                    const char *program, const char *ptx, const char *log,
                                    size_t cubin_len, struct vyre_error *err) {
    if (!call)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "JIT: out of host memory copying a %zu-byte "
                              "cubin. Fix: free memory.",
                              cubin_len);
    /* cuLinkCreate's failure has no PTX line to quote */
    bool created = strcmp(call, "cuLinkCreate") != 0;
    return jit_error(d, r, call, program, created ? ptx : NULL, created ? log : "", err);
}

enum vyre_status vyre_cu_jit(struct vyre_cuda_device *d, const char *ptx, size_t len,
                             const char *program, void **cubin, size_t *cubin_len,
                             struct vyre_error *err) {
    char *log = calloc(1, VYRE_CU_LOG_BYTES);
    if (!log)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "JIT: out of host memory. Fix: free "
                              "memory.");
    d->st.jit_compiles++;
    const char *call = NULL;
    size_t clen = 0;
    CUresult r = vyre_cu_link(ptx, len, program, log, cubin, &clen, &call);
    enum vyre_status st = VYRE_OK;
    if (r == CUDA_SUCCESS) *cubin_len = clen;
    else st = vyre_cu_link_error(d, r, call, program, ptx, log, clen, err);
    free(log);
    return st;
}

enum vyre_status vyre_cu_load_image(struct vyre_cuda_device *d, const void *image,
                                    const char *ptx_text, const char *program, CUmodule *out,
                                    struct vyre_error *err) {
    char *log = calloc(1, LOG_BYTES);
    if (!log)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "module load: out of host memory. "
                              "Fix: free memory.");
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)LOG_BYTES};
    uint64_t t0 = vyre_cu_now_ns(); /* a warm start's driver share of compiling */
    CUresult r = vyre_cu.cuModuleLoadDataEx(out, image, 2, opts, vals);
    d->st.module_load_ns += vyre_cu_now_ns() - t0;
    enum vyre_status st = VYRE_OK;
    if (r != CUDA_SUCCESS) {
        /* Only a text image has lines worth quoting (raw PTX modules). */
        st = jit_error(d, r, "cuModuleLoadDataEx", program, ptx_text, log, err);
    }
    free(log);
    return st;
}

/* The name of the first `.entry` in PTX text, or NULL. */
static char *entry_name(const char *ptx) {
    const char *p = strstr(ptx, ".entry");
    if (!p) return NULL;
    p += 6;
    while (*p == ' ' || *p == '\t') p++;
    size_t n = 0;
    while (p[n] && p[n] != '(' && p[n] != ' ' && p[n] != '\n' && p[n] != '\t') n++;
    if (n == 0) return NULL;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static vyre_cuda_kernel *kernel_new(struct vyre_cuda_device *d, uint32_t nargs) {
    vyre_cuda_kernel *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->argv = calloc(nargs ? nargs : 1, sizeof *k->argv);
    k->slot = calloc(nargs ? nargs : 1, sizeof *k->slot);
    if (!k->argv || !k->slot) {
        free(k->argv);
        free(k->slot);
        free(k);
        return NULL;
    }
    for (uint32_t i = 0; i < nargs; i++) k->argv[i] = &k->slot[i];
    k->dev = d;
    return k;
}

static enum vyre_status finish_kernel(vyre_cuda_kernel *k, CUmodule mod, const char *entry,
                                      struct vyre_error *err) {
    struct vyre_cuda_device *d = k->dev;
    VYRE_CU_CHECK(d, vyre_cu.cuModuleGetFunction(&k->fn, mod, entry), "cuModuleGetFunction",
                  k->name, err);
    int mt = 0;
    if (vyre_cu.cuFuncGetAttribute(&mt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn) ==
        CUDA_SUCCESS)
        k->max_threads = mt;
    vyre_cuda_device_retain(d);
    d->st.live_kernels++;
    return VYRE_OK;
}

/* The vector entry NAME_v4 of an elementwise program, when its PTX has one
 * (src/codegen/ptx_vec.c): its function and thread limit. */
static enum vyre_status find_vector_entry(vyre_cuda_kernel *k, CUmodule mod,
                                          struct vyre_error *err) {
    char entry[VYRE_MAX_NAME + 16], decl[VYRE_MAX_NAME + 48];
    snprintf(entry, sizeof entry, "%.*s_v4", (int)VYRE_MAX_NAME, k->name);
    snprintf(decl, sizeof decl, ".visible .entry %s(", entry);
    if (!strstr(k->ptx, decl)) return VYRE_OK;
    VYRE_CU_CHECK(k->dev, vyre_cu.cuModuleGetFunction(&k->vfn, mod, entry), "cuModuleGetFunction",
                  k->name, err);
    int mt = 0;
    if (vyre_cu.cuFuncGetAttribute(&mt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->vfn) ==
        CUDA_SUCCESS)
        k->vmax_threads = mt;
    return VYRE_OK;
}

/* The entry NAME_wl of a program with worklists (src/codegen/ptx_worklist.c). */
static enum vyre_status find_worklist_entry(vyre_cuda_kernel *k, CUmodule mod,
                                            struct vyre_error *err) {
    char entry[VYRE_MAX_NAME + 16], decl[VYRE_MAX_NAME + 48];
    snprintf(entry, sizeof entry, "%.*s_wl", (int)VYRE_MAX_NAME, k->name);
    snprintf(decl, sizeof decl, ".visible .entry %s(", entry);
    if (!strstr(k->ptx, decl)) return VYRE_OK;
    VYRE_CU_CHECK(k->dev, vyre_cu.cuModuleGetFunction(&k->wfn, mod, entry), "cuModuleGetFunction",
                  k->name, err);
    return VYRE_OK;
}

static void kernel_dispose(vyre_cuda_kernel *k) {
    free(k->argv);
    free(k->slot);
    free(k->ptx);
    free(k->name);
    free(k->buf_types);
    free(k->buf_access);
    free(k->buf_counts);
    free(k->param_types);
    free(k);
}

static enum vyre_status compile(vyre_cuda_device *d, vyre_program *p, vyre_cuda_kernel **out,
                                struct vyre_error *err) {
    if (!p || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "compile: program or out is NULL. "
                              "Fix: pass both.");
    *out = NULL;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    const char *ptx;
    size_t len;
    uint64_t ptx_hash;
    st = vyre_cu_ptx_get(d, p, &ptx, &len, &ptx_hash, err);
    if (st != VYRE_OK) return st;
    /* grid statements: scratch pointer and virtual grid follow (ptx_grid.c); the
     * vector entry of an elementwise program takes one more, its count, and a debug
     * entry (which has no vector entry) its counters (debug.c) */
    bool debug = d->debug; /* as vyre_cu_ptx_get read it */
    /* worklists: one header address each after the params, passed as u64 params */
    uint32_t nparams = p->nparams + vyre_program_worklist_count(p);
    uint32_t nargs = 2 * p->nbuffers + nparams + (p->has_grid ? 4u : 0u);
    vyre_cuda_kernel *k = kernel_new(d, nargs + 2);
    char *entry = entry_name(ptx);
    if (k) {
        k->ptx = malloc(len + 1);
        k->name = malloc(strlen(p->name) + 1);
        k->buf_types = calloc(p->nbuffers + 1, sizeof *k->buf_types);
        k->buf_access = calloc(p->nbuffers + 1, sizeof *k->buf_access);
        k->buf_counts = calloc(p->nbuffers + 1, sizeof *k->buf_counts);
        k->param_types = calloc(nparams + 1, sizeof *k->param_types);
    }
    if (!k || !entry || !k->ptx || !k->name || !k->buf_types || !k->buf_access || !k->buf_counts ||
        !k->param_types) {
        if (k) kernel_dispose(k);
        bool no_entry = entry == NULL && strstr(ptx, ".entry") == NULL;
        free(entry);
        return no_entry ? vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                                         "compile: the PTX of program '%s' has no .entry. Fix: "
                                         "report this code generator bug.",
                                         p->name)
                        : vyre_error_set(err, VYRE_ERR_NOMEM,
                                         "compile: out of host memory. "
                                         "Fix: free memory.");
    }
    memcpy(k->ptx, ptx, len + 1);
    strcpy(k->name, p->name);
    k->geom.name = k->name;
    memcpy(k->geom.workgroup, p->workgroup, sizeof p->workgroup);
    k->nbuffers = p->nbuffers;
    k->nparams = nparams;
    /* NAME_wl's vyre_wn follows the entry's parameters (and a debug entry's counters) */
    k->wn_at = nargs + (debug ? 1u : 0u);
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *dc = &p->decls[i];
        if (dc->kind == VYRE_DECL_BUFFER) {
            k->buf_types[dc->slot] = dc->type;
            k->buf_access[dc->slot] = dc->access;
            k->buf_counts[dc->slot] = dc->count;
            if (dc->nonempty) k->buf_nonempty[dc->slot / 32] |= 1u << (dc->slot % 32);
        } else if (dc->kind == VYRE_DECL_PARAM) {
            k->param_types[dc->slot] = dc->type;
        } else if (dc->kind == VYRE_DECL_WORKLIST) {
            k->param_types[p->nparams + dc->slot] = VYRE_U64;
        }
    }
    st = vyre_cu_module_get(d, k->ptx, len, ptx_hash, k->name, &k->module, err);
    if (st == VYRE_OK) {
        /* the JIT took this PTX: a new process may now find it by program key */
        vyre_cu_ptx_saved(d, ptx_hash);
        st = find_vector_entry(k, k->module->mod, err);
        if (st == VYRE_OK) st = find_worklist_entry(k, k->module->mod, err);
        if (st == VYRE_OK) st = finish_kernel(k, k->module->mod, entry, err);
        if (st != VYRE_OK) vyre_cu_module_release(k->module);
    }
    free(entry);
    if (st != VYRE_OK) {
        kernel_dispose(k);
        return st;
    }
    if ((debug && (st = vyre_cu_debug_attach(k, p, nargs, err)) != VYRE_OK) ||
        (p->has_grid && (st = vyre_cu_grid_attach(k, p, err)) != VYRE_OK)) {
        vyre_cuda_kernel_free(k);
        return st;
    }
    *out = k;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_load_ptx(vyre_cuda_device *d, const char *ptx, const char *entry,
                                    vyre_cuda_kernel **out, struct vyre_error *err) {
    if (!ptx || !entry || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "load_ptx: ptx, entry and out must not be "
                              "NULL. Fix: pass PTX text and its entry name.");
    *out = NULL;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    vyre_cuda_kernel *k = kernel_new(d, 0);
    if (!k)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "load_ptx: out of host memory. Fix: "
                              "free memory.");
    size_t len = strlen(ptx);
    k->ptx = malloc(len + 1);
    k->name = malloc(strlen(entry) + 1);
    if (!k->ptx || !k->name) {
        kernel_dispose(k);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "load_ptx: out of host memory. Fix: free "
                              "memory.");
    }
    memcpy(k->ptx, ptx, len + 1);
    strcpy(k->name, entry);
    k->geom.name = k->name;
    k->geom.workgroup[0] = k->geom.workgroup[1] = k->geom.workgroup[2] = 1;
    st = vyre_cu_load_image(d, k->ptx, k->ptx, entry, &k->raw_module, err);
    if (st == VYRE_OK) {
        st = finish_kernel(k, k->raw_module, entry, err);
        if (st != VYRE_OK) vyre_cu.cuModuleUnload(k->raw_module);
    }
    if (st != VYRE_OK) {
        kernel_dispose(k);
        return st;
    }
    *out = k;
    return VYRE_OK;
}

void vyre_cuda_kernel_free(vyre_cuda_kernel *k) {
    if (!k) return;
    struct vyre_cuda_device *d = k->dev;
    bool alive = vyre_cu_current(d);
    if (k->grid) vyre_cu_grid_detach(k);
    vyre_cu_debug_detach(k);
    if (k->module) vyre_cu_module_release(k->module);
    if (k->raw_module && alive) {
        CUresult r = vyre_cu.cuModuleUnload(k->raw_module);
        if (r != CUDA_SUCCESS) {
            struct vyre_error e;
            vyre_cu_fail(d, r, "cuModuleUnload", k->name, &e);
            vyre_cu_defer(d, &e);
        }
    }
    if (k->coll) vyre_nccl_comm_unref(k->coll->comm); /* a collective step (nccl_group.c) */
    d->st.live_kernels--;
    kernel_dispose(k);
    vyre_cuda_device_release(d);
}

enum vyre_status vyre_cuda_compile(vyre_cuda_device *d, vyre_program *p, vyre_cuda_kernel **out,
                                   struct vyre_error *err) {
    int tr = vyre_trace_push("compile", p ? p->name : NULL);
    enum vyre_status st = compile(d, p, out, err);
    vyre_trace_pop(tr);
    return st;
}

const char *vyre_cuda_kernel_ptx(const vyre_cuda_kernel *k) { return k ? k->ptx : NULL; }
const char *vyre_cuda_kernel_name(const vyre_cuda_kernel *k) { return k ? k->name : NULL; }

vyre_cuda_device *vyre_cuda_kernel_device(const vyre_cuda_kernel *k) { return k ? k->dev : NULL; }

enum vyre_status vyre_cuda_kernel_info(vyre_cuda_kernel *k, struct vyre_cuda_kernel_info *out,
                                       struct vyre_error *err) {
    if (!k || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "kernel info: NULL argument. Fix: "
                              "pass a kernel and an info struct.");
    enum vyre_status st = vyre_cu_enter(k->dev, err);
    if (st != VYRE_OK) return st;
    memset(out, 0, sizeof *out);
    static const struct {
        CUfunction_attribute a;
        size_t off;
    } attrs[] = {
        {CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(struct vyre_cuda_kernel_info, registers)},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(struct vyre_cuda_kernel_info, shared_bytes)},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(struct vyre_cuda_kernel_info, local_bytes)},
        {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(struct vyre_cuda_kernel_info, const_bytes)},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
         offsetof(struct vyre_cuda_kernel_info, max_threads)},
        {CU_FUNC_ATTRIBUTE_PTX_VERSION, offsetof(struct vyre_cuda_kernel_info, ptx_version)},
        {CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(struct vyre_cuda_kernel_info, binary_version)},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = 0;
        VYRE_CU_CHECK(k->dev, vyre_cu.cuFuncGetAttribute(&v, attrs[i].a, k->fn),
                      "cuFuncGetAttribute", k->name, err);
        memcpy((char *)out + attrs[i].off, &v, sizeof v);
    }
    memcpy(out->workgroup, k->geom.workgroup, sizeof out->workgroup);
    out->nbuffers = k->nbuffers;
    out->nparams = k->nparams;
    out->vector = k->vfn != NULL;
    return VYRE_OK;
}
