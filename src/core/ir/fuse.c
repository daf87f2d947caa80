/* fuse.c — vyre_program_fuse: a chain of programs over one index space becomes one
 * program whose every invocation runs the chain's bodies in order (one launch instead
 * of one per program). Why it is exact: when every access to a buffer that two programs
 * share (and one writes) is at the invocation's own index (gid x), invocation i of
 * program k only ever sees what invocation i of programs 1..k-1 left there, so running
 * the bodies back to back per invocation gives the chain's results bit for bit.
 *
 * Rules (each refusal names the program and the reason, with a Fix):
 * - the same workgroup, 1-D ((workgroup X) with y = z = 1), no reads of gid/wgid y or z;
 * - no barrier, shared memory or subgroup op (they couple invocations);
 * - a buffer used by two programs with a write among them, and every internal buffer, is
 *   only accessed at (gid x) (directly or through a let bound to it);
 * - a program other than the last returns only outside loops (its body is wrapped in a
 *   one-trip loop and its returns become breaks, so the next program still runs);
 * - buffers of one name have one type and count; params of one name one type.
 * Buffers are shared by name, the only identity a program has: fusion cannot see which
 * memory a launch binds. The chain's order between two DIFFERENT names bound to
 * overlapping memory (a buffer and a view of it) is not kept: program 1 writing `a` at
 * (gid x) and program 2 reading `b` = a view of `a` at another index race in the fused
 * program. The caller binds memory that two programs share under one name (or runs the
 * chain as be:megakernel steps, whose planner orders them by memory: mega.c).
 * Internal buffers (`internal`) become a variable: (let T zero) at the top, a store at
 * gid x becomes (set T v) when gid x < T_len, a load (select (lt gid T_len) T zero),
 * (len T) the new u32 param T_len — the total semantics of a zero-filled buffer of T_len
 * elements, which the caller states by passing T_len. Locals of later programs that
 * clash with earlier names are renamed NAME_fK. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define FUSE_MAX 64u

struct fuse {
    vyre_program *out;
    vyre_program *const *progs;
    size_t n, k; /* chain length; the program being copied */
    const char *const *internal;
    size_t ninternal;
    struct vyre_error *err;
    /* names taken in the fused program (decls and locals), for renaming */
    char **taken;
    size_t ntaken, captaken;
    /* renames of the current program's locals */
    const char *from[1024];
    char *to[1024];
    size_t nrenames;
    bool oom;
};

static bool is_internal(const struct fuse *f, const char *buf) {
    for (size_t i = 0; i < f->ninternal; i++)
        if (strcmp(f->internal[i], buf) == 0) return true;
    return false;
}

static bool taken(const struct fuse *f, const char *name) {
    for (size_t i = 0; i < f->ntaken; i++)
        if (strcmp(f->taken[i], name) == 0) return true;
    return false;
}

static void take(struct fuse *f, const char *name) {
    if (taken(f, name)) return;
    if (f->ntaken == f->captaken) {
        size_t cap = f->captaken ? f->captaken * 2 : 64;
        char **v = realloc(f->taken, cap * sizeof *v);
        if (!v) {
            f->oom = true;
            return;
        }
        f->taken = v;
        f->captaken = cap;
    }
    f->taken[f->ntaken++] = vyre_arena_strdup(f->out, name);
}

/* ---- checks ------------------------------------------------------------------------ */

static bool assigned_in(const struct vyre_block *b, const char *name) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_SET && strcmp(s->name, name) == 0) return true;
        if ((s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR) &&
            (assigned_in(&s->then_, name) || assigned_in(&s->else_, name)))
            return true;
    }
    return false;
}

/* True when e is (gid x), or a name bound by a top-level let of p to exactly (gid x)
 * and never set. */
static bool own_index(const vyre_program *p, const struct vyre_expr *e) {
    if (!e) return false;
    if (e->kind == VYRE_EX_BUILTIN) return e->u.builtin.which == VYRE_GID && e->u.builtin.axis == 0;
    if (e->kind != VYRE_EX_NAME) return false;
    for (uint32_t i = 0; i < p->body.count; i++) {
        const struct vyre_stmt *s = p->body.items[i];
        if (s->kind == VYRE_ST_LET && strcmp(s->name, e->u.name.name) == 0)
            return s->value->kind == VYRE_EX_BUILTIN && s->value->u.builtin.which == VYRE_GID &&
                   s->value->u.builtin.axis == 0 && !assigned_in(&p->body, s->name);
    }
    return false;
}

