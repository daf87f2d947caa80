/* vyre_cuda.h — public C API of the CUDA runtime: driver loading, devices, device
 * buffers, kernel compilation through the PTX / module / disk-cubin caches, and
 * dispatch (launch, sequences, CUDA graphs, timing). libcuda is loaded at run time;
 * nothing here needs a GPU to link, and every call fails cleanly without one.
 *
 * Threads: a device object may be used from any thread (its primary context is
 * made current on entry to every call) but not from two threads at once.
 * Ownership: buffers, kernels and graphs keep their device alive (reference
 * count); vyre_cuda_device_release drops the caller's reference. */
#ifndef VYRE_CUDA_H
#define VYRE_CUDA_H

#include "vyre.h"
#include "vyre_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Oldest driver accepted (CUDA 12.0): cuGetProcAddress_v2 and the ABIs used. */
#define VYRE_CUDA_MIN_DRIVER 12000

typedef struct vyre_cuda_device vyre_cuda_device;
typedef struct vyre_cuda_buffer vyre_cuda_buffer;
typedef struct vyre_cuda_kernel vyre_cuda_kernel;
typedef struct vyre_cuda_graph vyre_cuda_graph;

/* ---- driver --------------------------------------------------------------- */

/* Loads the driver once per process. true when CUDA is usable; otherwise false and
 * err (if not NULL) says why: no libcuda, the toolkit stub, driver too old, cuInit
 * failure, or no device. Never fails any other way. */
bool vyre_cuda_available(struct vyre_error *err);
/* Number of devices (0 is a success when the driver loads but has no device). */
enum vyre_status vyre_cuda_device_count(int *out, struct vyre_error *err);
/* cuDriverGetVersion, e.g. 12040; 0 when the driver did not load. */
int vyre_cuda_driver_version(void);
/* A monotonic clock in nanoseconds (the one timed dispatches use). */
uint64_t vyre_cuda_now_ns(void);
/* NVTX ranges around compile, launch, sequence, run, graph replay and megakernel
 * sections, named by program (docs/RUNTIME.md "Profiler ranges"). Process-wide; starts
 * as $VYRE_NVTX=1 says. Turning it on fails (VYRE_ERR_UNSUPPORTED) when the build had
 * no nvtx3/nvToolsExt.h; vyre_cuda_nvtx_built says which. */
bool vyre_cuda_nvtx_built(void);
bool vyre_cuda_nvtx_enabled(void);
enum vyre_status vyre_cuda_set_nvtx(bool on, struct vyre_error *err);

/* ---- PTX target choice ------------------------------------------------------ */

/* The PTX target (vyre_ptx_target, vyre.h) a device of compute capability `device_sm`
 * runs under a driver of CUDA version `driver_version` (cuDriverGetVersion form): the
 * highest target <= device_sm whose ISA the driver loads. PTX is forward compatible, so
 * the driver's JIT compiles a lower target's PTX for the device: a device between or
 * above the known targets (sm_95, sm_130) gets the highest one below it, and a driver
 * too old for the device's own target's ISA gets the highest target it loads, with a
 * Fix naming the driver that would give the device's own (docs/RUNTIME.md "PTX
 * targets"). reason says which case applied. Fails with VYRE_ERR_UNSUPPORTED below
 * sm_70 (vyre's kernels need Volta's features), or when the driver loads no target
 * <= device_sm, saying which driver to install. No driver call is made. */
struct vyre_cuda_target {
    unsigned sm;     /* the target, e.g. 120 */
    const char *isa; /* its PTX ISA .version, e.g. "8.7" */
    char reason[384];
};
enum vyre_status vyre_cuda_target_choose(unsigned device_sm, int driver_version,
                                         struct vyre_cuda_target *out, struct vyre_error *err);
/* The oldest Linux driver that supports CUDA `cuda_version` (cuDriverGetVersion form),
 * e.g. "570.26" for 12080 (the first CUDA release at or after it); NULL past the table. */
const char *vyre_cuda_linux_driver_for(int cuda_version);

/* ---- devices -------------------------------------------------------------- */

enum vyre_status vyre_cuda_device_open(int ordinal, vyre_cuda_device **out, struct vyre_error *err);
void vyre_cuda_device_retain(vyre_cuda_device *d);
/* Drops one reference; the last one frees pools, modules and the context. */
void vyre_cuda_device_release(vyre_cuda_device *d);

/* Property names are the device profiles' (lua/vyre/profiles.lua, docs/API.md
 * "Vocabulary"), as be:info() gives them in Lua. */
