/* ir.h — the program IR shared by every stage (builder, validator, text format,
 * interpreter, optimiser, PTX emitter). Nodes live in the program's arena and are
 * freed with it. Names are resolved by the validator: it fills every node's `type`,
 * every variable's `slot` and every buffer/param reference's `decl` index. */
#ifndef VYRE_IR_H
#define VYRE_IR_H

#include "vyre.h"
#include "ops.h"

#define VYRE_INTERNAL __attribute__((visibility("hidden")))

/* Limits of §2, checked by the validator (and by the parser where recursion is). */
#define VYRE_MAX_NESTING 64
#define VYRE_MAX_NODES 100000u
#define VYRE_MAX_EXPR_DEPTH 128
#define VYRE_MAX_NAME 64
#define VYRE_MAX_WORKGROUP 1024u /* x*y*z */
#define VYRE_MAX_WORKGROUP_Z 64u
#define VYRE_MAX_SHARED_BYTES 49152u

/* Operators of unary and binary expressions, generated from the table in ops.h
 * (one row per op, in enum order). Names come from vyre_op_name(). */
enum vyre_op {
#define VYRE_OP_ENUM_(ID, NAME, ARITY, CLASS, RESULT, APPROX, METHOD, MM) VYRE_OP_##ID,
    VYRE_OPS(VYRE_OP_ENUM_)
#undef VYRE_OP_ENUM_
        VYRE_OP_COUNT
};
/* Binary ops are [0, VYRE_OP_FIRST_UNARY), unary ops [VYRE_OP_FIRST_UNARY, VYRE_OP_COUNT):
 * the number of binary rows (ir.c asserts at compile time that they all come first). */
#define VYRE_OP_NBIN_(ID, NAME, ARITY, CLASS, RESULT, APPROX, METHOD, MM) +((ARITY) == 2)
#define VYRE_OP_FIRST_UNARY (0 VYRE_OPS(VYRE_OP_NBIN_)) /* an int constant, like VYRE_OP_NEG */

VYRE_INTERNAL const char *vyre_op_name(enum vyre_op op);
VYRE_INTERNAL bool vyre_op_from_name(const char *name, enum vyre_op *out);
VYRE_INTERNAL bool vyre_op_is_unary(enum vyre_op op);
VYRE_INTERNAL bool vyre_op_is_compare(enum vyre_op op); /* eq ne lt le gt ge */
VYRE_INTERNAL bool vyre_op_is_approx(enum vyre_op op);  /* exp exp2 log log2 sin cos tanh rsqrt */
/* Table columns (ops.h); an op outside the enum has arity 0 and admits no type. */
VYRE_INTERNAL unsigned vyre_op_arity(enum vyre_op op);
VYRE_INTERNAL enum vyre_op_class vyre_op_operands(enum vyre_op op);
VYRE_INTERNAL enum vyre_op_result vyre_op_result(enum vyre_op op);
VYRE_INTERNAL const char *vyre_op_class_str(enum vyre_op_class c);   /* "NUMERIC" */
VYRE_INTERNAL const char *vyre_op_result_str(enum vyre_op_result r); /* "SAME" */
/* True when type t belongs to class c. */
VYRE_INTERNAL bool vyre_op_class_has(enum vyre_op_class c, enum vyre_type t);
/* True when op takes operands of type t (binary: both of type t). */
VYRE_INTERNAL bool vyre_op_admits(enum vyre_op op, enum vyre_type t);
/* Type of (op a [b]) with operands of type t; VYRE_VOID when op does not admit t. */
VYRE_INTERNAL enum vyre_type vyre_op_result_type(enum vyre_op op, enum vyre_type t);

/* Atomic operations (statements). */
enum vyre_atomic_op {
    VYRE_ATOMIC_ADD,
    VYRE_ATOMIC_SUB,
    VYRE_ATOMIC_MIN,
    VYRE_ATOMIC_MAX,
    VYRE_ATOMIC_AND,
    VYRE_ATOMIC_OR,
    VYRE_ATOMIC_XOR,
    VYRE_ATOMIC_EXCHANGE,
    VYRE_ATOMIC_CAS,
    VYRE_ATOMIC_COUNT
};
VYRE_INTERNAL const char *vyre_atomic_name(enum vyre_atomic_op op);
VYRE_INTERNAL bool vyre_atomic_from_name(const char *name, enum vyre_atomic_op *out);

