/* cuda_int.h — private interface between the CUDA runtime's files: the driver
 * entry-point table (one X-macro list), the device/buffer/kernel structs, pools,
 * caches and the error helpers. Only src/core/cuda and the C tests include it. */
#ifndef VYRE_CUDA_INT_H
#define VYRE_CUDA_INT_H

#include <stdatomic.h>

#include "cuda_abi.h"

#include "ir.h"
#include "vyre_cuda.h"

/* ---- driver table ----------------------------------------------------------
 * X(name, version, required): `name` is the base name resolved through
 * cuGetProcAddress; `version` is the CUDA version whose ABI matches the prototype
 * vyre_cu_fn_<name> in cuda_abi.h, which is the one the CUDA 13 header gives that
 * name (cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2, so the prototype is the _v2
 * one and we ask for version 3020; test_cuda_abi checks each against cuda.h). The
 * driver returns the newest ABI not newer than `version`. Optional entries may be
 * NULL; code that uses them checks first. */
#define VYRE_CU_ENTRIES(X)                   \
    X(cuGetErrorName, 6000, 1)               \
    X(cuGetErrorString, 6000, 1)             \
    X(cuDeviceGet, 2000, 1)                  \
    X(cuDeviceGetCount, 2000, 1)             \
    X(cuDeviceGetName, 2000, 1)              \
    X(cuDeviceGetAttribute, 2000, 1)         \
    X(cuDeviceTotalMem, 3020, 1)             \
    X(cuDevicePrimaryCtxRetain, 7000, 1)     \
    X(cuDevicePrimaryCtxRelease, 11000, 1)   \
    X(cuDevicePrimaryCtxReset, 11000, 1)     \
    X(cuCtxSetCurrent, 4000, 1)              \
    X(cuCtxGetCurrent, 4000, 1)              \
    X(cuMemAlloc, 3020, 1)                   \
    X(cuMemFree, 3020, 1)                    \
    X(cuMemGetInfo, 3020, 1)                 \
    X(cuMemHostAlloc, 2020, 1)               \
    X(cuMemFreeHost, 2000, 1)                \
    X(cuMemcpyHtoDAsync, 3020, 1)            \
    X(cuMemcpyDtoHAsync, 3020, 1)            \
    X(cuMemsetD8Async, 3020, 1)              \
    X(cuStreamCreate, 2000, 1)               \
    X(cuStreamDestroy, 4000, 1)              \
    X(cuStreamSynchronize, 2000, 1)          \
    X(cuEventCreate, 2000, 1)                \
    X(cuEventDestroy, 4000, 1)               \
    X(cuEventRecord, 2000, 1)                \
    X(cuEventElapsedTime, 12080, 1)          \
    X(cuModuleLoadDataEx, 2010, 1)           \
    X(cuModuleUnload, 2000, 1)               \
    X(cuModuleGetFunction, 2000, 1)          \
    X(cuFuncGetAttribute, 2020, 1)           \
    X(cuLaunchKernel, 4000, 1)               \
    X(cuLinkCreate, 6050, 1)                 \
    X(cuLinkAddData, 6050, 1)                \
    X(cuLinkComplete, 5050, 1)               \
    X(cuLinkDestroy, 5050, 1)                \
    X(cuStreamBeginCapture, 10010, 0)        \
    X(cuStreamEndCapture, 10000, 0)          \
    X(cuGraphInstantiateWithFlags, 11040, 0) \
    X(cuGraphLaunch, 10000, 0)               \
    X(cuGraphExecDestroy, 10000, 0)          \
    X(cuGraphDestroy, 10000, 0)              \
    X(cuLaunchCooperativeKernel, 9000, 0)    \
    X(cuDeviceCanAccessPeer, 4000, 0)        \
    X(cuCtxEnablePeerAccess, 4000, 0)        \
    X(cuMemcpyPeerAsync, 4000, 0)            \
    X(cuStreamWaitEvent, 3020, 0)            \
    X(cuStreamQuery, 2000, 0)                \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, 0)

