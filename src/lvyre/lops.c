/* lops.c — the operator table, reserved names and atomic ops of libvyre as Lua
 * tables: core.ops(), core.op_classes(), core.reserved_names(), core.atomic_ops().
 * lua/vyre/dsl.lua builds its operator methods, metamethods and name checks from
 * these, so the DSL cannot drift from the validator (docs/OPS.md). Only the public
 * API of vyre.h is used here: the table itself lives in src/core/ir/ops.h. */
#include "lvyre.h"

/* Pushes a list of the type names that operand class c admits. */
static void push_class_types(lua_State *L, unsigned c) {
    lua_newtable(L);
    lua_Integer n = 0;
    for (int t = 0; t < VYRE_TYPE_COUNT; t++) {
        if (!vyre_op_class_admits(c, (enum vyre_type)t)) continue;
        lua_pushstring(L, vyre_type_name((enum vyre_type)t));
        lua_rawseti(L, -2, ++n);
    }
}

/* Pushes the space-separated names of s as a list ("__div __idiv" -> {"__div",
 * "__idiv"}; "" -> {}). */
static void push_words(lua_State *L, const char *s) {
    lua_newtable(L);
    lua_Integer n = 0;
    while (*s) {
        while (*s == ' ') s++;
        const char *end = s;
        while (*end && *end != ' ') end++;
        if (end > s) {
            lua_pushlstring(L, s, (size_t)(end - s));
            lua_rawseti(L, -2, ++n);
        }
        s = end;
    }
}

/* core.ops() -> list of {name=, arity=, operands=, result=, approximate=, method=,
 * metamethods={...}, types={...}}, in the table's (enum) order. */
static int ops_ops(lua_State *L) {
    size_t n = vyre_op_count();
    lua_createtable(L, (int)n, 0);
    for (unsigned i = 0; i < n; i++) {
        struct vyre_op_info info;
        if (!vyre_op_info(i, &info)) break;
        lua_createtable(L, 0, 8);
        lua_pushstring(L, info.name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, (lua_Integer)info.arity);
        lua_setfield(L, -2, "arity");
        lua_pushstring(L, info.operands);
        lua_setfield(L, -2, "operands");
        lua_pushstring(L, info.result);
        lua_setfield(L, -2, "result");
        lua_pushboolean(L, info.approximate);
        lua_setfield(L, -2, "approximate");
        lua_pushstring(L, info.dsl_method);
        lua_setfield(L, -2, "method");
        push_words(L, info.dsl_metamethods);
        lua_setfield(L, -2, "metamethods");
        push_class_types(L, info.operand_class);
        lua_setfield(L, -2, "types");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* core.op_classes() -> {NUMERIC = {"i32", ...}, INT = {...}, ...} */
static int ops_classes(lua_State *L) {
    size_t n = vyre_op_class_count();
    lua_createtable(L, 0, (int)n);
    for (unsigned c = 0; c < n; c++) {
        push_class_types(L, c);
        lua_setfield(L, -2, vyre_op_class_name(c));
    }
    return 1;
}

/* core.reserved_names() -> {"true", "false", ..., "f64"} */
static int ops_reserved(lua_State *L) {
    size_t n = 0;
    const char *const *names = vyre_reserved_names(&n);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* core.atomic_ops() -> {"add", "sub", ..., "exchange", "cas"} */
static int ops_atomics(lua_State *L) {
    size_t n = vyre_atomic_count();
    lua_createtable(L, (int)n, 0);
    for (unsigned i = 0; i < n; i++) {
        lua_pushstring(L, vyre_atomic_op_name(i));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static const luaL_Reg ops_funcs[] = {{"ops", ops_ops},
                                     {"op_classes", ops_classes},
                                     {"reserved_names", ops_reserved},
                                     {"atomic_ops", ops_atomics},
                                     {NULL, NULL}};

void vyre_lua_open_ops(lua_State *L) { luaL_setfuncs(L, ops_funcs, 0); }
