/* validate_stmt.c — checking statements: lexical scopes and the one-namespace rule
 * (no shadowing, no reuse even in sibling blocks), variable slots in program order,
 * assignments only to let variables, stores and atomics only to writable memory,
 * break only inside a for, and the statement nesting limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate_int.h"

#define FIX_MISSING "rebuild the program; a builder call returned NULL (out of memory)"

static const char *tn(enum vyre_type t) { return vyre_type_name(t); }

static uint32_t new_slot(struct vyre_vv *v, const char *name, enum vyre_type t) {
    if (v->nslots == v->slots_cap) {
        uint32_t cap = v->slots_cap ? v->slots_cap * 2u : 32u;
        enum vyre_type *types = realloc(v->slot_types, cap * sizeof *types);
        if (!types) goto nomem;
        v->slot_types = types;
        char **names = realloc(v->slot_names, cap * sizeof *names);
        if (!names) goto nomem;
        v->slot_names = names;
        v->slots_cap = cap;
    }
    v->slot_types[v->nslots] = t;
    v->slot_names[v->nslots] = (char *)name;
    return v->nslots++;
nomem:
    v->nomem = v->full = true;
    return UINT32_MAX;
}

static void scope_push(struct vyre_vv *v, uint32_t entry) {
    if (v->nscope == v->scope_cap) {
        uint32_t cap = v->scope_cap ? v->scope_cap * 2u : 32u;
        uint32_t *s = realloc(v->scope, cap * sizeof *s);
        if (!s) {
            v->nomem = v->full = true;
            return;
        }
        v->scope = s;
        v->scope_cap = cap;
    }
    v->scope[v->nscope++] = entry;
}

/* Closes every variable declared since `mark`: later uses report out-of-scope,
 * later declarations of the same name report duplicate-name. */
static void scope_close(struct vyre_vv *v, uint32_t mark) {
    while (v->nscope > mark) v->names[v->scope[--v->nscope]].in_scope = false;
}

/* A grid statement ends the section before it: its variables are closed for good,
 * and a later use says why (vyre_vv_grid_scope). */
static void section_close(struct vyre_vv *v, uint32_t mark) {
    while (v->nscope > mark) {
        struct vyre_vv_name *n = &v->names[v->scope[--v->nscope]];
        n->in_scope = false;
        n->grid_closed = true;
    }
}

static const char *decl_kind_name(const struct vyre_decl *d) {
    switch (d->kind) {
    case VYRE_DECL_BUFFER: return "buffer";
    case VYRE_DECL_SHARED: return "shared array";
    case VYRE_DECL_PARAM: return "param";
    case VYRE_DECL_WORKLIST: return "worklist";
    }
    return "declaration";
}

/* Gives statement s (let, for, bound atomic) a new slot and enters its name. */
static void declare_var(struct vyre_vv *v, struct vyre_stmt *s, enum vyre_vv_name_kind kind,
                        enum vyre_type t) {
    const char *what = kind == VYRE_VV_LOOP ? "loop variable" : "variable";
    s->slot = new_slot(v, s->name, t);
    if (s->slot == UINT32_MAX) return;
    vyre_vv_check_ident(v, s->name, what);
    if (!s->name) return;
    uint32_t k = vyre_vv_lookup(v, s->name);
    if (k != UINT32_MAX) {
        const struct vyre_vv_name *n = &v->names[k];
        if (n->kind == VYRE_VV_DECL)
            vyre_vv_report(v, "shadowing", "rename the variable; names are unique in a program",
                           "'%.64s' is already the name of a %s (decls[%u])", s->name,
                           decl_kind_name(&v->p->decls[n->index]), n->index);
        else if (n->in_scope)
            vyre_vv_report(v, "shadowing",
                           "rename the variable, or assign the existing one with (set NAME ...)",
                           "'%.64s' shadows a variable of the same name declared earlier", s->name);
        else
            vyre_vv_report(
                v, "duplicate-name",
                "rename it; names are unique in the whole program, even in sibling blocks",
                "'%.64s' was already declared in another block", s->name);
        return;
    }
    if (vyre_vv_insert(v, s->name, kind, s->slot)) scope_push(v, v->nnames - 1u);
}

/* Reports a value of the wrong type at the child `seg`. */
static void want_type(struct vyre_vv *v, const char *seg, const struct vyre_expr *e,
                      enum vyre_type got, enum vyre_type want, const char *what) {
    if (got == VYRE_VOID || want == VYRE_VOID || got == want) return;
    char q[VYRE_VV_QUOTE], fix[96];
    size_t old = vyre_vv_push(v, "%s", seg);
    snprintf(fix, sizeof fix, "wrap the value in (cast %s ...)", tn(want));
    vyre_vv_report_cast(v, "type-mismatch", want, fix, "%s must be %s, got %s from %s", what,
                        tn(want), tn(got), vyre_vv_qe(e, q));
    vyre_vv_pop(v, old);
}

