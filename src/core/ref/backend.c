/* backend.c — the reference backend behind the backend interface (vyre_backend.h): host
 * memory buffers and views, kernels run on the interpreter (vyre_launch_grid's grid,
 * computed by the wrapper, then vyre_ref_run), sequences and graphs as launches in
 * order (a graph is its recorded steps, replayed), counters and the debug report.
 * It reproduces what the Lua binding does for the reference today (src/lvyre/lkernel.c,
 * lsequence.c, lgraph.c, ldebug.c and lbackend.h's LVYRE_REF_STATS), counter names
 * included, so the binding can move onto it without a visible change.
 *
 * Everything is done when a call returns (the CPU has no queue): synchronize only
 * counts, and a timed call's wall, device and enqueue times are one measurement.
 * Threads: a context is used by one thread at a time; there is no global state. */
#include <stdlib.h>
#include <string.h>

#include "../backend_int.h"

/* The counters, under the binding's names (lbackend.h LVYRE_REF_STATS). be:run's `runs`
 * is not here: the binding counts it on every backend (a one-shot run, vyre_backend_run,
 * adds its invocations only). */
#define REF_STATS(X)     \
    X(launches)          \
    X(invocations)       \
    X(compiles)          \
    X(sequences)         \
    X(graph_launches)    \
    X(syncs)             \
    X(live_buffers)      \
    X(buffers_created)   \
    X(live_buffer_bytes) \
    X(peak_buffer_bytes) \
    X(uploads)           \
    X(downloads)         \
    X(bytes_up)          \
    X(bytes_down)        \
    X(live_kernels)      \
    X(live_graphs)

struct ref_stats {
#define REF_FIELD(name) uint64_t name;
    REF_STATS(REF_FIELD)
#undef REF_FIELD
};

struct ref_ctx {
    struct ref_stats st;
    uint64_t max_steps;
    bool debug;
    struct vyre_oob_count *oob; /* one run's counts, reused */
    uint32_t oob_cap;
    struct vyre_backend_oob *report; /* summed by declaration name since the last report */
    size_t nreport, report_cap;
};

struct ref_buf {
    void *host; /* NULL when empty */
    uint64_t bytes;
    bool view; /* aliases its owner's memory, counts in no statistic */
};

struct ref_kernel {
    vyre_program *p; /* the wrapper's copy, alive as long as the kernel */
    uint64_t rounds; /* converge rounds of the last launch */
};

/* A worklist: host state the interpreter pushes into in place. */
struct ref_wl {
    struct vyre_worklist_arg a; /* what vyre_ref_run_options.worklists binds */
    void *mem;                  /* both item arrays, capacity items each */
    size_t size;                /* bytes per item */
};

struct ref_graph {
    size_t n;
    struct ref_kernel **kernels;
    struct vyre_backend_launch **steps;
};

/* ---- static helpers ----------------------------------------------------------------- */

static enum vyre_status nomem(struct vyre_error *err, const char *what) {
    return vyre_error_set(err, VYRE_ERR_NOMEM,
                          "reference backend: out of host memory for %s. Fix: free memory or use "
                          "smaller buffers",
                          what);
}

/* Adds one run's counts to the report, by declaration name. */
static enum vyre_status report_add(struct ref_ctx *c, const vyre_program *p,
                                   struct vyre_error *err) {
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(p, i, &d); i++) {
        const struct vyre_oob_count *o = &c->oob[i];
        if (o->loads == 0 && o->stores == 0) continue;
        size_t j = 0;
        while (j < c->nreport && strcmp(c->report[j].name, d.name) != 0) j++;
        if (j == c->nreport) {
            if (c->nreport == c->report_cap) {
                size_t cap = c->report_cap ? c->report_cap * 2 : 8;
                struct vyre_backend_oob *r = realloc(c->report, cap * sizeof *r);
                if (!r) return nomem(err, "the debug report");
                c->report = r;
                c->report_cap = cap;
            }
            memset(&c->report[j], 0, sizeof c->report[j]);
            snprintf(c->report[j].name, sizeof c->report[j].name, "%s", d.name);
            c->nreport++;
        }
        c->report[j].loads += o->loads;
        c->report[j].stores += o->stores;
    }
    return VYRE_OK;
}

