/* lbackend.h — the userdata types both backends share (vyre.Backend, vyre.Buffer,
 * vyre.Kernel, vyre.Launch, vyre.Graph) and the one argument matcher that run,
 * launch, bind, sequence and graph use on either backend.
 *
 * A backend is the CPU reference interpreter or a CUDA device. Each object records
 * which, and the methods dispatch on it: the reference keeps buffers in host memory
 * and runs kernels on vyre_ref_run; CUDA keeps them on the device and enqueues on its
 * stream. So one script runs unchanged on both, and errors name one type per object.
 * Children keep their parents alive through user value 1 (buffer/kernel/graph ->
 * backend; launch -> kernel). */
#ifndef VYRE_LBACKEND_H
#define VYRE_LBACKEND_H

#include "lvyre.h"
#include "vyre_backend.h"
#include "vyre_cuda.h"
#include "vyre_mega.h"

#define VYRE_LUA_BACKEND "vyre.Backend"
#define VYRE_LUA_BUFFER "vyre.Buffer"
#define VYRE_LUA_KERNEL "vyre.Kernel"
#define VYRE_LUA_LAUNCH "vyre.Launch"
#define VYRE_LUA_GRAPH "vyre.Graph"
#define VYRE_LUA_GROUP "vyre.Group"
#define VYRE_LUA_COLLECTIVE "vyre.Collective"
#define VYRE_LUA_WORKLIST "vyre.Worklist"

/* Counters the binding keeps for what it still runs itself (reference runs, launches,
 * sequences and graphs); be:stats() adds them to the backend's own (vyre_backend_stats)
 * by name. Buffers and transfers are counted by the backend. */
#define LVYRE_REF_STATS(X) \
    X(runs)                \
    X(launches)            \
    X(invocations)         \
    X(compiles)            \
    X(sequences)           \
    X(graph_launches)      \
    X(syncs)               \
    X(live_buffers)        \
    X(buffers_created)     \
    X(live_buffer_bytes)   \
    X(uploads)             \
    X(downloads)           \
    X(bytes_up)            \
    X(bytes_down)          \
    X(live_kernels)        \
    X(live_graphs)
struct lvyre_ref_stats {
#define LVYRE_STAT_FIELD(name) uint64_t name;
    LVYRE_REF_STATS(LVYRE_STAT_FIELD)
#undef LVYRE_STAT_FIELD
};

struct lvyre_backend {
    bool open;   /* false once freed */
    int ordinal; /* device ordinal; 0 for the reference */
    /* The backend of the C interface this object wraps (vyre_backend.h), opened through
     * the registry by name; closed (NULL) once freed and its last buffer, kernel, graph or
     * worklist released. Everything the binding runs goes through it; only what is a
     * CUDA device's own (collectives, raw PTX, peers, NCCL groups) reaches `dev`. */
    vyre_backend *core;
    const char *name;      /* vyre_backend_name(core): static, kept after free */
    char label[40];        /* tostring's: the name, and the ordinal of a device */
    vyre_cuda_device *dev; /* vyre_backend_native_device(core): NULL without one */
    bool host_memory;      /* vyre_backend_info.host_memory: buffers are host memory */
    bool runs_on_caller;   /* vyre_backend_info.runs_on_caller: Ctrl-C guards its runs */
    /* Buffers (views included), kernels, graphs and worklists of core still alive:
     * be:free() closes core only once the last is released (lvyre_backend_unref), since
     * closing frees them. */
    uint64_t nchildren;
    const void *buffer_mt;     /* the Buffer metatable: telling a Buffer costs no lookup */
    struct lvyre_ref_stats st; /* what the binding runs itself; `runs` on every backend */
    uint64_t max_steps;        /* reference only: vyre_ref_run_options.max_steps (0: default) */
    bool debug;                /* debug mode is on (ldebug.c; the backend counts) */
    /* megakernel plans (lmega.c): made on the first plan, freed with the backend */
    vyre_mega_cache *plans;
};

