/* mega.c — megakernels (vyre_mega.h, docs/GRID.md): the barrier planner and the
 * composition of a sequence of programs into one program with grid statements.
 *
 * Planner: a step reads the buffers it loads, writes those it stores, and both for
 * atomics; two steps depend on each other through memory that one writes and the
 * other reads or writes. Memory, not buffer identity: a view and its parent are two
 * bound ids of one allocation, and a write through either must be ordered after a read
 * through the other (vyre_mega_memory: root allocation and byte range per id). Kahn
 * layering puts every step in the first layer after all steps it depends on; a grid
 * barrier goes only between layers.
 *
 * Composition: each step's statements are copied with every name prefixed (s<J>_),
 * its buffers renamed to the bound buffer's (mg_b<id>) and its builtins replaced by the
 * step's own geometry. A layer is one section whose virtual workgroups are the
 * concatenation of its steps' workgroups: an if-chain on wgid.x sends each virtual
 * workgroup to exactly one step (so a `return` ends only that step, and the PTX emitter
 * overlaps the shared arrays of different steps), where wgid, gid and ngroups are
 * recomputed from the step's grid. The composed text is parsed and validated like any
 * program, so both backends run it and the reference defines its results. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "vyre_mega.h"

/* A plan is shared between a cache (mega_cache.c) and whoever planned or looked it up,
 * possibly on other threads: a reference count next to it, so an eviction never frees a
 * plan someone still runs. vyre_mega_free drops one reference. */
struct mega_box {
    atomic_uint refs;
    struct vyre_mega m;
};

static struct mega_box *box_of(struct vyre_mega *m) {
    return (struct mega_box *)(void *)((char *)m - offsetof(struct mega_box, m));
}

struct vyre_mega *vyre_mega_retain(struct vyre_mega *m) {
    if (m) atomic_fetch_add_explicit(&box_of(m)->refs, 1u, memory_order_relaxed);
    return m;
}

const char *vyre_mega_dep_name(enum vyre_mega_dep_kind k) {
    return k == VYRE_DEP_RAW ? "RAW" : k == VYRE_DEP_WAR ? "WAR" : k == VYRE_DEP_WAW ? "WAW" : "?";
}

/* ---- read and write sets ------------------------------------------------------------ */

enum { ACC_R = 1, ACC_W = 2, ACC_W2 = 4 /* written through an alias */ };

static void acc_expr(const vyre_program *p, const struct vyre_expr *e, uint8_t *acc) {
    if (!e) return;
    if (e->kind == VYRE_EX_LOAD && p->decls[e->u.access.decl].kind == VYRE_DECL_BUFFER)
        acc[p->decls[e->u.access.decl].slot] |= ACC_R;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) acc_expr(p, ops[i], acc);
}

static void acc_block(const vyre_program *p, const struct vyre_block *b, uint8_t *acc) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        const struct vyre_expr *es[] = {s->value, s->index, s->expected, s->cond,
                                        s->from,  s->to,    s->step};
        for (size_t k = 0; k < sizeof es / sizeof es[0]; k++) acc_expr(p, es[k], acc);
        if ((s->kind == VYRE_ST_STORE || s->kind == VYRE_ST_ATOMIC) &&
            p->decls[s->decl].kind == VYRE_DECL_BUFFER)
            acc[p->decls[s->decl].slot] |= s->kind == VYRE_ST_ATOMIC ? ACC_R | ACC_W : ACC_W;
        acc_block(p, &s->then_, acc);
        acc_block(p, &s->else_, acc);
    }
}

/* Per bound buffer id: what step s does to it. */
static void step_access(const struct vyre_mega_step *s, uint8_t *by_id, uint32_t nbuffers) {
    uint8_t acc[VYRE_MAX_BUFFERS] = {0};
    acc_block(s->program, &s->program->body, acc);
    memset(by_id, 0, nbuffers);
    for (uint32_t i = 0; i < s->program->nbuffers; i++)
        if (s->buffers[i] < nbuffers) by_id[s->buffers[i]] |= acc[i];
}

static uint32_t max_id(const struct vyre_mega_step *steps, uint32_t n) {
    uint32_t m = 0;
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < steps[j].program->nbuffers; i++)
            if (steps[j].buffers[i] + 1u > m) m = steps[j].buffers[i] + 1u;
    return m;
}

/* Whether ids a and b can touch the same bytes. */
static bool overlaps(const struct vyre_mega_memory *mem, uint32_t a, uint32_t b) {
    if (a == b) return true;
    if (!mem) return false;
    const struct vyre_mega_memory *x = &mem[a], *y = &mem[b];
    if (x->root != y->root || !x->bytes || !y->bytes) return false;
    return x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes;
}

/* What step-access row x does to the memory of id b: the union over every id that
 * overlaps b. */
