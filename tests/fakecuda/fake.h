/* fake.h — internals of the fake CUDA driver (tests/fakecuda, built as
 * <build>/fakecuda/libcuda.so.1 and loaded through VYRE_LIBCUDA). It implements the
 * driver entry points the runtime resolves (src/core/cuda/cuda_int.h VYRE_CU_ENTRIES,
 * with the prototypes of cuda_abi.h) over host memory, so that CI without a GPU runs
 * src/core/cuda: device memory is host memory (a CUdeviceptr is the host address),
 * streams run every operation at once and advance a virtual clock that events read,
 * modules "load" PTX (ptxas checks it where present), and launches of the kernels vyre
 * emits run on the reference interpreter, read from the program text the PTX carries
 * (exec.c); launches of foreign PTX are refused.
 *
 * Every entry point starts with fake_begin(): it takes the one lock, counts and traces
 * the call, and applies an armed fault or a poisoned context, so a test can fail the
 * Nth call of any entry with any CUresult (docs/RUNTIME.md, "Fake driver"). Misuse
 * that a real driver might not catch (a stale handle, a double free, a copy outside
 * an allocation) is counted, so specs can assert that the runtime never does it. */
#ifndef VYRE_FAKECUDA_H
#define VYRE_FAKECUDA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_abi.h"
#include "vyre.h"

#define FAKE_API __attribute__((visibility("default")))
#define FAKE_MAX_DEVICES 8
#define FAKE_MAX_PARAMS 512

/* Results the runtime's cuda_abi.h does not list, with the driver's values. */
#define FAKE_NOT_INITIALIZED ((CUresult)3)
#define FAKE_INVALID_DEVICE ((CUresult)101)
#define FAKE_INVALID_IMAGE ((CUresult)200)
#define FAKE_JIT_COMPILER_NOT_FOUND ((CUresult)221)
#define FAKE_INVALID_HANDLE ((CUresult)400)
#define FAKE_NOT_READY ((CUresult)600)
#define FAKE_COOPERATIVE_TOO_LARGE ((CUresult)720)
#define FAKE_NOT_SUPPORTED ((CUresult)801)

/* ---- objects --------------------------------------------------------------- */

enum fake_kind {
    FK_MEM,    /* cuMemAlloc */
    FK_HOST,   /* cuMemHostAlloc */
    FK_MODULE, /* cuModuleLoadDataEx */
    FK_LINK,   /* cuLinkCreate */
    FK_STREAM, /* cuStreamCreate */
    FK_EVENT,  /* cuEventCreate */
    FK_GRAPH,  /* cuStreamBeginCapture (the graph being captured) */
    FK_EXEC,   /* cuGraphInstantiateWithFlags */
    FK_NKINDS
};

struct fake_ctx {
    int dev;
    int refs;       /* cuDevicePrimaryCtxRetain minus Release */
    unsigned gen;   /* bumped by cuDevicePrimaryCtxReset and by destruction */
    CUresult fault; /* sticky fault poisoning the context, CUDA_SUCCESS if none */
    uint64_t mem_used;
};

/* The common head of every object; the registry holds pointers to it. */
struct fake_obj {
    enum fake_kind kind;
    struct fake_ctx *ctx;
    unsigned gen; /* ctx->gen at creation: older objects died with a reset */
};

struct fake_mem {
    struct fake_obj h;
    char *base;
    size_t size;
};

/* The kind of a vyre entry (its `// vyre.entry` line; src/codegen/ptx_meta.c). */
enum fake_vkind { FV_PLAIN, FV_GRID, FV_VECTOR, FV_WORKLIST };

struct fake_func {
    struct fake_module *mod;
    enum fake_vkind vkind;
    bool vdebug; /* the last parameter is vy_oob (debug PTX) */
    char name[128];
    uint32_t nparams;
    uint32_t param_size[FAKE_MAX_PARAMS]; /* bytes of each .param */
    uint32_t maxntid;                     /* product of .maxntid/.reqntid, 0 if none */
};

struct fake_prog;

struct fake_module {
    struct fake_obj h;
    char *ptx;
    int ptx_version; /* 70 for .version 7.0 */
    struct fake_func *funcs;
    uint32_t nfuncs;
    struct fake_prog *prog; /* the program the PTX carries (exec.c); NULL: foreign PTX */
};

struct fake_link {
    struct fake_obj h;
    char *log; /* CU_JIT_ERROR_LOG_BUFFER given at cuLinkCreate */
    size_t logsz;
    char *ptx;
    char *image;
    size_t image_len;
};

struct fake_launch {
    struct fake_func *fn;
    uint32_t grid[3], block[3];
    bool cooperative;
    unsigned char *args; /* the parameter values, copied by value (as capture does) */
    size_t args_len;
    /* A host operation in stream order instead of a kernel (the fake NCCL's collectives,
     * through vyre_fakecuda_stream_host): fn is NULL then. */
    void (*host)(void *ud);
    void *host_ud;
};

