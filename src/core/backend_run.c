/* backend_run.c — vyre_backend_run, the one-shot dispatch of the backend interface
 * (vyre_backend.h): host data in, one launch, host data out. The wrapper checks the
 * bindings against the program once, for every backend, then calls the backend's `run`
 * slot (the reference: the interpreter over host memory, results computed in place; CUDA:
 * vyre_cuda_run, compiled through its caches, transient memory from its pool) or, for a
 * backend without one, the default below, made of the interface's own calls. */
#include <stdlib.h>
#include <string.h>

#include "backend_int.h"

/* The type and whether the program writes it, per buffer slot. */
static void slot_types(const vyre_program *p, enum vyre_type *type, bool *writes) {
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(p, i, &d); i++)
        if (d.kind == VYRE_DECL_BUFFER) {
            type[d.slot] = d.type;
            writes[d.slot] = d.access != VYRE_ACCESS_READ;
        }
}

/* The default: a kernel, a buffer per host slot (uploaded unless data is NULL: alloc
 * zeroes), one launch (timed when asked: launch_timed synchronises; else launch and
 * synchronize), the rounds, the results downloaded; everything freed on every path. */
static enum vyre_status default_run(vyre_backend *be, vyre_program *p,
                                    const struct vyre_backend_run_options *o,
                                    struct vyre_error *err) {
    vyre_backend_buffer *own[VYRE_MAX_BUFFERS] = {0};
    vyre_backend_buffer *bind[VYRE_MAX_BUFFERS];
    enum vyre_type type[VYRE_MAX_BUFFERS];
    bool writes[VYRE_MAX_BUFFERS];
    slot_types(p, type, writes);
    vyre_backend_kernel *k = NULL;
    enum vyre_status st = vyre_backend_compile(be, p, &k, err);
    for (size_t s = 0; s < o->nbuffers && st == VYRE_OK; s++) {
        bind[s] = o->resident ? o->resident[s] : NULL;
        if (bind[s]) continue;
        const struct vyre_buffer_arg *in = &o->buffers[s];
        st = vyre_backend_buffer_alloc(be, type[s], in->count, &own[s], err);
        if (st == VYRE_OK && in->data && in->count)
            st = vyre_backend_buffer_upload(own[s], 0, in->data, in->count, err);
        bind[s] = own[s];
    }
    struct vyre_backend_args a = {.buffers = bind,
                                  .nbuffers = o->nbuffers,
                                  .params = o->params,
                                  .nparams = o->nparams,
                                  .n = o->n,
                                  .grid = o->grid};
    if (st == VYRE_OK && o->timing) st = vyre_backend_launch_timed(k, &a, o->timing, err);
    else if (st == VYRE_OK) st = vyre_backend_launch(k, &a, err);
    if (st == VYRE_OK && !o->timing) st = vyre_backend_synchronize(be, err);
    if (st == VYRE_OK && o->rounds) st = vyre_backend_kernel_rounds(k, o->rounds, err);
    for (size_t s = 0; s < o->nbuffers && st == VYRE_OK; s++)
        if (own[s] && writes[s] && o->out && o->out[s] && o->buffers[s].count)
            st = vyre_backend_buffer_download(own[s], 0, o->out[s], o->buffers[s].count, err);
    for (size_t s = 0; s < o->nbuffers; s++) vyre_backend_buffer_free(own[s]);
    vyre_backend_kernel_free(k);
    return st;
}

enum vyre_status vyre_backend_run(vyre_backend *be, vyre_program *p,
                                  const struct vyre_backend_run_options *o,
                                  struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be || !p || !o)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_run: be, p or o is NULL. Fix: pass an open backend, "
                              "a program and its options");
    enum vyre_status st = vyre_program_check(p, err);
    if (st != VYRE_OK) return st;
    const char *name = vyre_program_name(p);
    if (vyre_program_worklist_count(p))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_run: program '%s' declares a worklist; a one-shot "
                              "run binds none. Fix: compile it and launch it with its "
                              "worklists bound",
                              name);
    size_t nb = vyre_program_buffer_count(p), np = vyre_program_param_count(p);
    if (o->nbuffers != nb || o->nparams != np)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_run: program '%s' declares %zu buffers and %zu "
                              "params, the options bind %zu and %zu. Fix: one entry per "
                              "declaration, in declaration order",
                              name, nb, np, o->nbuffers, o->nparams);
    if ((nb && !o->buffers) || (np && !o->params))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_run: buffers or params is NULL for program '%s'. "
                              "Fix: point them at one entry per declaration",
                              name);
    /* resident buffers: the backend's handles, and their own counts for the geometry */
    void *res[VYRE_MAX_BUFFERS] = {0};
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    enum vyre_type type[VYRE_MAX_BUFFERS];
    bool writes[VYRE_MAX_BUFFERS], any = false;
    slot_types(p, type, writes);
    for (size_t s = 0; s < nb; s++) {
        bufs[s] = o->buffers[s];
        const vyre_backend_buffer *b = o->resident ? o->resident[s] : NULL;
        if (!b) continue;
        enum vyre_type want = type[s];
        if (b->obj.be != be || b->orphan || b->type != want)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "vyre_backend_run: the resident buffer of slot %zu of '%s' is "
                                  "%s. Fix: bind a live %s buffer of this backend",
                                  s, name,
                                  b->obj.be != be ? "another backend's"
                                  : b->orphan     ? "a view of a freed buffer"
                                                  : vyre_type_name(b->type),
                                  vyre_type_name(want));
        res[s] = b->h;
        bufs[s] = (struct vyre_buffer_arg){NULL, b->count};
        any = true;
    }
    struct vyre_backend_run_options c = *o;
    c.buffers = bufs;
    if (c.grid_sync == VYRE_GRID_AUTO) c.grid_sync = be->grid_sync; /* the mode reaches the run */
    if (!be->ops->run) return default_run(be, p, &c, err);
    return be->ops->run(be->ctx, p, &c, any ? res : NULL, err);
}
