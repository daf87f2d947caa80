/* vyre_backend.h — the backend interface of libvyre: one set of calls that runs
 * programs on any registered backend (the CPU reference interpreter, a CUDA device, ...).
 *
 * A backend is a table of operations (struct vyre_backend_ops) plus an opaque context.
 * Callers never call the table: the public vyre_backend_* functions below check their
 * arguments (a NULL or a foreign object is VYRE_ERR_ARG with a Fix, never a crash), fill
 * the optional slots a backend leaves NULL with one default each (src/core/backend.c),
 * and translate the wrapper's objects into the backend's own handles. Capability queries
 * (name, info, supports) are separate from execution.
 *
 * Backends are opened through the registry (src/core/backend_registry.c):
 * vyre_backend_list says which exist, with priority and availability (and why not);
 * vyre_backend_open opens one by name, or the best available one.
 *
 * Vocabulary: ranges are in elements (first, count; 0-based) unless a name says bytes;
 * arguments of a launch are matched by declaration index: buffers[i] binds the buffer
 * declaration whose vyre_decl_info.slot is i, params[j] the param whose slot is j,
 * worklists[w] the worklist whose slot is w.
 * Every timed call fills one record, struct vyre_timing.
 *
 * Ownership: buffers, worklists, kernels, graphs and prepared launches belong to the
 * backend that made them and must be freed before it (vyre_backend_close frees what is
 * left, so a forgotten object is not a leak, but a handle used after close is). A view owns no
 * memory; freeing its owner ends it. Graphs and prepared launches hold their kernels' and
 * buffers' handles: those must outlive them. A kernel keeps its own copy of the program.
 * Threads: one backend object, and everything made from it, is used by one thread at a
 * time (no locks inside; two threads use two backend objects). No call keeps global
 * state, except what the CUDA runtime shares per process (driver, caches). */
#ifndef VYRE_BACKEND_H
#define VYRE_BACKEND_H

#include "vyre.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vyre_backend vyre_backend;
typedef struct vyre_backend_buffer vyre_backend_buffer;
typedef struct vyre_backend_kernel vyre_backend_kernel;
typedef struct vyre_backend_graph vyre_backend_graph;
typedef struct vyre_backend_prepared vyre_backend_prepared;
typedef struct vyre_backend_worklist vyre_backend_worklist;

/* ---- the common records ------------------------------------------------------ */

/* Called when a backend's allocation fails, before it gives cached memory back and
 * retries once (a garbage-collected host frees dropped buffers here). */
typedef void (*vyre_backend_oom_fn)(void *ud);

/* Options of vyre_backend_open (zero-initialise, then set what you need). */
struct vyre_backend_options {
    bool debug;                 /* start in debug mode (vyre_backend_set_debug) */
    uint64_t max_steps;         /* reference: loop iterations a run may take (0: the default) */
    vyre_backend_oom_fn on_oom; /* NULL, or called on out-of-memory (a device's pools;
                                   the reference, allocating from the host, never calls it) */
    void *oom_ud;               /* on_oom's argument */
};

/* What a backend is and what it can do (vyre_backend_info); property names as the device
 * profiles' (docs/API.md "Vocabulary"). */
struct vyre_backend_info {
    char backend[32];           /* the registered name: "reference", "cuda" */
    char device[256];           /* "CPU reference interpreter", the GPU's name */
    int ordinal;                /* device ordinal (0 for the reference) */
    unsigned sm;                /* PTX target (0 for the reference) */
    int sms;                    /* multiprocessors (0 for the reference) */
    uint64_t memory_bytes;      /* 0 when unknown */
    int max_threads_per_block;  /* invocations per workgroup */
    int max_block[3];           /* per axis */
    int shared_bytes_per_block; /* shared memory per workgroup */
    int warp_size;              /* subgroup size (1 on the reference) */
    bool cooperative;           /* grid programs can run as one cooperative kernel */
    bool graphs_native;         /* graph replay is the device's own (else recorded steps) */
    bool debug;                 /* in debug mode now */
    bool host_memory;           /* buffers are host memory the CPU addresses directly
                                   (vyre_backend_buffer_address is a host pointer) */
    int max_threads_per_sm;     /* resident invocations per multiprocessor (0 for the
                                   reference): with sms, the items one pass of a resident
                                   grid covers (a worklist's drain window) */
    bool runs_on_caller;        /* launches and runs execute on the calling thread before
                                   they return (the interpreter), so a host may guard them
                                   against Ctrl-C; a device enqueues and waits */
};

