/* lerror.c — error objects (docs/API.md "Errors") and the one extension point through
 * which Lua code adds methods to the binding's classes.
 *
 * Every error the binding raises is a vyre.Error: a table {code, message, fix, where}
 * whose __tostring is the whole text "where" .. "vyre.fn: what. Fix: how", so code that
 * prints or pattern-matches an error keeps working while code that must decide reads
 * err.code instead of the wording. lua/vyre/errors.lua makes the same objects for the
 * Lua layers through core.error_new. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lvyre.h"

#define VYRE_LUA_ERROR "vyre.Error"

/* Pushes the object for text (split into message and fix where it is worded "what. Fix:
 * how"), with code and the position prefix where ("" for none). */
static void push_error(lua_State *L, const char *code, const char *text, const char *where) {
    size_t what_len = 0;
    const char *fix = vyre_error_fix(text, &what_len);
    lua_createtable(L, 0, 5);
    lua_pushstring(L, code);
    lua_setfield(L, -2, "code");
    lua_pushlstring(L, text, what_len);
    lua_setfield(L, -2, "message");
    if (fix) {
        lua_pushstring(L, fix);
        lua_setfield(L, -2, "fix");
    }
    lua_pushstring(L, where);
    lua_setfield(L, -2, "where");
    lua_pushfstring(L, "%s%s", where, text);
    lua_setfield(L, -2, "text");
    luaL_setmetatable(L, VYRE_LUA_ERROR);
}

void vyre_lua_pusherror(lua_State *L, const char *code, const char *text, const char *where) {
    push_error(L, code, text, where ? where : "");
}

int vyre_lua_fail(lua_State *L, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *text = lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    push_error(L, code, text, "");
    return lua_error(L);
}

int vyre_lua_raise(lua_State *L, const char *fname, const struct vyre_error *err) {
    return vyre_lua_fail(L, vyre_status_code(err->status), "%s: %s", fname, err->message);
}

/* ---- the vyre.Error class ------------------------------------------------------- */

static int error_tostring(lua_State *L) {
    lua_getfield(L, 1, "text");
    if (!lua_isstring(L, -1)) lua_pushliteral(L, "vyre.Error");
    return 1;
}

/* e .. "x" and "x" .. e concatenate the text, as they did when errors were strings. */
static int error_concat(lua_State *L) {
    luaL_tolstring(L, 1, NULL);
    luaL_tolstring(L, 2, NULL);
    lua_concat(L, 2);
    return 1;
}

/* err:match(p), err:find(s, 1, true), err:gsub(...): the string methods on the text,
 * so handlers written for string errors keep working. */
static int error_strmethod(lua_State *L) {
    luaL_tolstring(L, 1, NULL);
    lua_replace(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int error_index(lua_State *L) {
    lua_getglobal(L, "string");
    if (lua_istable(L, -1) && lua_getfield(L, -1, luaL_checkstring(L, 2)) == LUA_TFUNCTION) {
        lua_pushcclosure(L, error_strmethod, 1);
        return 1;
    }
    return 0;
}

static int error_len(lua_State *L) {
    size_t n = 0;
    luaL_tolstring(L, 1, &n);
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}

/* core.error_new(code, text [, where]) -> a vyre.Error (lua/vyre/errors.lua). */
static int error_new(lua_State *L) {
    push_error(L, luaL_checkstring(L, 1), luaL_checkstring(L, 2), luaL_optstring(L, 3, ""));
    return 1;
}

/* core.is_error(v) -> true for a vyre.Error. */
static int error_is(lua_State *L) {
    int is = 0;
    if (lua_istable(L, 1) && lua_getmetatable(L, 1)) {
        luaL_getmetatable(L, VYRE_LUA_ERROR);
        is = lua_rawequal(L, -1, -2);
    }
    lua_pushboolean(L, is);
    return 1;
}

/* ---- core.extend ------------------------------------------------------------------- */

/* core.extend(tname, methods): adds the Lua functions of `methods` to the methods of the
 * class tname ("vyre.Program", "vyre.Backend", ...). The one way Lua conveniences attach
 * to C types (lua/vyre/init.lua): no debug access to metatables, and C requires no Lua
 * module. A name the class already has is refused, so an extension never replaces a C
 * method. */
static int core_extend(lua_State *L) {
    const char *tname = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (luaL_getmetatable(L, tname) != LUA_TTABLE)
        return vyre_lua_fail(L, "arg",
                             "vyre.core.extend: no class named '%s'. Fix: name a "
                             "vyre class, e.g. \"vyre.Program\"",
                             tname);
    int ty = lua_getfield(L, -1, "__index");
    if (ty == LUA_TFUNCTION) lua_getupvalue(L, -1, 1); /* the methods of a fields class */
    if (!lua_istable(L, -1))
        return vyre_lua_fail(L, "internal",
                             "vyre.core.extend: class '%s' has no methods "
                             "table. Fix: report this as a bug",
                             tname);
    int methods = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        if (lua_type(L, -2) != LUA_TSTRING || !lua_isfunction(L, -1))
            return vyre_lua_fail(L, "arg",
                                 "vyre.core.extend: methods must map names to "
                                 "functions. Fix: pass {name = function(self, ...) end}");
        lua_pushvalue(L, -2);
        if (lua_rawget(L, methods) != LUA_TNIL && lua_tocfunction(L, -1))
            return vyre_lua_fail(L, "arg",
                                 "vyre.core.extend: %s already has a method '%s'. "
                                 "Fix: choose another name",
                                 tname, lua_tostring(L, -3));
        lua_pop(L, 1);
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, methods);
    }
    return 0;
}