struct fake_graph {
    struct fake_obj h;
    struct fake_launch *v;
    size_t n, cap;
};

struct fake_stream {
    struct fake_obj h;
    bool capturing, invalidated;
    struct fake_graph *capture;
};

struct fake_event {
    struct fake_obj h;
    bool recorded;
    uint64_t t_ns;
};

/* ---- state ----------------------------------------------------------------- */

struct fake_config {
    int devices;        /* VYRE_FAKECUDA_DEVICES (1) */
    uint64_t memory;    /* VYRE_FAKECUDA_MEMORY bytes per device (1 GiB) */
    unsigned sm;        /* VYRE_FAKECUDA_SM (80) */
    int sm_count;       /* VYRE_FAKECUDA_SM_COUNT (4) */
    bool cooperative;   /* VYRE_FAKECUDA_COOPERATIVE (1) */
    int occupancy;      /* VYRE_FAKECUDA_OCCUPANCY blocks per SM, 0 = from block size */
    int version;        /* VYRE_FAKECUDA_VERSION (12080) */
    bool persist;       /* VYRE_FAKECUDA_PERSIST: sticky faults survive a reset */
    char ptxas[512];    /* ptxas to check PTX with; "" = structural check only */
    char missing[1024]; /* VYRE_FAKECUDA_MISSING: entries cuGetProcAddress lacks */
    bool verbose;       /* VYRE_FAKECUDA_VERBOSE: misuse and faults on stderr */
    bool foreign;       /* VYRE_FAKECUDA_FOREIGN / "set foreign 1": foreign PTX launches
                           do nothing instead of being refused */
    bool peer;          /* VYRE_FAKECUDA_PEER (1): devices can access each other */
    bool noexec;        /* VYRE_FAKECUDA_NOEXEC: launches are checked but compute nothing,
                           so a bench times the host side alone (bench/host_launch.sh) */
    long jit_us;        /* VYRE_FAKECUDA_JIT_US / "set jit_us N": each cuLinkAddData waits
                           N us outside the driver lock, a JIT's latency without its CPU
                           (parallel JIT measurable on a busy machine) */
};

extern struct fake_config fake_cfg;
extern struct fake_ctx fake_ctxs[FAKE_MAX_DEVICES];
extern uint64_t fake_clock_ns; /* the virtual device clock events read */
extern _Thread_local struct fake_ctx *fake_current;
extern bool fake_initialized;

/* ---- calls (core.c) ---------------------------------------------------------- */

enum { F_CTX = 1 }; /* the call needs a current, live, unpoisoned context */

/* Takes the lock, counts and traces `name`, then returns CUDA_SUCCESS (go on) or the
 * result to return: an armed fault, the context's sticky fault, or INVALID_CONTEXT.
 * The lock is held either way: end with fake_end(). */
