/* sections.c — sections of a program with grid statements and the host-side runner of
 * its grid-level control flow (sections.h). The runner evaluates conditions, loop
 * bounds and round limits with vyre_interp_eval over a "grid lane" whose slots hold
 * only the grid loop variables: the validator allows nothing else in those
 * expressions (literals, params, len, wgsize, ngroups, grid loop variables, exact
 * ops), so the host computes exactly what the GPU would. */
#include "sections.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "sem.h"

/* ---- listing ------------------------------------------------------------------------ */

struct lister {
    struct vyre_section *items;
    uint32_t n, cap;
    bool oom;
};

static void add_section(struct lister *L, const struct vyre_block *b, uint32_t first,
                        uint32_t count, const char *base, const char *field) {
    if (L->oom) return;
    if (L->n == L->cap) {
        uint32_t cap = L->cap ? L->cap * 2u : 8u;
        struct vyre_section *s = realloc(L->items, cap * sizeof *s);
        if (!s) {
            L->oom = true;
            return;
        }
        L->items = s;
        L->cap = cap;
    }
    struct vyre_section *s = &L->items[L->n++];
    s->block = b;
    s->first = first;
    s->count = count;
    snprintf(s->base, sizeof s->base, "%s", base);
    s->field = field;
}

static void list_block(struct lister *L, const struct vyre_block *b, const char *base,
                       const char *field) {
    uint32_t i = 0;
    while (i < b->count && !L->oom) {
        const struct vyre_stmt *s = b->items[i];
        if (!s->grid) {
            uint32_t j = i;
            while (j < b->count && !b->items[j]->grid) j++;
            add_section(L, b, i, j - i, base, field);
            i = j;
            continue;
        }
        char path[VYRE_SECTION_PATH];
        snprintf(path, sizeof path, "%s%s%s[%u]", base, *base ? "." : "", field, i);
        if (s->kind == VYRE_ST_IF) {
            list_block(L, &s->then_, path, "then");
            list_block(L, &s->else_, path, "else");
        } else if (s->kind == VYRE_ST_FOR || s->kind == VYRE_ST_CONVERGE) {
            list_block(L, &s->then_, path, "body");
        }
        i++;
    }
}

bool vyre_sections(const vyre_program *p, struct vyre_section **out, uint32_t *n) {
    struct lister L = {0};
    if (!p->has_grid) add_section(&L, &p->body, 0, p->body.count, "", "body");
    else list_block(&L, &p->body, "", "body");
    if (L.oom) {
        free(L.items);
        *out = NULL;
        *n = 0;
        return false;
    }
    *out = L.items;
    *n = L.n;
    return true;
}

/* ---- running ---------------------------------------------------------------------------- */

struct runner {
    const struct vyre_grid_env *env;
    const struct vyre_section *sections;
    uint32_t nsections;
    const struct vyre_grid_ops *ops;
    struct vyre_exec x;
    struct vyre_lane lane; /* slots: the grid loop variables */
    uint64_t rounds;
    struct vyre_error *err;
};

static vyre_bits eval(struct runner *R, const struct vyre_expr *e) {
    return vyre_interp_eval(&R->x, &R->lane, e);
}

static uint32_t section_of(const struct runner *R, const struct vyre_block *b, uint32_t first) {
    for (uint32_t i = 0; i < R->nsections; i++)
        if (R->sections[i].block == b && R->sections[i].first == first) return i;
    return UINT32_MAX;
}

/* The interpreter's loop rule (interp_exec.c): a step <= 0 runs nothing, and the loop
 * stops where adding the step would pass `to` or wrap. */
static bool positive_step(enum vyre_type t, vyre_bits step) {
    if (step == 0) return false;
    if (t == VYRE_I32) return (step & UINT64_C(0x80000000)) == 0;
    if (t == VYRE_I64) return (step & UINT64_C(0x8000000000000000)) == 0;
    return true;
}

