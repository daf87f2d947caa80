/* race.c — the reference interpreter's race check (vyre_ref_run_options.races:
 * vyre.random_program must be race-free, and nothing else could say so).
 *
 * Every buffer and shared element gets a shadow: its last write (or atomic) and its two
 * last readers of different invocations, each as (invocation, workgroup run, barrier
 * epoch, grid section). Two accesses are ordered when one invocation made both, when
 * they are in one workgroup run with a barrier between them (the epoch moved), or when a
 * grid section boundary (a grid barrier) lies between them. Two unordered accesses of
 * one element race when one is a plain store, or one is a store and the other an atomic;
 * atomics among themselves and reads among themselves never race. Shared arrays belong
 * to one workgroup run: their shadows are cleared when a workgroup starts.
 *
 * The check is an observer: it never changes a value, only counts and words the first
 * race. The interpreter runs one invocation at a time, so no locking is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

struct access {
    uint64_t inv;     /* linear invocation id + 1; 0 = none */
    uint32_t wgrun;   /* workgroup run (a counter over the whole run) */
    uint32_t epoch;   /* barriers passed in that run (a counter over the whole run) */
    uint32_t section; /* grid section */
    uint32_t atomic;  /* the write was an atomic */
};

struct shadow {
    struct access w, r1, r2; /* last write; last reader, and the one before of another inv */
};

struct vyre_race {
    const vyre_program *p;
    struct shadow **sh; /* per declaration; NULL for params and worklists */
    uint64_t *count;    /* elements per declaration */
    uint32_t wgrun, epoch, section;
    struct vyre_race_report *report;
};

struct vyre_race *vyre_race_new(const vyre_program *p, const struct vyre_mem *mem,
                                struct vyre_race_report *report) {
    struct vyre_race *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    size_t nd = p->ndecls ? p->ndecls : 1;
    r->sh = calloc(nd, sizeof *r->sh);
    r->count = calloc(nd, sizeof *r->count);
    r->p = p;
    r->report = report;
    if (!r->sh || !r->count) {
        vyre_race_free(r);
        return NULL;
    }
    for (uint32_t d = 0; d < p->ndecls; d++) {
        enum vyre_decl_kind k = p->decls[d].kind;
        if (k != VYRE_DECL_BUFFER && k != VYRE_DECL_SHARED) continue;
        r->count[d] = mem[d].count;
        r->sh[d] = calloc(mem[d].count ? mem[d].count : 1, sizeof **r->sh);
        if (!r->sh[d]) {
            vyre_race_free(r);
            return NULL;
        }
    }
    return r;
}

void vyre_race_free(struct vyre_race *r) {
    if (!r) return;
    for (uint32_t d = 0; r->sh && d < r->p->ndecls; d++) free(r->sh[d]);
    free(r->sh);
    free(r->count);
    free(r);
}

void vyre_race_workgroup(struct vyre_race *r) {
    r->wgrun++;
    r->epoch++;
    for (uint32_t d = 0; d < r->p->ndecls; d++)
        if (r->p->decls[d].kind == VYRE_DECL_SHARED && r->sh[d])
            memset(r->sh[d], 0, (r->count[d] ? r->count[d] : 1) * sizeof **r->sh);
}

void vyre_race_barrier(struct vyre_race *r) { r->epoch++; }

void vyre_race_section(struct vyre_race *r) { r->section++; }

static bool ordered(const struct access *a, const struct access *b) {
    return a->inv == 0 || a->inv == b->inv || a->section != b->section ||
           (a->wgrun == b->wgrun && a->epoch != b->epoch);
}

/* gid of invocation inv (1-based linear id) for the message. */
static void gid_of(const struct vyre_exec *x, uint64_t inv, uint64_t g[3]) {
    uint64_t nx = (uint64_t)x->ngroups[0] * x->wgsize[0];
    uint64_t ny = (uint64_t)x->ngroups[1] * x->wgsize[1];
    uint64_t i = inv - 1;
    g[0] = nx ? i % nx : 0;
    g[1] = nx && ny ? i / nx % ny : 0;
    g[2] = nx && ny ? i / nx / ny : 0;
}

static const char *what(enum vyre_race_access a) {
    return a == VYRE_RACE_READ ? "read" : a == VYRE_RACE_WRITE ? "stored to" : "atomically updated";
}

static void report(const struct vyre_exec *x, uint32_t decl, uint64_t index,
                   const struct access *prev, enum vyre_race_access prev_kind,
                   const struct access *cur, enum vyre_race_access cur_kind) {
    struct vyre_race_report *rep = x->race->report;
    if (rep->count++ > 0) return;
    uint64_t a[3], b[3];
    gid_of(x, prev->inv, a);
    gid_of(x, cur->inv, b);
    snprintf(rep->first, sizeof rep->first,
             "program '%s': %s '%s' element %llu: invocation gid (%llu,%llu,%llu) %s it and "
             "gid (%llu,%llu,%llu) %s it with no barrier between",
             x->p->name, x->p->decls[decl].kind == VYRE_DECL_SHARED ? "shared" : "buffer",
             x->p->decls[decl].name, (unsigned long long)index, (unsigned long long)a[0],
             (unsigned long long)a[1], (unsigned long long)a[2], what(prev_kind),
             (unsigned long long)b[0], (unsigned long long)b[1], (unsigned long long)b[2],
             what(cur_kind));
}

void vyre_race_note(const struct vyre_exec *x, const struct vyre_lane *lane, uint32_t decl,
                    uint64_t index, enum vyre_race_access a) {
    struct vyre_race *r = x->race;
    if (!r->sh[decl] || index >= r->count[decl]) return;
    struct shadow *s = &r->sh[decl][index];
    uint64_t nx = (uint64_t)x->ngroups[0] * x->wgsize[0];
    uint64_t ny = (uint64_t)x->ngroups[1] * x->wgsize[1];
    struct access cur = {1u + lane->gid[0] + nx * (lane->gid[1] + ny * (uint64_t)lane->gid[2]),
                         r->wgrun, r->epoch, r->section, a == VYRE_RACE_ATOMIC};
    enum vyre_race_access wkind = s->w.atomic ? VYRE_RACE_ATOMIC : VYRE_RACE_WRITE;
    if (a == VYRE_RACE_READ) {
        if (!ordered(&s->w, &cur)) report(x, decl, index, &s->w, wkind, &cur, a);
        if (s->r1.inv != cur.inv) s->r2 = s->r1;
        s->r1 = cur;
        return;
    }
    /* a store or an atomic: against the last write (atomic with atomic is fine; so are
     * plain stores to element 0 of a converge flag, ARCHITECTURE.md §3 rule 4: many
     * invocations may set FLAG[0] with plain stores of one value) */
    bool flag = r->p->decls[decl].nonempty && index == 0 && !s->w.atomic && !cur.atomic;
    if (!(s->w.atomic && cur.atomic) && !flag && !ordered(&s->w, &cur))
        report(x, decl, index, &s->w, wkind, &cur, a);
    if (!ordered(&s->r1, &cur)) report(x, decl, index, &s->r1, VYRE_RACE_READ, &cur, a);
    else if (!ordered(&s->r2, &cur)) report(x, decl, index, &s->r2, VYRE_RACE_READ, &cur, a);
    s->w = cur;
}
