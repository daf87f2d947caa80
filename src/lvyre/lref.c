/* lref.c — core.grid(p, counts, n, grid): the §5 launch geometry both backends size
 * launches with, for scripts and specs that want to see it without launching. */
#include "lvyre.h"
#include "lvyre_box.h"

/* core.grid(p, counts, n, grid [, fname]) -> x, y, z */
static int ref_grid(lua_State *L) {
    lua_settop(L, 5); /* scratch memory is pushed above the arguments */
    vyre_program *p = vyre_lua_checkprogram(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *fname = luaL_optstring(L, 5, "vyre.grid");
    size_t n = (size_t)lua_rawlen(L, 2);
    uint64_t *counts = vyre_lua_scratch(L, (n + 1) * sizeof *counts);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        counts[i] = (uint64_t)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
    }
    lua_Integer elems = 0;
    if (!lua_isnoneornil(L, 3)) {
        int isnum = 0;
        elems = lua_tointegerx(L, 3, &isnum);
        if (!isnum || elems < 0)
            return vyre_lua_fail(L, "arg",
                                 "%s: n must be a non-negative integer (got %s). Fix: pass "
                                 "{n = element_count}",
                                 fname, luaL_tolstring(L, 3, NULL));
    }
    uint32_t explicit_grid[3], out[3];
    bool has_grid = !lua_isnoneornil(L, 4);
    if (has_grid) vyre_lua_checkgrid(L, 4, explicit_grid, fname);
    struct vyre_error err;
    vyre_error_clear(&err);
    struct vyre_grid_options o = {counts, n, (uint64_t)elems, has_grid ? explicit_grid : NULL};
    if (vyre_launch_grid(p, &o, out, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    for (int a = 0; a < 3; a++) lua_pushinteger(L, (lua_Integer)out[a]);
    return 3;
}

static const luaL_Reg ref_funcs[] = {{"grid", ref_grid}, {NULL, NULL}};

void vyre_lua_open_ref(lua_State *L) { luaL_setfuncs(L, ref_funcs, 0); }
