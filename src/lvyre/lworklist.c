/* lworklist.c — vyre.Worklist (ARCHITECTURE.md §2, §7): `be:worklist(type, capacity)`,
 * the host side of a device worklist. Kernels read its current items with (len W) and
 * (load W i) and append the next round's with (push W v); wl:advance() makes those
 * current. Passed in args by the declaration's name, and as a launch size: {n = wl}.
 *
 * It owns a worklist of the backend interface (vyre_backend_worklist_*, vyre_backend.h):
 * the state is the backend's (on CUDA a device header and two item arrays, advance a
 * launch on the stream, size/items/push waiting for queued work; on the reference host
 * arrays the interpreter pushes into), so nothing here depends on which backend it is.
 * An overflow — pushes past the capacity, counted but not stored — is reported on the
 * next host read, and right after the launch where the backend knows it without waiting
 * (vyre_backend_worklist_overflow: the reference), naming the capacity needed; it stays
 * reported until wl:clear(). User value 1 keeps the backend alive, and the worklist is
 * one of the backend's children (lvyre_backend_unref), so be:free() keeps the core
 * backend until it is released. */
#include <stdlib.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

static struct lvyre_worklist *towl(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_WORKLIST);
}

struct lvyre_worklist *lvyre_testworklist(lua_State *L, int idx) {
    return luaL_testudata(L, idx, VYRE_LUA_WORKLIST);
}

/* The live worklist self at idx (raises when freed or its backend is). */
static struct lvyre_worklist *check_live(lua_State *L, int idx, const char *fname) {
    struct lvyre_worklist *w = towl(L, idx);
    if (!w->live)
        vyre_lua_fail(L, "freed",
                      "%s: the worklist was freed. Fix: create a new one with be:worklist(type, "
                      "capacity)",
                      fname);
    if (!w->be->open)
        vyre_lua_fail(L, "freed",
                      "%s: the worklist's backend was freed. Fix: keep the backend open while "
                      "its worklists are used",
                      fname);
    return w;
}

static void release(struct lvyre_worklist *w) {
    if (!w->live) return;
    w->live = false;
    vyre_backend_worklist_free(w->h);
    vyre_lua_host_unreserve(w->host_bytes);
    w->host_bytes = 0;
    w->h = NULL;
    w->cu = NULL;
    lvyre_backend_unref(w->be);
}

int lvyre_worklist_overflow_error(lua_State *L, const char *fname, uint32_t capacity,
                                  uint32_t needed) {
    return vyre_lua_fail(L, "limit",
                         "%s: worklist overflow: a round pushed %I items into a worklist of "
                         "capacity %I; the items past the capacity were not stored. Fix: create "
                         "the worklist with a capacity of at least %I (be:worklist(type, %I)), or "
                         "wl:clear() and run the round again",
                         fname, (LUAI_UACINT)needed, (LUAI_UACINT)capacity, (LUAI_UACINT)needed,
                         (LUAI_UACINT)needed);
}

