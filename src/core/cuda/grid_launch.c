/* grid_launch.c — running programs with grid statements (ARCHITECTURE.md §3,
 * docs/GRID.md) on a CUDA device, in one of two ways that give the same results:
 *
 *   cooperative: the kernel of ptx_grid.c, launched with cuLaunchCooperativeKernel on
 *     min(virtual workgroups, blocks per SM x SMs) blocks — the occupancy the driver
 *     reports for this kernel, so every block is resident and the grid barrier cannot
 *     hang. Its scratch word (16 bytes, owned by the kernel object) holds the barrier
 *     counter and generation, the converge decision and the round count.
 *   host split: one ordinary kernel per section (the section's statements as a
 *     program of their own, the grid loop variables as extra params), launched over
 *     the whole virtual grid; the grid-level control flow runs on the host
 *     (sections.c), and a converge round ends with a 4-byte flag readback.
 *   graph: the host split, with every converge round whose body holds no converge
 *     captured once into a CUDA graph (flag zeroing, the section launches, the flag
 *     copy into pinned memory) and replayed: one cuGraphLaunch + one sync per round.
 *
 * Every launch takes the way as an argument (vyre_cuda_args.grid_sync, a megakernel's
 * vyre_cuda_grid_options.mode; auto: cooperative where the device and the occupancy
 * allow it): the device holds no setting, so no caller changes one around a launch
 * (another thread's launches on the device would see it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "trace.h"
#include "sections.h"
#include "sem.h"

#define SCRATCH_BYTES 32u /* ptx_grid.c: counter, generation, decision, rounds, fast word */
#define SCRATCH_ROUNDS 12u
#define ROUND_GRAPHS 4u /* recorded converge rounds kept per kernel (LRU) */

/* One recorded converge round: keyed by the converge statement, the launch's arguments,
 * its virtual grid and the grid loop variables (everything a round's launches capture
 * by value). */
struct round_graph {
    CUgraph graph;
    CUgraphExec exec;
    CUdeviceptr flag;
    uint32_t launches; /* section launches in one round */
    size_t nkey;
    uint64_t key[];
};

struct vyre_cu_gridk {
    vyre_program *prog; /* validated copy (sections point into it) */
    struct vyre_section *sections;
    uint32_t nsections;
    vyre_cuda_kernel **split; /* per section, compiled at the first split launch */
    uint32_t *loop_slots;     /* grid loop variables: the section kernels' extra params */
    uint32_t nloop;
    CUdeviceptr scratch;
    int per_sm;       /* blocks per SM (driver occupancy); 0: cannot be co-resident */
    uint32_t nargs;   /* the program's own arguments: 2 * buffers + params + worklists */
    uint64_t rounds;  /* of the last launch (split) */
    bool pending;     /* the last launch was cooperative: rounds are on the device */
    const char *mode; /* of the last launch */
    uint32_t blocks;  /* cooperative: the persistent grid of the last launch */
    struct round_graph *graphs[ROUND_GRAPHS]; /* graph mode: recorded rounds, newest first */
    uint32_t *pinned; /* graph mode: the flag's landing word (cuMemHostAlloc), or NULL */
    int copies;       /* graph mode: flag memset/copy inside the graph: 0 untried, 1, -1 no */
    /* the device's limits, read at attach, for vyre_occupancy_grid at each launch */
    struct vyre_device_limits lim;
};

/* ---- modes -------------------------------------------------------------------------- */

static const char *const mode_names[] = {"auto", "cooperative", "split", "graph"};
#define NMODES 4u

const char *vyre_cuda_grid_sync_name(enum vyre_grid_sync mode) {
    return (unsigned)mode < NMODES ? mode_names[mode] : "?";
}

bool vyre_cuda_grid_sync_from_name(const char *name, enum vyre_grid_sync *out) {
    for (unsigned i = 0; name && i < NMODES; i++) {
        if (strcmp(name, mode_names[i]) == 0) {
            *out = (enum vyre_grid_sync)i;
            return true;
        }
    }
    return false;
}

/* ---- attach / detach ------------------------------------------------------------------ */

static void collect_loops(struct vyre_cu_gridk *gk, const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (!s->grid) continue;
        if (s->kind == VYRE_ST_FOR && gk->loop_slots) gk->loop_slots[gk->nloop] = s->slot;
        if (s->kind == VYRE_ST_FOR) gk->nloop++;
        collect_loops(gk, &s->then_);
        collect_loops(gk, &s->else_);
    }
}

