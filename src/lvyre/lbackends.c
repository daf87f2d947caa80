/* lbackends.c — core.backends() (vyre.backends()): the backends libvyre registers
 * (src/core/backend_registry.c), each with its priority and whether it can be opened
 * here, and why not. It only reads the registry; opening stays with vyre.backend(). */
#include "lvyre.h"
#include "vyre_backend.h"

#define MAX_BACKENDS 16

/* core.backends() -> {{name =, priority =, available = [, reason =]}, ...} in registry
 * order; reason (what is missing, ending in a Fix) only for an unavailable backend. */
int vyre_lua_backends(lua_State *L) {
    struct vyre_backend_entry es[MAX_BACKENDS];
    size_t n = 0;
    struct vyre_error err;
    if (vyre_backend_list(es, MAX_BACKENDS, &n, &err) != VYRE_OK)
        return vyre_lua_raise(L, "vyre.backends", &err);
    if (n > MAX_BACKENDS) n = MAX_BACKENDS;
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 4);
        lua_pushstring(L, es[i].name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, es[i].priority);
        lua_setfield(L, -2, "priority");
        lua_pushboolean(L, es[i].available);
        lua_setfield(L, -2, "available");
        if (!es[i].available) {
            lua_pushstring(L, es[i].reason);
            lua_setfield(L, -2, "reason");
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}