static uint8_t access_of(const uint8_t *x, uint32_t nb, const struct vyre_mega_memory *mem,
                         uint32_t b) {
    if (!mem) return x[b];
    uint8_t a = 0;
    for (uint32_t i = 0; i < nb; i++)
        if (x[i] && overlaps(mem, i, b)) a |= x[i];
    return a;
}

enum vyre_status vyre_mega_deps(const struct vyre_mega_step *steps, uint32_t n,
                                const struct vyre_mega_memory *memory, struct vyre_mega_dep **out,
                                uint32_t *ndeps, struct vyre_error *err) {
    if (!out || !ndeps || (n && !steps))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_mega_deps: NULL argument. Fix: pass the steps, out and ndeps");
    *out = NULL;
    *ndeps = 0;
    for (uint32_t j = 0; j < n; j++)
        if (!steps[j].program || (steps[j].program->nbuffers && !steps[j].buffers))
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "vyre_mega_deps: step %u has no program or no buffer ids. Fix: "
                                  "fill program and buffers of every step",
                                  j + 1);
    uint32_t nb = max_id(steps, n);
    uint8_t *acc = calloc((size_t)n * (nb ? nb : 1u), 1);
    size_t cap = 16;
    struct vyre_mega_dep *d = malloc(cap * sizeof *d);
    if (!acc || !d) goto nomem;
    for (uint32_t j = 0; j < n; j++) step_access(&steps[j], acc + (size_t)j * nb, nb);
    for (uint32_t j = 0; j < n; j++) {
        for (uint32_t i = 0; i < j; i++) {
            for (uint32_t b = 0; b < nb; b++) {
                uint8_t y = acc[(size_t)j * nb + b];
                if (!y) continue;
                uint8_t x = access_of(acc + (size_t)i * nb, nb, memory, b);
                enum vyre_mega_dep_kind k;
                if ((x & ACC_W) && (y & ACC_R)) k = VYRE_DEP_RAW;
                else if ((x & ACC_W) && (y & ACC_W)) k = VYRE_DEP_WAW;
                else if ((x & ACC_R) && (y & ACC_W)) k = VYRE_DEP_WAR;
                else continue;
                if (*ndeps == cap) {
                    cap *= 2;
                    struct vyre_mega_dep *nd = realloc(d, cap * sizeof *nd);
                    if (!nd) goto nomem;
                    d = nd;
                }
                d[(*ndeps)++] = (struct vyre_mega_dep){i, j, b, k};
            }
        }
    }
    free(acc);
    *out = d;
    return VYRE_OK;
nomem:
    free(acc);
    free(d);
    *ndeps = 0;
    return vyre_error_set(err, VYRE_ERR_NOMEM, "megakernel: out of memory. Fix: free memory");
}

/* ---- Kahn layering ------------------------------------------------------------------------ */

enum vyre_status vyre_mega_layers(uint32_t n, const struct vyre_mega_dep *deps, uint32_t ndeps,
                                  uint32_t *layer, uint32_t *nlayers, struct vyre_error *err) {
    if (!nlayers || (n && !layer) || (ndeps && !deps))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_mega_layers: NULL argument. Fix: pass layer (n entries), "
                              "nlayers, and deps when ndeps > 0");
    *nlayers = 0;
    for (uint32_t e = 0; e < ndeps; e++) {
        if (deps[e].from >= n || deps[e].to >= n)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "megakernel planner: dependency %u names step %u of %u. Fix: "
                                  "number steps from 0",
                                  e + 1, (deps[e].from >= n ? deps[e].from : deps[e].to) + 1, n);
        if (deps[e].from == deps[e].to)
            return vyre_error_set(err, VYRE_ERR_INVALID,
                                  "megakernel planner: step %u depends on itself (%s on buffer "
                                  "%u). Fix: a step that must see its own writes from other "
                                  "workgroups needs a grid_barrier inside it; split it into two "
                                  "steps",
                                  deps[e].from + 1, vyre_mega_dep_name(deps[e].kind),
                                  deps[e].buffer);
    }
    uint32_t *indeg = calloc(n ? n : 1u, sizeof *indeg);
    uint32_t *queue = calloc(n ? n : 1u, sizeof *queue);
    if (!indeg || !queue) {
        free(indeg);
        free(queue);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "megakernel planner: out of memory. Fix: free "
                              "memory");
    }
    for (uint32_t e = 0; e < ndeps; e++) indeg[deps[e].to]++;
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < n; i++) {
        layer[i] = 0;
        if (!indeg[i]) queue[tail++] = i;
    }
    /* Breadth first: a step's layer is 1 + the deepest layer it waits for. */
    while (head < tail) {
        uint32_t i = queue[head++];
        if (layer[i] + 1u > *nlayers) *nlayers = layer[i] + 1u;
        for (uint32_t e = 0; e < ndeps; e++) {
            if (deps[e].from != i) continue;
            uint32_t j = deps[e].to;
            if (layer[i] + 1u > layer[j]) layer[j] = layer[i] + 1u;
            if (--indeg[j] == 0) queue[tail++] = j;
        }
    }
    enum vyre_status st = VYRE_OK;
    if (tail < n) {
        for (uint32_t i = 0; i < n; i++)
            if (indeg[i]) layer[i] = UINT32_MAX; /* never ready: the caller can list them */
        char list[256] = "";
        size_t off = 0;
        for (uint32_t i = 0; i < n && off + 12 < sizeof list; i++)
            if (indeg[i]) off += (size_t)snprintf(list + off, sizeof list - off, " %u", i + 1);
        st = vyre_error_set(err, VYRE_ERR_INVALID,
                            "megakernel planner: the dependencies form a cycle; steps%s are never "
                            "ready. Fix: remove the dependency that closes the cycle, or run "
                            "those steps in separate rounds",
                            list);
    }
    free(indeg);
    free(queue);
    return st;
}