struct vyre_cuda_info {
    char name[256];
    int ordinal;
    int cc_major, cc_minor;  /* compute capability */
    unsigned sm;             /* cc_major * 10 + cc_minor */
    unsigned target;         /* the PTX target vyre compiles for (vyre_cuda_target_choose) */
    char target_isa[8];      /* its PTX ISA .version, "8.7" */
    char target_reason[384]; /* why that target: "the device's own SM", forward JIT, ... */
    int sms;                 /* multiprocessors */
    uint64_t memory_bytes;   /* total device memory */
    int max_threads_per_block;
    int max_block[3];
    int max_grid[3];
    int shared_bytes_per_block;       /* default limit */
    int shared_bytes_per_block_optin; /* opt-in limit */
    int warp_size;
    bool cooperative_launch;
    int l2_bytes;
    int clock_khz;
    int memory_clock_khz;
    int memory_bus_bits;
    int driver_version;
    /* Per-multiprocessor limits, for occupancy planning (lua/vyre/profiles.lua). */
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int registers_per_block;
    int registers_per_sm;
    int shared_bytes_per_sm;
    bool concurrent_kernels;
};
enum vyre_status vyre_cuda_device_info(vyre_cuda_device *d, struct vyre_cuda_info *out,
                                       struct vyre_error *err);
/* true once a sticky fault poisoned the device; every later call fails with it. */
bool vyre_cuda_device_lost(const vyre_cuda_device *d);

/* Called on out-of-memory before the pools are trimmed and the allocation retried
 * once (the Lua binding runs a full garbage collection here). */
typedef void (*vyre_cuda_oom_fn)(void *ud);
void vyre_cuda_set_oom_handler(vyre_cuda_device *d, vyre_cuda_oom_fn fn, void *ud);

/* Records err to be raised by the device's next call: for release paths that must
 * not fail where they run (garbage collectors, destructors). */
void vyre_cuda_defer_error(vyre_cuda_device *d, const struct vyre_error *err);

/* How programs with grid statements (ARCHITECTURE.md §3) run on a device: enum
 * vyre_grid_sync (vyre.h). The mode is an argument of each launch (vyre_cuda_args.grid_sync,
 * vyre_cuda_run_options.grid_sync, vyre_cuda_grid_options.mode), not a setting of the
 * device: two callers sharing a device never see each other's choice. The backend
 * interface keeps one per backend object (vyre_backend_set_grid_sync, default
 * $VYRE_GRID_SYNC) and passes it to every launch. One name per mode everywhere (plans,
 * the policy, be:grid_sync): "split" (never "host_loop"). */
const char *vyre_cuda_grid_sync_name(enum vyre_grid_sync mode); /* "auto" ... */
bool vyre_cuda_grid_sync_from_name(const char *name, enum vyre_grid_sync *out);

/* Waits for all queued work on the device's stream. */
enum vyre_status vyre_cuda_synchronize(vyre_cuda_device *d, struct vyre_error *err);
/* Returns cached transient and pinned staging memory to the driver and unloads
 * cached modules that no kernel uses (live_modules then counts only those in use). */
enum vyre_status vyre_cuda_trim(vyre_cuda_device *d, struct vyre_error *err);

/* Telemetry counters, one X entry per field (name, description). */
#define VYRE_CUDA_STATS(X)                                              \
    X(launches, "kernel launches enqueued")                             \
    X(vector_launches, "launches of vector entries (elementwise)")      \
    X(graph_launches, "CUDA graph replays")                             \
    X(bytes_up, "bytes copied host to device")                          \
    X(bytes_down, "bytes copied device to host")                        \
    X(syncs, "host waits on the stream")                                \
    X(ptx_hits, "PTX cache hits")                                       \
    X(ptx_misses, "PTX memory-cache misses")                            \
    X(ptx_emits, "PTX texts emitted (code generation)")                 \
    X(disk_program_hits, "PTX read by program key (not emitted)")       \
    X(disk_program_misses, "program keys not on disk")                  \
    X(disk_program_writes, "program entries written to disk")           \
    X(module_load_ns, "time in cuModuleLoadDataEx, ns")                 \
    X(module_hits, "module cache hits")                                 \
    X(module_misses, "module cache misses")                             \
    X(disk_hits, "disk cubin cache hits")                               \
    X(disk_misses, "disk cubin cache misses")                           \
    X(disk_writes, "cubins written to disk")                            \
    X(disk_evictions, "disk entries evicted (cubins, programs)")        \
    X(jit_compiles, "PTX JIT compilations (cuLink)")                    \
    X(module_evictions, "modules evicted from the module cache")        \
    X(live_buffers, "device buffers alive")                             \
    X(live_buffer_bytes, "bytes in live device buffers")                \
    X(peak_buffer_bytes, "most bytes live device buffers held at once") \
    X(live_modules, "loaded modules alive")                             \
    X(live_kernels, "kernel objects alive")                             \
    X(live_graphs, "graph objects alive")                               \
    X(pool_bytes, "device bytes held by the transient pool (free)")     \
    X(pool_hits, "transient pool hits")                                 \
    X(pool_misses, "transient pool misses")                             \
    X(pinned_bytes, "pinned host staging bytes held")                   \
    X(oom_retries, "allocations retried after out-of-memory")           \
    X(timed_runs, "timed dispatches")                                   \
    X(timed_wall_ns, "total wall time of timed dispatches")             \
    X(timed_device_ns, "total device (event) time of timed dispatches") \
    X(timed_enqueue_ns, "total enqueue time of timed dispatches")       \
    X(timed_wait_ns, "total wait time of timed dispatches")             \
    X(deferred_errors, "errors raised in destructors, reported later")  \
    X(open_ns, "opening the device object, ns")                         \
    X(open_dlopen_ns, "libcuda dlopen + symbols (process), ns")         \
    X(open_init_ns, "cuInit (process), ns")                             \
    X(open_ctx_ns, "primary context retain + set current, ns")          \
    X(open_stream_ns, "stream and two timing events, ns")               \
    X(open_probe_ns, "attributes and PTX target, ns")

