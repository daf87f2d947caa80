/* llaunch.c — vyre.Launch: a kernel with its arguments matched once
 * (`local l = k:bind(args, opts)`), relaunched with `l:launch()` or `l()`. This is the
 * launch floor from Lua: names, types and params are resolved at bind time and the
 * backend prepares the launch (vyre_backend_prepare: on a device its own argument block
 * and grid), so a launch only checks that the bound buffers are still live and enqueues
 * (vyre_backend_launch_prepared). A prepared launch belongs to the backend's core, so
 * the Launch counts as one of its children (lvyre_backend_unref). User value 1 keeps the
 * kernel alive, user value 2 the bound buffers. */
#include <string.h>

#include "lbackend.h"

struct lvyre_launch {
    struct lvyre_kernel *k;      /* NULL once released */
    struct lvyre_backend *be;    /* whose core owns prep; NULL when prep is NULL */
    struct lvyre_bound b;        /* the matched arguments */
    vyre_backend_prepared *prep; /* the backend's prepared launch; NULL for {n = 0} */
    bool wl;                     /* binds or is sized by worklists: overflows checked */
};

/* Prepares l's launch on its backend; an empty launch ({n = 0}) keeps nothing. */
static void prepare(lua_State *L, struct lvyre_launch *l, struct lvyre_kernel *k,
                    const char *fname) {
    if (l->b.empty) return;
    struct lvyre_args s;
    struct vyre_backend_args a;
    lvyre_backend_args(k, &l->b, &s, &a);
    struct vyre_error err;
    if (vyre_backend_prepare(k->h, &a, &l->prep, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    l->be = k->be;
    l->wl = k->lay->nworklists || l->b.sized;
    k->be->nchildren++; /* prep is the core's: it stays open until launch_free */
}

static struct lvyre_launch *checklaunch(lua_State *L, const char *fname) {
    struct lvyre_launch *l = vyre_lua_checkself(L, 1, VYRE_LUA_LAUNCH);
    if (!l->k)
        vyre_lua_fail(L, "freed",
                      "%s: the bound launch was freed. Fix: bind again with k:bind(args, opts)",
                      fname);
    return l;
}

/* k:bind(args, opts) -> vyre.Launch */
int lvyre_kernel_bind(lua_State *L) {
    const char *fname = "vyre.Kernel:bind";
    struct lvyre_kernel *k = lvyre_checkkernel(L, 1, fname);
    lvyre_kernel_program(L, k, fname);
    lua_settop(L, 3);
    struct lvyre_launch *l = lua_newuserdatauv(L, sizeof *l, 2); /* index 4 */
    memset(l, 0, sizeof *l);
    luaL_setmetatable(L, VYRE_LUA_LAUNCH);
    lvyre_match(L, 2, 3, k->lay, k->be, LVYRE_MATCH_LAUNCH, &l->b, fname);
    uint32_t grid[3];
    lvyre_kernel_grid(L, k, &l->b, grid, fname); /* checks the geometry now, on both backends */
    prepare(L, l, k, fname);
    /* Keep every bound buffer and worklist alive: their pointers are in l->b. */
    lua_createtable(L, (int)k->lay->nbuffers, 0);
    for (uint32_t i = 0; i < k->lay->ndecls; i++) {
        const struct lvyre_decl *d = &k->lay->d[i];
        if (d->kind != VYRE_DECL_BUFFER && d->kind != VYRE_DECL_WORKLIST) continue;
        lua_getfield(L, 2, d->name);
        lua_rawseti(L, -2,
                    (lua_Integer)(d->kind == VYRE_DECL_BUFFER ? d->slot + 1
                                                              : k->lay->nbuffers + d->slot + 1));
    }
    if (l->b.sized) { /* the worklist sizing the launch ({n = wl}) */
        lua_getfield(L, 3, "n");
        lua_rawseti(L, -2, (lua_Integer)(k->lay->nbuffers + k->lay->nworklists + 1));
    }
    lua_setiuservalue(L, 4, 2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 4, 1);
    l->k = k;
    return 1;
}

/* l:launch() / l() -> l. The hot path: no allocation, no strings. */
static int launch_launch(lua_State *L) {
    const char *fname = "vyre.Launch:launch";
    struct lvyre_launch *l = checklaunch(L, fname);
    if (!l->k->live)
        return vyre_lua_fail(L, "freed",
                             "%s: the kernel was freed. Fix: keep the kernel alive while its "
                             "bound launches are used",
                             fname);
    for (uint32_t s = 0; s < l->k->lay->nbuffers; s++)
        if (!l->b.buf[s]->live)
            return vyre_lua_fail(L, "freed",
                                 "%s: bound buffer %d was freed. Fix: bind again with live "
                                 "buffers",
                                 fname, (int)s + 1);
    for (uint32_t s = 0; s < l->k->lay->nworklists; s++)
        if (!l->b.wl[s]->live)
            return vyre_lua_fail(L, "freed",
                                 "%s: bound worklist %d was freed. Fix: bind again with live "
                                 "worklists",
                                 fname, (int)s + 1);
    if (l->b.sized && !l->b.sized->live)
        return vyre_lua_fail(L, "freed",
                             "%s: the worklist sizing this launch was freed. Fix: bind again "
                             "with a live worklist",
                             fname);
    if (l->prep) { /* NULL: opts.n was 0, nothing to launch */
        if (l->wl) lvyre_bound_check(L, l->k, &l->b, fname); /* an overflow not reported */
        struct vyre_error err;
        bool guarded = lvyre_refguard_enter(l->be, &err);
        enum vyre_status st = vyre_backend_launch_prepared(l->prep, &err);
        lvyre_refguard_leave(guarded, st, &err);
        if (st != VYRE_OK) return vyre_lua_raise(L, fname, &err);
        if (l->wl) lvyre_bound_check(L, l->k, &l->b, fname);
    }
    lua_settop(L, 1);
    return 1;
}

/* l:free(), __gc, __close: frees the prepared launch and drops the references. */
static int launch_free(lua_State *L) {
    struct lvyre_launch *l = vyre_lua_checkself(L, 1, VYRE_LUA_LAUNCH);
    l->k = NULL;
    if (l->prep) { /* idempotent: __gc after free finds it NULL */
        vyre_backend_prepared_free(l->prep);
        l->prep = NULL;
        lvyre_backend_unref(l->be);
        l->be = NULL;
    }
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 1);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 2);
    return 0;
}

static int launch_tostring(lua_State *L) {
    struct lvyre_launch *l = vyre_lua_checkself(L, 1, VYRE_LUA_LAUNCH);
    if (!l->k) lua_pushstring(L, "vyre.Launch(freed)");
    else lua_pushfstring(L, "vyre.Launch(%s, %s)", lvyre_backend_name(l->k->be), l->k->name);
    return 1;
}

static const luaL_Reg launch_methods[] = {
    {"launch", launch_launch}, {"free", launch_free}, {NULL, NULL}};

static const luaL_Reg launch_meta[] = {{"__call", launch_launch},
                                       {"__gc", launch_free},
                                       {"__close", launch_free},
                                       {"__tostring", launch_tostring},
                                       {NULL, NULL}};

void vyre_lua_open_launch(lua_State *L) {
    vyre_lua_newclass(L, VYRE_LUA_LAUNCH, launch_methods, launch_meta);
}
