/* lprogram.c — vyre.Program: the Lua face of one IR program. Parsing, validation,
 * canonical text, hashing, structural equality, PTX emission and random program
 * generation are all libvyre calls; this file checks arguments and converts. */
#include <stdio.h>
#include <string.h>

#include "lvyre.h"
#include "lvyre_box.h"

#define PROBLEMS_BOX "vyre.ProblemsBox"

/* ---- static helpers ------------------------------------------------------ */

static const char *const program_fix =
    "pass a program made by vyre.parse(text) or vyre.program(name, spec, fn), and call "
    "methods with a colon (p:text())";

static struct vyre_lua_program *check_ud(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_PROGRAM);
}

/* A live program at idx, or raises naming fname: wrong type or already freed. */
static vyre_program *check_program(lua_State *L, int idx, const char *fname) {
    struct vyre_lua_program *lp = luaL_testudata(L, idx, VYRE_LUA_PROGRAM);
    if (!lp) vyre_lua_typeerror(L, idx, fname, VYRE_LUA_PROGRAM, program_fix);
    if (!lp->p)
        vyre_lua_fail(L, "freed",
                      "%s: this vyre.Program was freed. Fix: keep the program alive (do not "
                      "call :free() or leave its <close> scope) while using it",
                      fname);
    return lp->p;
}

static void program_release(struct vyre_lua_program *lp) {
    vyre_program_free(lp->p);
    lp->p = NULL;
}

static int problems_box_gc(lua_State *L) {
    struct vyre_problems *probs = lua_touserdata(L, 1);
    vyre_problems_free(probs);
    memset(probs, 0, sizeof *probs);
    return 0;
}