/* Whether buffer `buf` is shared by two programs of the chain with a write among them. */
static bool coupled(const struct fuse *f, const char *buf) {
    unsigned users = 0;
    bool written = false;
    for (size_t k = 0; k < f->n; k++) {
        const struct vyre_decl *d = vyre_ir_find_decl(f->progs[k], buf);
        if (!d || d->kind != VYRE_DECL_BUFFER) continue;
        users++;
        written |= d->access != VYRE_ACCESS_READ;
    }
    return users > 1 && written;
}

static enum vyre_status refuse(struct fuse *f, const char *fmt, const char *a, const char *b) {
    char what[600];
    snprintf(what, sizeof what, fmt, a, b);
    return vyre_error_set(f->err, VYRE_ERR_UNSUPPORTED, "vyre.fuse: program %zu ('%s') %s",
                          f->k + 1, f->progs[f->k]->name, what);
}

static enum vyre_status check_expr(struct fuse *f, const struct vyre_expr *e) {
    if (!e) return VYRE_OK;
    const vyre_program *p = f->progs[f->k];
    char text[160];
    if (e->kind == VYRE_EX_SUBGROUP)
        return refuse(f,
                      "uses the subgroup op %s, which couples invocations. Fix: fuse only "
                      "programs without subgroup ops%s",
                      vyre_expr_text(e, text, sizeof text), "");
    if (e->kind == VYRE_EX_BUILTIN && e->u.builtin.axis != 0 &&
        (e->u.builtin.which == VYRE_GID || e->u.builtin.which == VYRE_WGID))
        return refuse(f,
                      "reads %s: fusion works on a 1-D index space. Fix: fuse 1-D "
                      "programs indexed by (gid x)%s",
                      vyre_expr_text(e, text, sizeof text), "");
    if (e->kind == VYRE_EX_LOAD &&
        (is_internal(f, e->u.access.buf) || coupled(f, e->u.access.buf)) &&
        !own_index(p, e->u.access.index))
        return refuse(f,
                      "loads '%s' at %s, not at its own index (gid x), while another program "
                      "of the chain writes it. Fix: fuse only chains whose shared buffers are "
                      "read and written at (gid x)",
                      e->u.access.buf, vyre_expr_text(e->u.access.index, text, sizeof text));
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) {
        enum vyre_status st = check_expr(f, ops[i]);
        if (st != VYRE_OK) return st;
    }
    return VYRE_OK;
}

static enum vyre_status check_block(struct fuse *f, const struct vyre_block *b, unsigned loops) {
    const vyre_program *p = f->progs[f->k];
    char text[160];
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        enum vyre_status st = VYRE_OK;
        const struct vyre_expr *exprs[] = {s->value, s->index, s->expected, s->cond,
                                           s->from,  s->to,    s->step};
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0] && st == VYRE_OK; e++)
            st = check_expr(f, exprs[e]);
        if (st != VYRE_OK) return st;
        switch (s->kind) {
        case VYRE_ST_BARRIER:
            return refuse(f,
                          "has a barrier, which couples the invocations of a workgroup. "
                          "Fix: fuse only programs without barriers%s%s",
                          "", "");
        case VYRE_ST_STORE:
        case VYRE_ST_ATOMIC:
            if (s->kind == VYRE_ST_ATOMIC && is_internal(f, s->buf))
                return refuse(f,
                              "uses an atomic on the internal buffer '%s'. Fix: keep '%s' a "
                              "real buffer (leave it out of internal)",
                              s->buf, s->buf);
            if ((is_internal(f, s->buf) || coupled(f, s->buf)) && !own_index(p, s->index))
                return refuse(f,
                              "writes '%s' at %s, not at its own index (gid x), while another "
                              "program of the chain uses it. Fix: fuse only chains whose "
                              "shared buffers are read and written at (gid x)",
                              s->buf, vyre_expr_text(s->index, text, sizeof text));
            break;
        case VYRE_ST_RETURN:
            if (loops > 0 && f->k + 1 < f->n)
                return refuse(f,
                              "returns from inside a loop, so the rest of the chain could not "
                              "run after it. Fix: break out of the loop and return after "
                              "it%s%s",
                              "", "");
            break;
        case VYRE_ST_IF:
            if ((st = check_block(f, &s->then_, loops)) != VYRE_OK) return st;
            if ((st = check_block(f, &s->else_, loops)) != VYRE_OK) return st;
            break;
        case VYRE_ST_FOR:
            if ((st = check_block(f, &s->then_, loops + 1)) != VYRE_OK) return st;
            break;
        case VYRE_ST_LET:
        case VYRE_ST_SET:
        case VYRE_ST_BREAK: break;
        default:
            return refuse(f,
                          "has a statement fusion does not know (%s). Fix: fuse only "
                          "programs made of let, set, store, if, for, break, return and "
                          "atomics%s",
                          vyre_stmt_text(s, text, sizeof text), "");
        }
    }
    return VYRE_OK;
}

