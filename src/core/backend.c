/* backend.c — the one wrapper layer of the backend interface (include/vyre_backend.h):
 * every public vyre_backend_* call checks its arguments here (NULL, another backend's
 * object, a range past the end, arguments that do not match the program), turns the
 * wrapper's objects into the backend's handles, and calls the backend's slot, or the
 * default of an optional slot the backend left NULL. Backends therefore never see a bad
 * argument, and a new backend writes only what it does differently.
 *
 * The wrapper tracks every object made from a backend in a list, so that closing the
 * backend frees what is left (in the order children before parents). */
#include <stdlib.h>
#include <string.h>

#include "backend_int.h"
#include "vyre_cuda.h"
#include "vyre_mega.h"

/* ---- static helpers --------------------------------------------------------------- */

static enum vyre_status null_arg(struct vyre_error *err, const char *fname, const char *what,
                                 const char *fix) {
    return vyre_error_set(err, VYRE_ERR_ARG, "%s: %s is NULL. Fix: %s", fname, what, fix);
}

void vyre_backend_link(struct vyre_backend_obj **head, struct vyre_backend_obj *o) {
    o->prev = NULL;
    o->next = *head;
    if (*head) (*head)->prev = o;
    *head = o;
}

void vyre_backend_unlink(struct vyre_backend_obj **head, struct vyre_backend_obj *o) {
    if (o->prev) o->prev->next = o->next;
    else *head = o->next;
    if (o->next) o->next->prev = o->prev;
    o->next = o->prev = NULL;
}

/* A grid sync mode outside enum vyre_grid_sync. */
static enum vyre_status bad_mode(const char *fname, enum vyre_grid_sync mode,
                                 struct vyre_error *err) {
    return vyre_error_set(err, VYRE_ERR_ARG,
                          "%s: %u is not a grid sync mode. Fix: pass VYRE_GRID_AUTO, "
                          "_COOPERATIVE, _SPLIT or _GRAPH",
                          fname, (unsigned)mode);
}

/* Element range [first, first + count) inside a buffer of total elements. */
static enum vyre_status check_range(const char *fname, uint64_t total, uint64_t first,
                                    uint64_t count, struct vyre_error *err) {
    if (first > total || count > total - first)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: elements [%llu, %llu) are outside the %llu held. Fix: keep "
                              "first + count <= the buffer's count",
                              fname, (unsigned long long)first, (unsigned long long)(first + count),
                              (unsigned long long)total);
    return VYRE_OK;
}

/* VYRE_ERR_ARG when b is a view whose owner was freed. */
static enum vyre_status check_live(const char *fname, const vyre_backend_buffer *b,
                                   struct vyre_error *err) {
    if (!b->orphan) return VYRE_OK;
    return vyre_error_set(err, VYRE_ERR_ARG,
                          "%s: this view's owner buffer was freed, so the view aliases nothing. "
                          "Fix: free views before their owner, or keep the owner alive while "
                          "its views are used",
                          fname);
}

/* A worklist argument: live, this backend's, of the declared type (want; VYRE_VOID: any). */
static enum vyre_status check_worklist(const char *fname, const vyre_backend_kernel *k,
                                       const vyre_backend_worklist *w, const char *what,
                                       enum vyre_type want, struct vyre_error *err) {
    if (!w)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: %s of program '%s' is unbound (NULL). Fix: bind a worklist "
                              "of this backend (vyre_backend_worklist_alloc)",
                              fname, what, vyre_program_name(k->p));
    if (w->obj.be != k->obj.be)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: %s belongs to another backend object. Fix: allocate it on "
                              "the kernel's backend",
                              fname, what);
    if (want != VYRE_VOID && w->type != want)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: %s is declared %s but the worklist holds %s. Fix: bind a "
                              "worklist of %s",
                              fname, what, vyre_type_name(want), vyre_type_name(w->type),
                              vyre_type_name(want));
    return VYRE_OK;
}

/* The worklists of a launch into l (handles into wh): one per declaration, and the one
 * that sizes it (a->sized), which replaces the §5 grid. */
static enum vyre_status bind_worklists(const char *fname, const vyre_backend_kernel *k,
                                       const struct vyre_backend_args *a, void **wh,
                                       struct vyre_backend_launch *l, struct vyre_error *err) {
    if (a->nworklists != k->nworklists)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: program '%s' declares %u worklists, the args bind %zu. "
                              "Fix: one worklist per worklist declaration, in declaration order",
                              fname, vyre_program_name(k->p), k->nworklists, a->nworklists);
    if (a->nworklists && !a->worklists)
        return null_arg(err, fname, "args.worklists", "point it at nworklists worklists");
    char what[96];
    for (uint32_t i = 0; i < k->nworklists; i++) {
        snprintf(what, sizeof what, "worklist '%s'", k->wname[i]);
        enum vyre_status st = check_worklist(fname, k, a->worklists[i], what, k->wtype[i], err);
        if (st != VYRE_OK) return st;
        wh[i] = a->worklists[i]->h;
    }
    l->worklists = wh;
    l->nworklists = k->nworklists;
    if (!a->sized) return VYRE_OK;
    enum vyre_status st =
        check_worklist(fname, k, a->sized, "the worklist sizing the launch", VYRE_VOID, err);
    if (st != VYRE_OK) return st;
    if (a->grid || a->n)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: a launch sized by a worklist takes no grid or n. Fix: pass "
                              "either args.sized or a geometry",
                              fname);
    if (!k->nworklists)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: the launch is sized by a worklist but program '%s' declares "
                              "none, so it cannot read the count where it runs. Fix: declare "
                              "(worklist NAME TYPE) in the program and bind it",
                              fname, vyre_program_name(k->p));
    if (k->has_grid)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: a program with grid statements cannot be sized by a "
                              "worklist (its rounds change the count). Fix: give it a grid (or "
                              "n = a number) covering the most items, and guard with (lt i "
                              "(len W)) inside",
                              fname);
    l->sized = a->sized->h;
    return VYRE_OK;
}