struct vyre_cuda_stats {
#define VYRE_CUDA_STAT_FIELD(name, doc) uint64_t name;
    VYRE_CUDA_STATS(VYRE_CUDA_STAT_FIELD)
#undef VYRE_CUDA_STAT_FIELD
};
void vyre_cuda_device_stats(vyre_cuda_device *d, struct vyre_cuda_stats *out);

/* ---- buffers -------------------------------------------------------------- */

/* count elements of type t (vyre_type_size bytes each); contents undefined. */
enum vyre_status vyre_cuda_buffer_alloc(vyre_cuda_device *d, enum vyre_type t, uint64_t count,
                                        vyre_cuda_buffer **out, struct vyre_error *err);
/* Frees the device memory; NULL is a no-op. Errors are recorded on the device and
 * reported by its next call (this may run inside a garbage collector). */
void vyre_cuda_buffer_free(vyre_cuda_buffer *b);
/* A buffer of count elements aliasing parent's from element `first` (0-based): it owns
 * no memory (freeing it frees nothing on the device) and the caller must keep parent
 * alive while it is used. Ranges are checked; any alignment is allowed. */
enum vyre_status vyre_cuda_buffer_view(vyre_cuda_buffer *parent, uint64_t first, uint64_t count,
                                       vyre_cuda_buffer **out, struct vyre_error *err);
enum vyre_type vyre_cuda_buffer_type(const vyre_cuda_buffer *b);
uint64_t vyre_cuda_buffer_count(const vyre_cuda_buffer *b);
uint64_t vyre_cuda_buffer_bytes(const vyre_cuda_buffer *b);
uint64_t vyre_cuda_buffer_pointer(const vyre_cuda_buffer *b); /* CUdeviceptr */
vyre_cuda_device *vyre_cuda_buffer_device(const vyre_cuda_buffer *b);
/* Copies nbytes from host to the buffer at byte offset; the range is checked. The
 * copy is ordered after queued launches; host memory may be reused on return. */
enum vyre_status vyre_cuda_buffer_upload(vyre_cuda_buffer *b, uint64_t offset, const void *src,
                                         uint64_t nbytes, struct vyre_error *err);
/* Waits for queued work, then copies nbytes at byte offset into dst. */
enum vyre_status vyre_cuda_buffer_download(vyre_cuda_buffer *b, uint64_t offset, void *dst,
                                           uint64_t nbytes, struct vyre_error *err);
/* Fills the buffer with zero bytes (asynchronous). */
enum vyre_status vyre_cuda_buffer_zero(vyre_cuda_buffer *b, struct vyre_error *err);

/* ---- kernels -------------------------------------------------------------- */

/* Compiles through the caches (PTX in memory, module in memory, cubin on disk).
 * The kernel copies what it needs from p; p may be freed afterwards. */
enum vyre_status vyre_cuda_compile(vyre_cuda_device *d, vyre_program *p, vyre_cuda_kernel **out,
                                   struct vyre_error *err);
/* Compiles n programs as n vyre_cuda_compile calls would (same kernels, same caches),
 * but reads the disk cache and JIT-compiles the cubins missing from it in worker
 * threads at once: min(n, online CPUs, 8) of them, or $VYRE_JIT_THREADS (1: none).
 * All or nothing: on an error (the first failing program's, naming it) no kernel is
 * left and out[] is all NULL. out has n entries. */
enum vyre_status vyre_cuda_compile_many(vyre_cuda_device *d, vyre_program *const *programs,
                                        size_t n, vyre_cuda_kernel **out, struct vyre_error *err);
