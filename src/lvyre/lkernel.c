/* lkernel.c — vyre.Kernel: a program compiled for a backend. k:launch(args, opts) by
 * argument name on resident buffers (the reference runs it now, CUDA enqueues it),
 * k:launch_timed, k:bind (llaunch.c), k:info, k:free, fields k.program, k.name and
 * k.ptx (CUDA); k:launch_raw for kernels loaded from raw PTX (CUDA). The kernel keeps
 * its backend (user value 1), its program (2) and the program's layout (3) alive, so
 * a launch matches names without touching the program. */
#include <stdio.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

#define RAW_MAX_ARGS 64 /* arguments of a raw PTX launch */

/* ---- static helpers ------------------------------------------------------ */

static struct lvyre_kernel *tokernel(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_KERNEL);
}

/* The live kernel that is argument 1 of a method, checked against the metatable every
 * method carries as upvalue 1 (no registry lookup on the launch path); anything else
 * goes through the full check, which raises with the right words. */
static struct lvyre_kernel *self_kernel(lua_State *L, const char *fname) {
    struct lvyre_kernel *k = lua_touserdata(L, 1);
    if (k && lua_getmetatable(L, 1)) {
        bool same = lua_rawequal(L, -1, lua_upvalueindex(1));
        lua_pop(L, 1);
        if (same && k->live) return k;
    }
    return lvyre_checkkernel(L, 1, fname);
}

static const char *kind_name(const struct lvyre_kernel *k) { return lvyre_backend_name(k->be); }

static void push_int_field(lua_State *L, const char *key, lua_Integer v) {
    lua_pushinteger(L, v);
    lua_setfield(L, -2, key);
}

/* ---- shared helpers (lbackend.h) ----------------------------------------- */

struct lvyre_kernel *lvyre_checkkernel(lua_State *L, int idx, const char *fname) {
    struct lvyre_kernel *k = luaL_testudata(L, idx, VYRE_LUA_KERNEL);
    if (!k) vyre_lua_wrongself(L, idx, VYRE_LUA_KERNEL, fname);
    if (!k->live)
        vyre_lua_fail(L, "freed",
                      "%s: the kernel was freed. Fix: compile it again with be:compile(p)", fname);
    return k;
}

vyre_program *lvyre_kernel_program(lua_State *L, struct lvyre_kernel *k, const char *fname) {
    if (!k->prog)
        vyre_lua_fail(L, "arg",
                      "%s: this kernel was loaded from raw PTX and has no program. Fix: use "
                      "k:launch_raw(grid, block, args)",
                      fname);
    if (!k->prog->p)
        vyre_lua_fail(L, "freed",
                      "%s: the kernel's vyre.Program was freed. Fix: keep the program alive "
                      "while its kernels are used",
                      fname);
    return k->prog->p;
}

struct lvyre_kernel *lvyre_kernel_new(lua_State *L, int be_idx, int prog_idx) {
    be_idx = lua_absindex(L, be_idx);
    prog_idx = lua_absindex(L, prog_idx);
    struct lvyre_kernel *k = lua_newuserdatauv(L, sizeof *k, 3);
    memset(k, 0, sizeof *k);
    k->be = lua_touserdata(L, be_idx);
    luaL_setmetatable(L, VYRE_LUA_KERNEL);
    lua_pushvalue(L, be_idx);
    lua_setiuservalue(L, -2, 1);
    lua_pushvalue(L, prog_idx);
    lua_setiuservalue(L, -2, 2);
    k->prog = lua_touserdata(L, prog_idx);
    k->lay = lvyre_layout_push(L, prog_idx);
    lua_setiuservalue(L, -2, 3);
    snprintf(k->name, sizeof k->name, "%s", vyre_program_name(k->prog->p));
    return k;
}

void lvyre_kernel_adopt(struct lvyre_kernel *k, vyre_backend_kernel *h) {
    k->h = h;
    k->be->nchildren++;                    /* closing the backend's core would free it */
    k->cu = vyre_backend_kernel_native(h); /* a device's own facts: PTX, occupancy */
    k->live = true;
}

