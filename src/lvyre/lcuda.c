/* lcuda.c — Lua binding of the CUDA runtime: module functions core.cuda_* and the
 * vyre.cuda.Device userdata (info, stats, buffers, compile, run, load_ptx, trim,
 * synchronize). Argument checking and conversion only; lua/vyre/cuda.lua builds the
 * backend object of §7 on top. Environmental failures (no driver, no device) return
 * nil, reason; misuse and driver errors raise "vyre.cuda...: message. Fix: ...". */
#include <string.h>

#include "cuda_int.h"
#include "ir.h"
#include "lcuda.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static void oom_gc(void *ud)
{
    lua_State *L = ud;
    lua_gc(L, LUA_GCCOLLECT, 0);
}

static struct lcuda_device *todevice(lua_State *L, int idx)
{
    return luaL_checkudata(L, idx, VYRE_LUA_CUDA_DEVICE);
}

static void raise_status(lua_State *L, const char *fname, const struct vyre_error *err)
{
    vyre_lua_raise(L, fname, err);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_int3(lua_State *L, const char *k, const int v[3])
{
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
        lua_pushinteger(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, k);
}

static const struct vyre_decl *nth_decl(const vyre_program *p, enum vyre_decl_kind kind,
                                        uint32_t slot)
{
    for (uint32_t i = 0; i < p->ndecls; i++)
        if (p->decls[i].kind == kind && p->decls[i].slot == slot) return &p->decls[i];
    return NULL;
}

/* ---- shared helpers (lcuda.h) ----------------------------------------------- */

vyre_cuda_device *vyre_lcuda_checkdevice(lua_State *L, int idx, const char *fname)
{
    struct lcuda_device *u = todevice(L, idx);
    if (!u->d)
        luaL_error(L, "%s: the device object was closed. Fix: open it again with "
                      "vyre.cuda.device(i)", fname);
    return u->d;
}

void vyre_lcuda_arm_oom(lua_State *L, vyre_cuda_device *d)
{
    vyre_cuda_set_oom_handler(d, oom_gc, L);
}

void vyre_lcuda_pushtiming(lua_State *L, const struct vyre_cuda_timing *t)
{
    lua_createtable(L, 0, 4);
    set_int(L, "wall_ns", (lua_Integer)t->wall_ns);
    set_int(L, "device_ns", (lua_Integer)t->device_ns);
    set_int(L, "enqueue_ns", (lua_Integer)t->enqueue_ns);
    set_int(L, "wait_ns", (lua_Integer)t->wait_ns);
}

struct vyre_lua_array *vyre_lcuda_toarray(lua_State *L, int idx, enum vyre_type t,
                                          const char *fname)
{
    idx = lua_absindex(L, idx);
    struct vyre_lua_array *a = vyre_lua_toarray(L, idx);
    if (a) {
        if (a->type != t)
            luaL_error(L, "%s: the array holds %s but %s is needed. Fix: pass "
                          "vyre.array('%s', ...)", fname, vyre_type_name(a->type),
                       vyre_type_name(t), vyre_type_name(t));
        lua_pushvalue(L, idx);
        return a;
    }
    if (lua_type(L, idx) != LUA_TTABLE)
        luaL_error(L, "%s: expected a vyre.Array or a table of values (got %s). Fix: pass "
                      "vyre.array('%s', {...})", fname, luaL_typename(L, idx), vyre_type_name(t));
    lua_Unsigned n = lua_rawlen(L, idx);
    a = vyre_lua_newarray(L, t, (uint64_t)n);
    for (lua_Unsigned i = 0; i < n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        vyre_lua_storebits(a->data, t, i, vyre_lua_tobits(L, -1, t, fname, "element"));
        lua_pop(L, 1);
    }
    return a;
}

/* ---- module functions ------------------------------------------------------- */

/* core.cuda_available() -> true | false, reason */
static int cuda_available(lua_State *L)
{
    struct vyre_error err;
    if (vyre_cuda_available(&err)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_pushstring(L, err.message);
    return 2;
}

/* core.cuda_count() -> n | nil, reason */
static int cuda_count(lua_State *L)
{
    struct vyre_error err;
    int n = 0;
    if (vyre_cuda_device_count(&n, &err) != VYRE_OK) {
        lua_pushnil(L);
        lua_pushstring(L, err.message);
        return 2;
    }
    lua_pushinteger(L, n);
    return 1;
}

/* core.cuda_open(i) -> Device | nil, reason (0-based ordinal) */
static int cuda_open(lua_State *L)
{
    lua_Integer i = luaL_checkinteger(L, 1);
    struct lcuda_device *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->d = NULL;
    luaL_setmetatable(L, VYRE_LUA_CUDA_DEVICE);
    struct vyre_error err;
    enum vyre_status st = vyre_cuda_device_open((int)i, &u->d, &err);
    if (st == VYRE_ERR_NO_CUDA || st == VYRE_ERR_DEVICE_LOST) {
        lua_pushnil(L);
        lua_pushstring(L, err.message);
        return 2;
    }
    if (st != VYRE_OK) raise_status(L, "vyre.cuda.device", &err);
    return 1;
}

/* core.cuda_cache() -> {dir =, bytes =, files =, cap =} */
static int cuda_cache(lua_State *L)
{
    char dir[1024];
    lua_createtable(L, 0, 4);
    if (vyre_cuda_cache_dir(dir, sizeof dir)) {
        lua_pushstring(L, dir);
        lua_setfield(L, -2, "dir");
    }
    uint64_t bytes = 0, files = 0;
    vyre_cuda_cache_usage(&bytes, &files);
    set_int(L, "bytes", (lua_Integer)bytes);
    set_int(L, "files", (lua_Integer)files);
    set_int(L, "cap", (lua_Integer)vyre_cuda_cache_cap());
    return 1;
}

/* core.cuda_driver_version() -> integer (0 without a driver) */
static int cuda_driver_version(lua_State *L)
{
    lua_pushinteger(L, vyre_cuda_driver_version());
    return 1;
}

/* core.cuda_now_ns() -> monotonic clock in nanoseconds (benchmarks) */
static int cuda_now_ns(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)vyre_cu_now_ns());
    return 1;
}