/* core.methods(tname) -> the methods table of class tname (read it; add with extend), so
 * vyre.help lists methods without debug access to metatables. */
static int core_methods(lua_State *L) {
    const char *tname = luaL_checkstring(L, 1);
    if (luaL_getmetatable(L, tname) != LUA_TTABLE) return 0;
    if (lua_getfield(L, -1, "__index") == LUA_TFUNCTION) lua_getupvalue(L, -1, 1);
    return lua_istable(L, -1) ? 1 : 0;
}

/* ---- hooks: Lua functions the C side calls ------------------------------------------ */

#define HOOKS "vyre.hooks"

/* core.set_hook(name, fn | nil) -> the previous: a Lua function the binding calls by name
 * ("generate": buf:fill/iota/random on CUDA; "megakernel_policy" and "plan": lmega.c).
 * lua/vyre/init.lua registers them, so the C side requires no Lua module. */
static int core_set_hook(lua_State *L) {
    luaL_checkstring(L, 1);
    if (!lua_isnoneornil(L, 2) && !lua_isfunction(L, 2))
        return vyre_lua_fail(L, "type",
                             "vyre.core.set_hook: expected a function or nil (got %s). "
                             "Fix: pass a function",
                             luaL_typename(L, 2));
    lua_settop(L, 2);
    return vyre_lua_sethook(L, lua_tostring(L, 1), 2);
}

int vyre_lua_gethook(lua_State *L, const char *name) {
    luaL_getsubtable(L, LUA_REGISTRYINDEX, HOOKS);
    int t = lua_getfield(L, -1, name);
    lua_remove(L, -2);
    return t;
}

void vyre_lua_pushhook(lua_State *L, const char *name, const char *fname) {
    if (vyre_lua_gethook(L, name) != LUA_TFUNCTION)
        vyre_lua_fail(L, "unsupported",
                      "%s: needs the Lua part of vyre (hook '%s' is not "
                      "registered). Fix: require('vyre') before using vyre.core directly",
                      fname, name);
}

int vyre_lua_sethook(lua_State *L, const char *name, int idx) {
    idx = lua_absindex(L, idx);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, HOOKS);
    lua_getfield(L, -1, name);
    lua_pushvalue(L, idx);
    lua_setfield(L, -3, name);
    lua_remove(L, -2);
    return 1;
}

static const luaL_Reg error_meta[] = {{"__tostring", error_tostring},
                                      {"__concat", error_concat},
                                      {"__index", error_index},
                                      {"__len", error_len},
                                      {NULL, NULL}};

static const luaL_Reg error_funcs[] = {{"error_new", error_new},    {"is_error", error_is},
                                       {"extend", core_extend},     {"methods", core_methods},
                                       {"set_hook", core_set_hook}, {NULL, NULL}};

void vyre_lua_open_error(lua_State *L) {
    luaL_newmetatable(L, VYRE_LUA_ERROR);
    luaL_setfuncs(L, error_meta, 0);
    lua_pop(L, 1);
    luaL_setfuncs(L, error_funcs, 0);
}