/* One interpreter run of p over bufs on grid (a launch or a one-shot run): the debug
 * counts into the report, the invocations counted; *rounds gets its converge rounds. */
static enum vyre_status interp(struct ref_ctx *c, vyre_program *p, struct vyre_buffer_arg *bufs,
                               size_t nbuffers, const vyre_bits *params, size_t nparams,
                               const uint32_t grid[3], struct vyre_worklist_arg *const *wl,
                               size_t nwl, uint64_t *rounds, struct vyre_error *err) {
    struct vyre_run_args a = {bufs, nbuffers, params, nparams, {grid[0], grid[1], grid[2]}};
    struct vyre_oob_count *oob = NULL;
    if (c->debug) {
        uint32_t nd = vyre_program_decl_count(p);
        if (nd + 1 > c->oob_cap) {
            struct vyre_oob_count *o = realloc(c->oob, (nd + 1) * sizeof *o);
            if (!o) return nomem(err, "the debug counts");
            c->oob = o;
            c->oob_cap = nd + 1;
        }
        memset(c->oob, 0, (nd + 1) * sizeof *c->oob);
        oob = c->oob;
    }
    struct vyre_ref_run_options o = {.max_steps = c->max_steps,
                                     .rounds = rounds,
                                     .oob = oob,
                                     .worklists = (struct vyre_worklist_arg **)wl,
                                     .nworklists = (uint32_t)nwl};
    enum vyre_status st = vyre_ref_run(p, &a, &o, err);
    if (st != VYRE_OK) return st;
    if (oob && (st = report_add(c, p, err)) != VYRE_OK) return st;
    uint32_t wg[3];
    vyre_program_workgroup(p, wg);
    c->st.invocations += (uint64_t)grid[0] * grid[1] * grid[2] * wg[0] * wg[1] * wg[2];
    return VYRE_OK;
}

/* One launch on the interpreter: what lkernel.c's run_reference does. */
static enum vyre_status run(struct ref_ctx *c, struct ref_kernel *k,
                            const struct vyre_backend_launch *l, struct vyre_error *err) {
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    for (size_t i = 0; i < l->nbuffers; i++) {
        const struct ref_buf *b = l->buffers[i];
        bufs[i] = (struct vyre_buffer_arg){b->host, l->counts[i]};
    }
    struct vyre_worklist_arg *wl[VYRE_MAX_WORKLISTS];
    for (size_t i = 0; i < l->nworklists; i++) wl[i] = &((struct ref_wl *)l->worklists[i])->a;
    uint32_t grid[3];
    if (l->sized) { /* one invocation per current item, counted now */
        uint32_t items = ((const struct ref_wl *)l->sized)->a.cur_count, wg[3];
        vyre_program_workgroup(k->p, wg);
        grid[0] = items / wg[0] + (items % wg[0] != 0);
        grid[1] = grid[2] = 1;
        if (items == 0) return VYRE_OK; /* no item: no invocation, no launch */
    } else {
        struct vyre_grid_options go = {l->counts, l->nbuffers, l->n, l->grid};
        enum vyre_status st = vyre_launch_grid(k->p, &go, grid, err);
        if (st != VYRE_OK) return st;
    }
    enum vyre_status st = interp(c, k->p, bufs, l->nbuffers, l->params, l->nparams, grid, wl,
                                 l->nworklists, &k->rounds, err);
    if (st == VYRE_OK) c->st.launches++;
    return st;
}

/* ---- slots --------------------------------------------------------------------------- */

