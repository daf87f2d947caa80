/* backend_worklist.c — the worklists of the backend interface (vyre_backend.h
 * "worklists"; ARCHITECTURE.md §2, §5 "Worklists"): the wrapper's checks and object
 * list around the backend's worklist slots. The state of a worklist is the backend's
 * own (a device header and two item arrays on CUDA, src/core/cuda/worklist.c; host
 * arrays the interpreter pushes into on the reference), because kernels read and push
 * it where they run; the wrapper only keeps type and capacity, so misuse is answered
 * without asking the device. A backend without worklist slots answers
 * VYRE_ERR_UNSUPPORTED with a Fix (a buffer-made default could not be bound by its
 * kernels: the launch side of a worklist is the backend's). */
#include <stdlib.h>
#include <string.h>

#include "backend_int.h"

static enum vyre_status null_arg(struct vyre_error *err, const char *fname, const char *what) {
    return vyre_error_set(err, VYRE_ERR_ARG, "%s: %s is NULL. Fix: pass a live worklist", fname,
                          what);
}

static void free_wl(vyre_backend_worklist *w) {
    vyre_backend *be = w->obj.be;
    vyre_backend_unlink(&be->worklists, &w->obj);
    be->ops->worklist_free(be->ctx, w->h);
    free(w);
}

void vyre_backend_worklists_close(vyre_backend *be) {
    while (be->worklists) free_wl((vyre_backend_worklist *)be->worklists);
}

enum vyre_status vyre_backend_worklist_alloc(vyre_backend *be, enum vyre_type t, uint32_t capacity,
                                             vyre_backend_worklist **out, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_worklist_alloc";
    if (!be || !out)
        return vyre_error_set(err, VYRE_ERR_ARG, "%s: be or out is NULL. Fix: pass both", fname);
    *out = NULL;
    if ((unsigned)t >= VYRE_TYPE_COUNT || t == VYRE_BOOL || capacity == 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: item type %s, capacity %u. Fix: use a numeric item type (i32 "
                              "u32 i64 u64 f32 f64) and a capacity of at least 1",
                              fname, (unsigned)t < VYRE_TYPE_COUNT ? vyre_type_name(t) : "?",
                              capacity);
    if (!be->ops->worklist_alloc)
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "%s: the %s backend has no worklists. Fix: run worklist programs "
                              "on the reference or cuda backend",
                              fname, be->name);
    vyre_backend_worklist *w = calloc(1, sizeof *w);
    if (!w)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    enum vyre_status st = be->ops->worklist_alloc(be->ctx, t, capacity, &w->h, err);
    if (st != VYRE_OK) {
        free(w);
        return st;
    }
    w->obj.be = be;
    w->type = t;
    w->capacity = capacity;
    vyre_backend_link(&be->worklists, &w->obj);
    *out = w;
    return VYRE_OK;
}

void vyre_backend_worklist_free(vyre_backend_worklist *w) {
    if (w) free_wl(w);
}

enum vyre_status vyre_backend_worklist_state(vyre_backend_worklist *w,
                                             struct vyre_backend_worklist_state *out,
                                             struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!w || !out) return null_arg(err, "vyre_backend_worklist_state", "w or out");
    vyre_backend *be = w->obj.be;
    enum vyre_status st = be->ops->worklist_state(be->ctx, w->h, out, err);
    /* a device makes the pushed count current as it was counted, past the capacity too */
    if (st == VYRE_OK && out->cur_count > w->capacity) out->cur_count = w->capacity;
    return st;
}

enum vyre_status vyre_backend_worklist_push(vyre_backend_worklist *w, const void *src, uint32_t n,
                                            struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_worklist_push";
    if (!w || (!src && n)) return null_arg(err, fname, "w or src");
    if (n > w->capacity) /* cannot fit whatever is current: no need to ask the device */
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "%s: %u items need capacity %u, the worklist has %u. Fix: create "
                              "it with a capacity of at least %u",
                              fname, n, n, w->capacity, n);
    vyre_backend *be = w->obj.be;
    return be->ops->worklist_push(be->ctx, w->h, src, n, err);
}

enum vyre_status vyre_backend_worklist_items(vyre_backend_worklist *w, void *dst, uint32_t n,
                                             struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_worklist_items";
    if (!w || (!dst && n)) return null_arg(err, fname, "w or dst");
    if (n > w->capacity)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: %u items asked of a worklist of capacity %u. Fix: ask for at "
                              "most the current count (vyre_backend_worklist_state)",
                              fname, n, w->capacity);
    vyre_backend *be = w->obj.be;
    return be->ops->worklist_items(be->ctx, w->h, dst, n, err);
}

enum vyre_status vyre_backend_worklist_advance(vyre_backend_worklist *w, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!w) return null_arg(err, "vyre_backend_worklist_advance", "w");
    return w->obj.be->ops->worklist_advance(w->obj.be->ctx, w->h, err);
}

enum vyre_status vyre_backend_worklist_clear(vyre_backend_worklist *w, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!w) return null_arg(err, "vyre_backend_worklist_clear", "w");
    return w->obj.be->ops->worklist_clear(w->obj.be->ctx, w->h, err);
}

uint32_t vyre_backend_worklist_overflow(const vyre_backend_worklist *w) {
    if (!w || !w->obj.be->ops->worklist_overflow) return 0;
    return w->obj.be->ops->worklist_overflow(w->obj.be->ctx, w->h);
}

enum vyre_type vyre_backend_worklist_type(const vyre_backend_worklist *w) {
    return w ? w->type : VYRE_VOID;
}
uint32_t vyre_backend_worklist_capacity(const vyre_backend_worklist *w) {
    return w ? w->capacity : 0;
}
vyre_backend *vyre_backend_worklist_backend(const vyre_backend_worklist *w) {
    return w ? w->obj.be : NULL;
}

void *vyre_backend_worklist_native(const vyre_backend_worklist *w) {
    if (!w || !w->obj.be->ops->worklist_native) return NULL;
    return w->obj.be->ops->worklist_native(w->obj.be->ctx, w->h);
}

struct vyre_worklist_arg *vyre_backend_worklist_host(const vyre_backend_worklist *w) {
    if (!w || !w->obj.be->ops->worklist_host) return NULL;
    return w->obj.be->ops->worklist_host(w->obj.be->ctx, w->h);
}