/* ---- Device methods ------------------------------------------------------------ */

static int device_info(lua_State *L)
{
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, "vyre.cuda.Device:info");
    struct vyre_cuda_info in;
    struct vyre_error err;
    if (vyre_cuda_device_info(d, &in, &err) != VYRE_OK) raise_status(L, "vyre.cuda.Device:info", &err);
    lua_createtable(L, 0, 24);
    lua_pushstring(L, "cuda");
    lua_setfield(L, -2, "backend");
    lua_pushstring(L, in.name);
    lua_setfield(L, -2, "name");
    set_int(L, "ordinal", in.ordinal);
    set_int(L, "sm", in.sm);
    set_int(L, "cc_major", in.cc_major);
    set_int(L, "cc_minor", in.cc_minor);
    set_int(L, "multiprocessors", in.multiprocessors);
    set_int(L, "total_memory", (lua_Integer)in.total_memory);
    set_int(L, "max_threads_per_block", in.max_threads_per_block);
    set_int(L, "max_workgroup", in.max_threads_per_block);
    set_int3(L, "max_block", in.max_block);
    set_int3(L, "max_grid", in.max_grid);
    set_int(L, "shared_bytes", in.shared_per_block);
    set_int(L, "shared_bytes_optin", in.shared_per_block_optin);
    set_int(L, "warp_size", in.warp_size);
    lua_pushboolean(L, in.cooperative_launch);
    lua_setfield(L, -2, "cooperative_launch");
    set_int(L, "l2_bytes", in.l2_bytes);
    set_int(L, "clock_khz", in.clock_khz);
    set_int(L, "memory_clock_khz", in.memory_clock_khz);
    set_int(L, "memory_bus_bits", in.memory_bus_bits);
    set_int(L, "driver_version", in.driver_version);
    lua_pushboolean(L, vyre_cuda_device_lost(d));
    lua_setfield(L, -2, "lost");
    return 1;
}