/* Checks a launch's arguments against k's program and fills l (handles into h, counts
 * into c, worklist handles into wh). check_geometry: also the §5 grid, for the calls that
 * record or queue several launches (a bad step is refused before any runs); a single
 * launch leaves it to the backend, which resolves the grid itself (no second pass). */
static enum vyre_status bind_args(const char *fname, const vyre_backend_kernel *k,
                                  const struct vyre_backend_args *a, void **h, uint64_t *c,
                                  void **wh, bool check_geometry, struct vyre_backend_launch *l,
                                  struct vyre_error *err) {
    if (!a) return null_arg(err, fname, "args", "pass a struct vyre_backend_args");
    if (a->nbuffers != k->nbuffers || a->nparams != k->nparams)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: program '%s' declares %u buffers and %u params, the args "
                              "bind %zu and %zu. Fix: one buffer per buffer declaration and "
                              "one value per param, in declaration order",
                              fname, vyre_program_name(k->p), k->nbuffers, k->nparams, a->nbuffers,
                              a->nparams);
    if ((a->nbuffers && !a->buffers) || (a->nparams && !a->params))
        return null_arg(err, fname, "args.buffers or args.params",
                        "point them at arrays of nbuffers / nparams entries");
    for (uint32_t i = 0; i < k->nbuffers; i++) {
        const vyre_backend_buffer *b = a->buffers[i];
        if (!b)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: buffer '%s' of program '%s' is unbound (NULL). Fix: "
                                  "bind a buffer of this backend",
                                  fname, k->bname[i], vyre_program_name(k->p));
        if (b->obj.be != k->obj.be)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: buffer '%s' belongs to another backend object. Fix: "
                                  "allocate it on the kernel's backend",
                                  fname, k->bname[i]);
        if (b->orphan) return check_live(fname, b, err);
        if (b->type != k->btype[i])
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: buffer '%s' is declared %s but the buffer holds %s. "
                                  "Fix: bind a %s buffer",
                                  fname, k->bname[i], vyre_type_name(k->btype[i]),
                                  vyre_type_name(b->type), vyre_type_name(k->btype[i]));
        h[i] = b->h;
        c[i] = b->count;
    }
    memset(l, 0, sizeof *l);
    l->buffers = h;
    l->counts = c;
    l->nbuffers = k->nbuffers;
    l->params = a->params;
    l->nparams = k->nparams;
    l->n = a->n;
    l->grid = a->grid;
    l->grid_sync = k->obj.be->grid_sync;
    if (k->nworklists || a->nworklists || a->sized) {
        enum vyre_status st = bind_worklists(fname, k, a, wh, l, err);
        if (st != VYRE_OK || l->sized) return st; /* sized: the count is the geometry */
    }
    if (!check_geometry) return VYRE_OK; /* one launch: the backend refuses a bad one */
    uint32_t g[3];
    struct vyre_grid_options go = {c, k->nbuffers, a->n, a->grid};
    return vyre_launch_grid(k->p, &go, g, err);
}

/* ---- recorded launches (shared with the reference backend) ------------------------ */

struct vyre_backend_launch *vyre_backend_launch_copy(const struct vyre_backend_launch *l) {
    size_t nb = l->nbuffers, np = l->nparams, nw = l->nworklists;
    size_t size = sizeof(struct vyre_backend_launch) +
                  (nb + nw) * (sizeof(void *) + sizeof(uint64_t)) + np * sizeof(vyre_bits) +
                  3 * sizeof(uint32_t);
    struct vyre_backend_launch *c = malloc(size);
    if (!c) return NULL;
    *c = *l;
    void **h = (void **)(c + 1);
    void **wh = h + nb;
    uint64_t *counts = (uint64_t *)(wh + nw);
    vyre_bits *params = (vyre_bits *)(counts + nb);
    uint32_t *grid = (uint32_t *)(params + np);
    if (nb) {
        memcpy(h, l->buffers, nb * sizeof *h);
        memcpy(counts, l->counts, nb * sizeof *counts);
    }
    if (np) memcpy(params, l->params, np * sizeof *params);
    if (nw) memcpy(wh, l->worklists, nw * sizeof *wh);
    if (l->grid) memcpy(grid, l->grid, 3 * sizeof *grid);
    c->buffers = h;
    c->worklists = nw ? wh : NULL;
    c->counts = counts;
    c->params = params;
    c->grid = l->grid ? grid : NULL;
    return c;
}

/* The default graph: the steps' kernels and launches copied; replay = launches. */
struct recorded {
    size_t n;
    void **kernels;
    struct vyre_backend_launch **steps;
};

static void recorded_free(struct recorded *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) free(r->steps[i]);
    free(r->steps);
    free(r->kernels);
    free(r);
}