static void want_index(struct vyre_vv *v, const struct vyre_expr *e, enum vyre_type t) {
    if (t == VYRE_VOID || vyre_vv_index_type(t)) return;
    char q[VYRE_VV_QUOTE];
    size_t old = vyre_vv_push(v, "index");
    vyre_vv_report_cast(v, "index-type", VYRE_U32, "wrap the index in (cast u32 ...)",
                        "the index %s is %s; indices are u32 or i32", vyre_vv_qe(e, q), tn(t));
    vyre_vv_pop(v, old);
}

static enum vyre_type buf_type(const struct vyre_vv *v, uint32_t d) {
    if (d == UINT32_MAX) return VYRE_VOID;
    enum vyre_type t = v->p->decls[d].type;
    return (unsigned)t < VYRE_TYPE_COUNT ? t : VYRE_VOID;
}

static void check_set(struct vyre_vv *v, struct vyre_stmt *s, const char *q) {
    enum vyre_type t = vyre_vv_child(v, "value", s->value);
    s->slot = UINT32_MAX;
    if (!s->name) {
        vyre_vv_report(v, "missing-node", FIX_MISSING, "the set statement has no name");
        return;
    }
    uint32_t k = vyre_vv_lookup(v, s->name);
    if (k == UINT32_MAX) {
        vyre_vv_report(v, "undeclared-name", "declare it first with (let NAME value)",
                       "'%.64s' is not declared before %s", s->name, q);
        return;
    }
    const struct vyre_vv_name *n = &v->names[k];
    if (n->kind == VYRE_VV_DECL) {
        const struct vyre_decl *d = &v->p->decls[n->index];
        vyre_vv_report(v, "set-not-variable",
                       d->kind == VYRE_DECL_PARAM
                           ? "copy the param into a variable with (let NAME2 NAME) and set that"
                           : "write memory with (store NAME index value)",
                       "'%.64s' is a %s; set only assigns variables (in %s)", s->name,
                       decl_kind_name(d), q);
        return;
    }
    if (n->kind == VYRE_VV_LOOP) {
        vyre_vv_report(v, "set-loop-variable",
                       "use another variable, or change the loop's bounds or step",
                       "'%.64s' is a loop variable, which is read-only (in %s)", s->name, q);
        return;
    }
    if (!n->in_scope && n->grid_closed) {
        vyre_vv_grid_scope(v, s->name);
        return;
    }
    if (!n->in_scope) {
        vyre_vv_report(
            v, "out-of-scope", "declare the variable with let before the enclosing if/for",
            "'%.64s' is declared inside another block and is not visible here (in %s)", s->name, q);
        return;
    }
    s->slot = n->index;
    if (n->index < v->nslots)
        want_type(v, "value", s->value, t, v->slot_types[n->index], "the value");
}

static void check_store(struct vyre_vv *v, struct vyre_stmt *s, const char *q) {
    uint32_t d = vyre_vv_buffer(v, s->buf, q);
    s->decl = d;
    if (d != UINT32_MAX && v->p->decls[d].kind == VYRE_DECL_BUFFER &&
        v->p->decls[d].access == VYRE_ACCESS_READ)
        vyre_vv_report(v, "store-read-only", "declare the buffer with access write or read_write",
                       "'%.64s' is a read buffer and cannot be stored to (in %s)", s->buf, q);
    want_index(v, s->index, vyre_vv_child(v, "index", s->index));
    enum vyre_type t = vyre_vv_child(v, "value", s->value);
    want_type(v, "value", s->value, t, buf_type(v, d), "the stored value");
}

/* f32 has add (the hardware's atom.add.f32) and min/max (a compare-and-swap loop on the
 * GPU, docs/ARCHITECTURE.md §10); sub, the bitwise ops, exchange and cas stay integer-only. */
static bool atomic_type_ok(enum vyre_atomic_op op, enum vyre_type t) {
    return t == VYRE_U32 || t == VYRE_I32 || t == VYRE_U64 ||
           (t == VYRE_F32 &&
            (op == VYRE_ATOMIC_ADD || op == VYRE_ATOMIC_MIN || op == VYRE_ATOMIC_MAX));
}

