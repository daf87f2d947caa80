/* lvyre.c — entry point of the Lua module vyre.core and the helpers every binding
 * file shares: type names, Lua value <-> typed bits conversion (the §7 value
 * conventions; largs.c repeats the common cases inline for speed, and the DSL writes
 * literals as text itself), error raising and class creation. */
#include <math.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lvyre.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static const char *const type_list = "bool, i32, u32, i64, u64, f32, f64";

static int box_gc(lua_State *L) {
    void **box = lua_touserdata(L, 1);
    vyre_lua_box_release(box);
    return 0;
}

/* Integer range of the 32-bit and signed 64-bit integer types. */
static void int_range(enum vyre_type t, lua_Integer *lo, lua_Integer *hi) {
    switch (t) {
    case VYRE_I32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    case VYRE_U32:
        *lo = 0;
        *hi = (lua_Integer)UINT32_MAX;
        break;
    default:
        *lo = LUA_MININTEGER;
        *hi = LUA_MAXINTEGER;
        break;
    }
}

/* Reads an exact integer from a number value; u64 also takes floats in
 * [2^63, 2^64) so that every u64 value written as a float literal fits. */
static vyre_bits int_bits(lua_State *L, int idx, enum vyre_type t, const char *fname,
                          const char *what) {
    int isnum = 0;
    lua_Integer v = lua_tointegerx(L, idx, &isnum);
    if (!isnum) {
        lua_Number d = lua_tonumber(L, idx);
        if (t == VYRE_U64 && d == floor(d) && d >= 9223372036854775808.0 &&
            d < 18446744073709551616.0)
            return (vyre_bits)d;
        if (d != floor(d) || isnan(d))
            vyre_lua_fail(L, "arg",
                          "%s: %s = %s is not an exact integer, so it cannot be a %s. "
                          "Fix: round it first (math.floor) or use a float type",
                          fname, what, lua_tostring(L, idx), vyre_type_name(t));
        vyre_lua_fail(L, "arg", "%s: %s = %s is out of range for %s. Fix: pass a value in range",
                      fname, what, lua_tostring(L, idx), vyre_type_name(t));
    }
    lua_Integer lo, hi;
    int_range(t, &lo, &hi);
    if (v < lo || v > hi)
        vyre_lua_fail(L, "arg",
                      "%s: %s = %I is out of range for %s (%I..%I). Fix: pass a value "
                      "in range (values are never wrapped silently)",
                      fname, what, (LUAI_UACINT)v, vyre_type_name(t), (LUAI_UACINT)lo,
                      (LUAI_UACINT)hi);
    if (t == VYRE_I32) return (vyre_bits)(uint32_t)(int32_t)v;
    return (vyre_bits)v;
}

/* ---- shared helpers (lvyre.h, lvyre_box.h) ------------------------------- */

