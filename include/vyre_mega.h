/* vyre_mega.h — megakernels (docs/GRID.md): a sequence of programs (the steps of
 * be:sequence) composed into ONE program with grid statements, which then runs on
 * either backend like any program: the reference interpreter, or the CUDA runtime as a
 * cooperative persistent kernel or its host split. Pure C, no GPU: the dependency
 * planner (read/write sets by memory: allocation and byte range, so a view and its
 * parent are ordered), Kahn layering, the composition, the launch values of the
 * composed program's params, and a plan cache (vyre_mega_cache_*) with its own lock.
 * Every entry point returns VYRE_ERR_ARG for a NULL argument it needs. */
#ifndef VYRE_MEGA_H
#define VYRE_MEGA_H

#include "vyre.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step: a validated program without grid statements, which bound buffer each of its
 * `buffer` declarations gets (ids 0..nbuffers-1; one id = one buffer object, however
 * many declarations or steps bind it), and its grid (0 workgroups on an axis: the step
 * runs nothing, like opts.n = 0). Two ids may name one memory (a buffer and a view of
 * it): struct vyre_mega_memory says where each id lives. */
struct vyre_mega_step {
    vyre_program *program;
    const uint32_t *buffers; /* per buffer slot of program */
    uint32_t grid[3];
};

/* Where bound buffer id i lives (memory[i]): ids with the same root (one allocation)
 * whose byte ranges [offset, offset + bytes) intersect alias each other, as a buffer
 * and its views do; an empty range aliases nothing. Wherever a memory array is taken,
 * NULL means every id is memory of its own. */
struct vyre_mega_memory {
    uint32_t root;
    uint64_t offset, bytes;
};

enum vyre_mega_dep_kind { VYRE_DEP_RAW, VYRE_DEP_WAR, VYRE_DEP_WAW };
const char *vyre_mega_dep_name(enum vyre_mega_dep_kind k); /* "RAW" "WAR" "WAW" */

/* Step `to` must start after step `from` has finished, because of `buffer` (the id
 * step `to` binds; step `from` touches it or memory that overlaps it). */
struct vyre_mega_dep {
    uint32_t from, to, buffer;
    enum vyre_mega_dep_kind kind;
};

/* Kahn layering of n steps under deps: layer[i] is the 0-based layer of step i, the
 * earliest after every step it depends on. VYRE_ERR_INVALID for a dependency of a step
 * on itself or a cycle (the message names them, with a Fix); after a cycle, layer[i] is
 * UINT32_MAX for every step the cycle leaves unscheduled. */
enum vyre_status vyre_mega_layers(uint32_t n, const struct vyre_mega_dep *deps, uint32_t ndeps,
                                  uint32_t *layer, uint32_t *nlayers, struct vyre_error *err);

/* The dependencies of steps run in order: for every pair i < j and buffer id b that j
 * binds, RAW (i writes memory j reads through b), WAW (both write), WAR (i reads what j
 * writes), the first that holds in that order. Reads are loads, writes stores, atomics
 * both (len reads nothing). memory: per id (every id the steps bind), or NULL (ids are
 * disjoint). *out is malloc'd (free()). */
enum vyre_status vyre_mega_deps(const struct vyre_mega_step *steps, uint32_t n,
                                const struct vyre_mega_memory *memory, struct vyre_mega_dep **out,
                                uint32_t *ndeps, struct vyre_error *err);

