/* lbackend.c — vyre.Backend: the CPU reference interpreter or one CUDA device, behind
 * one interface (info, stats, buffers, compile, load_ptx, run, run_timed, sequences,
 * graphs, synchronize, trim, lost, check, free). Module functions open a registered
 * backend by name (open_backend): core.reference_new() and core.cuda_open(i), plus the
 * CUDA queries core.cuda_available/count/cache/
 * driver_version and the clock core.now_ns. lua/vyre/cuda.lua and reference.lua only
 * call these. Environmental failures (no driver, no device) return nil, reason;
 * misuse and driver errors raise "vyre.Backend:...: message. Fix: ...". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

/* The out-of-memory handler runs a full collection so that dropped buffers give their
 * memory back before the allocation is retried. It runs on the main thread, which
 * lives as long as the Lua state, so a collected coroutine that once allocated can
 * never be the thread it uses. */
static void oom_gc(void *ud) { lua_gc((lua_State *)ud, LUA_GCCOLLECT, 0); }

static lua_State *main_thread(lua_State *L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    lua_State *m = lua_tothread(L, -1);
    lua_pop(L, 1);
    return m;
}

static struct lvyre_backend *tobackend(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_BACKEND);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static void set_int3(lua_State *L, const char *k, const int v[3]) {
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; i++) {
        lua_pushinteger(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, k);
}

/* Pushes a Backend and opens registered backend `name` on device `ordinal` for it,
 * with the binding's out-of-memory handler (o's other fields as given). The userdata
 * exists before the backend is opened, so an error leaves nothing unowned: on failure
 * it stays unopened (its __gc does nothing) and the status and err say why. The label
 * (tostring) is the name, with the ordinal where a call picks one device of several. */
static enum vyre_status open_backend(lua_State *L, const char *name, int ordinal,
                                     struct vyre_backend_options o, bool show_ordinal,
                                     struct vyre_error *err) {
    struct lvyre_backend *be = lua_newuserdatauv(L, sizeof *be, 0);
    memset(be, 0, sizeof *be);
    snprintf(be->label, sizeof be->label, "?"); /* until the backend opens */
    be->ordinal = ordinal;
    luaL_getmetatable(L, VYRE_LUA_BUFFER);
    be->buffer_mt = lua_topointer(L, -1); /* the registry keeps it for the state's life */
    lua_pop(L, 1);
    luaL_setmetatable(L, VYRE_LUA_BACKEND);
    o.on_oom = oom_gc;
    o.oom_ud = main_thread(L);
    enum vyre_status st = vyre_backend_open(name, ordinal, &o, &be->core, err);
    if (st != VYRE_OK) return st;
    be->name = vyre_backend_name(be->core);
    if (show_ordinal) snprintf(be->label, sizeof be->label, "%s %d", be->name, ordinal);
    else snprintf(be->label, sizeof be->label, "%s", be->name);
    be->dev = vyre_backend_native_device(be->core); /* owned by core; NULL without one */
    struct vyre_backend_info in;
    if ((st = vyre_backend_info(be->core, &in, err)) != VYRE_OK) return st;
    be->host_memory = in.host_memory;
    be->runs_on_caller = in.runs_on_caller;
    be->max_steps = o.max_steps;
    be->debug = o.debug;
    be->open = true;
    return VYRE_OK;
}

/* $VYRE_DEBUG=1 starts every backend in debug mode (vyre.reference.new's opts.debug
 * overrides it). */
static bool env_debug(void) {
    const char *env = getenv("VYRE_DEBUG");
    return env && strcmp(env, "1") == 0;
}

/* The properties only a CUDA device has (its native device object), over the common
 * ones in the table on top; name becomes the GPU's. */
