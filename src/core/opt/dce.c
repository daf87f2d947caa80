/* dce.c — dead-code elimination:
 *   - statements after `break` or `return` in the same block never run;
 *   - `if` on a literal keeps the branch taken, spliced into the enclosing block (names
 *     are unique program-wide, §2, so nothing can clash); an `if` with two empty
 *     branches goes (its condition has no side effects);
 *   - a `let` that nothing reads goes, with every `set` of it (a read inside its own
 *     `set` does not count); an atomic's unread result is unbound (the atomic stays);
 *   - a `for` goes when it runs zero times (literal bounds, §2: a step that is not
 *     positive or from >= to), or when its body has no effect: no store, atomic,
 *     barrier, return, and no `set` of a variable declared outside it. Every loop
 *     terminates (§2), so removing one never turns a hang into an answer. */
#include <stdlib.h>

#include "opt_int.h"
#include "sem.h"

struct dce {
    vyre_program *p;
    struct opt_vars v;
    bool *inside;
    uint32_t n;
};

static bool dead_var(const struct dce *c, uint32_t slot) {
    return slot < c->v.n && c->v.reads[slot] == c->v.self_reads[slot];
}

static void mark_decls(struct dce *c, const struct vyre_block *b, bool on) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->name && s->kind != VYRE_ST_SET && s->slot < c->v.n) c->inside[s->slot] = on;
        mark_decls(c, &s->then_, on);
        mark_decls(c, &s->else_, on);
    }
}

/* True when running b has an effect outside it (inside[] marks b's own variables). */
static bool has_effect(const struct dce *c, const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        switch (s->kind) {
        case VYRE_ST_LET:
        case VYRE_ST_IF:
        case VYRE_ST_FOR:
        case VYRE_ST_BREAK: break;
        case VYRE_ST_SET:
            if (s->slot >= c->v.n || !c->inside[s->slot]) return true;
            break;
        default: return true; /* store, atomic, barrier, return, and any kind added later */
        }
        if (has_effect(c, &s->then_) || has_effect(c, &s->else_)) return true;
    }
    return false;
}

static bool zero_trips(const struct vyre_stmt *s) {
    if (s->from->kind != VYRE_EX_LIT || s->to->kind != VYRE_EX_LIT || s->step->kind != VYRE_EX_LIT)
        return false;
    enum vyre_type t = s->from->type;
    vyre_bits zero = 0;
    bool positive = vyre_sem_binary(VYRE_OP_GT, t, s->step->u.lit.bits, zero) != 0;
    bool less = vyre_sem_binary(VYRE_OP_LT, t, s->from->u.lit.bits, s->to->u.lit.bits) != 0;
    return !positive || !less;
}

static bool splice(vyre_program *p, struct vyre_block *b, uint32_t at, struct vyre_block *from) {
    opt_remove(b, at);
    for (uint32_t k = 0; k < from->count; k++)
        if (!opt_insert(p, b, at + k, from->items[k])) return false;
    return true;
}

static void dce_block(struct dce *c, struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count && !c->p->oom; i++) {
        struct vyre_stmt *s = b->items[i];
        if ((s->kind == VYRE_ST_BREAK || s->kind == VYRE_ST_RETURN) && i + 1 < b->count) {
            c->n += b->count - (i + 1);
            b->count = i + 1;
        }
        if (s->kind == VYRE_ST_LET && dead_var(c, s->slot)) {
            opt_remove(b, i--);
            c->n++;
            continue;
        }
        if (s->kind == VYRE_ST_SET && dead_var(c, s->slot)) {
            opt_remove(b, i--);
            c->n++;
            continue;
        }
        if (s->kind == VYRE_ST_ATOMIC && s->name && dead_var(c, s->slot)) {
            s->name = NULL;
            c->n++;
        }
        if (s->kind == VYRE_ST_IF && s->cond->kind == VYRE_EX_LIT) {
            struct vyre_block *keep = s->cond->u.lit.bits ? &s->then_ : &s->else_;
            if (!splice(c->p, b, i, keep)) return;
            c->n++;
            i--;
            continue;
        }
        if (s->kind == VYRE_ST_IF && s->then_.count == 0 && s->else_.count == 0) {
            opt_remove(b, i--);
            c->n++;
            continue;
        }
        if (s->kind == VYRE_ST_FOR) {
            bool dead = zero_trips(s);
            if (!dead) {
                if (s->slot < c->v.n) c->inside[s->slot] = true;
                mark_decls(c, &s->then_, true);
                dead = !has_effect(c, &s->then_);
                mark_decls(c, &s->then_, false);
                if (s->slot < c->v.n) c->inside[s->slot] = false;
            }
            if (dead) {
                opt_remove(b, i--);
                c->n++;
                continue;
            }
        }
        dce_block(c, &s->then_);
        dce_block(c, &s->else_);
    }
}

uint32_t vyre_opt_dce(vyre_program *p) {
    struct dce c = {.p = p, .n = 0};
    if (!opt_vars_scan(p, &c.v)) return 0;
    c.inside = calloc(c.v.n ? c.v.n : 1, sizeof *c.inside);
    if (c.inside) dce_block(&c, &p->body);
    free(c.inside);
    opt_vars_free(&c.v);
    return c.n;
}