static bool less(enum vyre_type t, vyre_bits a, vyre_bits b) {
    return vyre_sem_binary(VYRE_OP_LT, t, a, b) != 0;
}

static enum vyre_status run_block(struct runner *R, const struct vyre_block *b);

static enum vyre_status run_for(struct runner *R, const struct vyre_stmt *s) {
    enum vyre_type t = s->from->type;
    vyre_bits v = eval(R, s->from), to = eval(R, s->to), step = eval(R, s->step);
    if (!positive_step(t, step) || !less(t, v, to)) return VYRE_OK;
    for (;;) {
        R->lane.slots[s->slot] = v;
        enum vyre_status st = run_block(R, &s->then_);
        if (st != VYRE_OK) return st;
        vyre_bits next = vyre_sem_binary(VYRE_OP_ADD, t, v, step);
        if (less(t, next, v) || !less(t, next, to)) break;
        /* a back edge: one step, as inside a section (interp_exec.c) */
        if (R->ops->tick && (st = R->ops->tick(R->ops->ud, R->err)) != VYRE_OK) return st;
        v = next;
    }
    R->lane.slots[s->slot] = 0;
    return VYRE_OK;
}

/* FLAG[0] = 0; r = 0; while r < MAX: body; r++; stop if FLAG[0] == 0 or r == MAX;
 * FLAG[0] = 0. An empty flag buffer never gets here: launches refuse it; the
 * `has` guards below stay as a second line. */
static bool holds_converge(const struct vyre_block *b) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        if (s->grid &&
            (s->kind == VYRE_ST_CONVERGE || holds_converge(&s->then_) || holds_converge(&s->else_)))
            return true;
    }
    return false;
}

/* The same protocol with every round replayed (ops->round_*): the recorded round zeroes
 * the flag itself, which is what the loop above does before every round. */
static enum vyre_status run_replayed(struct runner *R, const struct vyre_stmt *s, uint32_t max) {
    const struct vyre_grid_ops *ops = R->ops;
    bool recorded = false, set = true;
    enum vyre_status st = ops->round_open(ops->ud, s, R->lane.slots, &recorded, R->err);
    if (st == VYRE_OK && !recorded) st = ops->round_close(ops->ud, run_block(R, &s->then_), R->err);
    uint32_t r = 0;
    while (st == VYRE_OK && r < max && set) {
        st = ops->round_run(ops->ud, &set, R->err);
        if (st == VYRE_OK) r++;
    }
    R->rounds += r;
    return st;
}

/* A converge on a worklist: body; r++; the worklist advances (wl_round); stop when the
 * round pushed nothing, overflowed, or r == MAX. No flag, no replay (a recorded round
 * would have to record the advance's decision too). */
static enum vyre_status run_converge_wl(struct runner *R, const struct vyre_stmt *s) {
    const struct vyre_grid_ops *ops = R->ops;
    uint32_t max = (uint32_t)eval(R, s->value), r = 0;
    enum vyre_status st = VYRE_OK;
    if (!ops->wl_round)
        return vyre_error_set(R->err, VYRE_ERR_UNSUPPORTED,
                              "program '%s': this executor cannot advance a worklist between "
                              "rounds. Fix: run it on the reference or cooperatively on CUDA",
                              R->env->p->name);
    while (r < max) {
        st = run_block(R, &s->then_);
        if (st != VYRE_OK) break;
        r++;
        bool more = false;
        st = ops->wl_round(ops->ud, s->decl, &more, R->err);
        if (st != VYRE_OK || !more || r == max) break;
        if (ops->tick && (st = ops->tick(ops->ud, R->err)) != VYRE_OK) break; /* back edge */
    }
    R->rounds += r;
    return st;
}

