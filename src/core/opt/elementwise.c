/* elementwise.c — the elementwise analysis behind the vector entry (elementwise.h,
 * docs/ARCHITECTURE.md §5). Two walks over a validated program:
 *
 * 1. Eligibility, over every statement: the rules of elementwise.h. The own-index
 *    variables (lets of the own index never `set`) are found in program order, which
 *    is also declaration order. Every buffer accessed at the own index anywhere gets
 *    VYRE_EW_GID, and the X of every guard (lt i X) in an if (i the own index, X a
 *    buffer's len or a u32 param) VYRE_EW_LIMIT: the vector entry's fast path runs only
 *    where four consecutive invocations are below all of those counts and values, so
 *    own-index accesses need no check there and such guards hold.
 *
 * 2. Vector roles, over what runs on that fast path: an `if` whose condition is
 *    fast-true (vyre_ew_fast_true) runs its then-block only. A buffer may be loaded
 *    as one vector before the four invocations run (VLOAD) unless some own-index load
 *    of it can follow an own-index store to it in program order (a store inside a
 *    loop counts as preceding the whole loop body). It may be stored as one vector
 *    after they ran (VSTORE) when every store to it is unconditional on the fast path
 *    (top level, or inside fast-true ifs only; never in a loop, never after a `return`
 *    anywhere before it) and no own-index load of it follows a store: every invocation
 *    then stores it, the last store wins, and nothing reads the element in between.
 * Invocations of an elementwise program touch disjoint elements, so running four of
 * them one after the other, with the vector accesses hoisted as above, gives what four
 * separate invocations give. Reading one element through two declarations bound to the
 * same buffer is outside this (as for ld.global.nc, §3: it is a race unless each
 * invocation reads only what it alone writes, and then the own index is that element). */
#include "elementwise.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-declaration state of the roles walk. */
enum { S_LOAD = 1, S_STORE = 2, S_STORED = 4, S_NO_VLOAD = 8, S_NO_VSTORE = 16 };

struct ew {
    const vyre_program *p;
    struct vyre_ew *out;
    bool *mutated;  /* per slot: target of some `set` */
    uint8_t *state; /* per declaration: S_* */
    bool returned;  /* a `return` may have run (roles walk) */
};

static void reject(struct ew *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(struct ew *w, const char *fmt, ...) {
    if (!w->out->ok) return;
    w->out->ok = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->out->why, sizeof w->out->why, fmt, ap);
    va_end(ap);
}

static bool is_word(enum vyre_type t) { return t == VYRE_U32 || t == VYRE_I32; }

bool vyre_ew_is_gid(const struct vyre_ew *ew, const struct vyre_expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case VYRE_EX_BUILTIN: return e->u.builtin.which == VYRE_GID && e->u.builtin.axis == 0;
    case VYRE_EX_NAME:
        return e->u.name.ref == VYRE_REF_VAR && ew->gid_slot && ew->gid_slot[e->u.name.index];
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST: /* between u32 and i32 both keep the 32 bits */
        return is_word(e->type) && is_word(e->u.op.a[0]->type) && vyre_ew_is_gid(ew, e->u.op.a[0]);
    default: return false;
    }
}

/* The declaration of X in a guard (lt i X): a global buffer's len or a u32 param, when i
 * is the own index (u32); else UINT32_MAX. */
static uint32_t limit_decl(const struct vyre_ew *ew, const vyre_program *p,
                           const struct vyre_expr *i, const struct vyre_expr *x) {
    if (!vyre_ew_is_gid(ew, i) || i->type != VYRE_U32) return UINT32_MAX;
    uint32_t d = UINT32_MAX;
    if (x->kind == VYRE_EX_LEN) d = x->u.access.decl;
    if (x->kind == VYRE_EX_NAME && x->u.name.ref == VYRE_REF_PARAM && x->type == VYRE_U32)
        d = x->u.name.index;
    if (d >= p->ndecls || p->decls[d].kind == VYRE_DECL_SHARED) return UINT32_MAX;
    return d;
}

static bool gid_below(const struct vyre_ew *ew, const vyre_program *p, const struct vyre_expr *i,
                      const struct vyre_expr *x) {
    uint32_t d = limit_decl(ew, p, i, x);
    return d != UINT32_MAX && (ew->role[d] & (VYRE_EW_GID | VYRE_EW_LIMIT));
}