/* The member for base name n has the type vyre_cu_fn_n (cuda_abi.h). */
struct vyre_cu_driver {
    bool usable;
    enum vyre_status status; /* VYRE_OK when usable, else VYRE_ERR_NO_CUDA */
    char reason[1024];       /* why CUDA is unusable ("" when usable) */
    void *handle;            /* dlopen handle */
    char path[512];          /* the file libcuda was loaded from */
    int version;             /* cuDriverGetVersion */
    int device_count;
    /* Where loading the driver went (vyre_cu_probe): dlopen and symbol lookup, and
     * cuInit alone, in ns; the process pays them once (be:stats().open_*_ns). */
    uint64_t dlopen_ns, init_ns;
#define VYRE_CU_MEMBER(n, v, req) vyre_cu_fn_##n *n;
    VYRE_CU_ENTRIES(VYRE_CU_MEMBER)
#undef VYRE_CU_MEMBER
};

/* The process-wide table, loaded once (vyre_cu_load). */
VYRE_INTERNAL extern struct vyre_cu_driver vyre_cu;
/* Loads (once) and returns the table; check ->usable. Thread-safe. */
VYRE_INTERNAL const struct vyre_cu_driver *vyre_cu_load(void);
/* Probes a given libcuda path into *drv without touching the global table (tests;
 * also used by vyre_cu_load). path NULL means "libcuda.so.1". */
VYRE_INTERNAL void vyre_cu_probe(const char *path, struct vyre_cu_driver *drv);

/* ---- errors (errors.c) ---------------------------------------------------- */

struct vyre_cuda_device;
/* true for results after which the context is unusable (illegal address, ...). */
VYRE_INTERNAL bool vyre_cu_sticky(CUresult r);
/* Formats "CALL failed[ for program 'P']: NAME (text). Fix: ..." into err, records
 * call/result, and marks the device lost on a sticky fault. Returns the status. */
VYRE_INTERNAL enum vyre_status vyre_cu_fail(struct vyre_cuda_device *d, CUresult r,
                                            const char *call, const char *program,
                                            struct vyre_error *err);
#define VYRE_CU_CHECK(d, expr, call, program, err)                                      \
    do {                                                                                \
        CUresult r_ = (expr);                                                           \
        if (r_ != CUDA_SUCCESS) return vyre_cu_fail((d), r_, (call), (program), (err)); \
    } while (0)
/* Stores err as the device's deferred error (first one wins) for destructors. */
VYRE_INTERNAL void vyre_cu_defer(struct vyre_cuda_device *d, const struct vyre_error *err);
/* Fix hint for a CUresult. */
VYRE_INTERNAL const char *vyre_cu_fix(CUresult r);
VYRE_INTERNAL void vyre_cu_result_names(CUresult r, const char **name, const char **text);

/* ---- device (device.c) ---------------------------------------------------- */

#define VYRE_CU_MAX_ORDINALS 64
#define VYRE_CU_NCLASSES 48 /* size classes 2^0 .. 2^47 bytes */

/* A free list of one size class. */
struct vyre_cu_freelist {
    uint64_t *items; /* CUdeviceptr or host pointers as integers */
    uint32_t count, cap;
};

struct vyre_cu_pool {
    struct vyre_cu_freelist cls[VYRE_CU_NCLASSES];
    uint64_t held; /* bytes sitting in free lists */
    uint64_t cap;  /* most bytes kept in free lists */
    bool pinned;   /* host staging pool (cuMemHostAlloc) */
};

struct vyre_cu_module;
struct vyre_cu_ptx_entry;

struct vyre_cuda_device {
    int refs;
    int ordinal;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUevent ev_start, ev_stop;
    unsigned generation; /* of the ordinal's primary context when opened */
    bool ctx_retained;
    struct vyre_cuda_info info;
    bool lost;
    struct vyre_error lost_err;
    bool pending;
    struct vyre_error pending_err;
    struct vyre_cuda_stats st;
    vyre_cuda_oom_fn oom;
    void *oom_ud;
    struct vyre_cu_pool pool;   /* transient device memory */
    struct vyre_cu_pool pinned; /* pinned host staging */
    /* caches (cache_mem.c) */
    struct vyre_cu_ptx_entry *ptx;
    uint32_t nptx, ptx_cap;
    struct vyre_cu_module **mods;
    uint32_t nmods, mods_cap;
    uint64_t tick;                      /* LRU clock */
    /* cubins a vyre_cuda_compile_many read or JIT-compiled ahead (compile_many.c), taken
     * by the module cache's loads instead of the disk and the JIT; NULL otherwise */
    struct vyre_cu_staged *staged;
    uint32_t nstaged;
    bool capturing;                     /* graph.c is capturing the stream */
    /* debug mode (debug.c): kernels compiled while on count out-of-bounds accesses */
    bool debug;
    struct vyre_cuda_kernel **dbg; /* live debug kernels */
    uint32_t ndbg, dbg_cap;
    struct vyre_cuda_oob *acc; /* the pending report: counts folded from kernels */
    uint32_t nacc, acc_cap;
};