static void check_atomic(struct vyre_vv *v, struct vyre_stmt *s, const char *q) {
    enum vyre_atomic_op op = s->atomic;
    bool op_ok = (unsigned)op < VYRE_ATOMIC_COUNT;
    if (!op_ok)
        vyre_vv_report(v, "invalid-op", "use add sub min max and or xor exchange or cas",
                       "atomic operation %d is unknown in %s", (int)op, q);
    uint32_t d = vyre_vv_buffer(v, s->buf, q);
    s->decl = d;
    enum vyre_type bt = buf_type(v, d);
    if (d != UINT32_MAX && v->p->decls[d].kind == VYRE_DECL_BUFFER &&
        v->p->decls[d].access == VYRE_ACCESS_READ)
        vyre_vv_report(v, "atomic-target", "declare the buffer with access write or read_write",
                       "atomics need a writable buffer or shared array; '%.64s' is read-only "
                       "(in %s)",
                       s->buf, q);
    if (op_ok && bt != VYRE_VOID && !atomic_type_ok(op, bt))
        vyre_vv_report(v, "atomic-type",
                       "use a u32, i32 or u64 buffer (f32 supports only add, min and max)",
                       "atomic %s on %s is not supported (in %s)", vyre_atomic_name(op), tn(bt), q);
    want_index(v, s->index, vyre_vv_child(v, "index", s->index));
    if (op == VYRE_ATOMIC_CAS) {
        if (!s->expected)
            vyre_vv_report(v, "atomic-operands",
                           "give cas an expected value: (atomic cas BUF I EXPECTED DESIRED)",
                           "atomic cas has no expected value (in %s)", q);
        else
            want_type(v, "expected", s->expected, vyre_vv_child(v, "expected", s->expected), bt,
                      "the expected value");
    } else if (s->expected) {
        vyre_vv_report(v, "atomic-operands", "drop the expected value, or use cas",
                       "only atomic cas takes an expected value (in %s)", q);
    }
    want_type(v, "value", s->value, vyre_vv_child(v, "value", s->value), bt, "the atomic's value");
    if (s->name) declare_var(v, s, VYRE_VV_ATOMIC_RES, bt);
    else s->slot = UINT32_MAX;
}

static void check_for(struct vyre_vv *v, struct vyre_stmt *s, unsigned depth) {
    static const char *const segs[3] = {"from", "to", "step"};
    struct vyre_expr *ex[3] = {s->from, s->to, s->step};
    enum vyre_type t[3];
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        t[i] = vyre_vv_child(v, segs[i], ex[i]);
        if (t[i] == VYRE_VOID) {
            ok = false;
        } else if (!vyre_type_is_int(t[i])) {
            char q[VYRE_VV_QUOTE];
            size_t old = vyre_vv_push(v, "%s", segs[i]);
            vyre_vv_report_cast(v, "loop-type", VYRE_U32,
                                "loop bounds are i32, u32, i64 or u64: use (cast u32 ...)",
                                "the loop %s %s is %s, not an integer", segs[i],
                                vyre_vv_qe(ex[i], q), tn(t[i]));
            vyre_vv_pop(v, old);
            ok = false;
        }
    }
    if (ok) {
        for (int i = 1; i < 3; i++) {
            if (t[i] == t[0]) continue;
            char q[VYRE_VV_QUOTE], fix[96];
            size_t old = vyre_vv_push(v, "%s", segs[i]);
            snprintf(fix, sizeof fix, "wrap it in (cast %s ...)", tn(t[0]));
            vyre_vv_report_cast(v, "type-mismatch", t[0], fix,
                                "the loop %s %s is %s but the start is %s", segs[i],
                                vyre_vv_qe(ex[i], q), tn(t[i]), tn(t[0]));
            vyre_vv_pop(v, old);
        }
    }
    uint32_t mark = v->nscope;
    declare_var(v, s, VYRE_VV_LOOP, vyre_type_is_int(t[0]) ? t[0] : VYRE_VOID);
    v->loop_depth++;
    vyre_vv_block(v, &s->then_, "body", depth + 1);
    v->loop_depth--;
    scope_close(v, mark);
}

/* (converge FLAG MAX body...): FLAG a global u32/i32/bool buffer the runtime may write,
 * MAX a u32 (its grid uniformity is validate_grid.c's business). */