static enum vyre_status nomem(struct vyre_error *err) {
    return vyre_error_set(err, VYRE_ERR_NOMEM, "grid kernel: out of host memory. Fix: free memory");
}

enum vyre_status vyre_cu_grid_attach(vyre_cuda_kernel *k, vyre_program *p, struct vyre_error *err) {
    struct vyre_cuda_device *d = k->dev;
    struct vyre_cu_gridk *gk = calloc(1, sizeof *gk);
    if (!gk) return nomem(err);
    k->grid = gk;
    gk->nargs = 2 * p->nbuffers + p->nparams + vyre_program_worklist_count(p); /* §5 order */
    gk->mode = "none";
    enum vyre_status st = vyre_program_copy(p, &gk->prog, err);
    if (st == VYRE_OK) st = vyre_ensure_valid(gk->prog, err);
    if (st != VYRE_OK) return st;
    if (!vyre_sections(gk->prog, &gk->sections, &gk->nsections)) return nomem(err);
    gk->split = calloc(gk->nsections ? gk->nsections : 1u, sizeof *gk->split);
    collect_loops(gk, &gk->prog->body);
    gk->loop_slots = calloc(gk->nloop ? gk->nloop : 1u, sizeof *gk->loop_slots);
    if (!gk->split || !gk->loop_slots) return nomem(err);
    gk->nloop = 0;
    collect_loops(gk, &gk->prog->body);
    st = vyre_cu_malloc(d, SCRATCH_BYTES, &gk->scratch, "grid barrier scratch", err);
    if (st != VYRE_OK) return st;
    VYRE_CU_CHECK(d, vyre_cu.cuMemsetD8Async(gk->scratch, 0, SCRATCH_BYTES, d->stream),
                  "cuMemsetD8Async", k->name, err);
    /* co-residency, asked once: the driver's occupancy (capability.c) */
    vyre_cu_limits(d, &gk->lim);
    return vyre_cu_resident(k, k->fn, &gk->per_sm, err);
}

static void round_graph_free(vyre_cuda_kernel *k, struct round_graph *rg) {
    if (!rg) return;
    if (vyre_cu_current(k->dev)) {
        if (rg->exec) vyre_cu.cuGraphExecDestroy(rg->exec);
        if (rg->graph) vyre_cu.cuGraphDestroy(rg->graph);
    }
    free(rg);
}

void vyre_cu_grid_detach(vyre_cuda_kernel *k) {
    struct vyre_cu_gridk *gk = k->grid;
    if (!gk) return;
    for (uint32_t i = 0; gk->split && i < gk->nsections; i++) vyre_cuda_kernel_free(gk->split[i]);
    if (gk->scratch && vyre_cu_current(k->dev)) {
        CUresult r = vyre_cu.cuMemFree(gk->scratch);
        if (r != CUDA_SUCCESS) {
            struct vyre_error e;
            vyre_cu_fail(k->dev, r, "cuMemFree", k->name, &e);
            vyre_cu_defer(k->dev, &e);
        }
    }
    for (uint32_t i = 0; i < ROUND_GRAPHS; i++) round_graph_free(k, gk->graphs[i]);
    if (gk->pinned && vyre_cu_current(k->dev)) vyre_cu.cuMemFreeHost(gk->pinned);
    free(gk->split);
    free(gk->loop_slots);
    free(gk->sections);
    vyre_program_free(gk->prog);
    free(gk);
    k->grid = NULL;
}

/* ---- cooperative --------------------------------------------------------------------- */

static bool can_cooperate(const vyre_cuda_kernel *k) {
    return k->dev->info.cooperative_launch && vyre_cu.cuLaunchCooperativeKernel &&
           k->grid->per_sm > 0;
}

