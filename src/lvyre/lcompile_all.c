/* lcompile_all.c — be:compile_all(programs) -> {Kernel, ...}: a list of programs compiled
 * at once through vyre_backend_compile_many (CUDA: the cubins its disk cache lacks are
 * JIT-compiled in worker threads), each kernel the one be:compile(p) gives. The
 * e-graph compiles a rule set's kernels this way before its first iteration. */

#include "lbackend.h"

int lvyre_backend_compile_all(lua_State *L) {
    const char *fname = "vyre.Backend:compile_all";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    if (lua_type(L, 2) != LUA_TTABLE)
        return vyre_lua_fail(L, "arg",
                             "%s: programs must be a list of vyre.Program, got %s. Fix: pass "
                             "e.g. be:compile_all({p1, p2})",
                             fname, luaL_typename(L, 2));
    lua_Integer n = luaL_len(L, 2);
    if (!be->core)
        return vyre_lua_fail(L, "freed", "%s: the backend was freed. Fix: open a new one", fname);
    /* Scratch arrays as userdata: collected even when a check below raises. */
    vyre_program **progs = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *progs, 0);
    vyre_backend_kernel **hs = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *hs, 0);
    lua_createtable(L, (int)n, 0); /* the result */
    int out = lua_gettop(L);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 2, i);
        int pi = lua_gettop(L);
        if (!luaL_testudata(L, pi, VYRE_LUA_PROGRAM))
            return vyre_lua_fail(L, "arg",
                                 "%s: programs[%d] is a %s, not a vyre.Program. Fix: pass a "
                                 "list of programs made by vyre.parse(text) or vyre.program",
                                 fname, (int)i, luaL_typename(L, pi));
        vyre_program *p = vyre_lua_checkprogram_named(L, pi, fname);
        struct vyre_error err;
        if (vyre_program_check(p, &err) != VYRE_OK)
            return vyre_lua_fail(L, "validate",
                                 "%s: programs[%d] ('%s'): %s. Fix: correct the program "
                                 "(vyre.validate(p) lists every problem)",
                                 fname, (int)i, vyre_program_name(p), err.message);
        progs[i - 1] = p;
        lvyre_kernel_new(L, 1, pi); /* not live until the batch compiled */
        lua_seti(L, out, i);
        lua_pop(L, 1); /* the program */
    }
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_backend_compile_many(be->core, progs, (size_t)n, hs, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, out, i);
        lvyre_kernel_adopt(lua_touserdata(L, -1), hs[i - 1]);
        lua_pop(L, 1);
    }
    return 1;
}