static void ref_close(void *ctx) {
    struct ref_ctx *c = ctx;
    free(c->oob);
    free(c->report);
    free(c);
}

static enum vyre_status ref_info(void *ctx, struct vyre_backend_info *out, struct vyre_error *err) {
    (void)err;
    struct ref_ctx *c = ctx;
    snprintf(out->device, sizeof out->device, "CPU reference interpreter");
    out->max_threads_per_block = 1024;
    out->max_block[0] = out->max_block[1] = 1024;
    out->max_block[2] = 64;
    out->shared_bytes_per_block = 49152;
    out->warp_size = 1;
    out->cooperative = true; /* sections run one after the other over the whole grid */
    out->debug = c->debug;
    out->host_memory = true;
    out->runs_on_caller = true;
    return VYRE_OK;
}

/* memmove: src and dst may be views of one buffer that overlap */
static enum vyre_status ref_buffer_copy(void *ctx, void *src, void *dst_ctx, void *dst,
                                        enum vyre_type t, uint64_t count, struct vyre_error *err) {
    (void)ctx;
    (void)dst_ctx;
    (void)err;
    memmove(((struct ref_buf *)dst)->host, ((const struct ref_buf *)src)->host,
            (size_t)(count * vyre_type_size(t)));
    return VYRE_OK;
}

static uint64_t ref_buffer_address(void *ctx, void *buf) {
    (void)ctx;
    return (uint64_t)(uintptr_t)((const struct ref_buf *)buf)->host;
}

static enum vyre_status ref_buffer_alloc(void *ctx, enum vyre_type t, uint64_t count, void **out,
                                         struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    struct ref_buf *b = calloc(1, sizeof *b);
    if (!b) return nomem(err, "a buffer");
    b->bytes = count * vyre_type_size(t);
    if (b->bytes && !(b->host = calloc(1, (size_t)b->bytes))) {
        free(b);
        return nomem(err, "a buffer");
    }
    c->st.live_buffers++;
    c->st.buffers_created++;
    c->st.live_buffer_bytes += b->bytes;
    if (c->st.live_buffer_bytes > c->st.peak_buffer_bytes)
        c->st.peak_buffer_bytes = c->st.live_buffer_bytes;
    *out = b;
    return VYRE_OK;
}

static void ref_buffer_free(void *ctx, void *buf) {
    struct ref_ctx *c = ctx;
    struct ref_buf *b = buf;
    if (!b->view) {
        c->st.live_buffers--;
        c->st.live_buffer_bytes -= b->bytes;
        free(b->host);
    }
    free(b);
}

static enum vyre_status ref_buffer_view(void *ctx, void *parent, enum vyre_type t, uint64_t first,
                                        uint64_t count, void **out, struct vyre_error *err) {
    (void)ctx;
    const struct ref_buf *p = parent;
    struct ref_buf *v = calloc(1, sizeof *v);
    if (!v) return nomem(err, "a view");
    v->view = true;
    v->bytes = count * vyre_type_size(t);
    if (count) v->host = (char *)p->host + first * vyre_type_size(t);
    *out = v;
    return VYRE_OK;
}

static enum vyre_status ref_buffer_upload(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                          const void *src, uint64_t count, struct vyre_error *err) {
    (void)err;
    struct ref_ctx *c = ctx;
    struct ref_buf *b = buf;
    size_t es = vyre_type_size(t), nbytes = (size_t)count * es;
    if (nbytes) memcpy((char *)b->host + first * es, src, nbytes);
    c->st.uploads++;
    c->st.bytes_up += nbytes;
    return VYRE_OK;
}

static enum vyre_status ref_buffer_download(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                            void *dst, uint64_t count, struct vyre_error *err) {
    (void)err;
    struct ref_ctx *c = ctx;
    const struct ref_buf *b = buf;
    size_t es = vyre_type_size(t), nbytes = (size_t)count * es;
    if (nbytes) memcpy(dst, (const char *)b->host + first * es, nbytes);
    c->st.downloads++;
    c->st.bytes_down += nbytes;
    return VYRE_OK;
}

