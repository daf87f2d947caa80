/* lgraph.c — vyre.Graph: a list of launch steps captured once and replayed with
 * g:launch([times [, timed]]), through the backend interface (vyre_backend_graph_*: on
 * CUDA an instantiated CUDA graph, arguments captured by value; on the reference the
 * recorded steps, replayed on the interpreter in order). Collective steps are a CUDA
 * device's own kernels: a graph with one is that device's own capture (cu below).
 * User value 1 keeps the backend alive, user value 2 a list of
 * every kernel and buffer the steps use (the graph's own, so changing the caller's
 * table later changes nothing), user value 3 the recorded steps, which a replay checks
 * for freed kernels and buffers on both backends before it runs anything. */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

struct lvyre_graph {
    struct lvyre_backend *be;
    bool live;
    vyre_backend_graph *h;    /* the interface's graph (NULL: no step launches anything) */
    vyre_cuda_graph *cu;      /* steps with collectives: the CUDA device's own graph */
    struct lvyre_step *steps; /* user value 3's memory */
    size_t nsteps;
};

static struct lvyre_graph *tograph(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_GRAPH);
}

/* Pushes a list of every kernel, bound buffer and worklist of the steps table at idx. */
static void push_holder(lua_State *L, int idx, const struct lvyre_step *steps, size_t n) {
    lua_newtable(L);
    lua_Integer m = 0;
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, idx, (lua_Integer)i + 1);
        lua_rawgeti(L, -1, 1);
        lua_rawseti(L, -3, ++m);
        if (steps[i].coll) { /* the Collective keeps its group and buffers alive */
            lua_pop(L, 1);
            continue;
        }
        lua_rawgeti(L, -1, 2);
        for (uint32_t d = 0; d < steps[i].k->lay->ndecls; d++) {
            enum vyre_decl_kind kd = steps[i].k->lay->d[d].kind;
            if (kd != VYRE_DECL_BUFFER && kd != VYRE_DECL_WORKLIST) continue;
            lua_getfield(L, -1, steps[i].k->lay->d[d].name);
            lua_rawseti(L, -4, ++m);
        }
        lua_pop(L, 1);
        lua_rawgeti(L, -1, 3); /* opts: a worklist sizing the step ({n = wl}) */
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "n");
            if (lvyre_testworklist(L, -1)) lua_rawseti(L, -4, ++m);
            else lua_pop(L, 1);
        }
        lua_pop(L, 2);
    }
}

/* Raises unless every kernel and buffer the graph uses is still live. */
static void check_live(lua_State *L, const struct lvyre_graph *g, const char *fname) {
    for (size_t i = 0; i < g->nsteps; i++) {
        const struct lvyre_step *s = &g->steps[i];
        if (s->coll) {
            lvyre_collective_check(L, s->collud, fname);
            continue;
        }
        if (!s->k->live)
            vyre_lua_fail(L, "freed",
                          "%s: step %d's kernel was freed. Fix: keep kernels alive while a graph "
                          "uses them",
                          fname, (int)i + 1);
        for (uint32_t b = 0; b < s->k->lay->nbuffers; b++)
            if (!s->b.buf[b]->live)
                vyre_lua_fail(L, "freed",
                              "%s: step %d's buffer %d was freed. Fix: keep buffers alive while "
                              "a graph uses them",
                              fname, (int)i + 1, (int)b + 1);
        for (uint32_t w = 0; w < s->k->lay->nworklists; w++)
            if (!s->b.wl[w]->live)
                vyre_lua_fail(L, "freed",
                              "%s: step %d's worklist %d was freed. Fix: keep worklists alive "
                              "while a graph uses them",
                              fname, (int)i + 1, (int)w + 1);
        if (s->b.sized && !s->b.sized->live)
            vyre_lua_fail(L, "freed",
                          "%s: step %d is sized by a freed worklist. Fix: keep worklists alive "
                          "while a graph uses them",
                          fname, (int)i + 1);
    }
}

