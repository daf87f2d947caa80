/* backend_int.h — the wrapper's objects behind the opaque handles of vyre_backend.h,
 * shared by the wrapper (backend.c, backend_mega.c), the registry and the backends in
 * this library that reuse a wrapper helper. Not a public header. */
#ifndef VYRE_BACKEND_INT_H
#define VYRE_BACKEND_INT_H

#include <stdio.h>

#include "ir.h"
#include "vyre_backend.h"

/* Public calls accept err == NULL; the runtimes below them may not: they get a scratch. */
#define VYRE_ERR_SCRATCH(err)         \
    struct vyre_error err##_scratch_; \
    if (!(err)) (err) = &err##_scratch_

/* Every object made from a backend is on one of its lists, so close frees the rest. */
struct vyre_backend_obj {
    vyre_backend *be;
    struct vyre_backend_obj *prev, *next;
};

struct vyre_backend {
    const char *name; /* the registered name (static) */
    const struct vyre_backend_ops *ops;
    void *ctx;
    struct vyre_backend_obj *buffers, *kernels, *graphs, *prepared;
    enum vyre_grid_sync grid_sync;      /* passed to every launch (vyre_backend_launch.grid_sync) */
    struct vyre_backend_obj *worklists; /* backend_worklist.c */
};

struct vyre_backend_buffer {
    struct vyre_backend_obj obj; /* first: the lists hold these */
    void *h;                     /* the backend's handle */
    enum vyre_type type;
    uint64_t count;
    vyre_backend_buffer *parent; /* a view: the buffer that owns the storage */
    uint64_t first;              /* a view: its first element in the owner */
    bool orphan;                 /* a view whose owner was freed: every use is an error */
};

struct vyre_backend_kernel {
    struct vyre_backend_obj obj;
    void *h;
    vyre_program *p; /* the kernel's own copy, validated */
    uint32_t nbuffers, nparams, nworklists;
    bool has_grid;                            /* p has grid statements */
    enum vyre_type btype[VYRE_MAX_BUFFERS];   /* per buffer slot */
    const char *bname[VYRE_MAX_BUFFERS];      /* per buffer slot, into p */
    enum vyre_type wtype[VYRE_MAX_WORKLISTS]; /* per worklist slot */
    const char *wname[VYRE_MAX_WORKLISTS];    /* per worklist slot, into p */
};

struct vyre_backend_graph {
    struct vyre_backend_obj obj;
    void *h;     /* the backend's graph, or the recorded steps (default) */
    bool native; /* h is the backend's */
    size_t nsteps;
};

struct vyre_backend_prepared {
    struct vyre_backend_obj obj;
    vyre_backend_kernel *k;
    void *h; /* the backend's prepared launch, or a copied launch (default) */
    bool native;
};

struct vyre_backend_worklist {
    struct vyre_backend_obj obj;
    void *h; /* the backend's worklist */
    enum vyre_type type;
    uint32_t capacity;
};
/* Frees every worklist of be (vyre_backend_close, before the buffers). */
VYRE_INTERNAL void vyre_backend_worklists_close(vyre_backend *be);
/* Links o at the head of *head / takes it off (backend.c's object lists). */
VYRE_INTERNAL void vyre_backend_link(struct vyre_backend_obj **head, struct vyre_backend_obj *o);
VYRE_INTERNAL void vyre_backend_unlink(struct vyre_backend_obj **head, struct vyre_backend_obj *o);

/* A deep copy of l in one malloc'd block (free()): handles, counts, params and grid by
 * value, for the default graph and prepared launch and for backends that record. */
VYRE_INTERNAL struct vyre_backend_launch *
vyre_backend_launch_copy(const struct vyre_backend_launch *l);
/* The monotonic clock of timed calls (nanoseconds). */
VYRE_INTERNAL uint64_t vyre_backend_now_ns(void);

/* One backend of the registry (backend_registry.c): each backend's folder defines one
 * `VYRE_INTERNAL const struct vyre_backend_registration vyre_backend_reg_NAME` and the
 * registry lists NAME once in VYRE_BACKENDS. */
struct vyre_backend_registration {
    const char *name;
    int priority; /* higher wins in vyre_backend_open(NULL, ...) */
    /* NULL: always available; else false with the reason (ending in a Fix) in why */
    bool (*available)(char *why, size_t whysz);
    /* opens device `ordinal` and wraps it with vyre_backend_new */
    enum vyre_status (*open)(int ordinal, const struct vyre_backend_options *o, vyre_backend **out,
                             struct vyre_error *err);
};

#endif
