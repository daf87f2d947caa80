/* lrun.c — be:run(p, args, opts) and be:run_timed: one-shot dispatch on any backend,
 * through vyre_backend_run (vyre_backend.h). Host data in (vyre.Arrays or tables), host
 * data out (a vyre.Array per write and read_write buffer), the caller's arrays never
 * modified. A Buffer of the backend passed in args is used in place, with no copy either
 * way, and is what the result table holds under its name. */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

/* Everything a run binds, by buffer slot. */
struct run_io {
    struct vyre_buffer_arg in[VYRE_MAX_BUFFERS];     /* host data (NULL data: zero-filled) */
    void *out[VYRE_MAX_BUFFERS];                     /* where results land (host slots) */
    vyre_backend_buffer *resident[VYRE_MAX_BUFFERS]; /* Buffers used in place */
};

/* Fills io and pushes the result table (name -> Array or Buffer) at the top. */
static void prepare_io(lua_State *L, const struct lvyre_layout *lay, const struct lvyre_bound *b,
                       struct run_io *io, const char *fname) {
    lua_createtable(L, 0, (int)lay->nbuffers);
    int res = lua_gettop(L);
    for (uint32_t i = 0; i < lay->ndecls; i++) {
        const struct lvyre_decl *d = &lay->d[i];
        if (d->kind != VYRE_DECL_BUFFER) continue;
        uint32_t s = d->slot;
        io->resident[s] = NULL;
        io->out[s] = NULL;
        bool writes = d->access != VYRE_ACCESS_READ;
        if (b->buf[s]) {
            io->resident[s] = b->buf[s]->h; /* the result is the Buffer itself */
            io->in[s] = (struct vyre_buffer_arg){NULL, b->buf[s]->count};
            continue;
        }
        if (b->arr[s]) {
            io->in[s].data = b->arr[s]->count ? b->arr[s]->data : NULL;
            io->in[s].count = b->arr[s]->count;
        } else {
            io->in[s].data = NULL;
            io->in[s].count = lvyre_output_count(L, lay, b, s, fname);
        }
        if (!writes) continue;
        struct vyre_lua_array *o = vyre_lua_newarray(L, d->type, io->in[s].count);
        /* opts.n = 0 runs nothing: the results are the inputs (zeros where none) */
        if (b->empty && io->in[s].data && o->count)
            memcpy(o->data, io->in[s].data, (size_t)(o->count * vyre_type_size(d->type)));
        io->out[s] = o->data;
        lua_setfield(L, res, d->name);
    }
}

/* Puts the Buffers that were bound in place under their names in the result table. */
static void add_resident_results(lua_State *L, int args, int res, const struct lvyre_layout *lay,
                                 const struct lvyre_bound *b) {
    for (uint32_t i = 0; i < lay->ndecls; i++) {
        const struct lvyre_decl *d = &lay->d[i];
        if (d->kind != VYRE_DECL_BUFFER || d->access == VYRE_ACCESS_READ || !b->buf[d->slot])
            continue;
        lua_getfield(L, args, d->name);
        lua_setfield(L, res, d->name);
    }
}

static int run(lua_State *L, bool timed) {
    const char *fname = timed ? "vyre.Backend:run_timed" : "vyre.Backend:run";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    lua_settop(L, 4);
    vyre_program *p = vyre_lua_checkprogram_named(L, 2, fname);
    struct vyre_error err;
    if (vyre_program_check(p, &err) != VYRE_OK)
        return vyre_lua_fail(L, "validate",
                             "%s: %s. Fix: correct the program (vyre.validate(p) lists every "
                             "problem)",
                             fname, err.message);
    const struct lvyre_layout *lay = lvyre_layout_push(L, 2); /* 5 */
    struct lvyre_bound *b = vyre_lua_scratch(L, sizeof *b);   /* 6 */
    struct run_io *io = vyre_lua_scratch(L, sizeof *io);      /* 7 */
    lvyre_match(L, 3, 4, lay, be, LVYRE_MATCH_RUN, b, fname); /* 8: converted arrays */
    prepare_io(L, lay, b, io, fname);                         /* 9: results */
    int res = lua_gettop(L);
    struct vyre_timing t = {0, 0, 0, 0};
    uint64_t rounds = 0; /* converge rounds (programs with grid statements) */
    if (!b->empty) {     /* opts.n = 0: nothing runs */
        struct vyre_backend_run_options o = {.buffers = io->in,
                                             .resident = io->resident,
                                             .nbuffers = lay->nbuffers,
                                             .params = b->params,
                                             .nparams = lay->nparams,
                                             .n = b->n,
                                             .grid = b->has_grid ? b->grid : NULL,
                                             .out = io->out,
                                             .timing = timed ? &t : NULL,
                                             .rounds = &rounds};
        /* Ctrl-C stops an interpreter loop (lrefguard.c); elsewhere it is raised again
         * for the previous handler once the run returns */
        bool guarded = lvyre_refguard_enter(be, &err);
        enum vyre_status st = vyre_backend_run(be->core, p, &o, &err);
        lvyre_refguard_leave(guarded, st, &err);
        if (st != VYRE_OK) return vyre_lua_raise(L, fname, &err);
        be->st.runs++; /* be:run's counter is the binding's on every backend */
    }
    add_resident_results(L, 3, res, lay, b);
    lua_settop(L, res);
    /* One way for every call (docs/API.md "Vocabulary"): results, rounds, [timing]. */
    lua_pushinteger(L, (lua_Integer)rounds);
    if (!timed) return 2;
    lvyre_pushtiming(L, &t);
    return 3;
}

/* ---- Backend methods (lbackend.h) ---------------------------------------- */

/* be:run(p, args, opts) -> {name = vyre.Array | Buffer} for write/read_write buffers,
 * and for programs with grid statements the rounds their converge loops ran */
int lvyre_backend_run(lua_State *L) { return run(L, false); }

/* be:run_timed(p, args, opts) -> outputs, {wall_ns, device_ns, enqueue_ns, wait_ns, rounds} */
int lvyre_backend_run_timed(lua_State *L) { return run(L, true); }
