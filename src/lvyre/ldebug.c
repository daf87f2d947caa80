/* ldebug.c — the debug mode (ARCHITECTURE.md §3, §7): be:debug(on) makes runs and
 * launches count their out-of-bounds loads and stores per declaration; be:oob_report()
 * gives the counts by declaration name. Results do not change: loads past the end still
 * read zero and stores are still dropped.
 * The mode and the backend's own counts are the backend's (vyre_backend_set_debug,
 * vyre_backend_oob_report: a CUDA device counts in the kernels compiled while it is on).
 * The reference runs the binding still makes itself (lkernel.c, lrun.c) count here
 * (vyre_ref_run_options.oob): that report lives in the registry under the backend's
 * address (a light userdata) and is dropped with the backend; the per-run counts are
 * one block the backend keeps. be:oob_report() gives both, summed by name. */
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

/* Pushes be's report table, creating it when asked. Returns false (nothing pushed)
 * when there is none and create is false. */
static bool push_report(lua_State *L, struct lvyre_backend *be, bool create) {
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, be) == LUA_TTABLE) return true;
    lua_pop(L, 1);
    if (!create) return false;
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, be);
    return true;
}

static void drop_report(lua_State *L, struct lvyre_backend *be) {
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, be);
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
        drop_report(L, be);
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
    if (!push_report(L, be, false)) lua_newtable(L);
    drop_report(L, be);
    for (size_t i = 0; i < n; i++) add_counts(L, r[i].name, r[i].loads, r[i].stores);
    vyre_lua_box_release(box);
    return 1;
}

struct vyre_oob_count *lvyre_oob_begin(lua_State *L, struct lvyre_backend *be,
                                       const vyre_program *p, const char *fname) {
    if (!be->debug) return NULL;
    uint32_t nd = vyre_program_decl_count(p);
    if (nd + 1 > be->oob_cap) {
        struct vyre_oob_count *n = realloc(be->oob, (nd + 1) * sizeof *n);
        if (!n) {
            vyre_lua_fail(L, "oom", "%s: out of memory for the debug counts. Fix: free memory",
                          fname);
            return NULL;
        }
        be->oob = n;
        be->oob_cap = nd + 1;
    }
    memset(be->oob, 0, (nd + 1) * sizeof *be->oob);
    return be->oob;
}

void lvyre_oob_end(lua_State *L, struct lvyre_backend *be, const vyre_program *p) {
    if (!be->debug || !be->oob) return;
    uint32_t nd = vyre_program_decl_count(p);
    bool pushed = false;
    for (uint32_t i = 0; i < nd; i++) {
        const struct vyre_oob_count *c = &be->oob[i];
        struct vyre_decl_info d;
        if ((c->loads == 0 && c->stores == 0) || !vyre_program_decl(p, i, &d)) continue;
        if (!pushed) pushed = push_report(L, be, true);
        add_counts(L, d.name, c->loads, c->stores);
    }
    if (pushed) lua_pop(L, 1);
}

void lvyre_oob_free(lua_State *L, struct lvyre_backend *be) {
    free(be->oob);
    be->oob = NULL;
    be->oob_cap = 0;
    drop_report(L, be);
}