static struct recorded *record(const void *const *kernels, const struct vyre_backend_launch *l,
                               size_t n) {
    struct recorded *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->kernels = calloc(n + 1, sizeof *r->kernels);
    r->steps = calloc(n + 1, sizeof *r->steps);
    if (!r->kernels || !r->steps) {
        recorded_free(r);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        r->kernels[i] = (void *)(uintptr_t)kernels[i];
        r->steps[i] = vyre_backend_launch_copy(&l[i]);
        r->n = i + 1;
        if (!r->steps[i]) {
            recorded_free(r);
            return NULL;
        }
    }
    return r;
}

/* ---- object lifetime -------------------------------------------------------------- */

enum vyre_status vyre_backend_new(const char *name, const struct vyre_backend_ops *ops, void *ctx,
                                  vyre_backend **out, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!out || !ops || !name) {
        if (ops && ops->close) ops->close(ctx);
        return null_arg(err, "vyre_backend_new", "name, ops or out", "pass all three");
    }
    *out = NULL;
    /* An unknown $VYRE_GRID_SYNC is an error, not a silent "auto": a misspelt or old
     * name ("host_loop", now "split") would otherwise change how grid programs run. */
    const char *gs = getenv("VYRE_GRID_SYNC");
    enum vyre_grid_sync mode = VYRE_GRID_AUTO;
    if (gs && *gs && !vyre_cuda_grid_sync_from_name(gs, &mode)) {
        if (ops->close) ops->close(ctx);
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "$VYRE_GRID_SYNC is \"%.64s\", not a grid sync mode%s. Fix: set it "
                              "to auto, cooperative, split or graph, or unset it.",
                              gs,
                              strcmp(gs, "host_loop") == 0 ? " (\"host_loop\" is now "
                                                             "called \"split\")"
                                                           : "");
    }
    vyre_backend *be = calloc(1, sizeof *be);
    if (!be) {
        if (ops->close) ops->close(ctx);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "vyre_backend_new: out of host memory. Fix: free memory");
    }
    be->grid_sync = mode;
    be->name = name;
    be->ops = ops;
    be->ctx = ctx;
    *out = be;
    return VYRE_OK;
}

static void free_prepared(vyre_backend_prepared *pl) {
    vyre_backend *be = pl->obj.be;
    vyre_backend_unlink(&be->prepared, &pl->obj);
    if (pl->native) be->ops->prepared_free(be->ctx, pl->h);
    else free(pl->h);
    free(pl);
}

static void free_graph(vyre_backend_graph *g) {
    vyre_backend *be = g->obj.be;
    vyre_backend_unlink(&be->graphs, &g->obj);
    if (g->native) be->ops->graph_free(be->ctx, g->h);
    else recorded_free(g->h);
    free(g);
}

static void free_kernel(vyre_backend_kernel *k) {
    vyre_backend *be = k->obj.be;
    vyre_backend_unlink(&be->kernels, &k->obj);
    be->ops->kernel_free(be->ctx, k->h);
    vyre_program_free(k->p);
    free(k);
}

/* Freeing an owner ends its views: they stay allocated (the caller still holds them and
 * frees them as usual) but every use is an error naming the cause. */
static void free_buffer(vyre_backend_buffer *b) {
    vyre_backend *be = b->obj.be;
    for (struct vyre_backend_obj *o = be->buffers; o; o = o->next) {
        vyre_backend_buffer *v = (vyre_backend_buffer *)o;
        if (v->parent == b) {
            v->parent = NULL;
            v->orphan = true;
        }
    }
    vyre_backend_unlink(&be->buffers, &b->obj);
    be->ops->buffer_free(be->ctx, b->h);
    free(b);
}

void vyre_backend_close(vyre_backend *be) {
    if (!be) return;
    while (be->prepared) free_prepared((vyre_backend_prepared *)be->prepared);
    while (be->graphs) free_graph((vyre_backend_graph *)be->graphs);
    while (be->kernels) free_kernel((vyre_backend_kernel *)be->kernels);
    vyre_backend_worklists_close(be);
    while (be->buffers) free_buffer((vyre_backend_buffer *)be->buffers); /* views stay valid */
    be->ops->close(be->ctx);
    free(be);
}

/* ---- capability queries --------------------------------------------------------------- */

const char *vyre_backend_name(const vyre_backend *be) { return be ? be->name : ""; }

enum vyre_status vyre_backend_info(vyre_backend *be, struct vyre_backend_info *out,
                                   struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be || !out)
        return null_arg(err, "vyre_backend_info", "be or out", "pass an open backend and a record");
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "%s", be->name);
    return be->ops->info(be->ctx, out, err);
}

bool vyre_backend_supports(vyre_backend *be, vyre_program *p, char *why, size_t whysz) {
    if (why && whysz) why[0] = '\0';
    if (!be || !p) {
        if (why && whysz)
            snprintf(why, whysz, "vyre_backend_supports: be or p is NULL. Fix: pass both");
        return false;
    }
    struct vyre_error err;
    if (vyre_program_check(p, &err) != VYRE_OK) {
        if (why && whysz) snprintf(why, whysz, "%s", err.message);
        return false;
    }
    return be->ops->supports ? be->ops->supports(be->ctx, p, why, whysz) : true;
}

/* ---- buffers --------------------------------------------------------------------------- */

