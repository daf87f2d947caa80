/* copy.c — vyre_program_copy: a deep copy of a program's IR in a fresh arena. It stands
 * where copies used to be made by printing the canonical text and parsing it again (the
 * kernel's own program, megakernel steps, grid sections, the optimiser's working copy).
 * The copy is what the parser would give for the same text: names, declarations, the
 * body and node ids; nothing the validator or the passes fill in (types of non-literals,
 * resolved slots and declarations, bounds facts), so its first use validates it. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static struct vyre_expr *copy_expr(vyre_program *q, const struct vyre_expr *e) {
    if (!e) return NULL;
    struct vyre_expr *c = vyre_arena_alloc(q, sizeof *c);
    if (!c) return NULL;
    c->kind = e->kind;
    c->id = e->id;
    c->type = e->kind == VYRE_EX_LIT ? e->type : VYRE_VOID;
    switch (e->kind) {
    case VYRE_EX_LIT: c->u.lit = e->u.lit; break;
    case VYRE_EX_NAME:
        c->u.name.name = vyre_arena_strdup(q, e->u.name.name);
        if (!c->u.name.name) return NULL;
        break;
    case VYRE_EX_BUILTIN: c->u.builtin = e->u.builtin; break;
    case VYRE_EX_LOAD:
    case VYRE_EX_LEN:
        c->u.access.buf = vyre_arena_strdup(q, e->u.access.buf);
        if (!c->u.access.buf) return NULL;
        if (e->u.access.index && !(c->u.access.index = copy_expr(q, e->u.access.index)))
            return NULL;
        break;
    default:
        c->u.op.op = e->u.op.op;
        c->u.op.to = e->u.op.to;
        c->u.op.sg = e->u.op.sg;
        for (int i = 0; i < 3; i++)
            if (e->u.op.a[i] && !(c->u.op.a[i] = copy_expr(q, e->u.op.a[i]))) return NULL;
        break;
    }
    return c;
}

static bool copy_block(vyre_program *q, const struct vyre_block *b, struct vyre_block *out);

/* Copies the optional expression e into *out; false only on out-of-memory. */
static bool copy_opt(vyre_program *q, const struct vyre_expr *e, struct vyre_expr **out) {
    *out = e ? copy_expr(q, e) : NULL;
    return !e || *out;
}

static struct vyre_stmt *copy_stmt(vyre_program *q, const struct vyre_stmt *s) {
    struct vyre_stmt *c = vyre_arena_alloc(q, sizeof *c);
    if (!c) return NULL;
    c->kind = s->kind;
    c->id = s->id;
    c->atomic = s->atomic;
    if (s->name && !(c->name = vyre_arena_strdup(q, s->name))) return NULL;
    if (s->buf && !(c->buf = vyre_arena_strdup(q, s->buf))) return NULL;
    bool ok = copy_opt(q, s->value, &c->value) && copy_opt(q, s->index, &c->index) &&
              copy_opt(q, s->expected, &c->expected) && copy_opt(q, s->cond, &c->cond) &&
              copy_opt(q, s->from, &c->from) && copy_opt(q, s->to, &c->to) &&
              copy_opt(q, s->step, &c->step) && copy_block(q, &s->then_, &c->then_) &&
              copy_block(q, &s->else_, &c->else_);
    return ok ? c : NULL;
}

static bool copy_block(vyre_program *q, const struct vyre_block *b, struct vyre_block *out) {
    out->count = out->cap = 0;
    out->items = NULL;
    if (!b->count) return true;
    out->items = vyre_arena_alloc(q, b->count * sizeof *out->items);
    if (!out->items) return false;
    out->cap = b->count;
    for (uint32_t i = 0; i < b->count; i++) {
        out->items[i] = copy_stmt(q, b->items[i]);
        if (!out->items[i]) return false;
        out->count++;
    }
    return true;
}

enum vyre_status vyre_program_copy(const vyre_program *p, vyre_program **out,
                                   struct vyre_error *err) {
    *out = NULL;
    vyre_program *q = vyre_program_new(p->name, p->workgroup[0], p->workgroup[1], p->workgroup[2]);
    bool ok = q != NULL;
    for (uint32_t i = 0; ok && i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        struct vyre_decl *c =
            d->kind == VYRE_DECL_BUFFER   ? vyre_ir_buffer(q, d->name, d->type, d->access, d->count)
            : d->kind == VYRE_DECL_SHARED ? vyre_ir_shared(q, d->name, d->type, d->count)
            /* a worklist copied as a param made every copy of a worklist program invalid:
             * p:optimize(), fusion, grid kernels (issue 26 §6, found by spec 99) */
            : d->kind == VYRE_DECL_WORKLIST ? vyre_ir_worklist(q, d->name, d->type)
                                            : vyre_ir_param(q, d->name, d->type);
        ok = c != NULL;
    }
    ok = ok && copy_block(q, &p->body, &q->body);
    if (!ok || q->oom) {
        vyre_program_free(q);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "vyre_program_copy: out of host memory copying program '%s'. "
                              "Fix: free memory",
                              p->name);
    }
    q->next_id = p->next_id;
    q->validated = false;
    *out = q;
    return VYRE_OK;
}
