/* launch.c — dispatch on the device's stream: single launches of compiled kernels
 * (the hot path: values written into the argument block built at compile time,
 * geometry checked against the device limits, no allocation, no strings), raw
 * launches, sequences with one final synchronisation and ranged readback, the
 * one-shot `run` (transient pool memory, pinned staging, one sync), and timing. */
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "nccl_int.h"
#include "trace.h"

static enum vyre_status limit_error(vyre_cuda_kernel *k, struct vyre_error *err, const char *what,
                                    uint64_t got, uint64_t limit, const char *fix) {
    return vyre_error_set(err, VYRE_ERR_LIMIT,
                          "launch of '%s' refused: %s is %llu, the device limit is %llu "
                          "(%s). Fix: %s",
                          k->name, what, (unsigned long long)got, (unsigned long long)limit,
                          k->dev->info.name, fix);
}

/* Checks block and grid against the device's (and the function's) limits. */
static enum vyre_status check_geometry(vyre_cuda_kernel *k, const uint32_t grid[3],
                                       const uint32_t block[3], struct vyre_error *err) {
    const struct vyre_cuda_info *in = &k->dev->info;
    static const char *const bnames[3] = {"workgroup x", "workgroup y", "workgroup z"};
    static const char *const gnames[3] = {"grid x", "grid y", "grid z"};
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    for (int a = 0; a < 3; a++) {
        if (block[a] > (uint32_t)in->max_block[a])
            return limit_error(k, err, bnames[a], block[a], (uint64_t)in->max_block[a],
                               "use a smaller workgroup on that axis.");
        if (grid[a] > (uint32_t)in->max_grid[a])
            return limit_error(k, err, gnames[a], grid[a], (uint64_t)in->max_grid[a],
                               "launch fewer workgroups on that axis or spread them over x.");
    }
    /* a block the kernel cannot run: refused in the capability check's words */
    if (threads > (uint64_t)in->max_threads_per_block ||
        (k->max_threads > 0 && threads > (uint64_t)k->max_threads))
        return vyre_cu_refuse(k, NULL, threads, k->max_threads, false, -1, VYRE_ERR_LIMIT, err);
    return VYRE_OK;
}

static enum vyre_status bad_args(vyre_cuda_kernel *k, struct vyre_error *err, const char *what,
                                 size_t got, uint32_t want) {
    return vyre_error_set(err, VYRE_ERR_ARG,
                          "launch of '%s': %zu %s given, the program declares %u. Fix: pass one "
                          "per declaration, in declaration order.",
                          k->name, got, what, want);
}

/* Writes the argument values of `a` into slot (the kernel's layout: pointers, counts,
 * params) and the checked grid into g. Shared by every launch path. */