enum vyre_status vyre_backend_buffer_alloc(vyre_backend *be, enum vyre_type t, uint64_t count,
                                           vyre_backend_buffer **out, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_buffer_alloc";
    if (!be || !out) return null_arg(err, fname, "be or out", "pass an open backend");
    *out = NULL;
    if ((unsigned)t >= VYRE_TYPE_COUNT)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: type %d is not a vyre type. Fix: use "
                              "VYRE_BOOL .. VYRE_F64",
                              fname, (int)t);
    if (count > 0xFFFFFFFFull)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "%s: %llu elements is more than a kernel can address "
                              "(4294967295). Fix: split the data",
                              fname, (unsigned long long)count);
    vyre_backend_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    enum vyre_status st = be->ops->buffer_alloc(be->ctx, t, count, &b->h, err);
    if (st != VYRE_OK) {
        free(b);
        return st;
    }
    b->obj.be = be;
    b->type = t;
    b->count = count;
    vyre_backend_link(&be->buffers, &b->obj);
    *out = b;
    return VYRE_OK;
}

void vyre_backend_buffer_free(vyre_backend_buffer *b) {
    if (b) free_buffer(b);
}

enum vyre_status vyre_backend_buffer_view(vyre_backend_buffer *b, uint64_t first, uint64_t count,
                                          vyre_backend_buffer **out, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_buffer_view";
    if (!b || !out) return null_arg(err, fname, "b or out", "pass a live buffer");
    *out = NULL;
    enum vyre_status st = check_live(fname, b, err);
    if (st == VYRE_OK) st = check_range(fname, b->count, first, count, err);
    if (st != VYRE_OK) return st;
    vyre_backend_buffer *owner = b->parent ? b->parent : b;
    uint64_t base = b->first + first;
    vyre_backend *be = b->obj.be;
    vyre_backend_buffer *v = calloc(1, sizeof *v);
    if (!v)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    st = be->ops->buffer_view(be->ctx, owner->h, b->type, base, count, &v->h, err);
    if (st != VYRE_OK) {
        free(v);
        return st;
    }
    v->obj.be = be;
    v->type = b->type;
    v->count = count;
    v->parent = owner;
    v->first = base;
    vyre_backend_link(&be->buffers, &v->obj);
    *out = v;
    return VYRE_OK;
}

enum vyre_status vyre_backend_buffer_upload(vyre_backend_buffer *b, uint64_t first, const void *src,
                                            uint64_t count, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_buffer_upload";
    if (!b || (!src && count)) return null_arg(err, fname, "b or src", "pass a buffer and data");
    enum vyre_status st = check_live(fname, b, err);
    if (st == VYRE_OK) st = check_range(fname, b->count, first, count, err);
    if (st != VYRE_OK) return st;
    vyre_backend *be = b->obj.be;
    return be->ops->buffer_upload(be->ctx, b->h, b->type, first, src, count, err);
}

enum vyre_status vyre_backend_buffer_download(vyre_backend_buffer *b, uint64_t first, void *dst,
                                              uint64_t count, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_buffer_download";
    if (!b || (!dst && count)) return null_arg(err, fname, "b or dst", "pass a buffer and memory");
    enum vyre_status st = check_live(fname, b, err);
    if (st == VYRE_OK) st = check_range(fname, b->count, first, count, err);
    if (st != VYRE_OK) return st;
    vyre_backend *be = b->obj.be;
    return be->ops->buffer_download(be->ctx, b->h, b->type, first, dst, count, err);
}

enum vyre_status vyre_backend_buffer_zero(vyre_backend_buffer *b, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!b) return null_arg(err, "vyre_backend_buffer_zero", "b", "pass a live buffer");
    enum vyre_status st = check_live("vyre_backend_buffer_zero", b, err);
    if (st != VYRE_OK) return st;
    return b->obj.be->ops->buffer_zero(b->obj.be->ctx, b->h, err);
}

enum vyre_type vyre_backend_buffer_type(const vyre_backend_buffer *b) {
    return b ? b->type : VYRE_VOID;
}
uint64_t vyre_backend_buffer_count(const vyre_backend_buffer *b) { return b ? b->count : 0; }
vyre_backend *vyre_backend_buffer_backend(const vyre_backend_buffer *b) {
    return b ? b->obj.be : NULL;
}
enum vyre_status vyre_backend_buffer_copy(vyre_backend_buffer *src, vyre_backend_buffer *dst,
                                          uint64_t count, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_buffer_copy";
    if (!src || !dst) return null_arg(err, fname, "src or dst", "pass two buffers");
    enum vyre_status st = check_live(fname, src, err);
    if (st == VYRE_OK) st = check_live(fname, dst, err);
    if (st != VYRE_OK) return st;
    if (src->type != dst->type || count > src->count || count > dst->count)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: cannot copy %llu %s elements from %llu into %llu %s. Fix: a "
                              "destination of the same type, count <= both buffers' counts",
                              fname, (unsigned long long)count, vyre_type_name(src->type),
                              (unsigned long long)src->count, (unsigned long long)dst->count,
                              vyre_type_name(dst->type));
    if (!count) return VYRE_OK;
    vyre_backend *sb = src->obj.be, *db = dst->obj.be;
    if (sb->ops == db->ops && sb->ops->buffer_copy)
        return sb->ops->buffer_copy(sb->ctx, src->h, db->ctx, dst->h, src->type, count, err);
    uint64_t bytes = count * vyre_type_size(src->type);
    void *tmp = bytes <= SIZE_MAX ? malloc((size_t)bytes) : NULL;
    if (!tmp)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "%s: out of host memory to stage %llu bytes. Fix: free memory or "
                              "copy in parts (views)",
                              fname, (unsigned long long)bytes);
    st = vyre_backend_buffer_download(src, 0, tmp, count, err);
    if (st == VYRE_OK) st = vyre_backend_buffer_upload(dst, 0, tmp, count, err);
    free(tmp);
    return st;
}