struct vyre_mega_options {
    uint32_t prefix; /* steps [0, prefix) run once before the rounds */
    bool repeat;     /* the other steps run `times` rounds (param mg_times) */
    bool converge;   /* ... or converge on buffer `flag` for at most mg_max rounds */
    uint32_t flag;   /* converge: the flag's buffer id (may be bound by no step) */
    /* per buffer id (nbuffers of them), or NULL: ids are disjoint memory. An id that
     * overlaps memory some step writes is declared read_write in the composed program
     * (a `read` buffer may be loaded through the non-coherent cache on the GPU). */
    const struct vyre_mega_memory *memory;
    /* worklist ids 0..nworklists-1 (declared mg_w0.. in the composed program) and their
     * item types; converge_wl: converge on worklist `wl` instead of a flag (each round
     * ends by advancing it on the device; the loop stops after a round that pushed
     * nothing, overflowed it, or mg_max rounds) */
    uint32_t nworklists;
    const enum vyre_type *worklist_types;
    bool converge_wl;
    uint32_t wl;
    /* per step (NULL: no step binds a worklist): step_worklists[j] is the worklist id
     * each `worklist` declaration of step j binds (per worklist slot), and sized_by[j]
     * the worklist id that sizes step j ({n = wl}), or UINT32_MAX. A sized step covers
     * ceil(len / workgroup.x) workgroups, read on the device each round; its grid[0]
     * must cover the most that worklist can hold (ceil(capacity / workgroup.x)).
     * Worklists add no dependency between the steps of a round: loads read the current
     * items, pushes append to the next round's, and the items change only at the round's
     * end (the converge's advance). */
    const uint32_t *const *step_worklists;
    const uint32_t *sized_by;
};

struct vyre_mega {
    vyre_program *program; /* the composed program, validated */
    uint32_t nsteps, nbuffers;
    uint32_t *layer; /* per step (prefix steps and round steps are layered apart) */
    uint32_t nlayers;
    struct vyre_mega_dep *deps; /* every dependency between steps */
    uint32_t ndeps;
    /* One per layer boundary, in order: the dependency that forced the barrier after
     * layer after_layer[i] (0-based); also the prefix/rounds boundary (buffer UINT32_MAX). */
    struct vyre_mega_dep *barriers;
    uint32_t *after_layer;
    uint32_t nbarriers;
    uint32_t workgroup[3];
    uint32_t remapped; /* steps whose workgroup was re-mapped onto the megakernel's */
    /* per step: a step sized by a worklist that drains in windows — its workgroups
     * loop over ceil(len / wgsize.x) with a stride of the step's own grid[0], so the
     * caller may give it a grid[0] of one drain window (vyre_workqueue_plan's
     * items_per_chunk / wgsize.x) instead of the worklist's whole capacity. Only a step
     * without `return` and shared arrays drains so (a shared array must start zeroed
     * for each workgroup); the others cover the capacity. */
    bool *drains;
    uint64_t key;      /* hash of the composition: step programs, bindings, options */
};

/* Composes the steps; buffer_types[id] is each bound buffer's element type. The
 * composed program's buffers are mg_b0.. (ids in order), its params are per step
 * s<J>_end, s<J>_off, s<J>_gx, s<J>_gy, s<J>_gz and the step's own (s<J>_NAME), then
 * mg_times or mg_max. Steps with different workgroups are re-mapped onto a 1-D
 * workgroup of the largest size (idle invocations skip the step); a step that needs
 * all its invocations together (barriers, subgroup ops) cannot be re-mapped: error. */
enum vyre_status vyre_mega_build(const struct vyre_mega_step *steps, uint32_t n, uint32_t nbuffers,
                                 const enum vyre_type *buffer_types,
                                 const struct vyre_mega_options *o, struct vyre_mega **out,
                                 struct vyre_error *err);
/* A plan is reference counted: vyre_mega_build returns one reference, vyre_mega_retain
 * adds one (returns m), vyre_mega_free drops one and frees the plan with the last. Safe
 * from several threads; a plan is read-only once built. */
struct vyre_mega *vyre_mega_retain(struct vyre_mega *m);
void vyre_mega_free(struct vyre_mega *m);

/* What vyre_mega_args reads besides the plan (zero-initialise, set what you need). */
struct vyre_mega_args_options {
    const struct vyre_mega_step *steps;  /* the m->nsteps steps the plan was built from */
    const vyre_bits *const *step_params; /* step_params[j]: step j's own params, as a launch
                                            takes them (NULL only when there are no steps) */
    uint32_t times;                      /* rounds of the repeated steps (mg_times) */
    uint32_t max_rounds;                 /* bound of the converge loop (mg_max) */
};
/* Launch values of the composed program: params (vyre_program_param_count of
 * m->program values, in declaration order) from each step's grid and own params and
 * times / max_rounds; grid: the virtual grid. */