static enum vyre_status launch_cooperative(vyre_cuda_kernel *k, const uint32_t g[3],
                                           struct vyre_error *err) {
    struct vyre_cu_gridk *gk = k->grid;
    struct vyre_cuda_device *d = k->dev;
    uint64_t nv = (uint64_t)g[0] * g[1] * g[2];
    /* the co-resident grid: the rule be:plan and vyre.planners.occupancy.grid report */
    uint32_t blocks =
        vyre_occupancy_grid(&gk->lim, VYRE_SIZE_COOPERATIVE, (uint32_t)gk->per_sm, nv);
    uint32_t at = gk->nargs;
    k->slot[at] = (uint64_t)gk->scratch;
    for (uint32_t a = 0; a < 3; a++) k->slot[at + 1 + a] = g[a];
    const uint32_t *wg = k->geom.workgroup;
    VYRE_CU_CHECK(d,
                  vyre_cu.cuLaunchCooperativeKernel(k->fn, blocks, 1, 1, wg[0], wg[1], wg[2], 0,
                                                    d->stream, k->argv),
                  "cuLaunchCooperativeKernel", k->name, err);
    d->st.launches++;
    gk->pending = true;
    gk->rounds = 0;
    gk->mode = "cooperative";
    gk->blocks = blocks;
    return VYRE_OK;
}

/* ---- host split ------------------------------------------------------------------------- */

/* The kernel of section i: its statements as a program, the grid loop variables as params. */
static enum vyre_status split_kernel(vyre_cuda_kernel *k, uint32_t i, struct vyre_error *err) {
    struct vyre_cu_gridk *gk = k->grid;
    if (gk->split[i]) return VYRE_OK;
    const vyre_program *p = gk->prog;
    size_t cap = 64u + (size_t)gk->nloop * (VYRE_MAX_NAME + 24u);
    char *extra = malloc(cap), name[VYRE_MAX_NAME + 1];
    if (!extra) return nomem(err);
    size_t off = 0;
    extra[0] = '\0';
    for (uint32_t j = 0; j < gk->nloop; j++) {
        uint32_t s = gk->loop_slots[j];
        off += (size_t)snprintf(extra + off, cap - off, "\n  (param %s %s)", p->slot_names[s],
                                vyre_type_name(p->slot_types[s]));
    }
    snprintf(name, sizeof name, "%.48s_s%u", p->name, (unsigned)i);
    const struct vyre_section *sec = &gk->sections[i];
    char *text = NULL;
    enum vyre_status st =
        vyre_text_print_part(p, name, extra, sec->block, sec->first, sec->count, &text);
    free(extra);
    if (st != VYRE_OK) return st == VYRE_ERR_NOMEM ? nomem(err) : st;
    vyre_program *sp = NULL;
    st = vyre_text_parse(text, strlen(text), &sp, err);
    free(text);
    if (st == VYRE_OK) st = vyre_cuda_compile(k->dev, sp, &gk->split[i], err);
    vyre_program_free(sp);
    return st;
}

struct split_run {
    vyre_cuda_kernel *k;
    const uint64_t *slot;
    const uint32_t *g;
    enum vyre_grid_sync mode; /* the run's (a refusal names it) */
    struct round_graph *cur;  /* graph mode: the round being recorded or replayed */
    bool recording;
    uint32_t captured; /* launches recorded into cur */
};

static enum vyre_status split_section(void *ud, uint32_t index, const vyre_bits *slots,
                                      struct vyre_error *err) {
    struct split_run *r = ud;
    vyre_cuda_kernel *k = r->k;
    struct vyre_cu_gridk *gk = k->grid;
    enum vyre_status st = split_kernel(k, index, err);
    if (st != VYRE_OK) return st;
    vyre_cuda_kernel *sk = gk->split[index];
    /* The section kernel's loop variables are params, and params come before worklist
     * headers (ARCHITECTURE.md §5): buffers and params, then the loop variables, then the
     * worklists — not the loop variables after the worklists (a `times` megakernel over a
     * worklist-sized step passed its round number as the header address). */
    uint32_t nwl = vyre_program_worklist_count(gk->prog), fixed = gk->nargs - nwl;
    memcpy(sk->slot, r->slot, fixed * sizeof *sk->slot);
    for (uint32_t j = 0; j < gk->nloop; j++) sk->slot[fixed + j] = slots[gk->loop_slots[j]];
    memcpy(sk->slot + fixed + gk->nloop, r->slot + fixed, nwl * sizeof *sk->slot);
    const uint32_t *wg = k->geom.workgroup;
    uint64_t threads = (uint64_t)wg[0] * wg[1] * wg[2];
    if (sk->max_threads > 0 && threads > (uint64_t)sk->max_threads)
        return vyre_cu_refuse(k, sk->name, threads, sk->max_threads, false, -1, VYRE_ERR_LIMIT,
                              err);
    int tr = vyre_trace_push("round section", sk->name);
    CUresult cr = vyre_cu.cuLaunchKernel(sk->fn, r->g[0], r->g[1], r->g[2], wg[0], wg[1], wg[2], 0,
                                         k->dev->stream, sk->argv, NULL);
    vyre_trace_pop(tr);
    if (cr != CUDA_SUCCESS) return vyre_cu_fail(k->dev, cr, "cuLaunchKernel", sk->name, err);
    if (r->recording) r->captured++; /* recorded, not run */
    else k->dev->st.launches++;
    return VYRE_OK;
}