static void add_cuda_info(lua_State *L, vyre_cuda_device *d, const char *fname) {
    struct vyre_cuda_info in;
    struct vyre_error err;
    if (vyre_cuda_device_info(d, &in, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    set_str(L, "name", in.name);
    set_str(L, "device", in.name);
    set_int(L, "ordinal", in.ordinal);
    set_int(L, "sm", in.sm);
    lua_pushfstring(L, "sm_%d", (int)in.target); /* the PTX target vyre compiles for */
    lua_setfield(L, -2, "target");
    set_str(L, "target_isa", in.target_isa);
    set_str(L, "target_reason", in.target_reason);
    set_int(L, "cc_major", in.cc_major);
    set_int(L, "cc_minor", in.cc_minor);
    set_int(L, "sms", in.sms);
    set_int(L, "memory_bytes", (lua_Integer)in.memory_bytes);
    set_int(L, "max_threads_per_block", in.max_threads_per_block);
    set_int3(L, "max_block", in.max_block);
    set_int3(L, "max_grid", in.max_grid);
    set_int(L, "shared_bytes_per_block", in.shared_bytes_per_block);
    set_int(L, "shared_bytes_per_block_optin", in.shared_bytes_per_block_optin);
    set_int(L, "warp_size", in.warp_size);
    lua_pushboolean(L, in.cooperative_launch);
    lua_setfield(L, -2, "cooperative_launch");
    /* The fake driver of tests/fakecuda (CI without a GPU) names its devices so: it
     * interprets kernels on the CPU, so its timings and results say nothing about a GPU. */
    lua_pushboolean(L, strncmp(in.name, "vyre fakecuda", 13) == 0);
    lua_setfield(L, -2, "fake");
    set_int(L, "l2_bytes", in.l2_bytes);
    set_int(L, "clock_khz", in.clock_khz);
    set_int(L, "memory_clock_khz", in.memory_clock_khz);
    set_int(L, "memory_bus_bits", in.memory_bus_bits);
    set_int(L, "driver_version", in.driver_version);
    set_int(L, "max_threads_per_sm", in.max_threads_per_sm);
    set_int(L, "max_blocks_per_sm", in.max_blocks_per_sm);
    set_int(L, "registers_per_block", in.registers_per_block);
    set_int(L, "registers_per_sm", in.registers_per_sm);
    set_int(L, "shared_bytes_per_sm", in.shared_bytes_per_sm);
    lua_pushboolean(L, in.concurrent_kernels);
    lua_setfield(L, -2, "concurrent_kernels");
}

/* be:info()'s common part, from the backend's vyre_backend_info. */
static void push_info(lua_State *L, struct lvyre_backend *be, const char *fname) {
    struct vyre_backend_info in;
    struct vyre_error err;
    if (vyre_backend_info(be->core, &in, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    lua_createtable(L, 0, 40);
    set_str(L, "backend", be->name);
    set_str(L, "name", be->name);
    set_str(L, "device", in.device);
    set_str(L, "version", VYRE_VERSION);
    set_int(L, "max_threads_per_block", in.max_threads_per_block);
    set_int(L, "shared_bytes_per_block", in.shared_bytes_per_block);
    set_int(L, "warp_size", in.warp_size);
    lua_pushboolean(L, vyre_backend_lost(be->core));
    lua_setfield(L, -2, "lost");
}

/* ---- shared helpers (lbackend.h) ----------------------------------------- */

struct lvyre_backend *lvyre_checkbackend(lua_State *L, int idx, const char *fname) {
    struct lvyre_backend *be = luaL_testudata(L, idx, VYRE_LUA_BACKEND);
    if (!be) vyre_lua_wrongself(L, idx, VYRE_LUA_BACKEND, fname);
    if (!be->open)
        vyre_lua_fail(L, "freed",
                      "%s: the backend was freed. Fix: open it again with vyre.backend() or "
                      "vyre.cuda.device(i)",
                      fname);
    return be;
}

vyre_cuda_device *lvyre_cuda_device(lua_State *L, struct lvyre_backend *be, const char *fname) {
    if (!be->dev)
        vyre_lua_fail(L, "unsupported",
                      "%s: the backend has no CUDA device. Fix: use a backend from "
                      "vyre.cuda.device(i)",
                      fname);
    return be->dev;
}

void lvyre_backend_unref(struct lvyre_backend *be) {
    if (--be->nchildren == 0 && !be->open) {
        vyre_backend_close(be->core);
        be->core = NULL;
    }
}

int lvyre_cuda_only(lua_State *L, const char *fname, const char *fix) {
    return vyre_lua_fail(L, "unsupported", "%s: only the CUDA backend has this. Fix: %s", fname,
                         fix);
}

void lvyre_pushtiming(lua_State *L, const struct vyre_timing *t) {
    lua_createtable(L, 0, 4);
    set_int(L, "wall_ns", (lua_Integer)t->wall_ns);
    set_int(L, "device_ns", (lua_Integer)t->device_ns);
    set_int(L, "enqueue_ns", (lua_Integer)t->enqueue_ns);
    set_int(L, "wait_ns", (lua_Integer)t->wait_ns);
}

uint64_t lvyre_now_ns(void) { return vyre_cuda_now_ns(); }

/* ---- module functions ---------------------------------------------------- */

/* Raises at the caller of vyre.reference.new (level 2), not at reference.lua. */
static int new_error(lua_State *L, const char *fmt, const char *what) {
    luaL_where(L, 2);
    vyre_lua_pusherror(L, "arg", lua_pushfstring(L, fmt, what), lua_tostring(L, -1));
    return lua_error(L);
}

/* core.reference_new() -> Backend (each has its own counters) */
static int reference_new(lua_State *L) {
    uint64_t max_steps = 0;
    bool debug = env_debug(); /* opts.debug overrides */
    if (!lua_isnoneornil(L, 1)) {
        if (!lua_istable(L, 1))
            return new_error(L,
                             "vyre.reference.new: options must be a table (got %s). Fix: "
                             "vyre.reference.new() or vyre.reference.new{max_steps = n}",
                             luaL_typename(L, 1));
        static const char *const keys[] = {"max_steps", "debug", NULL};
        vyre_lua_checkopts(L, 1, keys, "vyre.reference.new");
        if (lua_getfield(L, 1, "debug") != LUA_TNIL) {
            if (lua_type(L, -1) != LUA_TBOOLEAN)
                return new_error(L,
                                 "vyre.reference.new: debug must be a boolean (got %s). "
                                 "Fix: {debug = true}",
                                 luaL_typename(L, -1));
            debug = lua_toboolean(L, -1);
        }
        lua_pop(L, 1);
        if (lua_getfield(L, 1, "max_steps") != LUA_TNIL) {
            lua_Integer n = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
            if (n <= 0)
                return new_error(L,
                                 "vyre.reference.new: max_steps must be a positive integer (got "
                                 "%s). Fix: pass the number of loop iterations a run may take, "
                                 "e.g. {max_steps = 10^9 // 1}",
                                 luaL_tolstring(L, -1, NULL));
            max_steps = (uint64_t)n;
        }
        lua_pop(L, 1);
    }
    struct vyre_backend_options o = {.debug = debug, .max_steps = max_steps};
    struct vyre_error err;
    if (open_backend(L, "reference", 0, o, false, &err) != VYRE_OK)
        return vyre_lua_raise(L, "vyre.reference.new", &err);
    return 1;
}

/* core.cuda_available() -> true | false, reason */
static int cuda_available(lua_State *L) {
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
static int cuda_count(lua_State *L) {
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

/* Whether the registry says backend name can be opened here; false with its reason
 * (the runtime's own words, as vyre.cuda.available() gives them) in why. */
static bool registry_available(const char *name, char *why, size_t whysz) {
    struct vyre_backend_entry e[8];
    size_t n = 0;
    if (vyre_backend_list(e, 8, &n, NULL) != VYRE_OK) return true; /* open will say */
    for (size_t i = 0; i < n && i < 8; i++)
        if (strcmp(e[i].name, name) == 0 && !e[i].available) {
            snprintf(why, whysz, "%s", e[i].reason);
            return false;
        }
    return true;
}

/* core.cuda_open(i) -> Backend | nil, reason (0-based ordinal). The userdata exists
 * before the device is opened, so an error leaves nothing unowned. */
static int cuda_open(lua_State *L) {
    lua_Integer i = luaL_checkinteger(L, 1);
    if (i < 0 || i > 0xFFFF)
        return vyre_lua_fail(L, "arg",
                             "vyre.cuda.device: ordinal %I is out of range. Fix: "
                             "cuda.device(0)",
                             (LUAI_UACINT)i);
    char why[512];
    if (!registry_available("cuda", why, sizeof why)) {
        lua_pushnil(L);
        lua_pushstring(L, why);
        return 2;
    }
    struct vyre_backend_options o = {.debug = env_debug()};
    struct vyre_error err;
    enum vyre_status st = open_backend(L, "cuda", (int)i, o, true, &err);
    /* Environmental: no driver, a lost device, or one vyre cannot serve (below sm_70, a
     * driver too old for every target it could run: device.c, target.c). */
    if (st == VYRE_ERR_NO_CUDA || st == VYRE_ERR_DEVICE_LOST || st == VYRE_ERR_UNSUPPORTED) {
        lua_pushnil(L);
        lua_pushstring(L, err.message);
        return 2;
    }
    if (st != VYRE_OK) return vyre_lua_raise(L, "vyre.cuda.device", &err);
    return 1;
}

/* core.cuda_cache() -> {dir =, bytes =, files =, cap =, refused = why | nil} */
static int cuda_cache(lua_State *L) {
    char dir[1024];
    lua_createtable(L, 0, 4);
    if (vyre_cuda_cache_dir(dir, sizeof dir)) set_str(L, "dir", dir);
    uint64_t bytes = 0, files = 0;
    vyre_cuda_cache_usage(&bytes, &files);
    set_int(L, "bytes", (lua_Integer)bytes);
    set_int(L, "files", (lua_Integer)files);
    set_int(L, "cap", (lua_Integer)vyre_cuda_cache_cap());
    char why[1024];
    if (vyre_cuda_cache_refused(why, sizeof why)) set_str(L, "refused", why);
    return 1;
}

/* core.cuda_driver_version() -> integer (0 without a driver) */
static int cuda_driver_version(lua_State *L) {
    lua_pushinteger(L, vyre_cuda_driver_version());
    return 1;
}

/* core.cuda_nvtx([on]) -> enabled, built | false, reason. Without an argument it only
 * reads the switch; asking for true without NVTX built in answers false and why. */
static int cuda_nvtx(lua_State *L) {
    if (!lua_isnoneornil(L, 1)) {
        if (lua_type(L, 1) != LUA_TBOOLEAN)
            return vyre_lua_fail(L, "type",
                                 "vyre.cuda.nvtx: on must be a boolean (got %s). Fix: "
                                 "cuda.nvtx(true)",
                                 luaL_typename(L, 1));
        struct vyre_error err;
        if (vyre_cuda_set_nvtx(lua_toboolean(L, 1), &err) != VYRE_OK) {
            lua_pushboolean(L, 0);
            lua_pushstring(L, err.message);
            return 2;
        }
    }
    lua_pushboolean(L, vyre_cuda_nvtx_enabled());
    lua_pushboolean(L, vyre_cuda_nvtx_built());
    return 2;
}

/* core.now_ns() -> monotonic clock in nanoseconds (benchmarks) */
static int now_ns(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)lvyre_now_ns());
    return 1;
}

/* core.testing.defer_error(be, msg): records msg as if a finalizer had failed. For the
 * project's own specs of the deferred-error path; not part of the backend's methods. */
static int testing_defer_error(lua_State *L) {
    const char *fname = "vyre.core.testing.defer_error";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    struct vyre_error e;
    vyre_error_set(&e, VYRE_ERR_CUDA, "%s", luaL_checkstring(L, 2));
    vyre_cuda_defer_error(lvyre_cuda_device(L, be, fname), &e);
    return 0;
}

/* ---- Backend methods ----------------------------------------------------- */

/* One device-property vocabulary (docs/API.md "Vocabulary"): be:info() names a property as the
 * device profiles and the planners do (vyre.profiles.FIELDS); reading a name the table
 * used to have raises naming the new one, so old code fails loudly instead of reading
 * nil. */
static const char *const INFO_RENAMED[][2] = {
    {"multiprocessors", "sms"},
    {"total_memory", "memory_bytes"},
    {"shared_bytes", "shared_bytes_per_block"},
    {"shared_bytes_optin", "shared_bytes_per_block_optin"},
    {"max_workgroup", "max_threads_per_block"},
};

static int info_index(lua_State *L) {
    const char *k = lua_tostring(L, 2);
    for (size_t i = 0; k && i < sizeof INFO_RENAMED / sizeof INFO_RENAMED[0]; i++)
        if (strcmp(k, INFO_RENAMED[i][0]) == 0)
            return vyre_lua_fail(L, "arg",
                                 "vyre.Backend:info: the field %s is now %s (one vocabulary with "
                                 "be:profile() and vyre.profiles). Fix: read info.%s",
                                 k, INFO_RENAMED[i][1], INFO_RENAMED[i][1]);
    return 0;
}

static int backend_info(lua_State *L) {
    const char *fname = "vyre.Backend:info";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    push_info(L, be, fname);
    if (be->dev) { /* a device's own vocabulary, as vyre.profiles names it */
        add_cuda_info(L, be->dev, fname);
        lvyre_push_peers(L, be->dev, be->ordinal); /* how copies to each other device go */
        lua_setfield(L, -2, "peers");
    }
    /* Kept under a private registry key, not a "vyre.*" type name: it is no object type. */
    static const char INFO_META = 0;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &INFO_META) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 1);
        lua_pushcfunction(L, info_index);
        lua_setfield(L, -2, "__index");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &INFO_META);
    }
    lua_setmetatable(L, -2);
    return 1;
}