/* One counter of vyre_backend_stats. Names are the backend's own; where two backends
 * count the same thing they use one name (launches, graph_launches, syncs, bytes_up,
 * bytes_down, live_buffers, live_buffer_bytes, live_kernels, live_graphs). */
struct vyre_backend_stat {
    const char *name; /* static */
    uint64_t value;
};
#define VYRE_BACKEND_MAX_STATS 64u

/* Out-of-bounds accesses of one declaration name in debug mode. */
#define VYRE_BACKEND_OOB_NAME 65 /* a declaration name (at most 64 bytes) and its NUL */
struct vyre_backend_oob {
    char name[VYRE_BACKEND_OOB_NAME];
    uint64_t loads;  /* loads past the end (each read as typed zero) */
    uint64_t stores; /* stores and atomics past the end (each dropped) */
};

/* Arguments of one launch (see "Vocabulary" above). Geometry: grid when not NULL, else
 * n elements when n > 0, else the largest bound buffer's count (ARCHITECTURE.md §5). */
struct vyre_backend_args {
    vyre_backend_buffer *const *buffers;
    size_t nbuffers;
    const vyre_bits *params;
    size_t nparams;
    uint64_t n;
    const uint32_t *grid;
    /* one worklist per worklist declaration (by its slot, as buffers), of this backend */
    vyre_backend_worklist *const *worklists;
    size_t nworklists;
    /* NULL, or a worklist of this backend whose current count sizes the launch: one
     * invocation per item, the count read where the kernel runs, when it runs (so a
     * sequence or graph step sees the count its earlier steps left). Excludes grid and n;
     * the program must declare a worklist and have no grid statements. */
    vyre_backend_worklist *sized;
};

/* One step of a sequence, graph or megakernel. */
struct vyre_backend_step {
    vyre_backend_kernel *kernel;
    struct vyre_backend_args args;
};

/* A ranged readback at the end of a sequence: count elements from element first of buf
 * into dst (count * element size bytes). */
struct vyre_backend_readback {
    vyre_backend_buffer *buf;
    uint64_t first, count;
    void *dst;
};

/* Options of vyre_backend_sequence. steps[0..prefix) run once, then steps[prefix..n)
 * `times` times, then the readbacks, with one synchronisation at the end. */
struct vyre_sequence_options {
    size_t prefix;
    uint32_t times; /* rounds of the repeated steps (0: none) */
    const struct vyre_backend_readback *readback;
    size_t nreadback;
    struct vyre_timing *timing; /* NULL: not timed */
};

/* Options of vyre_backend_megakernel (docs/GRID.md): the steps composed into one
 * program with grid statements (vyre_mega_build) and run as one launch. */
struct vyre_megakernel_options {
    size_t prefix;              /* steps [0, prefix) run once before the rounds */
    uint32_t times;             /* rounds of the other steps (without converge) */
    vyre_backend_buffer *flag;  /* converge: rounds until flag[0] stays 0 ... */
    uint32_t max_rounds;        /* ... for at most this many rounds */
    struct vyre_timing *timing; /* NULL: not timed */
    uint64_t *rounds;           /* NULL, or receives the rounds the converge loop ran */
    /* how this run's grid statements run (vyre.h): a plan's choice for this call only;
     * VYRE_GRID_AUTO: the backend's mode (vyre_backend_set_grid_sync) */
    enum vyre_grid_sync grid_sync;
};

/* Options and results of vyre_backend_run: a one-shot dispatch of a program (compile,
 * host data in, one launch, host data out, one synchronisation). buffers[i] is the host
 * data of buffer slot i (data NULL: count zeroed elements); where resident[i] is not
 * NULL, that buffer of the backend is used in place and buffers[i], out[i] are ignored.
 * out[i] (NULL: not wanted) receives buffers[i].count elements of a write or read_write
 * slot after the run (it may be buffers[i].data itself); read slots ignore it. Geometry
 * as struct vyre_backend_args (grid, else n, else the largest buffer). */
struct vyre_backend_run_options {
    const struct vyre_buffer_arg *buffers; /* one per buffer slot */
    vyre_backend_buffer *const *resident;  /* NULL, or one per slot (NULL: host data) */
    size_t nbuffers;
    const vyre_bits *params; /* one per param slot */
    size_t nparams;
    uint64_t n;
    const uint32_t *grid;
    void *const *out;           /* NULL, or one destination per slot */
    struct vyre_timing *timing; /* NULL: not timed */
    uint64_t *rounds;           /* NULL, or receives the rounds its converge loops ran */
    /* how a program with grid statements runs; VYRE_GRID_AUTO: the backend's mode
     * (vyre_backend_set_grid_sync) */
    enum vyre_grid_sync grid_sync;
};