/* A raw PTX module (tests, baselines): launch with vyre_cuda_launch_raw. */
enum vyre_status vyre_cuda_load_ptx(vyre_cuda_device *d, const char *ptx, const char *entry,
                                    vyre_cuda_kernel **out, struct vyre_error *err);
void vyre_cuda_kernel_free(vyre_cuda_kernel *k);
/* Rounds the converge loops of the kernel's last launch ran (0 without grid statements);
 * waits for the device when that launch was cooperative. */
enum vyre_status vyre_cuda_kernel_rounds(vyre_cuda_kernel *k, uint64_t *out,
                                         struct vyre_error *err);
/* How the kernel's last launch ran: "cooperative", "split", "none" (not launched yet) or
 * "plain" (no grid statements); *blocks: the persistent grid of a cooperative launch. */
const char *vyre_cuda_kernel_grid_mode(const vyre_cuda_kernel *k, uint32_t *blocks);
/* Co-residency: blocks per SM the driver reports for the kernel (0 when it cannot run
 * cooperatively) and whether the device has cooperative launch. */
/* The device's limits for the planners of vyre_plan.h (what be:profile() reads too);
 * cooperative_launch is false where the driver lacks cuLaunchCooperativeKernel. */
enum vyre_status vyre_cuda_device_limits(vyre_cuda_device *d, struct vyre_device_limits *out,
                                         struct vyre_error *err);
/* The capability verdict of launching k as compiled (its workgroup against the device's
 * and the function's own thread limit, vyre's lowest target sm_70, and with cooperative
 * a cooperative launch and one co-resident block per SM): the check whose message every
 * refusal of the runtime for an unrunnable kernel raises (vyre_capability_check). */
enum vyre_status vyre_cuda_kernel_capability(vyre_cuda_kernel *k, bool cooperative,
                                             struct vyre_cap_verdict *out, struct vyre_error *err);
enum vyre_status vyre_cuda_kernel_occupancy(vyre_cuda_kernel *k, int *per_sm, bool *cooperative,
                                            struct vyre_error *err);
const char *vyre_cuda_kernel_ptx(const vyre_cuda_kernel *k);
const char *vyre_cuda_kernel_name(const vyre_cuda_kernel *k);
/* The device object the kernel was compiled on (it holds a reference to it). */
vyre_cuda_device *vyre_cuda_kernel_device(const vyre_cuda_kernel *k);

struct vyre_cuda_kernel_info {
    int registers;
    int shared_bytes; /* static shared memory */
    int local_bytes;  /* local memory per thread (spills) */
    int const_bytes;
    int max_threads; /* max threads per block for this function */
    int ptx_version;
    int binary_version;
    uint32_t workgroup[3];
    uint32_t nbuffers, nparams;
    bool vector; /* the program is elementwise: launches may run its vector entry */
};
enum vyre_status vyre_cuda_kernel_info(vyre_cuda_kernel *k, struct vyre_cuda_kernel_info *out,
                                       struct vyre_error *err);

/* Arguments of one launch of a compiled program: one buffer per `buffer`
 * declaration and one value per `param`, in declaration order. Geometry: grid if
 * not NULL, else n elements if > 0, else the largest buffer's count (§5). */
struct vyre_cuda_args {
    vyre_cuda_buffer *const *buffers;
    size_t nbuffers;
    const vyre_bits *params;
    size_t nparams;
    uint64_t n;
    const uint32_t *grid;
    /* A launch sized by a worklist ({n = wl}): the device address of its header
     * (vyre_cuda_worklist_header); the count is read on the device and the program's
     * NAME_wl entry runs on a bounded grid. 0: the geometry above. */
    uint64_t wn;
    /* How a program with grid statements runs (vyre.h; AUTO: the runtime's rule).
     * Ignored for programs without grid statements. */
    enum vyre_grid_sync grid_sync;
};
/* Enqueues one launch on the device's stream; asynchronous. Allocates nothing. */
enum vyre_status vyre_cuda_launch(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                  struct vyre_error *err);
/* Raw launch: params[i] points at argument i's value (as cuLaunchKernel wants). */
enum vyre_status vyre_cuda_launch_raw(vyre_cuda_kernel *k, const uint32_t grid[3],
                                      const uint32_t block[3], uint32_t shared_bytes, void **params,
                                      struct vyre_error *err);

/* A launch prepared once (vyre_cuda_prepare): its own argument block and checked grid,
 * so vyre_cuda_launch_prepared only enqueues. argv points into slot: the struct must
 * not move after preparing, and the buffers it was prepared with must stay alive. */
/* 128 pointers + 128 counts + 128 params + 16 worklists, + debug counters and the
 * vector entry's invocation count or NAME_wl's worklist header */