/* ---- declarations ---------------------------------------------------------------------- */

static enum vyre_status merge_decls(struct fuse *f) {
    for (f->k = 0; f->k < f->n; f->k++) {
        const vyre_program *p = f->progs[f->k];
        if (p->nshared > 0)
            return refuse(f,
                          "declares shared memory, which couples the invocations of a "
                          "workgroup. Fix: fuse only programs without shared memory%s%s",
                          "", "");
        for (uint32_t i = 0; i < p->ndecls; i++) {
            const struct vyre_decl *d = &p->decls[i];
            if (d->kind == VYRE_DECL_BUFFER && is_internal(f, d->name)) continue;
            struct vyre_decl *have = vyre_ir_find_decl(f->out, d->name);
            if (!have) {
                if (d->kind == VYRE_DECL_BUFFER)
                    have = vyre_ir_buffer(f->out, d->name, d->type, d->access, d->count);
                else have = vyre_ir_param(f->out, d->name, d->type);
                if (!have)
                    return vyre_error_set(f->err, VYRE_ERR_NOMEM, "vyre.fuse: out of memory");
                take(f, d->name);
                continue;
            }
            if (have->kind != d->kind || have->type != d->type)
                return refuse(f,
                              "declares '%s' with another kind or type than an earlier "
                              "program. Fix: give shared names one declaration (%s) across "
                              "the chain",
                              d->name, vyre_type_name(have->type));
            if (d->kind == VYRE_DECL_BUFFER && have->count != d->count)
                return refuse(f,
                              "declares buffer '%s' with another COUNT than an earlier "
                              "program. Fix: give it one count across the chain%s",
                              d->name, "");
            if (d->kind == VYRE_DECL_BUFFER && have->access != d->access)
                have->access = VYRE_ACCESS_READ_WRITE;
        }
    }
    /* Each internal buffer: declared somewhere in the chain; gives a T_len param. */
    for (size_t i = 0; i < f->ninternal; i++) {
        const struct vyre_decl *d = NULL;
        for (size_t k = 0; k < f->n && !d; k++) {
            d = vyre_ir_find_decl(f->progs[k], f->internal[i]);
            if (d && d->kind != VYRE_DECL_BUFFER) d = NULL;
        }
        if (!d)
            return vyre_error_set(f->err, VYRE_ERR_ARG,
                                  "vyre.fuse: internal buffer '%s' is not a buffer of any "
                                  "program in the chain. Fix: name buffers the programs declare",
                                  f->internal[i]);
        char len_name[VYRE_MAX_NAME + 8];
        snprintf(len_name, sizeof len_name, "%s_len", f->internal[i]);
        if (strlen(len_name) > VYRE_MAX_NAME || vyre_ir_find_decl(f->out, len_name))
            return vyre_error_set(f->err, VYRE_ERR_ARG,
                                  "vyre.fuse: the length param '%s' of internal buffer '%s' is "
                                  "too long or already declared. Fix: rename the buffer",
                                  len_name, f->internal[i]);
        if (!vyre_ir_param(f->out, len_name, VYRE_U32))
            return vyre_error_set(f->err, VYRE_ERR_NOMEM, "vyre.fuse: out of memory");
        take(f, len_name);
        take(f, f->internal[i]);
    }
    return VYRE_OK;
}