uint64_t vyre_backend_buffer_address(const vyre_backend_buffer *b) {
    if (!b || b->orphan || !b->count || !b->obj.be->ops->buffer_address) return 0;
    return b->obj.be->ops->buffer_address(b->obj.be->ctx, b->h);
}
void *vyre_backend_buffer_native(const vyre_backend_buffer *b) {
    if (!b || b->orphan || !b->obj.be->ops->buffer_native) return NULL;
    return b->obj.be->ops->buffer_native(b->obj.be->ctx, b->h);
}

/* ---- kernels ------------------------------------------------------------------------- */

/* A validated copy of p: the kernel owns it, the caller may free p. */
static enum vyre_status copy_program(vyre_program *p, vyre_program **out, struct vyre_error *err) {
    enum vyre_status st = vyre_program_copy(p, out, err);
    if (st == VYRE_OK) st = vyre_program_check(*out, err);
    return st;
}

enum vyre_status vyre_backend_compile(vyre_backend *be, vyre_program *p, vyre_backend_kernel **out,
                                      struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_compile";
    if (!be || !p || !out) return null_arg(err, fname, "be, p or out", "pass all three");
    *out = NULL;
    enum vyre_status st = vyre_program_check(p, err);
    if (st != VYRE_OK) return st;
    char why[1024];
    if (be->ops->supports && !be->ops->supports(be->ctx, p, why, sizeof why))
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED, "%s", why);
    vyre_backend_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    st = copy_program(p, &k->p, err);
    if (st == VYRE_OK) st = be->ops->compile(be->ctx, k->p, &k->h, err);
    if (st != VYRE_OK) {
        vyre_program_free(k->p);
        free(k);
        return st;
    }
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(k->p, i, &d); i++) {
        if (d.kind == VYRE_DECL_BUFFER) {
            k->btype[d.slot] = d.type;
            k->bname[d.slot] = d.name;
        } else if (d.kind == VYRE_DECL_WORKLIST) {
            k->wtype[d.slot] = d.type;
            k->wname[d.slot] = d.name;
        }
    }
    k->nbuffers = vyre_program_buffer_count(k->p);
    k->nparams = vyre_program_param_count(k->p);
    k->nworklists = vyre_program_worklist_count(k->p);
    k->has_grid = vyre_program_has_grid(k->p);
    k->obj.be = be;
    vyre_backend_link(&be->kernels, &k->obj);
    *out = k;
    return VYRE_OK;
}

void vyre_backend_kernel_free(vyre_backend_kernel *k) {
    if (k) free_kernel(k);
}

vyre_program *vyre_backend_kernel_program(const vyre_backend_kernel *k) { return k ? k->p : NULL; }

void *vyre_backend_kernel_native(const vyre_backend_kernel *k) {
    if (!k || !k->obj.be->ops->kernel_native) return NULL;
    return k->obj.be->ops->kernel_native(k->obj.be->ctx, k->h);
}

enum vyre_status vyre_backend_kernel_rounds(vyre_backend_kernel *k, uint64_t *out,
                                            struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!k || !out) return null_arg(err, "vyre_backend_kernel_rounds", "k or out", "pass both");
    *out = 0;
    vyre_backend *be = k->obj.be;
    return be->ops->kernel_rounds ? be->ops->kernel_rounds(be->ctx, k->h, out, err) : VYRE_OK;
}

enum vyre_status vyre_backend_launch(vyre_backend_kernel *k, const struct vyre_backend_args *a,
                                     struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!k) return null_arg(err, "vyre_backend_launch", "k", "pass a compiled kernel");
    void *h[VYRE_MAX_BUFFERS], *wh[VYRE_MAX_WORKLISTS];
    uint64_t c[VYRE_MAX_BUFFERS];
    struct vyre_backend_launch l;
    enum vyre_status st = bind_args("vyre_backend_launch", k, a, h, c, wh, false, &l, err);
    if (st != VYRE_OK) return st;
    return k->obj.be->ops->launch(k->obj.be->ctx, k->h, &l, err);
}

enum vyre_status vyre_backend_grid_run(vyre_backend_kernel *k, const struct vyre_backend_args *a,
                                       const struct vyre_grid_run_options *o,
                                       struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_grid_run";
    if (!k) return null_arg(err, fname, "k", "pass a compiled kernel");
    struct vyre_grid_run_options none = {VYRE_GRID_AUTO, NULL, NULL, NULL};
    if (!o) o = &none;
    if ((unsigned)o->grid_sync > VYRE_GRID_GRAPH) return bad_mode(fname, o->grid_sync, err);
    if (o->timing) memset(o->timing, 0, sizeof *o->timing);
    if (o->rounds) *o->rounds = 0;
    void *h[VYRE_MAX_BUFFERS], *wh[VYRE_MAX_WORKLISTS];
    uint64_t c[VYRE_MAX_BUFFERS];
    struct vyre_backend_launch l;
    enum vyre_status st = bind_args(fname, k, a, h, c, wh, true, &l, err);
    if (st != VYRE_OK) return st;
    if (o->grid_sync != VYRE_GRID_AUTO) l.grid_sync = o->grid_sync; /* this launch's only */
    vyre_backend *be = k->obj.be;
    if (o->watch && (st = check_worklist(fname, k, o->watch, "the watched worklist", VYRE_VOID,
                                         err)) != VYRE_OK)
        return st;
    uint64_t rounds = 0;
    if (be->ops->grid_run) {
        st = be->ops->grid_run(be->ctx, k->h, &l, o->timing, &rounds, o->watch ? o->watch->h : NULL,
                               err);
    } else {
        if (o->timing && be->ops->launch_timed) {
            st = be->ops->launch_timed(be->ctx, k->h, &l, o->timing, err);
        } else {
            uint64_t t0 = vyre_backend_now_ns();
            st = be->ops->launch(be->ctx, k->h, &l, err);
            uint64_t t1 = vyre_backend_now_ns();
            if (st == VYRE_OK) st = be->ops->synchronize(be->ctx, err);
            uint64_t t2 = vyre_backend_now_ns();
            if (o->timing) *o->timing = (struct vyre_timing){t2 - t0, t2 - t0, t1 - t0, t2 - t1};
        }
        if (st == VYRE_OK && be->ops->kernel_rounds)
            st = be->ops->kernel_rounds(be->ctx, k->h, &rounds, err);
    }
    if (st == VYRE_OK && o->rounds) *o->rounds = rounds;
    return st;
}