void **vyre_lua_newbox(lua_State *L) {
    void **box = lua_newuserdatauv(L, sizeof(void *), 0);
    *box = NULL;
    if (luaL_newmetatable(L, "vyre.Box")) {
        lua_pushcfunction(L, box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return box;
}

void vyre_lua_box_release(void **box) {
    if (box && *box) {
        vyre_free(*box);
        *box = NULL;
    }
}

void *vyre_lua_scratch(lua_State *L, size_t size) {
    void *mem = lua_newuserdatauv(L, size ? size : 1, 0);
    memset(mem, 0, size ? size : 1);
    return mem;
}

enum vyre_type vyre_lua_checktype(lua_State *L, int idx, const char *fname) {
    const char *name = lua_tostring(L, idx);
    enum vyre_type t;
    if (lua_type(L, idx) != LUA_TSTRING || !vyre_type_from_name(name, &t))
        vyre_lua_fail(L, "arg", "%s: unknown type %s. Fix: use one of %s", fname,
                      name ? name : luaL_typename(L, idx), type_list);
    return t;
}

vyre_bits vyre_lua_tobits(lua_State *L, int idx, enum vyre_type t, const char *fname,
                          const char *what) {
    idx = lua_absindex(L, idx);
    if (t == VYRE_BOOL) {
        if (lua_type(L, idx) != LUA_TBOOLEAN)
            vyre_lua_fail(L, "type",
                          "%s: %s must be a boolean for type bool (got %s). Fix: pass true "
                          "or false",
                          fname, what, luaL_typename(L, idx));
        return lua_toboolean(L, idx) ? 1u : 0u;
    }
    if (lua_type(L, idx) != LUA_TNUMBER)
        vyre_lua_fail(L, "type", "%s: %s must be a number for type %s (got %s). Fix: pass a Lua %s",
                      fname, what, vyre_type_name(t), luaL_typename(L, idx),
                      vyre_type_is_float(t) ? "number" : "integer");
    if (t == VYRE_F32) {
        float f = (float)lua_tonumber(L, idx);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
    }
    if (t == VYRE_F64) {
        double d = (double)lua_tonumber(L, idx);
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        return u;
    }
    return int_bits(L, idx, t, fname, what);
}

void vyre_lua_pushbits(lua_State *L, enum vyre_type t, vyre_bits b) {
    switch (t) {
    case VYRE_BOOL: lua_pushboolean(L, b != 0); break;
    case VYRE_I32: lua_pushinteger(L, (lua_Integer)(int32_t)(uint32_t)b); break;
    case VYRE_U32: lua_pushinteger(L, (lua_Integer)(uint32_t)b); break;
    case VYRE_I64:
    case VYRE_U64: lua_pushinteger(L, (lua_Integer)b); break;
    case VYRE_F32: {
        uint32_t u = (uint32_t)b;
        float f;
        memcpy(&f, &u, sizeof f);
        lua_pushnumber(L, (lua_Number)f);
        break;
    }
    case VYRE_F64: {
        double d;
        memcpy(&d, &b, sizeof d);
        lua_pushnumber(L, (lua_Number)d);
        break;
    }
    default: lua_pushnil(L); break;
    }
}

vyre_bits vyre_lua_loadbits(const void *data, enum vyre_type t, uint64_t i) {
    if (vyre_type_size(t) == 8) {
        uint64_t u;
        memcpy(&u, (const char *)data + i * 8u, sizeof u);
        return u;
    }
    uint32_t w;
    memcpy(&w, (const char *)data + i * 4u, sizeof w);
    if (t == VYRE_BOOL) return w != 0; /* any nonzero word reads as true (§2) */
    return w;
}

void vyre_lua_storebits(void *data, enum vyre_type t, uint64_t i, vyre_bits b) {
    if (vyre_type_size(t) == 8) {
        memcpy((char *)data + i * 8u, &b, sizeof b);
        return;
    }
    uint32_t w = (uint32_t)b;
    memcpy((char *)data + i * 4u, &w, sizeof w);
}

int vyre_lua_typeerror(lua_State *L, int idx, const char *fname, const char *expected,
                       const char *fix) {
    idx = lua_absindex(L, idx);
    const char *shortname = fname;
    for (const char *c = fname; *c; c++)
        if (*c == '.' || *c == ':') shortname = c + 1;
    const char *got;
    if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING)
        got = lua_tostring(L, -1); /* stays on the stack until luaL_error */
    else got = luaL_typename(L, idx);
    return vyre_lua_fail(L, "type", "%s: bad argument #%d to '%s' (%s expected, got %s). Fix: %s",
                         fname, idx, shortname, expected, got, fix);
}

/* Objects hold no assignable fields: `buf.count = 1e9` or `buf.free = nil` would
 * otherwise give Lua's raw "attempt to index" error (or, for plain-table fields, change
 * what the C side trusts). */
static int readonly_newindex(lua_State *L) {
    const char *tname = "vyre object";
    if (luaL_getmetafield(L, 1, "__name") == LUA_TSTRING) tname = lua_tostring(L, -1);
    return vyre_lua_fail(L, "arg",
                         "%s: fields and methods are read-only (tried to set %s). Fix: keep your "
                         "own data in a Lua table beside the object",
                         tname, luaL_tolstring(L, 2, NULL));
}

/* Puts readonly_newindex into the metatable on top unless the class has its own. */
static void set_default_newindex(lua_State *L) {
    if (lua_getfield(L, -1, "__newindex") == LUA_TNIL) {
        lua_pushcfunction(L, readonly_newindex);
        lua_setfield(L, -3, "__newindex");
    }
    lua_pop(L, 1);
}

void vyre_lua_newclass(lua_State *L, const char *tname, const luaL_Reg *methods,
                       const luaL_Reg *metamethods) {
    /* The metatable may already exist when the module is loaded a second time
     * into the same state (busted reloads modules): every field is reset. */
    luaL_newmetatable(L, tname);
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    lua_setfield(L, -2, "__index");
    luaL_setfuncs(L, metamethods, 0);
    set_default_newindex(L);
    lua_pop(L, 1);
}

void vyre_lua_newclass_fields(lua_State *L, const char *tname, const luaL_Reg *methods,
                              const luaL_Reg *metamethods, lua_CFunction index_fn,
                              lua_CFunction free_fn, bool self_upvalue) {
    luaL_newmetatable(L, tname);
    luaL_setfuncs(L, metamethods, 0);
    lua_createtable(L, 0, 16);
    if (self_upvalue) lua_pushvalue(L, -2);
    luaL_setfuncs(L, methods, self_upvalue ? 1 : 0);
    lua_pushcfunction(L, free_fn); /* no upvalue: the very function __gc and __close are */
    lua_setfield(L, -2, "free");
    lua_pushcclosure(L, index_fn, 1);
    lua_setfield(L, -2, "__index");
    set_default_newindex(L);
    lua_pop(L, 1);
}

static int renamed_method(lua_State *L) {
    return vyre_lua_fail(L, "arg", "%s", lua_tostring(L, lua_upvalueindex(1)));
}

void vyre_lua_add_renamed(lua_State *L, const char *tname, const struct vyre_lua_renamed *list) {
    int top = lua_gettop(L);
    luaL_getmetatable(L, tname);
    if (lua_getfield(L, -1, "__index") == LUA_TFUNCTION && !lua_getupvalue(L, -1, 1))
        lua_pushnil(L);
    for (const struct vyre_lua_renamed *r = list; lua_istable(L, -1) && r->old; r++) {
        lua_pushfstring(L, "%s:%s() is now %s. Fix: %s", tname, r->old, r->now, r->fix);
        lua_pushcclosure(L, renamed_method, 1);
        lua_setfield(L, -2, r->old);
    }
    lua_settop(L, top);
}

int vyre_lua_method(lua_State *L) {
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

/* ---- Lua-callable functions ---------------------------------------------- */

static int core_types(lua_State *L) {
    lua_createtable(L, VYRE_TYPE_COUNT, 0);
    for (int t = 0; t < VYRE_TYPE_COUNT; t++) {
        lua_pushstring(L, vyre_type_name((enum vyre_type)t));
        lua_rawseti(L, -2, t + 1);
    }
    return 1;
}

/* ---- registration ----------------------------------------------------------- */

static const luaL_Reg core_funcs[] = {
    {"types", core_types}, {"backends", vyre_lua_backends}, {NULL, NULL}};

VYRE_LUA_EXPORT int luaopen_vyre_core(lua_State *L);

int luaopen_vyre_core(lua_State *L) {
    luaL_newlib(L, core_funcs);
    lua_pushliteral(L, VYRE_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushinteger(L, (lua_Integer)VYRE_CODEGEN_VERSION);
    lua_setfield(L, -2, "codegen_version");
    vyre_lua_open_error(L);
    vyre_lua_open_gen(L);
    vyre_lua_open_array(L);
    vyre_lua_open_program(L);
    vyre_lua_open_fuse(L);
    vyre_lua_open_ref(L);
    vyre_lua_open_ops(L);
    vyre_lua_open_backend(L);
    return 1;
}

/* Reads a grid {x [, y [, z]]} or {x =, y =, z =} (missing y, z are 1) into g;
 * raises naming fname. Shared by both backends so a grid means the same everywhere. */
void vyre_lua_checkgrid(lua_State *L, int idx, uint32_t g[3], const char *fname) {
    if (lua_type(L, idx) != LUA_TTABLE)
        vyre_lua_fail(L, "type",
                      "%s: grid must be a table {x, y, z} (got %s). Fix: e.g. grid = {4}", fname,
                      luaL_typename(L, idx));
    for (int a = 0; a < 3; a++) {
        lua_rawgeti(L, idx, a + 1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_getfield(L, idx, a == 0 ? "x" : a == 1 ? "y" : "z");
        }
        int isnum = 1;
        lua_Integer v = 1; /* a missing y or z axis is 1 */
        if (!(lua_isnil(L, -1) && a > 0)) v = lua_tointegerx(L, -1, &isnum);
        if (!isnum || v < 1 || v > (lua_Integer)UINT32_MAX)
            vyre_lua_fail(L, "type",
                          "%s: grid axis %d must be an integer >= 1. Fix: e.g. grid = {4, 1, 1}",
                          fname, a + 1);
        g[a] = (uint32_t)v;
        lua_pop(L, 1);
    }
}

/* ---- host memory ------------------------------------------------------------- */

static uint64_t host_cap(void) {
    const char *env = getenv("VYRE_HOST_MAX_BYTES");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == 0 && v > 0) return v;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return (uint64_t)1 << 34; /* unknown: 16 GiB */
    return (uint64_t)pages * (uint64_t)page / 2;
}

/* Host bytes held by live arrays and reference buffers, in every Lua state of the
 * process: the cap is on this total (the machine's memory is shared), not on each
 * allocation, so dead arrays the collector has not reached yet cannot pile up past it. */
static _Atomic uint64_t host_live;

/* Adds bytes to host_live unless that passes cap; false (nothing added) if it would. */
static bool host_reserve(uint64_t bytes, uint64_t cap) {
    uint64_t live = atomic_load(&host_live);
    do {
        if (live > cap || bytes > cap - live) return false;
    } while (!atomic_compare_exchange_weak(&host_live, &live, live + bytes));
    return true;
}

void vyre_lua_host_reserve(lua_State *L, uint64_t bytes, const char *fname) {
    uint64_t cap = host_cap();
    if (bytes > cap || bytes > (uint64_t)SIZE_MAX)
        vyre_lua_fail(L, "limit",
                      "%s: %I bytes of host memory is more than the host cap of %I bytes (half "
                      "of this machine's memory, or VYRE_HOST_MAX_BYTES). Fix: keep large data "
                      "on the device (be:buffer, filled by a kernel or vyre.lib), split it, or "
                      "raise VYRE_HOST_MAX_BYTES",
                      fname, (LUAI_UACINT)bytes, (LUAI_UACINT)cap);
    uint64_t kib = bytes >> 10;
    if (kib > 0) lua_gc(L, LUA_GCSTEP, kib > INT32_MAX ? INT32_MAX : (int)kib);
    if (!host_reserve(bytes, cap)) {
        /* Dead arrays may hold the difference: collect them before refusing, as the
         * CUDA out-of-memory path does. */
        lua_gc(L, LUA_GCCOLLECT);
        if (!host_reserve(bytes, cap))
            vyre_lua_fail(L, "limit",
                          "%s: %I bytes of host memory would bring the live arrays and reference "
                          "buffers to %I bytes, more than the host cap of %I bytes (half of this "
                          "machine's memory, or VYRE_HOST_MAX_BYTES). Fix: free arrays and buffers "
                          "you no longer need (a:free(), buf:free()), keep large data on the "
                          "device, or raise VYRE_HOST_MAX_BYTES",
                          fname, (LUAI_UACINT)bytes, (LUAI_UACINT)(atomic_load(&host_live) + bytes),
                          (LUAI_UACINT)cap);
    }
}

void vyre_lua_host_unreserve(uint64_t bytes) { atomic_fetch_sub(&host_live, bytes); }

void *vyre_lua_host_alloc(lua_State *L, uint64_t bytes, bool zero, const char *fname) {
    vyre_lua_host_reserve(L, bytes, fname);
    void *mem = zero ? calloc(1, (size_t)bytes) : malloc((size_t)bytes);
    if (!mem) {
        atomic_fetch_sub(&host_live, bytes);
        vyre_lua_fail(L, "oom",
                      "%s: out of host memory for %I bytes. Fix: free arrays and buffers you "
                      "no longer need (or collectgarbage()), or use smaller ones",
                      fname, (LUAI_UACINT)bytes);
    }
    return mem;
}

void vyre_lua_host_free(void *mem, uint64_t bytes) {
    if (!mem) return;
    free(mem);
    atomic_fetch_sub(&host_live, bytes);
}

uint64_t vyre_lua_host_live(void) { return atomic_load(&host_live); }

/* ---- views (lvyre.h) -------------------------------------------------------- */

void vyre_lua_vlink(struct vyre_lua_vnode *owner, struct vyre_lua_vnode *view) {
    view->prev = NULL;
    view->next = owner->views;
    if (owner->views) owner->views->prev = view;
    owner->views = view;
}

void vyre_lua_vunlink(struct vyre_lua_vnode *owner, struct vyre_lua_vnode *view) {
    if (view->prev) view->prev->next = view->next;
    else owner->views = view->next;
    if (view->next) view->next->prev = view->prev;
    view->next = view->prev = NULL;
}

/* ---- options ---------------------------------------------------------------- */

void vyre_lua_checkopts(lua_State *L, int t, const char *const *allowed, const char *fname) {
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        bool known = false;
        for (size_t i = 0; k && allowed[i]; i++) known = known || strcmp(k, allowed[i]) == 0;
        if (!known) {
            const char *key = luaL_tolstring(L, -1, NULL);
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (size_t i = 0; allowed[i]; i++) {
                if (i) luaL_addstring(&b, ", ");
                luaL_addstring(&b, allowed[i]);
            }
            luaL_pushresult(&b);
            const char *list = lua_tostring(L, -1);
            vyre_lua_fail(L, "arg", "%s: unknown option '%s'. Fix: use %s (names are lower case)",
                          fname, key, list);
        }
    }
}

/* ---- self checks -------------------------------------------------------------- */

/* The name under which the running C function sits in tname's method table (found by
 * identity, so it works under pcall, where Lua knows no name), or "method". */
static const char *running_method(lua_State *L, const char *tname) {
    const char *name = "method";
    lua_Debug ar;
    if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "f", &ar)) return name; /* +1: fn */
    int fn = lua_gettop(L);
    luaL_getmetatable(L, tname);
    if (lua_getfield(L, -1, "__index") == LUA_TFUNCTION) lua_getupvalue(L, -1, 1);
    if (lua_istable(L, -1)) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            if (lua_rawequal(L, -1, fn) && lua_type(L, -2) == LUA_TSTRING) {
                name = lua_tostring(L, -2); /* stays valid: the key lives in the table */
                lua_pop(L, 2);
                break;
            }
            lua_pop(L, 1);
        }
    }
    lua_settop(L, fn - 1);
    return name;
}