/* be:stats(): the backend's counters (vyre_backend_stats), plus those the binding keeps
 * for what it runs itself, added by name (lbackend.h), plus the plan counters. */
static int backend_stats(lua_State *L) {
    const char *fname = "vyre.Backend:stats";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    struct vyre_backend_stat s[VYRE_BACKEND_MAX_STATS];
    size_t n = 0;
    struct vyre_error err;
    if (vyre_backend_stats(be->core, s, VYRE_BACKEND_MAX_STATS, &n, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_createtable(L, 0, (int)n + 8);
    for (size_t i = 0; i < n; i++) set_int(L, s[i].name, (lua_Integer)s[i].value);
        /* runs (be:run) is the binding's on every backend; the others add to the backend's */
#define ADD_STAT(nm)                                                                    \
    {                                                                                   \
        bool has = lua_getfield(L, -1, #nm) == LUA_TNUMBER || strcmp(#nm, "runs") == 0; \
        lua_Integer v = lua_tointeger(L, -1) + (lua_Integer)be->st.nm;                  \
        lua_pop(L, 1);                                                                  \
        if (has) set_int(L, #nm, v);                                                    \
    }
    LVYRE_REF_STATS(ADD_STAT)
#undef ADD_STAT
    lvyre_mega_stats(L, be);
    return 1;
}

/* be:buffer(type, n | vyre.Array | table) -> Buffer (a count gives a zeroed buffer) */
static int backend_buffer(lua_State *L) {
    const char *fname = "vyre.Backend:buffer";
    lvyre_checkbackend(L, 1, fname);
    enum vyre_type t = vyre_lua_checktype(L, 2, fname);
    lua_settop(L, 3);
    const void *init = NULL;
    uint64_t n;
    if (lua_type(L, 3) == LUA_TNUMBER) {
        if (!lua_isinteger(L, 3))
            return vyre_lua_fail(L, "arg",
                                 "%s: element count %s is not an integer. Fix: pass a whole "
                                 "count such as 1024",
                                 fname, lua_tostring(L, 3));
        lua_Integer v = lua_tointeger(L, 3);
        if (v < 0)
            return vyre_lua_fail(L, "arg", "%s: element count %I is negative. Fix: pass n >= 0",
                                 fname, (LUAI_UACINT)v);
        n = (uint64_t)v;
    } else {
        struct vyre_lua_array *a = vyre_lua_toarray(L, 3);
        if (a && a->type != t)
            return vyre_lua_fail(L, "arg",
                                 "%s: the array holds %s but the buffer type is %s. Fix: pass "
                                 "vyre.array('%s', ...)",
                                 fname, vyre_type_name(a->type), vyre_type_name(t),
                                 vyre_type_name(t));
        if (!a && lua_type(L, 3) == LUA_TTABLE && !lua_getmetatable(L, 3))
            a = vyre_lua_array_fromtable(L, 3, t, fname, NULL); /* stays on the stack */
        if (!a)
            return vyre_lua_fail(L, "type",
                                 "%s: expected an element count, a vyre.Array or a table as "
                                 "argument #2 (got %s). Fix: be:buffer('%s', 1024)",
                                 fname, luaL_typename(L, 3), vyre_type_name(t));
        n = a->count;
        init = a->data;
    }
    lvyre_newbuffer(L, 1, t, n, init, fname);
    return 1;
}

/* be:compile(p) -> Kernel (validated now, so a launch never fails on the program) */
static int backend_compile(lua_State *L) {
    const char *fname = "vyre.Backend:compile";
    lvyre_checkbackend(L, 1, fname);
    vyre_lua_checkprogram_named(L, 2, fname);
    lvyre_compile(L, 1, 2, fname);
    return 1;
}

static int backend_synchronize(lua_State *L) {
    const char *fname = "vyre.Backend:synchronize";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    struct vyre_error err;
    if (vyre_backend_synchronize(be->core, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);

    lua_pushboolean(L, 1);
    return 1;
}

/* be:trim(): gives cached memory back (CUDA pools and unused modules; the reference
 * holds no cache, so it has nothing to give). */
static int backend_trim(lua_State *L) {
    const char *fname = "vyre.Backend:trim";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    struct vyre_error err;
    lvyre_mega_trim(L, 1); /* compiled megakernels (lmega.c) */
    if (vyre_backend_trim(be->core, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* be:lost() -> true once a sticky fault poisoned the device (never on the reference). */
static int backend_lost(lua_State *L) {
    struct lvyre_backend *be = tobackend(L, 1);
    lua_pushboolean(L, vyre_backend_lost(be->core)); /* false once freed (core NULL) */
    return 1;
}

/* be:load_ptx(ptx_text, entry) -> a raw Kernel (k:launch_raw); CUDA only. */
static int backend_load_ptx(lua_State *L) {
    const char *fname = "vyre.Backend:load_ptx";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    if (!be->dev) /* PTX is a CUDA device's own (vyre_backend_native_device) */
        return lvyre_cuda_only(L, fname, "load PTX on a backend from vyre.cuda.device(i)");
    if (lua_type(L, 2) != LUA_TSTRING)
        vyre_lua_typeerror(L, 2, fname, "PTX text string", "be:load_ptx(ptx_text, 'entry_name')");
    if (lua_type(L, 3) != LUA_TSTRING)
        vyre_lua_typeerror(L, 3, fname, "entry name string", "be:load_ptx(ptx_text, 'entry_name')");
    lua_settop(L, 3);
    struct lvyre_kernel *k = lua_newuserdatauv(L, sizeof *k, 3);
    memset(k, 0, sizeof *k);
    k->be = be;
    luaL_setmetatable(L, VYRE_LUA_KERNEL);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    snprintf(k->name, sizeof k->name, "%s", lua_tostring(L, 3));
    struct vyre_error err;
    if (vyre_cuda_load_ptx(be->dev, lua_tostring(L, 2), lua_tostring(L, 3), &k->cu, &err) !=
        VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    k->live = true;
    return 1;
}

/* be:free(), __gc, __close: drops this object's device reference; buffers and kernels
 * made from it keep the device alive until they are released too. Idempotent. */
static int backend_free(lua_State *L) {
    struct lvyre_backend *be = tobackend(L, 1);
    if (be->dev) vyre_cuda_set_oom_handler(be->dev, NULL, NULL);
    be->dev = NULL;                   /* core owns it */
    if (be->nchildren == 0) {         /* else the last buffer's or kernel's release closes it */
        vyre_backend_close(be->core); /* kernels keep their own device references */
        be->core = NULL;
    }
    lvyre_mega_release(be);
    be->open = false;
    return 0;
}

static int backend_tostring(lua_State *L) {
    struct lvyre_backend *be = tobackend(L, 1);
    if (!be->dev) { /* no device of its own (the reference), or freed */
        lua_pushfstring(L, "vyre.Backend(%s%s)", be->label, be->open ? "" : ", freed");
        return 1;
    }
    struct vyre_cuda_info in;
    vyre_cuda_device_info(be->dev, &in, NULL);
    char target[32] = "";
    if (in.target != in.sm) snprintf(target, sizeof target, " as sm_%u", in.target);
    lua_pushfstring(L, "vyre.Backend(cuda %d: %s, sm_%d%s%s)", in.ordinal, in.name, (int)in.sm,
                    target, vyre_cuda_device_lost(be->dev) ? ", lost" : "");
    return 1;
}

static const luaL_Reg backend_methods[] = {{"info", backend_info},
                                           {"stats", backend_stats},
                                           {"buffer", backend_buffer},
                                           {"compile", backend_compile},
                                           {"compile_all", lvyre_backend_compile_all},
                                           {"load_ptx", backend_load_ptx},
                                           {"run", lvyre_backend_run},
                                           {"run_timed", lvyre_backend_run_timed},
                                           {"sequence", lvyre_backend_sequence},
                                           {"graph", lvyre_backend_graph},
                                           {"synchronize", backend_synchronize},
                                           {"trim", backend_trim},
                                           {"lost", backend_lost},
                                           {"grid_sync", lvyre_backend_grid_sync},
                                           {"megakernel", lvyre_backend_megakernel},
                                           {"plan", lvyre_backend_plan},
                                           {"debug", lvyre_backend_debug},
                                           {"oob_report", lvyre_backend_oob_report},
                                           {"worklist", lvyre_backend_worklist},
                                           {NULL, NULL}};

/* Fields name ("cuda" | "reference"), ordinal and freed, then methods. */
static int backend_index(lua_State *L) {
    struct lvyre_backend *be = tobackend(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "name") == 0) {
        lua_pushstring(L, be->name ? be->name : "");
        return 1;
    }
    if (k && strcmp(k, "ordinal") == 0) {
        lua_pushinteger(L, be->ordinal);
        return 1;
    }
    if (k && strcmp(k, "freed") == 0) {
        lua_pushboolean(L, !be->open);
        return 1;
    }
    return vyre_lua_method(L);
}

static const luaL_Reg backend_meta[] = {{"__gc", backend_free},
                                        {"__close", backend_free},
                                        {"__tostring", backend_tostring},
                                        {NULL, NULL}};

static const luaL_Reg backend_funcs[] = {{"reference_new", reference_new},
                                         {"cuda_available", cuda_available},
                                         {"cuda_count", cuda_count},
                                         {"cuda_open", cuda_open},
                                         {"cuda_cache", cuda_cache},
                                         {"cuda_driver_version", cuda_driver_version},
                                         {"cuda_nvtx", cuda_nvtx},
                                         {"now_ns", now_ns},
                                         {NULL, NULL}};

void vyre_lua_open_backend(lua_State *L) {
    vyre_lua_newclass_fields(L, VYRE_LUA_BACKEND, backend_methods, backend_meta, backend_index,
                             backend_free, false);
    static const struct vyre_lua_renamed renamed[] = {
        {"check",
         "be:synchronize() (it waits, then raises the lost-device cause or an error "
         "recorded while freeing)",
         "call be:synchronize()"},
        {NULL, NULL, NULL}};
    vyre_lua_add_renamed(L, VYRE_LUA_BACKEND, renamed);
    luaL_setfuncs(L, backend_funcs, 0);
    lvyre_mega_open(L);
    lvyre_plan_open(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, testing_defer_error);
    lua_setfield(L, -2, "defer_error");
    lua_setfield(L, -2, "testing");
    vyre_lua_open_buffer(L);
    vyre_lua_open_kernel(L);
    vyre_lua_open_launch(L);
    vyre_lua_open_graph(L);
    vyre_lua_open_group(L);
    vyre_lua_open_worklist(L);
}