struct lvyre_buffer {
    struct lvyre_backend *be; /* the owner, kept alive by user value 1 */
    enum vyre_type type;
    uint64_t count;
    bool live;
    vyre_backend_buffer *h; /* the backend's buffer (vyre_backend.h); NULL once freed */
    /* Read from h once, for the families that still reach storage directly: */
    vyre_cuda_buffer *cu; /* vyre_backend_buffer_native(h): a native device's buffer */
    void *host;           /* host_memory: the elements' host address (NULL when empty) */
    /* buf:view: a view aliases its parent's storage from element `first` (0-based) and
     * keeps the parent alive through user value 2; the parent lists its live views, so
     * freeing it ends them (they report `orphan`). Views of views name the owner. */
    struct lvyre_buffer *parent;
    struct vyre_lua_vnode vn;
    uint64_t first;
};

/* The declarations of a program as the matcher reads them: names are interned Lua
 * strings (kept alive by the layout's user value), so matching a key of an args
 * table is a pointer comparison in the common case. */
/* vyre.Worklist (lworklist.c): the backend's worklist (vyre_backend_worklist_*). */
struct lvyre_worklist {
    struct lvyre_backend *be; /* kept alive by user value 1 */
    enum vyre_type type;
    uint32_t capacity;
    bool live;
    vyre_backend_worklist *h; /* NULL once freed */
    vyre_cuda_worklist *cu;   /* vyre_backend_worklist_native(h), or NULL: collective steps */
    uint64_t host_bytes;      /* counted toward the host cap (host-memory backends) */
    struct vyre_workqueue_plan plan; /* how its capacity was sized (wl:plan()) */
};

struct lvyre_decl {
    const char *name;
    size_t len;
    enum vyre_decl_kind kind;
    enum vyre_type type;
    enum vyre_access access;
    uint32_t count;
    uint32_t slot;
};
struct lvyre_layout {
    uint32_t ndecls, nbuffers, nparams, nworklists;
    uint32_t workgroup[3];
    bool reads_axis[3]; /* the body reads gid/wgid on that axis */
    bool reads_ngroups; /* the body reads ngroups: it covers its space from any grid */
    char name[72];      /* the program's, for messages */
    /* "n" and "grid" as interned strings of this Lua state (kept alive like the names),
     * so reading opts compares keys by pointer */
    const char *key_n, *key_grid;
    struct lvyre_decl d[];
};

struct lvyre_kernel {
    struct lvyre_backend *be; /* kept alive by user value 1 */
    bool live;
    vyre_backend_kernel *h;         /* the backend's kernel; NULL for raw PTX and once freed */
    vyre_cuda_kernel *cu;           /* vyre_backend_kernel_native(h), or a raw PTX module */
    struct vyre_lua_program *prog;  /* NULL for raw PTX; user value 2 keeps it alive */
    const struct lvyre_layout *lay; /* NULL for raw PTX; user value 3 keeps it alive */
    char name[72];
};

/* What matching an args table and opts against a layout produced. */
enum lvyre_match_mode {
    LVYRE_MATCH_LAUNCH, /* buffers must be Buffers of the backend, all bound */
    LVYRE_MATCH_RUN     /* also vyre.Arrays and tables; unbound `write` buffers allowed */
};
struct lvyre_bound {
    struct lvyre_buffer *buf[VYRE_MAX_BUFFERS];   /* a Buffer of the backend, or NULL */
    struct vyre_lua_array *arr[VYRE_MAX_BUFFERS]; /* run: a host array, or NULL */
    vyre_bits params[VYRE_MAX_PARAMS];            /* scalar params by slot */
    uint64_t n;     /* opts.n (elements; w*h*d for a table), 0 when absent */
    uint64_t n3[3]; /* opts.n = {w, h, d} */
    bool has_n, has_n3;
    uint32_t grid[3];
    bool has_grid; /* explicit grid, or the one n = {w, h, d} gives */
    bool empty;    /* opts.n is 0: the launch runs nothing */
    struct lvyre_worklist *wl[VYRE_MAX_WORKLISTS]; /* per worklist declaration */
    struct lvyre_worklist *sized;                  /* opts.n = wl, else NULL */
};

/* ---- lbackend.c ---- */
/* The backend's registered name ("reference", "cuda"), from the backend itself. */
static inline const char *lvyre_backend_name(const struct lvyre_backend *be) {
    return be && be->name ? be->name : "?";
}
struct lvyre_backend *lvyre_checkbackend(lua_State *L, int idx, const char *fname);
/* A buffer or kernel of be's core was freed: closes core when be was freed and this was
 * the last. */
