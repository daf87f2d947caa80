/* lplan.c — vyre.core.occupancy_calc, .occupancy_grid and .capability_check: libvyre's
 * planners (include/vyre_plan.h), the ones the CUDA runtime obeys, for
 * vyre.planners.occupancy and vyre.planners.capability. The Lua side checks its
 * arguments (a checked profile, integers); this file only converts. */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"
#include "vyre_plan.h"

static uint64_t field_u64(lua_State *L, int t, const char *k) {
    lua_getfield(L, t, k);
    lua_Integer v = lua_isinteger(L, -1)  ? lua_tointeger(L, -1)
                    : lua_isnumber(L, -1) ? (lua_Integer)lua_tonumber(L, -1)
                                          : 0;
    lua_pop(L, 1);
    return v > 0 ? (uint64_t)v : 0;
}

static uint32_t field_u32(lua_State *L, int t, const char *k) {
    uint64_t v = field_u64(L, t, k);
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static bool field_bool(lua_State *L, int t, const char *k) {
    lua_getfield(L, t, k);
    bool b = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return b;
}

/* A profile table (lua/vyre/profiles.lua) as limits; the name stays valid while the
 * profile is on the stack. */
static void limits_of(lua_State *L, int t, struct vyre_device_limits *d) {
    luaL_checktype(L, t, LUA_TTABLE);
    memset(d, 0, sizeof *d);
    lua_getfield(L, t, "name");
    d->name = lua_tostring(L, -1);
    lua_pop(L, 1); /* the string lives in the profile table */
    d->sm = (unsigned)(field_u32(L, t, "cc_major") * 10u + field_u32(L, t, "cc_minor"));
    d->sms = field_u32(L, t, "sms");
    d->warp_size = field_u32(L, t, "warp_size");
    d->max_threads_per_block = field_u32(L, t, "max_threads_per_block");
    d->max_threads_per_sm = field_u32(L, t, "max_threads_per_sm");
    d->max_blocks_per_sm = field_u32(L, t, "max_blocks_per_sm");
    d->registers_per_sm = field_u32(L, t, "registers_per_sm");
    d->registers_per_block = field_u32(L, t, "registers_per_block");
    d->max_registers_per_thread = field_u32(L, t, "max_registers_per_thread");
    d->shared_bytes_per_sm = field_u64(L, t, "shared_bytes_per_sm");
    d->shared_bytes_per_block = field_u64(L, t, "shared_bytes_per_block_optin");
    if (!d->shared_bytes_per_block)
        d->shared_bytes_per_block = field_u64(L, t, "shared_bytes_per_block");
    d->max_grid_x = field_u64(L, t, "max_grid_x");
    d->cooperative_launch = field_bool(L, t, "cooperative_launch");
    d->tensor_cores = field_bool(L, t, "tensor_cores");
}

static uint64_t arg_u64(lua_State *L, int i) {
    lua_Integer v = luaL_optinteger(L, i, 0);
    return v > 0 ? (uint64_t)v : 0;
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
    if (!v) return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

/* core.occupancy_calc(profile, workgroup, registers, shared_bytes) -> {workgroup,
 * blocks_per_sm, warps_per_sm, occupancy_bps, limiter, zero, reason} */
static int core_occupancy_calc(lua_State *L) {
    struct vyre_device_limits d;
    limits_of(L, 1, &d);
    uint64_t wg = arg_u64(L, 2), regs = arg_u64(L, 3), shared = arg_u64(L, 4);
    struct vyre_occupancy o;
    struct vyre_error err;
    if (vyre_occupancy_calc(&d, wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg,
                            regs > UINT32_MAX ? UINT32_MAX : (uint32_t)regs, shared, &o,
                            &err) != VYRE_OK)
        return vyre_lua_raise(L, "vyre.core.occupancy_calc", &err);
    lua_createtable(L, 0, 8);
    set_int(L, "workgroup", (lua_Integer)wg);
    set_int(L, "blocks_per_sm", o.blocks_per_sm);
    set_int(L, "warps_per_sm", o.warps_per_sm);
    set_int(L, "occupancy_bps", o.occupancy_bps);
    set_str(L, "limiter", vyre_occ_limiter_name(o.limiter));
    set_str(L, "zero", vyre_occ_zero_name(o.zero));
    set_str(L, "reason", o.reason);
    return 1;
}

/* core.occupancy_grid(profile, "cooperative" | "bounded", blocks_per_sm, virtual) -> blocks */
static int core_occupancy_grid(lua_State *L) {
    struct vyre_device_limits d;
    limits_of(L, 1, &d);
    static const char *const hows[] = {"cooperative", "bounded", NULL};
    int how = luaL_checkoption(L, 2, NULL, hows);
    uint64_t per_sm = arg_u64(L, 3);
    lua_pushinteger(L, vyre_occupancy_grid(&d, how ? VYRE_SIZE_BOUNDED : VYRE_SIZE_COOPERATIVE,
                                           per_sm > UINT32_MAX ? UINT32_MAX : (uint32_t)per_sm,
                                           arg_u64(L, 4)));
    return 1;
}

/* core.capability_check(profile, {kernel, min_sm (10 x major + minor), threads_per_block,
 * kernel_max_threads, shared_bytes, cooperative, blocks_per_sm, tensor_cores}) ->
 * {ok, failures = {{code, asked, have, reason, fix}, ...}, line, message} */
static int core_capability_check(lua_State *L) {
    struct vyre_device_limits d;
    limits_of(L, 1, &d);
    luaL_checktype(L, 2, LUA_TTABLE);
    struct vyre_cap_request r;
    memset(&r, 0, sizeof r);
    lua_getfield(L, 2, "kernel");
    r.kernel = lua_tostring(L, -1); /* kept on the stack until the end */
    r.min_sm = field_u32(L, 2, "min_sm");
    r.threads_per_block = field_u64(L, 2, "threads_per_block");
    r.kernel_max_threads = field_u32(L, 2, "kernel_max_threads");
    r.shared_bytes = field_u64(L, 2, "shared_bytes");
    r.cooperative = field_bool(L, 2, "cooperative");
    r.tensor_cores = field_bool(L, 2, "tensor_cores");
    lua_getfield(L, 2, "blocks_per_sm");
    r.blocks_per_sm = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
    lua_pop(L, 1);
    struct vyre_cap_verdict *v = vyre_lua_scratch(L, sizeof *v);
    struct vyre_error err;
    if (vyre_capability_check(&d, &r, v, &err) != VYRE_OK)
        return vyre_lua_raise(L, "vyre.core.capability_check", &err);
    lua_createtable(L, 0, 4);
    lua_pushboolean(L, v->ok);
    lua_setfield(L, -2, "ok");
    lua_createtable(L, (int)v->nfailures, 0);
    for (uint32_t i = 0; i < v->nfailures; i++) {
        char why[256], fix[256];
        vyre_cap_failure_text(&d, &v->failures[i], why, sizeof why, fix, sizeof fix);
        lua_createtable(L, 0, 5);
        set_str(L, "code", vyre_cap_code_name(v->failures[i].code));
        set_int(L, "asked", (lua_Integer)v->failures[i].asked);
        set_int(L, "have", (lua_Integer)v->failures[i].have);
        set_str(L, "reason", why);
        set_str(L, "fix", fix);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "failures");
    set_str(L, "line", v->line);
    set_str(L, "message", v->message);
    return 1;
}

/* The core functions of this file, into the table on top (the vyre.core module). */
void lvyre_plan_open(lua_State *L) {
    lua_pushcfunction(L, core_occupancy_calc);
    lua_setfield(L, -2, "occupancy_calc");
    lua_pushcfunction(L, core_occupancy_grid);
    lua_setfield(L, -2, "occupancy_grid");
    lua_pushcfunction(L, core_capability_check);
    lua_setfield(L, -2, "capability_check");
}