/* ---- composition ---------------------------------------------------------------------------- */

struct sbuf {
    char *s;
    size_t len, cap;
    bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2u : 4096u;
        while (cap < b->len + (size_t)n + 1u) cap *= 2u;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

struct renamer {
    vyre_program *p; /* the step's copy */
    const struct vyre_mega_step *step;
    const uint32_t *wl; /* the step's worklist ids (per worklist slot) */
    bool sized;         /* sized by a worklist: ngroups is mg<J>_dg* */
    uint32_t j;        /* step number (1-based in names) */
    bool remap;        /* lid comes from the megakernel's 1-D workgroup */
    const uint32_t *w; /* the step's workgroup */
    bool fail;
};

static char *rn(struct renamer *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *rn(struct renamer *r, const char *fmt, ...) {
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || n > VYRE_MAX_NAME) r->fail = true;
    char *s = vyre_arena_strdup(r->p, buf);
    if (!s) r->fail = true;
    return s;
}

static const char *buf_name(struct renamer *r, const char *name) {
    const struct vyre_decl *d = vyre_ir_find_decl(r->p, name);
    if (d && d->kind == VYRE_DECL_BUFFER) return rn(r, "mg_b%u", r->step->buffers[d->slot]);
    if (d && d->kind == VYRE_DECL_WORKLIST) return rn(r, "mg_w%u", r->wl[d->slot]);
    return rn(r, "s%u_%s", r->j, name);
}

static void rename_expr(struct renamer *r, struct vyre_expr *e) {
    static const char ax[3] = {'x', 'y', 'z'};
    if (!e || r->fail) return;
    switch (e->kind) {
    case VYRE_EX_NAME: e->u.name.name = rn(r, "s%u_%s", r->j, e->u.name.name); return;
    case VYRE_EX_LOAD:
    case VYRE_EX_LEN: e->u.access.buf = (char *)buf_name(r, e->u.access.buf); break;
    case VYRE_EX_BUILTIN: {
        unsigned a = e->u.builtin.axis % 3u;
        switch (e->u.builtin.which) {
        case VYRE_WGSIZE:
            e->kind = VYRE_EX_LIT;
            e->type = VYRE_U32;
            e->u.lit.bits = r->w[a];
            return;
        case VYRE_LID:
            if (!r->remap) return;
            e->kind = VYRE_EX_NAME;
            e->u.name.name = rn(r, "mg%u_lid%c", r->j, ax[a]);
            return;
        case VYRE_WGID:
        case VYRE_GID:
        case VYRE_NGROUPS: {
            /* a step sized by a worklist: ngroups is computed each round (mg<J>_dg*) */
            const char *what = e->u.builtin.which == VYRE_WGID  ? "wg"
                               : e->u.builtin.which == VYRE_GID ? "gid"
                               : r->sized                       ? "dg"
                                                                : "g";
            e->kind = VYRE_EX_NAME;
            e->u.name.name = rn(r, "mg%u_%s%c", r->j, what, ax[a]);
            return;
        }
        default: return;
        }
    }
    default: break;
    }
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) rename_expr(r, ops[i]);
}

static void rename_block(struct renamer *r, struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count && !r->fail; i++) {
        struct vyre_stmt *s = b->items[i];
        if (s->name) s->name = rn(r, "s%u_%s", r->j, s->name);
        if (s->buf) s->buf = (char *)buf_name(r, s->buf);
        struct vyre_expr *es[] = {s->value, s->index, s->expected, s->cond,
                                  s->from,  s->to,    s->step};
        for (size_t k = 0; k < sizeof es / sizeof es[0]; k++) rename_expr(r, es[k]);
        rename_block(r, &s->then_);
        rename_block(r, &s->else_);
    }
}

/* true when some invocation of the step waits for the others: a workgroup barrier or a
 * subgroup op that exchanges values. Such a step cannot have idle invocations. */
static bool expr_syncs(const struct vyre_expr *e) {
    if (!e) return false;
    if (e->kind == VYRE_EX_SUBGROUP && vyre_subgroup_communicates(e->u.op.sg)) return true;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++)
        if (expr_syncs(ops[i])) return true;
    return false;
}

