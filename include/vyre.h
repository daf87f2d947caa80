/* vyre.h — public C API of libvyre: programs, validation, text format, reference
 * interpreter and PTX emission. No Lua, no CUDA driver needed for anything here.
 * The CUDA runtime has its own header, vyre_cuda.h. */
#ifndef VYRE_H
#define VYRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_VERSION "0.1.0"

/* ---- status and errors ------------------------------------------------ */

enum vyre_status {
    VYRE_OK = 0,
    VYRE_ERR_NOMEM,       /* allocation failed */
    VYRE_ERR_ARG,         /* caller passed something unusable */
    VYRE_ERR_SYNTAX,      /* text format: line/column filled */
    VYRE_ERR_INVALID,     /* program failed validation */
    VYRE_ERR_RUNTIME,     /* interpreter run-time error (e.g. divergent barrier) */
    VYRE_ERR_UNSUPPORTED, /* op/type/target combination not supported */
    VYRE_ERR_LIMIT,       /* a size or geometry limit was exceeded */
    VYRE_ERR_CUDA,        /* a CUDA driver call failed */
    VYRE_ERR_NO_CUDA,     /* CUDA is not usable on this machine */
    VYRE_ERR_DEVICE_LOST, /* a sticky fault poisoned the device */
    VYRE_ERR_IO           /* file system (disk cache) */
};

#define VYRE_MSG_MAX 4096

/* One error record per failing call. `message` always says what went wrong and,
 * where the caller can do something about it, ends with "Fix: ...". */
struct vyre_error {
    enum vyre_status status;
    char message[VYRE_MSG_MAX];
    char call[64];   /* failing driver call, "" if none */
    char result[64]; /* CUresult name, "" if none */
    uint32_t line;   /* syntax errors: 1-based line, else 0 */
    uint32_t column; /* syntax errors: 1-based column, else 0 */
};

/* Clears the record to VYRE_OK. */
void vyre_error_clear(struct vyre_error *err);
/* Formats into err (if not NULL) and returns status, so callers can
 * `return vyre_error_set(err, VYRE_ERR_ARG, "...")`. */