static CUdeviceptr flag_ptr(const struct split_run *r, uint32_t decl) {
    return (CUdeviceptr)r->slot[r->k->grid->prog->decls[decl].slot];
}

/* A converge loop reads its flag on the host between rounds: impossible while be:graph
 * captures the stream (nothing runs then). */
static enum vyre_status no_capture(const vyre_cuda_kernel *k, enum vyre_grid_sync mode,
                                   struct vyre_error *err) {
    if (!k->dev->capturing) return VYRE_OK;
    return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                          "graph capture of '%s': its converge loop runs on the host in grid "
                          "sync \"%s\" (the flag is read between rounds), which a captured "
                          "graph cannot do. Fix: use grid sync \"auto\" or \"cooperative\" "
                          "(the loop runs on the device), or launch it outside the graph",
                          k->name, vyre_cuda_grid_sync_name(mode));
}

static enum vyre_status split_flag_zero(void *ud, uint32_t decl, struct vyre_error *err) {
    struct split_run *r = ud;
    enum vyre_status cst = no_capture(r->k, r->mode, err);
    if (cst != VYRE_OK) return cst;
    VYRE_CU_CHECK(r->k->dev, vyre_cu.cuMemsetD8Async(flag_ptr(r, decl), 0, 4, r->k->dev->stream),
                  "cuMemsetD8Async", r->k->name, err);
    return VYRE_OK;
}

/* The end of a converge round on a worklist in the split (sections.h): the host reads
 * the worklist's header (one synchronisation, as a flag round has), and unless the round
 * overflowed writes it back advanced: item arrays swapped, the pushed count (clamped to
 * the capacity) current, the next count 0. The cooperative kernel does the same on the
 * device (ptx_grid.c). */
static enum vyre_status split_wl_round(void *ud, uint32_t decl, bool *more,
                                       struct vyre_error *err) {
    struct split_run *r = ud;
    struct vyre_cuda_device *d = r->k->dev;
    const vyre_program *p = r->k->grid->prog;
    *more = false;
    enum vyre_status cst = no_capture(r->k, r->mode, err);
    if (cst != VYRE_OK) return cst;
    CUdeviceptr h = (CUdeviceptr)r->slot[2 * p->nbuffers + p->nparams + p->decls[decl].slot];
    uint64_t ptr[2];
    uint32_t cnt[4]; /* cur_count, next_count, capacity, overflow_needed */
    unsigned char raw[32];
    VYRE_CU_CHECK(d, vyre_cu.cuMemcpyDtoHAsync(raw, h, sizeof raw, d->stream),
                  "cuMemcpyDtoHAsync", r->k->name, err);
    enum vyre_status st = vyre_cu_sync(d, r->k->name, err);
    if (st != VYRE_OK) return st;
    d->st.bytes_down += sizeof raw;
    memcpy(ptr, raw, sizeof ptr);
    memcpy(cnt, raw + 16, sizeof cnt);
    if (cnt[3]) return VYRE_OK; /* overflow: stop, reported at the next host read */
    uint64_t swapped[2] = {ptr[1], ptr[0]};
    uint32_t counts[2] = {cnt[1] < cnt[2] ? cnt[1] : cnt[2], 0};
    memcpy(raw, swapped, sizeof swapped);
    memcpy(raw + 16, counts, sizeof counts);
    VYRE_CU_CHECK(d, vyre_cu.cuMemcpyHtoDAsync(h, raw, 24, d->stream), "cuMemcpyHtoDAsync",
                  r->k->name, err);
    st = vyre_cu_sync(d, r->k->name, err); /* raw is on this stack frame */
    if (st != VYRE_OK) return st;
    d->st.bytes_up += 24;
    *more = counts[0] > 0;
    return VYRE_OK;
}