/* A worklist's counts (vyre_backend_worklist_state): the current items, the items pushed
 * for the next round (counted past the capacity), the capacity, and 0 or the capacity
 * the pushes since the last clear needed (an overflow: the items past it were dropped). */
struct vyre_backend_worklist_state {
    uint32_t cur_count;
    uint32_t next_count;
    uint32_t capacity;
    uint32_t overflow_needed;
};

/* ---- the operations a backend implements --------------------------------------- */

/* Every handle below (buf, kernel, graph, prepared) is the backend's own. Launch slots
 * get the arguments already checked against the program (counts, types, backend,
 * worklists); the backend resolves the §5 grid from grid, n and counts itself
 * (vyre_launch_grid) and refuses a bad one. The wrapper checks the geometry up front
 * only where several launches are recorded or queued (sequences, graphs, prepared
 * launches, grid runs). A NULL optional slot is filled by the wrapper
 * (src/core/backend.c): */
struct vyre_backend_launch {
    void *const *buffers; /* backend handles, one per buffer slot */
    const uint64_t *counts;
    size_t nbuffers;
    const vyre_bits *params;
    size_t nparams;
    uint64_t n;             /* as the caller gave it */
    const uint32_t *grid;   /* as the caller gave it (NULL: none) */
    void *const *worklists; /* backend handles, one per worklist slot */
    size_t nworklists;
    void *sized; /* a worklist handle sizing the launch (vyre_backend_args.sized), or NULL */
    /* how a program with grid statements runs (vyre.h): the backend's mode
     * (vyre_backend_set_grid_sync), or a megakernel's for its one launch; a backend that
     * runs grid programs one way only (the reference) ignores it */
    enum vyre_grid_sync grid_sync;
};

struct vyre_backend_ops {
    /* required */
    void (*close)(void *ctx);
    enum vyre_status (*info)(void *ctx, struct vyre_backend_info *out, struct vyre_error *err);
    /* buffers: alloc gives zeroed memory; first/count are elements */
    enum vyre_status (*buffer_alloc)(void *ctx, enum vyre_type t, uint64_t count, void **out,
                                     struct vyre_error *err);
    void (*buffer_free)(void *ctx, void *buf);
    enum vyre_status (*buffer_view)(void *ctx, void *parent, enum vyre_type t, uint64_t first,
                                    uint64_t count, void **out, struct vyre_error *err);
    enum vyre_status (*buffer_upload)(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                      const void *src, uint64_t count, struct vyre_error *err);
    enum vyre_status (*buffer_download)(void *ctx, void *buf, enum vyre_type t, uint64_t first,
                                        void *dst, uint64_t count, struct vyre_error *err);
    enum vyre_status (*buffer_zero)(void *ctx, void *buf, struct vyre_error *err);
    /* kernels: p is validated and stays alive as long as the kernel */
    enum vyre_status (*compile)(void *ctx, vyre_program *p, void **out, struct vyre_error *err);
    void (*kernel_free)(void *ctx, void *kernel);
    enum vyre_status (*launch)(void *ctx, void *kernel, const struct vyre_backend_launch *a,
                               struct vyre_error *err);
    enum vyre_status (*synchronize)(void *ctx, struct vyre_error *err);
    /* counters into out[0..cap); returns how many */
    size_t (*stats)(void *ctx, struct vyre_backend_stat *out, size_t cap);