static enum vyre_status ref_buffer_zero(void *ctx, void *buf, struct vyre_error *err) {
    (void)ctx;
    (void)err;
    struct ref_buf *b = buf;
    if (b->bytes) memset(b->host, 0, (size_t)b->bytes);
    return VYRE_OK;
}

static enum vyre_status ref_compile(void *ctx, vyre_program *p, void **out,
                                    struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    struct ref_kernel *k = calloc(1, sizeof *k);
    if (!k) return nomem(err, "a kernel");
    k->p = p;
    c->st.compiles++;
    c->st.live_kernels++;
    *out = k;
    return VYRE_OK;
}

static void ref_kernel_free(void *ctx, void *kernel) {
    struct ref_ctx *c = ctx;
    c->st.live_kernels--;
    free(kernel);
}

static enum vyre_status ref_launch(void *ctx, void *kernel, const struct vyre_backend_launch *a,
                                   struct vyre_error *err) {
    return run(ctx, kernel, a, err);
}

static enum vyre_status ref_launch_timed(void *ctx, void *kernel,
                                         const struct vyre_backend_launch *a, struct vyre_timing *t,
                                         struct vyre_error *err) {
    uint64_t t0 = vyre_backend_now_ns();
    enum vyre_status st = run(ctx, kernel, a, err);
    t->wall_ns = t->device_ns = t->enqueue_ns = vyre_backend_now_ns() - t0;
    t->wait_ns = 0;
    return st;
}

static enum vyre_status ref_synchronize(void *ctx, struct vyre_error *err) {
    (void)err;
    ((struct ref_ctx *)ctx)->st.syncs++;
    return VYRE_OK;
}