static enum vyre_status run_converge(struct runner *R, const struct vyre_stmt *s) {
    const struct vyre_grid_ops *ops = R->ops;
    if (R->env->p->decls[s->decl].kind == VYRE_DECL_WORKLIST) return run_converge_wl(R, s);
    bool has = R->env->counts[s->decl] > 0;
    uint32_t max = (uint32_t)eval(R, s->value), r = 0;
    if (has && max > 0 && ops->round_open && !holds_converge(&s->then_))
        return run_replayed(R, s, max);
    enum vyre_status st = has ? ops->flag_zero(ops->ud, s->decl, R->err) : VYRE_OK;
    while (st == VYRE_OK && r < max) {
        st = run_block(R, &s->then_);
        if (st != VYRE_OK) break;
        r++;
        bool set = false;
        if (has) st = ops->flag_read(ops->ud, s->decl, &set, R->err);
        if (st != VYRE_OK || !set || r == max) break;
        if (ops->tick && (st = ops->tick(ops->ud, R->err)) != VYRE_OK) break; /* back edge */
        st = ops->flag_zero(ops->ud, s->decl, R->err);
    }
    R->rounds += r;
    return st;
}

static enum vyre_status run_block(struct runner *R, const struct vyre_block *b) {
    uint32_t i = 0;
    while (i < b->count) {
        const struct vyre_stmt *s = b->items[i];
        enum vyre_status st = VYRE_OK;
        if (!s->grid) {
            uint32_t k = section_of(R, b, i);
            if (k == UINT32_MAX)
                return vyre_error_set(R->err, VYRE_ERR_RUNTIME,
                                      "program '%s': a section was not listed. Fix: report this "
                                      "bug (sections.c)",
                                      R->env->p->name);
            st = R->ops->section(R->ops->ud, k, R->lane.slots, R->err);
            if (st != VYRE_OK) return st;
            i += R->sections[k].count;
            continue;
        }
        switch (s->kind) {
        case VYRE_ST_IF: st = run_block(R, eval(R, s->cond) ? &s->then_ : &s->else_); break;
        case VYRE_ST_FOR: st = run_for(R, s); break;
        case VYRE_ST_CONVERGE: st = run_converge(R, s); break;
        default: break; /* grid_barrier: the boundary is the next section's start */
        }
        if (st != VYRE_OK) return st;
        i++;
    }
    return VYRE_OK;
}

enum vyre_status vyre_grid_run(const struct vyre_grid_env *env, const struct vyre_section *sections,
                               uint32_t n, const struct vyre_grid_ops *ops, uint64_t *rounds,
                               struct vyre_error *err) {
    const vyre_program *p = env->p;
    struct runner R;
    memset(&R, 0, sizeof R);
    R.env = env;
    R.sections = sections;
    R.nsections = n;
    R.ops = ops;
    R.err = err;
    size_t nd = p->ndecls ? p->ndecls : 1u;
    struct vyre_mem *mem = calloc(nd, sizeof *mem);
    vyre_bits *slots = calloc(p->nslots ? p->nslots : 1u, sizeof *slots);
    if (!mem || !slots) {
        free(mem);
        free(slots);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "program '%s': out of memory running its grid-level control "
                              "flow. Fix: free memory",
                              p->name);
    }
    for (uint32_t d = 0; d < p->ndecls; d++) {
        const struct vyre_decl *dc = &p->decls[d];
        mem[d].type = dc->type;
        mem[d].count = dc->kind == VYRE_DECL_SHARED ? dc->count : env->counts[d];
    }
    R.x.p = p;
    R.x.mem = mem;
    R.x.param_bits = (vyre_bits *)(uintptr_t)env->param_bits;
    memcpy(R.x.wgsize, env->wgsize, sizeof R.x.wgsize);
    memcpy(R.x.ngroups, env->ngroups, sizeof R.x.ngroups);
    R.lane.slots = slots;
    enum vyre_status st = run_block(&R, &p->body);
    if (rounds) *rounds = R.rounds;
    free(mem);
    free(slots);
    return st;
}