/* Subgroup (warp) operations, expressions of kind VYRE_EX_SUBGROUP; their meaning is
 * docs/SUBGROUPS.md. The text-format head is the name (subgroup_size, shuffle_xor, ...). */
enum vyre_subgroup {
    VYRE_SG_SIZE,         /* (subgroup_size): 32 */
    VYRE_SG_LANE,         /* (subgroup_lane): linear local id % 32 */
    VYRE_SG_BALLOT,       /* (ballot C): u32 mask of present lanes where C holds */
    VYRE_SG_ALL,          /* (subgroup_all C) */
    VYRE_SG_ANY,          /* (subgroup_any C) */
    VYRE_SG_SHUFFLE,      /* (shuffle V LANE) */
    VYRE_SG_SHUFFLE_XOR,  /* (shuffle_xor V MASK) */
    VYRE_SG_SHUFFLE_UP,   /* (shuffle_up V DELTA) */
    VYRE_SG_SHUFFLE_DOWN, /* (shuffle_down V DELTA) */
    VYRE_SG_REDUCE,       /* (subgroup_reduce OP V) */
    VYRE_SG_SCAN,         /* (subgroup_scan OP V), inclusive */
    VYRE_SG_MATCH_ANY,    /* (match_any V): u32 mask of present lanes with V's bits */
    VYRE_SG_COUNT
};
#define VYRE_SUBGROUP_WIDTH 32u
VYRE_INTERNAL const char *vyre_subgroup_name(enum vyre_subgroup k);
VYRE_INTERNAL bool vyre_subgroup_from_name(const char *name, enum vyre_subgroup *out);
/* Number of expression operands (0, 1 or 2; the OP of reduce/scan is not one). */
VYRE_INTERNAL unsigned vyre_subgroup_arity(enum vyre_subgroup k);
/* True for the ops that exchange values between lanes (everything but size and
 * lane): they need uniform control flow. */
VYRE_INTERNAL bool vyre_subgroup_communicates(enum vyre_subgroup k);
/* True when OP may combine in subgroup_reduce/subgroup_scan: add min max on numeric
 * types, and or xor on integers. */
VYRE_INTERNAL bool vyre_subgroup_op_admits(enum vyre_op op, enum vyre_type t);
VYRE_INTERNAL bool vyre_subgroup_is_combiner(enum vyre_op op); /* add min max and or xor */

/* Invocation ids and sizes: (gid x), (lid y), (wgid z), (wgsize x), (ngroups x). */
enum vyre_builtin { VYRE_GID, VYRE_LID, VYRE_WGID, VYRE_WGSIZE, VYRE_NGROUPS, VYRE_BUILTIN_COUNT };
VYRE_INTERNAL const char *vyre_builtin_name(enum vyre_builtin b);

struct vyre_decl {
    enum vyre_decl_kind kind;
    char *name;
    enum vyre_type type;
    enum vyre_access access; /* buffers only */
    uint32_t count;          /* buffers: 0 = sized at dispatch; shared: element count */
    uint32_t slot;           /* index among declarations of the same kind (set by builder) */
    /* A converge flag (set by the validator): the loop reads FLAG[0], so both backends
     * refuse to bind it with no elements. */
    bool nonempty;
};

enum vyre_expr_kind {
    VYRE_EX_LIT,     /* lit.type, lit.bits */
    VYRE_EX_NAME,    /* a variable or param: name.name; resolved by validator */
    VYRE_EX_BUILTIN, /* builtin.which, builtin.axis */
    VYRE_EX_LOAD,    /* access.buf, access.index */
    VYRE_EX_LEN,     /* access.buf */
    VYRE_EX_UNARY,   /* op, a[0] */
    VYRE_EX_BINARY,  /* op, a[0], a[1] */
    VYRE_EX_SELECT,  /* a[0] cond, a[1] then, a[2] else */
    VYRE_EX_CAST,    /* to, a[0] */
    VYRE_EX_BITCAST, /* to, a[0] */
    VYRE_EX_FMA,     /* a[0]*a[1]+a[2] */
    VYRE_EX_SUBGROUP /* sg, op (reduce/scan), a[0] value or condition, a[1] lane/mask/delta */
};