static void check_converge(struct vyre_vv *v, struct vyre_stmt *s, const char *q, unsigned depth) {
    /* (converge W MAX ...) on a worklist W: each round ends by advancing W; the loop
     * stops after a round that pushed nothing (or overflowed W, or MAX rounds) */
    uint32_t w = vyre_vv_find_worklist(v, s->buf);
    uint32_t d = w != UINT32_MAX ? w : vyre_vv_buffer(v, s->buf, q);
    s->decl = d;
    if (d != UINT32_MAX && w == UINT32_MAX) {
        struct vyre_decl *dc = &v->p->decls[d];
        dc->nonempty = dc->kind == VYRE_DECL_BUFFER;
        bool word = dc->type == VYRE_U32 || dc->type == VYRE_I32 || dc->type == VYRE_BOOL;
        if (dc->kind != VYRE_DECL_BUFFER || dc->access == VYRE_ACCESS_READ || !word)
            vyre_vv_report(v, "converge-flag",
                           "declare the flag as (buffer NAME u32 read_write) (u32, i32 or bool, "
                           "access write or read_write): the loop zeroes FLAG[0] each round",
                           "the flag '%.64s' of %s must be a global u32, i32 or bool buffer that "
                           "can be written; it is a %s %s%s",
                           s->buf, q, vyre_type_name(dc->type),
                           dc->kind == VYRE_DECL_SHARED ? "shared array" : "buffer",
                           dc->kind == VYRE_DECL_BUFFER && dc->access == VYRE_ACCESS_READ
                               ? " with access read"
                               : "");
    }
    want_type(v, "value", s->value, vyre_vv_child(v, "value", s->value), VYRE_U32,
              "the round limit MAX");
    vyre_vv_block(v, &s->then_, "body", depth + 1);
}

static void check_stmt(struct vyre_vv *v, struct vyre_stmt *s, unsigned depth) {
    char q[VYRE_VV_QUOTE];
    vyre_vv_count(v);
    if (v->nodes_reported) return;
    if (!s) {
        vyre_vv_report(v, "missing-node", FIX_MISSING, "the statement is missing (NULL)");
        return;
    }
    vyre_vv_qs(s, q);
    if (depth > VYRE_MAX_NESTING) {
        vyre_vv_report(v, "limit-nesting",
                       "move inner blocks into separate programs or flatten "
                       "the conditions",
                       "statements nest deeper than %d levels at %s", VYRE_MAX_NESTING, q);
        return;
    }
    switch (s->kind) {
    case VYRE_ST_LET: declare_var(v, s, VYRE_VV_LET, vyre_vv_child(v, "value", s->value)); break;
    case VYRE_ST_SET: check_set(v, s, q); break;
    case VYRE_ST_STORE: check_store(v, s, q); break;
    case VYRE_ST_IF: {
        enum vyre_type t = vyre_vv_child(v, "cond", s->cond);
        if (t != VYRE_VOID && t != VYRE_BOOL) {
            char qc[VYRE_VV_QUOTE];
            size_t old = vyre_vv_push(v, "cond");
            vyre_vv_report(v, "condition-type", "compare it, e.g. (ne c 0u32)",
                           "the if condition %s is %s; it must be bool", vyre_vv_qe(s->cond, qc),
                           tn(t));
            vyre_vv_pop(v, old);
        }
        vyre_vv_block(v, &s->then_, "then", depth + 1);
        vyre_vv_block(v, &s->else_, "else", depth + 1);
        break;
    }
    case VYRE_ST_FOR: check_for(v, s, depth); break;
    case VYRE_ST_BREAK:
        if (!v->loop_depth)
            vyre_vv_report(v, "break-outside-loop",
                           "move the break into a for body, or use (return) to end the invocation",
                           "break is only allowed inside a for loop");
        break;
    case VYRE_ST_RETURN:
    case VYRE_ST_BARRIER:
        break; /* barriers are judged by the uniformity analysis (validate_flow.c) */
    case VYRE_ST_GRID_BARRIER: break; /* placement: validate_grid.c */
    case VYRE_ST_CONVERGE: check_converge(v, s, q, depth); break;
    case VYRE_ST_ATOMIC: check_atomic(v, s, q); break;
    case VYRE_ST_PUSH: vyre_vv_check_push(v, s, q); break;
    default:
        vyre_vv_report(v, "invalid-statement", FIX_MISSING, "statement kind %d is unknown",
                       (int)s->kind);
        break;
    }
}

void vyre_vv_block(struct vyre_vv *v, struct vyre_block *b, const char *seg, unsigned depth) {
    if (b->count && !b->items) {
        size_t old = vyre_vv_push(v, "%s", seg);
        vyre_vv_report(v, "missing-node", FIX_MISSING, "the statement list is missing");
        vyre_vv_pop(v, old);
        return;
    }
    uint32_t mark = v->nscope, section = v->nscope;
    /* Too deep: one problem for the block's first statement says it all. */
    uint32_t n = depth > VYRE_MAX_NESTING && b->count ? 1u : b->count;
    for (uint32_t i = 0; i < n && !v->full; i++) {
        size_t old = vyre_vv_push(v, "%s[%u]", seg, i);
        bool grid = b->items[i] && b->items[i]->grid;
        if (grid) section_close(v, section); /* a section ends at a grid statement */
        check_stmt(v, b->items[i], depth);
        if (grid) section = v->nscope;
        vyre_vv_pop(v, old);
    }
    scope_close(v, mark);
}