CUresult fake_begin(const char *name, unsigned flags);
void fake_end(void);
/* The message describing the fault fake_begin just injected ("" if none). */
const char *fake_injected(void);
/* Records a misuse (a call a correct runtime never makes) and returns r. */
CUresult fake_misuse(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Poisons ctx with a sticky fault (first one wins, as on a real context). */
void fake_poison(struct fake_ctx *ctx, CUresult r, const char *why);

/* Registry: add an object (its head filled in for the current context), find a live
 * one of a kind (NULL if absent or dead), remove one. */
void *fake_obj_new(enum fake_kind kind, size_t size, struct fake_ctx *ctx);
void *fake_obj_find(enum fake_kind kind, const void *handle);
void fake_obj_free(void *obj);
/* The live FK_MEM allocation holding [p, p+n), or NULL. */
struct fake_mem *fake_mem_find(uint64_t p, uint64_t n);
/* Destroys every object of ctx (context reset or last release). */
void fake_ctx_destroy_objects(struct fake_ctx *ctx);
void fake_lock(void); /* the driver lock (fake_begin takes it; fake_end releases it) */
void fake_unlock(void);
void fake_destroy(struct fake_obj *o); /* kind-specific release, then fake_obj_free */

/* ---- pieces used across files -------------------------------------------- */

/* Checks PTX text (ptxas when configured, else its structure); on failure writes a
 * log naming the line and returns CUDA_ERROR_INVALID_PTX. */
CUresult fake_ptx_check(const char *ptx, char *log, size_t logsz);
/* Writes the log of a failed JIT call into (log, logsz) as a C string. */
void fake_log(char *log, size_t logsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* exec.c: reads the program block of m->ptx into m->prog and the entries' kinds (no
 * block: m->prog stays NULL); a block that does not parse fails with a log. */
CUresult fake_prog_load(struct fake_module *m, char *log, size_t logsz);
void fake_prog_free(struct fake_prog *fp);
/* Whether f may be launched with this block: CUDA_SUCCESS, NOT_SUPPORTED for foreign
 * PTX (fake_refusal says why), INVALID_VALUE for a block or parameter list that does
 * not fit the program; a grid kernel launched without cuLaunchCooperativeKernel is
 * counted as misuse. */
CUresult fake_launch_check(const struct fake_func *f, const unsigned block[3], bool cooperative,
                           const char *call);
/* Runs one launch: the program on the interpreter (a foreign kernel: nothing). */
CUresult fake_launch_run(const struct fake_launch *l);
/* The text of the last launch's refusal ("" if none), which cuGetErrorString gives
 * for CUDA_ERROR_NOT_SUPPORTED so the runtime's message says why. */
const char *fake_refusal(void);
void fake_refusal_clear(void);
void fake_launch_clear(struct fake_launch *l);
/* The dimensions of the last launches the driver accepted (control "launch log"; under
 * the driver's lock): one line each, oldest first; "launch log clear" empties it. */
char *fake_launch_log(bool clear);
bool fake_func_live(const struct fake_func *fn);
struct fake_stream *fake_stream_get(CUstream s, CUresult *r);
/* Appends to a capturing stream's graph, or runs now. */
CUresult fake_stream_submit(struct fake_stream *st, struct fake_launch *l);
/* A copy or memset on a stream: refused while it captures (the capture is invalidated). */
CUresult fake_stream_plain_op(struct fake_stream *st);
/* "program TEXT" control command (checks the text; launches need no registration). */
char *fake_prog_register(const char *text, bool *ok);
/* Launches computed, foreign launches done as no-ops, foreign launches refused. */
void fake_prog_counts(uint64_t *computed, uint64_t *skipped, uint64_t *refused);
uint64_t fake_exec_ns(bool cpu); /* ns spent computing launches so far (wall or CPU) */

/* Entry points, defined across the files and resolved through cuGetProcAddress. */
#define FAKE_DECL(n) vyre_cu_fn_##n fake_##n;
FAKE_DECL(cuGetErrorName)
FAKE_DECL(cuGetErrorString)
FAKE_DECL(cuDeviceGet)
FAKE_DECL(cuDeviceGetCount)
FAKE_DECL(cuDeviceGetName)
FAKE_DECL(cuDeviceGetAttribute)
FAKE_DECL(cuDeviceTotalMem)
FAKE_DECL(cuDevicePrimaryCtxRetain)
FAKE_DECL(cuDevicePrimaryCtxRelease)
FAKE_DECL(cuDevicePrimaryCtxReset)
FAKE_DECL(cuCtxSetCurrent)
FAKE_DECL(cuCtxGetCurrent)
FAKE_DECL(cuMemAlloc)
FAKE_DECL(cuMemFree)
FAKE_DECL(cuMemGetInfo)
FAKE_DECL(cuMemHostAlloc)
FAKE_DECL(cuMemFreeHost)
FAKE_DECL(cuMemcpyHtoDAsync)
FAKE_DECL(cuMemcpyDtoHAsync)
FAKE_DECL(cuMemsetD8Async)
FAKE_DECL(cuStreamCreate)
FAKE_DECL(cuStreamDestroy)
FAKE_DECL(cuStreamSynchronize)
FAKE_DECL(cuEventCreate)
FAKE_DECL(cuEventDestroy)
FAKE_DECL(cuEventRecord)
FAKE_DECL(cuEventElapsedTime)
FAKE_DECL(cuModuleLoadDataEx)
FAKE_DECL(cuModuleUnload)
FAKE_DECL(cuModuleGetFunction)
FAKE_DECL(cuFuncGetAttribute)
FAKE_DECL(cuLaunchKernel)
FAKE_DECL(cuLinkCreate)
FAKE_DECL(cuLinkAddData)
FAKE_DECL(cuLinkComplete)
FAKE_DECL(cuLinkDestroy)
FAKE_DECL(cuStreamBeginCapture)
FAKE_DECL(cuStreamEndCapture)
FAKE_DECL(cuGraphInstantiateWithFlags)
FAKE_DECL(cuGraphLaunch)
FAKE_DECL(cuGraphExecDestroy)
FAKE_DECL(cuGraphDestroy)
FAKE_DECL(cuDeviceCanAccessPeer)
FAKE_DECL(cuCtxEnablePeerAccess)
FAKE_DECL(cuMemcpyPeerAsync)
FAKE_DECL(cuStreamWaitEvent)
FAKE_DECL(cuStreamQuery)
#undef FAKE_DECL
/* Entries the runtime does not resolve yet (grid-wide barriers will), with the
 * driver's prototypes. */
CUresult fake_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shared, CUstream stream,
                                        void **params);
CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int block_size,
                                                          size_t dynamic_smem);

#endif