/* ---- the planners (capability.c; include/vyre_plan.h) ------------------------------ */

/* d's limits as the planners read them (vyre_cuda_device_limits without checks). */
VYRE_INTERNAL void vyre_cu_limits(const struct vyre_cuda_device *d, struct vyre_device_limits *out);
/* Resident blocks per SM of fn (one of k's entries) at k's workgroup: the driver's
 * cuOccupancyMaxActiveBlocksPerMultiprocessor, else vyre_occupancy_calc. */
VYRE_INTERNAL enum vyre_status vyre_cu_resident(vyre_cuda_kernel *k, CUfunction fn, int *per_sm,
                                                struct vyre_error *err);
/* Refuses a launch of k (or of its entry `name`, NULL: k's) of blocks of `threads` (0:
 * k's workgroup) whose function allows max_threads (0: unknown), with cooperative (and per_sm co-resident blocks, < 0
 * unknown) asked: "launch of 'K' refused: " + the capability check's message, status
 * as given. Cold path: only called once a limit failed. */
VYRE_INTERNAL enum vyre_status vyre_cu_refuse(vyre_cuda_kernel *k, const char *name,
                                              uint64_t threads, int max_threads, bool cooperative,
                                              int per_sm, enum vyre_status status,
                                              struct vyre_error *err);

/* Entry of every public call: reports a lost device or a deferred error, then
 * makes the primary context current on the calling thread. */
VYRE_INTERNAL enum vyre_status vyre_cu_enter(struct vyre_cuda_device *d, struct vyre_error *err);
/* Marks the device (and its ordinal's context) lost with the given cause. */
VYRE_INTERNAL void vyre_cu_mark_lost(struct vyre_cuda_device *d, const struct vyre_error *cause);
/* true when driver calls on d's context are still meaningful (not lost/reset). */
VYRE_INTERNAL bool vyre_cu_alive(const struct vyre_cuda_device *d);
VYRE_INTERNAL uint64_t vyre_cu_now_ns(void);
/* A timed run (launch.c): start before the first enqueue, enqueued after the last,
 * finish after the final synchronisation; out may be NULL (nothing is measured). */
struct vyre_cu_timer {
    struct vyre_timing *out;
    uint64_t t0, t_enq;
};
VYRE_INTERNAL enum vyre_status vyre_cu_timer_start(struct vyre_cuda_device *d,
                                                   struct vyre_cu_timer *t, struct vyre_timing *out,
                                                   struct vyre_error *err);
VYRE_INTERNAL enum vyre_status
vyre_cu_timer_enqueued(struct vyre_cuda_device *d, struct vyre_cu_timer *t, struct vyre_error *err);
VYRE_INTERNAL void vyre_cu_timer_finish(struct vyre_cuda_device *d, struct vyre_cu_timer *t);
/* Destructors: makes d's context current if it is still alive; false otherwise. */
VYRE_INTERNAL bool vyre_cu_current(struct vyre_cuda_device *d);
VYRE_INTERNAL enum vyre_status vyre_cu_sync(struct vyre_cuda_device *d, const char *program,
                                            struct vyre_error *err);

/* ---- memory (memory.c) ------------------------------------------------------ */

struct vyre_cuda_buffer {
    struct vyre_cuda_device *dev;
    CUdeviceptr ptr;
    uint64_t bytes;
    uint64_t count;
    enum vyre_type type;
    unsigned generation;
    bool view; /* vyre_cuda_buffer_view: ptr points into another buffer's memory */
};

/* cuMemAlloc with the out-of-memory protocol (host callback, trim, retry once). */
VYRE_INTERNAL enum vyre_status vyre_cu_malloc(struct vyre_cuda_device *d, uint64_t bytes,
                                              CUdeviceptr *out, const char *what,
                                              struct vyre_error *err);
VYRE_INTERNAL void vyre_cu_pool_init(struct vyre_cu_pool *pool, bool pinned, uint64_t cap);
/* A block of at least `bytes` (rounded up to its size class, returned in *cls_bytes). */
VYRE_INTERNAL enum vyre_status vyre_cu_pool_get(struct vyre_cuda_device *d,
                                                struct vyre_cu_pool *pool, uint64_t bytes,
                                                uint64_t *out, uint64_t *cls_bytes,
                                                struct vyre_error *err);