    /* optional (NULL: the wrapper's default, said per slot) */
    /* default: validation only */
    bool (*supports)(void *ctx, vyre_program *p, char *why, size_t whysz);
    /* default: launch + synchronize, wall-clock timed */
    enum vyre_status (*launch_timed)(void *ctx, void *kernel, const struct vyre_backend_launch *a,
                                     struct vyre_timing *t, struct vyre_error *err);
    /* default: the wrapper keeps the checked arguments and calls launch */
    enum vyre_status (*prepare)(void *ctx, void *kernel, const struct vyre_backend_launch *a,
                                void **out, struct vyre_error *err);
    enum vyre_status (*launch_prepared)(void *ctx, void *prepared, struct vyre_error *err);
    void (*prepared_free)(void *ctx, void *prepared);
    /* default: launches in order, readbacks by download, timed around the whole */
    enum vyre_status (*sequence)(void *ctx, const void *const *kernels,
                                 const struct vyre_backend_launch *steps, size_t n,
                                 const struct vyre_sequence_options *o, void *const *rb_bufs,
                                 struct vyre_error *err);
    /* default: the steps recorded (arguments by value) and replayed by launch */
    enum vyre_status (*graph_capture)(void *ctx, const void *const *kernels,
                                      const struct vyre_backend_launch *steps, size_t n, void **out,
                                      struct vyre_error *err);
    enum vyre_status (*graph_launch)(void *ctx, void *graph, uint32_t times, struct vyre_timing *t,
                                     struct vyre_error *err);
    void (*graph_free)(void *ctx, void *graph);
    /* converge rounds of the kernel's last launch; default: 0 */
    enum vyre_status (*kernel_rounds)(void *ctx, void *kernel, uint64_t *out,
                                      struct vyre_error *err);
    /* megakernel modes */
    /* one launch of a kernel with grid statements in mode l->grid_sync (the caller's,
     * for this launch only), then one synchronisation; t (NULL: not timed) and *rounds
     * (its converge rounds) come back within that synchronisation, with no wait of their
     * own; default: launch (launch_timed when t), synchronize, kernel_rounds */
    /* watch: NULL, or a worklist handle whose counts come back within that same
     * synchronisation, so worklist_overflow knows an overflow of it right after */
    enum vyre_status (*grid_run)(void *ctx, void *kernel, const struct vyre_backend_launch *l,
                                 struct vyre_timing *t, uint64_t *rounds, void *watch,
                                 struct vyre_error *err);
    /* default: VYRE_ERR_UNSUPPORTED with a Fix */
    enum vyre_status (*set_debug)(void *ctx, bool on, struct vyre_error *err);
    /* default: an empty report; *out is malloc'd (free()) */
    enum vyre_status (*oob_report)(void *ctx, struct vyre_backend_oob **out, size_t *n,
                                   struct vyre_error *err);
    /* gives cached memory back (pools, unused modules); default: nothing cached, VYRE_OK */
    enum vyre_status (*trim)(void *ctx, struct vyre_error *err);
    /* a sticky fault poisoned the device; default: false (never) */
    bool (*lost)(void *ctx);
    /* the backend's own device object, for extensions that only it has (a CUDA
     * backend's vyre_cuda_device: NCCL groups, raw PTX, peers); default: NULL */
    void *(*native_device)(void *ctx);
    /* the address of a buffer's first element for interop (a device address, or a host
     * pointer when info.host_memory); default: 0 */
    uint64_t (*buffer_address)(void *ctx, void *buf);
    /* the buffer's object in the native device's terms (a vyre_cuda_buffer); default:
     * NULL */
    void *(*buffer_native)(void *ctx, void *buf);
    /* count elements from the start of src into the start of dst, dst being a buffer of
     * dst_ctx, a backend with these same ops (another device of this kind); default:
     * staged through host memory by download and upload */
    enum vyre_status (*buffer_copy)(void *ctx, void *src, void *dst_ctx, void *dst,
                                    enum vyre_type t, uint64_t count, struct vyre_error *err);
    /* the kernel as the native device's object (a vyre_cuda_kernel); default: NULL */
    void *(*kernel_native)(void *ctx, void *kernel);

    /* one-shot runs: p is validated and the bindings checked; resident is NULL or one
     * backend handle per slot (NULL: host data; o->resident is not for the backend),
     * o->buffers[i].count a resident buffer's count; default: compile, a buffer per
     * host slot uploaded, launch_timed, the results downloaded, rounds, all freed */
    enum vyre_status (*run)(void *ctx, vyre_program *p, const struct vyre_backend_run_options *o,
                            void *const *resident, struct vyre_error *err);