static int device_stats(lua_State *L)
{
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, "vyre.cuda.Device:stats");
    struct vyre_cuda_stats s;
    vyre_cuda_device_stats(d, &s);
    lua_createtable(L, 0, 32);
#define PUSH_STAT(name, doc) set_int(L, #name, (lua_Integer)s.name);
    VYRE_CUDA_STATS(PUSH_STAT)
#undef PUSH_STAT
    return 1;
}

/* dev:buffer(type, n | vyre.Array | table) -> Buffer */
static int device_buffer(lua_State *L)
{
    const char *fname = "vyre.cuda.Device:buffer";
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, fname);
    enum vyre_type t = vyre_lua_checktype(L, 2, fname);
    struct vyre_lua_array *init = NULL;
    uint64_t n;
    if (lua_type(L, 3) == LUA_TNUMBER) {
        if (!lua_isinteger(L, 3))
            return luaL_error(L, "%s: element count %s is not an integer. Fix: pass a whole "
                                 "count such as 1024", fname, lua_tostring(L, 3));
        lua_Integer v = lua_tointeger(L, 3);
        if (v < 0)
            return luaL_error(L, "%s: element count %I is negative. Fix: pass n >= 0", fname,
                              (LUAI_UACINT)v);
        n = (uint64_t)v;
    } else {
        init = vyre_lcuda_toarray(L, 3, t, fname); /* pushed: stays alive on the stack */
        n = init->count;
    }
    vyre_lcuda_arm_oom(L, d);
    struct vyre_error err;
    vyre_cuda_buffer *b = NULL;
    if (vyre_cuda_buffer_alloc(d, t, n, &b, &err) != VYRE_OK) raise_status(L, fname, &err);
    vyre_lcuda_pushbuffer(L, b, 1);
    /* A buffer from a count starts zeroed, as on the reference backend (one async memset). */
    if (!init && n > 0 && vyre_cuda_buffer_zero(b, &err) != VYRE_OK) raise_status(L, fname, &err);
    if (init && n > 0 &&
        vyre_cuda_buffer_upload(b, 0, init->data, n * vyre_type_size(t), &err) != VYRE_OK)
        raise_status(L, fname, &err);
    return 1;
}

/* dev:compile(p) -> Kernel */
static int device_compile(lua_State *L)
{
    const char *fname = "vyre.cuda.Device:compile";
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, fname);
    vyre_program *p = vyre_lua_checkprogram(L, 2);
    struct lcuda_kernel *u = lua_newuserdatauv(L, sizeof *u, 2);
    u->k = NULL;
    u->prog = lua_touserdata(L, 2);
    luaL_setmetatable(L, VYRE_LUA_CUDA_KERNEL);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 2);
    struct vyre_error err;
    if (vyre_cuda_compile(d, p, &u->k, &err) != VYRE_OK) raise_status(L, fname, &err);
    return 1;
}

/* dev:load_ptx(ptx_text, entry) -> Kernel (raw: launch with k:launch_raw) */
static int device_load_ptx(lua_State *L)
{
    const char *fname = "vyre.cuda.Device:load_ptx";
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, fname);
    if (lua_type(L, 2) != LUA_TSTRING)
        vyre_lua_typeerror(L, 2, fname, "PTX text string", "be:load_ptx(ptx_text, 'entry_name')");
    if (lua_type(L, 3) != LUA_TSTRING)
        vyre_lua_typeerror(L, 3, fname, "entry name string", "be:load_ptx(ptx_text, 'entry_name')");
    const char *ptx = lua_tostring(L, 2);
    const char *entry = lua_tostring(L, 3);
    struct lcuda_kernel *u = lua_newuserdatauv(L, sizeof *u, 2);
    u->k = NULL;
    u->prog = NULL;
    luaL_setmetatable(L, VYRE_LUA_CUDA_KERNEL);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    struct vyre_error err;
    if (vyre_cuda_load_ptx(d, ptx, entry, &u->k, &err) != VYRE_OK) raise_status(L, fname, &err);
    return 1;
}