#define VYRE_CUDA_MAX_ARGS 403
struct vyre_cuda_prepared {
    vyre_cuda_kernel *kernel;
    uint32_t grid[3]; /* of the entry launched */
    bool vector;      /* the vector entry of an elementwise program (ARCHITECTURE.md §5) */
    bool sized;       /* the NAME_wl entry: sized by a worklist (args.wn) */
    enum vyre_grid_sync grid_sync; /* args.grid_sync: how each replay of it runs */
    uint64_t slot[VYRE_CUDA_MAX_ARGS];
    void *argv[VYRE_CUDA_MAX_ARGS];
};
enum vyre_status vyre_cuda_prepare(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                   struct vyre_cuda_prepared *out, struct vyre_error *err);
enum vyre_status vyre_cuda_launch_prepared(struct vyre_cuda_prepared *pl, struct vyre_error *err);

/* Timed calls fill struct vyre_timing (vyre.h): wall, device (cuEvent), enqueue and
 * wait time of one dispatch, nanoseconds. */

struct vyre_cuda_step {
    vyre_cuda_kernel *kernel;
    struct vyre_cuda_args args;
};
/* Ranged readback at the end of a sequence: count elements of buf from element first
 * (0-based) into dst (count * element size bytes), as vyre_backend_readback. */
struct vyre_cuda_readback {
    vyre_cuda_buffer *buf;
    uint64_t first, count;
    void *dst;
};
/* Options of vyre_cuda_sequence (zero-initialise; o NULL: every step once). */
struct vyre_cuda_sequence_options {
    size_t prefix;  /* steps [0, prefix) run once ... */
    uint32_t times; /* ... then steps [prefix, nsteps) this many times (0: none) */
    const struct vyre_cuda_readback *readback; /* then these readbacks */
    size_t nreadback;
    struct vyre_timing *timing; /* NULL: not timed */
};
/* Runs the steps as o says, with one synchronisation at the end. */
enum vyre_status vyre_cuda_sequence(vyre_cuda_device *d, const struct vyre_cuda_step *steps,
                                    size_t nsteps, const struct vyre_cuda_sequence_options *o,
                                    struct vyre_error *err);

/* One run of a kernel with grid statements in the mode given here (a->grid_sync is not
 * read), then one synchronisation; timing may be NULL. The megakernel path: its plan's
 * mode reaches the launch as an argument. */
struct vyre_cuda_grid_options {
    enum vyre_grid_sync mode;
    struct vyre_timing *timing;
    /* 0, or a worklist header (vyre_cuda_worklist_header): its 32 bytes are copied into
     * `watched` behind the kernel, within the run's one synchronisation (a megakernel
     * that converges on the worklist reports an overflow right after the run) */
    uint64_t watch;
    void *watched;
};
enum vyre_status vyre_cuda_grid_run(vyre_cuda_kernel *k, const struct vyre_cuda_args *a,
                                    const struct vyre_cuda_grid_options *o, struct vyre_error *err);

/* Captures the steps (arguments by value) into an instantiated CUDA graph. */
enum vyre_status vyre_cuda_graph_capture(vyre_cuda_device *d, const struct vyre_cuda_step *steps,
                                         size_t nsteps, vyre_cuda_graph **out,
                                         struct vyre_error *err);
/* Replays the graph `repeat` times, then synchronises; timing may be NULL. */
enum vyre_status vyre_cuda_graph_launch(vyre_cuda_graph *g, uint32_t repeat,
                                        struct vyre_timing *timing, struct vyre_error *err);
void vyre_cuda_graph_free(vyre_cuda_graph *g);

/* ---- worklists (ARCHITECTURE.md §2, §5 "Worklists"; src/core/cuda/worklist.c) ---- */

typedef struct vyre_cuda_worklist vyre_cuda_worklist;
/* A worklist of `capacity` items of type t (numeric), empty. */
enum vyre_status vyre_cuda_worklist_alloc(vyre_cuda_device *d, enum vyre_type t, uint32_t capacity,
                                          vyre_cuda_worklist **out, struct vyre_error *err);
void vyre_cuda_worklist_free(vyre_cuda_worklist *w); /* NULL: no-op */
/* The device address of its header: the value of a `worklist` argument and of
 * vyre_cuda_args.wn. */
uint64_t vyre_cuda_worklist_header(const vyre_cuda_worklist *w);
enum vyre_type vyre_cuda_worklist_type(const vyre_cuda_worklist *w);
uint32_t vyre_cuda_worklist_capacity(const vyre_cuda_worklist *w);
vyre_cuda_device *vyre_cuda_worklist_device(const vyre_cuda_worklist *w);
/* Waits for queued work and reads the counts (cur/next pointers left NULL). */
enum vyre_status vyre_cuda_worklist_state(vyre_cuda_worklist *w, struct vyre_worklist_arg *out,
                                          struct vyre_error *err);