/* What a NAME expression (or a buffer name) resolved to. */
enum vyre_ref_kind {
    VYRE_REF_NONE,
    VYRE_REF_VAR,
    VYRE_REF_PARAM,
    VYRE_REF_BUFFER,
    VYRE_REF_SHARED
};

struct vyre_expr {
    enum vyre_expr_kind kind;
    enum vyre_type type; /* VYRE_VOID until validated (literals: their type) */
    uint32_t id;         /* unique per program, in creation order */
    union {
        struct {
            vyre_bits bits;
        } lit;
        struct {
            char *name;
            enum vyre_ref_kind ref; /* resolved: VAR or PARAM */
            uint32_t index;         /* VAR: slot; PARAM: decl index in p->decls */
        } name;
        struct {
            enum vyre_builtin which;
            uint8_t axis;
        } builtin;
        struct {
            char *buf;
            uint32_t decl;           /* resolved: index in p->decls */
            struct vyre_expr *index; /* NULL for LEN */
            bool in_bounds;          /* set by the bounds-check pass: no check needed */
        } access;
        struct {
            enum vyre_op op;
            enum vyre_type to;     /* CAST / BITCAST target */
            enum vyre_subgroup sg; /* SUBGROUP: which one; op is its combiner or COUNT */
            struct vyre_expr *a[3];
        } op;
    } u;
};

enum vyre_stmt_kind {
    VYRE_ST_LET,   /* name, value */
    VYRE_ST_SET,   /* name, value */
    VYRE_ST_STORE, /* buf, index, value */
    VYRE_ST_IF,    /* cond, then_, else_ */
    VYRE_ST_FOR,   /* name (loop var), from, to, step, body */
    VYRE_ST_BREAK,
    VYRE_ST_RETURN,
    VYRE_ST_BARRIER,
    VYRE_ST_ATOMIC,       /* atomic op on buf[index] with value (and expected for cas);
                        name = variable bound to the old value, or NULL */
    VYRE_ST_GRID_BARRIER, /* the whole dispatch meets here (ARCHITECTURE.md §3) */
    VYRE_ST_CONVERGE,     /* buf = FLAG (decl), value = MAX, then_ = the round's body */
    VYRE_ST_PUSH          /* buf = worklist (decl), value: appended to the next round's items */
};

struct vyre_block {
    struct vyre_stmt **items;
    uint32_t count;
    uint32_t cap;
};

struct vyre_stmt {
    enum vyre_stmt_kind kind;
    uint32_t id;
    char *name;     /* LET/SET/FOR variable; ATOMIC result (NULL if unbound) */
    uint32_t slot;  /* resolved variable slot for LET/SET/FOR/bound ATOMIC */
    char *buf;      /* STORE/ATOMIC buffer name */
    uint32_t decl;  /* resolved buffer decl index */
    bool in_bounds; /* STORE/ATOMIC: set by the bounds-check pass */
    bool grid;      /* set by the validator: a grid statement (holds a grid barrier) */
    enum vyre_atomic_op atomic;
    struct vyre_expr *value;            /* LET/SET/STORE value; ATOMIC value (cas: desired) */
    struct vyre_expr *index;            /* STORE/ATOMIC index */
    struct vyre_expr *expected;         /* ATOMIC cas only */
    struct vyre_expr *cond;             /* IF */
    struct vyre_expr *from, *to, *step; /* FOR (step never NULL after build) */
    struct vyre_block then_, else_;     /* IF; FOR uses then_ as its body */
};

struct vyre_arena;

struct vyre_program {
    struct vyre_arena *arena;
    char *name;
    uint32_t workgroup[3];
    struct vyre_decl *decls;
    uint32_t ndecls, decls_cap;
    uint32_t nbuffers, nshared, nparams, nworklists;
    struct vyre_block body;
    uint32_t next_id; /* node ids handed out so far */
    bool oom;         /* an allocation failed while building */
    /* Filled by vyre_validate on success: */
    bool validated;
    bool has_grid; /* the body holds grid statements (§3, grid barriers) */
    uint32_t nslots;
    enum vyre_type *slot_types; /* per variable slot */
    char **slot_names;
};

