/* lcuda_kernel.c — vyre.cuda.Kernel (launch by argument name on resident buffers,
 * timed launch, raw launch of a PTX kernel, info, k.ptx / k.program), sequences of
 * launches with ranged readback (dev:sequence) and CUDA graphs (dev:graph ->
 * vyre.cuda.Graph). The launch path reads the args table with lua_getfield per
 * declaration into stack arrays: nothing is allocated per launch. */
#include <string.h>

#include "ir.h"
#include "lcuda.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static struct lcuda_kernel *tokernel(lua_State *L, int idx)
{
    return luaL_checkudata(L, idx, VYRE_LUA_CUDA_KERNEL);
}

vyre_program *vyre_lcuda_kernel_program(lua_State *L, struct lcuda_kernel *u, const char *fname)
{
    if (!u->prog)
        luaL_error(L, "%s: this kernel was loaded from raw PTX and has no program. Fix: use "
                      "k:launch_raw(grid, block, args)", fname);
    if (!u->prog->p)
        luaL_error(L, "%s: the kernel's program was freed. Fix: keep the Program alive", fname);
    return u->prog->p;
}

/* Reads opts {n =, grid =} at idx (may be nil) into a. */
void vyre_lcuda_read_opts(lua_State *L, int idx, struct vyre_cuda_args *a, uint32_t grid[3],
                          const char *fname)
{
    a->n = 0;
    a->grid = NULL;
    if (lua_isnoneornil(L, idx)) return;
    luaL_checktype(L, idx, LUA_TTABLE);
    if (lua_getfield(L, idx, "n") != LUA_TNIL) {
        int isnum = 0;
        lua_Integer n = lua_tointegerx(L, -1, &isnum);
        if (!isnum || n < 0)
            luaL_error(L, "%s: opts.n must be a non-negative integer. Fix: {n = 1024}", fname);
        a->n = (uint64_t)n;
    }
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "grid") != LUA_TNIL) {
        vyre_lua_checkgrid(L, lua_gettop(L), grid, fname);
        a->grid = grid;
    }
    lua_pop(L, 1);
}

/* Unknown-name check, done only when the args table has more keys than matched. */
static void find_unknown(lua_State *L, int args, const vyre_program *p, const char *fname)
{
    lua_pushnil(L);
    while (lua_next(L, args)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        const struct vyre_decl *d = k ? vyre_ir_find_decl(p, k) : NULL;
        if (!d || d->kind == VYRE_DECL_SHARED)
            luaL_error(L, "%s: unknown argument '%s' for program '%s'. Fix: use the names of "
                          "its buffer and param declarations", fname,
                       k ? k : luaL_typename(L, -1), p->name);
    }
}

/* Fills bufs/params from the args table at `args` by declaration name. */
void vyre_lcuda_read_args(lua_State *L, int args, const vyre_program *p, vyre_cuda_device *dev,
                          vyre_cuda_buffer **bufs, vyre_bits *params, const char *fname)
{
    if (!lua_istable(L, args))
        luaL_error(L, "%s: args must be a table of name = value (got %s). Fix: "
                      "k:launch({x = buf, a = 2.0}, {n = 1024})", fname, luaL_typename(L, args));
    int matched = 0;
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind == VYRE_DECL_SHARED) continue;
        int t = lua_getfield(L, args, d->name);
        if (t == LUA_TNIL)
            luaL_error(L, "%s: missing %s '%s' (%s). Fix: pass it in the args table", fname,
                       d->kind == VYRE_DECL_BUFFER ? "buffer" : "param", d->name,
                       vyre_type_name(d->type));
        matched++;
        if (d->kind == VYRE_DECL_BUFFER) {
            struct lcuda_buffer *bu = luaL_testudata(L, -1, VYRE_LUA_CUDA_BUFFER);
            if (!bu)
                luaL_error(L, "%s: buffer '%s' must be a CUDA buffer from be:buffer('%s', n) "
                              "(got %s). Fix: upload the data to a device buffer first", fname,
                           d->name, vyre_type_name(d->type), luaL_typename(L, -1));
            if (!bu->b)
                luaL_error(L, "%s: buffer '%s' was freed. Fix: do not launch with a freed "
                              "buffer", fname, d->name);
            if (vyre_cuda_buffer_device(bu->b) != dev)
                luaL_error(L, "%s: buffer '%s' belongs to another device object. Fix: create "
                              "it with the kernel's device", fname, d->name);
            if (vyre_cuda_buffer_type(bu->b) != d->type)
                luaL_error(L, "%s: buffer '%s' is declared %s but the buffer holds %s. Fix: "
                              "pass a %s buffer", fname, d->name, vyre_type_name(d->type),
                           vyre_type_name(vyre_cuda_buffer_type(bu->b)), vyre_type_name(d->type));
            bufs[d->slot] = bu->b;
        } else {
            params[d->slot] = vyre_lua_tobits(L, -1, d->type, fname, d->name);
        }
        lua_pop(L, 1);
    }
    /* Count keys: more than matched means a name the program does not declare. */
    int keys = 0;
    lua_pushnil(L);
    while (lua_next(L, args)) {
        lua_pop(L, 1);
        keys++;
    }
    if (keys != matched) find_unknown(L, args, p, fname);
}