bool vyre_ew_fast_true(const struct vyre_ew *ew, const vyre_program *p, const struct vyre_expr *c) {
    if (!c || c->kind != VYRE_EX_BINARY || !ew->role) return false;
    const struct vyre_expr *a = c->u.op.a[0], *b = c->u.op.a[1];
    switch (c->u.op.op) {
    case VYRE_OP_LAND: return vyre_ew_fast_true(ew, p, a) && vyre_ew_fast_true(ew, p, b);
    case VYRE_OP_LT: return gid_below(ew, p, a, b);
    case VYRE_OP_GT: return gid_below(ew, p, b, a);
    default: return false;
    }
}

/* ---- walk 1: eligibility -------------------------------------------------------- */

static void find_sets(struct ew *w, const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_SET) w->mutated[s->slot] = true;
        if (s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR) find_sets(w, &s->then_);
        if (s->kind == VYRE_ST_IF) find_sets(w, &s->else_);
    }
}

/* Gives VYRE_EW_LIMIT to X of every guard (lt i X) / (gt X i) in a land-chain. */
static void find_limits(struct ew *w, const struct vyre_expr *c) {
    if (!c || c->kind != VYRE_EX_BINARY) return;
    const struct vyre_expr *a = c->u.op.a[0], *b = c->u.op.a[1];
    uint32_t d = UINT32_MAX;
    if (c->u.op.op == VYRE_OP_LAND) {
        find_limits(w, a);
        find_limits(w, b);
    }
    if (c->u.op.op == VYRE_OP_LT) d = limit_decl(w->out, w->p, a, b);
    if (c->u.op.op == VYRE_OP_GT) d = limit_decl(w->out, w->p, b, a);
    if (d != UINT32_MAX) w->out->role[d] |= VYRE_EW_LIMIT;
}

static void check_expr(struct ew *w, const struct vyre_expr *e) {
    if (!e) return;
    char text[64];
    switch (e->kind) {
    case VYRE_EX_BUILTIN:
        if (!vyre_ew_is_gid(w->out, e)) reject(w, "reads %s", vyre_expr_text(e, text, sizeof text));
        break;
    case VYRE_EX_SUBGROUP:
        reject(w, "uses the subgroup operation %s", vyre_subgroup_name(e->u.op.sg));
        break;
    case VYRE_EX_LOAD: {
        const struct vyre_decl *d = &w->p->decls[e->u.access.decl];
        if (vyre_ew_is_gid(w->out, e->u.access.index))
            w->out->role[e->u.access.decl] |= VYRE_EW_GID;
        else if (d->access != VYRE_ACCESS_READ)
            reject(w, "loads %s (%s) at %s, not at its own index", d->name,
                   vyre_access_name(d->access),
                   vyre_expr_text(e->u.access.index, text, sizeof text));
        break;
    }
    default: break;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) check_expr(w, ops[i]);
}

static void check_block(struct ew *w, const struct vyre_block *b) {
    char text[64];
    for (uint32_t i = 0; i < b->count && w->out->ok; i++) {
        const struct vyre_stmt *s = b->items[i];
        switch (s->kind) {
        case VYRE_ST_LET:
            check_expr(w, s->value);
            if (!w->mutated[s->slot] && vyre_ew_is_gid(w->out, s->value))
                w->out->gid_slot[s->slot] = true;
            break;
        case VYRE_ST_SET: check_expr(w, s->value); break;
        case VYRE_ST_STORE:
            check_expr(w, s->index);
            check_expr(w, s->value);
            if (vyre_ew_is_gid(w->out, s->index)) w->out->role[s->decl] |= VYRE_EW_GID;
            else
                reject(w, "stores to %s at %s, not at its own index", w->p->decls[s->decl].name,
                       vyre_expr_text(s->index, text, sizeof text));
            break;
        case VYRE_ST_IF:
            check_expr(w, s->cond);
            find_limits(w, s->cond);
            check_block(w, &s->then_);
            check_block(w, &s->else_);
            break;
        case VYRE_ST_FOR:
            check_expr(w, s->from);
            check_expr(w, s->to);
            check_expr(w, s->step);
            check_block(w, &s->then_);
            break;
        case VYRE_ST_BARRIER: reject(w, "has a barrier"); break;
        case VYRE_ST_ATOMIC: reject(w, "has an atomic on %s", w->p->decls[s->decl].name); break;
        default: break; /* break, return */
        }
    }
}