VYRE_INTERNAL void vyre_cu_pool_put(struct vyre_cuda_device *d, struct vyre_cu_pool *pool,
                                    uint64_t block, uint64_t cls_bytes);
/* Frees every cached block; returns the first driver error (recorded, not sticky). */
VYRE_INTERNAL void vyre_cu_pool_trim(struct vyre_cuda_device *d, struct vyre_cu_pool *pool);
VYRE_INTERNAL void vyre_cu_pool_destroy(struct vyre_cuda_device *d, struct vyre_cu_pool *pool);
/* Size class of a byte count: smallest c with 2^c >= bytes (min 8). */
VYRE_INTERNAL unsigned vyre_cu_size_class(uint64_t bytes);
/* Checks [offset, offset+nbytes) against a buffer, naming fname on failure. */
VYRE_INTERNAL enum vyre_status vyre_cu_check_range(const struct vyre_cuda_buffer *b,
                                                   uint64_t offset, uint64_t nbytes,
                                                   const char *fname, struct vyre_error *err);

/* ---- caches (cache_mem.c, cache_disk.c) ----------------------------------- */

struct vyre_cu_module {
    struct vyre_cuda_device *dev;
    uint64_t ptx_hash;
    CUmodule mod;
    int refs;    /* kernels using it */
    bool cached; /* still listed in the module cache */
    uint64_t last_use;
    unsigned generation;
};

struct vyre_cu_ptx_entry {
    uint64_t prog_hash;
    unsigned sm;
    bool debug; /* debug PTX (debug.c) */
    /* Emitted in this process and not yet on disk under its program key (disk_key):
     * written once a module was loaded from it (vyre_cu_ptx_saved). */
    bool unsaved;
    uint64_t disk_key;
    char *ptx;
    size_t len;
    uint64_t ptx_hash;
    uint64_t last_use;
};

/* PTX for p on d's SM, from the in-memory cache or the emitter. *ptx stays owned
 * by the cache until the next call that may evict; callers copy what they keep. */
VYRE_INTERNAL enum vyre_status vyre_cu_ptx_get(struct vyre_cuda_device *d, vyre_program *p,
                                               const char **ptx, size_t *len, uint64_t *ptx_hash,
                                               struct vyre_error *err);
/* vyre_cu_ptx_get in two halves, so a batch (compile_many.c) can emit the missing PTX
 * in worker threads between them: find validates p and looks it up (w->ptx NULL on a
 * miss, with w->opt the options to emit with, pointing into w); put stores emitted text
 * (vyre_free-able; taken) and fills w->ptx, len and ptx_hash. */
struct vyre_cu_ptx_want {
    uint64_t key;
    struct vyre_opt_options passes;
    struct vyre_ptx_options opt;
    const char *ptx;
    size_t len;
    uint64_t ptx_hash;
    uint64_t disk_key; /* the program entry's key (vyre_cu_disk_prog_key), set on a miss */
};
VYRE_INTERNAL enum vyre_status vyre_cu_ptx_find(struct vyre_cuda_device *d, vyre_program *p,
                                                struct vyre_cu_ptx_want *w,
                                                struct vyre_error *err);
/* from_disk: the text came from the program entry (vyre_cu_ptx_disk), not the emitter. */
VYRE_INTERNAL enum vyre_status vyre_cu_ptx_put(struct vyre_cuda_device *d,
                                               struct vyre_cu_ptx_want *w, char *text, size_t n,
                                               bool from_disk, struct vyre_error *err);
/* A miss's PTX from its program entry on disk (malloc'd), else NULL; thread-safe (no
 * counters: callers count disk_program_hits/misses on the device's thread). */
VYRE_INTERNAL char *vyre_cu_ptx_disk(const struct vyre_cu_ptx_want *w, size_t *n);
/* After a module was loaded from the PTX of hash ptx_hash: writes its program entry
 * when it was emitted here and is not on disk yet (a PTX the JIT refused is never
 * written). */
VYRE_INTERNAL void vyre_cu_ptx_saved(struct vyre_cuda_device *d, uint64_t ptx_hash);
/* Module for PTX text (memory cache, disk cubin cache, JIT). Adds one reference. */
VYRE_INTERNAL enum vyre_status vyre_cu_module_get(struct vyre_cuda_device *d, const char *ptx,
                                                  size_t len, uint64_t ptx_hash,
                                                  const char *program, struct vyre_cu_module **out,
                                                  struct vyre_error *err);
