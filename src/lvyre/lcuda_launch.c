/* lcuda_launch.c — vyre.cuda.Launch: a kernel with its arguments bound once
 * (`local l = k:bind(args, opts)`), relaunched with `l:launch()` or `l()`. This is the
 * launch floor from Lua: binding resolves names, checks types and converts params
 * once and the C core prepares the launch's own argument block and grid
 * (vyre_cuda_prepare), so a launch only checks that the bound buffers were not freed
 * and enqueues. The bound buffers and the kernel are kept alive by user values. */
#include <string.h>

#include "ir.h"
#include "lcuda.h"

struct lcuda_launch {
    struct lcuda_kernel *ku; /* NULL once released */
    uint32_t nbuffers;
    struct lcuda_buffer *bu[VYRE_MAX_BUFFERS];   /* the bound buffer userdata */
    vyre_cuda_buffer *bound[VYRE_MAX_BUFFERS];   /* what they held at bind time */
    struct vyre_cuda_prepared prep;              /* must not move: userdata memory */
};

static struct lcuda_launch *checklaunch(lua_State *L, const char *fname)
{
    struct lcuda_launch *l = luaL_checkudata(L, 1, VYRE_LUA_CUDA_LAUNCH);
    if (!l->ku)
        luaL_error(L, "%s: the bound launch was freed. Fix: bind again with k:bind(args, opts)",
                   fname);
    return l;
}

/* k:bind(args, opts) -> vyre.cuda.Launch. User values: 1 = kernel, 2 = buffer list. */
int vyre_lcuda_kernel_bind(lua_State *L)
{
    const char *fname = "vyre.Kernel:bind";
    struct lcuda_kernel *ku = vyre_lcuda_checkkernel(L, 1, fname);
    vyre_program *p = vyre_lcuda_kernel_program(L, ku, fname);
    vyre_cuda_device *dev = vyre_lcuda_kernel_device(L, 1);
    if (lua_isnoneornil(L, 2)) {
        lua_newtable(L);
        lua_replace(L, 2);
    }
    lua_settop(L, 3);
    struct lcuda_launch *l = lua_newuserdatauv(L, sizeof *l, 2); /* index 4 */
    memset(l, 0, sizeof *l);
    luaL_setmetatable(L, VYRE_LUA_CUDA_LAUNCH);
    vyre_cuda_buffer *bufs[VYRE_MAX_BUFFERS + 1];
    vyre_bits params[VYRE_MAX_PARAMS + 1];
    uint32_t grid[3];
    vyre_lcuda_read_args(L, 2, p, dev, bufs, params, fname);
    struct vyre_cuda_args a;
    vyre_lcuda_read_opts(L, 3, &a, grid, fname);
    a.buffers = bufs;
    a.nbuffers = p->nbuffers;
    a.params = params;
    a.nparams = p->nparams;
    struct vyre_error err;
    if (vyre_cuda_prepare(ku->k, &a, &l->prep, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    l->nbuffers = p->nbuffers;
    memcpy(l->bound, bufs, p->nbuffers * sizeof *bufs);
    /* Keep every bound buffer userdata alive and remember it, so a later free is seen. */
    lua_createtable(L, (int)p->nbuffers, 0);
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind != VYRE_DECL_BUFFER) continue;
        lua_getfield(L, 2, d->name);
        l->bu[d->slot] = luaL_checkudata(L, -1, VYRE_LUA_CUDA_BUFFER);
        lua_rawseti(L, -2, (lua_Integer)d->slot + 1);
    }
    lua_setiuservalue(L, 4, 2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 4, 1);
    l->ku = ku;
    return 1;
}

/* l:launch() / l() -> l (asynchronous). The hot path: no allocation, no strings. */
static int launch_launch(lua_State *L)
{
    struct lcuda_launch *l = checklaunch(L, "vyre.cuda.Launch:launch");
    if (!l->ku->k)
        return luaL_error(L, "vyre.cuda.Launch:launch: the kernel was freed. Fix: keep the "
                             "kernel alive while its bound launches are used");
    for (uint32_t i = 0; i < l->nbuffers; i++)
        if (l->bu[i]->b != l->bound[i])
            return luaL_error(L, "vyre.cuda.Launch:launch: bound buffer %d was freed. Fix: "
                                 "bind again with live buffers", (int)i + 1);
    struct vyre_error err;
    if (vyre_cuda_launch_prepared(&l->prep, &err) != VYRE_OK)
        return vyre_lua_raise(L, "vyre.cuda.Launch:launch", &err);
    lua_settop(L, 1);
    return 1;
}

static int launch_release(lua_State *L)
{
    struct lcuda_launch *l = luaL_checkudata(L, 1, VYRE_LUA_CUDA_LAUNCH);
    l->ku = NULL; /* owns no resource of its own: drop the references */
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 1);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 2);
    return 0;
}

static int launch_tostring(lua_State *L)
{
    struct lcuda_launch *l = luaL_checkudata(L, 1, VYRE_LUA_CUDA_LAUNCH);
    const char *name = l->ku && l->ku->k ? vyre_cuda_kernel_name(l->ku->k) : "freed";
    lua_pushfstring(L, "vyre.cuda.Launch(%s)", name);
    return 1;
}

static const luaL_Reg launch_methods[] = {
    {"launch", launch_launch},
    {"free", launch_release},
    {NULL, NULL}
};

static const luaL_Reg launch_meta[] = {
    {"__call", launch_launch},
    {"__gc", launch_release},
    {"__close", launch_release},
    {"__tostring", launch_tostring},
    {NULL, NULL}
};

void vyre_lcuda_open_launch(lua_State *L)
{
    vyre_lua_newclass(L, VYRE_LUA_CUDA_LAUNCH, launch_methods, launch_meta);
}
