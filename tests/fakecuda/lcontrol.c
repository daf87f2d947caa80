/* lcontrol.c — the Lua module `fakecuda` (<build>/fakecuda/fakecuda.so) through which
 * specs steer the fake driver: fakecuda.control(cmd) -> answer string (raises on a
 * bad command). It opens the library named by VYRE_LIBCUDA — the same file the
 * runtime loads, so the dynamic loader hands back the one instance both share — and
 * calls its exported vyre_fakecuda_control. Built only with the Lua module. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char *control_fn(const char *cmd, int *ok);
typedef void free_fn(char *s);

static control_fn *control;
static free_fn *release;

static int l_control(lua_State *L) {
    const char *cmd = luaL_checkstring(L, 1);
    int ok = 0;
    char *out = control(cmd, &ok);
    if (!out) return luaL_error(L, "fakecuda.control: out of host memory. Fix: free memory");
    lua_pushstring(L, out);
    release(out);
    if (!ok) return luaL_error(L, "fakecuda.control('%s'): %s", cmd, lua_tostring(L, -1));
    return 1;
}

/* fakecuda.nccl(cmd): the fake NCCL's faults, in process (specs 100, 101).
 * "calls" -> the counted calls so far; "async_fired" -> asynchronous faults set on a
 * communicator so far; "polls" -> the in-progress answers of ncclCommGetAsyncError,
 * the re-polls after one, and those re-polls whose thread blocked (slept) in between
 * (tests/fakenccl/fakenccl.c, $VYRE_FAKENCCL_BUSY_POLLS); "fail N:R" / "async N:R" ->
 * arms the N-th call from now (VYRE_FAKENCCL_FAIL / _ASYNC, which the fake reads at each call); "clear"
 * disarms both. The fake is the library VYRE_LIBNCCL names, already loaded by vyre. */
static int l_nccl(lua_State *L) {
    const char *cmd = luaL_checkstring(L, 1);
    const char *path = getenv("VYRE_LIBNCCL");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    void *c = h ? dlsym(h, "vyre_fakenccl_calls") : NULL;
    if (!c)
        return luaL_error(L, "fakecuda.nccl: VYRE_LIBNCCL=%s is not the fake NCCL. Fix: point "
                             "it at <build>/fakenccl/libnccl.so.2",
                          path ? path : "(unset)");
    void *a = dlsym(h, "vyre_fakenccl_async_fired");
    unsigned long long (*calls)(void), (*fired)(void) = NULL;
    memcpy(&calls, &c, sizeof c);
    if (a) memcpy(&fired, &a, sizeof a);
    unsigned long long now = calls();
    dlclose(h);
    if (strcmp(cmd, "async_fired") == 0) {
        lua_pushinteger(L, fired ? (lua_Integer)fired() : 0);
        return 1;
    }
    unsigned long long n;
    int r;
    if (strcmp(cmd, "calls") == 0) {
        lua_pushinteger(L, (lua_Integer)now);
        return 1;
    }
    if (strcmp(cmd, "polls") == 0) {
        unsigned long long pl[3] = {0, 0, 0};
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        void *p = h ? dlsym(h, "vyre_fakenccl_polls") : NULL;
        void (*polls)(unsigned long long *) = NULL;
        if (p) memcpy(&polls, &p, sizeof p);
        if (polls) polls(pl);
        if (h) dlclose(h);
        if (!polls)
            return luaL_error(L, "fakecuda.nccl('polls'): the fake NCCL has no "
                                 "vyre_fakenccl_polls. Fix: rebuild (cmake --build build)");
        for (int i = 0; i < 3; i++) lua_pushinteger(L, (lua_Integer)pl[i]);
        return 3;
    }
    if (strcmp(cmd, "clear") == 0) {
        unsetenv("VYRE_FAKENCCL_FAIL");
        unsetenv("VYRE_FAKENCCL_ASYNC");
        return 0;
    }
    int fail = strncmp(cmd, "fail ", 5) == 0, async = strncmp(cmd, "async ", 6) == 0;
    if ((!fail && !async) || sscanf(cmd + (fail ? 5 : 6), "%llu:%d", &n, &r) != 2 || n == 0)
        return luaL_error(L, "fakecuda.nccl('%s'): unknown command. Fix: use calls, polls, clear, "
                             "fail N:R or async N:R", cmd);
    char v[64];
    snprintf(v, sizeof v, "%llu:%d", now + n, r);
    setenv(fail ? "VYRE_FAKENCCL_FAIL" : "VYRE_FAKENCCL_ASYNC", v, 1);
    return 0;
}

__attribute__((visibility("default"))) int luaopen_fakecuda(lua_State *L);

int luaopen_fakecuda(lua_State *L) {
    const char *path = getenv("VYRE_LIBCUDA");
    if (!path || !*path)
        return luaL_error(L, "fakecuda: VYRE_LIBCUDA is not set. Fix: run with "
                             "VYRE_LIBCUDA=<build>/fakecuda/libcuda.so.1 (scripts/test.sh does)");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *c = h ? dlsym(h, "vyre_fakecuda_control") : NULL;
    void *f = h ? dlsym(h, "vyre_fakecuda_free") : NULL;
    if (!c || !f)
        return luaL_error(L,
                          "fakecuda: VYRE_LIBCUDA=%s is not the vyre fake driver (%s). Fix: "
                          "point it at <build>/fakecuda/libcuda.so.1",
                          path, h ? "no vyre_fakecuda_control" : dlerror());
    memcpy(&control, &c, sizeof c);
    memcpy(&release, &f, sizeof f);
    lua_createtable(L, 0, 3);
    lua_pushcfunction(L, l_control);
    lua_setfield(L, -2, "control");
    lua_pushcfunction(L, l_nccl);
    lua_setfield(L, -2, "nccl");
    lua_pushstring(L, path);
    lua_setfield(L, -2, "path");
    return 1;
}
