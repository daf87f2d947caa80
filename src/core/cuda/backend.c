/* backend.c — the CUDA backend behind the backend interface (vyre_backend.h): an adapter
 * over the public vyre_cuda_* calls of this directory, loading and keeping nothing of its
 * own. Buffers are vyre_cuda_buffers (element ranges become byte ranges here), kernels
 * go through vyre_cuda_compile's caches, a launch is vyre_cuda_launch (asynchronous), a
 * prepared launch vyre_cuda_prepare, a sequence vyre_cuda_sequence (one sync), a graph
 * a captured CUDA graph, timing and counters the device's own, debug mode the device's.
 * Megakernels: the wrapper composes them (src/core/backend_mega.c) and grid_run runs the
 * composed grid program by vyre_cuda_grid_run, cooperatively, split or as graph rounds,
 * in the mode each launch carries (vyre_backend_launch.grid_sync; no device setting).
 * Threads: as vyre_cuda.h says, one thread at a time per device object. */
#include <stdlib.h>
#include <string.h>

#include "../backend_int.h"
#include "vyre_cuda.h"

struct cu_ctx {
    vyre_cuda_device *d;
};

/* A worklist: the device's, and what the last grid run that watched it or the last
 * state read back of its header (worklist_overflow answers from it without a wait). */
struct cu_wl {
    vyre_cuda_worklist *w;
    uint32_t overflow;     /* the capacity its pushes needed, 0: none known */
    unsigned char hdr[32]; /* the header a watching grid run copies back */
};

/* Scratch of one launch's vyre_cuda_args: buffers, and params followed by each
 * worklist's header address (the kernel takes them after its scalar params). */
struct cu_scratch {
    vyre_cuda_buffer *bufs[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS + VYRE_MAX_WORKLISTS];
};

/* vyre_cuda_args of a checked launch: bufs holds l->nbuffers entries, params (used only
 * with worklists) l->nparams + l->nworklists. */
static void to_args(const struct vyre_backend_launch *l, vyre_cuda_buffer **bufs, vyre_bits *params,
                    struct vyre_cuda_args *a) {
    for (size_t i = 0; i < l->nbuffers; i++) bufs[i] = l->buffers[i];
    const vyre_bits *p = l->params;
    if (l->nworklists) {
        if (l->nparams) memcpy(params, l->params, l->nparams * sizeof *params);
        for (size_t w = 0; w < l->nworklists; w++)
            params[l->nparams + w] =
                vyre_cuda_worklist_header(((struct cu_wl *)l->worklists[w])->w);
        p = params;
    }
    uint64_t wn = l->sized ? vyre_cuda_worklist_header(((struct cu_wl *)l->sized)->w) : 0;
    *a = (struct vyre_cuda_args){bufs, l->nbuffers, p,  l->nparams + l->nworklists,
                                 l->n, l->grid,     wn, l->grid_sync};
}

static void to_args1(const struct vyre_backend_launch *l, struct cu_scratch *sc,
                     struct vyre_cuda_args *a) {
    to_args(l, sc->bufs, sc->params, a);
}

/* Steps as vyre_cuda_steps, their scratch in one block sized by the steps (*block). */
static enum vyre_status to_steps(const void *const *kernels, const struct vyre_backend_launch *l,
                                 size_t n, struct vyre_cuda_step **cs, void **block,
                                 struct vyre_error *err) {
    size_t nb = 0, np = 0;
    for (size_t i = 0; i < n; i++) {
        nb += l[i].nbuffers;
        if (l[i].nworklists) np += l[i].nparams + l[i].nworklists;
    }
    char *m = *block = malloc((n + 1) * sizeof **cs + (nb + 1) * sizeof(vyre_cuda_buffer *) +
                              (np + 1) * sizeof(vyre_bits));
    if (!m)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "cuda backend: out of host memory for the steps. Fix: free memory");
    *cs = (struct vyre_cuda_step *)m;
    vyre_bits *params = (vyre_bits *)(*cs + n + 1);
    vyre_cuda_buffer **bufs = (vyre_cuda_buffer **)(params + np + 1);
    for (size_t i = 0; i < n; i++) {
        (*cs)[i].kernel = (vyre_cuda_kernel *)(uintptr_t)kernels[i];
        to_args(&l[i], bufs, params, &(*cs)[i].args);
        bufs += l[i].nbuffers;
        if (l[i].nworklists) params += l[i].nparams + l[i].nworklists;
    }
    return VYRE_OK;
}