/* be:graph(steps) -> Graph, captured now. */
int lvyre_backend_graph(lua_State *L) {
    const char *fname = "vyre.Backend:graph";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    lua_settop(L, 2);
    struct lvyre_graph *g = lua_newuserdatauv(L, sizeof *g, 3); /* index 3 */
    memset(g, 0, sizeof *g);
    g->be = be;
    luaL_setmetatable(L, VYRE_LUA_GRAPH);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 3, 1);
    size_t n = 0;
    struct lvyre_step *steps = lvyre_read_steps(L, 2, be, &n, fname); /* scratch at 4 */
    lua_pushvalue(L, 4);
    lua_setiuservalue(L, 3, 3);
    push_holder(L, 2, steps, n);
    lua_setiuservalue(L, 3, 2);
    g->steps = steps;
    size_t kept = 0, kprefix = 0;
    struct vyre_backend_step *bs = lvyre_backend_steps(L, steps, n, 0, &kept, &kprefix);
    if (bs) {
        /* steps with opts.n = 0 launch nothing and are not captured; with none left
         * there is nothing to replay (no graph, so no sync either) */
        struct vyre_error err;
        if (kept > 0 && vyre_backend_graph_capture(be->core, bs, kept, &g->h, &err) != VYRE_OK)
            return vyre_lua_raise(L, fname, &err);
        if (g->h) be->nchildren++; /* closing the backend's core would free the graph */
    } else {                       /* collectives: a CUDA device's own steps (see the top) */
        size_t m = 0;              /* steps with opts.n = 0 launch nothing and are not captured */
        struct vyre_cuda_step *cs = lvyre_cuda_steps(L, steps, n, &m);
        struct vyre_error err;
        if (m > 0 && vyre_cuda_graph_capture(be->dev, cs, m, &g->cu, &err) != VYRE_OK)
            return vyre_lua_raise(L, fname, &err);
    }
    g->nsteps = n;
    g->live = true;
    lua_settop(L, 3);
    return 1;
}

/* g:launch([times [, timed]]) -> g | timing; synchronises. */
static int graph_launch(lua_State *L) {
    const char *fname = "vyre.Graph:launch";
    struct lvyre_graph *g = tograph(L, 1);
    if (!g->live)
        return vyre_lua_fail(L, "freed", "%s: the graph was freed. Fix: capture it again", fname);
    lua_Integer times = vyre_lua_optint(L, 2, 1, fname, "times", "g:launch(1)");
    bool timed = lua_toboolean(L, 3);
    if (times < 0 || times > (lua_Integer)UINT32_MAX)
        return vyre_lua_fail(L, "arg", "%s: times must be >= 0. Fix: g:launch(1)", fname);
    check_live(L, g, fname);
    struct vyre_timing t = {0, 0, 0, 0};
    struct vyre_error err;
    vyre_error_clear(&err);
    for (size_t i = 0; i < g->nsteps; i++) /* an overflow not reported yet */
        if (g->steps[i].k) lvyre_bound_check(L, g->steps[i].k, &g->steps[i].b, fname);
    if (g->h) {
        bool guarded = lvyre_refguard_enter(g->be, &err); /* Ctrl-C stops an interpreter replay */
        enum vyre_status st =
            vyre_backend_graph_launch(g->h, (uint32_t)times, timed ? &t : NULL, &err);
        lvyre_refguard_leave(guarded, st, &err);
        if (st != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    } else if (g->cu) { /* a CUDA graph with collectives */
        if (vyre_cuda_graph_launch(g->cu, (uint32_t)times, timed ? &t : NULL, &err) != VYRE_OK)
            return vyre_lua_raise(L, fname, &err);
    } /* else nothing was captured: every step had opts.n = 0 */
    for (size_t i = 0; i < g->nsteps; i++) /* an overflow the backend knows right away */
        if (g->steps[i].k) lvyre_bound_check(L, g->steps[i].k, &g->steps[i].b, fname);
    if (!timed) {
        lua_settop(L, 1);
        return 1;
    }
    lvyre_pushtiming(L, &t);
    return 1;
}

/* g:free(), __gc, __close: idempotent. */
static int graph_free(lua_State *L) {
    struct lvyre_graph *g = tograph(L, 1);
    if (!g->live) return 0;
    g->live = false;
    if (g->h) {
        vyre_backend_graph *h = g->h;
        g->h = NULL;
        vyre_backend_graph_free(h);
        lvyre_backend_unref(g->be);
    }
    if (g->cu) {
        vyre_cuda_graph *cu = g->cu;
        g->cu = NULL;
        vyre_cuda_graph_free(cu);
    }
    g->steps = NULL;
    for (int uv = 2; uv <= 3; uv++) {
        lua_pushnil(L);
        lua_setiuservalue(L, 1, uv);
    }
    return 0;
}

static int graph_tostring(lua_State *L) {
    struct lvyre_graph *g = tograph(L, 1);
    lua_pushfstring(L, "vyre.Graph(%s, %d steps%s)", lvyre_backend_name(g->be), (int)g->nsteps,
                    g->live ? "" : ", freed");
    return 1;
}

static const luaL_Reg graph_methods[] = {
    {"launch", graph_launch}, {"free", graph_free}, {NULL, NULL}};

static const luaL_Reg graph_meta[] = {
    {"__gc", graph_free}, {"__close", graph_free}, {"__tostring", graph_tostring}, {NULL, NULL}};

void vyre_lua_open_graph(lua_State *L) {
    vyre_lua_newclass(L, VYRE_LUA_GRAPH, graph_methods, graph_meta);
}