/* dev:run(p, arrays, params, n, grid [, timed]) -> outputs by slot [, timing]
 * arrays[slot]: a vyre.Array of the declared type, or an element count for an
 * unbound `write` buffer (zero-filled on the device). params[slot]: Lua values.
 * Called by lua/vyre/cuda.lua after bind.collect has matched names to slots. */
static int device_run(lua_State *L)
{
    const char *fname = "vyre.cuda.Device:run";
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, fname);
    vyre_program *p = vyre_lua_checkprogram(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    luaL_checktype(L, 4, LUA_TTABLE);
    lua_Integer n = luaL_optinteger(L, 5, 0);
    uint32_t grid[3];
    bool has_grid = !lua_isnoneornil(L, 6);
    if (has_grid) vyre_lua_checkgrid(L, 6, grid, fname);
    bool timed = lua_toboolean(L, 7);
    struct vyre_error err;
    if (vyre_ensure_valid(p, &err) != VYRE_OK) raise_status(L, fname, &err);
    uint32_t nb = p->nbuffers, np = p->nparams;
    struct vyre_buffer_arg *bufs = vyre_lua_scratch(L, (nb + 1) * sizeof *bufs);
    void **outs = vyre_lua_scratch(L, (nb + 1) * sizeof *outs);
    vyre_bits *params = vyre_lua_scratch(L, (np + 1) * sizeof *params);
    int top = lua_gettop(L);
    lua_createtable(L, (int)nb, 0); /* results by slot */
    int res = top + 1;
    for (uint32_t s = 0; s < nb; s++) {
        const struct vyre_decl *dc = nth_decl(p, VYRE_DECL_BUFFER, s);
        lua_rawgeti(L, 3, (lua_Integer)s + 1);
        if (lua_isinteger(L, -1) && dc->access == VYRE_ACCESS_WRITE) {
            /* An unbound write buffer: the device zero-fills it, nothing is uploaded. */
            lua_Integer cnt = lua_tointeger(L, -1);
            if (cnt < 0)
                return luaL_error(L, "%s: negative element count %I for '%s'. Fix: size write "
                                     "buffers with n >= 0", fname, (LUAI_UACINT)cnt, dc->name);
            bufs[s].data = NULL;
            bufs[s].count = (uint64_t)cnt;
        } else {
            struct vyre_lua_array *a = vyre_lua_toarray(L, -1);
            if (!a)
                return luaL_error(L, "%s: buffer '%s' is not bound to a vyre.Array. Fix: bind "
                                     "every buffer", fname, dc->name);
            if (a->type != dc->type)
                return luaL_error(L, "%s: buffer '%s' is declared %s but the array holds %s. "
                                     "Fix: pass vyre.array('%s', ...)", fname, dc->name,
                                  vyre_type_name(dc->type), vyre_type_name(a->type),
                                  vyre_type_name(dc->type));
            bufs[s].data = a->count ? a->data : NULL;
            bufs[s].count = a->count;
        }
        lua_pop(L, 1); /* the arrays table keeps it alive */
        outs[s] = NULL;
        if (dc->access != VYRE_ACCESS_READ) {
            struct vyre_lua_array *o = vyre_lua_newarray(L, dc->type, bufs[s].count);
            outs[s] = o->data;
            lua_rawseti(L, res, (lua_Integer)s + 1);
        }
    }
    for (uint32_t s = 0; s < np; s++) {
        const struct vyre_decl *dc = nth_decl(p, VYRE_DECL_PARAM, s);
        lua_rawgeti(L, 4, (lua_Integer)s + 1);
        params[s] = vyre_lua_tobits(L, -1, dc->type, fname, dc->name);
        lua_pop(L, 1);
    }
    vyre_lcuda_arm_oom(L, d);
    struct vyre_cuda_timing t;
    if (vyre_cuda_run(d, p, bufs, nb, params, np, (uint64_t)(n > 0 ? n : 0),
                      has_grid ? grid : NULL, outs, timed ? &t : NULL, &err) != VYRE_OK)
        raise_status(L, fname, &err);
    if (!timed) return 1;
    vyre_lcuda_pushtiming(L, &t);
    return 2;
}