/* ---- slots ---------------------------------------------------------------------------- */

static void cu_close(void *ctx) {
    struct cu_ctx *c = ctx;
    vyre_cuda_device_release(c->d);
    free(c);
}

static enum vyre_status cu_info(void *ctx, struct vyre_backend_info *out, struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    struct vyre_cuda_info in;
    enum vyre_status st = vyre_cuda_device_info(c->d, &in, err);
    if (st != VYRE_OK) return st;
    snprintf(out->device, sizeof out->device, "%s", in.name);
    out->ordinal = in.ordinal;
    out->sm = in.sm;
    out->sms = in.sms;
    out->memory_bytes = in.memory_bytes;
    out->max_threads_per_block = in.max_threads_per_block;
    memcpy(out->max_block, in.max_block, sizeof out->max_block);
    out->shared_bytes_per_block = in.shared_bytes_per_block;
    out->warp_size = in.warp_size;
    out->cooperative = in.cooperative_launch;
    out->graphs_native = true;
    out->debug = vyre_cuda_debug(c->d);
    out->max_threads_per_sm = in.max_threads_per_sm;
    return VYRE_OK;
}

static bool cu_supports(void *ctx, vyre_program *p, char *why, size_t whysz) {
    struct cu_ctx *c = ctx;
    struct vyre_cuda_info in;
    struct vyre_error err;
    if (vyre_cuda_device_info(c->d, &in, &err) != VYRE_OK) {
        snprintf(why, whysz, "%s", err.message);
        return false;
    }
    /* No check of the device's sm here: vyre_cuda_device_open already refused a device
     * no PTX target serves, and every other one runs the highest target its driver loads
     * (target.c), sm_72, sm_87 and the newer parts included. */
    uint32_t wg[3];
    vyre_program_workgroup(p, wg);
    uint64_t threads = (uint64_t)wg[0] * wg[1] * wg[2];
    for (int a = 0; a < 3; a++)
        if (wg[a] > (uint32_t)in.max_block[a]) {
            snprintf(why, whysz,
                     "cuda backend: program '%s' has workgroup axis %d of %u, the device "
                     "allows %d. Fix: use a smaller workgroup",
                     vyre_program_name(p), a + 1, wg[a], in.max_block[a]);
            return false;
        }
    if (threads > (uint64_t)in.max_threads_per_block) {
        snprintf(why, whysz,
                 "cuda backend: program '%s' has %llu invocations per workgroup, the device "
                 "allows %d. Fix: use a smaller workgroup",
                 vyre_program_name(p), (unsigned long long)threads, in.max_threads_per_block);
        return false;
    }
    return true;
}

static enum vyre_status cu_buffer_alloc(void *ctx, enum vyre_type t, uint64_t count, void **out,
                                        struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    vyre_cuda_buffer *b = NULL;
    enum vyre_status st = vyre_cuda_buffer_alloc(c->d, t, count, &b, err);
    if (st == VYRE_OK && count) st = vyre_cuda_buffer_zero(b, err); /* as the reference */
    if (st != VYRE_OK) {
        vyre_cuda_buffer_free(b);
        return st;
    }
    *out = b;
    return VYRE_OK;
}

static void cu_buffer_free(void *ctx, void *buf) {
    (void)ctx;
    vyre_cuda_buffer_free(buf);
}

static enum vyre_status cu_buffer_view(void *ctx, void *parent, enum vyre_type t, uint64_t first,
                                       uint64_t count, void **out, struct vyre_error *err) {
    (void)ctx;
    (void)t;
    return vyre_cuda_buffer_view(parent, first, count, (vyre_cuda_buffer **)out, err);
}

static enum vyre_status cu_buffer_upload(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                         const void *src, uint64_t count, struct vyre_error *err) {
    (void)ctx;
    uint64_t es = vyre_type_size(t);
    return vyre_cuda_buffer_upload(buf, first * es, src, count * es, err);
}

static enum vyre_status cu_buffer_download(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                           void *dst, uint64_t count, struct vyre_error *err) {
    (void)ctx;
    uint64_t es = vyre_type_size(t);
    return vyre_cuda_buffer_download(buf, first * es, dst, count * es, err);
}

