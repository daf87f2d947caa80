/* ptx.h — private interface between the PTX emitter's files: the emission context,
 * virtual registers and the per-op templates. Only src/codegen includes it. */
#ifndef VYRE_PTX_H
#define VYRE_PTX_H

#include "ir.h"
#include "ptx_buf.h"

/* Register classes, each with its own counter (tinygrad style): predicates, 32-bit
 * integers, 64-bit integers, f32, f64. Declarations are written after the body. */
enum ptx_cls { PTX_P, PTX_R, PTX_RD, PTX_F, PTX_FD, PTX_NCLS };

/* A virtual register; `s` is its printable name ("%rd7"). */
struct ptx_reg {
    enum ptx_cls cls;
    uint32_t n;
    char s[16];
};

struct ptx_ctx {
    vyre_program *p;
    unsigned sm;
    struct vyre_error *err;
    enum vyre_status st;                  /* first failure wins */
    struct vyre_pbuf body;                /* the instructions; declarations are prepended */
    uint32_t next[PTX_NCLS];              /* next free register number per class */
    struct ptx_reg *slot_reg;             /* per variable slot */
    bool *slot_def;                       /* register already allocated for the slot */
    struct ptx_reg *decl_ptr;             /* per decl: global pointer (buffers) */
    struct ptx_reg *decl_len;             /* per decl: element count (buffers) */
    struct ptx_reg *decl_val;             /* per decl: value (params) */
    uint32_t loops[VYRE_MAX_NESTING + 1]; /* enclosing for-loop ids, for break */
    uint32_t nloops;
    /* Set at entry when the program has subgroup ops (ptx_subgroup.c): this lane's
     * index, the number of lanes present in its subgroup, and their member mask. */
    bool sg;
    struct ptx_reg sg_lane, sg_n, sg_mask;
    /* Set while the vector entry of an elementwise program is emitted (ptx_vec.c). */
    struct ptx_vec *vec;
    /* Programs with grid statements (ptx_grid.c): the cooperative kernel. in_section
     * while a section's statements are emitted (blocks below are plain blocks); the
     * runtime's scratch word, the virtual grid, the current virtual workgroup, the
     * "a section ran since the last barrier" predicate, shared offsets per decl in
     * the current section, and where a `return` goes. */
    bool grid, in_section;
    struct ptx_reg gs_scr, gs_ng[3], gs_nv, gs_nb, gs_wgid[3], gs_dirty, gs_tid0, gs_1d, gs_add;
    uint32_t *gs_off;
    uint32_t gs_smem, gs_label;
    char gs_ret[24];
    /* Debug mode (vyre_ptx_options.debug): the global address of the out-of-bounds
     * counters (two u64 per declaration: loads, then stores and atomics). */
    bool debug;
    struct ptx_reg oob;
    /* Worklists (ptx_worklist.c): header registers, and the NAME_wl entry's state. */
    struct ptx_wl *wl;
};

