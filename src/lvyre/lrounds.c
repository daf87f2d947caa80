/* lrounds.c — rounds that converge on a worklist (docs/GRID.md): be:sequence(steps,
 * {converge = {worklist = wl, max = N}}) and be:megakernel with the same option. The
 * prefix steps run once; then each round runs the other steps once and advances wl,
 * and the loop stops after a round that pushed nothing (or after max rounds). The
 * number of rounds run is returned, as the flag form of be:megakernel returns it.
 *
 * This is a host loop on every backend, through the backend interface: each round is one
 * vyre_backend_sequence, then the worklist's advance and its count are read back (an
 * overflow is reported there, naming the capacity needed). be:sequence uses it; be:megakernel composes the rounds into one
 * program that converges on the worklist instead (lmega.c). */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

/* Reads opts.converge = {worklist = wl, max = N} at opts (a table or nil). false when
 * opts has no converge.worklist (the caller's own forms apply). */
bool lvyre_read_wl_converge(lua_State *L, int opts, struct lvyre_backend *be,
                            struct lvyre_worklist **wl, uint32_t *max, const char *fname) {
    if (!lua_istable(L, opts)) return false;
    lua_getfield(L, opts, "converge");
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return false;
    }
    lua_getfield(L, -1, "worklist");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 2);
        return false;
    }
    struct lvyre_worklist *w = lvyre_testworklist(L, -1);
    if (!w || !w->live || w->be != be)
        vyre_lua_fail(L, "arg",
                      "%s: opts.converge.worklist must be a live vyre.Worklist of this backend. "
                      "Fix: {converge = {worklist = be:worklist('u32', capacity), max = 1000}}",
                      fname);
    lua_getfield(L, -2, "max");
    int isnum = 0;
    lua_Integer m = lua_tointegerx(L, -1, &isnum);
    if (!isnum || m < 1 || m > (lua_Integer)UINT32_MAX)
        vyre_lua_fail(L, "arg",
                      "%s: opts.converge.max must be an integer >= 1 (the most rounds). Fix: "
                      "{converge = {worklist = wl, max = 1000}}",
                      fname);
    lua_getfield(L, opts, "times");
    if (!lua_isnil(L, -1))
        vyre_lua_fail(L, "arg",
                      "%s: opts.times and opts.converge exclude each other. Fix: converge "
                      "repeats the steps itself (at most converge.max rounds)",
                      fname);
    lua_pop(L, 4);
    *wl = w;
    *max = (uint32_t)m;
    return true;
}

static void add_timing(struct vyre_timing *sum, const struct vyre_timing *t) {
    sum->wall_ns += t->wall_ns;
    sum->device_ns += t->device_ns;
    sum->enqueue_ns += t->enqueue_ns;
    sum->wait_ns += t->wait_ns;
}

/* One sequence of the interface's steps bs[0..n), synchronised, timed into *t. */
static void run_steps(lua_State *L, struct lvyre_backend *be, const struct vyre_backend_step *bs,
                      size_t n, struct vyre_timing *t, const char *fname) {
    struct vyre_timing one = {0, 0, 0, 0};
    struct vyre_sequence_options o = {.prefix = n, .timing = &one};
    struct vyre_error err;
    bool guarded = lvyre_refguard_enter(be, &err);
    enum vyre_status st = vyre_backend_sequence(be->core, bs, n, &o, &err);
    lvyre_refguard_leave(guarded, st, &err);
    if (st != VYRE_OK) vyre_lua_raise(L, fname, &err);
    add_timing(t, &one);
}

uint64_t lvyre_rounds_by_worklist(lua_State *L, struct lvyre_backend *be, struct lvyre_step *steps,
                                  size_t n, size_t prefix, struct lvyre_worklist *wl, uint32_t max,
                                  struct vyre_timing *t, const char *fname) {
    uint64_t rounds = 0;
    memset(t, 0, sizeof *t);
    size_t m = 0, mprefix = 0;
    const struct vyre_backend_step *bs = lvyre_backend_steps(L, steps, n, prefix, &m, &mprefix);
    if (!bs)
        vyre_lua_fail(L, "arg",
                      "%s: a collective cannot be a step of rounds converging on a worklist. "
                      "Fix: run the collective in its own be:sequence",
                      fname);
    for (size_t i = 0; i < n; i++)
        if (steps[i].k) lvyre_bound_check(L, steps[i].k, &steps[i].b, fname);
    if (mprefix) run_steps(L, be, bs, mprefix, t, fname);
    while (rounds < max) {
        /* the round's steps with one sync; the advance is enqueued behind them (a
         * device: no sync of its own) and the count read back, which reports an
         * overflow */
        run_steps(L, be, bs + mprefix, m - mprefix, t, fname);
        rounds++;
        struct vyre_error err;
        struct vyre_backend_worklist_state s;
        lvyre_worklist_check(L, wl, fname);
        if (vyre_backend_worklist_advance(wl->h, &err) != VYRE_OK ||
            vyre_backend_worklist_state(wl->h, &s, &err) != VYRE_OK)
            vyre_lua_raise(L, fname, &err);
        if (s.overflow_needed)
            lvyre_worklist_overflow_error(L, fname, s.capacity, s.overflow_needed);
        if (s.cur_count == 0) break; /* the round pushed nothing */
    }
    return rounds;
}