enum vyre_status vyre_backend_launch_timed(vyre_backend_kernel *k,
                                           const struct vyre_backend_args *a, struct vyre_timing *t,
                                           struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_launch_timed";
    if (!k || !t) return null_arg(err, fname, "k or t", "pass a kernel and a timing record");
    memset(t, 0, sizeof *t);
    void *h[VYRE_MAX_BUFFERS], *wh[VYRE_MAX_WORKLISTS];
    uint64_t c[VYRE_MAX_BUFFERS];
    struct vyre_backend_launch l;
    enum vyre_status st = bind_args(fname, k, a, h, c, wh, false, &l, err);
    if (st != VYRE_OK) return st;
    vyre_backend *be = k->obj.be;
    if (be->ops->launch_timed) return be->ops->launch_timed(be->ctx, k->h, &l, t, err);
    uint64_t t0 = vyre_backend_now_ns();
    st = be->ops->launch(be->ctx, k->h, &l, err);
    uint64_t t1 = vyre_backend_now_ns();
    if (st == VYRE_OK) st = be->ops->synchronize(be->ctx, err);
    uint64_t t2 = vyre_backend_now_ns();
    *t = (struct vyre_timing){t2 - t0, t2 - t0, t1 - t0, t2 - t1};
    return st;
}

enum vyre_status vyre_backend_prepare(vyre_backend_kernel *k, const struct vyre_backend_args *a,
                                      vyre_backend_prepared **out, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_prepare";
    if (!k || !out) return null_arg(err, fname, "k or out", "pass a kernel and an out pointer");
    *out = NULL;
    void *h[VYRE_MAX_BUFFERS], *wh[VYRE_MAX_WORKLISTS];
    uint64_t c[VYRE_MAX_BUFFERS];
    struct vyre_backend_launch l;
    enum vyre_status st = bind_args(fname, k, a, h, c, wh, true, &l, err);
    if (st != VYRE_OK) return st;
    vyre_backend *be = k->obj.be;
    vyre_backend_prepared *pl = calloc(1, sizeof *pl);
    if (!pl)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    pl->native = be->ops->prepare && be->ops->launch_prepared && be->ops->prepared_free;
    if (pl->native) {
        st = be->ops->prepare(be->ctx, k->h, &l, &pl->h, err);
    } else {
        pl->h = vyre_backend_launch_copy(&l);
        if (!pl->h)
            st = vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                                fname);
    }
    if (st != VYRE_OK) {
        free(pl);
        return st;
    }
    pl->obj.be = be;
    pl->k = k;
    vyre_backend_link(&be->prepared, &pl->obj);
    *out = pl;
    return VYRE_OK;
}

enum vyre_status vyre_backend_launch_prepared(vyre_backend_prepared *pl, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!pl) return null_arg(err, "vyre_backend_launch_prepared", "pl", "prepare it first");
    vyre_backend *be = pl->obj.be;
    if (pl->native) return be->ops->launch_prepared(be->ctx, pl->h, err);
    return be->ops->launch(be->ctx, pl->k->h, pl->h, err);
}

void vyre_backend_prepared_free(vyre_backend_prepared *pl) {
    if (pl) free_prepared(pl);
}

/* ---- sequences and graphs ----------------------------------------------------------------- */

/* The steps' kernels and launches checked into scratch (one block, freed by the caller). */
struct bound_steps {
    void *block; /* one allocation holding the arrays below */
    void **kernels;
    struct vyre_backend_launch *l;
    void **h, **wh; /* the steps' buffer and worklist handles, back to back */
    uint64_t *c;
};

/* Checks every step (its kernel this backend's, its arguments its program's) into one
 * block sized by the steps' own declarations: a sequence's cost follows its steps. */