static size_t ref_stats(void *ctx, struct vyre_backend_stat *out, size_t cap) {
    const struct ref_ctx *c = ctx;
    size_t n = 0;
#define REF_PUT(nm)                                                  \
    if (n < cap) out[n] = (struct vyre_backend_stat){#nm, c->st.nm}; \
    n++;
    REF_STATS(REF_PUT)
#undef REF_PUT
    return n < cap ? n : cap;
}

/* A sequence as lsequence.c runs it: the steps in order, then the readbacks. */
static enum vyre_status ref_sequence(void *ctx, const void *const *kernels,
                                     const struct vyre_backend_launch *steps, size_t n,
                                     const struct vyre_sequence_options *o, void *const *rb,
                                     struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    uint64_t t0 = vyre_backend_now_ns();
    enum vyre_status st = VYRE_OK;
    for (size_t i = 0; i < o->prefix && st == VYRE_OK; i++)
        st = run(c, (struct ref_kernel *)(uintptr_t)kernels[i], &steps[i], err);
    for (uint32_t r = 0; r < o->times && st == VYRE_OK; r++)
        for (size_t i = o->prefix; i < n && st == VYRE_OK; i++)
            st = run(c, (struct ref_kernel *)(uintptr_t)kernels[i], &steps[i], err);
    for (size_t i = 0; i < o->nreadback && st == VYRE_OK; i++) {
        const struct vyre_backend_readback *r = &o->readback[i];
        st = ref_buffer_download(c, rb[i], r->buf->type, r->first, r->dst, r->count, err);
    }
    if (st != VYRE_OK) return st;
    c->st.sequences++;
    if (o->timing) {
        o->timing->wall_ns = o->timing->device_ns = o->timing->enqueue_ns =
            vyre_backend_now_ns() - t0;
        o->timing->wait_ns = 0;
    }
    return VYRE_OK;
}

static void ref_graph_free(void *ctx, void *graph) {
    struct ref_graph *g = graph;
    ((struct ref_ctx *)ctx)->st.live_graphs--;
    for (size_t i = 0; i < g->n; i++) free(g->steps[i]);
    free(g->steps);
    free(g->kernels);
    free(g);
}

/* A graph is its recorded steps (lgraph.c): arguments by value, replayed in order. */
static enum vyre_status ref_graph_capture(void *ctx, const void *const *kernels,
                                          const struct vyre_backend_launch *steps, size_t n,
                                          void **out, struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    struct ref_graph *g = calloc(1, sizeof *g);
    if (!g) return nomem(err, "a graph");
    c->st.live_graphs++; /* ref_graph_free takes it back on failure */
    g->kernels = calloc(n + 1, sizeof *g->kernels);
    g->steps = calloc(n + 1, sizeof *g->steps);
    if (!g->kernels || !g->steps) {
        ref_graph_free(c, g);
        return nomem(err, "a graph");
    }
    for (size_t i = 0; i < n; i++) {
        g->kernels[i] = (struct ref_kernel *)(uintptr_t)kernels[i];
        g->steps[i] = vyre_backend_launch_copy(&steps[i]);
        g->n = i + 1;
        if (!g->steps[i]) {
            ref_graph_free(c, g);
            return nomem(err, "a graph");
        }
    }
    *out = g;
    return VYRE_OK;
}

static enum vyre_status ref_graph_launch(void *ctx, void *graph, uint32_t times,
                                         struct vyre_timing *t, struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    const struct ref_graph *g = graph;
    uint64_t t0 = vyre_backend_now_ns();
    for (uint32_t r = 0; r < times; r++) {
        for (size_t i = 0; i < g->n; i++) {
            enum vyre_status st = run(c, g->kernels[i], g->steps[i], err);
            if (st != VYRE_OK) return st;
        }
        c->st.graph_launches++;
    }
    if (t) {
        t->wall_ns = t->device_ns = t->enqueue_ns = vyre_backend_now_ns() - t0;
        t->wait_ns = 0;
    }
    return VYRE_OK;
}

static enum vyre_status ref_kernel_rounds(void *ctx, void *kernel, uint64_t *out,
                                          struct vyre_error *err) {
    (void)ctx;
    (void)err;
    *out = ((const struct ref_kernel *)kernel)->rounds;
    return VYRE_OK;
}

/* Switching either way starts a new report (ldebug.c). */
static enum vyre_status ref_set_debug(void *ctx, bool on, struct vyre_error *err) {
    (void)err;
    struct ref_ctx *c = ctx;
    c->debug = on;
    c->nreport = 0;
    return VYRE_OK;
}

static enum vyre_status ref_oob_report(void *ctx, struct vyre_backend_oob **out, size_t *n,
                                       struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    if (c->nreport == 0) return VYRE_OK;
    struct vyre_backend_oob *r = malloc(c->nreport * sizeof *r);
    if (!r) return nomem(err, "the debug report");
    memcpy(r, c->report, c->nreport * sizeof *r);
    *out = r;
    *n = c->nreport;
    c->nreport = 0;
    return VYRE_OK;
}

/* ---- one-shot runs ------------------------------------------------------------------ */

/* be:run's reference path: results are computed in place in out[i] (seeded with the
 * input), read slots read the caller's data, and what has no home gets scratch memory
 * (a write slot nobody wants back, data NULL). The caller's data is never written. */
static enum vyre_status ref_run(void *ctx, vyre_program *p,
                                const struct vyre_backend_run_options *o, void *const *resident,
                                struct vyre_error *err) {
    struct ref_ctx *c = ctx;
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    void *scratch[VYRE_MAX_BUFFERS] = {0};
    uint64_t counts[VYRE_MAX_BUFFERS];
    enum vyre_status st = VYRE_OK;
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(p, i, &d) && st == VYRE_OK; i++) {
        if (d.kind != VYRE_DECL_BUFFER) continue;
        uint32_t s = d.slot;
        const struct vyre_buffer_arg *in = &o->buffers[s];
        counts[s] = in->count;
        size_t bytes = (size_t)(in->count * vyre_type_size(d.type));
        bool writes = d.access != VYRE_ACCESS_READ;
        void *out = writes && o->out ? o->out[s] : NULL;
        if (resident && resident[s]) {
            bufs[s] = (struct vyre_buffer_arg){((struct ref_buf *)resident[s])->host, in->count};
        } else if (out || (writes && bytes) || !in->data) {
            void *home = out;
            if (!home && bytes && !(home = scratch[s] = calloc(1, bytes)))
                st = nomem(err, "a run's buffer");
            if (home && home != in->data) {
                if (in->data) memcpy(home, in->data, bytes);
                else memset(home, 0, bytes);
            }
            bufs[s] = (struct vyre_buffer_arg){bytes ? home : NULL, in->count};
        } else {
            bufs[s] = *in; /* read: the interpreter never writes it */
        }
    }
    uint32_t grid[3] = {1, 1, 1};
    struct vyre_grid_options go = {counts, o->nbuffers, o->n, o->grid};
    if (st == VYRE_OK) st = vyre_launch_grid(p, &go, grid, err);
    uint64_t rounds = 0, t0 = vyre_backend_now_ns();
    if (st == VYRE_OK)
        st = interp(c, p, bufs, o->nbuffers, o->params, o->nparams, grid, NULL, 0, &rounds, err);
    if (st == VYRE_OK && o->timing) {
        o->timing->wall_ns = o->timing->device_ns = o->timing->enqueue_ns =
            vyre_backend_now_ns() - t0;
        o->timing->wait_ns = 0;
    }
    if (st == VYRE_OK && o->rounds) *o->rounds = rounds;
    for (size_t s = 0; s < o->nbuffers; s++) free(scratch[s]);
    return st;
}