void lvyre_backend_unref(struct lvyre_backend *be);
/* The device of a live CUDA backend, with its out-of-memory handler armed. */
vyre_cuda_device *lvyre_cuda_device(lua_State *L, struct lvyre_backend *be, const char *fname);
/* Raises "fname: not available on the reference backend. Fix: ..." for CUDA-only calls. */
int lvyre_cuda_only(lua_State *L, const char *fname, const char *fix);
void lvyre_pushtiming(lua_State *L, const struct vyre_timing *t);
uint64_t lvyre_now_ns(void);
/* lrefguard.c: SIGINT interrupts be's runs between enter and leave where they execute
 * on the calling thread (be->runs_on_caller: the interpreter); on a device, whose runs
 * only enqueue and wait, both do nothing and Ctrl-C keeps its handler. enter says
 * whether it guarded, and then clears err (leave reads which call failed). */
bool lvyre_refguard_begin(struct vyre_error *err);
static inline bool lvyre_refguard_enter(const struct lvyre_backend *be, struct vyre_error *err) {
    return be->runs_on_caller && lvyre_refguard_begin(err); /* a device: no call at all */
}
/* After a call that returned st (err filled when not OK): a Ctrl-C the call did not
 * report as its error (vyre_ref_interrupt) is raised again for the previous handler. */
void lvyre_refguard_leave(bool guarded, enum vyre_status st, const struct vyre_error *err);

/* ---- lbuffer.c ---- */
/* A live Buffer at idx, or raises naming fname (wrong type, freed). */
struct lvyre_buffer *lvyre_checkbuffer(lua_State *L, int idx, const char *fname);
struct lvyre_buffer *lvyre_testbuffer(lua_State *L, int idx); /* NULL if not a Buffer */
/* Pushes a new Buffer of be (the backend userdata at be_idx); raises on failure. */
struct lvyre_buffer *lvyre_newbuffer(lua_State *L, int be_idx, enum vyre_type t, uint64_t count,
                                     const void *init, const char *fname);
/* Host storage of a reference buffer / the vyre_buffer_arg a run binds it as. */
void lvyre_buffer_arg(const struct lvyre_buffer *b, struct vyre_buffer_arg *out);
void vyre_lua_open_buffer(lua_State *L);

/* ---- largs.c: the argument matcher ---- */
/* Pushes a userdata holding the layout of the live Program at prog_idx (names interned)
 * and returns it. The Program userdata must outlive the layout (kernels and run keep it). */
const struct lvyre_layout *lvyre_layout_push(lua_State *L, int prog_idx);
/* Matches the args table at args (nil = {}) and the opts table at opts (nil = {})
 * against lay for backend be; raises "fname: ... Fix: ..." on any mistake. In RUN
 * mode, tables are converted to arrays pushed on the stack (kept alive there). */
void lvyre_match(lua_State *L, int args, int opts, const struct lvyre_layout *lay,
                 struct lvyre_backend *be, enum lvyre_match_mode mode, struct lvyre_bound *out,
                 const char *fname);
/* Element count of the unbound write buffer in slot (declared, opts.n, else the
 * largest bound buffer); raises when nothing sizes it. */
uint64_t lvyre_output_count(lua_State *L, const struct lvyre_layout *lay,
                            const struct lvyre_bound *b, uint32_t slot, const char *fname);
/* Element count bound to each buffer slot (0 for unbound). */
void lvyre_bound_counts(const struct lvyre_layout *lay, const struct lvyre_bound *b,
                        uint64_t *counts);
/* The declaration of buffer (or param) slot s. */
const struct lvyre_decl *lvyre_layout_slot(const struct lvyre_layout *lay, enum vyre_decl_kind kind,
                                           uint32_t s);

/* ---- lkernel.c ---- */
struct lvyre_worklist *lvyre_testworklist(lua_State *L, int idx); /* NULL if not one */
int lvyre_backend_worklist(lua_State *L);                         /* be:worklist */
void vyre_lua_open_worklist(lua_State *L);
/* Pushes a work-queue plan as a table (lworklist.c). */
void lvyre_push_workqueue_plan(lua_State *L, const struct vyre_workqueue_plan *p);
/* Raises the overflow error (the capacity needed) / raises if w has an overflow its
 * backend knows without waiting (vyre_backend_worklist_overflow). */
int lvyre_worklist_overflow_error(lua_State *L, const char *fname, uint32_t capacity,
                                  uint32_t needed);