/* ---- ptx.c: context helpers ---------------------------------------------- */
VYRE_INTERNAL struct ptx_reg vyre_ptx_reg(struct ptx_ctx *c, enum ptx_cls cls);
VYRE_INTERNAL struct ptx_reg vyre_ptx_treg(struct ptx_ctx *c, enum vyre_type t);
/* One instruction line: tab, formatted text, ";\n". */
VYRE_INTERNAL void vyre_ptx_ins(struct ptx_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Records the first failure (status + message); later calls are ignored. */
VYRE_INTERNAL void vyre_ptx_fail(struct ptx_ctx *c, enum vyre_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Context of one entry for the validated, optimised program p; its arrays are freed by
 * vyre_ptx_ctx_free (also after a failed init). */
VYRE_INTERNAL enum vyre_status vyre_ptx_ctx_init(struct ptx_ctx *c, vyre_program *p, unsigned sm,
                                                 struct vyre_error *err);
VYRE_INTERNAL void vyre_ptx_ctx_free(struct ptx_ctx *c);
/* The entry's prologue (parameters, shared zero-fill) and a block of statements. */
VYRE_INTERNAL void vyre_ptx_prologue(struct ptx_ctx *c);
VYRE_INTERNAL void vyre_ptx_block(struct ptx_ctx *c, const struct vyre_block *b);
/* Appends `.visible .entry NAME(...)` with the §5 parameters (then `extra`, a whole
 * `.param` line, when not NULL), register declarations and c's body. */
VYRE_INTERNAL void vyre_ptx_entry(struct ptx_ctx *c, struct vyre_pbuf *out, const char *name,
                                  const char *extra);

/* ---- type helpers ---------------------------------------------------------- */
VYRE_INTERNAL enum ptx_cls vyre_ptx_cls(enum vyre_type t);
VYRE_INTERNAL const char *vyre_ptx_sfx(enum vyre_type t);  /* ".s32" ".u64" ".f32" ".pred" */
VYRE_INTERNAL const char *vyre_ptx_bsfx(enum vyre_type t); /* ".b32" ".b64" ".pred" */
/* An immediate of type t holding bits: "0x0000002a", "0f3F800000", "0d...". */
VYRE_INTERNAL void vyre_ptx_imm(enum vyre_type t, vyre_bits bits, char out[24]);

/* ---- ptx.c: statements (ptx_grid.c emits sections through these) ------------- */
VYRE_INTERNAL void vyre_ptx_stmt(struct ptx_ctx *c, const struct vyre_stmt *s);
VYRE_INTERNAL void vyre_ptx_block(struct ptx_ctx *c, const struct vyre_block *b);

/* ---- ptx_grid.c: grid barriers, converge, sections (docs/GRID.md) ----------- */
/* Extra entry parameters after the scalar params: scratch pointer, virtual grid. */
VYRE_INTERNAL void vyre_ptx_grid_params(struct ptx_ctx *c, struct vyre_pbuf *out, bool *first);
/* Module-level declarations: the shared window and the broadcast word. */
VYRE_INTERNAL void vyre_ptx_grid_decls(struct ptx_ctx *c, struct vyre_pbuf *out);
/* At entry (after the parameters are loaded): virtual grid, scratch, dirty = false. */
VYRE_INTERNAL void vyre_ptx_grid_prologue(struct ptx_ctx *c);
/* A block at grid level: its sections and grid statements. */
VYRE_INTERNAL void vyre_ptx_grid_block(struct ptx_ctx *c, const struct vyre_block *b);
/* grid_barrier / converge met as a statement (emitted by vyre_ptx_grid_block). */
VYRE_INTERNAL void vyre_ptx_grid_stmt(struct ptx_ctx *c, const struct vyre_stmt *s);
/* wgid, ngroups and gid of the virtual workgroup; NULL-class reg for other builtins. */
VYRE_INTERNAL bool vyre_ptx_grid_builtin(struct ptx_ctx *c, const struct vyre_expr *e,
                                         struct ptx_reg *out);
/* Address base of shared decl d in the current section (a %r register). */
VYRE_INTERNAL struct ptx_reg vyre_ptx_grid_shared(struct ptx_ctx *c, uint32_t decl);

/* ---- ptx_expr.c ------------------------------------------------------------ */
/* Evaluates e into a fresh (or variable) register of e's type class. */
VYRE_INTERNAL struct ptx_reg vyre_ptx_expr(struct ptx_ctx *c, const struct vyre_expr *e);
/* Address of element `idx` of decl d: %rd (global) or %r (shared). */
VYRE_INTERNAL struct ptx_reg vyre_ptx_addr(struct ptx_ctx *c, uint32_t decl, struct ptx_reg idx);
/* Predicate "idx < count of decl d" (the bounds guard). */
VYRE_INTERNAL struct ptx_reg vyre_ptx_in_range(struct ptx_ctx *c, uint32_t decl,
                                               struct ptx_reg idx);
/* Debug mode: counts one out-of-bounds access of decl (a load, or a store/atomic)
 * where the guard `ok` is false; nothing outside debug mode. */
VYRE_INTERNAL void vyre_ptx_count_oob(struct ptx_ctx *c, uint32_t decl, struct ptx_reg ok,
                                      bool store);
/* Normalises an index of type u32/i32 into a %r register (i32 bits read unsigned). */
VYRE_INTERNAL struct ptx_reg vyre_ptx_index(struct ptx_ctx *c, const struct vyre_expr *e);

/* ---- ptx_ops.c: exact op templates ------------------------------------------ */
VYRE_INTERNAL void vyre_ptx_unary(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t,
                                  struct ptx_reg d, struct ptx_reg a);
/* t is the operand type; d is a predicate for comparisons. */
VYRE_INTERNAL void vyre_ptx_binary(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t,
                                   struct ptx_reg d, struct ptx_reg a, struct ptx_reg b);
VYRE_INTERNAL void vyre_ptx_cast(struct ptx_ctx *c, enum vyre_type to, enum vyre_type from,
                                 struct ptx_reg d, struct ptx_reg a);

/* ---- ptx_subgroup.c: subgroup ops (docs/SUBGROUPS.md) ---------------------- */
/* At kernel entry, when the program has subgroup ops: sg_lane, sg_n and sg_mask. */
VYRE_INTERNAL void vyre_ptx_subgroup_prologue(struct ptx_ctx *c);
/* A VYRE_EX_SUBGROUP expression. */
VYRE_INTERNAL struct ptx_reg vyre_ptx_subgroup(struct ptx_ctx *c, const struct vyre_expr *e);

/* ---- ptx_vec.c: the vector entry of elementwise programs (ARCHITECTURE.md §5) ---- */
/* Appends NAME_v4 to out when p (validated, optimised) is elementwise. */
VYRE_INTERNAL enum vyre_status vyre_ptx_vec_emit(vyre_program *p, unsigned sm,
                                                 struct vyre_pbuf *out, struct vyre_error *err);
/* Hooks of the statement and expression lowering, called only while c->vec is set:
 * the own index of the invocation being emitted; a load or store at it (false: the
 * usual lowering applies); an if whose condition holds on the fast path (false: the
 * usual lowering); return, which ends only that invocation. */
VYRE_INTERNAL struct ptx_reg vyre_ptx_vec_gid(struct ptx_ctx *c);
VYRE_INTERNAL bool vyre_ptx_vec_load(struct ptx_ctx *c, const struct vyre_expr *e,
                                     struct ptx_reg *out);
VYRE_INTERNAL bool vyre_ptx_vec_store(struct ptx_ctx *c, const struct vyre_stmt *s);
VYRE_INTERNAL bool vyre_ptx_vec_if(struct ptx_ctx *c, const struct vyre_stmt *s);
VYRE_INTERNAL void vyre_ptx_vec_return(struct ptx_ctx *c);

/* ---- ptx_meta.c: the program's text as comments, for tools (the fake driver) ---- */
/* `// vyre.program N` and the N lines of c->p's canonical text (out->oom on failure). */
VYRE_INTERNAL void vyre_ptx_meta_program(struct ptx_ctx *c, struct vyre_pbuf *out);
/* `// vyre.entry NAME KIND[ debug]` before each entry (plain, grid, vector or worklist). */
VYRE_INTERNAL void vyre_ptx_meta_entry(const struct ptx_ctx *c, struct vyre_pbuf *out,
                                       const char *name);

/* ---- ptx_worklist.c: worklists (ARCHITECTURE.md §5) ------------------------- */
/* `.param .u64 w_NAME` per worklist, after the scalar params. */
VYRE_INTERNAL void vyre_ptx_wl_params(struct ptx_ctx *c, struct vyre_pbuf *out, bool *first);
/* At entry, after vyre_ptx_prologue: each worklist's header; its current items and
 * count become decl_ptr/decl_len, so load and len lower as for a buffer. */
VYRE_INTERNAL void vyre_ptx_wl_prologue(struct ptx_ctx *c);
VYRE_INTERNAL void vyre_ptx_wl_push(struct ptx_ctx *c, const struct vyre_stmt *s);
/* Programs with grid statements: re-reads every worklist's header into the registers
 * the prologue loaded (a converge on a worklist advances it between sections), and the
 * action of a converge round's barrier on worklist decl: unless the round overflowed,
 * advance it; *pushed gets "the round pushed something and did not overflow". */
VYRE_INTERNAL void vyre_ptx_wl_reload(struct ptx_ctx *c);
VYRE_INTERNAL void vyre_ptx_wl_advance(struct ptx_ctx *c, uint32_t decl, struct ptx_reg pushed);
/* In NAME_wl: wgid.x, ngroups.x and gid.x of the virtual workgroup (false: usual). */
VYRE_INTERNAL bool vyre_ptx_wl_builtin(struct ptx_ctx *c, const struct vyre_expr *e,
                                       struct ptx_reg *out);
/* Whether c emits NAME_wl (kind `worklist` of ptx_meta.c). */
VYRE_INTERNAL bool vyre_ptx_wl_is_entry(const struct ptx_ctx *c);
/* In NAME_wl: a return ends the virtual workgroup's invocation (false: not there). */
VYRE_INTERNAL bool vyre_ptx_wl_return(struct ptx_ctx *c);
/* Appends NAME_wl when p declares a worklist. */
VYRE_INTERNAL enum vyre_status vyre_ptx_wl_emit(vyre_program *p, unsigned sm, bool debug,
                                                struct vyre_pbuf *out, struct vyre_error *err);
VYRE_INTERNAL void vyre_ptx_wl_free(struct ptx_ctx *c);

/* ---- ptx_approx.c: approximate op templates ------------------------------- */
VYRE_INTERNAL void vyre_ptx_approx(struct ptx_ctx *c, enum vyre_op op, enum vyre_type t,
                                   struct ptx_reg d, struct ptx_reg a);

#endif