/* ---- worklists: host state the interpreter pushes into in place ---------------------- */

static enum vyre_status ref_wl_alloc(void *ctx, enum vyre_type t, uint32_t capacity, void **out,
                                     struct vyre_error *err) {
    (void)ctx;
    struct ref_wl *w = calloc(1, sizeof *w);
    size_t bytes = (size_t)capacity * vyre_type_size(t);
    if (w) w->mem = calloc(2, bytes);
    if (!w || !w->mem) {
        free(w);
        return nomem(err, "a worklist");
    }
    w->size = vyre_type_size(t);
    w->a.cur = w->mem;
    w->a.next = (char *)w->mem + bytes;
    w->a.capacity = capacity;
    *out = w;
    return VYRE_OK;
}

static void ref_wl_free(void *ctx, void *wl) {
    (void)ctx;
    struct ref_wl *w = wl;
    free(w->mem);
    free(w);
}

static enum vyre_status ref_wl_state(void *ctx, void *wl, struct vyre_backend_worklist_state *out,
                                     struct vyre_error *err) {
    (void)ctx;
    (void)err;
    const struct vyre_worklist_arg *a = &((struct ref_wl *)wl)->a;
    *out = (struct vyre_backend_worklist_state){a->cur_count, a->next_count, a->capacity,
                                                a->overflow_needed};
    return VYRE_OK;
}

static enum vyre_status ref_wl_push(void *ctx, void *wl, const void *src, uint32_t n,
                                    struct vyre_error *err) {
    (void)ctx;
    struct ref_wl *w = wl;
    uint32_t have = w->a.cur_count < w->a.capacity ? w->a.cur_count : w->a.capacity;
    if ((uint64_t)have + n > w->a.capacity)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "worklist push: %u items after %u current ones need capacity "
                              "%llu, the worklist has %u. Fix: create it with a capacity of at "
                              "least %llu.",
                              n, have, (unsigned long long)have + n, w->a.capacity,
                              (unsigned long long)have + n);
    if (n) memcpy((char *)w->a.cur + (size_t)have * w->size, src, (size_t)n * w->size);
    w->a.cur_count = have + n;
    return VYRE_OK;
}