void lvyre_worklist_check(lua_State *L, struct lvyre_worklist *w, const char *fname);

struct lvyre_kernel *lvyre_checkkernel(lua_State *L, int idx, const char *fname);
/* The kernel's program, or raises (raw PTX kernel, program freed). */
vyre_program *lvyre_kernel_program(lua_State *L, struct lvyre_kernel *k, const char *fname);
/* Pushes a Kernel of the backend at be_idx for the Program at prog_idx, not live yet:
 * lvyre_kernel_adopt gives it the backend's compiled kernel h. */
struct lvyre_kernel *lvyre_kernel_new(lua_State *L, int be_idx, int prog_idx);
void lvyre_kernel_adopt(struct lvyre_kernel *k, vyre_backend_kernel *h);
/* Pushes a Kernel of the backend at be_idx compiled from the Program at prog_idx. */
struct lvyre_kernel *lvyre_compile(lua_State *L, int be_idx, int prog_idx, const char *fname);
/* be:compile_all(programs) (lcompile_all.c). */
int lvyre_backend_compile_all(lua_State *L);
/* One launch of k with matched arguments (reference: runs now; CUDA: enqueues). */
void lvyre_kernel_run(lua_State *L, struct lvyre_kernel *k, const struct lvyre_bound *b,
                      const char *fname);
/* The §5 grid of a launch of k with matched arguments; raises on a bad geometry. */
void lvyre_kernel_grid(lua_State *L, struct lvyre_kernel *k, const struct lvyre_bound *b,
                       uint32_t grid[3], const char *fname);
/* The interface's arguments of a launch from matched arguments (s: their scratch, which
 * must live as long as a). */
struct lvyre_args {
    vyre_backend_buffer *bufs[VYRE_MAX_BUFFERS];
    vyre_backend_worklist *wls[VYRE_MAX_WORKLISTS];
};
void lvyre_backend_args(const struct lvyre_kernel *k, const struct lvyre_bound *b,
                        struct lvyre_args *s, struct vyre_backend_args *a);
/* Raises when a worklist a launch binds (or sizes it) has an overflow its backend knows
 * without waiting (lvyre_worklist_check): before a launch, and after one on the
 * backends that know right away. */
void lvyre_bound_check(lua_State *L, const struct lvyre_kernel *k, const struct lvyre_bound *b,
                       const char *fname);
/* Fills a CUDA launch's argument struct from matched arguments (collective sequences,
 * which only a CUDA device runs; s: scratch). */
struct lvyre_cuda_scratch {
    vyre_cuda_buffer *bufs[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS + VYRE_MAX_WORKLISTS];
};
void lvyre_cuda_args(const struct lvyre_kernel *k, const struct lvyre_bound *b,
                     struct lvyre_cuda_scratch *s, struct vyre_cuda_args *a);
void vyre_lua_open_kernel(lua_State *L);

/* ---- llaunch.c, lgraph.c, lsequence.c, lrun.c ---- */
int lvyre_kernel_bind(lua_State *L); /* k:bind(args, opts) */
void vyre_lua_open_launch(lua_State *L);
int lvyre_backend_graph(lua_State *L); /* be:graph(steps) */
void vyre_lua_open_graph(lua_State *L);
int lvyre_backend_sequence(lua_State *L);  /* be:sequence(steps, opts) */
int lvyre_backend_run(lua_State *L);       /* be:run(p, args, opts) */
int lvyre_backend_run_timed(lua_State *L); /* be:run_timed(p, args, opts) */

/* ---- lmega.c: grid statements and megakernels (docs/GRID.md) ---- */
int lvyre_kernel_rounds(lua_State *L);       /* k:rounds() */
int lvyre_kernel_occupancy(lua_State *L);    /* k:occupancy() */
int lvyre_backend_grid_sync(lua_State *L);   /* be:grid_sync([mode]) */
int lvyre_backend_megakernel(lua_State *L);  /* be:megakernel(steps, opts) */
int lvyre_backend_plan(lua_State *L);        /* be:plan(steps, opts) */
void lvyre_mega_trim(lua_State *L, int idx); /* drops the backend's compiled megakernels */
/* The backend's plan counters into the table on top; its plan cache freed; the core
 * functions core.set_megakernel_policy, set_plan_hook and mega_layers into the table on
 * top. */
