/* lspawn.c — starting and waiting for child processes without a shell, for
 * `vyre launch` (lua/vyre/cli/launch.lua): core.spawn(argv, env) runs argv[1] (searched
 * on PATH) with the arguments as given — no shell parses them, so a script path or an
 * id holding spaces or quotes cannot run anything else — and the environment of this
 * process with `env` added or replaced; core.wait() reaps one child; core.kill(pid)
 * ends one. POSIX only (posix_spawnp, waitpid). */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "lbackend.h"
#include "lvyre_box.h"

extern char **environ;

/* core.spawn(argv, env) -> pid | nil, why */
static int core_spawn(lua_State *L) {
    const char *fname = "vyre.core.spawn";
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    size_t argc = (size_t)luaL_len(L, 1);
    if (argc == 0)
        return vyre_lua_fail(L, "arg", "%s: argv is empty. Fix: {program, args...}", fname);
    char **argv = vyre_lua_scratch(L, (argc + 1) * sizeof *argv);
    for (size_t i = 0; i < argc; i++) {
        lua_geti(L, 1, (lua_Integer)i + 1);
        argv[i] = (char *)luaL_checkstring(L, -1); /* kept alive by the argv table */
        lua_pop(L, 1);
    }
    argv[argc] = NULL;
    /* environ without the names env sets, then env's NAME=value strings */
    size_t nenv = 0, nset = 0;
    while (environ[nenv]) nenv++;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        nset++;
        lua_pop(L, 1);
    }
    char **envp = vyre_lua_scratch(L, (nenv + nset + 1) * sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        lua_pushlstring(L, environ[i], len);
        bool replaced = lua_rawget(L, 2) != LUA_TNIL;
        lua_pop(L, 1);
        if (!replaced) envp[k++] = environ[i];
    }
    lua_createtable(L, (int)nset, 0); /* keeps the NAME=value strings alive */
    int keep = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        const char *name = luaL_checkstring(L, -2); /* before tolstring pushes */
        const char *val = luaL_tolstring(L, -1, NULL);
        lua_pushfstring(L, "%s=%s", name, val);
        envp[k++] = (char *)lua_tostring(L, -1);
        lua_rawseti(L, keep, (lua_Integer)k);
        lua_pop(L, 2);
    }
    envp[k] = NULL;
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp);
    if (rc != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot start %s: %s", argv[0], strerror(rc));
        return 2;
    }
    lua_pushinteger(L, (lua_Integer)pid);
    return 1;
}

/* core.wait() -> pid, exit status (128 + signal when killed) | nil when no child left */
static int core_wait(lua_State *L) {
    int status = 0;
    pid_t pid;
    do pid = waitpid(-1, &status, 0);
    while (pid < 0 && errno == EINTR);
    if (pid < 0) return 0;
    lua_pushinteger(L, (lua_Integer)pid);
    lua_pushinteger(L, WIFEXITED(status)     ? WEXITSTATUS(status)
                       : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                             : 1);
    return 2;
}

/* core.kill(pid): SIGTERM to one child. */
static int core_kill(lua_State *L) {
    lua_Integer pid = luaL_checkinteger(L, 1);
    if (pid > 0) kill((pid_t)pid, SIGTERM);
    return 0;
}

static const luaL_Reg spawn_funcs[] = {
    {"spawn", core_spawn}, {"wait", core_wait}, {"kill", core_kill}, {NULL, NULL}};

void vyre_lua_open_spawn(lua_State *L) { luaL_setfuncs(L, spawn_funcs, 0); }