/* ---- walk 2: vector roles on the fast path ---------------------------------------- */

static void load_roles(struct ew *w, const struct vyre_expr *e) {
    if (!e) return;
    if (e->kind == VYRE_EX_LOAD && vyre_ew_is_gid(w->out, e->u.access.index)) {
        uint8_t *st = &w->state[e->u.access.decl];
        *st |= S_LOAD;
        if (*st & S_STORED) *st |= S_NO_VLOAD | S_NO_VSTORE;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) load_roles(w, ops[i]);
}

/* Marks every buffer a block stores to as stored (a loop body runs again after them). */
static void mark_stored(struct ew *w, const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_STORE) w->state[s->decl] |= S_STORED;
        if (s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR) mark_stored(w, &s->then_);
        if (s->kind == VYRE_ST_IF) mark_stored(w, &s->else_);
    }
}

/* cond: the block runs under a condition that is not fast-true, or in a loop. */
static void role_block(struct ew *w, const struct vyre_block *b, bool cond) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        switch (s->kind) {
        case VYRE_ST_LET:
        case VYRE_ST_SET: load_roles(w, s->value); break;
        case VYRE_ST_STORE: {
            load_roles(w, s->index);
            load_roles(w, s->value);
            uint8_t *st = &w->state[s->decl];
            *st |= S_STORE | S_STORED;
            if (cond || w->returned) *st |= S_NO_VSTORE;
            break;
        }
        case VYRE_ST_IF:
            load_roles(w, s->cond);
            if (vyre_ew_fast_true(w->out, w->p, s->cond)) {
                role_block(w, &s->then_, cond);
            } else {
                role_block(w, &s->then_, true);
                role_block(w, &s->else_, true);
            }
            break;
        case VYRE_ST_FOR:
            load_roles(w, s->from);
            load_roles(w, s->to);
            load_roles(w, s->step);
            mark_stored(w, &s->then_);
            role_block(w, &s->then_, true);
            break;
        case VYRE_ST_RETURN: w->returned = true; break;
        default: break;
        }
    }
}

/* ---- entry points ------------------------------------------------------------------- */

void vyre_ew_free(struct vyre_ew *ew) {
    if (!ew) return;
    free(ew->role);
    free(ew->gid_slot);
    memset(ew, 0, sizeof *ew);
}

enum vyre_status vyre_opt_elementwise(const vyre_program *p, struct vyre_ew *out) {
    memset(out, 0, sizeof *out);
    size_t nd = p->ndecls ? p->ndecls : 1, ns = p->nslots ? p->nslots : 1;
    struct ew w = {p, out, calloc(ns, sizeof(bool)), calloc(nd, 1), false};
    out->role = calloc(nd, 1);
    out->gid_slot = calloc(ns, sizeof(bool));
    if (!w.mutated || !w.state || !out->role || !out->gid_slot) {
        free(w.mutated);
        free(w.state);
        vyre_ew_free(out);
        return VYRE_ERR_NOMEM;
    }
    out->ok = true;
    if (!p->validated) reject(&w, "is not validated");
    if (p->workgroup[1] != 1 || p->workgroup[2] != 1)
        reject(&w, "has a workgroup of %u x %u x %u, not a 1-D one", (unsigned)p->workgroup[0],
               (unsigned)p->workgroup[1], (unsigned)p->workgroup[2]);
    for (uint32_t i = 0; i < p->ndecls; i++)
        if (p->decls[i].kind == VYRE_DECL_SHARED)
            reject(&w, "uses the shared array %s", p->decls[i].name);
    if (out->ok) {
        find_sets(&w, &p->body);
        check_block(&w, &p->body);
    }
    if (out->ok) {
        role_block(&w, &p->body, false);
        for (uint32_t i = 0; i < p->ndecls; i++) {
            uint8_t st = w.state[i];
            if ((st & S_LOAD) && !(st & S_NO_VLOAD)) {
                out->role[i] |= VYRE_EW_VLOAD;
                out->nvload++;
            }
            if ((st & S_STORE) && !(st & S_NO_VSTORE)) {
                out->role[i] |= VYRE_EW_VSTORE;
                out->nvstore++;
            }
        }
        if (out->nvload + out->nvstore == 0)
            reject(&w, "has no load or store that can be a vector access");
    }
    free(w.mutated);
    free(w.state);
    return VYRE_OK;
}