static enum vyre_status bind_steps(const char *fname, vyre_backend *be,
                                   const struct vyre_backend_step *steps, size_t n,
                                   struct bound_steps *bs, struct vyre_error *err) {
    memset(bs, 0, sizeof *bs);
    if (n && !steps) return null_arg(err, fname, "steps", "pass an array of n steps");
    size_t nb = 0, nw = 0;
    for (size_t i = 0; i < n; i++) {
        const vyre_backend_kernel *k = steps[i].kernel;
        if (!k)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: step %zu has no kernel (NULL). Fix: "
                                  "compile one with vyre_backend_compile",
                                  fname, i + 1);
        if (k->obj.be != be)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: step %zu's kernel was compiled by another backend "
                                  "object. Fix: compile it on this backend",
                                  fname, i + 1);
        nb += k->nbuffers;
        nw += k->nworklists;
    }
    size_t size = (n + 1) * (sizeof(void *) + sizeof(struct vyre_backend_launch)) +
                  (nb + nw + 2) * sizeof(void *) + (nb + 1) * sizeof(uint64_t);
    char *m = bs->block = malloc(size);
    if (!m)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    bs->l = (struct vyre_backend_launch *)m; /* the most aligned first */
    bs->c = (uint64_t *)(bs->l + n + 1);
    bs->kernels = (void **)(bs->c + nb + 1);
    bs->h = bs->kernels + n + 1;
    bs->wh = bs->h + nb + 1;
    size_t ob = 0, ow = 0;
    for (size_t i = 0; i < n; i++) {
        const vyre_backend_kernel *k = steps[i].kernel;
        enum vyre_status st = bind_args(fname, k, &steps[i].args, bs->h + ob, bs->c + ob,
                                        bs->wh + ow, true, &bs->l[i], err);
        if (st != VYRE_OK) return st;
        bs->kernels[i] = k->h;
        ob += k->nbuffers;
        ow += k->nworklists;
    }
    return VYRE_OK;
}

static void free_steps(struct bound_steps *bs) { free(bs->block); }

/* The default sequence: launches in order, readbacks by download, timed around. */
static enum vyre_status default_sequence(vyre_backend *be, const struct bound_steps *bs, size_t n,
                                         const struct vyre_sequence_options *o, void *const *rb,
                                         struct vyre_error *err) {
    const struct vyre_backend_ops *ops = be->ops;
    uint64_t t0 = vyre_backend_now_ns();
    enum vyre_status st = VYRE_OK;
    for (size_t i = 0; i < o->prefix && st == VYRE_OK; i++)
        st = ops->launch(be->ctx, bs->kernels[i], &bs->l[i], err);
    for (uint32_t r = 0; r < o->times && st == VYRE_OK; r++)
        for (size_t i = o->prefix; i < n && st == VYRE_OK; i++)
            st = ops->launch(be->ctx, bs->kernels[i], &bs->l[i], err);
    uint64_t t1 = vyre_backend_now_ns();
    if (st == VYRE_OK) st = ops->synchronize(be->ctx, err);
    for (size_t i = 0; i < o->nreadback && st == VYRE_OK; i++) {
        const struct vyre_backend_readback *r = &o->readback[i];
        st = ops->buffer_download(be->ctx, rb[i], r->buf->type, r->first, r->dst, r->count, err);
    }
    uint64_t t2 = vyre_backend_now_ns();
    if (o->timing) *o->timing = (struct vyre_timing){t2 - t0, t2 - t0, t1 - t0, t2 - t1};
    return st;
}

enum vyre_status vyre_backend_sequence(vyre_backend *be, const struct vyre_backend_step *steps,
                                       size_t n, const struct vyre_sequence_options *o,
                                       struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_sequence";
    if (!be) return null_arg(err, fname, "be", "pass an open backend");
    struct vyre_sequence_options once = {0, 1, NULL, 0, NULL};
    if (!o) o = &once;
    if (o->prefix > n)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: prefix %zu is longer than the %zu steps. Fix: prefix <= n",
                              fname, o->prefix, n);
    if (o->nreadback && !o->readback)
        return null_arg(err, fname, "o->readback", "point it at nreadback entries");
    void *rb[64];
    void **rbh = o->nreadback <= 64 ? rb : calloc(o->nreadback, sizeof *rbh);
    if (!rbh)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    enum vyre_status st = VYRE_OK;
    for (size_t i = 0; i < o->nreadback && st == VYRE_OK; i++) {
        const struct vyre_backend_readback *r = &o->readback[i];
        if (!r->buf || (!r->dst && r->count))
            st = vyre_error_set(err, VYRE_ERR_ARG,
                                "%s: readback %zu has a NULL buffer or dst. "
                                "Fix: {buf, first, count, dst}",
                                fname, i + 1);
        else if (r->buf->obj.be != be)
            st = vyre_error_set(err, VYRE_ERR_ARG,
                                "%s: readback %zu's buffer belongs to another "
                                "backend object. Fix: read back buffers of this backend",
                                fname, i + 1);
        else if ((st = check_live(fname, r->buf, err)) == VYRE_OK)
            st = check_range(fname, r->buf->count, r->first, r->count, err);
        if (st == VYRE_OK) rbh[i] = r->buf->h;
    }
    struct bound_steps bs;
    if (st == VYRE_OK) st = bind_steps(fname, be, steps, n, &bs, err);
    else memset(&bs, 0, sizeof bs);
    if (st == VYRE_OK) {
        if (o->timing) memset(o->timing, 0, sizeof *o->timing);
        st = be->ops->sequence
                 ? be->ops->sequence(be->ctx, (const void *const *)bs.kernels, bs.l, n, o, rbh, err)
                 : default_sequence(be, &bs, n, o, rbh, err);
    }
    free_steps(&bs);
    if (rbh != rb) free(rbh);
    return st;
}

