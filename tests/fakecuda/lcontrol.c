/* lcontrol.c — the Lua module `fakecuda` (<build>/fakecuda/fakecuda.so) through which
 * specs steer the fake driver: fakecuda.control(cmd) -> answer string (raises on a
 * bad command). It opens the library named by VYRE_LIBCUDA — the same file the
 * runtime loads, so the dynamic loader hands back the one instance both share — and
 * calls its exported vyre_fakecuda_control. Built only with the Lua module. */
#include <dlfcn.h>
#include <lauxlib.h>
#include <lua.h>
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
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, l_control);
    lua_setfield(L, -2, "control");
    lua_pushstring(L, path);
    lua_setfield(L, -2, "path");
    return 1;
}