VYRE_INTERNAL void vyre_cu_module_release(struct vyre_cu_module *m);
/* A cubin staged for the module cache (compile_many.c): from_disk tells a disk hit from
 * a JIT of this process (which the load then writes to disk). */
struct vyre_cu_staged {
    uint64_t ptx_hash;
    void *cubin; /* malloc'd; NULL: nothing staged (a module hit, or the job failed) */
    size_t len;
    bool from_disk;
};
/* Unloads cached modules no kernel uses (trim). */
VYRE_INTERNAL void vyre_cu_modules_trim(struct vyre_cuda_device *d);
/* Drops every cache entry (device teardown). */
VYRE_INTERNAL void vyre_cu_caches_destroy(struct vyre_cuda_device *d);

/* Disk: NULL/false when missing or unusable; never fails the caller. */
VYRE_INTERNAL uint64_t vyre_cu_disk_key(uint64_t ptx_hash, unsigned sm, int driver_version);
/* src: the PTX's hash, stored in the entry and checked on read (an entry built from
 * other PTX is a miss). */
VYRE_INTERNAL void *vyre_cu_disk_read(uint64_t key, uint64_t src, size_t *len);
VYRE_INTERNAL bool vyre_cu_disk_write(uint64_t key, uint64_t src, const void *data, size_t len,
                                      uint64_t *evicted);
/* Program entries (cache_disk.c): the key of a program's PTX on d (ptx_key: the memory
 * cache's key, vyre_cu_ptx_want.key; passes: vyre_opt_mask), the code generator's build
 * identity included; the PTX under it (malloc'd, NUL-terminated; *ptx_hash its XXH3),
 * and writing it. Thread-safe: reads d's info only. */
VYRE_INTERNAL uint64_t vyre_cu_disk_prog_key(const struct vyre_cuda_device *d, uint64_t ptx_key,
                                             uint32_t passes, bool debug);
VYRE_INTERNAL char *vyre_cu_disk_ptx_read(uint64_t key, uint64_t prog, size_t *len,
                                          uint64_t *ptx_hash);
VYRE_INTERNAL bool vyre_cu_disk_ptx_write(uint64_t key, uint64_t prog, const char *ptx, size_t len,
                                          uint64_t *evicted);

/* JIT (module.c): PTX -> cubin through cuLink*, log and failing line in err. */
#define VYRE_CU_LOG_BYTES 8192u
/* The JIT alone, thread-safe (no device state; the caller's thread has d's context
 * current): log has VYRE_CU_LOG_BYTES; on failure *call names the failed driver call
 * (NULL: out of host memory) for vyre_cu_link_error. */
VYRE_INTERNAL CUresult vyre_cu_link(const char *ptx, size_t len, const char *program, char *log,
                                    void **cubin, size_t *cubin_len, const char **call);
/* vyre_cu_jit's error for a failed vyre_cu_link (on the device's calling thread: a
 * sticky result marks d lost). */
VYRE_INTERNAL enum vyre_status vyre_cu_link_error(struct vyre_cuda_device *d, CUresult r,
                                                  const char *call, const char *program,
                                                  const char *ptx, const char *log,
                                                  size_t cubin_len, struct vyre_error *err);
VYRE_INTERNAL enum vyre_status vyre_cu_jit(struct vyre_cuda_device *d, const char *ptx, size_t len,
                                           const char *program, void **cubin, size_t *cubin_len,
                                           struct vyre_error *err);
/* ptx_text: the PTX when image is text (to quote the failing line), else NULL. */
VYRE_INTERNAL enum vyre_status vyre_cu_load_image(struct vyre_cuda_device *d, const void *image,
                                                  const char *ptx_text, const char *program,
                                                  CUmodule *out, struct vyre_error *err);

/* ---- kernels (module.c, launch.c) ----------------------------------------- */