/* ---- copying with rewrites --------------------------------------------------------------- */

static const char *renamed(const struct fuse *f, const char *name) {
    for (size_t i = 0; i < f->nrenames; i++)
        if (strcmp(f->from[i], name) == 0) return f->to[i];
    return name;
}

/* Picks the fused name of a local of program k (unchanged unless it is taken). */
static const char *local_name(struct fuse *f, const char *name) {
    if (!taken(f, name)) {
        take(f, name);
        return name;
    }
    char buf[VYRE_MAX_NAME + 1];
    for (unsigned extra = 0;; extra++) {
        char suffix[24];
        snprintf(suffix, sizeof suffix, extra ? "_f%zu_%u" : "_f%zu", f->k + 1, extra);
        size_t keep = strlen(name);
        if (keep + strlen(suffix) > VYRE_MAX_NAME) keep = VYRE_MAX_NAME - strlen(suffix);
        snprintf(buf, sizeof buf, "%.*s%s", (int)keep, name, suffix);
        if (!taken(f, buf)) break;
    }
    take(f, buf);
    if (f->nrenames < sizeof f->from / sizeof f->from[0]) {
        f->from[f->nrenames] = name;
        f->to[f->nrenames++] = vyre_arena_strdup(f->out, buf);
        return f->to[f->nrenames - 1];
    }
    f->oom = true; /* more clashing locals than the table holds: refused below */
    return name;
}

static struct vyre_expr *zero_of(struct fuse *f, enum vyre_type t) {
    return vyre_ir_lit(f->out, t, 0);
}

static struct vyre_expr *copy_expr(struct fuse *f, const struct vyre_expr *e);

static struct vyre_expr *gid_lt_len(struct fuse *f, const char *buf) {
    char len_name[VYRE_MAX_NAME + 8];
    snprintf(len_name, sizeof len_name, "%s_len", buf);
    return vyre_ir_binary(f->out, VYRE_OP_LT, vyre_ir_builtin(f->out, VYRE_GID, 0),
                          vyre_ir_name(f->out, len_name));
}

static struct vyre_expr *copy_expr(struct fuse *f, const struct vyre_expr *e) {
    vyre_program *o = f->out;
    struct vyre_expr *a[3] = {NULL, NULL, NULL};
    switch (e->kind) {
    case VYRE_EX_LIT: return vyre_ir_lit(o, e->type, e->u.lit.bits);
    case VYRE_EX_NAME:
        return vyre_ir_name(o, e->u.name.ref == VYRE_REF_VAR ? renamed(f, e->u.name.name)
                                                             : e->u.name.name);
    case VYRE_EX_BUILTIN: return vyre_ir_builtin(o, e->u.builtin.which, e->u.builtin.axis);
    case VYRE_EX_LEN:
        if (is_internal(f, e->u.access.buf)) {
            char len_name[VYRE_MAX_NAME + 8];
            snprintf(len_name, sizeof len_name, "%s_len", e->u.access.buf);
            return vyre_ir_name(o, len_name);
        }
        return vyre_ir_len(o, e->u.access.buf);
    case VYRE_EX_LOAD:
        if (is_internal(f, e->u.access.buf)) /* own index, checked */
            return vyre_ir_select(o, gid_lt_len(f, e->u.access.buf),
                                  vyre_ir_name(o, e->u.access.buf), zero_of(f, e->type));
        return vyre_ir_load(o, e->u.access.buf, copy_expr(f, e->u.access.index));
    default: break;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) a[i] = copy_expr(f, ops[i]);
    switch (e->kind) {
    case VYRE_EX_UNARY: return vyre_ir_unary(o, e->u.op.op, a[0]);
    case VYRE_EX_BINARY: return vyre_ir_binary(o, e->u.op.op, a[0], a[1]);
    case VYRE_EX_SELECT: return vyre_ir_select(o, a[0], a[1], a[2]);
    case VYRE_EX_CAST: return vyre_ir_cast(o, e->u.op.to, a[0]);
    case VYRE_EX_BITCAST: return vyre_ir_bitcast(o, e->u.op.to, a[0]);
    case VYRE_EX_FMA: return vyre_ir_fma(o, a[0], a[1], a[2]);
    default: return NULL; /* subgroup ops were refused */
    }
}