struct lvyre_kernel *lvyre_compile(lua_State *L, int be_idx, int prog_idx, const char *fname) {
    struct lvyre_backend *be = lua_touserdata(L, be_idx);
    vyre_program *p = vyre_lua_checkprogram_named(L, prog_idx, fname);
    struct vyre_error err;
    if (vyre_program_check(p, &err) != VYRE_OK)
        vyre_lua_fail(L, "validate",
                      "%s: %s. Fix: correct the program (vyre.validate(p) lists every problem)",
                      fname, err.message);
    struct lvyre_kernel *k = lvyre_kernel_new(L, be_idx, prog_idx);
    if (!be->core)
        vyre_lua_fail(L, "freed", "%s: the backend was freed. Fix: open a new one", fname);
    vyre_backend_kernel *h = NULL;
    if (vyre_backend_compile(be->core, p, &h, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    lvyre_kernel_adopt(k, h);
    return k;
}

void lvyre_kernel_grid(lua_State *L, struct lvyre_kernel *k, const struct lvyre_bound *b,
                       uint32_t grid[3], const char *fname) {
    vyre_program *p = lvyre_kernel_program(L, k, fname);
    uint64_t counts[VYRE_MAX_BUFFERS];
    lvyre_bound_counts(k->lay, b, counts);
    struct vyre_error err;
    vyre_error_clear(&err);
    struct vyre_grid_options o = {counts, k->lay->nbuffers, b->n, b->has_grid ? b->grid : NULL};
    if (vyre_launch_grid(p, &o, grid, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
}

void lvyre_backend_args(const struct lvyre_kernel *k, const struct lvyre_bound *b,
                        struct lvyre_args *s, struct vyre_backend_args *a) {
    const struct lvyre_layout *lay = k->lay;
    for (uint32_t i = 0; i < lay->nbuffers; i++) s->bufs[i] = b->buf[i]->h;
    for (uint32_t w = 0; w < lay->nworklists; w++) s->wls[w] = b->wl[w]->h;
    *a = (struct vyre_backend_args){.buffers = s->bufs,
                                    .nbuffers = lay->nbuffers,
                                    .params = b->params,
                                    .nparams = lay->nparams,
                                    .n = b->sized ? 0 : b->n,
                                    .grid = b->has_grid && !b->sized ? b->grid : NULL,
                                    .worklists = s->wls,
                                    .nworklists = lay->nworklists,
                                    .sized = b->sized ? b->sized->h : NULL};
}

void lvyre_bound_check(lua_State *L, const struct lvyre_kernel *k, const struct lvyre_bound *b,
                       const char *fname) {
    for (uint32_t w = 0; w < k->lay->nworklists; w++) lvyre_worklist_check(L, b->wl[w], fname);
    if (b->sized) lvyre_worklist_check(L, b->sized, fname);
}

void lvyre_cuda_args(const struct lvyre_kernel *k, const struct lvyre_bound *b,
                     struct lvyre_cuda_scratch *s, struct vyre_cuda_args *a) {
    const struct lvyre_layout *lay = k->lay;
    for (uint32_t i = 0; i < lay->nbuffers; i++) s->bufs[i] = b->buf[i]->cu;
    memcpy(s->params, b->params, lay->nparams * sizeof *s->params);
    for (uint32_t w = 0; w < lay->nworklists; w++) /* after the scalars, as the kernel takes them */
        s->params[lay->nparams + w] = vyre_cuda_worklist_header(b->wl[w]->cu);
    *a = (struct vyre_cuda_args){.buffers = s->bufs,
                                 .nbuffers = lay->nbuffers,
                                 .params = s->params,
                                 .nparams = lay->nparams + lay->nworklists,
                                 .n = b->sized ? 0 : b->n,
                                 .grid = b->has_grid ? b->grid : NULL,
                                 .wn = b->sized ? vyre_cuda_worklist_header(b->sized->cu) : 0,
                                 .grid_sync = vyre_backend_grid_sync(k->be->core)};
}

/* One launch of k with matched arguments through the backend interface, timed into t
 * (synchronised) when t is not NULL; worklist overflows checked before and after. */
static void launch(lua_State *L, struct lvyre_kernel *k, const struct lvyre_bound *b,
                   struct vyre_timing *t, const char *fname) {
    struct lvyre_args s;
    struct vyre_backend_args a;
    lvyre_backend_args(k, b, &s, &a);
    bool wl = k->lay->nworklists || b->sized;
    if (wl) lvyre_bound_check(L, k, b, fname); /* an overflow not reported yet */
    struct vyre_error err;
    bool guarded = lvyre_refguard_enter(k->be, &err);
    enum vyre_status st =
        t ? vyre_backend_launch_timed(k->h, &a, t, &err) : vyre_backend_launch(k->h, &a, &err);
    lvyre_refguard_leave(guarded, st, &err);
    if (st != VYRE_OK) vyre_lua_raise(L, fname, &err);
    if (wl) lvyre_bound_check(L, k, b, fname); /* known right away on the reference */
}

void lvyre_kernel_run(lua_State *L, struct lvyre_kernel *k, const struct lvyre_bound *b,
                      const char *fname) {
    if (!b->empty) launch(L, k, b, NULL, fname); /* opts.n = 0: nothing to launch */
}

/* ---- Kernel methods ------------------------------------------------------ */

/* The kernel that is self, its args (2) and opts (3) matched into b. */
static struct lvyre_kernel *self_matched(lua_State *L, struct lvyre_bound *b, const char *fname) {
    struct lvyre_kernel *k = self_kernel(L, fname);
    lvyre_kernel_program(L, k, fname);
    lvyre_match(L, 2, 3, k->lay, k->be, LVYRE_MATCH_LAUNCH, b, fname);
    return k;
}

/* k:launch(args, opts) -> k (asynchronous on CUDA, done on return on the reference) */
static int kernel_launch(lua_State *L) {
    const char *fname = "vyre.Kernel:launch";
    struct lvyre_bound b;
    struct lvyre_kernel *k = self_matched(L, &b, fname);
    lvyre_kernel_run(L, k, &b, fname);
    lua_settop(L, 1);
    return 1;
}

/* k:launch_timed(args, opts) -> {wall_ns, device_ns, enqueue_ns, wait_ns}; synchronises.
 * On the reference the launch runs on the CPU, so device_ns is its wall time. */
static int kernel_launch_timed(lua_State *L) {
    const char *fname = "vyre.Kernel:launch_timed";
    struct lvyre_bound b;
    struct lvyre_kernel *k = self_matched(L, &b, fname);
    struct vyre_timing t = {0, 0, 0, 0};
    if (!b.empty) launch(L, k, &b, &t, fname); /* else nothing launched, nothing timed */
    lvyre_pushtiming(L, &t);
    return 1;
}

static void read_dim3(lua_State *L, int idx, uint32_t out[3], const char *fname, const char *what) {
    if (!lua_istable(L, idx))
        vyre_lua_fail(L, "type", "%s: %s must be a table {x, y, z} (got %s). Fix: e.g. {1, 1, 1}",
                      fname, what, luaL_typename(L, idx));
    for (int a = 0; a < 3; a++) {
        lua_rawgeti(L, idx, a + 1);
        lua_Integer v = lua_isnil(L, -1) && a > 0
                            ? 1
                            : vyre_lua_optint(L, -1, 0, fname, what, "e.g. {1, 1, 1}");
        if (v < 1 || v > (lua_Integer)UINT32_MAX)
            vyre_lua_fail(L, "arg", "%s: %s axis %d must be >= 1. Fix: e.g. {1, 1, 1}", fname, what,
                          a + 1);
        out[a] = (uint32_t)v;
        lua_pop(L, 1);
    }
}

/* k:launch_raw(grid, block, args): a kernel from be:load_ptx. args is a list of
 * Buffers (device pointer), integers (64-bit) or {"u32"|"f32"|..., value}. */
static int kernel_launch_raw(lua_State *L) {
    const char *fname = "vyre.Kernel:launch_raw";
    struct lvyre_kernel *k = lvyre_checkkernel(L, 1, fname);
    if (!k->cu) /* raw launches are a native device's (be:load_ptx) */
        return lvyre_cuda_only(L, fname, "raw launches need a kernel from be:load_ptx on CUDA");
    uint32_t grid[3], block[3];
    read_dim3(L, 2, grid, fname, "grid");
    read_dim3(L, 3, block, fname, "block");
    int n = lua_isnoneornil(L, 4) ? 0 : (int)luaL_len(L, 4);
    if (n > RAW_MAX_ARGS)
        return vyre_lua_fail(L, "limit", "%s: %d arguments, at most %d. Fix: pass fewer", fname, n,
                             RAW_MAX_ARGS);
    uint64_t vals[RAW_MAX_ARGS];
    void *argv[RAW_MAX_ARGS];
    for (int i = 0; i < n; i++) {
        lua_geti(L, 4, i + 1);
        struct lvyre_buffer *b = lvyre_testbuffer(L, -1);
        if (b) {
            if (!b->live || !b->cu) /* a native device's buffer */
                return vyre_lua_fail(L, "arg",
                                     "%s: argument %d is not a live CUDA buffer. Fix: pass a "
                                     "live buffer of this device",
                                     fname, i + 1);
            vals[i] = vyre_cuda_buffer_pointer(b->cu);
        } else if (lua_istable(L, -1)) {
            lua_rawgeti(L, -1, 1);
            enum vyre_type t = vyre_lua_checktype(L, -1, fname);
            lua_rawgeti(L, -2, 2);
            vals[i] = vyre_lua_tobits(L, -1, t, fname, "raw argument");
            lua_pop(L, 2);
        } else {
            vals[i] = (uint64_t)vyre_lua_optint(L, -1, 0, fname, "a raw argument",
                                                "pass an integer, a device pointer, or "
                                                "{type, value} such as {'f32', 1.5}");
        }
        argv[i] = &vals[i]; /* 32-bit values read their low 4 bytes (little-endian) */
        lua_pop(L, 1);
    }
    struct vyre_error err;
    if (vyre_cuda_launch_raw(k->cu, grid, block, 0, argv, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

/* k:info() -> {name, backend, hash, workgroup, nbuffers, nparams [, registers, ...]} */
static int kernel_info(lua_State *L) {
    const char *fname = "vyre.Kernel:info";
    struct lvyre_kernel *k = lvyre_checkkernel(L, 1, fname);
    lua_createtable(L, 0, 14);
    lua_pushstring(L, k->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, kind_name(k));
    lua_setfield(L, -2, "backend");
    if (k->prog) {
        vyre_program *p = lvyre_kernel_program(L, k, fname);
        char hex[17];
        vyre_program_hash_hex(p, hex);
        lua_pushstring(L, hex);
        lua_setfield(L, -2, "hash");
        push_int_field(L, "nbuffers", k->lay->nbuffers);
        push_int_field(L, "nparams", k->lay->nparams);
        lua_createtable(L, 3, 0);
        for (int i = 0; i < 3; i++) {
            lua_pushinteger(L, k->lay->workgroup[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "workgroup");
    }
    if (!k->cu) return 1; /* the rest is a native device's (registers, PTX versions) */
    struct vyre_cuda_kernel_info in;
    struct vyre_error err;
    if (vyre_cuda_kernel_info(k->cu, &in, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    push_int_field(L, "registers", in.registers);
    push_int_field(L, "shared_bytes", in.shared_bytes);
    push_int_field(L, "local_bytes", in.local_bytes);
    push_int_field(L, "const_bytes", in.const_bytes);
    push_int_field(L, "max_threads", in.max_threads);
    push_int_field(L, "ptx_version", in.ptx_version);
    push_int_field(L, "binary_version", in.binary_version);
    lua_pushboolean(L, in.vector);
    lua_setfield(L, -2, "vector");
    lua_pushboolean(L, vyre_cuda_kernel_debug(k->cu)); /* counts out-of-bounds accesses */
    lua_setfield(L, -2, "debug");
    return 1;
}

/* k:free(), __gc, __close: one idempotent release; drops the program reference. */
static int kernel_free(lua_State *L) {
    struct lvyre_kernel *k = luaL_testudata(L, 1, VYRE_LUA_KERNEL);
    if (!k) return vyre_lua_wrongself(L, 1, VYRE_LUA_KERNEL, "vyre.Kernel:free");
    if (!k->live) return 0;
    k->live = false;
    vyre_cuda_kernel *raw = k->h ? NULL : k->cu; /* a raw PTX module is the binding's */
    k->cu = NULL;
    if (k->h) {
        vyre_backend_kernel_free(k->h);
        k->h = NULL;
        lvyre_backend_unref(k->be);
    }
    vyre_cuda_kernel_free(raw); /* NULL: no-op */
    k->prog = NULL;
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 2);
    return 0;
}

static int kernel_tostring(lua_State *L) {
    struct lvyre_kernel *k = tokernel(L, 1);
    lua_pushfstring(L, "vyre.Kernel(%s, %s%s)", kind_name(k), k->name, k->live ? "" : ", freed");
    return 1;
}

static const luaL_Reg kernel_methods[] = {{"launch", kernel_launch},
                                          {"launch_timed", kernel_launch_timed},
                                          {"launch_raw", kernel_launch_raw},
                                          {"bind", lvyre_kernel_bind},
                                          {"info", kernel_info},
                                          {"rounds", lvyre_kernel_rounds},
                                          {"occupancy", lvyre_kernel_occupancy},
                                          {NULL, NULL}};

/* Methods, then fields program, name and ptx (CUDA). Methods come first and without
 * the self check: k:launch looks its method up here on every call, and a method checks
 * its self anyway (no field shares a method's name). */
static int kernel_index(lua_State *L) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    struct lvyre_kernel *k = tokernel(L, 1);
    const char *key = lua_tostring(L, 2);
    if (key && strcmp(key, "program") == 0) {
        lua_getiuservalue(L, 1, 2);
        return 1;
    }
    if (key && strcmp(key, "name") == 0) {
        lua_pushstring(L, k->name);
        return 1;
    }
    if (key && strcmp(key, "ptx") == 0) {
        if (k->cu) lua_pushstring(L, vyre_cuda_kernel_ptx(k->cu));
        else lua_pushnil(L);
        return 1;
    }
    lua_pushnil(L); /* neither a method nor a field */
    return 1;
}

static const luaL_Reg kernel_meta[] = {
    {"__gc", kernel_free}, {"__close", kernel_free}, {"__tostring", kernel_tostring}, {NULL, NULL}};

void vyre_lua_open_kernel(lua_State *L) {
    /* Each method's upvalue 1 is the metatable, for self_kernel. */
    vyre_lua_newclass_fields(L, VYRE_LUA_KERNEL, kernel_methods, kernel_meta, kernel_index,
                             kernel_free, true);
}