/* ---- arena -------------------------------------------------------------- */
VYRE_INTERNAL void *vyre_arena_alloc(struct vyre_program *p, size_t size); /* zeroed */
VYRE_INTERNAL char *vyre_arena_strdup(struct vyre_program *p, const char *s);

/* ---- builder -------------------------------------------------------------
 * Every builder call works on a program that may later prove invalid: names are not
 * checked here. Each returns NULL (and sets p->oom) only when allocation fails. Any
 * builder call clears p->validated. */
VYRE_INTERNAL vyre_program *vyre_program_new(const char *name, uint32_t wx, uint32_t wy,
                                             uint32_t wz);
VYRE_INTERNAL struct vyre_decl *vyre_ir_buffer(vyre_program *p, const char *name, enum vyre_type t,
                                               enum vyre_access access, uint32_t count);
VYRE_INTERNAL struct vyre_decl *vyre_ir_shared(vyre_program *p, const char *name, enum vyre_type t,
                                               uint32_t count);
VYRE_INTERNAL struct vyre_decl *vyre_ir_param(vyre_program *p, const char *name, enum vyre_type t);

VYRE_INTERNAL struct vyre_expr *vyre_ir_lit(vyre_program *p, enum vyre_type t, vyre_bits bits);
VYRE_INTERNAL struct vyre_expr *vyre_ir_name(vyre_program *p, const char *name);
VYRE_INTERNAL struct vyre_expr *vyre_ir_builtin(vyre_program *p, enum vyre_builtin b,
                                                unsigned axis);
VYRE_INTERNAL struct vyre_expr *vyre_ir_load(vyre_program *p, const char *buf,
                                             struct vyre_expr *index);
VYRE_INTERNAL struct vyre_expr *vyre_ir_len(vyre_program *p, const char *buf);
VYRE_INTERNAL struct vyre_expr *vyre_ir_unary(vyre_program *p, enum vyre_op op,
                                              struct vyre_expr *a);
VYRE_INTERNAL struct vyre_expr *vyre_ir_binary(vyre_program *p, enum vyre_op op,
                                               struct vyre_expr *a, struct vyre_expr *b);
VYRE_INTERNAL struct vyre_expr *vyre_ir_select(vyre_program *p, struct vyre_expr *c,
                                               struct vyre_expr *a, struct vyre_expr *b);
VYRE_INTERNAL struct vyre_expr *vyre_ir_cast(vyre_program *p, enum vyre_type to,
                                             struct vyre_expr *a);
VYRE_INTERNAL struct vyre_expr *vyre_ir_bitcast(vyre_program *p, enum vyre_type to,
                                                struct vyre_expr *a);
VYRE_INTERNAL struct vyre_expr *vyre_ir_fma(vyre_program *p, struct vyre_expr *a,
                                            struct vyre_expr *b, struct vyre_expr *c);
/* A subgroup op; op is the combiner of reduce/scan (VYRE_OP_COUNT otherwise), a and b
 * the operands its arity asks for (NULL beyond). */
VYRE_INTERNAL struct vyre_expr *vyre_ir_subgroup(vyre_program *p, enum vyre_subgroup k,
                                                 enum vyre_op op, struct vyre_expr *a,
                                                 struct vyre_expr *b);

VYRE_INTERNAL struct vyre_stmt *vyre_ir_let(vyre_program *p, const char *name, struct vyre_expr *v);
VYRE_INTERNAL struct vyre_stmt *vyre_ir_set(vyre_program *p, const char *name, struct vyre_expr *v);
VYRE_INTERNAL struct vyre_stmt *vyre_ir_store(vyre_program *p, const char *buf,
                                              struct vyre_expr *index, struct vyre_expr *v);
VYRE_INTERNAL struct vyre_stmt *vyre_ir_if(vyre_program *p, struct vyre_expr *cond);
/* step NULL means 1 of from's literal type (only possible when `from` is a literal;
 * otherwise the caller must pass a step). */
VYRE_INTERNAL struct vyre_stmt *vyre_ir_for(vyre_program *p, const char *var,
                                            struct vyre_expr *from, struct vyre_expr *to,
                                            struct vyre_expr *step);
VYRE_INTERNAL struct vyre_stmt *vyre_ir_simple(vyre_program *p,
                                               enum vyre_stmt_kind k); /* break/return/barrier */