static enum vyre_status cu_buffer_zero(void *ctx, void *buf, struct vyre_error *err) {
    (void)ctx;
    return vyre_cuda_buffer_count(buf) ? vyre_cuda_buffer_zero(buf, err) : VYRE_OK;
}

static enum vyre_status cu_compile(void *ctx, vyre_program *p, void **out, struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    return vyre_cuda_compile(c->d, p, (vyre_cuda_kernel **)out, err);
}

static enum vyre_status cu_compile_many(void *ctx, vyre_program *const *p, size_t n, void **out,
                                        struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    return vyre_cuda_compile_many(c->d, p, n, (vyre_cuda_kernel **)out, err);
}

static void cu_kernel_free(void *ctx, void *kernel) {
    (void)ctx;
    vyre_cuda_kernel_free(kernel);
}

static enum vyre_status cu_launch(void *ctx, void *kernel, const struct vyre_backend_launch *l,
                                  struct vyre_error *err) {
    (void)ctx;
    struct cu_scratch sc;
    struct vyre_cuda_args a;
    to_args1(l, &sc, &a);
    return vyre_cuda_launch(kernel, &a, err);
}

/* As lkernel.c's launch_timed: a one-step sequence, timed by the device's events. */
static enum vyre_status cu_launch_timed(void *ctx, void *kernel,
                                        const struct vyre_backend_launch *l, struct vyre_timing *t,
                                        struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    struct cu_scratch sc;
    struct vyre_cuda_step step = {kernel, {0}};
    to_args1(l, &sc, &step.args);
    struct vyre_cuda_sequence_options o = {.prefix = 1, .timing = t};
    return vyre_cuda_sequence(c->d, &step, 1, &o, err);
}

static enum vyre_status cu_synchronize(void *ctx, struct vyre_error *err) {
    return vyre_cuda_synchronize(((struct cu_ctx *)ctx)->d, err);
}

static size_t cu_stats(void *ctx, struct vyre_backend_stat *out, size_t cap) {
    struct vyre_cuda_stats s;
    vyre_cuda_device_stats(((struct cu_ctx *)ctx)->d, &s);
    size_t n = 0;
#define CU_PUT(nm, doc)                                          \
    if (n < cap) out[n] = (struct vyre_backend_stat){#nm, s.nm}; \
    n++;
    VYRE_CUDA_STATS(CU_PUT)
#undef CU_PUT
    return n < cap ? n : cap;
}

/* The prepared launch lives in its own heap block: vyre_cuda_prepared must not move. */
static enum vyre_status cu_prepare(void *ctx, void *kernel, const struct vyre_backend_launch *l,
                                   void **out, struct vyre_error *err) {
    (void)ctx;
    struct vyre_cuda_prepared *pl = malloc(sizeof *pl);
    if (!pl)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "cuda backend: out of host memory for a prepared launch. Fix: "
                              "free memory");
    struct cu_scratch sc;
    struct vyre_cuda_args a;
    to_args1(l, &sc, &a);
    enum vyre_status st = vyre_cuda_prepare(kernel, &a, pl, err);
    if (st != VYRE_OK) {
        free(pl);
        return st;
    }
    *out = pl;
    return VYRE_OK;
}

static enum vyre_status cu_launch_prepared(void *ctx, void *prepared, struct vyre_error *err) {
    (void)ctx;
    return vyre_cuda_launch_prepared(prepared, err);
}

static void cu_prepared_free(void *ctx, void *prepared) {
    (void)ctx;
    free(prepared);
}

static enum vyre_status cu_sequence(void *ctx, const void *const *kernels,
                                    const struct vyre_backend_launch *steps, size_t n,
                                    const struct vyre_sequence_options *o, void *const *rb,
                                    struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    struct vyre_cuda_step *cs = NULL;
    void *block = NULL;
    struct vyre_cuda_readback *crb = calloc(o->nreadback + 1, sizeof *crb);
    enum vyre_status st = to_steps(kernels, steps, n, &cs, &block, err);
    if (st == VYRE_OK && !crb)
        st = vyre_error_set(err, VYRE_ERR_NOMEM,
                            "cuda backend: out of host memory for the readbacks. Fix: free memory");
    for (size_t i = 0; i < o->nreadback && st == VYRE_OK; i++) {
        const struct vyre_backend_readback *r = &o->readback[i];
        crb[i] = (struct vyre_cuda_readback){rb[i], r->first, r->count, r->dst};
    }
    struct vyre_cuda_sequence_options co = {o->prefix, o->times, crb, o->nreadback, o->timing};
    if (st == VYRE_OK) st = vyre_cuda_sequence(c->d, cs, n, &co, err);
    free(block);
    free(crb);
    return st;
}

