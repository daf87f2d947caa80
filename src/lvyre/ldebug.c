/* ldebug.c — the debug mode (ARCHITECTURE.md §3, §7): be:debug(on) makes runs and
 * launches count their out-of-bounds loads and stores per declaration; be:oob_report()
 * gives the counts by declaration name. Results do not change: loads past the end still
 * read zero and stores are still dropped. The mode and the counts are the backend's
 * (vyre_backend_set_debug, vyre_backend_oob_report: the reference counts in its
 * interpreter, a CUDA device in the kernels compiled while it is on). */
#include <stdlib.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

static struct lvyre_backend *checkbackend(lua_State *L, const char *fname) {
    struct lvyre_backend *be = luaL_testudata(L, 1, VYRE_LUA_BACKEND);
    if (!be) vyre_lua_wrongself(L, 1, VYRE_LUA_BACKEND, fname);
    if (!be->open)
        vyre_lua_fail(L, "freed", "%s: the backend was freed. Fix: open a new one", fname);
    return be;
}

/* be:debug([on]) -> on. Switching (either way) starts a new report. On CUDA the device
 * keeps the mode and the counts (src/core/cuda/debug.c): kernels compiled while it is on
 * count on the device, and a report waits for the device. */
int lvyre_backend_debug(lua_State *L) {
    struct lvyre_backend *be = checkbackend(L, "vyre.Backend:debug");
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TBOOLEAN)
            return vyre_lua_fail(
                L, "type", "vyre.Backend:debug: on must be a boolean (got %s). Fix: be:debug(true)",
                luaL_typename(L, 2));
        bool on = lua_toboolean(L, 2);
        struct vyre_error err;
        if (vyre_backend_set_debug(be->core, on, &err) != VYRE_OK)
            return vyre_lua_raise(L, "vyre.Backend:debug", &err);
        be->debug = on;
    }
    lua_pushboolean(L, be->debug);
    return 1;
}

static void add_field(lua_State *L, const char *key, uint64_t n) {
    lua_Integer old = lua_getfield(L, -1, key) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 1);
    lua_pushinteger(L, old + (lua_Integer)n);
    lua_setfield(L, -2, key);
}

/* Adds loads and stores of declaration name into the report table on top. */
static void add_counts(lua_State *L, const char *name, uint64_t loads, uint64_t stores) {
    if (lua_getfield(L, -1, name) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 2);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, name);
    }
    add_field(L, "loads", loads);
    add_field(L, "stores", stores);
    lua_pop(L, 1);
}

/* be:oob_report() -> {name = {loads = n, stores = n}, ...}: the declarations that had
 * out-of-bounds accesses since debug mode was switched on or the last report (which
 * this one resets); {} when there were none or debug mode is off. */
int lvyre_backend_oob_report(lua_State *L) {
    const char *fname = "vyre.Backend:oob_report";
    struct lvyre_backend *be = checkbackend(L, fname);
    void **box = vyre_lua_newbox(L); /* frees the report if building the table raises */
    struct vyre_backend_oob *r = NULL;
    size_t n = 0;
    struct vyre_error err;
    if (vyre_backend_oob_report(be->core, &r, &n, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    *box = r;
    lua_createtable(L, 0, (int)n);
    for (size_t i = 0; i < n; i++) add_counts(L, r[i].name, r[i].loads, r[i].stores);
    vyre_lua_box_release(box);
    return 1;
}