    /* worklists (ARCHITECTURE.md §2, §5 "Worklists"): counts and two item arrays of
     * `capacity` items, kept where the backend's kernels push; the wrapper checks types,
     * capacities and NULLs. With worklist_alloc set, free, state, push, items, advance
     * and clear are required (overflow, native and host stay optional); without it the
     * wrapper answers VYRE_ERR_UNSUPPORTED with a Fix. */
    enum vyre_status (*worklist_alloc)(void *ctx, enum vyre_type t, uint32_t capacity, void **out,
                                       struct vyre_error *err);
    void (*worklist_free)(void *ctx, void *wl);
    /* the counts; waits for queued work */
    enum vyre_status (*worklist_state)(void *ctx, void *wl, struct vyre_backend_worklist_state *out,
                                       struct vyre_error *err);
    /* appends n items to the current ones (the wrapper checked they fit) */
    enum vyre_status (*worklist_push)(void *ctx, void *wl, const void *src, uint32_t n,
                                      struct vyre_error *err);
    /* the first n current items into dst (n <= the capacity) */
    enum vyre_status (*worklist_items)(void *ctx, void *wl, void *dst, uint32_t n,
                                       struct vyre_error *err);
    /* the pushed items become current; a device enqueues it (no synchronisation) */
    enum vyre_status (*worklist_advance)(void *ctx, void *wl, struct vyre_error *err);
    /* no current or pushed items, no overflow record */
    enum vyre_status (*worklist_clear)(void *ctx, void *wl, struct vyre_error *err);
    /* the capacity an overflow needs, where the backend knows it without waiting (the
     * reference: right after the run that pushed; a device: after a grid run that
     * watched it, or the last state); default: 0 (known at the next state) */
    uint32_t (*worklist_overflow)(void *ctx, void *wl);
    /* the worklist as the native device's object (a vyre_cuda_worklist); default: NULL */
    void *(*worklist_native)(void *ctx, void *wl);
    /* the worklist as host state (a struct vyre_worklist_arg the interpreter pushes into
     * in place, vyre_ref_run_options.worklists) where it lives in host memory; default:
     * NULL */
    struct vyre_worklist_arg *(*worklist_host)(void *ctx, void *wl);

    /* n validated programs at once (src/core/backend_compile.c), all or nothing: on
     * failure out[] holds no kernel; default: compile each, in order */
    enum vyre_status (*compile_many)(void *ctx, vyre_program *const *p, size_t n, void **out,
                                     struct vyre_error *err);
};

/* Wraps ops + ctx into a backend object (for registry entries' open functions). name is
 * the registered name (static). On failure ops->close(ctx) has been called. */
enum vyre_status vyre_backend_new(const char *name, const struct vyre_backend_ops *ops, void *ctx,
                                  vyre_backend **out, struct vyre_error *err);

/* ---- registry ------------------------------------------------------------------ */

struct vyre_backend_entry {
    const char *name; /* static */
    int priority;     /* higher wins in vyre_backend_open(NULL, ...) */
    bool available;
    char reason[512]; /* why not available ("" when it is) */
};
/* The registered backends, in registry order: *n gets how many there are (write at most
 * cap entries; out may be NULL with cap 0 to count). */
enum vyre_status vyre_backend_list(struct vyre_backend_entry *out, size_t cap, size_t *n,
                                   struct vyre_error *err);
/* Opens backend `name` (NULL: the available one with the highest priority) on device
 * `ordinal` (0-based; the reference has only 0). opts may be NULL. An unavailable
 * backend is VYRE_ERR_NO_CUDA / VYRE_ERR_UNSUPPORTED with the reason and a Fix. */
enum vyre_status vyre_backend_open(const char *name, int ordinal,
                                   const struct vyre_backend_options *opts, vyre_backend **out,
                                   struct vyre_error *err);
/* Frees the backend and whatever made from it is still alive. NULL is a no-op. */
void vyre_backend_close(vyre_backend *be);

/* ---- capability queries ------------------------------------------------------------ */

const char *vyre_backend_name(const vyre_backend *be); /* "reference", "cuda"; "" for NULL */
enum vyre_status vyre_backend_info(vyre_backend *be, struct vyre_backend_info *out,
                                   struct vyre_error *err);
/* Whether be can compile and run p; false with the reason (ending in a Fix) in why. */
bool vyre_backend_supports(vyre_backend *be, vyre_program *p, char *why, size_t whysz);

/* ---- buffers ------------------------------------------------------------------------ */

/* count zeroed elements of type t. */
enum vyre_status vyre_backend_buffer_alloc(vyre_backend *be, enum vyre_type t, uint64_t count,
                                           vyre_backend_buffer **out, struct vyre_error *err);
/* Frees a buffer (a view: only the view). Freeing an owner ends its views: each stays
 * allocated until freed, and every use of it is VYRE_ERR_ARG. NULL is a no-op. */
void vyre_backend_buffer_free(vyre_backend_buffer *b);
/* count elements of b from element first, aliasing its storage (views of views alias
 * the owner). The view owns no memory; b must outlive it. */
enum vyre_status vyre_backend_buffer_view(vyre_backend_buffer *b, uint64_t first, uint64_t count,
                                          vyre_backend_buffer **out, struct vyre_error *err);
/* count elements from src into b from element first; ordered after queued launches. */
enum vyre_status vyre_backend_buffer_upload(vyre_backend_buffer *b, uint64_t first, const void *src,
                                            uint64_t count, struct vyre_error *err);
