/* backend_mega.c — vyre_backend_megakernel for every backend (docs/GRID.md): the steps
 * are composed into one program with grid statements (vyre_mega_build, src/core/ir/
 * mega.c), compiled on the backend like any program and run once by
 * vyre_backend_grid_run in the call's grid sync mode (the backend's when AUTO), so a
 * backend that runs grid programs runs megakernels with its grid_run slot or the
 * default (launch, synchronize, rounds). Bound buffers are told
 * apart by object: one vyre_backend_buffer is one buffer id of the composition.
 * No plan cache here: the composed program is compiled each call (the CUDA runtime's
 * PTX and module caches make a repeat cheap); a caller that repeats a plan keeps a
 * vyre_mega_cache (mega_cache.c), as the binding does per backend
 * (lmega.c). Also the clock of timed calls. */
#include <stdlib.h>
#include <string.h>

#include "backend_int.h"
#include "vyre_cuda.h"
#include "vyre_mega.h"

uint64_t vyre_backend_now_ns(void) { return vyre_cuda_now_ns(); }

/* Scratch of one composition, freed in one place. */
struct mega_scratch {
    struct vyre_mega_step *ms;
    uint32_t *ids;                   /* per step, per buffer slot */
    vyre_backend_buffer **byid;      /* buffer id -> buffer */
    enum vyre_type *types;           /* buffer id -> element type */
    struct vyre_mega_memory *memory; /* buffer id -> where it lives (views share a root) */
    const vyre_bits **params;        /* per step */
    vyre_bits *mparams;              /* the composed program's */
    struct vyre_mega *m;
    vyre_backend_kernel *k;
};

static void scratch_free(struct mega_scratch *s) {
    vyre_backend_kernel_free(s->k);
    vyre_mega_free(s->m);
    free(s->ms);
    free(s->ids);
    free(s->byid);
    free(s->memory);
    free(s->types);
    free(s->params);
    free(s->mparams);
}

static uint32_t buffer_id(struct mega_scratch *s, uint32_t *nids, vyre_backend_buffer *b) {
    for (uint32_t i = 0; i < *nids; i++)
        if (s->byid[i] == b) return i;
    s->byid[*nids] = b;
    s->types[*nids] = b->type;
    return (*nids)++;
}

/* Where each buffer id lives: its owner (ids of one owner share a root) and byte range,
 * so the planner orders steps by memory: a view written after its parent is read is a
 * dependency even though the two are different buffers (ordering by object raced). */
static bool buffer_memory(struct mega_scratch *s, uint32_t nids) {
    s->memory = calloc(nids + 1, sizeof *s->memory);
    vyre_backend_buffer **owner = calloc(nids + 1, sizeof *owner);
    if (!s->memory || !owner) {
        free(owner);
        return false;
    }
    for (uint32_t i = 0; i < nids; i++) {
        vyre_backend_buffer *r = s->byid[i];
        uint64_t first = 0;
        for (; r->parent; r = r->parent) first += r->first;
        owner[i] = r;
        uint32_t root = i;
        for (uint32_t j = 0; j < i; j++)
            if (owner[j] == r) {
                root = s->memory[j].root;
                break;
            }
        size_t es = vyre_type_size(s->byid[i]->type);
        s->memory[i] = (struct vyre_mega_memory){root, first * es, s->byid[i]->count * es};
    }
    free(owner);
    return true;
}