/* A userdata owning a vyre_problems list, so raising while it is live cannot leak. */
static struct vyre_problems *new_problems_box(lua_State *L) {
    struct vyre_problems *probs = lua_newuserdatauv(L, sizeof *probs, 0);
    memset(probs, 0, sizeof *probs);
    if (luaL_newmetatable(L, PROBLEMS_BOX)) {
        lua_pushcfunction(L, problems_box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return probs;
}

static void set_string(lua_State *L, const char *key, const char *value) {
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

static void set_integer(lua_State *L, const char *key, lua_Integer value) {
    lua_pushinteger(L, value);
    lua_setfield(L, -2, key);
}

static void push_problem(lua_State *L, const struct vyre_problem *pr) {
    lua_createtable(L, 0, 5);
    set_string(L, "code", pr->code);
    set_string(L, "path", pr->path);
    set_string(L, "message", pr->message);
    set_string(L, "fix", pr->fix);
    if (pr->cast[0]) set_string(L, "cast", pr->cast); /* absent: the fix is not a cast */
}

static int opt_field_int(lua_State *L, int t, const char *key, lua_Integer def, lua_Integer lo,
                         lua_Integer hi, const char *fname) {
    lua_getfield(L, t, key);
    lua_Integer v = def;
    if (!lua_isnil(L, -1)) {
        int isnum = 0;
        v = lua_tointegerx(L, -1, &isnum);
        if (!isnum || v < lo || v > hi)
            vyre_lua_fail(L, "type",
                          "%s: option '%s' must be an integer in %I..%I. Fix: e.g. {%s = %I}",
                          fname, key, (LUAI_UACINT)lo, (LUAI_UACINT)hi, key, (LUAI_UACINT)def);
    }
    lua_pop(L, 1);
    return (int)v;
}

static bool opt_field_bool(lua_State *L, int t, const char *key) {
    lua_getfield(L, t, key);
    bool v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* ---- shared helpers (lvyre.h) -------------------------------------------- */

/* Callers outside this file have no function name at hand: the name comes from
 * the call (lauxlib's way), and the message still says how to fix it. */
vyre_program *vyre_lua_checkprogram(lua_State *L, int idx) {
    struct vyre_lua_program *lp = luaL_testudata(L, idx, VYRE_LUA_PROGRAM);
    if (!lp)
        luaL_argerror(L, idx,
                      lua_pushfstring(L, "vyre.Program expected, got %s. Fix: %s",
                                      luaL_typename(L, idx), program_fix));
    if (!lp->p)
        luaL_argerror(L, idx,
                      "vyre.Program was freed. Fix: keep the program alive (do not "
                      "call :free() or leave its <close> scope) while using it");
    return lp->p;
}

vyre_program *vyre_lua_checkprogram_named(lua_State *L, int idx, const char *fname) {
    return check_program(L, idx, fname);
}

/* ---- Lua-callable functions ---------------------------------------------- */

/* vyre.parse(text) -> Program; raises "vyre.parse: line L, column C: ...". */
static int program_parse(lua_State *L) {
    size_t len;
    if (lua_type(L, 1) != LUA_TSTRING)
        vyre_lua_typeerror(L, 1, "vyre.parse", "string",
                           "pass the program text, e.g. vyre.parse(\"(program p (workgroup 1))\")");
    const char *text = lua_tolstring(L, 1, &len);
    struct vyre_lua_program *lp = lua_newuserdatauv(L, sizeof *lp, 0);
    lp->p = NULL;
    luaL_setmetatable(L, VYRE_LUA_PROGRAM);
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_text_parse(text, len, &lp->p, &err) == VYRE_OK) return 1;
    program_release(lp);
    if (err.status == VYRE_ERR_SYNTAX && err.line > 0) {
        char prefix[64];
        int n = snprintf(prefix, sizeof prefix, "line %u, column %u: ", err.line, err.column);
        const char *msg = err.message;
        if (n > 0 && strncmp(msg, prefix, (size_t)n) == 0) msg += n; /* avoid saying it twice */
        /* the object also carries line, column and the parser's own words (reason), so the
         * CLI reports them without reading this text back */
        vyre_lua_pusherror(L, "parse",
                           lua_pushfstring(L, "vyre.parse: line %d, column %d: %s", (int)err.line,
                                           (int)err.column, msg),
                           NULL);
        lua_pushinteger(L, err.line);
        lua_setfield(L, -2, "line");
        lua_pushinteger(L, err.column);
        lua_setfield(L, -2, "column");
        size_t what_len = 0;
        vyre_error_fix(msg, &what_len);
        lua_pushlstring(L, msg, what_len);
        lua_setfield(L, -2, "reason");
        return lua_error(L);
    }
    return vyre_lua_raise(L, "vyre.parse", &err);
}

/* vyre.validate(p) -> true | false, {{code, path, message, fix [, cast]}...}, summary */
static int program_validate(lua_State *L) {
    vyre_program *p = check_program(L, 1, "vyre.validate");
    struct vyre_problems *probs = new_problems_box(L);
    enum vyre_status st = vyre_validate(p, probs);
    if (st == VYRE_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    if (st != VYRE_ERR_INVALID) return vyre_lua_fail(L, "oom", "vyre.validate: out of memory");
    lua_pushboolean(L, 0);
    lua_createtable(L, (int)probs->count, 0);
    for (size_t i = 0; i < probs->count; i++) {
        push_problem(L, &probs->items[i]);
        lua_rawseti(L, -2, (lua_Integer)(i + 1));
    }
    struct vyre_error err;
    vyre_error_clear(&err);
    vyre_problems_format(p, probs, &err);
    lua_pushstring(L, err.message);
    return 3;
}

static int program_text(lua_State *L) {
    vyre_program *p = check_program(L, 1, "vyre.Program:text");
    void **box = vyre_lua_newbox(L);
    size_t len = 0;
    char *text = NULL;
    if (vyre_text_print(p, &text, &len) != VYRE_OK)
        return vyre_lua_fail(L, "oom", "vyre.Program:text: out of memory");
    *box = text;
    lua_pushlstring(L, text, len);
    vyre_lua_box_release(box);
    return 1;
}

static int program_hash(lua_State *L) {
    char hex[17];
    vyre_program_hash_hex(check_program(L, 1, "vyre.Program:hash"), hex);
    lua_pushstring(L, hex);
    return 1;
}

/* p:decls() -> {{kind=, name=, type=, access=, count=, slot=}...}, slot 1-based
 * among declarations of the same kind. */
static int program_decls(lua_State *L) {
    vyre_program *p = check_program(L, 1, "vyre.Program:decls");
    uint32_t n = vyre_program_decl_count(p);
    lua_createtable(L, (int)n, 0);
    for (uint32_t i = 0; i < n; i++) {
        struct vyre_decl_info d;
        vyre_program_decl(p, i, &d);
        lua_createtable(L, 0, 6);
        set_string(L, "kind", vyre_decl_kind_name(d.kind));
        set_string(L, "name", d.name);
        set_string(L, "type", vyre_type_name(d.type));
        if (d.kind == VYRE_DECL_BUFFER) set_string(L, "access", vyre_access_name(d.access));
        if (d.kind != VYRE_DECL_PARAM) set_integer(L, "count", (lua_Integer)d.count);
        set_integer(L, "slot", (lua_Integer)d.slot + 1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* p:free(), __gc and __close: one idempotent release. */
static int program_free(lua_State *L) {
    if (!luaL_testudata(L, 1, VYRE_LUA_PROGRAM))
        vyre_lua_typeerror(L, 1, "vyre.Program:free", VYRE_LUA_PROGRAM, program_fix);
    program_release(check_ud(L, 1));
    return 0;
}

static int program_index(lua_State *L) {
    const char *key = lua_tostring(L, 2);
    if (key && strcmp(key, "name") == 0) {
        lua_pushstring(L, vyre_program_name(check_program(L, 1, "vyre.Program.name")));
        return 1;
    }
    if (key && strcmp(key, "workgroup") == 0) {
        uint32_t wg[3];
        vyre_program_workgroup(check_program(L, 1, "vyre.Program.workgroup"), wg);
        static const char *const axes[3] = {"x", "y", "z"};
        lua_createtable(L, 3, 3);
        for (int a = 0; a < 3; a++) {
            lua_pushinteger(L, (lua_Integer)wg[a]);
            lua_pushvalue(L, -1);
            lua_rawseti(L, -3, a + 1);
            lua_setfield(L, -2, axes[a]);
        }
        return 1;
    }
    return vyre_lua_method(L);
}

static int program_eq(lua_State *L) {
    struct vyre_lua_program *a = luaL_testudata(L, 1, VYRE_LUA_PROGRAM);
    struct vyre_lua_program *b = luaL_testudata(L, 2, VYRE_LUA_PROGRAM);
    lua_pushboolean(L, a && b && a->p && b->p && vyre_program_equal(a->p, b->p));
    return 1;
}

static int program_tostring(lua_State *L) {
    struct vyre_lua_program *lp = check_ud(L, 1);
    if (!lp->p) {
        lua_pushfstring(L, "vyre.Program (freed): %p", (void *)lp);
        return 1;
    }
    return program_text(L);
}

/* Optimiser options (docs/OPT.md) from the value at idx: nil -> the defaults
 * ($VYRE_OPT applied; *use = NULL); true / false -> every pass on / off; a table of
 * booleans {fold, simplify, copy, cse, licm, dce}, a missing pass being on. */
static void read_opt_options(lua_State *L, int idx, const char *fname, struct vyre_opt_options *o,
                             const struct vyre_opt_options **use) {
    static const char *const names[] = {"fold", "simplify", "copy", "cse", "licm", "dce", NULL};
    bool *fields[] = {&o->fold, &o->simplify, &o->copy, &o->cse, &o->licm, &o->dce};
    idx = lua_absindex(L, idx);
    *use = o;
    if (lua_isnoneornil(L, idx)) {
        struct vyre_error err;
        vyre_error_clear(&err);
        if (vyre_opt_options_default(o, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
        *use = NULL;
        return;
    }
    if (lua_isboolean(L, idx)) {
        for (size_t i = 0; names[i]; i++) *fields[i] = lua_toboolean(L, idx);
        return;
    }
    if (!lua_istable(L, idx))
        vyre_lua_fail(L, "type",
                      "%s: opt must be a table of booleans, true or false, got %s. Fix: pass "
                      "{cse = false} (passes: fold, simplify, copy, cse, licm, dce)",
                      fname, luaL_typename(L, idx));
    vyre_lua_checkopts(L, idx, names, fname);
    for (size_t i = 0; names[i]; i++) {
        int t = lua_getfield(L, idx, names[i]);
        if (t != LUA_TNIL && t != LUA_TBOOLEAN)
            vyre_lua_fail(L, "type",
                          "%s: opt.%s must be a boolean, got %s. Fix: pass %s = true or false",
                          fname, names[i], lua_typename(L, t), names[i]);
        *fields[i] = t == LUA_TNIL || lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
}

/* p:optimize([opts]) -> the optimised Program (a new one; p is unchanged), and a table
 * of what the passes did {folded, simplified, copied, cse, hoisted, removed}. */
static int program_optimize(lua_State *L) {
    const char *f = "vyre.Program:optimize";
    vyre_program *p = check_program(L, 1, f);
    struct vyre_opt_options o;
    const struct vyre_opt_options *use;
    read_opt_options(L, 2, f, &o, &use);
    struct vyre_lua_program *lp = lua_newuserdatauv(L, sizeof *lp, 0);
    lp->p = NULL;
    luaL_setmetatable(L, VYRE_LUA_PROGRAM);
    struct vyre_opt_report rep;
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_program_optimize(p, use, &lp->p, &rep, &err) != VYRE_OK)
        return vyre_lua_raise(L, f, &err);
    lua_createtable(L, 0, 6);
    const char *const keys[] = {"folded", "simplified", "copied", "cse", "hoisted", "removed"};
    const uint32_t vals[] = {rep.folded, rep.simplified, rep.copied,
                             rep.cse,    rep.hoisted,    rep.removed};
    for (int i = 0; i < 6; i++) {
        lua_pushinteger(L, (lua_Integer)vals[i]);
        lua_setfield(L, -2, keys[i]);
    }
    return 2;
}

/* vyre.ptx(p, {sm = 90, opt = {cse = false}, debug = true}) -> PTX text */
static int program_ptx(lua_State *L) {
    vyre_program *p = check_program(L, 1, "vyre.ptx");
    struct vyre_ptx_options opt = {.sm = 70};
    struct vyre_opt_options oo;
    const struct vyre_opt_options *use = NULL;
    if (!lua_isnoneornil(L, 2)) {
        if (!lua_istable(L, 2))
            vyre_lua_typeerror(L, 2, "vyre.ptx", "table of options", "vyre.ptx(p, {sm = 90})");
        static const char *const keys[] = {"sm", "opt", "debug", NULL};
        vyre_lua_checkopts(L, 2, keys, "vyre.ptx");
        opt.sm = (unsigned)opt_field_int(L, 2, "sm", 70, 0, 1000, "vyre.ptx");
        opt.debug = opt_field_bool(L, 2, "debug");
        lua_getfield(L, 2, "opt");
        read_opt_options(L, -1, "vyre.ptx", &oo, &use);
        lua_pop(L, 1);
    }
    void **box = vyre_lua_newbox(L);
    char *ptx = NULL;
    size_t len = 0;
    struct vyre_error err;
    vyre_error_clear(&err);
    opt.passes = use;
    if (vyre_ptx_emit(p, &opt, &ptx, &len, &err) != VYRE_OK) {
        vyre_free(ptx);
        return vyre_lua_raise(L, "vyre.ptx", &err);
    }
    *box = ptx;
    lua_pushlstring(L, ptx, len);
    vyre_lua_box_release(box);
    return 1;
}

/* core.ptx_targets() -> {{sm = 70, isa = "6.0", min_cuda = 9000, gpus = "..."}, ...}: the emitter's target table (vyre.h, docs/RUNTIME.md), ascending, for the
 * CLI's --sm check and the specs. */
static int program_ptx_targets(lua_State *L) {
    size_t n = vyre_ptx_target_count();
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        const struct vyre_ptx_target *t = vyre_ptx_target_at(i);
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, (lua_Integer)t->sm);
        lua_setfield(L, -2, "sm");
        lua_pushstring(L, t->isa);
        lua_setfield(L, -2, "isa");
        lua_pushinteger(L, t->min_cuda);
        lua_setfield(L, -2, "min_cuda");
        lua_pushstring(L, t->gpus);
        lua_setfield(L, -2, "gpus");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* vyre.random_program(seed [, {max_stmts, max_depth, allow_barriers, allow_approx,
 * allow_invalid, allow_subgroup, elementwise, allow_opt_shapes, allow_grid}]) -> Program
 * (deterministic for a seed). */
static int program_random(lua_State *L) {
    if (!lua_isinteger(L, 1))
        vyre_lua_typeerror(L, 1, "vyre.random_program", "integer seed",
                           "vyre.random_program(42 [, {max_stmts = 8}])");
    lua_Integer seed = lua_tointeger(L, 1);
    struct vyre_gen_options opt = {.max_stmts = 8, .max_depth = 4};
    if (!lua_isnoneornil(L, 2)) {
        if (!lua_istable(L, 2))
            vyre_lua_typeerror(L, 2, "vyre.random_program", "table of options",
                               "vyre.random_program(42, {max_stmts = 8, max_depth = 4})");
        const char *f = "vyre.random_program";
        static const char *const keys[] = {
            "max_stmts",      "max_depth",   "allow_barriers",   "allow_approx", "allow_invalid",
            "allow_subgroup", "elementwise", "allow_opt_shapes", "allow_grid",   NULL};
        vyre_lua_checkopts(L, 2, keys, f);
        opt.max_stmts = (uint32_t)opt_field_int(L, 2, "max_stmts", 8, 1, 10000, f);
        opt.max_depth = (uint32_t)opt_field_int(L, 2, "max_depth", 4, 1, 100, f);
        opt.allow_barriers = opt_field_bool(L, 2, "allow_barriers");
        opt.allow_approx = opt_field_bool(L, 2, "allow_approx");
        opt.allow_invalid = opt_field_bool(L, 2, "allow_invalid");
        opt.allow_subgroup = opt_field_bool(L, 2, "allow_subgroup");
        opt.elementwise = opt_field_bool(L, 2, "elementwise");
        opt.allow_opt_shapes = opt_field_bool(L, 2, "allow_opt_shapes");
        opt.allow_grid = opt_field_bool(L, 2, "allow_grid");
    }
    struct vyre_lua_program *lp = lua_newuserdatauv(L, sizeof *lp, 0);
    lp->p = NULL;
    luaL_setmetatable(L, VYRE_LUA_PROGRAM);
    lp->p = vyre_gen_random((uint64_t)seed, &opt);
    if (!lp->p) return vyre_lua_fail(L, "oom", "vyre.random_program: out of memory");
    return 1;
}

/* ---- registration ----------------------------------------------------------- */

static const luaL_Reg program_funcs[] = {{"parse", program_parse},
                                         {"validate", program_validate},
                                         {"ptx", program_ptx},
                                         {"ptx_targets", program_ptx_targets},
                                         {"random_program", program_random},
                                         {NULL, NULL}};

static const luaL_Reg program_methods[] = {{"text", program_text},
                                           {"hash", program_hash},
                                           {"decls", program_decls},
                                           {"validate", program_validate},
                                           {"free", program_free},
                                           {"optimize", program_optimize},
                                           {NULL, NULL}};

static const luaL_Reg program_meta[] = {{"__eq", program_eq},
                                        {"__tostring", program_tostring},
                                        {"__gc", program_free},
                                        {"__close", program_free},
                                        {NULL, NULL}};

void vyre_lua_open_program(lua_State *L) {
    vyre_lua_newclass(L, VYRE_LUA_PROGRAM, program_methods, program_meta);
    /* name and workgroup are fields, so __index is a function over the methods. */
    luaL_getmetatable(L, VYRE_LUA_PROGRAM);
    lua_getfield(L, -1, "__index");
    lua_pushcclosure(L, program_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_setfuncs(L, program_funcs, 0);
}