static enum vyre_status fill_args(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                  uint64_t *slot, uint32_t g[3], struct vyre_error *err) {
    if (a->nbuffers != k->nbuffers) return bad_args(k, err, "buffers", a->nbuffers, k->nbuffers);
    if (a->nparams != k->nparams) return bad_args(k, err, "params", a->nparams, k->nparams);
    if (a->wn && k->grid) /* its rounds change the count: which one would size it? */
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "launch of '%s': a program with grid statements cannot be sized "
                              "by a worklist. Fix: give it a grid (or n = a number) covering the "
                              "most items, and guard with (lt i (len W)) inside",
                              k->name);
    uint64_t counts[VYRE_MAX_BUFFERS + 1];
    uint32_t nb = k->nbuffers;
    for (uint32_t i = 0; i < nb; i++) {
        const vyre_cuda_buffer *b = a->buffers[i];
        if (!b)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "launch of '%s': buffer %u is missing. "
                                  "Fix: bind a device buffer to every buffer "
                                  "declaration.",
                                  k->name, i + 1);
        if (b->dev != k->dev)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "launch of '%s': buffer %u belongs to "
                                  "another device object. Fix: create buffers "
                                  "with the kernel's device.",
                                  k->name, i + 1);
        if (b->type != k->buf_types[i])
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "launch of '%s': buffer %u holds %s, the "
                                  "program declares %s. Fix: bind a buffer of "
                                  "the declared type.",
                                  k->name, i + 1, vyre_type_name(b->type),
                                  vyre_type_name(k->buf_types[i]));
        /* The PTX drops bounds checks that a declared COUNT proves, so the buffer must
         * hold exactly that many elements. */
        if (k->buf_counts[i] && b->count != k->buf_counts[i])
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "launch of '%s': buffer %u has %llu elements, the program "
                                  "declares %u. Fix: bind a buffer of exactly %u elements.",
                                  k->name, i + 1, (unsigned long long)b->count, k->buf_counts[i],
                                  k->buf_counts[i]);
        if (b->count == 0 && (k->buf_nonempty[i / 32] >> (i % 32) & 1u))
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "launch of '%s': buffer %u has 0 elements, but it is the flag "
                                  "of a converge loop, which reads and writes element 0. Fix: "
                                  "bind a buffer of at least 1 element.",
                                  k->name, i + 1);
        slot[i] = (uint64_t)b->ptr;
        slot[nb + i] = b->count; /* a .u32 parameter: the low 4 bytes, little-endian */
        counts[i] = b->count;
    }
    for (uint32_t i = 0; i < k->nparams; i++) slot[2 * nb + i] = a->params[i];
    struct vyre_grid_options go = {counts, nb, a->n, a->grid};
    enum vyre_status st = vyre_launch_grid(&k->geom, &go, g, err);
    if (st != VYRE_OK) return st;
    return check_geometry(k, g, k->geom.workgroup, err);
}

/* Most invocations a vector launch stands for: its thread index times 4 and its
 * stride (4 x its threads, at most n + 4 x (workgroup + 1)) stay below 2^32. */
#define VECTOR_MAX_INVOCATIONS (UINT32_MAX - 8192u)

/* The vector entry of an elementwise program (ARCHITECTURE.md §5), used when the
 * kernel has one and the program's grid g is 1-D: it runs the same g[0] x workgroup
 * invocations, 4 per thread. Writes their number into the argument after the
 * program's, replaces g by the vector entry's grid and returns true; false leaves
 * both alone (the program's own entry runs). */
static bool vector_launch(const vyre_cuda_kernel *k, uint64_t *slot, uint32_t g[3]) {
    uint32_t wg = k->geom.workgroup[0];
    if (!k->vfn || g[1] != 1 || g[2] != 1 || k->vmax_threads < (int)wg) return false;
    uint64_t n = (uint64_t)g[0] * wg;
    if (n > VECTOR_MAX_INVOCATIONS) return false;
    slot[2 * k->nbuffers + k->nparams] = n; /* .u32 vyre_vn: the low 4 bytes */
    uint64_t threads = (n + 3) / 4;
    g[0] = (uint32_t)((threads + wg - 1) / wg);
    return true;
}

enum vyre_status vyre_cu_fill_args(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                   uint64_t *slot, uint32_t g[3], struct vyre_error *err) {
    return fill_args(k, a, slot, g, err);
}

static enum vyre_status launch_one(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                   struct vyre_error *err) {
    uint32_t g[3];
    enum vyre_status st = fill_args(k, a, k->slot, g, err);
    if (st != VYRE_OK) return st;
    if (k->grid)
        return vyre_cu_grid_launch(k, k->slot, g, a->grid_sync, err); /* grid_launch.c */
    bool vec = false;
    if (a->wn) { /* sized by a worklist: NAME_wl on a bounded grid (worklist.c) */
        if ((st = vyre_cu_wl_sized(k, a->wn, k->slot, g, err)) != VYRE_OK) return st;
    } else {
        vec = vector_launch(k, k->slot, g);
    }
    VYRE_CU_CHECK(k->dev,
                  vyre_cu.cuLaunchKernel(a->wn ? k->wfn
                                         : vec ? k->vfn
                                               : k->fn,
                                         g[0], g[1], g[2], k->geom.workgroup[0],
                                         k->geom.workgroup[1], k->geom.workgroup[2], 0,
                                         k->dev->stream, k->argv, NULL),
                  "cuLaunchKernel", k->name, err);
    k->dev->st.launches++;
    k->dev->st.vector_launches += vec;
    return VYRE_OK;
}