/* The counts (a device: waits and reads the header); raises on an overflow. */
static struct vyre_backend_worklist_state state(lua_State *L, struct lvyre_worklist *w,
                                                const char *fname) {
    struct vyre_backend_worklist_state s;
    struct vyre_error err;
    if (vyre_backend_worklist_state(w->h, &s, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    if (s.overflow_needed) lvyre_worklist_overflow_error(L, fname, w->capacity, s.overflow_needed);
    return s;
}

/* An overflow the backend knows without waiting (none on a device until a read). */
void lvyre_worklist_check(lua_State *L, struct lvyre_worklist *w, const char *fname) {
    uint32_t needed = vyre_backend_worklist_overflow(w->h);
    if (needed) lvyre_worklist_overflow_error(L, fname, w->capacity, needed);
}

/* ---- sizing: the device work-queue planner (src/core/ir/workqueue.c) ------------------ */

/* Without a capacity a worklist holds the items the rounds may push (expansion_items,
 * default WL_HEADROOM) within a budget of memory (a quarter of the device's, or
 * WL_REF_BUDGET where the backend does not know it: the host); a drain window is the
 * items one pass of the resident grid covers (none without multiprocessors). */
#define WL_HEADROOM ((uint64_t)1 << 20)
#define WL_REF_BUDGET ((uint64_t)1 << 30)
#define WL_HEADER 32u

static uint64_t opt_u64(lua_State *L, int t, const char *k, uint64_t def, const char *fname) {
    lua_getfield(L, t, k);
    uint64_t v = def;
    if (!lua_isnil(L, -1)) {
        int ok = 0;
        lua_Integer i = lua_tointegerx(L, -1, &ok);
        if (!ok || i < 0)
            vyre_lua_fail(L, "arg", "%s: %s must be an integer >= 0 (got %s). Fix: {%s = 1024}",
                          fname, k, luaL_tolstring(L, -1, NULL), k);
        v = (uint64_t)i;
    }
    lua_pop(L, 1);
    return v;
}

/* The profile of a worklist of type t on be: argument idx is nil (sized by the planner),
 * a capacity, or {capacity, initial_items, expansion_items, budget_bytes, drain_items}. */
static void wl_profile(lua_State *L, int idx, struct lvyre_backend *be, enum vyre_type t,
                       struct vyre_workqueue_profile *pr, const char *fname) {
    memset(pr, 0, sizeof *pr);
    pr->entry_bytes = 2u * vyre_type_size(t); /* the current and the next items */
    pr->control_bytes = WL_HEADER;
    pr->expansion_items = WL_HEADROOM;
    pr->budget_bytes = WL_REF_BUDGET;
    struct vyre_backend_info in;
    struct vyre_error err;
    if (vyre_backend_info(be->core, &in, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    if (in.memory_bytes) pr->budget_bytes = in.memory_bytes / 4u;
    pr->drain_items = (uint64_t)in.sms * (uint64_t)in.max_threads_per_sm;
    if (lua_isnoneornil(L, idx)) return;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        lua_Integer cap = vyre_lua_optint(L, idx, -1, fname, "capacity",
                                          "give the most items one round may push, e.g. "
                                          "be:worklist('u32', 1 << 20)");
        if (cap < 1 || cap > (lua_Integer)UINT32_MAX)
            vyre_lua_fail(L, "arg",
                          "%s: capacity must be an integer from 1 to %I (got %s). Fix: give the "
                          "most items one round may push, e.g. be:worklist('%s', 1 << 20), or "
                          "leave it out to size from the work-queue planner",
                          fname, (LUAI_UACINT)UINT32_MAX, luaL_tolstring(L, idx, NULL),
                          vyre_type_name(t));
        pr->capacity = (uint64_t)cap;
        pr->budget_bytes = UINT64_MAX; /* the caller's own size: the allocation decides */
        return;
    }
    if (lua_type(L, idx) != LUA_TTABLE)
        vyre_lua_fail(L, "arg",
                      "%s: argument 3 must be a capacity or {initial_items, expansion_items, "
                      "budget_bytes, drain_items} (got %s). Fix: be:worklist('%s', 1 << 20)",
                      fname, luaL_typename(L, idx), vyre_type_name(t));
    pr->capacity = opt_u64(L, idx, "capacity", 0, fname);
    pr->initial_items = opt_u64(L, idx, "initial_items", 0, fname);
    pr->expansion_items = opt_u64(L, idx, "expansion_items", pr->expansion_items, fname);
    pr->budget_bytes = opt_u64(L, idx, "budget_bytes", pr->budget_bytes, fname);
    pr->drain_items = opt_u64(L, idx, "drain_items", pr->drain_items, fname);
}

void lvyre_push_workqueue_plan(lua_State *L, const struct vyre_workqueue_plan *p) {
    lua_createtable(L, 0, 9);
    static const char *const k[] = {"capacity",       "queue_bytes",     "control_bytes",
                                    "resident_bytes", "items_per_chunk", "chunks"};
    const uint64_t v[] = {p->capacity,       p->queue_bytes,     p->control_bytes,
                          p->resident_bytes, p->items_per_chunk, p->chunks};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        lua_pushinteger(L, (lua_Integer)v[i]);
        lua_setfield(L, -2, k[i]);
    }
    lua_pushinteger(L, p->initial_occupancy_bps);
    lua_setfield(L, -2, "initial_occupancy_bps");
    lua_pushstring(L, p->chunked ? "chunked_resident_drain" : "single_resident_drain");
    lua_setfield(L, -2, "strategy");
    lua_pushboolean(L, p->final_only_host_sync);
    lua_setfield(L, -2, "final_only_host_sync");
}

/* core.workqueue_plan(profile) -> plan: the planner on its own (vyre.planners.workqueue);
 * profile = {initial_items, capacity, expansion_items, entry_bytes, control_bytes,
 * budget_bytes, drain_items, host_sync = "final_only" | "host_participates"}. */
static int core_workqueue_plan(lua_State *L) {
    const char *fname = "vyre.planners.workqueue.plan";
    luaL_checktype(L, 1, LUA_TTABLE);
    struct vyre_workqueue_profile pr;
    memset(&pr, 0, sizeof pr);
    pr.initial_items = opt_u64(L, 1, "initial_items", 0, fname);
    pr.capacity = opt_u64(L, 1, "capacity", 0, fname);
    pr.expansion_items = opt_u64(L, 1, "expansion_items", 0, fname);
    pr.entry_bytes = opt_u64(L, 1, "entry_bytes", 0, fname);
    pr.control_bytes = opt_u64(L, 1, "control_bytes", 0, fname);
    pr.budget_bytes = opt_u64(L, 1, "budget_bytes", UINT64_MAX, fname);
    pr.drain_items = opt_u64(L, 1, "drain_items", 0, fname);
    lua_getfield(L, 1, "host_sync");
    const char *hs = lua_tostring(L, -1);
    if (hs && strcmp(hs, "host_participates") == 0) pr.host_participates = true;
    else if (hs && strcmp(hs, "final_only") != 0)
        return vyre_lua_fail(L, "arg",
                             "%s: host_sync must be \"final_only\" or \"host_participates\" (got "
                             "%s). Fix: {host_sync = \"final_only\"}",
                             fname, hs);
    struct vyre_workqueue_plan p;
    struct vyre_error err;
    if (vyre_workqueue_plan(&pr, &p, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lvyre_push_workqueue_plan(L, &p);
    return 1;
}

/* be:worklist(type [, capacity | {initial_items, expansion_items, budget_bytes,
 * drain_items, capacity}]) -> vyre.Worklist, empty; sized by the work-queue planner */
int lvyre_backend_worklist(lua_State *L) {
    const char *fname = "vyre.Backend:worklist";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    enum vyre_type t = vyre_lua_checktype(L, 2, fname);
    if (t == VYRE_BOOL)
        return vyre_lua_fail(L, "type",
                             "%s: worklist items cannot be bool. Fix: use u32 (0/1) items", fname);
    struct vyre_workqueue_profile pr;
    wl_profile(L, 3, be, t, &pr, fname);
    struct vyre_workqueue_plan plan;
    struct vyre_error perr;
    if (vyre_workqueue_plan(&pr, &plan, &perr) != VYRE_OK) return vyre_lua_raise(L, fname, &perr);
    if (plan.capacity > UINT32_MAX) { /* the header counts in u32 */
        pr.capacity = UINT32_MAX;
        if (vyre_workqueue_plan(&pr, &plan, &perr) != VYRE_OK)
            return vyre_lua_raise(L, fname, &perr);
    }
    lua_Integer cap = (lua_Integer)plan.capacity;
    struct lvyre_worklist *w = lua_newuserdatauv(L, sizeof *w, 1);
    memset(w, 0, sizeof *w);
    w->be = be;
    w->type = t;
    w->capacity = (uint32_t)cap;
    w->plan = plan;
    luaL_setmetatable(L, VYRE_LUA_WORKLIST);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    /* host memory (both item arrays) counts toward the host cap, as buffers' does */
    uint64_t bytes = be->host_memory ? 2u * (uint64_t)w->capacity * vyre_type_size(t) : 0;
    if (bytes) vyre_lua_host_reserve(L, bytes, fname);
    struct vyre_error err;
    if (vyre_backend_worklist_alloc(be->core, t, w->capacity, &w->h, &err) != VYRE_OK) {
        vyre_lua_host_unreserve(bytes);
        return vyre_lua_raise(L, fname, &err);
    }
    w->host_bytes = bytes;
    w->cu = vyre_backend_worklist_native(w->h);
    be->nchildren++;
    w->live = true;
    return 1;
}

/* wl:push(values) -> wl: appends a table, vyre.Array or Buffer of the item type to the
 * current items. */
static int wl_push(lua_State *L) {
    const char *fname = "vyre.Worklist:push";
    struct lvyre_worklist *w = check_live(L, 1, fname);
    lua_settop(L, 2);
    struct vyre_lua_array *a = vyre_lua_toarray(L, 2);
    struct lvyre_buffer *b = a ? NULL : lvyre_testbuffer(L, 2);
    if (b) {
        if (!b->live || b->be != w->be)
            return vyre_lua_fail(L, "backend",
                                 "%s: the Buffer is freed or belongs to another backend. Fix: "
                                 "pass a live Buffer of the worklist's backend",
                                 fname);
        a = vyre_lua_newarray(L, b->type, b->count);
        struct vyre_error err;
        if (vyre_backend_buffer_download(b->h, 0, a->data, b->count, &err) != VYRE_OK)
            return vyre_lua_raise(L, fname, &err);
    } else if (!a && lua_type(L, 2) == LUA_TTABLE && !lua_getmetatable(L, 2)) {
        a = vyre_lua_array_fromtable(L, 2, w->type, fname, NULL);
    } else if (!a) {
        return vyre_lua_fail(L, "type",
                             "%s: expected a table, a vyre.Array or a Buffer of %s (got %s). Fix: "
                             "wl:push({1, 2, 3})",
                             fname, vyre_type_name(w->type), luaL_typename(L, 2));
    }
    if (a->type != w->type)
        return vyre_lua_fail(L, "type",
                             "%s: the values are %s, the worklist holds %s. Fix: convert them, "
                             "e.g. vyre.array('%s', t)",
                             fname, vyre_type_name(a->type), vyre_type_name(w->type),
                             vyre_type_name(w->type));
    struct vyre_backend_worklist_state s = state(L, w, fname);
    if (a->count > (uint64_t)(w->capacity - s.cur_count))
        return vyre_lua_fail(L, "limit",
                             "%s: %I values after %I current items need capacity %I, the worklist "
                             "has %I. Fix: create it with be:worklist('%s', %I) or more",
                             fname, (LUAI_UACINT)a->count, (LUAI_UACINT)s.cur_count,
                             (LUAI_UACINT)(a->count + s.cur_count), (LUAI_UACINT)w->capacity,
                             vyre_type_name(w->type), (LUAI_UACINT)(a->count + s.cur_count));
    struct vyre_error err;
    if (vyre_backend_worklist_push(w->h, a->data, (uint32_t)a->count, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

/* wl:size() -> the number of current items */
static int wl_size(lua_State *L) {
    struct lvyre_worklist *w = check_live(L, 1, "vyre.Worklist:size");
    lua_pushinteger(L, state(L, w, "vyre.Worklist:size").cur_count);
    return 1;
}

/* wl:pushed() -> the number of items pushed for the next round so far */
static int wl_pushed(lua_State *L) {
    struct lvyre_worklist *w = check_live(L, 1, "vyre.Worklist:pushed");
    lua_pushinteger(L, state(L, w, "vyre.Worklist:pushed").next_count);
    return 1;
}

/* wl:items() -> vyre.Array of the current items (a copy) */
static int wl_items(lua_State *L) {
    const char *fname = "vyre.Worklist:items";
    struct lvyre_worklist *w = check_live(L, 1, fname);
    struct vyre_backend_worklist_state s = state(L, w, fname);
    struct vyre_lua_array *a = vyre_lua_newarray(L, w->type, s.cur_count);
    struct vyre_error err;
    if (vyre_backend_worklist_items(w->h, a->data, s.cur_count, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    return 1;
}

/* wl:advance() -> wl: the pushed items become current (a device: on the stream, no
 * wait); an overflow known already is raised first */
static int wl_advance(lua_State *L) {
    const char *fname = "vyre.Worklist:advance";
    struct lvyre_worklist *w = check_live(L, 1, fname);
    lvyre_worklist_check(L, w, fname);
    struct vyre_error err;
    if (vyre_backend_worklist_advance(w->h, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

/* wl:plan() -> the work-queue plan that sized it (capacity, bytes, drain windows) */
static int wl_plan(lua_State *L) {
    struct lvyre_worklist *w = towl(L, 1);
    lvyre_push_workqueue_plan(L, &w->plan);
    return 1;
}

/* wl:clear() -> wl: no current or pushed items, no overflow record */
static int wl_clear(lua_State *L) {
    const char *fname = "vyre.Worklist:clear";
    struct lvyre_worklist *w = check_live(L, 1, fname);
    struct vyre_error err;
    if (vyre_backend_worklist_clear(w->h, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

static int wl_free(lua_State *L) {
    struct lvyre_worklist *w = towl(L, 1);
    release(w);
    return 0;
}

static int wl_tostring(lua_State *L) {
    struct lvyre_worklist *w = towl(L, 1);
    lua_pushfstring(L, "vyre.Worklist(%s, capacity %d%s)", vyre_type_name(w->type),
                    (int)w->capacity, w->live ? "" : ", freed");
    return 1;
}

static const luaL_Reg wl_methods[] = {
    {"push", wl_push},   {"size", wl_size},       {"pushed", wl_pushed},
    {"items", wl_items}, {"advance", wl_advance}, {"clear", wl_clear},
    {"free", wl_free},   {"plan", wl_plan},       {NULL, NULL}};

/* Fields type, capacity and freed, then methods. */
static int wl_index(lua_State *L) {
    struct lvyre_worklist *w = towl(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "type") == 0) {
        lua_pushstring(L, vyre_type_name(w->type));
        return 1;
    }
    if (k && strcmp(k, "capacity") == 0) {
        lua_pushinteger(L, w->capacity);
        return 1;
    }
    if (k && strcmp(k, "freed") == 0) {
        lua_pushboolean(L, !w->live);
        return 1;
    }
    return vyre_lua_method(L);
}

static const luaL_Reg wl_meta[] = {
    {"__gc", wl_free}, {"__close", wl_free}, {"__tostring", wl_tostring}, {NULL, NULL}};

void vyre_lua_open_worklist(lua_State *L) {
    vyre_lua_newclass_fields(L, VYRE_LUA_WORKLIST, wl_methods, wl_meta, wl_index, wl_free, false);
    lua_pushcfunction(L, core_workqueue_plan); /* into the module table on top */
    lua_setfield(L, -2, "workqueue_plan");
}
