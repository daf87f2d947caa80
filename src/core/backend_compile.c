/* backend_compile.c — vyre_backend_compile_many (include/vyre_backend.h): a batch of
 * programs compiled at once, the way a rule set's kernels are before an e-graph's first
 * iteration. The wrapper checks every program as vyre_backend_compile does, keeps its
 * own copy of each, and calls the backend's compile_many slot (CUDA: parallel JIT,
 * src/core/cuda/compile_many.c) or, where the backend has none, compile in a loop. */
#include <stdlib.h>
#include <string.h>

#include "backend_int.h"

#define FNAME "vyre_backend_compile_many"

/* "program i ('name'): cause", keeping the cause's status and driver fields. */
static enum vyre_status failed(size_t i, vyre_program *p, struct vyre_error *err) {
    const char *name = vyre_program_name(p);
    if (name && *name && strstr(err->message, name)) return err->status;
    struct vyre_error e = *err;
    vyre_error_set(err, e.status, "%s: program %zu ('%s'): %.3800s", FNAME, i + 1,
                   name ? name : "", e.message);
    memcpy(err->call, e.call, sizeof e.call);
    memcpy(err->result, e.result, sizeof e.result);
    return e.status;
}

/* Checks program i (as vyre_backend_compile) and makes the kernel's copy of it. */
static enum vyre_status check_one(vyre_backend *be, vyre_program *p, size_t i, vyre_program **copy,
                                  struct vyre_error *err) {
    if (!p)
        return vyre_error_set(err, VYRE_ERR_ARG, "%s: program %zu is NULL. Fix: pass n programs",
                              FNAME, i + 1);
    enum vyre_status st = vyre_program_check(p, err);
    if (st != VYRE_OK) return failed(i, p, err);
    char why[1024];
    if (be->ops->supports && !be->ops->supports(be->ctx, p, why, sizeof why)) {
        vyre_error_set(err, VYRE_ERR_UNSUPPORTED, "%s", why);
        return failed(i, p, err);
    }
    st = vyre_program_copy(p, copy, err);
    if (st == VYRE_OK) st = vyre_program_check(*copy, err);
    return st == VYRE_OK ? VYRE_OK : failed(i, p, err);
}

/* The default slot: compile each in order; on a failure the earlier ones are freed. */
static enum vyre_status compile_each(vyre_backend *be, vyre_program *const *p, size_t n, void **h,
                                     struct vyre_error *err) {
    for (size_t i = 0; i < n; i++) {
        enum vyre_status st = be->ops->compile(be->ctx, p[i], &h[i], err);
        if (st != VYRE_OK) {
            failed(i, p[i], err);
            h[i] = NULL;
            while (i > 0) {
                be->ops->kernel_free(be->ctx, h[--i]);
                h[i] = NULL;
            }
            return st;
        }
    }
    return VYRE_OK;
}

enum vyre_status vyre_backend_compile_many(vyre_backend *be, vyre_program *const *programs,
                                           size_t n, vyre_backend_kernel **out,
                                           struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be || (n && (!programs || !out)))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: be, programs or out is NULL. Fix: pass a backend and "
                              "arrays of n programs and n kernel slots",
                              FNAME);
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    if (n == 0) return VYRE_OK;
    vyre_program **copies = calloc(n, sizeof *copies);
    void **h = calloc(n, sizeof *h);
    enum vyre_status st = VYRE_OK;
    if (!copies || !h)
        st = vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                            FNAME);
    for (size_t i = 0; st == VYRE_OK && i < n; i++) st = check_one(be, programs[i], i, &copies[i], err);
    if (st == VYRE_OK)
        st = be->ops->compile_many ? be->ops->compile_many(be->ctx, copies, n, h, err)
                                   : compile_each(be, copies, n, h, err);
    for (size_t i = 0; st == VYRE_OK && i < n; i++) {
        out[i] = calloc(1, sizeof *out[i]);
        if (!out[i])
            st = vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                                FNAME);
    }
    if (st != VYRE_OK) {
        for (size_t i = 0; i < n; i++) {
            if (h && h[i]) be->ops->kernel_free(be->ctx, h[i]);
            if (copies) vyre_program_free(copies[i]);
            free(out[i]);
            out[i] = NULL;
        }
        free(copies);
        free(h);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        vyre_backend_kernel *k = out[i];
        k->p = copies[i];
        k->h = h[i];
        struct vyre_decl_info d;
        for (uint32_t j = 0; vyre_program_decl(k->p, j, &d); j++) {
            if (d.kind != VYRE_DECL_BUFFER) continue;
            k->btype[d.slot] = d.type;
            k->bname[d.slot] = d.name;
        }
        k->nbuffers = vyre_program_buffer_count(k->p);
        k->nparams = vyre_program_param_count(k->p);
        k->obj.be = be;
        vyre_backend_link(&be->kernels, &k->obj);
    }
    free(copies);
    free(h);
    return VYRE_OK;
}