static bool block_syncs(const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        const struct vyre_expr *es[] = {s->value, s->index, s->expected, s->cond,
                                        s->from,  s->to,    s->step};
        if (s->kind == VYRE_ST_BARRIER) return true;
        for (size_t k = 0; k < sizeof es / sizeof es[0]; k++)
            if (expr_syncs(es[k])) return true;
        if (block_syncs(&s->then_) || block_syncs(&s->else_)) return true;
    }
    return false;
}

static enum vyre_status fail(struct vyre_error *err, enum vyre_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum vyre_status fail(struct vyre_error *err, enum vyre_status st, const char *fmt, ...) {
    char msg[VYRE_MSG_MAX - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vyre_error_set(err, st, "megakernel: %s", msg);
}

static bool block_returns(const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->kind == VYRE_ST_RETURN || block_returns(&s->then_) || block_returns(&s->else_))
            return true;
    }
    return false;
}

/* The statements of step j (1-based), renamed, with the prelude that gives them the
 * step's geometry; appended to text. *drains: the sized step loops over its workgroups
 * in windows of its own grid (vyre_mega.drains). */
static enum vyre_status step_text(const struct vyre_mega_step *st, uint32_t j, const uint32_t mw[3],
                                  bool same_wg, const uint32_t *wl, uint32_t sized_by,
                                  struct sbuf *text, struct sbuf *decls, bool *drains,
                                  struct vyre_error *err) {
    const vyre_program *sp = st->program;
    vyre_program *p = NULL;
    enum vyre_status s = vyre_program_copy(sp, &p, err);
    if (s != VYRE_OK) return s;
    const uint32_t *w = sp->workgroup;
    uint32_t t = w[0] * w[1] * w[2], mt = mw[0] * mw[1] * mw[2];
    bool sized = sized_by != UINT32_MAX;
    *drains = sized && !block_returns(&sp->body) && sp->nshared == 0;
    struct renamer r = {p, st, wl, sized, j, !same_wg, w, false};
    if (!same_wg && t < mt && block_syncs(&p->body)) {
        vyre_program_free(p);
        return fail(err, VYRE_ERR_UNSUPPORTED,
                    "step %u ('%s') has %u invocations per workgroup and a barrier or subgroup "
                    "op, but the megakernel's workgroup has %u: its workgroups cannot be "
                    "re-mapped. Fix: give every step the same workgroup size, or run the steps "
                    "with be:sequence",
                    j, sp->name, t, mt);
    }
    for (uint32_t d = 0; d < p->ndecls; d++) {
        const struct vyre_decl *dc = &p->decls[d];
        if (dc->kind == VYRE_DECL_SHARED)
            sb_printf(decls, "\n  (shared s%u_%s %s %u)", j, dc->name, vyre_type_name(dc->type),
                      dc->count);
    }
    rename_block(&r, &p->body);
    if (r.fail) {
        vyre_program_free(p);
        return fail(err, VYRE_ERR_LIMIT,
                    "step %u ('%s'): a name gets longer than %d characters with its step "
                    "prefix. Fix: use names of at most %d characters",
                    j, sp->name, VYRE_MAX_NAME, VYRE_MAX_NAME - 6);
    }
    char *body = NULL;
    s = vyre_text_print_part(p, NULL, NULL, &p->body, 0, p->body.count, &body);
    vyre_program_free(p);
    if (s != VYRE_OK) return fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    static const char ax[3] = {'x', 'y', 'z'};
    sb_printf(text, "\n(let mg%u_v (sub (wgid x) mg%u_off))", j, j);
    if (sized) {
        /* {n = wl}: ceil(len / wgsize.x) workgroups this round, 1-D; the layer's virtual
         * grid covers the capacity, the rest skip */
        sb_printf(text,
                  "\n(let mg%u_dgx (add (div (len mg_w%u) %uu32) (select (ne (rem (len mg_w%u) "
                  "%uu32) 0u32) 1u32 0u32)))",
                  j, sized_by, w[0], sized_by, w[0]);
        sb_printf(text, "\n(let mg%u_dgy 1u32)\n(let mg%u_dgz 1u32)", j, j);
        if (*drains) /* workgroups v, v + window, ... below this round's count */
            sb_printf(text, "\n(for mg%u_c mg%u_v mg%u_dgx (sub mg%u_end mg%u_off)", j, j, j, j, j);
        else
            sb_printf(text, "\n(if (lt mg%u_v mg%u_dgx) (then", j, j);
        sb_printf(text, "\n(let mg%u_wgx mg%u_%s)\n(let mg%u_wgy 0u32)\n(let mg%u_wgz 0u32)", j,
                  j, *drains ? "c" : "v", j, j);
    } else {
        sb_printf(text, "\n(let mg%u_t (div mg%u_v mg%u_gx))", j, j, j);
        sb_printf(text, "\n(let mg%u_wgx (rem mg%u_v mg%u_gx))", j, j, j);
        sb_printf(text, "\n(let mg%u_wgy (rem mg%u_t mg%u_gy))", j, j, j);
        sb_printf(text, "\n(let mg%u_wgz (div mg%u_t mg%u_gy))", j, j, j);
    }
    if (!same_wg) {
        sb_printf(text, "\n(let mg%u_lidx (rem (lid x) %uu32))", j, w[0]);
        sb_printf(text, "\n(let mg%u_lidy (rem (div (lid x) %uu32) %uu32))", j, w[0], w[1]);
        sb_printf(text, "\n(let mg%u_lidz (div (lid x) %uu32))", j, w[0] * w[1]);
    }
    for (int a = 0; a < 3; a++) {
        if (same_wg)
            sb_printf(text, "\n(let mg%u_gid%c (add (mul mg%u_wg%c %uu32) (lid %c)))", j, ax[a], j,
                      ax[a], w[a], ax[a]);
        else
            sb_printf(text, "\n(let mg%u_gid%c (add (mul mg%u_wg%c %uu32) mg%u_lid%c))", j, ax[a],
                      j, ax[a], w[a], j, ax[a]);
    }
    if (!same_wg && t < mt) sb_printf(text, "\n(if (lt (lid x) %uu32) (then%s))", t, body);
    else sb_printf(text, "%s", body);
    if (sized) sb_printf(text, *drains ? ")" : "))");
    free(body);
    return VYRE_OK;
}