/* Every launch of launch, sequence and run comes here: one range per kernel launch. */
enum vyre_status vyre_cu_launch_one(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                    struct vyre_error *err) {
    if (k->coll) return vyre_nccl_step_run(k->coll, err); /* a collective step (nccl_group.c) */
    int tr = vyre_trace_push("launch", k->name);
    enum vyre_status st = launch_one(k, a, err);
    vyre_trace_pop(tr);
    return st;
}

enum vyre_status vyre_cuda_prepare(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                   struct vyre_cuda_prepared *out, struct vyre_error *err) {
    if (!k || !a || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "prepare: NULL argument. Fix: pass a kernel, "
                              "its args and the struct to fill.");
    memset(out, 0, sizeof *out);
    enum vyre_status st = vyre_cu_enter(k->dev, err);
    if (st != VYRE_OK) return st;
    st = fill_args(k, a, out->slot, out->grid, err);
    if (st != VYRE_OK) return st;
    if (a->wn) {
        st = vyre_cu_wl_sized(k, a->wn, out->slot, out->grid, err);
        if (st != VYRE_OK) return st;
        out->sized = true;
    } else {
        out->vector = vector_launch(k, out->slot, out->grid);
    }
    if (k->oob) out->slot[k->oob_at] = (uint64_t)k->oob; /* debug.c: its counters */
    for (uint32_t i = 0; i < VYRE_CUDA_MAX_ARGS; i++) out->argv[i] = &out->slot[i];
    out->kernel = k;
    out->grid_sync = a->grid_sync;
    return VYRE_OK;
}

static enum vyre_status launch_prepared(vyre_cuda_kernel *k, struct vyre_cuda_prepared *pl,
                                        struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(k->dev, err);
    if (st != VYRE_OK) return st;
    if (k->grid) return vyre_cu_grid_launch(k, pl->slot, pl->grid, pl->grid_sync, err);
    VYRE_CU_CHECK(k->dev,
                  vyre_cu.cuLaunchKernel(pl->sized    ? k->wfn
                                         : pl->vector ? k->vfn
                                                      : k->fn,
                                         pl->grid[0], pl->grid[1], pl->grid[2],
                                         k->geom.workgroup[0], k->geom.workgroup[1],
                                         k->geom.workgroup[2], 0, k->dev->stream, pl->argv, NULL),
                  "cuLaunchKernel", k->name, err);
    k->dev->st.launches++;
    k->dev->st.vector_launches += pl->vector;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_launch_prepared(struct vyre_cuda_prepared *pl, struct vyre_error *err) {
    vyre_cuda_kernel *k = pl ? pl->kernel : NULL;
    if (!k)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "launch of an unprepared launch. Fix: call "
                              "vyre_cuda_prepare first.");
    int tr = vyre_trace_push("prepared launch", k->name);
    enum vyre_status st = launch_prepared(k, pl, err);
    vyre_trace_pop(tr);
    return st;
}

enum vyre_status vyre_cuda_launch(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                  struct vyre_error *err) {
    if (!k || !a)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "launch: kernel or args is NULL. "
                              "Fix: pass both.");
    enum vyre_status st = vyre_cu_enter(k->dev, err);
    if (st != VYRE_OK) return st;
    return vyre_cu_launch_one(k, a, err);
}

enum vyre_status vyre_cuda_launch_raw(vyre_cuda_kernel *k, const uint32_t grid[3],
                                      const uint32_t block[3], uint32_t shared_bytes, void **params,
                                      struct vyre_error *err) {
    if (!k) return vyre_error_set(err, VYRE_ERR_ARG, "launch_raw: kernel is NULL. Fix: pass one.");
    enum vyre_status st = vyre_cu_enter(k->dev, err);
    if (st != VYRE_OK) return st;
    for (int a = 0; a < 3; a++)
        if (grid[a] == 0 || block[a] == 0)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "launch_raw of '%s': grid and block need "
                                  "at least 1 on every axis. Fix: use 1 for "
                                  "unused axes.",
                                  k->name);
    st = check_geometry(k, grid, block, err);
    if (st != VYRE_OK) return st;
    int tr = vyre_trace_push("raw launch", k->name);
    CUresult r = vyre_cu.cuLaunchKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1],
                                        block[2], shared_bytes, k->dev->stream, params, NULL);
    vyre_trace_pop(tr);
    if (r != CUDA_SUCCESS) return vyre_cu_fail(k->dev, r, "cuLaunchKernel", k->name, err);
    k->dev->st.launches++;
    return VYRE_OK;
}