static enum vyre_status split_flag_read(void *ud, uint32_t decl, bool *set,
                                        struct vyre_error *err) {
    struct split_run *r = ud;
    struct vyre_cuda_device *d = r->k->dev;
    enum vyre_status cst = no_capture(r->k, r->mode, err);
    if (cst != VYRE_OK) return cst;
    uint32_t w = 0;
    VYRE_CU_CHECK(d, vyre_cu.cuMemcpyDtoHAsync(&w, flag_ptr(r, decl), 4, d->stream),
                  "cuMemcpyDtoHAsync", r->k->name, err);
    enum vyre_status st = vyre_cu_sync(d, r->k->name, err);
    d->st.bytes_down += 4;
    *set = w != 0;
    return st;
}

/* ---- graph mode: converge rounds as CUDA graphs ------------------------------------------ */

static bool graphs_supported(void) {
    return vyre_cu.cuStreamBeginCapture && vyre_cu.cuStreamEndCapture &&
           vyre_cu.cuGraphInstantiateWithFlags && vyre_cu.cuGraphLaunch &&
           vyre_cu.cuGraphExecDestroy && vyre_cu.cuGraphDestroy;
}

static enum vyre_status begin_capture(struct vyre_cuda_device *d, const char *name,
                                      struct vyre_error *err) {
    /* Thread-local: other threads of an embedding host may keep using CUDA. */
    CUresult r = vyre_cu.cuStreamBeginCapture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    return r == CUDA_SUCCESS ? VYRE_OK : vyre_cu_fail(d, r, "cuStreamBeginCapture", name, err);
}

/* Finds the recorded round of (s, arguments, grid, slots), or starts recording it. Every
 * section kernel is compiled first: nothing but stream work may happen while capturing. */
static enum vyre_status round_open(void *ud, const struct vyre_stmt *s, const vyre_bits *slots,
                                   bool *recorded, struct vyre_error *err) {
    struct split_run *r = ud;
    vyre_cuda_kernel *k = r->k;
    struct vyre_cu_gridk *gk = k->grid;
    struct vyre_cuda_device *d = k->dev;
    size_t nkey = 4u + gk->nargs + gk->prog->nslots;
    enum vyre_status cst = no_capture(k, r->mode, err);
    if (cst != VYRE_OK) return cst;
    for (uint32_t i = 0; i < ROUND_GRAPHS && gk->graphs[i]; i++) {
        struct round_graph *rg = gk->graphs[i];
        if (rg->nkey != nkey || rg->key[0] != (uint64_t)(uintptr_t)s || rg->key[1] != r->g[0] ||
            rg->key[2] != r->g[1] || rg->key[3] != r->g[2] ||
            memcmp(rg->key + 4, r->slot, gk->nargs * sizeof *rg->key) != 0 ||
            memcmp(rg->key + 4 + gk->nargs, slots, gk->prog->nslots * sizeof *rg->key) != 0)
            continue;
        memmove(gk->graphs + 1, gk->graphs, i * sizeof *gk->graphs); /* most recent first */
        gk->graphs[0] = rg;
        r->cur = rg;
        *recorded = true;
        return VYRE_OK;
    }
    *recorded = false;
    if (!graphs_supported())
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "launch of '%s': grid sync \"graph\" needs the driver's stream "
                              "capture entry points. Fix: update the driver, or use grid sync "
                              "\"split\"",
                              k->name);
    for (uint32_t i = 0; i < gk->nsections; i++) {
        enum vyre_status st = split_kernel(k, i, err);
        if (st != VYRE_OK) return st;
    }
    if (!gk->pinned && gk->copies == 0) {
        void *h = NULL;
        if (vyre_cu.cuMemHostAlloc && vyre_cu.cuMemHostAlloc(&h, 4, 0) == CUDA_SUCCESS)
            gk->pinned = h;
        else gk->copies = -1; /* no pinned word: the copy runs after the graph, pageable */
    }
    struct round_graph *rg = calloc(1, sizeof *rg + nkey * sizeof *rg->key);
    if (!rg) return nomem(err);
    rg->nkey = nkey;
    rg->key[0] = (uint64_t)(uintptr_t)s;
    for (uint32_t a = 0; a < 3; a++) rg->key[1 + a] = r->g[a];
    memcpy(rg->key + 4, r->slot, gk->nargs * sizeof *rg->key);
    memcpy(rg->key + 4 + gk->nargs, slots, gk->prog->nslots * sizeof *rg->key);
    rg->flag = flag_ptr(r, s->decl);
    enum vyre_status st = begin_capture(d, k->name, err);
    if (st == VYRE_OK && gk->copies >= 0) {
        /* The flag's memset as a graph node; a driver that refuses it in a capture
         * (the capture is then invalidated) gets the memset and the copy around the
         * graph instead. Any other failure is the memset's own (out of memory, a
         * fault): raised, never taken for "unsupported" and absorbed, which would hide it. */
        CUresult mr = vyre_cu.cuMemsetD8Async(rg->flag, 0, 4, d->stream);
        if (mr == CUDA_SUCCESS) {
            gk->copies = 1;
        } else {
            /* Ending an invalidated capture answers INVALIDATED; anything else is a
             * failure of its own, raised like the others. */
            CUgraph junk = NULL;
            CUresult er = vyre_cu.cuStreamEndCapture(d->stream, &junk);
            if (er == CUDA_SUCCESS && junk) vyre_cu.cuGraphDestroy(junk);
            bool ended = er == CUDA_SUCCESS || er == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            if (mr != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
                mr != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
                st = vyre_cu_fail(d, mr, "cuMemsetD8Async", k->name, err);
            } else if (!ended) {
                st = vyre_cu_fail(d, er, "cuStreamEndCapture", k->name, err);
            } else {
                gk->copies = -1;
                st = begin_capture(d, k->name, err);
            }
        }
    }
    if (st != VYRE_OK) {
        free(rg);
        return st;
    }
    r->cur = rg;
    r->recording = true;
    r->captured = 0;
    return VYRE_OK;
}