/* result may be NULL; expected only for CAS (NULL otherwise). */
VYRE_INTERNAL struct vyre_stmt *vyre_ir_atomic(vyre_program *p, const char *result,
                                               enum vyre_atomic_op op, const char *buf,
                                               struct vyre_expr *index, struct vyre_expr *expected,
                                               struct vyre_expr *value);
/* (converge FLAG MAX body...): the body goes into the statement's then_ block. */
VYRE_INTERNAL struct vyre_stmt *vyre_ir_converge(vyre_program *p, const char *flag,
                                                 struct vyre_expr *max);
/* (push WORKLIST value); (worklist NAME TYPE). */
VYRE_INTERNAL struct vyre_stmt *vyre_ir_push_item(vyre_program *p, const char *wl,
                                                  struct vyre_expr *v);
VYRE_INTERNAL struct vyre_decl *vyre_ir_worklist(vyre_program *p, const char *name,
                                                 enum vyre_type t);
/* True when p declares a worklist. */
VYRE_INTERNAL bool vyre_ir_has_worklist(const vyre_program *p);
/* true for the statements that own blocks: if (then_, else_), for and converge (then_). */
VYRE_INTERNAL bool vyre_stmt_has_blocks(const struct vyre_stmt *s);
/* Appends; returns false on OOM. */
VYRE_INTERNAL bool vyre_ir_push(vyre_program *p, struct vyre_block *b, struct vyre_stmt *s);

/* Finds a declaration by name; NULL if none. */
VYRE_INTERNAL struct vyre_decl *vyre_ir_find_decl(const vyre_program *p, const char *name);
/* The operand expressions of e in order (a load's index; an op's a[0..2]; nothing for
 * leaves), written to out; returns how many. One place knows which kinds have which
 * children, so every walk over expressions agrees. */
VYRE_INTERNAL unsigned vyre_expr_operands(const struct vyre_expr *e, struct vyre_expr *out[3]);

/* Deep structural equality of expressions / blocks (names, types, literal bits). */
VYRE_INTERNAL bool vyre_ir_expr_equal(const struct vyre_expr *a, const struct vyre_expr *b);
VYRE_INTERNAL bool vyre_ir_block_equal(const struct vyre_block *a, const struct vyre_block *b);

/* Canonical text of one expression / statement (for messages and PTX comments).
 * Written into buf (truncated with "..." if longer); returns buf. */
VYRE_INTERNAL char *vyre_expr_text(const struct vyre_expr *e, char *buf, size_t size);
VYRE_INTERNAL char *vyre_stmt_text(const struct vyre_stmt *s, char *buf, size_t size);

/* Text of a program holding p's declarations, extra declaration text and statements
 * [first, first + count) of b, named name (text_print.c; caller frees with free()). */
VYRE_INTERNAL enum vyre_status vyre_text_print_part(const vyre_program *p, const char *name,
                                                    const char *extra, const struct vyre_block *b,
                                                    uint32_t first, uint32_t count, char **out);

/* Shared memory of a program with grid statements (shared_layout.c), as its PTX lays it
 * out: vyre_shared_section places the arrays statements [first, first + count) of b use
 * (byte offsets into off_out[decl] when not NULL; arrays of exclusive branches overlap)
 * and returns the section's bytes; vyre_shared_grid_bytes is the whole window (largest
 * section) plus the grid barrier's word. Needs resolved declaration indices and the
 * validator's grid marks. *oom is set when memory ran out. */
#define VYRE_GRID_SHARED_WORD 4u /* ptx_grid.c's vy_word, after the 8-aligned window */
VYRE_INTERNAL uint64_t vyre_shared_section(const vyre_program *p, const struct vyre_block *b,
                                           uint32_t first, uint32_t count, uint64_t *off_out,
                                           bool *oom);
VYRE_INTERNAL uint64_t vyre_shared_grid_bytes(const vyre_program *p, bool *oom);
/* Marks used[decl] for every shared array statements [first, first + count) of b use
 * (load, store, atomic or len). */
VYRE_INTERNAL void vyre_shared_used(const vyre_program *p, const struct vyre_block *b,
                                    uint32_t first, uint32_t count, bool *used);

/* Ensures the program is validated; on failure formats all problems into err. */
VYRE_INTERNAL enum vyre_status vyre_ensure_valid(vyre_program *p, struct vyre_error *err);

#endif