/* ---- timing ---------------------------------------------------------------- */

enum vyre_status vyre_cu_timer_start(struct vyre_cuda_device *d, struct vyre_cu_timer *t,
                                     struct vyre_timing *out, struct vyre_error *err) {
    t->out = out;
    if (!out) return VYRE_OK;
    memset(out, 0, sizeof *out);
    t->t0 = vyre_cu_now_ns();
    VYRE_CU_CHECK(d, vyre_cu.cuEventRecord(d->ev_start, d->stream), "cuEventRecord", NULL, err);
    return VYRE_OK;
}

enum vyre_status vyre_cu_timer_enqueued(struct vyre_cuda_device *d, struct vyre_cu_timer *t,
                                        struct vyre_error *err) {
    if (!t->out) return VYRE_OK;
    VYRE_CU_CHECK(d, vyre_cu.cuEventRecord(d->ev_stop, d->stream), "cuEventRecord", NULL, err);
    t->t_enq = vyre_cu_now_ns();
    return VYRE_OK;
}

/* Call after the final synchronisation. */
void vyre_cu_timer_finish(struct vyre_cuda_device *d, struct vyre_cu_timer *t) {
    if (!t->out) return;
    uint64_t t1 = vyre_cu_now_ns();
    float ms = 0.0f;
    if (vyre_cu.cuEventElapsedTime(&ms, d->ev_start, d->ev_stop) != CUDA_SUCCESS) ms = 0.0f;
    t->out->wall_ns = t1 - t->t0;
    t->out->enqueue_ns = t->t_enq - t->t0;
    t->out->wait_ns = t1 - t->t_enq;
    t->out->device_ns = (uint64_t)((double)ms * 1e6);
    d->st.timed_runs++;
    d->st.timed_wall_ns += t->out->wall_ns;
    d->st.timed_enqueue_ns += t->out->enqueue_ns;
    d->st.timed_wait_ns += t->out->wait_ns;
    d->st.timed_device_ns += t->out->device_ns;
}

/* ---- sequences ------------------------------------------------------------- */