void *vyre_lua_checkself(lua_State *L, int idx, const char *tname) {
    void *ud = luaL_testudata(L, idx, tname);
    if (ud) return ud;
    const char *method = running_method(L, tname);
    return vyre_lua_wrongself(L, idx, tname, lua_pushfstring(L, "%s:%s", tname, method)), NULL;
}

int vyre_lua_wrongself(lua_State *L, int idx, const char *tname, const char *fname) {
    const char *got = luaL_typename(L, idx);
    if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) got = lua_tostring(L, -1);
    const char *method = strrchr(fname, ':');
    return vyre_lua_fail(L, "self",
                         "%s: called on a %s, not a %s. Fix: call it with a colon on a %s, "
                         "e.g. obj:%s(...)",
                         fname, got, tname, tname, method ? method + 1 : "method");
}

lua_Integer vyre_lua_optint(lua_State *L, int idx, lua_Integer def, const char *fname,
                            const char *what, const char *fix) {
    if (lua_isnoneornil(L, idx)) return def;
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, idx, &isint);
    if (!isint || lua_type(L, idx) != LUA_TNUMBER)
        vyre_lua_fail(L, "type", "%s: %s must be an integer (got %s). Fix: %s", fname, what,
                      luaL_tolstring(L, idx, NULL), fix);
    return v;
}