/* A graph of no steps captures nothing (the driver has no empty graph to replay). */
struct cu_graph {
    vyre_cuda_graph *g; /* NULL: no steps */
};

static enum vyre_status cu_graph_capture(void *ctx, const void *const *kernels,
                                         const struct vyre_backend_launch *steps, size_t n,
                                         void **out, struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    struct cu_graph *g = calloc(1, sizeof *g);
    struct vyre_cuda_step *cs = NULL;
    void *block = NULL;
    enum vyre_status st = g ? to_steps(kernels, steps, n, &cs, &block, err)
                            : vyre_error_set(err, VYRE_ERR_NOMEM,
                                             "cuda backend: out of host memory for a graph. Fix: "
                                             "free memory");
    if (st == VYRE_OK && n) st = vyre_cuda_graph_capture(c->d, cs, n, &g->g, err);
    free(block);
    if (st != VYRE_OK) {
        free(g);
        return st;
    }
    *out = g;
    return VYRE_OK;
}

static enum vyre_status cu_graph_launch(void *ctx, void *graph, uint32_t times,
                                        struct vyre_timing *t, struct vyre_error *err) {
    struct cu_graph *g = graph;
    if (!g->g) return vyre_cuda_synchronize(((struct cu_ctx *)ctx)->d, err);
    return vyre_cuda_graph_launch(g->g, times, t, err);
}

static void cu_graph_free(void *ctx, void *graph) {
    (void)ctx;
    struct cu_graph *g = graph;
    vyre_cuda_graph_free(g->g);
    free(g);
}

static enum vyre_status cu_kernel_rounds(void *ctx, void *kernel, uint64_t *out,
                                         struct vyre_error *err) {
    (void)ctx;
    return vyre_cuda_kernel_rounds(kernel, out, err);
}

/* The megakernel path: vyre_cuda_grid_run takes the mode as an argument and copies a
 * cooperative run's rounds behind the kernel, inside the run's one synchronisation. */
static enum vyre_status cu_grid_run(void *ctx, void *kernel, const struct vyre_backend_launch *l,
                                    struct vyre_timing *t, uint64_t *rounds, void *watch,
                                    struct vyre_error *err) {
    uint32_t blocks;
    if (strcmp(vyre_cuda_kernel_grid_mode(kernel, &blocks), "plain") == 0) {
        *rounds = 0; /* no grid statements: an ordinary timed launch */
        if (t) return cu_launch_timed(ctx, kernel, l, t, err);
        enum vyre_status st = cu_launch(ctx, kernel, l, err);
        return st == VYRE_OK ? cu_synchronize(ctx, err) : st;
    }
    struct cu_scratch sc;
    struct vyre_cuda_args a;
    to_args1(l, &sc, &a);
    struct cu_wl *w = watch;
    struct vyre_cuda_grid_options go = {l->grid_sync, t, w ? vyre_cuda_worklist_header(w->w) : 0,
                                        w ? w->hdr : NULL};
    enum vyre_status st = vyre_cuda_grid_run(kernel, &a, &go, err);
    if (st == VYRE_OK) st = vyre_cuda_kernel_rounds(kernel, rounds, err);
    if (st == VYRE_OK && w) memcpy(&w->overflow, w->hdr + 28, 4); /* header +28: needed */
    return st;
}

static enum vyre_status cu_set_debug(void *ctx, bool on, struct vyre_error *err) {
    return vyre_cuda_set_debug(((struct cu_ctx *)ctx)->d, on, err);
}

static enum vyre_status cu_trim(void *ctx, struct vyre_error *err) {
    return vyre_cuda_trim(((struct cu_ctx *)ctx)->d, err);
}

static bool cu_lost(void *ctx) { return vyre_cuda_device_lost(((struct cu_ctx *)ctx)->d); }

static void *cu_native_device(void *ctx) { return ((struct cu_ctx *)ctx)->d; }

static uint64_t cu_buffer_address(void *ctx, void *buf) {
    (void)ctx;
    return vyre_cuda_buffer_pointer(buf);
}