static enum vyre_status sequence(vyre_cuda_device *d, const struct vyre_cuda_step *steps,
                                 size_t nsteps, const struct vyre_cuda_sequence_options *o,
                                 struct vyre_error *err) {
    size_t prefix = o->prefix, nrb = o->nreadback;
    uint32_t repeat = o->times;
    const struct vyre_cuda_readback *rb = o->readback;
    struct vyre_timing *timing = o->timing;
    if (nrb && !rb)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "sequence: nreadback is %zu but readback is NULL. Fix: pass the "
                              "readbacks, or nreadback = 0.",
                              nrb);
    if (nsteps && !steps)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "sequence: %zu steps but steps is NULL. Fix: pass the steps.",
                              nsteps);
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    if (prefix > nsteps)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "sequence: prefix %zu is longer than the %zu "
                              "steps. Fix: prefix <= number of steps.",
                              prefix, nsteps);
    for (size_t i = 0; i < nsteps; i++)
        if (!steps[i].kernel || steps[i].kernel->dev != d ||
            (!steps[i].kernel->module && !steps[i].kernel->coll))
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "sequence: step %zu has no compiled kernel "
                                  "of this device. Fix: compile every step's "
                                  "program on this device.",
                                  i + 1);
    uint64_t total = 0;
    for (size_t i = 0; i < nrb; i++) {
        if (!rb[i].buf || rb[i].buf->dev != d)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "sequence: readback %zu has no buffer of "
                                  "this device. Fix: read back device buffers "
                                  "of this device.",
                                  i + 1);
        const struct vyre_cuda_buffer *b = rb[i].buf;
        if (rb[i].count > b->count || rb[i].first > b->count - rb[i].count)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "sequence: readback %zu asks for elements [%llu, %llu + %llu) "
                                  "of a buffer of %llu elements. Fix: keep first + count within "
                                  "the buffer (ranges are in elements).",
                                  i + 1, (unsigned long long)rb[i].first,
                                  (unsigned long long)rb[i].first, (unsigned long long)rb[i].count,
                                  (unsigned long long)b->count);
        if (rb[i].count && !rb[i].dst)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "sequence: readback %zu has no destination. Fix: pass dst.",
                                  i + 1);
        total += rb[i].count * vyre_type_size(b->type);
    }
    struct vyre_cu_timer t;
    st = vyre_cu_timer_start(d, &t, timing, err);
    for (size_t i = 0; i < prefix && st == VYRE_OK; i++)
        st = vyre_cu_launch_one(steps[i].kernel, &steps[i].args, err);
    for (uint32_t r = 0; r < repeat && st == VYRE_OK; r++)
        for (size_t i = prefix; i < nsteps && st == VYRE_OK; i++)
            st = vyre_cu_launch_one(steps[i].kernel, &steps[i].args, err);
    if (st != VYRE_OK) return st;
    /* Readbacks land in one pinned block when it fits, so the copies stay async. */
    uint64_t stage = 0, cls = 0;
    bool staged = total > 0 && total <= d->pinned.cap &&
                  vyre_cu_pool_get(d, &d->pinned, total, &stage, &cls, NULL) == VYRE_OK;
    uint64_t off = 0;
    for (size_t i = 0; i < nrb && st == VYRE_OK; i++) {
        uint64_t es = vyre_type_size(rb[i].buf->type), nbytes = rb[i].count * es;
        void *dst = staged ? (void *)(uintptr_t)(stage + off) : rb[i].dst;
        CUresult r = nbytes ? vyre_cu.cuMemcpyDtoHAsync(dst, rb[i].buf->ptr + rb[i].first * es,
                                                        (size_t)nbytes, d->stream)
                            : CUDA_SUCCESS;
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemcpyDtoHAsync", NULL, err);
        off += nbytes;
    }
    if (st == VYRE_OK) st = vyre_cu_timer_enqueued(d, &t, err);
    if (st == VYRE_OK) st = vyre_cu_sync(d, NULL, err);
    if (st == VYRE_OK) {
        vyre_cu_timer_finish(d, &t);
        off = 0;
        for (size_t i = 0; i < nrb; i++) {
            uint64_t nbytes = rb[i].count * vyre_type_size(rb[i].buf->type);
            if (staged && nbytes)
                memcpy(rb[i].dst, (void *)(uintptr_t)(stage + off), (size_t)nbytes);
            off += nbytes;
            d->st.bytes_down += nbytes;
        }
    }
    if (staged) vyre_cu_pool_put(d, &d->pinned, stage, cls);
    return st;
}

/* One range over the whole sequence (each launch inside has its own), named by its
 * first step's program. */
enum vyre_status vyre_cuda_sequence(vyre_cuda_device *d, const struct vyre_cuda_step *steps,
                                    size_t nsteps, const struct vyre_cuda_sequence_options *o,
                                    struct vyre_error *err) {
    struct vyre_cuda_sequence_options all = {.prefix = nsteps}; /* o NULL: each step once */
    if (!o) o = &all;
    const vyre_cuda_kernel *k0 = steps && nsteps ? steps[0].kernel : NULL;
    int tr = vyre_trace_push("sequence", k0 ? k0->name : NULL);
    enum vyre_status st = sequence(d, steps, nsteps, o, err);
    vyre_trace_pop(tr);
    return st;
}

/* ---- run --------------------------------------------------------------------- */

/* cls value of a buffer slot bound to the caller's resident buffer: nothing to return. */
#define RUN_RESIDENT UINT64_MAX