struct build {
    const struct vyre_mega_step *steps;
    const struct vyre_mega_options *o;
    struct vyre_mega *m;
    uint32_t n;
    uint32_t mw[3];
    bool same_wg;
    struct sbuf text, decls;
};

/* One layer: an if-chain over the virtual workgroup, one branch per step. */
static enum vyre_status layer_text(struct build *B, const uint32_t *layer, uint32_t l,
                                   uint32_t from, uint32_t to, struct vyre_error *err) {
    uint32_t open = 0;
    for (uint32_t j = from; j < to; j++) {
        if (layer[j] != l) continue;
        sb_printf(&B->text, "\n(if (lt (wgid x) mg%u_end) (then", j + 1);
        const uint32_t *wl = B->o->step_worklists ? B->o->step_worklists[j] : NULL;
        uint32_t by = B->o->sized_by ? B->o->sized_by[j] : UINT32_MAX;
        enum vyre_status s = step_text(&B->steps[j], j + 1, B->mw, B->same_wg, wl, by, &B->text,
                                       &B->decls, &B->m->drains[j], err);
        if (s != VYRE_OK) return s;
        sb_printf(&B->text, ") (else");
        open++;
    }
    for (uint32_t i = 0; i < open; i++) sb_printf(&B->text, "))");
    return VYRE_OK;
}

static enum vyre_status layers_text(struct build *B, const uint32_t *layer, uint32_t first_layer,
                                    uint32_t nlayers, uint32_t from, uint32_t to,
                                    struct vyre_error *err) {
    for (uint32_t l = first_layer; l < first_layer + nlayers; l++) {
        if (l > first_layer) sb_printf(&B->text, "\n(grid_barrier)");
        enum vyre_status s = layer_text(B, layer, l, from, to, err);
        if (s != VYRE_OK) return s;
    }
    return VYRE_OK;
}

/* The barrier after each layer boundary: a dependency into the next layer from it. */
static void pick_barriers(struct vyre_mega *m) {
    m->nbarriers = 0;
    for (uint32_t l = 0; l + 1 < m->nlayers; l++) {
        const struct vyre_mega_dep *best = NULL; /* RAW before WAW before WAR */
        for (uint32_t e = 0; e < m->ndeps; e++) {
            const struct vyre_mega_dep *d = &m->deps[e];
            if (m->layer[d->from] != l || m->layer[d->to] != l + 1) continue;
            int rank = d->kind == VYRE_DEP_RAW ? 0 : d->kind == VYRE_DEP_WAW ? 1 : 2;
            int best_rank = !best                        ? 3
                            : best->kind == VYRE_DEP_RAW ? 0
                            : best->kind == VYRE_DEP_WAW ? 1
                                                         : 2;
            if (rank < best_rank) best = d;
        }
        if (best) {
            m->barriers[m->nbarriers] = *best;
            m->after_layer[m->nbarriers++] = l;
        }
    }
}