enum vyre_status vyre_mega_args(const struct vyre_mega *m, const struct vyre_mega_args_options *o,
                                vyre_bits *params, uint32_t grid[3], struct vyre_error *err);

/* ---- the device work-queue planner (workqueue.c; docs/PLANNERS.md §3.12) -------------
 * Sizes a resident device work queue (a worklist) whose rounds drain on the device and
 * whose host reads only the final state. Inputs in items and bytes; a worklist of item
 * type T has entry_bytes = 2 * sizeof T (its current and next item arrays) and
 * control_bytes = 32 (its header). */
struct vyre_workqueue_profile {
    uint64_t initial_items;   /* items present before the first round */
    uint64_t capacity;        /* items per round; 0: initial + expansion, within budget */
    uint64_t expansion_items; /* capacity 0: headroom for the items the rounds push */
    uint64_t entry_bytes;     /* resident bytes per item of capacity (> 0) */
    uint64_t control_bytes;   /* counters, flags, header */
    uint64_t budget_bytes;    /* the device memory the queue may hold */
    uint64_t drain_items;     /* items one device-side drain window covers; 0: all */
    bool host_participates;   /* a host read per round: refused (that is a host loop) */
};

struct vyre_workqueue_plan {
    uint64_t capacity, queue_bytes, control_bytes, resident_bytes;
    uint32_t initial_occupancy_bps; /* initial items / capacity, in 1/10000 */
    bool chunked;                   /* more than one drain window covers the capacity */
    uint64_t items_per_chunk, chunks;
    bool final_only_host_sync; /* always true for a plan that was made */
};

/* The plan, or VYRE_ERR_ARG with a Fix: entry_bytes 0, no capacity (capacity and
 * initial + expansion both 0), initial items over a given capacity, host participation,
 * the resident bytes over the budget (the message gives the bytes needed), or a byte
 * count past 2^64. With capacity 0 the capacity is initial + expansion, clamped to
 * what the budget holds (never below the initial items: that is the over-budget error). */
enum vyre_status vyre_workqueue_plan(const struct vyre_workqueue_profile *in,
                                     struct vyre_workqueue_plan *out, struct vyre_error *err);

/* ---- the plan cache (mega_cache.c) ----------------------------------------------------
 * A bounded table of plans by key (the caller's hash of everything the plan depends on:
 * step programs, bindings and their memory, options), least recently used out. Each
 * backend (or device) owns one and frees it with itself, so one backend's plans and
 * counters never show in another's. Every call takes the cache's own lock: threads may
 * share a cache. A plan returned by get is the caller's reference (vyre_mega_free it);
 * an evicted plan lives on until its last holder lets go. */
typedef struct vyre_mega_cache vyre_mega_cache;
struct vyre_mega_cache_stats {
    uint64_t hits, misses, evictions, entries;
};
/* capacity: plans kept (0: 64). */
enum vyre_status vyre_mega_cache_new(uint32_t capacity, vyre_mega_cache **out,
                                     struct vyre_error *err);
void vyre_mega_cache_free(vyre_mega_cache *c); /* drops the cache's references; NULL: no-op */
/* *out: a new reference to the plan under key (a hit), or NULL (a miss). */
enum vyre_status vyre_mega_cache_get(vyre_mega_cache *c, uint64_t key, struct vyre_mega **out,
                                     struct vyre_error *err);
/* Keeps a reference to m under key (the caller keeps its own); when another thread put
 * one under key first, that one stays. */
enum vyre_status vyre_mega_cache_put(vyre_mega_cache *c, uint64_t key, struct vyre_mega *m,
                                     struct vyre_error *err);
/* Drops every plan (their holders keep theirs); the counters stay. */
enum vyre_status vyre_mega_cache_clear(vyre_mega_cache *c, struct vyre_error *err);
enum vyre_status vyre_mega_cache_stats(vyre_mega_cache *c, struct vyre_mega_cache_stats *out,
                                       struct vyre_error *err);

#ifdef __cplusplus
}
#endif
#endif