struct run_state {
    vyre_cuda_kernel *k;
    struct vyre_cuda_buffer bufs[VYRE_MAX_BUFFERS];
    vyre_cuda_buffer *ptrs[VYRE_MAX_BUFFERS];
    uint64_t cls[VYRE_MAX_BUFFERS];
    uint64_t stage, stage_cls;
    uint32_t nb;
};

static void run_release(struct vyre_cuda_device *d, struct run_state *rs) {
    for (uint32_t i = 0; i < rs->nb; i++)
        if (rs->cls[i] != RUN_RESIDENT)
            vyre_cu_pool_put(d, &d->pool, (uint64_t)rs->bufs[i].ptr, rs->cls[i]);
    if (rs->stage) vyre_cu_pool_put(d, &d->pinned, rs->stage, rs->stage_cls);
    vyre_cuda_kernel_free(rs->k);
}

static enum vyre_status run(vyre_cuda_device *d, vyre_program *p,
                            const struct vyre_cuda_run_options *o, struct vyre_error *err) {
    const struct vyre_buffer_arg *buffers = o->buffers;
    vyre_cuda_buffer *const *resident = o->resident;
    size_t nbuffers = o->nbuffers, nparams = o->nparams;
    const vyre_bits *params = o->params;
    uint64_t n = o->n;
    const uint32_t *grid = o->grid;
    void *const *out = o->out;
    struct vyre_timing *timing = o->timing;
    if (o->rounds) *o->rounds = 0;
    if ((nbuffers && !buffers) || (nparams && !params))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_run: buffers or params is NULL while its count is not "
                              "zero. Fix: pass the arrays (a resident buffer's entry may hold "
                              "NULL data).");
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    struct run_state *rs = calloc(1, sizeof *rs);
    if (!rs)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "run: out of host memory. Fix: free "
                              "memory.");
    st = vyre_cuda_compile(d, p, &rs->k, err);
    if (st != VYRE_OK) {
        free(rs);
        return st;
    }
    vyre_cuda_kernel *k = rs->k;
    if (nbuffers != k->nbuffers || nparams != k->nparams) {
        st = nbuffers != k->nbuffers ? bad_args(k, err, "buffers", nbuffers, k->nbuffers)
                                     : bad_args(k, err, "params", nparams, k->nparams);
        goto done;
    }
    /* Device blocks from the transient pool, and one pinned staging block for all
     * uploads and downloads when it fits the staging cap. */
    uint64_t up = 0, down = 0;
    for (uint32_t i = 0; i < k->nbuffers; i++) {
        vyre_cuda_buffer *in_place = resident ? resident[i] : NULL;
        if (in_place) {
            /* The caller's device buffer is used as it is: no copy in or out. */
            if (in_place->dev != d || in_place->type != k->buf_types[i]) {
                st = vyre_error_set(err, VYRE_ERR_ARG,
                                    "run of '%s': resident buffer %u is "
                                    "not a %s buffer of this device. Fix: pass a buffer made "
                                    "by this device with the declared type",
                                    k->name, i + 1, vyre_type_name(k->buf_types[i]));
                goto done;
            }
            rs->ptrs[i] = in_place;
            rs->cls[i] = RUN_RESIDENT;
            rs->nb = i + 1;
            continue;
        }
        uint64_t bytes = buffers[i].count * vyre_type_size(k->buf_types[i]);
        if (buffers[i].count > UINT32_MAX) {
            st = vyre_error_set(err, VYRE_ERR_LIMIT,
                                "run of '%s': buffer %u has %llu elements, "
                                "more than the u32 ABI limit. Fix: split "
                                "the data.",
                                k->name, i + 1, (unsigned long long)buffers[i].count);
            goto done;
        }
        uint64_t block = 0;
        st = vyre_cu_pool_get(d, &d->pool, bytes ? bytes : 1, &block, &rs->cls[i], err);
        if (st != VYRE_OK) goto done;
        rs->bufs[i] = (struct vyre_cuda_buffer){
            d, (CUdeviceptr)block, bytes, buffers[i].count, k->buf_types[i], d->generation, false};
        rs->ptrs[i] = &rs->bufs[i];
        rs->nb = i + 1;
        if (buffers[i].data) up += bytes;
        if (k->buf_access[i] != VYRE_ACCESS_READ) down += bytes;
    }
    if (up + down > 0 && up + down <= d->pinned.cap)
        if (vyre_cu_pool_get(d, &d->pinned, up + down, &rs->stage, &rs->stage_cls, NULL) != VYRE_OK)
            rs->stage = 0;
    struct vyre_cu_timer t;
    st = vyre_cu_timer_start(d, &t, timing, err);
    if (st != VYRE_OK) goto done;
    uint64_t off = 0;
    for (uint32_t i = 0; i < k->nbuffers && st == VYRE_OK; i++) {
        struct vyre_cuda_buffer *b = &rs->bufs[i];
        CUresult r;
        if (rs->cls[i] == RUN_RESIDENT) continue;
        if (!buffers[i].data) {
            r = b->bytes ? vyre_cu.cuMemsetD8Async(b->ptr, 0, (size_t)b->bytes, d->stream)
                         : CUDA_SUCCESS;
            if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemsetD8Async", k->name, err);
            continue;
        }
        const void *src = buffers[i].data;
        if (rs->stage) {
            void *s = (void *)(uintptr_t)(rs->stage + off);
            memcpy(s, src, (size_t)b->bytes);
            src = s;
            off += b->bytes;
        }
        r = b->bytes ? vyre_cu.cuMemcpyHtoDAsync(b->ptr, src, (size_t)b->bytes, d->stream)
                     : CUDA_SUCCESS;
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemcpyHtoDAsync", k->name, err);
        d->st.bytes_up += b->bytes;
    }
    if (st == VYRE_OK) {
        struct vyre_cuda_args a = {rs->ptrs, k->nbuffers, params, nparams,
                                   n,        grid,        0,      o->grid_sync};
        st = vyre_cu_launch_one(k, &a, err);
    }
    uint64_t down_off = off;
    for (uint32_t i = 0; i < k->nbuffers && st == VYRE_OK; i++) {
        struct vyre_cuda_buffer *b = &rs->bufs[i];
        if (k->buf_access[i] == VYRE_ACCESS_READ || rs->cls[i] == RUN_RESIDENT || !b->bytes ||
            !out || !out[i])
            continue;
        void *dst = rs->stage ? (void *)(uintptr_t)(rs->stage + off) : out[i];
        CUresult r = vyre_cu.cuMemcpyDtoHAsync(dst, b->ptr, (size_t)b->bytes, d->stream);
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemcpyDtoHAsync", k->name, err);
        if (rs->stage) off += b->bytes;
    }
    if (st == VYRE_OK) st = vyre_cu_timer_enqueued(d, &t, err);
    if (st == VYRE_OK) st = vyre_cu_sync(d, k->name, err);
    if (st == VYRE_OK && k->grid && o->rounds) st = vyre_cuda_kernel_rounds(k, o->rounds, err);
    if (st == VYRE_OK) {
        vyre_cu_timer_finish(d, &t);
        off = down_off;
        for (uint32_t i = 0; i < k->nbuffers; i++) {
            struct vyre_cuda_buffer *b = &rs->bufs[i];
            if (k->buf_access[i] == VYRE_ACCESS_READ || rs->cls[i] == RUN_RESIDENT || !b->bytes ||
                !out || !out[i])
                continue;
            if (rs->stage) {
                memcpy(out[i], (void *)(uintptr_t)(rs->stage + off), (size_t)b->bytes);
                off += b->bytes;
            }
            d->st.bytes_down += b->bytes;
        }
    }
done:
    run_release(d, rs);
    free(rs);
    return st;
}

/* One range over compile, copies, launch and readback. */
enum vyre_status vyre_cuda_run(vyre_cuda_device *d, vyre_program *p,
                               const struct vyre_cuda_run_options *o, struct vyre_error *err) {
    if (!o)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_run: options must not be NULL (they carry the buffers). "
                              "Fix: pass a struct vyre_cuda_run_options.");
    int tr = vyre_trace_push("run", p ? p->name : NULL);
    enum vyre_status st = run(d, p, o, err);
    vyre_trace_pop(tr);
    return st;
}