static int device_synchronize(lua_State *L)
{
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, "vyre.cuda.Device:synchronize");
    struct vyre_error err;
    if (vyre_cuda_synchronize(d, &err) != VYRE_OK)
        raise_status(L, "vyre.cuda.Device:synchronize", &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int device_trim(lua_State *L)
{
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, "vyre.cuda.Device:trim");
    struct vyre_error err;
    if (vyre_cuda_trim(d, &err) != VYRE_OK) raise_status(L, "vyre.cuda.Device:trim", &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int device_lost(lua_State *L)
{
    struct lcuda_device *u = todevice(L, 1);
    lua_pushboolean(L, u->d ? vyre_cuda_device_lost(u->d) : 0);
    return 1;
}

/* dev:check() -> true, or raises the lost-device cause / a deferred __gc error. */
static int device_check(lua_State *L)
{
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, "vyre.cuda.Device:check");
    struct vyre_error err;
    /* A synchronize goes through the entry check that reports both. */
    if (vyre_cuda_synchronize(d, &err) != VYRE_OK) raise_status(L, "vyre.cuda.Device:check", &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* dev:_defer_error(msg): records msg as if a finalizer had failed (specs of the
 * deferred-error path; a real cuMemFree failure cannot be provoked on demand). */
static int device_defer_error(lua_State *L)
{
    vyre_cuda_device *d = vyre_lcuda_checkdevice(L, 1, "vyre.cuda.Device:_defer_error");
    struct vyre_error e;
    vyre_error_set(&e, VYRE_ERR_CUDA, "%s", luaL_checkstring(L, 2));
    vyre_cu_defer(d, &e);
    return 0;
}

/* __gc / __close / dev:close(): drops this object's reference. Buffers and kernels
 * keep the C device alive until they are released too. */
static int device_release(lua_State *L)
{
    struct lcuda_device *u = todevice(L, 1);
    if (u->d) {
        vyre_cuda_set_oom_handler(u->d, NULL, NULL);
        vyre_cuda_device_release(u->d);
        u->d = NULL;
    }
    return 0;
}

static int device_tostring(lua_State *L)
{
    struct lcuda_device *u = todevice(L, 1);
    if (!u->d) {
        lua_pushstring(L, "vyre.cuda.Device(closed)");
        return 1;
    }
    struct vyre_cuda_info in;
    vyre_cuda_device_info(u->d, &in, NULL);
    lua_pushfstring(L, "vyre.cuda.Device(%d: %s, sm_%d%s)", in.ordinal, in.name, (int)in.sm,
                    vyre_cuda_device_lost(u->d) ? ", lost" : "");
    return 1;
}

/* ---- registration ------------------------------------------------------------- */

static const luaL_Reg cuda_funcs[] = {
    {"cuda_available", cuda_available},
    {"cuda_count", cuda_count},
    {"cuda_open", cuda_open},
    {"cuda_cache", cuda_cache},
    {"cuda_driver_version", cuda_driver_version},
    {"cuda_now_ns", cuda_now_ns},
    {NULL, NULL}
};

static const luaL_Reg device_methods[] = {
    {"info", device_info},
    {"stats", device_stats},
    {"buffer", device_buffer},
    {"compile", device_compile},
    {"load_ptx", device_load_ptx},
    {"run", device_run},
    {"synchronize", device_synchronize},
    {"trim", device_trim},
    {"lost", device_lost},
    {"check", device_check},
    {"close", device_release},
    {"_defer_error", device_defer_error},
    {NULL, NULL}
};

static const luaL_Reg device_meta[] = {
    {"__gc", device_release},
    {"__close", device_release},
    {"__tostring", device_tostring},
    {NULL, NULL}
};

void vyre_lua_open_cuda(lua_State *L)
{
    vyre_lua_newclass(L, VYRE_LUA_CUDA_DEVICE, device_methods, device_meta);
    vyre_lcuda_open_buffer(L);
    vyre_lcuda_open_kernel(L);
    luaL_setfuncs(L, cuda_funcs, 0);
}