void lvyre_mega_stats(lua_State *L, struct lvyre_backend *be);
void lvyre_mega_release(struct lvyre_backend *be);
void lvyre_mega_open(lua_State *L);
void lvyre_plan_open(lua_State *L); /* lplan.c: the planners of vyre_plan.h */

/* ---- ldebug.c: the debug mode (ARCHITECTURE.md §3, §7) ---- */
int lvyre_backend_debug(lua_State *L);      /* be:debug([on]) */
int lvyre_backend_oob_report(lua_State *L); /* be:oob_report() */

/* A step of a sequence or graph, matched: the kernel and its bound arguments. */
struct lvyre_step {
    struct lvyre_kernel *k;
    struct lvyre_bound b;
    vyre_cuda_kernel *coll; /* a collective step {c} (lcollective.c): k is NULL then */
    const void *collud;     /* its vyre.Collective, for the liveness checks of replays */
};
/* lrounds.c: rounds converging on a worklist (be:sequence and be:megakernel with
 * opts.converge = {worklist = wl, max = N}). */
bool lvyre_read_wl_converge(lua_State *L, int opts, struct lvyre_backend *be,
                            struct lvyre_worklist **wl, uint32_t *max, const char *fname);
uint64_t lvyre_rounds_by_worklist(lua_State *L, struct lvyre_backend *be, struct lvyre_step *steps,
                                  size_t n, size_t prefix, struct lvyre_worklist *wl, uint32_t max,
                                  struct vyre_timing *t, const char *fname);
/* Reads steps = {{kernel, args, opts}, ...} at idx (kernels of be) into scratch memory
 * pushed on the stack; *n receives the count. */
struct lvyre_step *lvyre_read_steps(lua_State *L, int idx, struct lvyre_backend *be, size_t *n,
                                    const char *fname);
/* lsequence.c: read steps as the backend interface's (scratch pushed on the stack): steps
 * with opts.n = 0 are left out; *m gets how many stay, *mprefix how many of the first
 * `prefix` read steps stay. NULL (nothing pushed) when a step binds a worklist or is a
 * collective: vyre_backend_args cannot carry those yet. */
struct vyre_backend_step *lvyre_backend_steps(lua_State *L, const struct lvyre_step *steps,
                                              size_t n, size_t prefix, size_t *m, size_t *mprefix);

/* ---- lgroup.c, lcollective.c: groups of devices (docs/MULTIGPU.md) ---- */
struct lvyre_group;
struct lvyre_group *lvyre_checkgroup(lua_State *L, int idx, const char *fname);
int lvyre_group_local(const struct lvyre_group *g); /* devices this process drives */
bool lvyre_group_live(const struct lvyre_group *g);
/* Fills calls[0..local) from a src list at src and a dst list at dst (0 or nil: none). */
int lvyre_group_calls(lua_State *L, struct lvyre_group *g, enum vyre_nccl_coll coll, int src,
                      int dst, enum vyre_nccl_op op, int root, struct vyre_nccl_call *calls,
                      struct lvyre_buffer **bufs, const char *fname);
int lvyre_group_collective(lua_State *L); /* g:collective(name, ...) */
int lvyre_group_sequence(lua_State *L);   /* g:sequence(lists, opts) */
int lvyre_buffer_copy_to(lua_State *L);   /* buf:copy_to(dst) */
/* The kernel object of a vyre.Collective at idx (raising naming fname when it or one of
 * its buffers was freed), or NULL for anything else; *ud gets the Collective. */
vyre_cuda_kernel *lvyre_testcollective(lua_State *L, int idx, const void **ud, const char *fname);
/* Raises unless the Collective ud (from lvyre_testcollective) and its buffers are live. */
void lvyre_collective_check(lua_State *L, const void *ud, const char *fname);
/* CUDA steps from read steps (scratch pushed on the stack); *m: how many. */
struct vyre_cuda_step *lvyre_cuda_steps(lua_State *L, struct lvyre_step *steps, size_t n,
                                        size_t *m);
/* Pushes {[ordinal] = "peer" | "staged"} for the other devices (be:info().peers). */
void lvyre_push_peers(lua_State *L, vyre_cuda_device *d, int self);
void vyre_lua_open_group(lua_State *L);
void vyre_lua_open_collective(lua_State *L);
void vyre_lua_open_spawn(lua_State *L); /* lspawn.c: core.spawn, wait, kill */

#endif