uint64_t vyre_lua_view_range(lua_State *L, uint64_t held, const char *fname, const char *self,
                             uint64_t *count) {
    char fix[64];
    snprintf(fix, sizeof fix, "%s:view(1, 10) (elements, 1-based)", self);
    lua_Integer first = vyre_lua_optint(L, 2, 0, fname, "first", fix);
    if (lua_isnoneornil(L, 2) || first < 1 || (uint64_t)(first - 1) > held)
        vyre_lua_fail(L, "arg",
                      "%s: first must be an element index 1..%I (got %s). Fix: %s:view(first, "
                      "count) with 1 <= first <= #%s + 1",
                      fname, (LUAI_UACINT)(held + 1), luaL_tolstring(L, 2, NULL), self, self);
    uint64_t rest = held - (uint64_t)(first - 1);
    snprintf(fix, sizeof fix, "%s:view(1, 10) (a number of elements)", self);
    lua_Integer n = vyre_lua_optint(L, 3, (lua_Integer)rest, fname, "count", fix);
    if (n < 0 || (uint64_t)n > rest)
        vyre_lua_fail(L, "arg",
                      "%s: count %I from element %I does not fit the %I elements held. Fix: keep "
                      "0 <= count <= #%s - first + 1 (%I here)",
                      fname, (LUAI_UACINT)n, (LUAI_UACINT)first, (LUAI_UACINT)held, self,
                      (LUAI_UACINT)rest);
    *count = (uint64_t)n;
    return (uint64_t)(first - 1);
}