/* ---- Kernel methods ------------------------------------------------------------ */

static vyre_cuda_kernel *checkkernel(lua_State *L, struct lcuda_kernel *u, const char *fname)
{
    if (!u->k)
        luaL_error(L, "%s: the kernel was freed. Fix: compile it again", fname);
    return u->k;
}

struct lcuda_kernel *vyre_lcuda_checkkernel(lua_State *L, int idx, const char *fname)
{
    struct lcuda_kernel *u = tokernel(L, idx);
    checkkernel(L, u, fname);
    return u;
}

/* The kernel's own device: the C kernel holds a reference to it, so this works even
 * after the backend object that compiled it was closed. */
vyre_cuda_device *vyre_lcuda_kernel_device(lua_State *L, int idx)
{
    struct lcuda_kernel *u = vyre_lcuda_checkkernel(L, idx, "vyre.Kernel");
    return vyre_cuda_kernel_device(u->k);
}

static int launch_common(lua_State *L, bool timed)
{
    const char *fname = timed ? "vyre.Kernel:launch_timed" : "vyre.Kernel:launch";
    struct lcuda_kernel *u = vyre_lcuda_checkkernel(L, 1, fname);
    vyre_program *p = vyre_lcuda_kernel_program(L, u, fname);
    vyre_cuda_device *dev = vyre_lcuda_kernel_device(L, 1);
    vyre_cuda_buffer *bufs[VYRE_MAX_BUFFERS + 1];
    vyre_bits params[VYRE_MAX_PARAMS + 1];
    uint32_t grid[3];
    struct vyre_cuda_args a;
    if (lua_isnoneornil(L, 2)) {
        lua_newtable(L);
        lua_replace(L, 2);
    }
    vyre_lcuda_read_args(L, 2, p, dev, bufs, params, fname);
    vyre_lcuda_read_opts(L, 3, &a, grid, fname);
    a.buffers = bufs;
    a.nbuffers = p->nbuffers;
    a.params = params;
    a.nparams = p->nparams;
    struct vyre_error err;
    if (!timed) {
        if (vyre_cuda_launch(u->k, &a, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
        lua_settop(L, 1);
        return 1;
    }
    struct vyre_cuda_step step = {u->k, a};
    struct vyre_cuda_timing t;
    if (vyre_cuda_sequence(dev, &step, 1, 1, 0, NULL, 0, &t, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    vyre_lcuda_pushtiming(L, &t);
    return 1;
}

/* k:launch(args, opts) -> k (asynchronous) */
static int kernel_launch(lua_State *L) { return launch_common(L, false); }
/* k:launch_timed(args, opts) -> {wall_ns, device_ns, enqueue_ns, wait_ns} (synchronises) */
static int kernel_launch_timed(lua_State *L) { return launch_common(L, true); }

static void read_dim3(lua_State *L, int idx, uint32_t out[3], const char *fname, const char *what)
{
    luaL_checktype(L, idx, LUA_TTABLE);
    for (int a = 0; a < 3; a++) {
        lua_rawgeti(L, idx, a + 1);
        lua_Integer v = lua_isnil(L, -1) && a > 0 ? 1 : luaL_checkinteger(L, -1);
        if (v < 1 || v > (lua_Integer)UINT32_MAX)
            luaL_error(L, "%s: %s axis %d must be >= 1. Fix: e.g. {1, 1, 1}", fname, what, a + 1);
        out[a] = (uint32_t)v;
        lua_pop(L, 1);
    }
}

/* k:launch_raw(grid, block, args): args is a list of Buffers (device pointer),
 * integers (64-bit) or {"u32"|"i32"|"f32"|"u64"|..., value} for exact widths. */
static int kernel_launch_raw(lua_State *L)
{
    const char *fname = "vyre.Kernel:launch_raw";
    struct lcuda_kernel *u = vyre_lcuda_checkkernel(L, 1, fname);
    uint32_t grid[3], block[3];
    read_dim3(L, 2, grid, fname, "grid");
    read_dim3(L, 3, block, fname, "block");
    int n = lua_isnoneornil(L, 4) ? 0 : (int)luaL_len(L, 4);
    if (n > VYRE_CU_MAX_ARGS_LUA)
        return luaL_error(L, "%s: %d arguments, at most %d. Fix: pass fewer", fname, n,
                          VYRE_CU_MAX_ARGS_LUA);
    uint64_t vals[VYRE_CU_MAX_ARGS_LUA];
    void *argv[VYRE_CU_MAX_ARGS_LUA];
    for (int i = 0; i < n; i++) {
        lua_geti(L, 4, i + 1);
        struct lcuda_buffer *bu = luaL_testudata(L, -1, VYRE_LUA_CUDA_BUFFER);
        if (bu) {
            if (!bu->b) return luaL_error(L, "%s: argument %d is a freed buffer. Fix: pass a live buffer", fname, i + 1);
            vals[i] = vyre_cuda_buffer_pointer(bu->b);
        } else if (lua_istable(L, -1)) {
            lua_rawgeti(L, -1, 1);
            enum vyre_type t = vyre_lua_checktype(L, -1, fname);
            lua_rawgeti(L, -2, 2);
            vals[i] = vyre_lua_tobits(L, -1, t, fname, "raw argument");
            lua_pop(L, 2);
        } else {
            lua_Integer v = luaL_checkinteger(L, -1);
            vals[i] = (uint64_t)v;
        }
        argv[i] = &vals[i]; /* 32-bit values read their low 4 bytes (little-endian) */
        lua_pop(L, 1);
    }
    struct vyre_error err;
    if (vyre_cuda_launch_raw(u->k, grid, block, 0, argv, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

static int kernel_info(lua_State *L)
{
    const char *fname = "vyre.Kernel:info";
    struct lcuda_kernel *u = vyre_lcuda_checkkernel(L, 1, fname);
    struct vyre_cuda_kernel_info in;
    struct vyre_error err;
    if (vyre_cuda_kernel_info(u->k, &in, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lua_createtable(L, 0, 12);
    lua_pushstring(L, vyre_cuda_kernel_name(u->k));
    lua_setfield(L, -2, "name");
    lua_pushstring(L, "cuda");
    lua_setfield(L, -2, "backend");
#define SETI(field)                            \
    lua_pushinteger(L, (lua_Integer)in.field); \
    lua_setfield(L, -2, #field);
    SETI(registers)
    SETI(shared_bytes)
    SETI(local_bytes)
    SETI(const_bytes)
    SETI(max_threads)
    SETI(ptx_version)
    SETI(binary_version)
    SETI(nbuffers)
    SETI(nparams)
#undef SETI
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
        lua_pushinteger(L, in.workgroup[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "workgroup");
    if (u->prog && u->prog->p) {
        char hex[17];
        vyre_hash_hex(u->prog->p, hex);
        lua_pushstring(L, hex);
        lua_setfield(L, -2, "hash");
    }
    return 1;
}

static int kernel_release(lua_State *L)
{
    struct lcuda_kernel *u = tokernel(L, 1);
    if (u->k) {
        vyre_cuda_kernel *k = u->k;
        u->k = NULL;
        vyre_cuda_kernel_free(k);
    }
    return 0;
}

static const luaL_Reg kernel_methods[] = {
    {"launch", kernel_launch},
    {"launch_timed", kernel_launch_timed},
    {"launch_raw", kernel_launch_raw},
    {"bind", vyre_lcuda_kernel_bind},
    {"info", kernel_info},
    {"free", kernel_release},
    {NULL, NULL}
};

/* Fields ptx, program, name, then methods. */
static int kernel_index(lua_State *L)
{
    struct lcuda_kernel *u = tokernel(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && u->k && strcmp(k, "ptx") == 0) {
        lua_pushstring(L, vyre_cuda_kernel_ptx(u->k));
        return 1;
    }
    if (k && u->k && strcmp(k, "name") == 0) {
        lua_pushstring(L, vyre_cuda_kernel_name(u->k));
        return 1;
    }
    if (k && strcmp(k, "program") == 0) {
        lua_getiuservalue(L, 1, 2);
        return 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int kernel_tostring(lua_State *L)
{
    struct lcuda_kernel *u = tokernel(L, 1);
    lua_pushfstring(L, "vyre.Kernel(cuda, %s)", u->k ? vyre_cuda_kernel_name(u->k) : "freed");
    return 1;
}

/* ---- sequences and graphs ------------------------------------------------------ */

/* Reads steps = {{kernel, args, opts}, ...} at idx into scratch memory (pushed). */
static struct vyre_cuda_step *read_steps(lua_State *L, int idx, vyre_cuda_device *dev,
                                         size_t *nsteps, const char *fname)
{
    luaL_checktype(L, idx, LUA_TTABLE);
    size_t n = (size_t)luaL_len(L, idx);
    struct vyre_cuda_step *steps = vyre_lua_scratch(L, (n + 1) * sizeof *steps);
    size_t per = VYRE_MAX_BUFFERS * sizeof(vyre_cuda_buffer *) + VYRE_MAX_PARAMS * sizeof(vyre_bits) +
                 3 * sizeof(uint32_t);
    unsigned char *store = vyre_lua_scratch(L, (n + 1) * per);
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, idx, (lua_Integer)i + 1);
        int st = lua_gettop(L);
        if (!lua_istable(L, st))
            luaL_error(L, "%s: step %d must be {kernel, args, opts}. Fix: e.g. {{k, {x = buf}, "
                          "{n = 1024}}}", fname, (int)i + 1);
        lua_rawgeti(L, st, 1);
        struct lcuda_kernel *u = vyre_lcuda_checkkernel(L, -1, fname);
        vyre_program *p = vyre_lcuda_kernel_program(L, u, fname);
        lua_rawgeti(L, st, 2);
        lua_rawgeti(L, st, 3);
        unsigned char *base = store + i * per;
        vyre_cuda_buffer **bufs = (vyre_cuda_buffer **)(void *)base;
        vyre_bits *params = (vyre_bits *)(void *)(base + VYRE_MAX_BUFFERS * sizeof *bufs);
        uint32_t *grid = (uint32_t *)(void *)(base + VYRE_MAX_BUFFERS * sizeof *bufs +
                                              VYRE_MAX_PARAMS * sizeof *params);
        if (lua_isnil(L, st + 2)) {
            lua_newtable(L);
            lua_replace(L, st + 2);
        }
        vyre_lcuda_read_args(L, st + 2, p, dev, bufs, params, fname);
        steps[i].kernel = u->k;
        vyre_lcuda_read_opts(L, st + 3, &steps[i].args, grid, fname);
        steps[i].args.buffers = bufs;
        steps[i].args.nbuffers = p->nbuffers;
        steps[i].args.params = params;
        steps[i].args.nparams = p->nparams;
        lua_settop(L, st - 1); /* the steps table keeps everything alive */
    }
    *nsteps = n;
    return steps;
}

/* dev:sequence(steps, {prefix =, times =, readback = {{buf, off, nbytes} | buf, ...},
 * timed =}) -> list of readback arrays [, timing]. steps[1..prefix] run once, the
 * rest `times` times (default 1), then the readbacks, with one final sync. */
static int device_sequence(lua_State *L)
{
    const char *fname = "vyre.cuda.Device:sequence";
    vyre_cuda_device *dev = vyre_lcuda_checkdevice(L, 1, fname);
    int opts = 3;
    lua_Integer prefix = 0, times = 1;
    bool timed = false;
    if (!lua_isnoneornil(L, opts)) {
        luaL_checktype(L, opts, LUA_TTABLE);
        lua_getfield(L, opts, "prefix");
        prefix = luaL_optinteger(L, -1, 0);
        lua_getfield(L, opts, "times");
        times = luaL_optinteger(L, -1, 1);
        lua_getfield(L, opts, "timed");
        timed = lua_toboolean(L, -1);
        lua_pop(L, 3);
    } else {
        lua_settop(L, 2);
        lua_newtable(L);
    }
    if (prefix < 0 || times < 0 || times > (lua_Integer)UINT32_MAX)
        return luaL_error(L, "%s: prefix and times must be >= 0. Fix: {prefix = 1, times = 10}",
                          fname);
    size_t nsteps = 0;
    struct vyre_cuda_step *steps = read_steps(L, 2, dev, &nsteps, fname);
    lua_getfield(L, opts, "readback");
    int rbt = lua_gettop(L);
    size_t nrb = lua_istable(L, rbt) ? (size_t)luaL_len(L, rbt) : 0;
    struct vyre_cuda_readback *rb = vyre_lua_scratch(L, (nrb + 1) * sizeof *rb);
    lua_createtable(L, (int)nrb, 0);
    int res = lua_gettop(L);
    for (size_t i = 0; i < nrb; i++) {
        lua_geti(L, rbt, (lua_Integer)i + 1);
        int e = lua_gettop(L);
        struct lcuda_buffer *bu = luaL_testudata(L, e, VYRE_LUA_CUDA_BUFFER);
        lua_Integer off = 0, nbytes = -1;
        if (!bu && lua_istable(L, e)) {
            lua_rawgeti(L, e, 1);
            bu = luaL_testudata(L, -1, VYRE_LUA_CUDA_BUFFER);
            lua_rawgeti(L, e, 2);
            off = luaL_optinteger(L, -1, 0);
            lua_rawgeti(L, e, 3);
            nbytes = luaL_optinteger(L, -1, -1);
            lua_pop(L, 3);
        }
        if (!bu || !bu->b)
            return luaL_error(L, "%s: readback %d must be a live buffer or {buf, byte_offset, "
                                 "nbytes}. Fix: e.g. readback = {{out, 0, 16}}", fname, (int)i + 1);
        enum vyre_type t = vyre_cuda_buffer_type(bu->b);
        uint64_t total = vyre_cuda_buffer_bytes(bu->b), es = vyre_type_size(t);
        if (off < 0) return luaL_error(L, "%s: readback %d: negative offset. Fix: byte offsets start at 0", fname, (int)i + 1);
        if (nbytes < 0) nbytes = (lua_Integer)((uint64_t)off <= total ? total - (uint64_t)off : 0);
        if ((uint64_t)off % es || (uint64_t)nbytes % es)
            return luaL_error(L, "%s: readback %d: offset and size must be multiples of %d "
                                 "bytes. Fix: read whole elements", fname, (int)i + 1, (int)es);
        struct vyre_lua_array *a = vyre_lua_newarray(L, t, (uint64_t)nbytes / es);
        lua_rawseti(L, res, (lua_Integer)i + 1);
        rb[i] = (struct vyre_cuda_readback){bu->b, (uint64_t)off, (uint64_t)nbytes, a->data};
        lua_settop(L, e - 1);
    }
    struct vyre_cuda_timing t;
    struct vyre_error err;
    if ((size_t)prefix > nsteps)
        return luaL_error(L, "%s: prefix %d is longer than the %d steps. Fix: prefix must be at most #steps", fname, (int)prefix,
                          (int)nsteps);
    if (vyre_cuda_sequence(dev, steps, nsteps, (size_t)prefix, (uint32_t)times, rb, nrb,
                           timed ? &t : NULL, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    if (!timed) return 1;
    vyre_lcuda_pushtiming(L, &t);
    return 2;
}

struct lcuda_graph { vyre_cuda_graph *g; };

/* dev:graph(steps) -> Graph (captured now; replay with g:launch) */
static int device_graph(lua_State *L)
{
    const char *fname = "vyre.cuda.Device:graph";
    vyre_cuda_device *dev = vyre_lcuda_checkdevice(L, 1, fname);
    lua_settop(L, 2);
    size_t nsteps = 0;
    struct vyre_cuda_step *steps = read_steps(L, 2, dev, &nsteps, fname);
    struct lcuda_graph *u = lua_newuserdatauv(L, sizeof *u, 2);
    u->g = NULL;
    luaL_setmetatable(L, VYRE_LUA_CUDA_GRAPH);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, 2); /* keeps kernels and buffers of the capture alive */
    lua_setiuservalue(L, -2, 2);
    struct vyre_error err;
    if (vyre_cuda_graph_capture(dev, steps, nsteps, &u->g, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    return 1;
}

/* g:launch([times [, timed]]) -> g | timing */
static int graph_launch(lua_State *L)
{
    const char *fname = "vyre.cuda.Graph:launch";
    struct lcuda_graph *u = luaL_checkudata(L, 1, VYRE_LUA_CUDA_GRAPH);
    if (!u->g) return luaL_error(L, "%s: the graph was freed. Fix: capture it again", fname);
    lua_Integer times = luaL_optinteger(L, 2, 1);
    bool timed = lua_toboolean(L, 3);
    if (times < 0 || times > (lua_Integer)UINT32_MAX)
        return luaL_error(L, "%s: times must be >= 0. Fix: g:launch(1)", fname);
    struct vyre_cuda_timing t;
    struct vyre_error err;
    if (vyre_cuda_graph_launch(u->g, (uint32_t)times, timed ? &t : NULL, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    if (!timed) {
        lua_settop(L, 1);
        return 1;
    }
    vyre_lcuda_pushtiming(L, &t);
    return 1;
}

static int graph_release(lua_State *L)
{
    struct lcuda_graph *u = luaL_checkudata(L, 1, VYRE_LUA_CUDA_GRAPH);
    if (u->g) {
        vyre_cuda_graph *g = u->g;
        u->g = NULL;
        vyre_cuda_graph_free(g);
    }
    return 0;
}

static const luaL_Reg graph_methods[] = {
    {"launch", graph_launch},
    {"free", graph_release},
    {NULL, NULL}
};

static int graph_tostring(lua_State *L)
{
    struct lcuda_graph *u = luaL_checkudata(L, 1, VYRE_LUA_CUDA_GRAPH);
    lua_pushstring(L, u->g ? "vyre.cuda.Graph(captured)" : "vyre.cuda.Graph(freed)");
    return 1;
}

static const luaL_Reg graph_meta[] = {
    {"__tostring", graph_tostring},
    {"__gc", graph_release},
    {"__close", graph_release},
    {NULL, NULL}
};

void vyre_lcuda_open_kernel(lua_State *L)
{
    luaL_newmetatable(L, VYRE_LUA_CUDA_KERNEL);
    luaL_newlib(L, kernel_methods);
    lua_pushcclosure(L, kernel_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, kernel_release);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, kernel_release);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, kernel_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    vyre_lua_newclass(L, VYRE_LUA_CUDA_GRAPH, graph_methods, graph_meta);
    vyre_lcuda_open_launch(L);
    /* Sequence and graph are Device methods that live here with the launch code. */
    luaL_getmetatable(L, VYRE_LUA_CUDA_DEVICE);
    lua_getfield(L, -1, "__index");
    lua_pushcfunction(L, device_sequence);
    lua_setfield(L, -2, "sequence");
    lua_pushcfunction(L, device_graph);
    lua_setfield(L, -2, "graph");
    lua_pop(L, 2);
}