/* Waits, then copies the first n current items into dst. */
enum vyre_status vyre_cuda_worklist_items(vyre_cuda_worklist *w, void *dst, uint32_t n,
                                          struct vyre_error *err);
/* Appends n items to the current ones (waits first; VYRE_ERR_LIMIT past the capacity). */
enum vyre_status vyre_cuda_worklist_push(vyre_cuda_worklist *w, const void *src, uint32_t n,
                                         struct vyre_error *err);
/* Both counts and the overflow record to 0. */
enum vyre_status vyre_cuda_worklist_clear(vyre_cuda_worklist *w, struct vyre_error *err);
/* Enqueues the advance (next items become current, next count 0) on the stream. */
enum vyre_status vyre_cuda_worklist_advance(vyre_cuda_worklist *w, struct vyre_error *err);
/* The advance as a step, for vyre_cuda_sequence and graphs. */
enum vyre_status vyre_cuda_worklist_advance_step(vyre_cuda_worklist *w, struct vyre_cuda_step *out);
/* The text of the advance program (vyre program text; for tools and tests). */
const char *vyre_cuda_worklist_advance_text(void);

/* Arguments and results of vyre_cuda_run (zero-initialise, set what you need). Every
 * buffer is bound (buffers[i].data may be NULL for `write` buffers, which are then
 * zero-filled on the device; their contents are downloaded into out[i]). out[i]
 * receives write/read_write buffers (same count as the input) and is ignored for
 * read buffers. Where resident (may be NULL) has resident[i] != NULL, that device
 * buffer of d is used in place: buffers[i] and out[i] are ignored and nothing is copied
 * for it. Geometry as struct vyre_cuda_args (grid, else n, else the largest buffer). */
struct vyre_cuda_run_options {
    const struct vyre_buffer_arg *buffers; /* one per `buffer` declaration, in order */
    vyre_cuda_buffer *const *resident;     /* NULL, or one per buffer (NULL: host data) */
    size_t nbuffers;
    const vyre_bits *params; /* one per `param` declaration, in order */
    size_t nparams;
    uint64_t n;
    const uint32_t *grid;
    void *const *out; /* NULL, or one destination per buffer */
    /* results; NULL: not asked for */
    struct vyre_timing *timing; /* the dispatch timed (events: costs a little) */
    uint64_t *rounds;           /* the rounds its converge loops ran (0 without grid statements) */
    enum vyre_grid_sync grid_sync; /* how grid statements run (AUTO: the runtime's rule) */
};
/* One-shot dispatch: compile (through the caches), host data in, launch, host data out,
 * one synchronisation. Transient device memory comes from the size-class pool. */
enum vyre_status vyre_cuda_run(vyre_cuda_device *d, vyre_program *p,
                               const struct vyre_cuda_run_options *o, struct vyre_error *err);

/* ---- debug mode (ARCHITECTURE.md §3, §7) ------------------------------------ */

/* While on, kernels compiled on d (vyre_cuda_compile, vyre_cuda_run, the sections of
 * grid programs) count their out-of-bounds loads, stores and atomics per declaration;
 * results do not change. Kernels compiled before keep running uncounted, and kernels
 * compiled in it keep their (slower) debug code. Switching either way waits for the
 * device and drops the counts so far. $VYRE_DEBUG=1 is read by the Lua binding. */
enum vyre_status vyre_cuda_set_debug(vyre_cuda_device *d, bool on, struct vyre_error *err);
bool vyre_cuda_debug(const vyre_cuda_device *d);
bool vyre_cuda_kernel_debug(const vyre_cuda_kernel *k); /* compiled in debug mode */

#define VYRE_CUDA_OOB_NAME 65 /* a declaration name (at most 64 bytes) and its NUL */
struct vyre_cuda_oob {
    char name[VYRE_CUDA_OOB_NAME]; /* the declaration's */
    uint64_t loads;                /* loads past the end (each read as typed zero) */
    uint64_t stores;               /* stores and atomics past the end (each dropped) */
};
/* Waits for the device; *out (free with free()) gets one entry per declaration name
 * with out-of-bounds accesses since debug mode was switched on or the last report,
 * summed over every debug kernel (also those freed since), and the counts start over.
 * Nothing (*n = 0) when there were none or debug mode is off. */
enum vyre_status vyre_cuda_oob_report(vyre_cuda_device *d, struct vyre_cuda_oob **out, size_t *n,
                                      struct vyre_error *err);

/* ---- several devices: peer copies and NCCL (docs/MULTIGPU.md) ------------------ */