static enum vyre_status cu_buffer_copy(void *ctx, void *src, void *dst_ctx, void *dst,
                                       enum vyre_type t, uint64_t count, struct vyre_error *err) {
    (void)ctx;
    (void)dst_ctx; /* the buffers know their devices: peer path or staged */
    return vyre_cuda_buffer_copy(src, 0, dst, 0, count * vyre_type_size(t), err);
}

static void *cu_kernel_native(void *ctx, void *kernel) {
    (void)ctx;
    return kernel; /* the handle is the vyre_cuda_kernel */
}

static void *cu_buffer_native(void *ctx, void *buf) {
    (void)ctx;
    return buf; /* the handle is the vyre_cuda_buffer */
}

static enum vyre_status cu_oob_report(void *ctx, struct vyre_backend_oob **out, size_t *n,
                                      struct vyre_error *err) {
    struct vyre_cuda_oob *r = NULL;
    size_t m = 0;
    enum vyre_status st = vyre_cuda_oob_report(((struct cu_ctx *)ctx)->d, &r, &m, err);
    if (st != VYRE_OK || m == 0) {
        free(r);
        return st;
    }
    struct vyre_backend_oob *o = malloc(m * sizeof *o);
    if (!o) {
        free(r);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "cuda backend: out of host memory for the debug report. Fix: "
                              "free memory");
    }
    for (size_t i = 0; i < m; i++) {
        snprintf(o[i].name, sizeof o[i].name, "%s", r[i].name);
        o[i].loads = r[i].loads;
        o[i].stores = r[i].stores;
    }
    free(r);
    *out = o;
    *n = m;
    return VYRE_OK;
}

/* ---- one-shot runs and worklists: the vyre_cuda_* calls as they are ----------------- */

static enum vyre_status cu_run(void *ctx, vyre_program *p, const struct vyre_backend_run_options *o,
                               void *const *resident, struct vyre_error *err) {
    struct cu_ctx *c = ctx;
    vyre_cuda_buffer *res[VYRE_MAX_BUFFERS];
    for (size_t i = 0; i < o->nbuffers; i++) res[i] = resident ? resident[i] : NULL;
    struct vyre_cuda_run_options ro = {.buffers = o->buffers,
                                       .resident = res,
                                       .nbuffers = o->nbuffers,
                                       .params = o->params,
                                       .nparams = o->nparams,
                                       .n = o->n,
                                       .grid = o->grid,
                                       .out = o->out,
                                       .timing = o->timing,
                                       .rounds = o->rounds,
                                       .grid_sync = o->grid_sync};
    return vyre_cuda_run(c->d, p, &ro, err);
}

static enum vyre_status cu_wl_alloc(void *ctx, enum vyre_type t, uint32_t capacity, void **out,
                                    struct vyre_error *err) {
    struct cu_wl *w = calloc(1, sizeof *w);
    if (!w)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "cuda backend: out of host memory for a worklist. Fix: free memory");
    enum vyre_status st =
        vyre_cuda_worklist_alloc(((struct cu_ctx *)ctx)->d, t, capacity, &w->w, err);
    if (st != VYRE_OK) {
        free(w);
        return st;
    }
    *out = w;
    return VYRE_OK;
}

static void cu_wl_free(void *ctx, void *wl) {
    (void)ctx;
    vyre_cuda_worklist_free(((struct cu_wl *)wl)->w);
    free(wl);
}

static enum vyre_status cu_wl_state(void *ctx, void *wl, struct vyre_backend_worklist_state *out,
                                    struct vyre_error *err) {
    (void)ctx;
    struct cu_wl *w = wl;
    struct vyre_worklist_arg a;
    enum vyre_status st = vyre_cuda_worklist_state(w->w, &a, err);
    if (st == VYRE_OK) {
        *out = (struct vyre_backend_worklist_state){a.cur_count, a.next_count, a.capacity,
                                                    a.overflow_needed};
        w->overflow = a.overflow_needed;
    }
    return st;
}

static enum vyre_status cu_wl_push(void *ctx, void *wl, const void *src, uint32_t n,
                                   struct vyre_error *err) {
    (void)ctx;
    return vyre_cuda_worklist_push(((struct cu_wl *)wl)->w, src, n, err);
}

static enum vyre_status cu_wl_items(void *ctx, void *wl, void *dst, uint32_t n,
                                    struct vyre_error *err) {
    (void)ctx;
    return vyre_cuda_worklist_items(((struct cu_wl *)wl)->w, dst, n, err);
}