static enum vyre_status round_close(void *ud, enum vyre_status st, struct vyre_error *err) {
    struct split_run *r = ud;
    vyre_cuda_kernel *k = r->k;
    struct vyre_cu_gridk *gk = k->grid;
    struct vyre_cuda_device *d = k->dev;
    struct round_graph *rg = r->cur;
    CUresult cr = CUDA_SUCCESS;
    if (st == VYRE_OK && gk->copies > 0) {
        cr = vyre_cu.cuMemcpyDtoHAsync(gk->pinned, rg->flag, 4, d->stream);
        if (cr != CUDA_SUCCESS) st = vyre_cu_fail(d, cr, "cuMemcpyDtoHAsync", k->name, err);
    }
    /* Always end the capture, even after a failure, so the stream is usable. */
    cr = vyre_cu.cuStreamEndCapture(d->stream, &rg->graph);
    if (st == VYRE_OK && cr != CUDA_SUCCESS)
        st = vyre_cu_fail(d, cr, "cuStreamEndCapture", k->name, err);
    if (st == VYRE_OK) {
        cr = vyre_cu.cuGraphInstantiateWithFlags(&rg->exec, rg->graph, 0);
        if (cr != CUDA_SUCCESS)
            st = vyre_cu_fail(d, cr, "cuGraphInstantiateWithFlags", k->name, err);
    }
    r->recording = false;
    rg->launches = r->captured;
    if (st != VYRE_OK) {
        round_graph_free(k, rg);
        r->cur = NULL;
        return st;
    }
    round_graph_free(k, gk->graphs[ROUND_GRAPHS - 1]);
    memmove(gk->graphs + 1, gk->graphs, (ROUND_GRAPHS - 1) * sizeof *gk->graphs);
    gk->graphs[0] = rg;
    return VYRE_OK;
}

/* One round: cuGraphLaunch and one flag read (one sync). */
static enum vyre_status round_run(void *ud, bool *set, struct vyre_error *err) {
    struct split_run *r = ud;
    vyre_cuda_kernel *k = r->k;
    struct vyre_cu_gridk *gk = k->grid;
    struct vyre_cuda_device *d = k->dev;
    struct round_graph *rg = r->cur;
    uint32_t local = 0, *w = gk->pinned ? gk->pinned : &local;
    if (gk->copies < 0)
        VYRE_CU_CHECK(d, vyre_cu.cuMemsetD8Async(rg->flag, 0, 4, d->stream), "cuMemsetD8Async",
                      k->name, err);
    VYRE_CU_CHECK(d, vyre_cu.cuGraphLaunch(rg->exec, d->stream), "cuGraphLaunch", k->name, err);
    d->st.graph_launches++;
    d->st.launches += rg->launches;
    if (gk->copies < 0)
        VYRE_CU_CHECK(d, vyre_cu.cuMemcpyDtoHAsync(w, rg->flag, 4, d->stream), "cuMemcpyDtoHAsync",
                      k->name, err);
    enum vyre_status st = vyre_cu_sync(d, k->name, err);
    d->st.bytes_down += 4;
    *set = *w != 0;
    return st;
}

