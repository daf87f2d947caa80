/* validate_int.h — private state shared by the validator's files: validate.c (entry
 * points, problem list, paths, name table, declarations), validate_expr.c (expression
 * typing), validate_stmt.c (statements, scopes, slots) and validate_flow.c (the
 * uniformity analysis that decides whether a barrier is legal). */
#ifndef VYRE_VALIDATE_INT_H
#define VYRE_VALIDATE_INT_H

#include "ir.h"

/* Problems kept before the list ends with one "too-many-problems" entry. */
#define VYRE_MAX_PROBLEMS 200u
/* Length of an internal path; problem paths are truncated to vyre_problem.path. */
#define VYRE_VV_PATH 8192u
/* Characters of canonical text quoted in a message. */
#define VYRE_VV_QUOTE 160u

/* What a name in the program's single namespace stands for. */
enum vyre_vv_name_kind {
    VYRE_VV_DECL,      /* buffer, shared array or param: index = decl index */
    VYRE_VV_LET,       /* let variable: index = slot */
    VYRE_VV_LOOP,      /* for variable (read-only): index = slot */
    VYRE_VV_ATOMIC_RES /* variable bound to an atomic's old value: index = slot */
};

struct vyre_vv_name {
    const char *name;
    enum vyre_vv_name_kind kind;
    uint32_t index;
    bool in_scope;    /* declarations always; variables while their block is open */
    bool grid_closed; /* a variable of an earlier section (closed by a grid statement) */
};

struct vyre_vv {
    vyre_program *p;
    struct vyre_problems *probs;
    bool nomem; /* the validator's own allocation failed */
    bool full;  /* the problem list reached its cap: stop walking */

    char path[VYRE_VV_PATH];
    size_t plen;

    /* Name table: entries plus an open-addressing index (entry + 1, 0 = empty). */
    struct vyre_vv_name *names;
    uint32_t nnames, names_cap;
    uint32_t *table;
    uint32_t table_cap; /* power of two */

    /* Open scopes: name-entry indices of variables, in declaration order. */
    uint32_t *scope;
    uint32_t nscope, scope_cap;

    /* Variable slots in program order. */
    enum vyre_type *slot_types;
    char **slot_names;
    uint32_t nslots, slots_cap;

    uint32_t loop_depth;
    bool depth_reported; /* limit-expr-depth already said for this statement operand */
    uint64_t nodes;
    bool nodes_reported;
};

/* ---- validate.c ------------------------------------------------------------- */
/* Records a problem at the current path (message and fix are formatted by the
 * caller; the message is printf-formatted here). */
VYRE_INTERNAL void vyre_vv_report(struct vyre_vv *v, const char *code, const char *fix,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same for a problem a cast to type `cast` fixes (recorded in vyre_problem.cast). */
VYRE_INTERNAL void vyre_vv_report_cast(struct vyre_vv *v, const char *code, enum vyre_type cast,
                                       const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Appends ".seg" (or "seg" at the start) to the path; returns the old length. */
VYRE_INTERNAL size_t vyre_vv_push(struct vyre_vv *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
VYRE_INTERNAL void vyre_vv_pop(struct vyre_vv *v, size_t len);
/* Canonical text of a node, truncated for messages (NULL-safe). */
VYRE_INTERNAL const char *vyre_vv_qe(const struct vyre_expr *e, char *buf);
VYRE_INTERNAL const char *vyre_vv_qs(const struct vyre_stmt *s, char *buf);
/* Name table. Lookup returns the entry index or UINT32_MAX. */
VYRE_INTERNAL uint32_t vyre_vv_lookup(const struct vyre_vv *v, const char *name);
VYRE_INTERNAL bool vyre_vv_insert(struct vyre_vv *v, const char *name, enum vyre_vv_name_kind kind,
                                  uint32_t index);
/* Checks identifier syntax, length and reserved words; reports at the current path.
 * `what` names the thing ("variable", "buffer", ...). Returns true when usable. */
VYRE_INTERNAL bool vyre_vv_check_ident(struct vyre_vv *v, const char *name, const char *what);
/* Counts one node; reports "limit-nodes" once. */
VYRE_INTERNAL void vyre_vv_count(struct vyre_vv *v);

/* ---- validate_expr.c ---------------------------------------------------------- */
/* Types expression e (at depth `depth`, the root being 1) under the current path,
 * resolving names and buffers; returns its type, VYRE_VOID after a problem (no
 * second problem is reported for an expression whose operand already failed). */
VYRE_INTERNAL enum vyre_type vyre_vv_expr(struct vyre_vv *v, struct vyre_expr *e, unsigned depth);
/* Same, for the child `seg` of the current node. */
VYRE_INTERNAL enum vyre_type vyre_vv_child(struct vyre_vv *v, const char *seg, struct vyre_expr *e);
/* Resolves a buffer/shared name used by load/len/store/atomic; reports and returns
 * UINT32_MAX when it names nothing usable. `quote` is the using node's text. */
VYRE_INTERNAL uint32_t vyre_vv_buffer(struct vyre_vv *v, const char *name, const char *quote);
/* True for the index types u32/i32. */
VYRE_INTERNAL bool vyre_vv_index_type(enum vyre_type t);
/* validate_worklist.c: the worklist rules. */
VYRE_INTERNAL void vyre_vv_worklist_decl(struct vyre_vv *v, const struct vyre_decl *d);
/* The decl index of the worklist named name, or UINT32_MAX (reports nothing). */
VYRE_INTERNAL uint32_t vyre_vv_find_worklist(const struct vyre_vv *v, const char *name);
VYRE_INTERNAL void vyre_vv_check_push(struct vyre_vv *v, struct vyre_stmt *s, const char *q);
VYRE_INTERNAL void vyre_vv_worklist_rules(struct vyre_vv *v);

/* ---- validate_stmt.c ------------------------------------------------------------- */
VYRE_INTERNAL void vyre_vv_block(struct vyre_vv *v, struct vyre_block *b, const char *seg,
                                 unsigned depth);

/* ---- validate_grid.c ------------------------------------------------------------- */
/* Before the walk: marks every grid statement (s->grid) and p->has_grid. */
VYRE_INTERNAL void vyre_vv_grid_mark(struct vyre_vv *v);
/* After the walk (names resolved): grid-level placement and uniformity, grid-break. */
VYRE_INTERNAL void vyre_vv_grid_check(struct vyre_vv *v);
/* The message and fix of a use of a variable that a grid statement closed. */
VYRE_INTERNAL void vyre_vv_grid_scope(struct vyre_vv *v, const char *name);

/* ---- validate_flow.c ------------------------------------------------------------- */
/* Uniformity analysis over the resolved program; reports "barrier-divergent". */
VYRE_INTERNAL void vyre_vv_flow(struct vyre_vv *v);

#endif