static enum vyre_status plan_layers(struct vyre_mega *m, uint32_t prefix, struct vyre_error *err) {
    /* prefix steps and round steps are layered apart: the boundary between them (and
     * between rounds) is a grid barrier anyway */
    struct vyre_mega_dep *sub = malloc((m->ndeps ? m->ndeps : 1u) * sizeof *sub);
    if (!sub) return fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    uint32_t nl[2] = {0, 0};
    enum vyre_status s = VYRE_OK;
    for (int part = 0; part < 2 && s == VYRE_OK; part++) {
        uint32_t lo = part ? prefix : 0, hi = part ? m->nsteps : prefix, k = 0;
        for (uint32_t e = 0; e < m->ndeps; e++) {
            const struct vyre_mega_dep *d = &m->deps[e];
            if (d->from >= lo && d->from < hi && d->to >= lo && d->to < hi) {
                sub[k] = *d;
                sub[k].from -= lo;
                sub[k].to -= lo;
                k++;
            }
        }
        s = vyre_mega_layers(hi - lo, sub, k, m->layer + lo, &nl[part], err);
    }
    free(sub);
    if (s != VYRE_OK) return s;
    for (uint32_t j = prefix; j < m->nsteps; j++) m->layer[j] += nl[0];
    m->nlayers = nl[0] + nl[1];
    return VYRE_OK;
}

static enum vyre_status compose(struct vyre_mega *m, struct build *B, const enum vyre_type *types,
                                const struct vyre_mega_options *o, struct vyre_error *err) {
    uint32_t prefix = o->prefix;
    /* always a program with grid statements, even for one layer: its sections get the
     * shared-memory layout that overlaps the steps of a layer, and it runs the way the
     * plan says (cooperative or split) */
    sb_printf(&B->text, "\n(grid_barrier)");
    uint32_t nl0 = prefix ? m->layer[prefix - 1] + 1u : 0;
    for (uint32_t j = 0; j < prefix; j++)
        if (m->layer[j] + 1u > nl0) nl0 = m->layer[j] + 1u;
    enum vyre_status s = layers_text(B, m->layer, 0, nl0, 0, prefix, err);
    if (s != VYRE_OK) return s;
    bool rounds = o->repeat || o->converge || o->converge_wl;
    if (prefix && prefix < B->n) sb_printf(&B->text, "\n(grid_barrier)");
    if (o->converge_wl) sb_printf(&B->text, "\n(converge mg_w%u mg_max", o->wl);
    else if (o->converge) sb_printf(&B->text, "\n(converge mg_b%u mg_max", o->flag);
    else if (o->repeat) sb_printf(&B->text, "\n(for mg_round 0u32 mg_times 1u32 (grid_barrier)");
    s = layers_text(B, m->layer, nl0, m->nlayers - nl0, prefix, B->n, err);
    if (s != VYRE_OK) return s;
    if (rounds) sb_printf(&B->text, ")");
    /* the whole program */
    uint8_t *acc = calloc(m->nbuffers ? m->nbuffers : 1u, 1), *one = malloc(m->nbuffers + 1u);
    if (!acc || !one) {
        free(acc);
        free(one);
        return fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    }
    for (uint32_t j = 0; j < B->n; j++) {
        step_access(&B->steps[j], one, m->nbuffers);
        for (uint32_t b = 0; b < m->nbuffers; b++) acc[b] |= one[b];
    }
    if (o->converge) acc[o->flag] |= ACC_W;
    /* an id read here while overlapping memory is written through another id (a view
     * and its parent) is read_write: `read` may load through the non-coherent cache,
     * which would not see the other id's writes of an earlier layer */
    if (o->memory)
        for (uint32_t b = 0; b < m->nbuffers; b++)
            for (uint32_t w = 0; w < m->nbuffers && !(acc[b] & ACC_W); w++)
                if ((acc[w] & ACC_W) && overlaps(o->memory, b, w)) acc[b] |= ACC_W2;
    struct sbuf all = {0};
    if (B->same_wg)
        sb_printf(&all, "(program megakernel (workgroup %u %u %u)", B->mw[0], B->mw[1], B->mw[2]);
    else sb_printf(&all, "(program megakernel (workgroup %u)", B->mw[0]);
    for (uint32_t b = 0; b < m->nbuffers; b++)
        sb_printf(&all, "\n  (buffer mg_b%u %s %s)", b, vyre_type_name(types[b]),
                  acc[b] & (ACC_W | ACC_W2) ? "read_write" : "read");
    free(acc);
    free(one);
    for (uint32_t w = 0; w < o->nworklists; w++)
        sb_printf(&all, "\n  (worklist mg_w%u %s)", w, vyre_type_name(o->worklist_types[w]));
    sb_printf(&all, "%s", B->decls.s ? B->decls.s : "");
    for (uint32_t j = 0; j < B->n; j++) {
        uint32_t k = j + 1;
        sb_printf(&all, "\n  (param mg%u_end u32) (param mg%u_off u32)", k, k);
        sb_printf(&all, " (param mg%u_gx u32) (param mg%u_gy u32) (param mg%u_gz u32)", k, k, k);
        const vyre_program *sp = B->steps[j].program;
        for (uint32_t d = 0; d < sp->ndecls; d++)
            if (sp->decls[d].kind == VYRE_DECL_PARAM)
                sb_printf(&all, "\n  (param s%u_%s %s)", k, sp->decls[d].name,
                          vyre_type_name(sp->decls[d].type));
    }
    if (o->converge || o->converge_wl) sb_printf(&all, "\n  (param mg_max u32)");
    else if (o->repeat) sb_printf(&all, "\n  (param mg_times u32)");
    sb_printf(&all, "%s)\n", B->text.s ? B->text.s : "");
    if (all.oom || B->text.oom || B->decls.oom) {
        free(all.s);
        return fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    }
    s = vyre_text_parse(all.s, all.len, &m->program, err);
    free(all.s);
    if (s != VYRE_OK) return s;
    struct vyre_error inner;
    if (vyre_ensure_valid(m->program, &inner) != VYRE_OK)
        return fail(err, inner.status,
                    "the composed program is invalid (%.3000s). Fix: compose fewer steps per "
                    "megakernel (each step adds 5 params, 128 at most), or run the steps with "
                    "be:sequence",
                    inner.message);
    m->key = vyre_program_hash(m->program);
    return VYRE_OK;
}