static enum vyre_status launch_split(vyre_cuda_kernel *k, const uint64_t *slot, const uint32_t g[3],
                                     enum vyre_grid_sync mode, struct vyre_error *err) {
    bool graph = mode == VYRE_GRID_GRAPH;
    struct vyre_cu_gridk *gk = k->grid;
    const vyre_program *p = gk->prog;
    size_t nd = p->ndecls ? p->ndecls : 1u;
    vyre_bits *params = calloc(nd, sizeof *params);
    uint64_t *counts = calloc(nd, sizeof *counts);
    if (!params || !counts) {
        free(params);
        free(counts);
        return nomem(err);
    }
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *dc = &p->decls[i];
        if (dc->kind == VYRE_DECL_BUFFER) counts[i] = slot[p->nbuffers + dc->slot] & 0xFFFFFFFFu;
        if (dc->kind == VYRE_DECL_PARAM)
            params[i] = vyre_sem_from_memory(dc->type, slot[2 * p->nbuffers + dc->slot]);
    }
    struct vyre_grid_env env = {p, params, counts, {0, 0, 0}, {g[0], g[1], g[2]}};
    memcpy(env.wgsize, p->workgroup, sizeof env.wgsize);
    struct split_run r = {k, slot, g, mode, NULL, false, 0};
    struct vyre_grid_ops ops = {&r,   split_section, split_flag_zero, split_flag_read, NULL,
                                NULL, NULL,          split_wl_round,  NULL};
    if (graph) {
        ops.round_open = round_open;
        ops.round_close = round_close;
        ops.round_run = round_run;
    }
    gk->pending = false;
    gk->mode = graph ? "graph" : "split";
    gk->blocks = 0;
    enum vyre_status st = vyre_grid_run(&env, gk->sections, gk->nsections, &ops, &gk->rounds, err);
    free(params);
    free(counts);
    return st;
}

static enum vyre_status grid_launch(vyre_cuda_kernel *k, const uint64_t *slot, const uint32_t g[3],
                                    enum vyre_grid_sync mode, struct vyre_error *err) {
    struct vyre_cu_gridk *gk = k->grid;
    bool coop = can_cooperate(k);
    if (mode == VYRE_GRID_COOPERATIVE && !coop) /* worded by the capability check */
        return vyre_cu_refuse(k, NULL, 0, k->max_threads, true, gk->per_sm, VYRE_ERR_UNSUPPORTED,
                              err);
    if (slot != k->slot) memcpy(k->slot, slot, gk->nargs * sizeof *k->slot);
    if (mode == VYRE_GRID_SPLIT || mode == VYRE_GRID_GRAPH || !coop)
        return launch_split(k, k->slot, g, mode, err);
    return launch_cooperative(k, g, err);
}

/* One range over the megakernel launch; in split mode each section launch of each
 * round has its own inside it (split_section). */
enum vyre_status vyre_cu_grid_launch(vyre_cuda_kernel *k, const uint64_t *slot, const uint32_t g[3],
                                     enum vyre_grid_sync mode, struct vyre_error *err) {
    int tr = vyre_trace_push("megakernel", k->name);
    enum vyre_status st = grid_launch(k, slot, g, mode, err);
    vyre_trace_pop(tr);
    return st;
}

