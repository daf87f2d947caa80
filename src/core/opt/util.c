/* util.c — what the optimiser passes share: variable use counts, the purity rule,
 * node surgery and structural search-and-replace over blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt_int.h"
#include "sem.h"

/* ---- variable use counts -------------------------------------------------------- */

static void scan_expr(const struct vyre_expr *e, struct opt_vars *v, uint32_t in_set) {
    if (!e) return;
    if (e->kind == VYRE_EX_NAME && e->u.name.ref == VYRE_REF_VAR && e->u.name.index < v->n) {
        v->reads[e->u.name.index]++;
        if (in_set == e->u.name.index) v->self_reads[e->u.name.index]++;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) scan_expr(ops[i], v, in_set);
}

static void scan_block(const struct vyre_block *b, struct opt_vars *v) {
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        uint32_t in_set = UINT32_MAX;
        if (s->kind == VYRE_ST_SET && s->slot < v->n) {
            v->sets[s->slot]++;
            in_set = s->slot;
        }
        struct vyre_expr **es[5];
        unsigned n = opt_stmt_exprs(s, es);
        for (unsigned k = 0; k < n; k++) scan_expr(*es[k], v, in_set);
        if (s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR) {
            scan_block(&s->then_, v);
            scan_block(&s->else_, v);
        }
    }
}

bool opt_vars_scan(const vyre_program *p, struct opt_vars *v) {
    memset(v, 0, sizeof *v);
    v->n = p->nslots;
    size_t n = p->nslots ? p->nslots : 1;
    v->reads = calloc(n, sizeof *v->reads);
    v->self_reads = calloc(n, sizeof *v->self_reads);
    v->sets = calloc(n, sizeof *v->sets);
    if (!v->reads || !v->self_reads || !v->sets) {
        opt_vars_free(v);
        return false;
    }
    scan_block(&p->body, v);
    return true;
}

void opt_vars_free(struct opt_vars *v) {
    free(v->reads);
    free(v->self_reads);
    free(v->sets);
    memset(v, 0, sizeof *v);
}

/* ---- purity ------------------------------------------------------------------------ */

bool opt_movable(const vyre_program *p, const struct opt_vars *v, const struct vyre_expr *e) {
    if (!e) return true;
    switch (e->kind) {
    case VYRE_EX_SUBGROUP: return false;
    case VYRE_EX_LOAD: {
        const struct vyre_decl *d = &p->decls[e->u.access.decl];
        if (d->kind != VYRE_DECL_BUFFER || d->access != VYRE_ACCESS_READ) return false;
        break;
    }
    case VYRE_EX_NAME:
        if (e->u.name.ref == VYRE_REF_VAR)
            return e->u.name.index < v->n && v->sets[e->u.name.index] == 0;
        return true;
    case VYRE_EX_LIT:
    case VYRE_EX_BUILTIN:
    case VYRE_EX_LEN:
    case VYRE_EX_UNARY:
    case VYRE_EX_BINARY:
    case VYRE_EX_SELECT:
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST:
    case VYRE_EX_FMA: break;
    default: return false; /* a kind added later is not known to be pure */
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++)
        if (!opt_movable(p, v, ops[i])) return false;
    return true;
}

uint32_t opt_cost(const struct vyre_expr *e) {
    if (!e) return 0;
    uint32_t c = 0;
    switch (e->kind) {
    case VYRE_EX_LOAD: c = 4; break;
    case VYRE_EX_SUBGROUP: c = 4; break;
    case VYRE_EX_UNARY:
        c = vyre_op_is_approx(e->u.op.op) ? 8u : e->u.op.op == VYRE_OP_SQRT ? 4u : 1u;
        break;
    case VYRE_EX_BINARY: {
        enum vyre_op op = e->u.op.op;
        bool f = vyre_type_is_float(e->u.op.a[0]->type);
        c = op == VYRE_OP_DIV || op == VYRE_OP_REM ? (f ? 4u : 8u) : op == VYRE_OP_MULHI ? 2u : 1u;
        break;
    }
    case VYRE_EX_CAST:
    case VYRE_EX_SELECT:
    case VYRE_EX_FMA: c = 1; break;
    default: break; /* leaves and bitcasts are free */
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) c += opt_cost(ops[i]);
    return c;
}

bool opt_trivial(const struct vyre_expr *e) {
    return e->kind == VYRE_EX_LIT || e->kind == VYRE_EX_NAME || e->kind == VYRE_EX_BUILTIN ||
           e->kind == VYRE_EX_LEN;
}

/* ---- node surgery ------------------------------------------------------------------ */

struct vyre_expr *opt_copy(vyre_program *p, const struct vyre_expr *e) {
    if (!e) return NULL;
    struct vyre_expr *c = vyre_arena_alloc(p, sizeof *c);
    if (!c) {
        p->oom = true;
        return NULL;
    }
    *c = *e;
    c->id = p->next_id++;
    switch (e->kind) {
    case VYRE_EX_LOAD:
        c->u.access.index = opt_copy(p, e->u.access.index);
        if (!c->u.access.index) return NULL;
        break;
    case VYRE_EX_UNARY:
    case VYRE_EX_BINARY:
    case VYRE_EX_SELECT:
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST:
    case VYRE_EX_FMA:
    case VYRE_EX_SUBGROUP:
        for (int i = 0; i < 3; i++) {
            if (!e->u.op.a[i]) continue;
            c->u.op.a[i] = opt_copy(p, e->u.op.a[i]);
            if (!c->u.op.a[i]) return NULL;
        }
        break;
    default: break;
    }
    return c;
}