enum vyre_status vyre_mega_build(const struct vyre_mega_step *steps, uint32_t n, uint32_t nbuffers,
                                 const enum vyre_type *buffer_types,
                                 const struct vyre_mega_options *o, struct vyre_mega **out,
                                 struct vyre_error *err) {
    if (!out || !steps || !buffer_types || !o)
        return fail(err, VYRE_ERR_ARG,
                    "vyre_mega_build: NULL argument. Fix: pass steps, buffer_types, options "
                    "and out");
    *out = NULL;
    if (n == 0) return fail(err, VYRE_ERR_ARG, "no steps. Fix: pass at least one step");
    if (o->prefix > n)
        return fail(err, VYRE_ERR_ARG,
                    "prefix %u is longer than the %u steps. Fix: prefix <= #steps", o->prefix, n);
    if (o->converge && o->flag >= nbuffers)
        return fail(err, VYRE_ERR_ARG,
                    "the flag buffer id %u is not below %u. Fix: pass a bound "
                    "buffer id",
                    o->flag, nbuffers);
    if (o->converge && o->converge_wl)
        return fail(err, VYRE_ERR_ARG,
                    "converge on a flag and on a worklist at once. Fix: pick one");
    if (o->converge_wl && o->wl >= o->nworklists)
        return fail(err, VYRE_ERR_ARG,
                    "the converge worklist id %u is not below %u. Fix: pass a bound worklist id",
                    o->wl, o->nworklists);
    if (o->nworklists && !o->worklist_types)
        return fail(err, VYRE_ERR_ARG, "no worklist types. Fix: pass worklist_types");
    if (o->converge && buffer_types[o->flag] != VYRE_U32 && buffer_types[o->flag] != VYRE_I32 &&
        buffer_types[o->flag] != VYRE_BOOL)
        return fail(err, VYRE_ERR_ARG,
                    "the converge flag holds %s. Fix: use a u32 (or i32, bool) buffer as flag",
                    vyre_type_name(buffer_types[o->flag]));
    for (uint32_t j = 0; j < n; j++) {
        vyre_program *p = steps[j].program;
        if (!p || (p->nbuffers && !steps[j].buffers))
            return fail(err, VYRE_ERR_ARG,
                        "step %u has no program or no buffer ids. Fix: fill program and "
                        "buffers of every step",
                        j + 1);
        enum vyre_status s = vyre_ensure_valid(p, err);
        if (s != VYRE_OK) return s;
        if (p->has_grid)
            return fail(err, VYRE_ERR_UNSUPPORTED,
                        "step %u ('%s') has grid statements of its own. Fix: split it at its "
                        "grid barriers into several steps",
                        j + 1, p->name);
        for (uint32_t i = 0; i < p->nworklists; i++)
            if (!o->step_worklists || !o->step_worklists[j] ||
                o->step_worklists[j][i] >= o->nworklists)
                return fail(err, VYRE_ERR_ARG,
                            "step %u binds no worklist id below %u for its worklist %u. Fix: "
                            "fill options.step_worklists",
                            j + 1, o->nworklists, i + 1);
        if (o->sized_by && o->sized_by[j] != UINT32_MAX && o->sized_by[j] >= o->nworklists)
            return fail(err, VYRE_ERR_ARG,
                        "step %u is sized by worklist id %u of %u. Fix: a bound worklist id",
                        j + 1, o->sized_by[j], o->nworklists);
        for (uint32_t i = 0; i < p->nbuffers; i++)
            if (steps[j].buffers[i] >= nbuffers)
                return fail(err, VYRE_ERR_ARG,
                            "step %u binds buffer id %u of %u. Fix: ids "
                            "below nbuffers",
                            j + 1, steps[j].buffers[i], nbuffers);
    }
    struct mega_box *box = calloc(1, sizeof *box);
    if (!box) return fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    atomic_init(&box->refs, 1u);
    struct vyre_mega *m = &box->m;
    m->nsteps = n;
    m->nbuffers = nbuffers;
    m->layer = calloc(n, sizeof *m->layer);
    m->barriers = calloc(n, sizeof *m->barriers);
    m->after_layer = calloc(n, sizeof *m->after_layer);
    m->drains = calloc(n, sizeof *m->drains);
    enum vyre_status s = VYRE_OK;
    if (!m->layer || !m->barriers || !m->after_layer || !m->drains)
        s = fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    if (s == VYRE_OK) s = vyre_mega_deps(steps, n, o->memory, &m->deps, &m->ndeps, err);
    if (s == VYRE_OK) s = plan_layers(m, o->prefix, err);
    if (s == VYRE_OK) {
        pick_barriers(m);
        struct build B = {steps, o, m, n, {0, 0, 0}, true, {0}, {0}};
        memcpy(B.mw, steps[0].program->workgroup, sizeof B.mw);
        uint32_t most = 0;
        for (uint32_t j = 0; j < n; j++) {
            const uint32_t *w = steps[j].program->workgroup;
            if (memcmp(w, B.mw, sizeof B.mw) != 0) B.same_wg = false;
            if (w[0] * w[1] * w[2] > most) most = w[0] * w[1] * w[2];
        }
        if (!B.same_wg) {
            B.mw[0] = most;
            B.mw[1] = B.mw[2] = 1;
            for (uint32_t j = 0; j < n; j++) m->remapped++;
        }
        memcpy(m->workgroup, B.mw, sizeof B.mw);
        s = compose(m, &B, buffer_types, o, err);
        free(B.text.s);
        free(B.decls.s);
    }
    if (s != VYRE_OK) {
        vyre_mega_free(m);
        return s;
    }
    *out = m;
    return VYRE_OK;
}

