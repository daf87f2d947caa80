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
 *
 * vyre_cuda_set_grid_sync picks the way (auto: cooperative where the device and the
 * occupancy allow it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "trace.h"
#include "sections.h"
#include "sem.h"

#define SCRATCH_BYTES 32u /* ptx_grid.c: counter, generation, decision, rounds, fast word */
#define SCRATCH_ROUNDS 12u

struct vyre_cu_gridk {
    vyre_program *prog; /* validated copy (sections point into it) */
    struct vyre_section *sections;
    uint32_t nsections;
    vyre_cuda_kernel **split; /* per section, compiled at the first split launch */
    uint32_t *loop_slots;     /* grid loop variables: the section kernels' extra params */
    uint32_t nloop;
    CUdeviceptr scratch;
    int per_sm;       /* blocks per SM (driver occupancy); 0: cannot be co-resident */
    uint32_t nargs;   /* the program's own arguments: 2 * buffers + params */
    uint64_t rounds;  /* of the last launch (split) */
    bool pending;     /* the last launch was cooperative: rounds are on the device */
    const char *mode; /* of the last launch */
    uint32_t blocks;  /* cooperative: the persistent grid of the last launch */
};

/* ---- modes -------------------------------------------------------------------------- */

static const char *const mode_names[] = {"auto", "cooperative", "split"};

const char *vyre_cuda_grid_sync_name(enum vyre_cuda_grid_sync mode) {
    return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

bool vyre_cuda_grid_sync_from_name(const char *name, enum vyre_cuda_grid_sync *out) {
    for (unsigned i = 0; name && i < 3; i++) {
        if (strcmp(name, mode_names[i]) == 0) {
            *out = (enum vyre_cuda_grid_sync)i;
            return true;
        }
    }
    return false;
}

void vyre_cuda_set_grid_sync(vyre_cuda_device *d, enum vyre_cuda_grid_sync mode) {
    if (d && (unsigned)mode < 3) d->grid_sync = mode;
}

enum vyre_cuda_grid_sync vyre_cuda_grid_sync(const vyre_cuda_device *d) {
    return d ? d->grid_sync : VYRE_GRID_AUTO;
}

uint64_t vyre_cuda_run_rounds(const vyre_cuda_device *d) { return d ? d->run_rounds : 0; }

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
    gk->nargs = 2 * p->nbuffers + p->nparams;
    gk->mode = "none";
    char *text = NULL;
    size_t len = 0;
    if (vyre_text_print(p, &text, &len) != VYRE_OK) return nomem(err);
    enum vyre_status st = vyre_text_parse(text, len, &gk->prog, err);
    vyre_free(text);
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
    uint32_t threads = p->workgroup[0] * p->workgroup[1] * p->workgroup[2];
    int n = 0;
    if (vyre_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor)
        VYRE_CU_CHECK(
            d, vyre_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k->fn, (int)threads, 0),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor", k->name, err);
    gk->per_sm = n;
    return VYRE_OK;
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
    uint64_t most = (uint64_t)gk->per_sm * (uint64_t)d->info.multiprocessors;
    if (most > (uint64_t)d->info.max_grid[0]) most = (uint64_t)d->info.max_grid[0];
    uint32_t blocks = (uint32_t)(nv < most ? nv : most);
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
};

static enum vyre_status split_section(void *ud, uint32_t index, const vyre_bits *slots,
                                      struct vyre_error *err) {
    struct split_run *r = ud;
    vyre_cuda_kernel *k = r->k;
    struct vyre_cu_gridk *gk = k->grid;
    enum vyre_status st = split_kernel(k, index, err);
    if (st != VYRE_OK) return st;
    vyre_cuda_kernel *sk = gk->split[index];
    memcpy(sk->slot, r->slot, gk->nargs * sizeof *sk->slot);
    for (uint32_t j = 0; j < gk->nloop; j++) sk->slot[gk->nargs + j] = slots[gk->loop_slots[j]];
    const uint32_t *wg = k->geom.workgroup;
    uint64_t threads = (uint64_t)wg[0] * wg[1] * wg[2];
    if (sk->max_threads > 0 && threads > (uint64_t)sk->max_threads)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "launch of '%s' refused: section %u needs %llu threads per "
                              "workgroup, the kernel allows %d (register use). Fix: use a "
                              "smaller workgroup",
                              k->name, (unsigned)index, (unsigned long long)threads,
                              sk->max_threads);
    int tr = vyre_trace_push("round section", sk->name);
    CUresult cr = vyre_cu.cuLaunchKernel(sk->fn, r->g[0], r->g[1], r->g[2], wg[0], wg[1], wg[2], 0,
                                         k->dev->stream, sk->argv, NULL);
    vyre_trace_pop(tr);
    if (cr != CUDA_SUCCESS) return vyre_cu_fail(k->dev, cr, "cuLaunchKernel", sk->name, err);
    k->dev->st.launches++;
    return VYRE_OK;
}