struct vyre_cuda_kernel {
    struct vyre_cuda_device *dev;
    struct vyre_cu_module *module; /* cached module (compiled programs) */
    CUmodule raw_module;           /* own module (vyre_cuda_load_ptx) */
    CUfunction fn;
    char *ptx;
    char *name;               /* program / entry name */
    struct vyre_program geom; /* name + workgroup only, for vyre_launch_grid */
    uint32_t nbuffers, nparams;
    enum vyre_type *buf_types;    /* per buffer */
    enum vyre_access *buf_access; /* per buffer */
    uint32_t *buf_counts;         /* per buffer: the declared COUNT, 0 when sized at launch */
    /* Bit i: buffer i is a converge flag and must hold at least one element. */
    uint32_t buf_nonempty[(VYRE_MAX_BUFFERS + 31) / 32];
    enum vyre_type *param_types; /* per param */
    /* The argument block, built once: argv[i] points at slot[i]. Launches write
     * values in place, so the hot path allocates nothing. */
    void **argv;
    uint64_t *slot;
    int max_threads; /* cuFuncGetAttribute, checked before launch */
    /* The vector entry NAME_v4 of an elementwise program (NULL when the PTX has none),
     * and its own thread limit (ARCHITECTURE.md §5). */
    CUfunction vfn;
    int vmax_threads;
    /* The entry NAME_wl of a program with worklists (launches sized by a worklist,
     * worklist.c) and the argument slot of its header (vyre_wn), else NULL. */
    CUfunction wfn;
    uint32_t wn_at;
    uint32_t wl_grid;           /* {n = wl} launches' bounded grid (worklist.c), 0: not sized yet */
    struct vyre_cu_gridk *grid; /* programs with grid statements (grid_launch.c), else NULL */
    /* Debug kernels (debug.c): their out-of-bounds counters (2 u64 per declaration) and
     * the declarations' names; oob is 0 for other kernels. */
    CUdeviceptr oob;
    uint32_t oob_at; /* its argument slot */
    char **decl_names;
    uint32_t ndecls;
    /* A collective step (vyre_nccl_step): launching it issues this call; it lives in
     * the kernel's own allocation. NULL for programs. */
    struct vyre_nccl_call *coll;
};

/* ---- debug mode (debug.c) ---------------------------------------------------------- */

/* After compiling k from debug PTX: its counters (zeroed), written into argument slot
 * `at` (the entry's last), and its place in the device's list. */
VYRE_INTERNAL enum vyre_status vyre_cu_debug_attach(vyre_cuda_kernel *k, const vyre_program *p,
                                                    uint32_t at, struct vyre_error *err);
/* Kernel free: folds its counts into the pending report (debug mode on), frees them. */
VYRE_INTERNAL void vyre_cu_debug_detach(vyre_cuda_kernel *k);
VYRE_INTERNAL void vyre_cu_debug_destroy(struct vyre_cuda_device *d); /* device teardown */

/* ---- worklists (worklist.c) ---------------------------------------------------------- */

/* A launch sized by worklist header wn: writes it into the NAME_wl entry's slot and the
 * bounded grid into g; VYRE_ERR_ARG when the kernel has no such entry. */
VYRE_INTERNAL enum vyre_status vyre_cu_wl_sized(vyre_cuda_kernel *k, uint64_t wn, uint64_t *slot,
                                                uint32_t g[3], struct vyre_error *err);

/* ---- programs with grid statements (grid_launch.c) ------------------------------ */

/* After compiling a program with grid statements: its copy, scratch word, occupancy. */
VYRE_INTERNAL enum vyre_status vyre_cu_grid_attach(vyre_cuda_kernel *k, vyre_program *p,
                                                   struct vyre_error *err);
VYRE_INTERNAL void vyre_cu_grid_detach(vyre_cuda_kernel *k);
/* A launch of such a kernel whose argument values are in slot (the kernel's layout) and
 * whose (virtual) grid is g, in `mode` (callers pass the device's setting, or the mode a
 * plan chose): cooperative when it fits co-residency and is allowed, else the host
 * split (graph: its rounds replayed as CUDA graphs). */
VYRE_INTERNAL enum vyre_status vyre_cu_grid_launch(vyre_cuda_kernel *k, const uint64_t *slot,
                                                   const uint32_t g[3],
                                                   enum vyre_grid_sync mode,
                                                   struct vyre_error *err);
/* Writes a launch's argument values into slot and its checked grid into g (launch.c). */
VYRE_INTERNAL enum vyre_status vyre_cu_fill_args(vyre_cuda_kernel *k,
                                                 const struct vyre_cuda_args *a, uint64_t *slot,
                                                 uint32_t g[3], struct vyre_error *err);

/* Enqueues one launch without entering the device (callers did). */
VYRE_INTERNAL enum vyre_status
vyre_cu_launch_one(vyre_cuda_kernel *k, const struct vyre_cuda_args *a, struct vyre_error *err);

#endif