/* Copies count elements from the start of src into the start of dst (same type, ranges
 * checked), on any two backends: a backend's own copy between its buffers and between
 * devices of its kind (CUDA: the peer path, else staged; ordered after the work queued
 * on both), else staged through host memory. */
enum vyre_status vyre_backend_buffer_copy(vyre_backend_buffer *src, vyre_backend_buffer *dst,
                                          uint64_t count, struct vyre_error *err);
/* Waits for queued work, then copies count elements from element first into dst. */
enum vyre_status vyre_backend_buffer_download(vyre_backend_buffer *b, uint64_t first, void *dst,
                                              uint64_t count, struct vyre_error *err);
enum vyre_status vyre_backend_buffer_zero(vyre_backend_buffer *b, struct vyre_error *err);
enum vyre_type vyre_backend_buffer_type(const vyre_backend_buffer *b);
uint64_t vyre_backend_buffer_count(const vyre_backend_buffer *b);
vyre_backend *vyre_backend_buffer_backend(const vyre_backend_buffer *b);
/* The address of b's first element, for a host's own code or raw kernels: a device
 * address (CUdeviceptr) on a GPU, a host pointer where vyre_backend_info.host_memory;
 * 0 when b is empty, NULL or an ended view. Valid until b is freed. */
uint64_t vyre_backend_buffer_address(const vyre_backend_buffer *b);
/* b as the native device's object (vyre_backend_native_device): the vyre_cuda_buffer of
 * a "cuda" buffer, owned by b; NULL for a backend without a native device. */
void *vyre_backend_buffer_native(const vyre_backend_buffer *b);

/* ---- kernels and launches ----------------------------------------------------------- */

/* Validates p (VYRE_ERR_INVALID listing the problems) and compiles it; the kernel keeps
 * its own copy of p, which may be freed afterwards. */
enum vyre_status vyre_backend_compile(vyre_backend *be, vyre_program *p, vyre_backend_kernel **out,
                                      struct vyre_error *err);
void vyre_backend_kernel_free(vyre_backend_kernel *k);
/* The kernel's copy of its program (owned by the kernel). */
vyre_program *vyre_backend_kernel_program(const vyre_backend_kernel *k);
/* k as the native device's object (vyre_backend_native_device): the vyre_cuda_kernel of a
 * "cuda" kernel, owned by k; NULL for a backend without a native device, or for NULL. */
void *vyre_backend_kernel_native(const vyre_backend_kernel *k);
/* Converge rounds of the kernel's last launch (0 without grid statements). */
enum vyre_status vyre_backend_kernel_rounds(vyre_backend_kernel *k, uint64_t *out,
                                            struct vyre_error *err);
/* Options of vyre_backend_grid_run (zero-initialise, then set what you need). */
struct vyre_grid_run_options {
    /* the mode of this launch only (vyre.h); VYRE_GRID_AUTO: the backend's mode
     * (vyre_backend_set_grid_sync). A plan's choice reaches the run here. */
    enum vyre_grid_sync grid_sync;
    struct vyre_timing *timing; /* NULL: not timed */
    uint64_t *rounds;           /* NULL, or receives the converge rounds it ran */
    /* NULL, or a worklist of the run (the one a converge loop reads) whose counts come
     * back within the run's one synchronisation: vyre_backend_worklist_overflow then
     * reports an overflow of its pushes with no wait of its own */
    vyre_backend_worklist *watch;
};
/* One launch of a kernel with grid statements (a composed megakernel) in the mode o says,
 * then one synchronisation; its timing and converge rounds come back within that one
 * synchronisation (a cooperative run's rounds are copied behind the kernel). o may be
 * NULL (the backend's mode, untimed). */
enum vyre_status vyre_backend_grid_run(vyre_backend_kernel *k, const struct vyre_backend_args *a,
                                       const struct vyre_grid_run_options *o,
                                       struct vyre_error *err);
/* One launch (the reference runs it now; a device enqueues it). */
enum vyre_status vyre_backend_launch(vyre_backend_kernel *k, const struct vyre_backend_args *a,
                                     struct vyre_error *err);
/* One launch, synchronised and timed. */
enum vyre_status vyre_backend_launch_timed(vyre_backend_kernel *k,
                                           const struct vyre_backend_args *a, struct vyre_timing *t,
                                           struct vyre_error *err);
/* A launch whose arguments are checked once: vyre_backend_launch_prepared only enqueues.
 * The bound buffers must stay alive while it is used. */