/* The device's stream (a CUstream): every launch, copy and collective of vyre on d is
 * enqueued there, so work other code enqueues on it is ordered with vyre's. */
void *vyre_cuda_device_stream(vyre_cuda_device *d);

/* How a copy from a buffer of `src` to one of `dst` travels: the same device, the
 * driver's peer path (cuDeviceCanAccessPeer + cuCtxEnablePeerAccess, cuMemcpyPeerAsync),
 * or staged through pinned host memory. */
enum vyre_cuda_peer_path { VYRE_PEER_SAME, VYRE_PEER_DIRECT, VYRE_PEER_STAGED };
enum vyre_status vyre_cuda_peer_path(vyre_cuda_device *src, vyre_cuda_device *dst,
                                     enum vyre_cuda_peer_path *out, struct vyre_error *err);
const char *vyre_cuda_peer_path_name(enum vyre_cuda_peer_path p); /* "same", "peer", "staged" */
/* The path copies between two ordinals take, asked without opening either device (no
 * context is created): what a copy decided, else what cuDeviceCanAccessPeer says. */
enum vyre_status vyre_cuda_peer_path_of(int src_ordinal, int dst_ordinal,
                                        enum vyre_cuda_peer_path *out, struct vyre_error *err);
/* Copies nbytes from src at byte src_off to dst at byte dst_off, on any two devices
 * (ranges checked). Enqueued on src's stream after the work queued on both devices,
 * and work queued on dst later waits for it; the staged path waits for src's stream. */
enum vyre_status vyre_cuda_buffer_copy(vyre_cuda_buffer *src, uint64_t src_off,
                                       vyre_cuda_buffer *dst, uint64_t dst_off, uint64_t nbytes,
                                       struct vyre_error *err);

/* NCCL, loaded at first use from $VYRE_LIBNCCL, else "libnccl.so.2" on the loader's
 * path, else the Python environments' nvidia/nccl/lib (docs/MULTIGPU.md lists where).
 * Nothing links it. NCCL_NVLS_ENABLE=0 is set before NCCL initialises unless the
 * environment sets it. */
struct vyre_nccl_info {
    bool usable;
    int version;       /* ncclGetVersion: 22703 for 2.27.3 */
    char path[512];    /* the file it was loaded from */
    char reason[1024]; /* why not usable ("" when usable), with a Fix */
};
void vyre_nccl_probe(struct vyre_nccl_info *out);

#define VYRE_NCCL_ID_CHARS 256 /* a unique id as hex text (128 bytes) */
/* A new unique id (ncclGetUniqueId) as hex text, NUL-terminated. */
enum vyre_status vyre_nccl_id(char out[VYRE_NCCL_ID_CHARS + 1], struct vyre_error *err);

typedef struct vyre_nccl_comm vyre_nccl_comm; /* one rank's communicator */
/* How a communicator waits. A non-blocking communicator never lets a peer that never
 * comes hang the caller: every wait on NCCL (initialisation, a collective's enqueue,
 * vyre_nccl_wait) gives up after timeout_s seconds and aborts it. The price is NCCL's:
 * each non-blocking group launch runs on a thread NCCL starts for it, about 0.2 ms per
 * call, which dominates collectives below ~64 MiB. A blocking communicator enqueues on
 * the caller's thread (what torch.distributed uses by default); vyre_nccl_wait still polls
 * with the timeout, but an enqueue or a first connection to a peer that never comes can
 * block inside NCCL. DEFAULT is blocking for one process driving every rank (its peers
 * live in the same process and cannot go missing) and non-blocking for one rank per
 * process. */
enum vyre_nccl_mode { VYRE_NCCL_MODE_DEFAULT = 0, VYRE_NCCL_BLOCKING, VYRE_NCCL_NONBLOCKING };
struct vyre_nccl_options {
    double timeout_s;         /* <= 0: $VYRE_NCCL_TIMEOUT, default 300 */
    enum vyre_nccl_mode mode; /* see above */
};
/* One process, n devices: comms[i] is rank i on devs[i]. opts may be NULL (defaults). */
enum vyre_status vyre_nccl_init_all(vyre_cuda_device *const *devs, int n,
                                    const struct vyre_nccl_options *opts, vyre_nccl_comm **comms,
                                    struct vyre_error *err);
/* One process per rank: rank `rank` of `size` on d, id from vyre_nccl_id of one rank. */
enum vyre_status vyre_nccl_init_rank(vyre_cuda_device *d, int rank, int size, const char *id,
                                     const struct vyre_nccl_options *opts, vyre_nccl_comm **out,
                                     struct vyre_error *err);