static bool copy_block(struct fuse *f, const struct vyre_block *from, struct vyre_block *to,
                       bool returns_break);

static struct vyre_stmt *copy_stmt(struct fuse *f, const struct vyre_stmt *s, bool returns_break) {
    vyre_program *o = f->out;
    switch (s->kind) {
    case VYRE_ST_LET: {
        struct vyre_expr *v = copy_expr(f, s->value);
        return vyre_ir_let(o, local_name(f, s->name), v);
    }
    case VYRE_ST_SET: return vyre_ir_set(o, renamed(f, s->name), copy_expr(f, s->value));
    case VYRE_ST_STORE:
        if (is_internal(f, s->buf)) {
            struct vyre_stmt *w = vyre_ir_if(o, gid_lt_len(f, s->buf));
            if (!w || !vyre_ir_push(o, &w->then_, vyre_ir_set(o, s->buf, copy_expr(f, s->value))))
                return NULL;
            return w;
        }
        return vyre_ir_store(o, s->buf, copy_expr(f, s->index), copy_expr(f, s->value));
    case VYRE_ST_ATOMIC: {
        struct vyre_expr *idx = copy_expr(f, s->index), *val = copy_expr(f, s->value);
        struct vyre_expr *exp = s->expected ? copy_expr(f, s->expected) : NULL;
        return vyre_ir_atomic(o, s->name ? local_name(f, s->name) : NULL, s->atomic, s->buf, idx,
                              exp, val);
    }
    case VYRE_ST_IF: {
        struct vyre_stmt *c = vyre_ir_if(o, copy_expr(f, s->cond));
        if (!c || !copy_block(f, &s->then_, &c->then_, returns_break) ||
            !copy_block(f, &s->else_, &c->else_, returns_break))
            return NULL;
        return c;
    }
    case VYRE_ST_FOR: {
        struct vyre_expr *from = copy_expr(f, s->from), *to = copy_expr(f, s->to);
        struct vyre_expr *step = copy_expr(f, s->step);
        struct vyre_stmt *l = vyre_ir_for(o, local_name(f, s->name), from, to, step);
        /* a return inside a loop is refused unless this is the last program */
        if (!l || !copy_block(f, &s->then_, &l->then_, false)) return NULL;
        return l;
    }
    case VYRE_ST_RETURN: return vyre_ir_simple(o, returns_break ? VYRE_ST_BREAK : VYRE_ST_RETURN);
    case VYRE_ST_BREAK: return vyre_ir_simple(o, VYRE_ST_BREAK);
    default: return NULL;
    }
}

static bool copy_block(struct fuse *f, const struct vyre_block *from, struct vyre_block *to,
                       bool returns_break) {
    for (uint32_t i = 0; i < from->count; i++) {
        struct vyre_stmt *s = copy_stmt(f, from->items[i], returns_break);
        if (!s || !vyre_ir_push(f->out, to, s)) return false;
    }
    return true;
}

static bool has_return(const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_RETURN) return true;
        if ((s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR) &&
            (has_return(&s->then_) || has_return(&s->else_)))
            return true;
    }
    return false;
}

/* ---- entry point ------------------------------------------------------------------------- */

static void fused_name(vyre_program *const *progs, size_t n, char out[VYRE_MAX_NAME + 1]) {
    size_t len = (size_t)snprintf(out, VYRE_MAX_NAME + 1, "fused");
    for (size_t k = 0; k < n; k++) {
        size_t add = strlen(progs[k]->name) + 1;
        if (len + add > VYRE_MAX_NAME) {
            snprintf(out + len, VYRE_MAX_NAME + 1 - len, "_%zu", n - k);
            return;
        }
        len += (size_t)snprintf(out + len, VYRE_MAX_NAME + 1 - len, "_%s", progs[k]->name);
    }
}