enum vyre_status vyre_error_set(struct vyre_error *err, enum vyre_status status, const char *fmt,
                                ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
const char *vyre_status_name(enum vyre_status status);
/* The stable error code of a status, as error objects carry it (docs/API.md "Errors"):
 * "oom" "arg" "parse" "validate" "runtime" "unsupported" "limit" "driver" "no_cuda"
 * "lost" "io". */
const char *vyre_status_code(enum vyre_status status);
/* The fix of a message worded "what. Fix: how": a pointer to "how" inside message, or
 * NULL when it has none; *what_len (may be NULL) gets the length of "what." before it. */
const char *vyre_error_fix(const char *message, size_t *what_len);

/* Frees memory returned by vyre (text, PTX). NULL is a no-op. */
void vyre_free(void *ptr);

/* One timing record for every timed call of every backend (vyre_cuda.h, vyre_backend.h),
 * nanoseconds: wall (the whole call), device (cuEvent time of the work), enqueue (until
 * the last piece of work was queued) and wait (the host's wait for it). The reference
 * runs on the CPU: its wall, device and enqueue times are one measurement, wait_ns 0. */
struct vyre_timing {
    uint64_t wall_ns, device_ns, enqueue_ns, wait_ns;
};

/* How a program with grid statements runs (docs/GRID.md), one name per mode in every
 * layer (plans, the policy, be:grid_sync, $VYRE_GRID_SYNC): AUTO is the runtime's own rule
 * (a cooperative launch where the kernel can be co-resident, else the host split);
 * COOPERATIVE insists (an error where it cannot run); SPLIT runs one kernel per section
 * with the grid-level control flow on the host; GRAPH is the split with each converge
 * round captured once as a graph and replayed. A backend keeps its mode
 * (vyre_backend_set_grid_sync) and passes it to each launch; the CUDA calls take it as
 * an argument (vyre_cuda_args.grid_sync), never from device state. */
enum vyre_grid_sync { VYRE_GRID_AUTO, VYRE_GRID_COOPERATIVE, VYRE_GRID_SPLIT, VYRE_GRID_GRAPH };

/* ---- types ------------------------------------------------------------ */

enum vyre_type {
    VYRE_BOOL = 0,
    VYRE_I32,
    VYRE_U32,
    VYRE_I64,
    VYRE_U64,
    VYRE_F32,
    VYRE_F64,
    VYRE_TYPE_COUNT,
    VYRE_VOID = VYRE_TYPE_COUNT /* statements, not-yet-typed expressions */
};

const char *vyre_type_name(enum vyre_type t); /* "f32"; "void" for VYRE_VOID */
bool vyre_type_from_name(const char *name, enum vyre_type *out);
size_t vyre_type_size(enum vyre_type t);    /* bytes in memory; bool is 4 */
bool vyre_type_is_int(enum vyre_type t);    /* i32 u32 i64 u64 */
bool vyre_type_is_signed(enum vyre_type t); /* i32 i64 */
bool vyre_type_is_float(enum vyre_type t);  /* f32 f64 */
unsigned vyre_type_bits(enum vyre_type t);  /* 32 or 64 (bool: 32) */

/* A value of any type as raw bits, zero-extended into 64 bits: bool is 0/1,
 * i32/u32/f32 use the low 32 bits (upper 32 bits zero), 64-bit types all 64. */
typedef uint64_t vyre_bits;

/* ---- programs --------------------------------------------------------- */

typedef struct vyre_program vyre_program;

/* Text format (ARCHITECTURE.md §4). On a syntax error returns VYRE_ERR_SYNTAX with
 * err->line/column set and a message quoting the offending token. */
enum vyre_status vyre_text_parse(const char *text, size_t len, vyre_program **out,
                                 struct vyre_error *err);
/* Canonical text, NUL-terminated, caller frees with vyre_free. */
enum vyre_status vyre_text_print(const vyre_program *p, char **out, size_t *out_len);
/* XXH3-64 of the canonical text. */
uint64_t vyre_program_hash(const vyre_program *p);
/* 16 lowercase hex digits + NUL. */
void vyre_program_hash_hex(const vyre_program *p, char out[17]);
bool vyre_program_equal(const vyre_program *a, const vyre_program *b);
void vyre_program_free(vyre_program *p);
/* A deep copy of p (*out, the caller frees), the same program its canonical text parses to:
 * unvalidated, so its first use validates it. VYRE_ERR_NOMEM on allocation failure. */
enum vyre_status vyre_program_copy(const vyre_program *p, vyre_program **out,
                                   struct vyre_error *err);
const char *vyre_program_name(const vyre_program *p);
void vyre_program_workgroup(const vyre_program *p, uint32_t out[3]);

/* Limits of ARCHITECTURE.md §2 that callers size their own arrays by. */
#define VYRE_MAX_BUFFERS 128u
#define VYRE_MAX_PARAMS 128u
#define VYRE_MAX_WORKLISTS 16u

/* ---- program declarations (what bindings match arguments against) ---------- */

/* VYRE_DECL_WORKLIST: a device worklist (ARCHITECTURE.md §2): (len W), (load W i) read the
 * current items, (push W v) appends to the next round's. */
enum vyre_decl_kind { VYRE_DECL_BUFFER, VYRE_DECL_SHARED, VYRE_DECL_PARAM, VYRE_DECL_WORKLIST };
enum vyre_access { VYRE_ACCESS_READ, VYRE_ACCESS_WRITE, VYRE_ACCESS_READ_WRITE };
const char *vyre_decl_kind_name(enum vyre_decl_kind k); /* "buffer" "shared" "param" "worklist" */
const char *vyre_access_name(enum vyre_access a);       /* "read" "write" "read_write" */

/* One declaration, as the program holds it; name points into the program. */
struct vyre_decl_info {
    enum vyre_decl_kind kind;
    const char *name;
    enum vyre_type type;
    enum vyre_access access; /* buffers only */
    uint32_t count;          /* buffers: 0 = sized at dispatch; shared: element count */
    uint32_t slot;           /* 0-based index among declarations of the same kind */
};
/* Declarations in order; vyre_program_decl returns false past the end. */
uint32_t vyre_program_decl_count(const vyre_program *p);
uint32_t vyre_program_worklist_count(const vyre_program *p); /* `worklist` declarations */
bool vyre_program_decl(const vyre_program *p, uint32_t i, struct vyre_decl_info *out);
uint32_t vyre_program_buffer_count(const vyre_program *p); /* `buffer` declarations */
uint32_t vyre_program_param_count(const vyre_program *p);  /* `param` declarations */
/* true when the body reads (gid AXIS) or (wgid AXIS), axis 0..2 for x..z: a launch
 * whose grid has 1 workgroup on that axis then covers only one workgroup's extent. */
bool vyre_program_reads_axis(const vyre_program *p, unsigned axis);
/* true when the body reads (ngroups AXIS) on any axis: it computes with the grid's shape
 * (a flattened index, a grid-stride loop), so it is written for any launch grid. */
bool vyre_program_reads_ngroups(const vyre_program *p);
/* true when the body has grid statements (grid_barrier, converge; docs/GRID.md). */
bool vyre_program_has_grid(const vyre_program *p);
/* Validates p unless it already is; VYRE_ERR_INVALID with every problem in err. */
enum vyre_status vyre_program_check(vyre_program *p, struct vyre_error *err);

/* Launch fusion (src/core/ir/fuse.c): one program running the chain progs[0..n) per
 * invocation, bit-identical to running them in order when the rules there hold (1-D,
 * same workgroup, shared buffers accessed at (gid x), no barrier/shared/subgroup ops);
 * buffers named in `internal` become registers plus a u32 param NAME_len. Else an error
 * naming the program and the reason. Buffers are shared by name: memory two programs
 * share must be bound under one name (two names over overlapping memory, e.g. a buffer
 * and its view, lose the chain's order). */
enum vyre_status vyre_program_fuse(vyre_program *const *progs, size_t n,
                                   const char *const *internal, size_t ninternal,
                                   vyre_program **out, struct vyre_error *err);

/* ---- validation ------------------------------------------------------- */

struct vyre_problem {
    char code[48];     /* stable identifier, e.g. "type-mismatch" */
    char path[256];    /* node path, e.g. "body[2].then[0].value" */
    char message[512]; /* the rule broken, quoting the node's canonical text */
    char fix[384];     /* how to fix it (without the "Fix: " prefix) */
    /* The type a conversion of the node at path fixes it with, when the fix is a cast
     * ("u32"), else "": the fix's facts as data, so another front end (the Lua DSL)
     * words its own fix from code and cast without parsing this one's text syntax. */
    char cast[8];
};

struct vyre_problems {
    struct vyre_problem *items;
    size_t count;
    size_t cap;
};

/* Checks every rule of ARCHITECTURE.md §2 and reports all problems at once.
 * Returns VYRE_OK when the program is valid (and records types and variable
 * slots in it for the backends), VYRE_ERR_INVALID when problems were found,
 * VYRE_ERR_NOMEM on allocation failure. Never crashes on any input program. */
enum vyre_status vyre_validate(vyre_program *p, struct vyre_problems *out);
void vyre_problems_free(struct vyre_problems *probs);
/* One message for all problems ("invalid program 'x': N problems:\n  path: msg Fix: ..."). */
void vyre_problems_format(const vyre_program *p, const struct vyre_problems *probs,
                          struct vyre_error *err);

/* ---- launch geometry (§5) ---------------------------------------------- */

/* What sizes one launch (zero-initialise, set what you have; o itself may be NULL: every
 * field 0, one workgroup). */
struct vyre_grid_options {
    const uint64_t *buffer_counts; /* elements bound to each buffer declaration, in order */
    size_t nbuffers;               /* entries of buffer_counts */
    uint64_t n;                    /* elements to cover (0: the largest bound buffer) */
    const uint32_t *grid;          /* NULL, or explicit workgroups per axis (wins) */
};
/* grid: explicit if o->grid != NULL; else ceil(n / workgroup.x) when n > 0;
 * else ceil(max(buffer_counts) / workgroup.x). At least 1 workgroup. */
enum vyre_status vyre_launch_grid(const vyre_program *p, const struct vyre_grid_options *o,
                                  uint32_t out[3], struct vyre_error *err);

/* ---- reference interpreter -------------------------------------------- */

/* One global buffer binding: `count` elements of the declared type stored as
 * vyre_type_size() bytes each (bool as 32-bit words). */
struct vyre_buffer_arg {
    void *data;
    uint64_t count;
};

/* Debug mode: out-of-bounds accesses of one declaration (ARCHITECTURE.md §3). */
struct vyre_oob_count {
    uint64_t loads;  /* loads past the end (each read as typed zero) */
    uint64_t stores; /* stores and atomics past the end (each dropped) */
};

/* One worklist binding (ARCHITECTURE.md §2, §5): the current items (`cur_count` of
 * them) and the next round's array (`capacity` elements) of the declared type. A push
 * adds 1 to next_count and stores at the old count when it is below the capacity;
 * past it the item is not stored and overflow_needed becomes the count needed, which
 * the caller must report (never a silent drop). (len W) is min(cur_count, capacity). */
struct vyre_worklist_arg {
    void *cur;
    void *next;
    uint32_t cur_count;
    uint32_t next_count;
    uint32_t capacity;
    uint32_t overflow_needed; /* 0, or the capacity the pushes so far need */
};

struct vyre_run_args {
    struct vyre_buffer_arg *buffers; /* one per `buffer` declaration, in order */
    size_t nbuffers;
    const vyre_bits *params; /* one per `param` declaration, in order */
    size_t nparams;
    uint32_t grid[3]; /* workgroups per axis (see vyre_launch_grid) */
};

#define VYRE_REF_DEFAULT_MAX_STEPS 10000000000ull /* 10^10: minutes of interpretation */

/* Options and results of one reference run (zero-initialise, set what you need; the
 * options pointer itself may be NULL: every field 0). Out-pointers left NULL are not
 * filled. */
struct vyre_ref_run_options {
    /* Loop iterations the whole run may take, counted over every invocation; a run
     * past it stops with VYRE_ERR_RUNTIME. 0: VYRE_REF_MAX_STEPS from the environment,
     * else VYRE_REF_DEFAULT_MAX_STEPS. */
    uint64_t max_steps;
    /* NULL, or a flag the caller (another thread, a signal handler) sets nonzero to stop
     * this run at its next loop iteration with VYRE_ERR_RUNTIME "interrupted". */
    const volatile int *interrupt;
    /* Out: the rounds the program's converge loops ran, summed over every converge loop
     * the run executed (0 without one). */
    uint64_t *rounds;
    /* Out, debug mode: vyre_program_decl_count entries; every out-of-bounds load, store
     * or atomic of a buffer or shared declaration adds 1 to oob[i] of its declaration i
     * (vyre_program_decl order; params stay 0). Results do not change. */
    struct vyre_oob_count *oob;
    /* A program with worklists: *worklists[i] binds the i-th `worklist` declaration
     * (nworklists of them; NULL, 0 for none; two may point at one worklist). Pushes
     * update worklists[i]->next_count, the next array and overflow_needed; the caller
     * reports an overflow (overflow_needed > 0). */
    struct vyre_worklist_arg *const *worklists;
    size_t nworklists;
    /* Out, race check (slower; tests and tools): when non-NULL, every load, store and
     * atomic of a buffer or shared element is recorded, and two accesses of one element
     * by different invocations with no barrier between them, at least one a store (or
     * a store and an atomic), count as a race. Results do not change. */
    struct vyre_race_report *races;
};

/* What the race check found (vyre_ref_run_options.races): the number of racing access
 * pairs seen and the first one in words. */
struct vyre_race_report {
    uint64_t count;
    char first[256];
};

/* Stops every reference run in progress (in any thread) at its next loop iteration
 * with VYRE_ERR_RUNTIME "interrupted". Async-signal-safe: a SIGINT handler may call it.
 * Runs that start afterwards are not affected. (One run alone: options.interrupt.) */
void vyre_ref_interrupt(void);

/* Runs the program on the CPU exactly as §3 specifies. Validates first if needed.
 * o may be NULL (the defaults, no results asked for). */
enum vyre_status vyre_ref_run(vyre_program *p, const struct vyre_run_args *args,
                              const struct vyre_ref_run_options *o, struct vyre_error *err);

/* ---- PTX ---------------------------------------------------------------- */

/* ---- optimiser (docs/OPT.md) ----------------------------------------------- */

/* Which passes run; each keeps the program's results bit-identical (§3). */
struct vyre_opt_options {
    bool fold;     /* constant folding */
    bool simplify; /* algebraic identities that hold under the total semantics */
    bool copy;     /* copy and constant propagation */
    bool cse;      /* common-subexpression elimination */
    bool licm;     /* loop-invariant code motion */
    bool dce;      /* dead lets, unreachable branches, loops with no effect */
};
/* What the passes did (counts of rewrites). */
struct vyre_opt_report {
    uint32_t folded, simplified, copied, cse, hoisted, removed;
};
/* Every pass on, then the spec in $VYRE_OPT applied (see vyre_opt_options_parse). */
enum vyre_status vyre_opt_options_default(struct vyre_opt_options *o, struct vyre_error *err);
/* Applies a comma-separated spec to *o: "all", "none", a pass name or "+name" (on),
 * "-name" (off); names fold simplify copy cse licm dce. VYRE_ERR_ARG on a bad word. */
enum vyre_status vyre_opt_options_parse(const char *spec, struct vyre_opt_options *o,
                                        struct vyre_error *err);
/* The optimised copy of p (validated first if needed; o NULL: the defaults); p is not
 * changed. report may be NULL. The caller frees *out. */
enum vyre_status vyre_program_optimize(vyre_program *p, const struct vyre_opt_options *o,
                                       vyre_program **out, struct vyre_opt_report *report,
                                       struct vyre_error *err);

/* The PTX targets vyre emits (docs/RUNTIME.md "PTX targets"): every compute capability
 * the PTX ISA names from 7.0 up, ascending (sm_101 and sm_110 both: PTX ISA 9.0 renamed
 * the one to the other). isa is the oldest PTX ISA `.version` that knows the target,
 * which vyre writes so the oldest driver that can load it does; min_cuda the CUDA
 * version (cuDriverGetVersion form: 12080 = 12.8) of the first driver that loads that
 * ISA. gpus names example parts. */
struct vyre_ptx_target {
    unsigned sm;
    const char *isa;
    int min_cuda;
    const char *gpus;
};
size_t vyre_ptx_target_count(void);
/* The i-th target (ascending SM), NULL past the end. */
const struct vyre_ptx_target *vyre_ptx_target_at(size_t i);
/* The target for exactly this SM, NULL if vyre has none. */
const struct vyre_ptx_target *vyre_ptx_target_find(unsigned sm);

struct vyre_ptx_options {
    unsigned sm; /* a vyre_ptx_target's sm: 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, ... */
    /* Debug mode (ARCHITECTURE.md §3): the entry takes one more parameter, after all
     * others: `.param .u64 vy_oob`, a pointer to 2 u64 per declaration (vyre_program_decl
     * order). Each out-of-bounds load adds 1 to word 2i, each out-of-bounds store or
     * atomic to word 2i + 1, of its declaration i. Results do not change. No vector
     * entry is emitted, and no optimiser pass runs (they may merge, hoist or drop
     * accesses; the counts are those of the program as written, the reference's). */
    bool debug;
    /* The optimiser passes to run first; NULL: vyre_opt_options_default ($VYRE_OPT). */
    const struct vyre_opt_options *passes;
};

/* PTX text for the program (validated first if needed), caller frees. opt names the
 * target (required: VYRE_ERR_UNSUPPORTED without one, listing the targets). */
enum vyre_status vyre_ptx_emit(vyre_program *p, const struct vyre_ptx_options *opt, char **out_ptx,
                               size_t *out_len, struct vyre_error *err);
/* Bumped whenever emitted PTX changes for the same program (cache keys). */
#define VYRE_CODEGEN_VERSION 4u

/* ---- random programs (property tests, fuzzing) -------------------------- */

struct vyre_gen_options {
    uint32_t max_stmts;    /* top-level statements, default 8 */
    uint32_t max_depth;    /* expression depth, default 4 */
    bool allow_barriers;   /* emit shared memory + uniform barriers */
    bool allow_approx;     /* emit exp/sin/... */
    bool allow_invalid;    /* mutate into (usually) invalid programs */
    bool allow_subgroup;   /* emit subgroup ops in uniform control flow (docs/SUBGROUPS.md) */
    bool elementwise;      /* 1-D, only (gid x), accesses at the own index (ARCHITECTURE.md §5);
                              overrides allow_barriers and allow_subgroup */
    bool allow_opt_shapes; /* add the shapes the optimiser rewrites (docs/OPT.md) */
    bool allow_grid;       /* sections, grid barriers, grid loops and converge (§3) */
};
/* A deterministic program from a seed; valid unless allow_invalid. NULL on OOM. */
vyre_program *vyre_gen_random(uint64_t seed, const struct vyre_gen_options *opt);

/* ---- operator table ------------------------------------------------------- */

/* The unary and binary expression operators, one entry per op, in a fixed order
 * (the same table drives the validator, the interpreter, the PTX emitter and the
 * Lua DSL; docs/OPS.md). Strings are static. */
struct vyre_op_info {
    const char *name;            /* as in the text format: "add", "popcount" */
    unsigned arity;              /* 1 or 2 */
    unsigned operand_class;      /* index for vyre_op_class_name/_admits */
    const char *operands;        /* operand class: NUMERIC INT INT_OR_BOOL FLOAT BOOL ANY */
    const char *result;          /* result rule: "SAME" (the operand type) or "BOOL" */
    bool approximate;            /* GPU result within a ULP bound (docs/ULP.md) */
    const char *dsl_method;      /* Lua DSL method: "add", "band" for and, "bnot" for not */
    const char *dsl_metamethods; /* Lua metamethods, space separated: "__div __idiv"; "" */
};

size_t vyre_op_count(void);
/* Fills *out for op i (0-based); false when i >= vyre_op_count(). */
bool vyre_op_info(unsigned i, struct vyre_op_info *out);
size_t vyre_op_class_count(void);
/* "NUMERIC" ...; NULL when c >= vyre_op_class_count(). */
const char *vyre_op_class_name(unsigned c);
/* True when type t belongs to operand class c (binary ops: both operands of type t). */
bool vyre_op_class_admits(unsigned c, enum vyre_type t);

/* Words that cannot name a declaration, variable or program (literal spellings and
 * type names: "true", "inff32", "f32", ...): *n gets the count. */
const char *const *vyre_reserved_names(size_t *n);

/* Atomic statement ops ("add" ... "exchange", "cas"); NULL past the end. */
size_t vyre_atomic_count(void);
const char *vyre_atomic_op_name(unsigned i);

#ifdef __cplusplus
}
#endif
#endif