enum vyre_status vyre_backend_prepare(vyre_backend_kernel *k, const struct vyre_backend_args *a,
                                      vyre_backend_prepared **out, struct vyre_error *err);
enum vyre_status vyre_backend_launch_prepared(vyre_backend_prepared *pl, struct vyre_error *err);
void vyre_backend_prepared_free(vyre_backend_prepared *pl);

/* Steps with one synchronisation at the end (struct vyre_sequence_options; o NULL:
 * every step once, no readback). */
enum vyre_status vyre_backend_sequence(vyre_backend *be, const struct vyre_backend_step *steps,
                                       size_t n, const struct vyre_sequence_options *o,
                                       struct vyre_error *err);
/* Records the steps (arguments by value) for replay; buffers and kernels must outlive
 * the graph. */
enum vyre_status vyre_backend_graph_capture(vyre_backend *be, const struct vyre_backend_step *steps,
                                            size_t n, vyre_backend_graph **out,
                                            struct vyre_error *err);
/* Replays the graph `times` times, then synchronises; t may be NULL. */
enum vyre_status vyre_backend_graph_launch(vyre_backend_graph *g, uint32_t times,
                                           struct vyre_timing *t, struct vyre_error *err);
void vyre_backend_graph_free(vyre_backend_graph *g);
/* The steps composed into one program with grid statements (vyre_mega_build: steps of
 * other workgroup shapes are re-mapped, unless they use barriers or subgroup ops) and
 * run as one launch, then synchronised (docs/GRID.md). One vyre_backend_buffer is one
 * buffer of the composition: bind a buffer, not two views of it, where steps share data.
 * The composed program is compiled on every call (no plan cache). */
enum vyre_status vyre_backend_megakernel(vyre_backend *be, const struct vyre_backend_step *steps,
                                         size_t n, const struct vyre_megakernel_options *o,
                                         struct vyre_error *err);

/* ---- megakernel modes ----------------------------------------------------------------- */

/* How this backend's programs with grid statements run from now on (enum vyre_grid_sync,
 * vyre.h): kept by the backend object and passed to each launch it makes (launches,
 * prepared launches, sequences, graphs captured afterwards, megakernels without a mode of
 * their own), never through state shared with another backend object. The initial mode
 * is $VYRE_GRID_SYNC ("auto", "cooperative", "split", "graph"; an unknown value fails
 * vyre_backend_open with VYRE_ERR_ARG), else VYRE_GRID_AUTO. The reference records the
 * mode and runs grid programs its one way (sections in order). */
enum vyre_status vyre_backend_set_grid_sync(vyre_backend *be, enum vyre_grid_sync mode,
                                            struct vyre_error *err);
enum vyre_grid_sync vyre_backend_grid_sync(const vyre_backend *be); /* AUTO for NULL */

/* One-shot dispatch (struct vyre_backend_run_options): validates p, checks the bindings
 * against its declarations (counts, types, resident buffers of be), then compiles (a
 * device: through its caches), copies host data in, launches once, copies results out
 * and synchronises. Nothing of the run outlives the call but the resident buffers'
 * contents. Timing, when asked, is the backend's (wall-clock on the reference). */
enum vyre_status vyre_backend_run(vyre_backend *be, vyre_program *p,
                                  const struct vyre_backend_run_options *o, struct vyre_error *err);

/* ---- worklists (ARCHITECTURE.md §2, §5 "Worklists") ------------------------------------------ */

/* A device worklist: kernels read its current items with (len W) / (load W i) and push
 * the next round's with (push W v); advance makes the pushed items current. A push past
 * the capacity is counted, not stored, and reported (overflow_needed) until clear.
 * Backends without worklists answer VYRE_ERR_UNSUPPORTED with a Fix.
 * An empty worklist of `capacity` items of type t (numeric, not bool; capacity >= 1). */
enum vyre_status vyre_backend_worklist_alloc(vyre_backend *be, enum vyre_type t, uint32_t capacity,
                                             vyre_backend_worklist **out, struct vyre_error *err);
void vyre_backend_worklist_free(vyre_backend_worklist *w); /* NULL: no-op */
/* The counts (cur_count as stored: it never exceeds the capacity); waits for queued
 * work on a device. */
enum vyre_status vyre_backend_worklist_state(vyre_backend_worklist *w,
                                             struct vyre_backend_worklist_state *out,
                                             struct vyre_error *err);
/* Appends n items of the worklist's type to the current items; VYRE_ERR_LIMIT with the
 * capacity needed when they do not fit. Waits for queued work on a device. */