static enum vyre_status compose(vyre_backend *be, const struct vyre_backend_step *steps, size_t n,
                                const struct vyre_megakernel_options *o, struct mega_scratch *s,
                                uint32_t *nids, uint32_t grid[3], struct vyre_error *err) {
    const char *fname = "vyre_backend_megakernel";
    size_t maxids = n * VYRE_MAX_BUFFERS + 1;
    s->ms = calloc(n + 1, sizeof *s->ms);
    s->ids = calloc(maxids, sizeof *s->ids);
    s->byid = calloc(maxids, sizeof *s->byid);
    s->types = calloc(maxids, sizeof *s->types);
    s->params = calloc(n + 1, sizeof *s->params);
    if (!s->ms || !s->ids || !s->byid || !s->types || !s->params)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    for (size_t j = 0; j < n; j++) {
        const vyre_backend_kernel *k = steps[j].kernel;
        const struct vyre_backend_args *a = &steps[j].args;
        if (!k || k->obj.be != be)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: step %zu's kernel is NULL or of another backend object. "
                                  "Fix: compile every step on this backend",
                                  fname, j + 1);
        /* the launch's own checks (counts, types, backend) and its §5 grid */
        uint64_t c[VYRE_MAX_BUFFERS];
        if (a->nbuffers != k->nbuffers || a->nparams != k->nparams ||
            (a->nbuffers && !a->buffers) || (a->nparams && !a->params))
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: step %zu binds %zu buffers and %zu params, program '%s' "
                                  "declares %u and %u. Fix: bind every declaration",
                                  fname, j + 1, a->nbuffers, a->nparams, vyre_program_name(k->p),
                                  k->nbuffers, k->nparams);
        uint32_t *ids = s->ids + j * VYRE_MAX_BUFFERS;
        for (uint32_t i = 0; i < k->nbuffers; i++) {
            vyre_backend_buffer *b = a->buffers[i];
            if (!b || b->obj.be != be || b->type != k->btype[i] || b->orphan)
                return vyre_error_set(err, VYRE_ERR_ARG,
                                      "%s: step %zu's buffer '%s' is NULL, of another backend, an "
                                      "ended view or not %s. Fix: bind a %s buffer of this backend",
                                      fname, j + 1, k->bname[i], vyre_type_name(k->btype[i]),
                                      vyre_type_name(k->btype[i]));
            c[i] = b->count;
            ids[i] = buffer_id(s, nids, b);
        }
        struct vyre_grid_options go = {c, k->nbuffers, a->n, a->grid};
        enum vyre_status st = vyre_launch_grid(k->p, &go, s->ms[j].grid, err);
        if (st != VYRE_OK) return st;
        s->ms[j].program = k->p;
        s->ms[j].buffers = ids;
        s->params[j] = a->params;
    }
    struct vyre_mega_options mo = {(uint32_t)o->prefix,
                                   o->flag == NULL,
                                   o->flag != NULL,
                                   0,
                                   NULL,
                                   0,
                                   NULL,
                                   false,
                                   0,
                                   NULL,
                                   NULL};
    if (o->flag) {
        if (o->flag->obj.be != be || o->flag->type != VYRE_U32 || o->flag->count < 1 ||
            o->flag->orphan)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "%s: the converge flag must be a u32 buffer of this backend "
                                  "with at least one element. Fix: allocate it with "
                                  "vyre_backend_buffer_alloc(be, VYRE_U32, 1, ...)",
                                  fname);
        mo.flag = buffer_id(s, nids, o->flag);
    }
    if (!buffer_memory(s, *nids))
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    mo.memory = s->memory;
    enum vyre_status st = vyre_mega_build(s->ms, (uint32_t)n, *nids, s->types, &mo, &s->m, err);
    if (st != VYRE_OK) return st;
    s->mparams = calloc(vyre_program_param_count(s->m->program) + 1, sizeof *s->mparams);
    if (!s->mparams)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "%s: out of host memory. Fix: free memory",
                              fname);
    struct vyre_mega_args_options ao = {s->ms, s->params, o->times, o->max_rounds};
    return vyre_mega_args(s->m, &ao, s->mparams, grid, err);
}

enum vyre_status vyre_backend_megakernel(vyre_backend *be, const struct vyre_backend_step *steps,
                                         size_t n, const struct vyre_megakernel_options *o,
                                         struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    const char *fname = "vyre_backend_megakernel";
    if (!be || !o || (n && !steps))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: be, steps or o is NULL. Fix: pass a backend, n steps and "
                              "options",
                              fname);
    if (n == 0 || n > UINT32_MAX || o->prefix > n)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "%s: %zu steps with prefix %zu. Fix: at least one step, prefix <= "
                              "the number of steps",
                              fname, n, o->prefix);
    if (o->timing) memset(o->timing, 0, sizeof *o->timing);
    if (o->rounds) *o->rounds = 0;
    struct mega_scratch s;
    memset(&s, 0, sizeof s);
    uint32_t nids = 0, grid[3];
    enum vyre_status st = compose(be, steps, n, o, &s, &nids, grid, err);
    if (st == VYRE_OK) st = vyre_backend_compile(be, s.m->program, &s.k, err);
    if (st == VYRE_OK) {
        /* one launch in the call's mode (the backend's when AUTO), one synchronisation:
         * timing and rounds come back within it; compile time is not part of it */
        struct vyre_backend_args a = {.buffers = s.byid,
                                      .nbuffers = nids,
                                      .params = s.mparams,
                                      .nparams = vyre_program_param_count(s.m->program),
                                      .n = 0,
                                      .grid = grid};
        struct vyre_grid_run_options go = {
            .grid_sync = o->grid_sync, .timing = o->timing, .rounds = o->rounds};
        st = vyre_backend_grid_run(s.k, &a, &go, err);
    }
    scratch_free(&s);
    return st;
}