enum vyre_status vyre_cuda_grid_run(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                    const struct vyre_cuda_grid_options *o,
                                    struct vyre_error *err) {
    if (!k || !a || !o)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "grid run: NULL argument. Fix: pass the kernel, its args and the "
                              "options.");
    if (!k->grid)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "grid run of '%s': the program has no grid statements. Fix: "
                              "launch it with vyre_cuda_launch.",
                              k->name);
    if ((unsigned)o->mode > VYRE_GRID_GRAPH)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "grid run of '%s': mode %u is not a grid sync mode. Fix: pass "
                              "VYRE_GRID_AUTO, _COOPERATIVE, _SPLIT or _GRAPH.",
                              k->name, (unsigned)o->mode);
    struct vyre_cuda_device *d = k->dev;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    uint32_t g[3];
    st = vyre_cu_fill_args(k, a, k->slot, g, err);
    if (st != VYRE_OK) return st;
    struct vyre_cu_timer t;
    st = vyre_cu_timer_start(d, &t, o->timing, err);
    if (st == VYRE_OK)
        st = vyre_cu_grid_launch(k, k->slot, g, o->mode,
                                 err);
    if (st == VYRE_OK) st = vyre_cu_timer_enqueued(d, &t, err);
    /* A cooperative run's rounds are on the device: their copy is queued behind the
     * kernel (after the stop event, outside the timed region), so the completion wait
     * is the run's one synchronisation and vyre_cuda_kernel_rounds has nothing to wait
     * for. */
    uint32_t w = 0;
    bool copied = false;
    if (st == VYRE_OK && k->grid->pending) {
        CUresult r = vyre_cu.cuMemcpyDtoHAsync(&w, k->grid->scratch + SCRATCH_ROUNDS, 4, d->stream);
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemcpyDtoHAsync", k->name, err);
        copied = st == VYRE_OK;
    }
    if (st == VYRE_OK && o->watch && o->watched) {
        CUresult r = vyre_cu.cuMemcpyDtoHAsync(o->watched, (CUdeviceptr)o->watch, 32, d->stream);
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuMemcpyDtoHAsync", k->name, err);
    }
    if (st == VYRE_OK) st = vyre_cu_sync(d, k->name, err);
    if (st == VYRE_OK && copied) {
        k->grid->rounds = w;
        k->grid->pending = false;
    }
    if (st == VYRE_OK) vyre_cu_timer_finish(d, &t);
    return st;
}

/* ---- queries ----------------------------------------------------------------------------- */

enum vyre_status vyre_cuda_kernel_rounds(vyre_cuda_kernel *k, uint64_t *out,
                                         struct vyre_error *err) {
    if (!k || !out)
        return vyre_error_set(err, VYRE_ERR_ARG, "kernel rounds: NULL argument. Fix: pass both.");
    *out = 0;
    struct vyre_cu_gridk *gk = k->grid;
    if (!gk) return VYRE_OK;
    if (gk->pending) {
        struct vyre_cuda_device *d = k->dev;
        enum vyre_status st = vyre_cu_enter(d, err);
        if (st != VYRE_OK) return st;
        uint32_t w = 0;
        VYRE_CU_CHECK(d, vyre_cu.cuMemcpyDtoHAsync(&w, gk->scratch + SCRATCH_ROUNDS, 4, d->stream),
                      "cuMemcpyDtoHAsync", k->name, err);
        st = vyre_cu_sync(d, k->name, err);
        if (st != VYRE_OK) return st;
        gk->rounds = w;
        gk->pending = false;
    }
    *out = gk->rounds;
    return VYRE_OK;
}

const char *vyre_cuda_kernel_grid_mode(const vyre_cuda_kernel *k, uint32_t *blocks) {
    if (blocks) *blocks = k && k->grid ? k->grid->blocks : 0;
    return k && k->grid ? k->grid->mode : "plain";
}

enum vyre_status vyre_cuda_kernel_occupancy(vyre_cuda_kernel *k, int *per_sm, bool *cooperative,
                                            struct vyre_error *err) {
    if (!k || !per_sm || !cooperative)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "kernel occupancy: NULL argument. Fix: pass all three.");
    *per_sm = 0;
    *cooperative = k->dev->info.cooperative_launch && vyre_cu.cuLaunchCooperativeKernel;
    if (k->grid) {
        *per_sm = k->grid->per_sm;
        return VYRE_OK;
    }
    const uint32_t *wg = k->geom.workgroup;
    if (vyre_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor) {
        enum vyre_status st = vyre_cu_enter(k->dev, err);
        if (st != VYRE_OK) return st;
        VYRE_CU_CHECK(k->dev,
                      vyre_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                          per_sm, k->fn, (int)(wg[0] * wg[1] * wg[2]), 0),
                      "cuOccupancyMaxActiveBlocksPerMultiprocessor", k->name, err);
    }
    return VYRE_OK;
}