enum vyre_status vyre_backend_graph_capture(vyre_backend *be, const struct vyre_backend_step *steps,
                                            size_t n, vyre_backend_graph **out,
                                            struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_graph_capture";
    if (!be || !out) return null_arg(err, fname, "be or out", "pass an open backend");
    *out = NULL;
    vyre_backend_graph *g = calloc(1, sizeof *g);
    if (!g)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    struct bound_steps bs;
    enum vyre_status st = bind_steps(fname, be, steps, n, &bs, err);
    g->native = be->ops->graph_capture && be->ops->graph_launch && be->ops->graph_free;
    if (st == VYRE_OK && g->native) {
        st = be->ops->graph_capture(be->ctx, (const void *const *)bs.kernels, bs.l, n, &g->h, err);
    } else if (st == VYRE_OK) {
        g->h = record((const void *const *)bs.kernels, bs.l, n);
        if (!g->h)
            st = vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                                fname);
    }
    free_steps(&bs);
    if (st != VYRE_OK) {
        free(g);
        return st;
    }
    g->obj.be = be;
    g->nsteps = n;
    vyre_backend_link(&be->graphs, &g->obj);
    *out = g;
    return VYRE_OK;
}

enum vyre_status vyre_backend_graph_launch(vyre_backend_graph *g, uint32_t times,
                                           struct vyre_timing *t, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!g) return null_arg(err, "vyre_backend_graph_launch", "g", "capture a graph first");
    vyre_backend *be = g->obj.be;
    if (t) memset(t, 0, sizeof *t);
    if (g->native) return be->ops->graph_launch(be->ctx, g->h, times, t, err);
    const struct recorded *r = g->h;
    uint64_t t0 = vyre_backend_now_ns();
    enum vyre_status st = VYRE_OK;
    for (uint32_t k = 0; k < times && st == VYRE_OK; k++)
        for (size_t i = 0; i < r->n && st == VYRE_OK; i++)
            st = be->ops->launch(be->ctx, r->kernels[i], r->steps[i], err);
    uint64_t t1 = vyre_backend_now_ns();
    if (st == VYRE_OK) st = be->ops->synchronize(be->ctx, err);
    uint64_t t2 = vyre_backend_now_ns();
    if (t) *t = (struct vyre_timing){t2 - t0, t2 - t0, t1 - t0, t2 - t1};
    return st;
}

void vyre_backend_graph_free(vyre_backend_graph *g) {
    if (g) free_graph(g);
}

/* ---- megakernel modes ------------------------------------------------------------------ */

enum vyre_status vyre_backend_set_grid_sync(vyre_backend *be, enum vyre_grid_sync mode,
                                            struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be) return null_arg(err, "vyre_backend_set_grid_sync", "be", "pass an open backend");
    if ((unsigned)mode > VYRE_GRID_GRAPH) return bad_mode("vyre_backend_set_grid_sync", mode, err);
    be->grid_sync = mode;
    return VYRE_OK;
}

enum vyre_grid_sync vyre_backend_grid_sync(const vyre_backend *be) {
    return be ? be->grid_sync : VYRE_GRID_AUTO;
}

/* ---- state and telemetry --------------------------------------------------------------- */

enum vyre_status vyre_backend_synchronize(vyre_backend *be, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be) return null_arg(err, "vyre_backend_synchronize", "be", "pass an open backend");
    return be->ops->synchronize(be->ctx, err);
}

enum vyre_status vyre_backend_trim(vyre_backend *be, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be) return null_arg(err, "vyre_backend_trim", "be", "pass an open backend");
    return be->ops->trim ? be->ops->trim(be->ctx, err) : VYRE_OK;
}

bool vyre_backend_lost(vyre_backend *be) { return be && be->ops->lost && be->ops->lost(be->ctx); }

void *vyre_backend_native_device(vyre_backend *be) {
    return be && be->ops->native_device ? be->ops->native_device(be->ctx) : NULL;
}

enum vyre_status vyre_backend_stats(vyre_backend *be, struct vyre_backend_stat *out, size_t cap,
                                    size_t *n, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be || !n || (cap && !out))
        return null_arg(err, "vyre_backend_stats", "be, out or n", "pass a backend and room");
    *n = be->ops->stats(be->ctx, out, cap);
    return VYRE_OK;
}

bool vyre_backend_stat(vyre_backend *be, const char *name, uint64_t *value) {
    if (!be || !name || !value) return false;
    struct vyre_backend_stat s[VYRE_BACKEND_MAX_STATS];
    size_t n = be->ops->stats(be->ctx, s, VYRE_BACKEND_MAX_STATS);
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0) {
            *value = s[i].value;
            return true;
        }
    return false;
}

enum vyre_status vyre_backend_set_debug(vyre_backend *be, bool on, struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be) return null_arg(err, "vyre_backend_set_debug", "be", "pass an open backend");
    if (!be->ops->set_debug)
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "vyre_backend_set_debug: the %s backend has no debug mode. Fix: "
                              "run the program on the reference backend to count out-of-bounds "
                              "accesses",
                              be->name);
    return be->ops->set_debug(be->ctx, on, err);
}

static int oob_cmp(const void *a, const void *b) {
    return strcmp(((const struct vyre_backend_oob *)a)->name,
                  ((const struct vyre_backend_oob *)b)->name);
}

enum vyre_status vyre_backend_oob_report(vyre_backend *be, struct vyre_backend_oob **out, size_t *n,
                                         struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!be || !out || !n)
        return null_arg(err, "vyre_backend_oob_report", "be, out or n", "pass all three");
    *out = NULL;
    *n = 0;
    if (!be->ops->oob_report) return VYRE_OK;
    enum vyre_status st = be->ops->oob_report(be->ctx, out, n, err);
    if (st == VYRE_OK && *n > 1) qsort(*out, *n, sizeof **out, oob_cmp);
    return st;
}