static CUdeviceptr flag_ptr(const struct split_run *r, uint32_t decl) {
    return (CUdeviceptr)r->slot[r->k->grid->prog->decls[decl].slot];
}

static enum vyre_status split_flag_zero(void *ud, uint32_t decl, struct vyre_error *err) {
    struct split_run *r = ud;
    VYRE_CU_CHECK(r->k->dev, vyre_cu.cuMemsetD8Async(flag_ptr(r, decl), 0, 4, r->k->dev->stream),
                  "cuMemsetD8Async", r->k->name, err);
    return VYRE_OK;
}

static enum vyre_status split_flag_read(void *ud, uint32_t decl, bool *set,
                                        struct vyre_error *err) {
    struct split_run *r = ud;
    struct vyre_cuda_device *d = r->k->dev;
    uint32_t w = 0;
    VYRE_CU_CHECK(d, vyre_cu.cuMemcpyDtoHAsync(&w, flag_ptr(r, decl), 4, d->stream),
                  "cuMemcpyDtoHAsync", r->k->name, err);
    enum vyre_status st = vyre_cu_sync(d, r->k->name, err);
    d->st.bytes_down += 4;
    *set = w != 0;
    return st;
}

static enum vyre_status launch_split(vyre_cuda_kernel *k, const uint64_t *slot, const uint32_t g[3],
                                     struct vyre_error *err) {
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
    struct split_run r = {k, slot, g};
    struct vyre_grid_ops ops = {&r, split_section, split_flag_zero, split_flag_read};
    gk->pending = false;
    gk->mode = "split";
    gk->blocks = 0;
    enum vyre_status st = vyre_grid_run(&env, gk->sections, gk->nsections, &ops, &gk->rounds, err);
    free(params);
    free(counts);
    return st;
}

static enum vyre_status grid_launch(vyre_cuda_kernel *k, const uint64_t *slot, const uint32_t g[3],
                                    struct vyre_error *err) {
    struct vyre_cu_gridk *gk = k->grid;
    enum vyre_cuda_grid_sync mode = k->dev->grid_sync;
    bool coop = can_cooperate(k);
    if (mode == VYRE_GRID_COOPERATIVE && !coop)
        return vyre_error_set(
            err, VYRE_ERR_UNSUPPORTED,
            "launch of '%s': a cooperative launch is impossible here (%s). Fix: use grid sync "
            "\"split\" or \"auto\", which run one kernel per section",
            k->name,
            !k->dev->info.cooperative_launch ? "the device has no cooperative launch"
            : !vyre_cu.cuLaunchCooperativeKernel
                ? "the driver has no cuLaunchCooperativeKernel"
                : "the driver reports 0 co-resident blocks of this kernel per SM");
    if (slot != k->slot) memcpy(k->slot, slot, gk->nargs * sizeof *k->slot);
    if (mode == VYRE_GRID_SPLIT || !coop) return launch_split(k, k->slot, g, err);
    return launch_cooperative(k, g, err);
}

/* One range over the megakernel launch; in split mode each section launch of each
 * round has its own inside it (split_section). */
enum vyre_status vyre_cu_grid_launch(vyre_cuda_kernel *k, const uint64_t *slot, const uint32_t g[3],
                                     struct vyre_error *err) {
    int tr = vyre_trace_push("megakernel", k->name);
    enum vyre_status st = grid_launch(k, slot, g, err);
    vyre_trace_pop(tr);
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
