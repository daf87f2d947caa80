/* host_lua.c — vyre embedded in a C program the way a game or tool engine embeds Lua:
 * the host owns a Lua 5.4 state with vyre linked in (no vyre/core.so to find at run
 * time), runs a script once to set up (frame.lua's init: a backend, resident buffers,
 * compiled kernels), then calls the script's frame function once per frame of its own
 * loop. The buffers stay alive on the device across frames; each frame the script
 * launches kernels on them and hands the raw pointers (buf:pointer()) to the engine's
 * C code, which reads them directly (engine.h) and checks them against a C simulation.
 *
 *   vyre_embed_lua [--backend reference|cuda] [--frames N] [--particles N]
 *
 * VYRE_EMBED_DIR (particles.vyre, frame.lua) and VYRE_LUA_DIR (the lua/ folder) are
 * compiled in by CMake; the environment variables of the same names override them.
 * Built against an installed vyre (VYRE_EMBED_CORE_SO, examples/embed/CMakeLists.txt),
 * the host links no vyre code: require("vyre") finds the installed Lua files and
 * vyre/core.so on package.path/package.cpath (LUA_PATH/LUA_CPATH), and VYRE_LUA_DIR, when
 * set, is put in front. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "engine.h"

#ifndef VYRE_EMBED_CORE_SO
/* The binding's entry point, linked in from src/lvyre (see CMakeLists.txt). */
int luaopen_vyre_core(lua_State *L);
#define VYRE_EMBED_CORE_SO 0
#endif
#ifndef VYRE_LUA_DIR
#define VYRE_LUA_DIR NULL /* only from the environment */
#endif

static const char *dir_of(const char *env, const char *fallback) {
    const char *v = getenv(env);
    return v && *v ? v : fallback;
}

/* engine.present(frame, y_ptr, top_ptr, n): the C side of the interop. */
static int l_present(lua_State *L) {
    struct engine *e = lua_touserdata(L, lua_upvalueindex(1));
    lua_Integer frame = luaL_checkinteger(L, 1);
    lua_Integer yp = luaL_checkinteger(L, 2), tp = luaL_checkinteger(L, 3);
    lua_Integer n = luaL_checkinteger(L, 4);
    if (n < 0 || n > (lua_Integer)UINT32_MAX) return luaL_error(L, "engine.present: bad count");
    if (engine_present(e, (int)frame, (uint64_t)yp, (uint64_t)tp, (uint32_t)n) != 0)
        return luaL_error(L, "engine.present: reading the buffers through their pointers "
                             "failed");
    return 0;
}

/* Calls the function below its nargs arguments (on top of the stack); on an error
 * prints it with a traceback and returns -1. */
static int call(lua_State *L, int nargs, int nresults, const char *what) {
    int base = lua_gettop(L) - nargs; /* the function */
    lua_getglobal(L, "debug");
    lua_getfield(L, -1, "traceback");
    lua_remove(L, -2);
    lua_insert(L, base); /* the message handler goes below the function */
    int st = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    if (st != LUA_OK) {
        fprintf(stderr, "vyre_embed_lua: %s: %s\n", what, lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

/* Sets up the state: standard libraries, vyre.core preloaded (unless it is the
 * installed core.so), package.path for lua/vyre, and the global `engine` table. */
static void open_state(lua_State *L, struct engine *e, const char *lua_dir) {
    luaL_openlibs(L);
#if !VYRE_EMBED_CORE_SO
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_vyre_core);
    lua_setfield(L, -2, "vyre.core");
    lua_pop(L, 1);
#endif
    if (lua_dir) {
        lua_getglobal(L, "package");
        lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", lua_dir, lua_dir);
        lua_getfield(L, -2, "path");
        lua_concat(L, 2);
        lua_setfield(L, -2, "path");
        lua_pop(L, 1);
    }
    lua_newtable(L);
    lua_pushlightuserdata(L, e);
    lua_pushcclosure(L, l_present, 1);
    lua_setfield(L, -2, "present");
    lua_setglobal(L, "engine");
}

static int run(lua_State *L, struct engine *e, const char *backend, const char *embed_dir) {
    char script[4096];
    if (VYRE_EMBED_CORE_SO) {
        /* The installed vyre must be on the paths before the script asks for it. */
        lua_getglobal(L, "require");
        lua_pushliteral(L, "vyre");
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
            fprintf(stderr,
                    "vyre_embed_lua: %s\nFix: put the installed vyre on LUA_PATH and "
                    "LUA_CPATH, e.g. eval \"$(luarocks --lua-version=5.4 --tree TREE "
                    "path)\" for a rock, or set VYRE_LUA_DIR to its Lua directory.\n",
                    lua_tostring(L, -1));
            return 1;
        }
    }
    snprintf(script, sizeof script, "%s/frame.lua", embed_dir);
    if (luaL_loadfile(L, script) != LUA_OK) {
        fprintf(stderr, "vyre_embed_lua: %s\n", lua_tostring(L, -1));
        return 1;
    }
    if (call(L, 0, 1, "frame.lua") != 0) return 1;
    int mod = lua_gettop(L); /* the script's table: init, frame */
    lua_getfield(L, mod, "init");
    lua_createtable(L, 0, 5);
    lua_pushstring(L, backend);
    lua_setfield(L, -2, "backend");
    lua_pushinteger(L, (lua_Integer)e->n);
    lua_setfield(L, -2, "particles");
    lua_pushnumber(L, (lua_Number)ENGINE_GRAVITY);
    lua_setfield(L, -2, "gravity");
    lua_pushnumber(L, (lua_Number)ENGINE_BOUNCE);
    lua_setfield(L, -2, "bounce");
    lua_pushstring(L, embed_dir);
    lua_setfield(L, -2, "dir");
    if (call(L, 1, 1, "frame.lua init") != 0) return 1;
    printf("vyre_embed_lua: %s\n", lua_tostring(L, -1)); /* init says what it set up */
    lua_pop(L, 1);
    /* The engine's frame loop: one call into the script per frame. */
    for (int frame = 0; frame < e->frames; frame++) {
        lua_getfield(L, mod, "frame");
        lua_pushinteger(L, frame);
        lua_pushnumber(L, (lua_Number)engine_dt(frame));
        if (call(L, 2, 0, "frame.lua frame") != 0) return 1;
    }
    return engine_finish(e, backend);
}

int main(int argc, char **argv) {
    const char *backend;
    int frames;
    uint32_t n;
    int st = engine_args(argc, argv, "vyre_embed_lua", &backend, &frames, &n);
    if (st != 0) return st;
    struct engine e;
    if (engine_init(&e, "vyre_embed_lua", strcmp(backend, "cuda") == 0, n, frames) != 0) {
        engine_free(&e);
        return 1;
    }
    lua_State *L = luaL_newstate();
    if (!L) {
        engine_free(&e);
        return engine_fail(&e, "cannot create a Lua state");
    }
    open_state(L, &e, dir_of("VYRE_LUA_DIR", VYRE_LUA_DIR));
    st = run(L, &e, backend, dir_of("VYRE_EMBED_DIR", VYRE_EMBED_DIR));
    lua_close(L); /* collects the buffers, kernels and the backend */
    engine_free(&e);
    return st;
}