static enum vyre_status ref_wl_items(void *ctx, void *wl, void *dst, uint32_t n,
                                     struct vyre_error *err) {
    (void)ctx;
    (void)err;
    struct ref_wl *w = wl;
    if (n) memcpy(dst, w->a.cur, (size_t)n * w->size);
    return VYRE_OK;
}

/* the arrays swap; the pushed count (at most the capacity) becomes current */
static enum vyre_status ref_wl_advance(void *ctx, void *wl, struct vyre_error *err) {
    (void)ctx;
    (void)err;
    struct vyre_worklist_arg *a = &((struct ref_wl *)wl)->a;
    void *cur = a->cur;
    a->cur = a->next;
    a->next = cur;
    a->cur_count = a->next_count < a->capacity ? a->next_count : a->capacity;
    a->next_count = 0;
    return VYRE_OK;
}

static enum vyre_status ref_wl_clear(void *ctx, void *wl, struct vyre_error *err) {
    (void)ctx;
    (void)err;
    struct vyre_worklist_arg *a = &((struct ref_wl *)wl)->a;
    a->cur_count = a->next_count = a->overflow_needed = 0;
    return VYRE_OK;
}

static uint32_t ref_wl_overflow(void *ctx, void *wl) {
    (void)ctx;
    return ((struct ref_wl *)wl)->a.overflow_needed;
}

static struct vyre_worklist_arg *ref_wl_host(void *ctx, void *wl) {
    (void)ctx;
    return &((struct ref_wl *)wl)->a;
}

static const struct vyre_backend_ops ref_ops = {
    .close = ref_close,
    .info = ref_info,
    .buffer_alloc = ref_buffer_alloc,
    .buffer_free = ref_buffer_free,
    .buffer_view = ref_buffer_view,
    .buffer_upload = ref_buffer_upload,
    .buffer_download = ref_buffer_download,
    .buffer_zero = ref_buffer_zero,
    .compile = ref_compile,
    .kernel_free = ref_kernel_free,
    .launch = ref_launch,
    .synchronize = ref_synchronize,
    .stats = ref_stats,
    .launch_timed = ref_launch_timed,
    .sequence = ref_sequence,
    .graph_capture = ref_graph_capture,
    .graph_launch = ref_graph_launch,
    .graph_free = ref_graph_free,
    .kernel_rounds = ref_kernel_rounds,
    .set_debug = ref_set_debug,
    .oob_report = ref_oob_report,
    .buffer_address = ref_buffer_address,
    .buffer_copy = ref_buffer_copy,
    .run = ref_run,
    .worklist_alloc = ref_wl_alloc,
    .worklist_free = ref_wl_free,
    .worklist_state = ref_wl_state,
    .worklist_push = ref_wl_push,
    .worklist_items = ref_wl_items,
    .worklist_advance = ref_wl_advance,
    .worklist_clear = ref_wl_clear,
    .worklist_overflow = ref_wl_overflow,
    .worklist_host = ref_wl_host,
    /* supports: every valid program runs here (the wrapper validates);
     * prepare: the wrapper's default (checked arguments kept, launched by ref_launch) */
};

static enum vyre_status ref_open(int ordinal, const struct vyre_backend_options *o,
                                 vyre_backend **out, struct vyre_error *err) {
    if (ordinal != 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_open: the reference backend has one device, "
                              "ordinal %d does not exist. Fix: pass ordinal 0",
                              ordinal);
    struct ref_ctx *c = calloc(1, sizeof *c);
    if (!c) return nomem(err, "the backend");
    if (o) {
        c->max_steps = o->max_steps;
        c->debug = o->debug;
    }
    return vyre_backend_new("reference", &ref_ops, c, out, err);
}

VYRE_INTERNAL const struct vyre_backend_registration vyre_backend_reg_reference = {"reference", 0,
                                                                                   NULL, ref_open};