void vyre_mega_free(struct vyre_mega *m) {
    if (!m) return;
    struct mega_box *box = box_of(m);
    /* acq_rel: the last owner sees every other owner's reads of the plan finished */
    if (atomic_fetch_sub_explicit(&box->refs, 1u, memory_order_acq_rel) != 1u) return;
    vyre_program_free(m->program);
    free(m->layer);
    free(m->deps);
    free(m->barriers);
    free(m->after_layer);
    free(m->drains);
    free(box);
}

enum vyre_status vyre_mega_args(const struct vyre_mega *m, const struct vyre_mega_args_options *o,
                                vyre_bits *params, uint32_t grid[3], struct vyre_error *err) {
    if (!m || !o || !o->steps || !params || !grid || (!o->step_params && m->nsteps))
        return fail(err, VYRE_ERR_ARG,
                    "vyre_mega_args: NULL argument. Fix: pass the plan, options with its steps "
                    "and their params, and params and grid to fill");
    const struct vyre_mega_step *steps = o->steps;
    const vyre_bits *const *step_params = o->step_params;
    uint64_t *layer_total = calloc(m->nlayers ? m->nlayers : 1u, sizeof *layer_total);
    if (!layer_total) return fail(err, VYRE_ERR_NOMEM, "out of memory. Fix: free memory");
    uint32_t k = 0;
    uint64_t most = 1;
    enum vyre_status s = VYRE_OK;
    for (uint32_t j = 0; j < m->nsteps && s == VYRE_OK; j++) {
        const uint32_t *g = steps[j].grid;
        uint64_t nj = (uint64_t)g[0] * g[1] * g[2];
        uint64_t off = layer_total[m->layer[j]];
        layer_total[m->layer[j]] += nj;
        if (layer_total[m->layer[j]] > most) most = layer_total[m->layer[j]];
        if (most > 2147483647u) {
            s = fail(err, VYRE_ERR_LIMIT,
                     "layer %u runs %llu workgroups, more than one launch can (2^31-1). Fix: "
                     "run these steps with be:sequence",
                     m->layer[j] + 1, (unsigned long long)most);
            break;
        }
        params[k++] = off + nj; /* end */
        params[k++] = off;      /* off */
        for (int a = 0; a < 3; a++) params[k++] = g[a] ? g[a] : 1u;
        for (uint32_t i = 0; i < steps[j].program->nparams; i++) params[k++] = step_params[j][i];
    }
    bool converge = false, repeat = false;
    for (uint32_t d = 0; d < m->program->ndecls; d++) {
        const char *nm = m->program->decls[d].name;
        if (m->program->decls[d].kind != VYRE_DECL_PARAM) continue;
        converge |= strcmp(nm, "mg_max") == 0;
        repeat |= strcmp(nm, "mg_times") == 0;
    }
    if (converge) params[k++] = o->max_rounds;
    else if (repeat) params[k++] = o->times;
    grid[0] = (uint32_t)most;
    grid[1] = grid[2] = 1;
    free(layer_total);
    return s;
}