/* Whether c enqueues on the caller's thread (VYRE_NCCL_BLOCKING) or not. */
bool vyre_nccl_comm_blocking(const vyre_nccl_comm *c);
/* Destroys the communicator (aborts it when it failed or timed out); NULL is a no-op. */
void vyre_nccl_comm_free(vyre_nccl_comm *c);
int vyre_nccl_comm_rank(const vyre_nccl_comm *c);
int vyre_nccl_comm_size(const vyre_nccl_comm *c);
vyre_cuda_device *vyre_nccl_comm_device(const vyre_nccl_comm *c);

enum vyre_nccl_coll {
    VYRE_NCCL_ALL_REDUCE,     /* src -> dst (may be src), same count */
    VYRE_NCCL_BROADCAST,      /* root's src -> every dst */
    VYRE_NCCL_REDUCE,         /* every src -> root's dst */
    VYRE_NCCL_ALL_GATHER,     /* src (k) -> dst (k * size), rank order */
    VYRE_NCCL_REDUCE_SCATTER, /* src (k * size) -> dst (k): rank r gets block r */
    VYRE_NCCL_ALL_TO_ALL,     /* src (k * size) -> dst (k * size): block j goes to rank j */
    VYRE_NCCL_SEND,           /* src -> rank `root` (the peer) */
    VYRE_NCCL_RECV            /* dst <- rank `root` (the peer) */
};
enum vyre_nccl_op { VYRE_NCCL_ADD, VYRE_NCCL_PROD, VYRE_NCCL_MIN, VYRE_NCCL_MAX };
const char *vyre_nccl_coll_name(enum vyre_nccl_coll c); /* "all_reduce", ... */
const char *vyre_nccl_op_name(enum vyre_nccl_op op);    /* "add", "prod", "min", "max" */
/* One rank's part of a collective. Types: every vyre type; a bool buffer is moved as
 * its 32-bit words and reduces only with min (and) and max (or). */
struct vyre_nccl_call {
    enum vyre_nccl_coll coll;
    vyre_nccl_comm *comm;
    vyre_cuda_buffer *src, *dst; /* dst NULL: in place (src) where the collective allows */
    enum vyre_nccl_op op;
    int root; /* broadcast/reduce: the root rank; send/recv: the peer rank */
};
/* Checks all n calls (devices, types, counts, roots; nothing is enqueued on a
 * mistake), then issues them as one NCCL group, each on its device's stream. */
enum vyre_status vyre_nccl_issue(const struct vyre_nccl_call *calls, size_t n,
                                 struct vyre_error *err);
/* Waits for the streams of the comms' devices, watching NCCL's asynchronous errors,
 * until the comms' timeout (then they are aborted). */
enum vyre_status vyre_nccl_wait(vyre_nccl_comm *const *comms, size_t n, struct vyre_error *err);
/* A collective as a step of vyre_cuda_sequence and vyre_cuda_graph_capture on the
 * call's device: a kernel object (free with vyre_cuda_kernel_free) that, launched in
 * a sequence or captured, issues the call on the stream. The buffers must outlive it. */
enum vyre_status vyre_nccl_step(const struct vyre_nccl_call *call, vyre_cuda_kernel **out,
                                struct vyre_error *err);
bool vyre_cuda_kernel_collective(const vyre_cuda_kernel *k);
/* One process, many devices: runs steps[i][0..nsteps[i]) on devs[i], `times` times, in
 * lockstep: each device's kernels up to its next collective step are enqueued, then
 * the collective steps of all devices go out as one NCCL group (every list must hold
 * the same collectives in the same order). Then waits with the comms' timeout. */
enum vyre_status vyre_nccl_sequence(vyre_cuda_device *const *devs, size_t ndev,
                                    const struct vyre_cuda_step *const *steps, const size_t *nsteps,
                                    uint32_t times, struct vyre_error *err);

/* ---- disk cache ----------------------------------------------------------- */

/* Directory of the cubin cache: $VYRE_CACHE_DIR, else $XDG_CACHE_HOME/vyre, else
 * ~/.cache/vyre. Writes into buf; false if no location can be determined. */
bool vyre_cuda_cache_dir(char *buf, size_t size);
/* Total bytes and files in the cache directory (0 if it does not exist). */
void vyre_cuda_cache_usage(uint64_t *bytes, uint64_t *files);
/* Cap in bytes: $VYRE_CACHE_MAX_BYTES, default 256 MiB. */
uint64_t vyre_cuda_cache_cap(void);
/* Whether the cache directory is refused (docs/RUNTIME.md, "Who the disk cache
 * trusts"): it exists and another user owns it, or its group or others can write it.
 * Then the disk cache is off, and buf (if not NULL) receives why, with a Fix. */
bool vyre_cuda_cache_refused(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
