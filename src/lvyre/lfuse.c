/* lfuse.c — core.fuse({p1, p2, ...}, {internal = {"tmp", ...}}) -> Program: launch
 * fusion (src/core/ir/fuse.c; vyre.fuse in Lua). The programs are only read; the
 * result is a new Program. */
#include <string.h>

#include "lvyre.h"

#define FUSE_LUA_MAX 64

static int core_fuse(lua_State *L) {
    const char *fname = "vyre.fuse";
    if (!lua_istable(L, 1))
        return vyre_lua_fail(L, "type",
                             "%s: expected a list of programs (got %s). Fix: vyre.fuse({p1, p2}, "
                             "{internal = {'tmp'}})",
                             fname, luaL_typename(L, 1));
    lua_settop(L, 2); /* the programs are pushed above the two arguments */
    vyre_program *progs[FUSE_LUA_MAX];
    const char *internal[FUSE_LUA_MAX];
    size_t n = (size_t)lua_rawlen(L, 1), ninternal = 0;
    if (n == 0 || n > FUSE_LUA_MAX)
        return vyre_lua_fail(L, "limit",
                             "%s: %d programs; fusion takes 1 to %d. Fix: pass a list such as "
                             "{p1, p2}",
                             fname, (int)n, FUSE_LUA_MAX);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 1, (lua_Integer)i + 1); /* stays on the stack: keeps it alive */
        progs[i] = vyre_lua_checkprogram_named(L, -1, fname);
    }
    if (!lua_isnoneornil(L, 2)) {
        if (!lua_istable(L, 2))
            return vyre_lua_fail(L, "type",
                                 "%s: options must be a table (got %s). Fix: {internal = {'tmp'}}",
                                 fname, luaL_typename(L, 2));
        static const char *const keys[] = {"internal", NULL};
        vyre_lua_checkopts(L, 2, keys, fname);
        if (lua_getfield(L, 2, "internal") != LUA_TNIL) {
            if (!lua_istable(L, -1))
                return vyre_lua_fail(L, "arg",
                                     "%s: internal must be a list of buffer names. Fix: "
                                     "{internal = {'tmp'}}",
                                     fname);
            int t = lua_gettop(L);
            ninternal = (size_t)lua_rawlen(L, t);
            if (ninternal > FUSE_LUA_MAX)
                return vyre_lua_fail(L, "limit", "%s: more than %d internal buffers", fname,
                                     FUSE_LUA_MAX);
            for (size_t i = 0; i < ninternal; i++) {
                if (lua_rawgeti(L, t, (lua_Integer)i + 1) != LUA_TSTRING)
                    return vyre_lua_fail(L, "arg",
                                         "%s: internal[%d] must be a buffer name (got %s). Fix: "
                                         "{internal = {'tmp'}}",
                                         fname, (int)i + 1, luaL_typename(L, -1));
                internal[i] = lua_tostring(L, -1);
            }
        }
    }
    struct vyre_lua_program *lp = lua_newuserdatauv(L, sizeof *lp, 0);
    lp->p = NULL;
    luaL_setmetatable(L, VYRE_LUA_PROGRAM);
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_program_fuse(progs, n, internal, ninternal, &lp->p, &err) != VYRE_OK) {
        const char *msg = err.message;
        if (strncmp(msg, "vyre.fuse: ", 11) == 0) msg += 11; /* say the name once */
        return vyre_lua_fail(L, "arg", "%s: %s", fname, msg);
    }
    return 1;
}

void vyre_lua_open_fuse(lua_State *L) {
    lua_pushcfunction(L, core_fuse);
    lua_setfield(L, -2, "fuse");
}