/* a one-invocation launch on the stream: no host synchronisation */
static enum vyre_status cu_wl_advance(void *ctx, void *wl, struct vyre_error *err) {
    (void)ctx;
    return vyre_cuda_worklist_advance(((struct cu_wl *)wl)->w, err);
}

static enum vyre_status cu_wl_clear(void *ctx, void *wl, struct vyre_error *err) {
    (void)ctx;
    struct cu_wl *w = wl;
    w->overflow = 0;
    return vyre_cuda_worklist_clear(w->w, err);
}

/* known from the last watching grid run or state; 0 until then */
static uint32_t cu_wl_overflow(void *ctx, void *wl) {
    (void)ctx;
    return ((struct cu_wl *)wl)->overflow;
}

static void *cu_wl_native(void *ctx, void *wl) {
    (void)ctx;
    return ((struct cu_wl *)wl)->w;
}

static const struct vyre_backend_ops cu_ops = {
    .close = cu_close,
    .info = cu_info,
    .buffer_alloc = cu_buffer_alloc,
    .buffer_free = cu_buffer_free,
    .buffer_view = cu_buffer_view,
    .buffer_upload = cu_buffer_upload,
    .buffer_download = cu_buffer_download,
    .buffer_zero = cu_buffer_zero,
    .compile = cu_compile,
    .compile_many = cu_compile_many,
    .kernel_free = cu_kernel_free,
    .launch = cu_launch,
    .synchronize = cu_synchronize,
    .stats = cu_stats,
    .supports = cu_supports,
    .launch_timed = cu_launch_timed,
    .prepare = cu_prepare,
    .launch_prepared = cu_launch_prepared,
    .prepared_free = cu_prepared_free,
    .sequence = cu_sequence,
    .graph_capture = cu_graph_capture,
    .graph_launch = cu_graph_launch,
    .graph_free = cu_graph_free,
    .kernel_rounds = cu_kernel_rounds,
    .grid_run = cu_grid_run,
    .set_debug = cu_set_debug,
    .oob_report = cu_oob_report,
    .trim = cu_trim,
    .lost = cu_lost,
    .native_device = cu_native_device,
    .buffer_address = cu_buffer_address,
    .buffer_native = cu_buffer_native,
    .buffer_copy = cu_buffer_copy,
    .kernel_native = cu_kernel_native,
    .run = cu_run,
    .worklist_alloc = cu_wl_alloc,
    .worklist_free = cu_wl_free,
    .worklist_state = cu_wl_state,
    .worklist_push = cu_wl_push,
    .worklist_items = cu_wl_items,
    .worklist_advance = cu_wl_advance,
    .worklist_clear = cu_wl_clear,
    .worklist_overflow = cu_wl_overflow,
    .worklist_native = cu_wl_native,
    /* worklist_host: none (device memory) */
};

static bool cu_available(char *why, size_t whysz) {
    struct vyre_error err;
    vyre_error_clear(&err);
    if (!vyre_cuda_available(&err)) {
        snprintf(why, whysz, "%s", err.message);
        return false;
    }
    int n = 0;
    if (vyre_cuda_device_count(&n, &err) != VYRE_OK) {
        snprintf(why, whysz, "%s", err.message);
        return false;
    }
    if (n < 1) {
        snprintf(why, whysz,
                 "the CUDA driver loaded but reports no device. Fix: check nvidia-smi, or use "
                 "the reference backend");
        return false;
    }
    return true;
}

static enum vyre_status cu_open(int ordinal, const struct vyre_backend_options *o,
                                vyre_backend **out, struct vyre_error *err) {
    struct cu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "cuda backend: out of host memory. Fix: free memory");
    enum vyre_status st = vyre_cuda_device_open(ordinal, &c->d, err);
    if (st == VYRE_OK && o && o->on_oom) vyre_cuda_set_oom_handler(c->d, o->on_oom, o->oom_ud);
    if (st == VYRE_OK && o && o->debug) st = vyre_cuda_set_debug(c->d, true, err);
    if (st != VYRE_OK) {
        if (c->d) vyre_cuda_device_release(c->d);
        free(c);
        return st;
    }
    return vyre_backend_new("cuda", &cu_ops, c, out, err);
}

VYRE_INTERNAL const struct vyre_backend_registration vyre_backend_reg_cuda = {
    "cuda", 100, cu_available, cu_open};