enum vyre_status vyre_backend_worklist_push(vyre_backend_worklist *w, const void *src, uint32_t n,
                                            struct vyre_error *err);
/* The first n current items into dst: n at most the current count (past it the values
 * are unspecified; past the capacity VYRE_ERR_ARG). Waits for queued work on a device. */
enum vyre_status vyre_backend_worklist_items(vyre_backend_worklist *w, void *dst, uint32_t n,
                                             struct vyre_error *err);
/* The pushed items become current and the next round starts empty. A device enqueues it
 * after the queued launches, with no synchronisation (rounds stay free of host syncs). */
enum vyre_status vyre_backend_worklist_advance(vyre_backend_worklist *w, struct vyre_error *err);
/* No current or pushed items, no overflow record. */
enum vyre_status vyre_backend_worklist_clear(vyre_backend_worklist *w, struct vyre_error *err);
/* 0, or the capacity a known overflow needs, without waiting for a device: the reference
 * knows right after the launch that pushed; a device after a grid run that watched the
 * worklist (vyre_grid_run_options.watch), else at the next state. */
uint32_t vyre_backend_worklist_overflow(const vyre_backend_worklist *w);
enum vyre_type vyre_backend_worklist_type(const vyre_backend_worklist *w); /* VYRE_VOID: NULL */
uint32_t vyre_backend_worklist_capacity(const vyre_backend_worklist *w);   /* 0 for NULL */
vyre_backend *vyre_backend_worklist_backend(const vyre_backend_worklist *w);
/* w as the native device's object (vyre_backend_native_device): the vyre_cuda_worklist
 * of a "cuda" worklist, owned by w; NULL for a backend without a native device. */
void *vyre_backend_worklist_native(const vyre_backend_worklist *w);
/* w's state in host memory, the struct vyre_worklist_arg a vyre_ref_run of its kernels
 * binds (pushes land there in place), owned by w; NULL where the worklist lives on a
 * device. */
struct vyre_worklist_arg *vyre_backend_worklist_host(const vyre_backend_worklist *w);

/* ---- state and telemetry --------------------------------------------------------------- */

/* Waits for all queued work; reports a device fault or an error deferred from a free. */
enum vyre_status vyre_backend_synchronize(vyre_backend *be, struct vyre_error *err);
/* Gives cached memory back (a device's pools and unused modules); VYRE_OK when the
 * backend caches nothing. */
enum vyre_status vyre_backend_trim(vyre_backend *be, struct vyre_error *err);
/* True once a sticky fault poisoned the backend's device (every later call fails; open
 * a new backend). Never for the reference; false for NULL. */
bool vyre_backend_lost(vyre_backend *be);
/* The backend's own device object, or NULL when it has none (the reference) or for NULL:
 * for the "cuda" backend the vyre_cuda_device * it runs on (vyre_cuda.h), owned by the
 * backend (do not release it; it lives until vyre_backend_close). The one way to reach
 * what only that backend has (NCCL groups, raw PTX, peer copies) without a
 * backend-kind test. */
void *vyre_backend_native_device(vyre_backend *be);
/* Fills out[0..cap) with the backend's counters; *n gets how many were written. */
enum vyre_status vyre_backend_stats(vyre_backend *be, struct vyre_backend_stat *out, size_t cap,
                                    size_t *n, struct vyre_error *err);
/* The value of counter `name`; false when the backend has no such counter. */
bool vyre_backend_stat(vyre_backend *be, const char *name, uint64_t *value);
/* Debug mode (ARCHITECTURE.md §3): runs count out-of-bounds accesses per declaration;
 * switching starts a new report. */
enum vyre_status vyre_backend_set_debug(vyre_backend *be, bool on, struct vyre_error *err);
/* The declarations with out-of-bounds accesses since debug mode was switched on or the
 * last report (which this one resets), sorted by name; *out is malloc'd (free()). */
enum vyre_status vyre_backend_oob_report(vyre_backend *be, struct vyre_backend_oob **out, size_t *n,
                                         struct vyre_error *err);

/* Validates and compiles n programs as n vyre_backend_compile calls would, where the
 * backend can in parallel (CUDA: the cubins its disk cache lacks are JIT-compiled in
 * worker threads, $VYRE_JIT_THREADS). All or nothing: on an error (naming the first
 * failing program) out[0..n) are all NULL. */
enum vyre_status vyre_backend_compile_many(vyre_backend *be, vyre_program *const *programs,
                                           size_t n, vyre_backend_kernel **out,
                                           struct vyre_error *err);

#ifdef __cplusplus
}
#endif
#endif