enum vyre_status vyre_program_fuse(vyre_program *const *progs, size_t n,
                                   const char *const *internal, size_t ninternal,
                                   vyre_program **out, struct vyre_error *err) {
    if (!progs || !out || n == 0 || (ninternal && !internal))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre.fuse: needs a non-empty list of programs. Fix: "
                              "vyre.fuse({p1, p2}, {internal = {'tmp'}})");
    if (n > FUSE_MAX)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "vyre.fuse: %zu programs is more than %u. Fix: fuse in parts", n,
                              FUSE_MAX);
    *out = NULL;
    for (size_t k = 0; k < n; k++) {
        if (!progs[k])
            return vyre_error_set(err, VYRE_ERR_ARG, "vyre.fuse: program %zu is NULL", k + 1);
        enum vyre_status st = vyre_ensure_valid(progs[k], err);
        if (st != VYRE_OK) return st;
        const uint32_t *w = progs[k]->workgroup, *w0 = progs[0]->workgroup;
        if (w[1] != 1 || w[2] != 1 || w[0] != w0[0])
            return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                                  "vyre.fuse: program %zu ('%s') has workgroup (%u %u %u); the "
                                  "chain needs one 1-D workgroup, (%u) like program 1. Fix: give "
                                  "every program the same (workgroup X)",
                                  k + 1, progs[k]->name, w[0], w[1], w[2], w0[0]);
    }
    char name[VYRE_MAX_NAME + 1];
    fused_name(progs, n, name);
    struct fuse f;
    memset(&f, 0, sizeof f);
    f.out = vyre_program_new(name, progs[0]->workgroup[0], 1, 1);
    if (!f.out) return vyre_error_set(err, VYRE_ERR_NOMEM, "vyre.fuse: out of memory");
    f.progs = progs;
    f.n = n;
    f.internal = internal;
    f.ninternal = ninternal;
    f.err = err;
    enum vyre_status st = merge_decls(&f);
    for (f.k = 0; f.k < n && st == VYRE_OK; f.k++) st = check_block(&f, &progs[f.k]->body, 0);
    /* internal buffers start as zero: a buffer of T_len zeroed elements */
    for (size_t i = 0; i < ninternal && st == VYRE_OK; i++) {
        const struct vyre_decl *d = NULL;
        for (size_t k = 0; k < n && !d; k++) d = vyre_ir_find_decl(progs[k], internal[i]);
        if (!vyre_ir_push(f.out, &f.out->body,
                          vyre_ir_let(f.out, internal[i], vyre_ir_lit(f.out, d->type, 0))))
            f.oom = true;
    }
    for (f.k = 0; f.k < n && st == VYRE_OK && !f.oom; f.k++) {
        const vyre_program *p = progs[f.k];
        f.nrenames = 0;
        bool wrap = f.k + 1 < n && has_return(&p->body);
        if (!wrap) {
            if (!copy_block(&f, &p->body, &f.out->body, false)) f.oom = true;
            continue;
        }
        char once[40];
        snprintf(once, sizeof once, "fuse_once_%zu", f.k + 1);
        struct vyre_stmt *loop =
            vyre_ir_for(f.out, local_name(&f, once), vyre_ir_lit(f.out, VYRE_U32, 0),
                        vyre_ir_lit(f.out, VYRE_U32, 1), vyre_ir_lit(f.out, VYRE_U32, 1));
        if (!loop || !copy_block(&f, &p->body, &loop->then_, true) ||
            !vyre_ir_push(f.out, &f.out->body, loop))
            f.oom = true;
    }
    free(f.taken);
    if (st == VYRE_OK && (f.oom || f.out->oom))
        st = vyre_error_set(err, VYRE_ERR_NOMEM,
                            "vyre.fuse: out of memory (or more than 1024 renamed locals in one "
                            "program). Fix: fuse smaller programs");
    if (st == VYRE_OK) st = vyre_ensure_valid(f.out, err);
    if (st != VYRE_OK) {
        vyre_program_free(f.out);
        return st;
    }
    *out = f.out;
    return VYRE_OK;
}