bool opt_become_var(vyre_program *p, struct vyre_expr *e, const char *name) {
    char *n = vyre_arena_strdup(p, name);
    if (!n) {
        p->oom = true;
        return false;
    }
    e->kind = VYRE_EX_NAME;
    memset(&e->u, 0, sizeof e->u);
    e->u.name.name = n;
    e->u.name.ref = VYRE_REF_VAR; /* the slot is filled when the program is validated again */
    e->u.name.index = UINT32_MAX;
    return true;
}

void opt_become_lit(struct vyre_expr *e, vyre_bits bits) {
    e->kind = VYRE_EX_LIT;
    memset(&e->u, 0, sizeof e->u);
    e->u.lit.bits = vyre_sem_from_memory(e->type, bits);
}

void opt_become(struct vyre_expr *e, const struct vyre_expr *x) {
    uint32_t id = e->id;
    *e = *x;
    e->id = id;
}

static bool name_used(const struct vyre_block *b, const char *n) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->name && strcmp(s->name, n) == 0) return true;
        if (name_used(&s->then_, n) || name_used(&s->else_, n)) return true;
    }
    return false;
}

char *opt_fresh_name(vyre_program *p, const char *prefix) {
    char buf[VYRE_MAX_NAME];
    for (uint32_t k = p->next_id;; k++) {
        snprintf(buf, sizeof buf, "%s%u", prefix, k);
        if (!vyre_ir_find_decl(p, buf) && !name_used(&p->body, buf) && strcmp(buf, p->name) != 0) {
            char *s = vyre_arena_strdup(p, buf);
            if (!s) p->oom = true;
            return s;
        }
    }
}

bool opt_insert(vyre_program *p, struct vyre_block *b, uint32_t at, struct vyre_stmt *s) {
    if (!s || !vyre_ir_push(p, b, s)) return false; /* appended, then moved into place */
    memmove(&b->items[at + 1], &b->items[at], (b->count - 1 - at) * sizeof *b->items);
    b->items[at] = s;
    return true;
}

void opt_remove(struct vyre_block *b, uint32_t at) {
    memmove(&b->items[at], &b->items[at + 1], (b->count - at - 1) * sizeof *b->items);
    b->count--;
}

unsigned opt_stmt_exprs(struct vyre_stmt *s, struct vyre_expr **out[5]) {
    unsigned n = 0;
    struct vyre_expr **all[] = {&s->cond,  &s->from,     &s->to,   &s->step,
                                &s->index, &s->expected, &s->value};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i] && n < 5) out[n++] = all[i];
    return n;
}

/* ---- search and replace ------------------------------------------------------------ */

/* Cheap checks first: most candidates differ at the root. */
static bool same(const struct vyre_expr *a, const struct vyre_expr *b) {
    return a->kind == b->kind && a->type == b->type && vyre_ir_expr_equal(a, b);
}

uint32_t opt_replace_expr(vyre_program *p, struct vyre_expr *e, const struct vyre_expr *what,
                          const char *name) {
    if (!e) return 0;
    if (same(e, what)) return opt_become_var(p, e, name) ? 1u : 0u;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    uint32_t k = 0;
    for (unsigned i = 0; i < n; i++) k += opt_replace_expr(p, ops[i], what, name);
    return k;
}

uint32_t opt_replace_block(vyre_program *p, struct vyre_block *b, uint32_t from,
                           const struct vyre_expr *what, const char *name) {
    uint32_t k = 0;
    for (uint32_t i = from; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        struct vyre_expr **es[5];
        unsigned n = opt_stmt_exprs(s, es);
        for (unsigned j = 0; j < n; j++) k += opt_replace_expr(p, *es[j], what, name);
        k += opt_replace_block(p, &s->then_, 0, what, name);
        k += opt_replace_block(p, &s->else_, 0, what, name);
    }
    return k;
}

uint32_t opt_count_expr(const struct vyre_expr *e, const struct vyre_expr *what) {
    if (!e) return 0;
    if (same(e, what)) return 1;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    uint32_t k = 0;
    for (unsigned i = 0; i < n; i++) k += opt_count_expr(ops[i], what);
    return k;
}

uint32_t opt_count_block(const struct vyre_block *b, uint32_t from, const struct vyre_expr *what) {
    uint32_t k = 0;
    for (uint32_t i = from; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        struct vyre_expr **es[5];
        unsigned n = opt_stmt_exprs(s, es);
        for (unsigned j = 0; j < n; j++) k += opt_count_expr(*es[j], what);
        k += opt_count_block(&s->then_, 0, what);
        k += opt_count_block(&s->else_, 0, what);
    }
    return k;
}
