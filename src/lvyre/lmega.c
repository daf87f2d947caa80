/* lmega.c — grid statements and megakernels in Lua (docs/GRID.md): k:rounds(),
 * be:grid_sync([mode]), be:plan(steps, opts) and be:megakernel(steps, opts).
 *
 * A megakernel takes the steps be:sequence takes, identifies the bound Buffers (one id
 * per object, however many names bind it) and where each lives (its root allocation
 * and byte range: a view and its parent alias), and has libvyre (vyre_mega.h) plan the
 * layers by memory and compose one program with grid statements. That program runs
 * like any other on either backend: the reference interpreter, or the CUDA runtime in
 * the mode the policy picked (cooperative persistent kernel or host split). Plans live
 * in the backend's own vyre_mega_cache (locked, freed with the backend) keyed by the
 * step programs, the binding shape and its aliasing, and the options (hits, misses,
 * evictions and entries are in be:stats()); the mode and its reason belong to each
 * call. The compiled kernels of composed programs live in a table per backend that
 * be:trim() empties, with the plans. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"
#include "vyre_mega.h"

#define MODE_LEN 16
#define REASON_LEN 240

/* ---- the backend's plan cache (vyre_mega_cache, owned by the backend) -------------------- */

static const char PLANREF[] = "vyre.megakernel.planref"; /* metatable of a held plan */

/* The plan a call holds, boxed in a userdata so that a raise anywhere after the lookup
 * (a policy function, a compile, a launch) drops the reference in __gc. */
struct planref {
    struct vyre_mega *m;
};

static int planref_gc(lua_State *L) {
    struct planref *r = lua_touserdata(L, 1);
    if (r && r->m) {
        vyre_mega_free(r->m);
        r->m = NULL;
    }
    return 0;
}

static struct planref *push_planref(lua_State *L) {
    struct planref *r = lua_newuserdatauv(L, sizeof *r, 0);
    r->m = NULL;
    if (luaL_newmetatable(L, PLANREF)) {
        lua_pushcfunction(L, planref_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "__metatable");
    }
    lua_setmetatable(L, -2);
    return r;
}

/* The backend's cache, made on its first plan. */
static vyre_mega_cache *plan_cache(lua_State *L, struct lvyre_backend *be, const char *fname) {
    struct vyre_error err;
    if (!be->plans && vyre_mega_cache_new(0, &be->plans, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
    return be->plans;
}

/* ---- reading the steps ------------------------------------------------------------------- */

struct mopts {
    lua_Integer prefix, times, max;
    bool converge, timed;
    struct lvyre_buffer *flag;
    struct lvyre_worklist *wl; /* converge = {worklist = wl}: on the device (docs/GRID.md) */
    const char *grid_sync;     /* NULL: the policy decides */
};

/* One name per mode (docs/API.md "Vocabulary"): the host split was "host_loop" in plans
 * and the policy; the old name is refused with the new one, never silently mapped. */
static const char *renamed_mode(const char *m) {
    return m && strcmp(m, "host_loop") == 0 ? " (\"host_loop\" is now called \"split\")" : "";
}

static void read_mopts(lua_State *L, int idx, struct mopts *o, const char *fname) {
    memset(o, 0, sizeof *o);
    o->times = 1;
    if (lua_isnoneornil(L, idx)) return;
    if (!lua_istable(L, idx))
        vyre_lua_fail(L, "type", "%s: opts must be a table (got %s). Fix: {times = 10}", fname,
                      luaL_typename(L, idx));
    static const char *const keys[] = {"prefix", "times", "timed", "grid_sync", "converge", NULL};
    vyre_lua_checkopts(L, idx, keys, fname);
    for (int i = 0; i < 2; i++) {
        if (lua_getfield(L, idx, keys[i]) != LUA_TNIL) {
            int isnum = 0;
            lua_Integer v = lua_tointegerx(L, -1, &isnum);
            if (!isnum || v < 0 || v > (lua_Integer)UINT32_MAX)
                vyre_lua_fail(L, "type", "%s: opts.%s must be an integer >= 0. Fix: {times = 10}",
                              fname, keys[i]);
            *(i == 0 ? &o->prefix : &o->times) = v;
        }
        lua_pop(L, 1);
    }
    lua_getfield(L, idx, "timed");
    o->timed = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* grid_sync and converge: the value stays on the stack while it is read (grid_sync's
     * string is used after this returns; idx's table keeps it alive) */
    for (int i = 3; i < 5; i++) {
        if (lua_getfield(L, idx, keys[i]) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        const char *k = keys[i];
        if (strcmp(k, "grid_sync") == 0) {
            enum vyre_grid_sync m;
            o->grid_sync = lua_tostring(L, -1);
            if (!o->grid_sync || !vyre_cuda_grid_sync_from_name(o->grid_sync, &m))
                vyre_lua_fail(L, "arg",
                              "%s: opts.grid_sync must be \"auto\", \"cooperative\", \"split\" or "
                              "\"graph\"%s. Fix: {grid_sync = \"split\"}",
                              fname, renamed_mode(o->grid_sync));
        } else if (strcmp(k, "converge") == 0) {
            if (!lua_istable(L, -1))
                vyre_lua_fail(L, "arg",
                              "%s: opts.converge must be {flag = buffer, max = N} or {worklist = "
                              "wl, max = N}. Fix: {converge = {flag = changed, max = 1000}}",
                              fname);
            lua_getfield(L, -1, "worklist");
            o->wl = lua_isnil(L, -1) ? NULL : lvyre_testworklist(L, -1);
            if (!lua_isnil(L, -1) && (!o->wl || !o->wl->live))
                vyre_lua_fail(L, "arg",
                              "%s: opts.converge.worklist must be a live vyre.Worklist. Fix: "
                              "{converge = {worklist = be:worklist('u32'), max = 1000}}",
                              fname);
            lua_pop(L, 1);
            lua_getfield(L, -1, "flag");
            o->flag = lvyre_testbuffer(L, -1);
            lua_getfield(L, -2, "max");
            int isnum = 0;
            o->max = lua_tointegerx(L, -1, &isnum);
            if (o->wl && !lua_isnil(L, -2))
                vyre_lua_fail(L, "arg",
                              "%s: opts.converge has both a flag and a worklist. Fix: converge on "
                              "one: {worklist = wl, max = N} or {flag = buf, max = N}",
                              fname);
            if (!o->wl && (!o->flag || !o->flag->live))
                vyre_lua_fail(L, "arg",
                              "%s: opts.converge.flag must be a live Buffer. Fix: {converge = "
                              "{flag = be:buffer('u32', 1), max = 1000}}",
                              fname);
            if (!isnum || o->max < 0 || o->max > (lua_Integer)UINT32_MAX)
                vyre_lua_fail(L, "type",
                              "%s: opts.converge.max must be an integer >= 0. Fix: {converge = "
                              "{flag = flag, max = 1000}}",
                              fname);
            lua_pop(L, 2);
            o->converge = true;
        }
        lua_pop(L, 1);
    }
    if (o->converge && o->times != 1)
        vyre_lua_fail(L, "arg",
                      "%s: opts.times and opts.converge exclude each other. Fix: converge "
                      "repeats the steps itself (at most converge.max rounds)",
                      fname);
}

/* What be:plan and be:megakernel share: the steps, their buffers (one id per Buffer
 * object, with where each lives), this call's plan reference and mode. */
struct mcall {
    struct lvyre_backend *be;
    struct lvyre_step *steps;
    size_t n;
    struct lvyre_buffer **ids; /* distinct Buffers, in order of first binding */
    const char **id_names;     /* the first name each is bound under */
    uint32_t nids, flag_id;
    struct lvyre_worklist **wls; /* distinct Worklists; the converge's is id 0 */
    uint32_t nwls;
    uint32_t **step_wl, *sized_by; /* per step: worklist ids, the sizing one */
    struct vyre_mega_step *ms;
    const vyre_bits **sp;
    struct mopts o;
    struct planref *ref; /* ref->m: the plan, this call's reference */
    const struct vyre_mega *m;
    char mode[MODE_LEN], reason[REASON_LEN]; /* this call's: the policy decides each time */
    bool cached;
    uint64_t bytes_per_round, total_groups;
};

/* Where each bound id lives: its root allocation (an index among the roots) and byte
 * range, so the planner orders a view and its parent (vyre_mega_memory). */
static struct vyre_mega_memory *memory_of(lua_State *L, const struct mcall *c) {
    struct vyre_mega_memory *mem = vyre_lua_scratch(L, (c->nids + 1) * sizeof *mem);
    for (uint32_t i = 0; i < c->nids; i++) {
        const struct lvyre_buffer *b = c->ids[i];
        const struct lvyre_buffer *root = b->parent ? b->parent : b;
        uint64_t es = vyre_type_size(b->type);
        mem[i].root = i;
        for (uint32_t j = 0; j < i; j++) {
            const struct lvyre_buffer *o = c->ids[j];
            if ((o->parent ? o->parent : o) == root) {
                mem[i].root = mem[j].root;
                break;
            }
        }
        mem[i].offset = (b->parent ? b->first : 0) * es;
        mem[i].bytes = b->count * es;
    }
    return mem;
}

static uint32_t worklist_id(struct mcall *c, struct lvyre_worklist *w) {
    for (uint32_t i = 0; i < c->nwls; i++)
        if (c->wls[i] == w) return i;
    c->wls[c->nwls] = w;
    return c->nwls++;
}

static uint32_t buffer_id(struct mcall *c, struct lvyre_buffer *b, const char *name) {
    for (uint32_t i = 0; i < c->nids; i++)
        if (c->ids[i] == b) return i;
    c->ids[c->nids] = b;
    c->id_names[c->nids] = name;
    return c->nids++;
}

/* A call that went well lets go of its plan now rather than at the next collection
 * (an evicted plan is freed then; one still cached stays). */
static void drop_plan(struct mcall *c) {
    vyre_mega_free(c->ref->m);
    c->ref->m = NULL;
    c->m = NULL;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++) h = (h ^ ((v >> (8 * i)) & 0xFFu)) * 0x100000001B3ull;
    return h;
}

static void read_call(lua_State *L, struct mcall *c, const char *fname) {
    c->be = lvyre_checkbackend(L, 1, fname);
    lua_settop(L, 3);
    read_mopts(L, 3, &c->o, fname);
    c->steps = lvyre_read_steps(L, 2, c->be, &c->n, fname);
    for (size_t i = 0; i < c->n; i++)
        if (c->steps[i].coll)
            vyre_lua_fail(L, "unsupported",
                          "%s: step %d is a collective; a megakernel holds kernels only. Fix: "
                          "use be:sequence or be:graph for steps with collectives",
                          fname, (int)i + 1);
    if (c->n == 0)
        vyre_lua_fail(L, "arg", "%s: no steps. Fix: pass at least one {kernel, args, opts}", fname);
    if ((size_t)c->o.prefix > c->n)
        vyre_lua_fail(L, "arg", "%s: prefix %d is longer than the %d steps. Fix: prefix <= #steps",
                      fname, (int)c->o.prefix, (int)c->n);
    if (c->o.wl && c->o.wl->be != c->be)
        vyre_lua_fail(L, "backend",
                      "%s: opts.converge.worklist belongs to another backend object. Fix: make "
                      "it with this backend's be:worklist",
                      fname);
    if (c->o.flag && c->o.flag->be != c->be)
        vyre_lua_fail(L, "backend",
                      "%s: opts.converge.flag belongs to another backend object. Fix: make it "
                      "with this backend's be:buffer",
                      fname);
    size_t most = c->n * VYRE_MAX_BUFFERS + 1;
    c->ids = vyre_lua_scratch(L, most * sizeof *c->ids);
    c->id_names = vyre_lua_scratch(L, most * sizeof *c->id_names);
    c->ms = vyre_lua_scratch(L, c->n * sizeof *c->ms);
    c->sp = vyre_lua_scratch(L, c->n * sizeof *c->sp);
    uint32_t *bind = vyre_lua_scratch(L, most * sizeof *bind);
    /* worklists: one id per Worklist object (the converge's first), per step its
     * declarations' ids and the one sizing it ({n = wl}) */
    size_t wmost = c->n * VYRE_MAX_WORKLISTS + c->n + 1;
    c->wls = vyre_lua_scratch(L, wmost * sizeof *c->wls);
    uint32_t *wbind = vyre_lua_scratch(L, (c->n * VYRE_MAX_WORKLISTS + 1) * sizeof *wbind);
    c->step_wl = vyre_lua_scratch(L, (c->n + 1) * sizeof *c->step_wl);
    c->sized_by = vyre_lua_scratch(L, (c->n + 1) * sizeof *c->sized_by);
    c->nwls = 0;
    if (c->o.wl) c->wls[c->nwls++] = c->o.wl;
    uint64_t key = 0xCBF29CE484222325ull;
    for (size_t j = 0; j < c->n; j++) {
        struct lvyre_step *s = &c->steps[j];
        const struct lvyre_layout *lay = s->k->lay;
        vyre_program *p = lvyre_kernel_program(L, s->k, fname);
        struct vyre_mega_step *m = &c->ms[j];
        m->program = p;
        m->buffers = bind + j * VYRE_MAX_BUFFERS;
        for (uint32_t i = 0; i < lay->nbuffers; i++) {
            const struct lvyre_decl *d = lvyre_layout_slot(lay, VYRE_DECL_BUFFER, i);
            bind[j * VYRE_MAX_BUFFERS + i] = buffer_id(c, s->b.buf[i], d->name);
            key = mix(key, bind[j * VYRE_MAX_BUFFERS + i]);
        }
        c->step_wl[j] = wbind + j * VYRE_MAX_WORKLISTS;
        for (uint32_t i = 0; i < lay->nworklists; i++) {
            wbind[j * VYRE_MAX_WORKLISTS + i] = worklist_id(c, s->b.wl[i]);
            key = mix(key, 0x3000u + wbind[j * VYRE_MAX_WORKLISTS + i]);
        }
        c->sized_by[j] = s->b.sized ? worklist_id(c, s->b.sized) : UINT32_MAX;
        key = mix(key, 0x7000u + c->sized_by[j]);
        if (s->b.sized) { /* the layer covers the most the worklist can hold */
            uint32_t w0 = lay->workgroup[0];
            m->grid[0] = s->b.sized->capacity / w0 + (s->b.sized->capacity % w0 != 0);
            m->grid[1] = m->grid[2] = 1;
        } else if (s->b.empty) {
            memset(m->grid, 0, sizeof m->grid);
        } else {
            lvyre_kernel_grid(L, s->k, &s->b, m->grid, fname);
        }
        c->sp[j] = s->b.params;
        uint64_t groups = (uint64_t)m->grid[0] * m->grid[1] * m->grid[2];
        c->total_groups += groups;
        key = mix(mix(key, vyre_program_hash(p)), 0xA5A5u + j);
        if ((size_t)j >= (size_t)c->o.prefix)
            for (uint32_t i = 0; i < lay->nbuffers; i++)
                c->bytes_per_round += s->b.buf[i]->count * vyre_type_size(s->b.buf[i]->type);
    }
    c->flag_id = c->o.flag ? buffer_id(c, c->o.flag, "flag") : 0;
    /* the plan depends on which ids alias (not on where they are) */
    struct vyre_mega_memory *mem = memory_of(L, c);
    for (uint32_t i = 0; i < c->nids; i++)
        for (uint32_t j = i + 1; j < c->nids; j++)
            if (mem[i].root == mem[j].root && mem[i].bytes && mem[j].bytes &&
                mem[i].offset < mem[j].offset + mem[j].bytes &&
                mem[j].offset < mem[i].offset + mem[i].bytes)
                key = mix(mix(key, 0xA11A5u + i), j);
    key = mix(key, (uint64_t)c->o.prefix);
    key = mix(key, c->o.wl         ? 3u
                   : c->o.converge ? 2u + c->flag_id * 4u
                                   : (c->o.times != 1 ? 1u : 0u));
    for (uint32_t w = 0; w < c->nwls; w++) key = mix(key, 0x5000u + (uint64_t)c->wls[w]->type);
    key = mix(key, (uint64_t)c->be->ordinal); /* the cache is the backend object's own */
    /* not the grid size nor opts.grid_sync: the composition does not depend on them (the
     * mode is decided per call, the launch values computed per call) */
    vyre_mega_cache *cache = plan_cache(L, c->be, fname);
    struct vyre_error err;
    c->ref = push_planref(L);
    if (vyre_mega_cache_get(cache, key, &c->ref->m, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
    c->cached = c->ref->m != NULL;
    c->m = c->ref->m;
    if (c->m) return;
    enum vyre_type *types = vyre_lua_scratch(L, (c->nids + 1) * sizeof *types);
    for (uint32_t i = 0; i < c->nids; i++) types[i] = c->ids[i]->type;
    enum vyre_type *wtypes = vyre_lua_scratch(L, (c->nwls + 1) * sizeof *wtypes);
    for (uint32_t w = 0; w < c->nwls; w++) wtypes[w] = c->wls[w]->type;
    struct vyre_mega_options mo = {(uint32_t)c->o.prefix,
                                   c->o.times != 1,
                                   c->o.converge && !c->o.wl,
                                   c->flag_id,
                                   mem,
                                   c->nwls,
                                   wtypes,
                                   c->o.wl != NULL,
                                   0,
                                   (const uint32_t *const *)c->step_wl,
                                   c->sized_by};
    if (vyre_mega_build(c->ms, (uint32_t)c->n, c->nids, types, &mo, &c->ref->m, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
    c->m = c->ref->m;
    if (vyre_mega_cache_put(cache, key, c->ref->m, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
}

/* ---- the composed program's kernel (one per backend and composition) ---------------------- */

static const char KERNELS[] = "vyre.megakernel.kernels"; /* registry: backend -> {key -> K} */

/* Pushes the Kernel of the plan's composed program for this backend. */
static struct lvyre_kernel *plan_kernel(lua_State *L, struct mcall *c, const char *fname) {
    if (luaL_getsubtable(L, LUA_REGISTRYINDEX, KERNELS)) { /* ephemeron: backend -> table */
    } else {
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
    }
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, 1);
        lua_pushvalue(L, -2);
        lua_rawset(L, -4);
    }
    /* a debug kernel of its own while the debug mode is on (ldebug.c) */
    const struct lvyre_backend *be = lua_touserdata(L, 1);
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx%s", (unsigned long long)c->m->key,
             be->debug ? "-debug" : "");
    if (lua_getfield(L, -1, hex) == LUA_TUSERDATA) {
        struct lvyre_kernel *k = lua_touserdata(L, -1);
        if (k->live) return k;
    }
    lua_pop(L, 1);
    /* a Program of its own: the cache may evict the plan while the kernel lives */
    struct vyre_lua_program *lp = lua_newuserdatauv(L, sizeof *lp, 0);
    lp->p = NULL;
    luaL_setmetatable(L, "vyre.Program");
    struct vyre_error err;
    if (vyre_program_copy(c->m->program, &lp->p, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    struct lvyre_kernel *k = lvyre_compile(L, 1, -1, fname);
    lua_pushvalue(L, -1);
    lua_setfield(L, -4, hex);
    return k;
}

/* ---- the mode ------------------------------------------------------------------------------- */

struct geometry {
    int per_sm, sms;        /* co-resident blocks per SM (the driver's), SMs */
    int max_threads_per_sm; /* 0: unknown (the reference) */
    bool cooperative;
    bool measured; /* occupancy measured: co-residency limits a cooperative run here */
    uint32_t blocks, threads, groups[3];
};

static void measure(lua_State *L, struct mcall *c, struct lvyre_kernel *k, vyre_bits *params,
                    struct geometry *g, const char *fname) {
    struct vyre_error err;
    memset(g, 0, sizeof *g);
    const struct vyre_mega *m = c->m;
    struct vyre_mega_args_options ao = {c->ms, c->sp, (uint32_t)c->o.times, (uint32_t)c->o.max};
    if (vyre_mega_args(m, &ao, params, g->groups, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    g->threads = m->workgroup[0] * m->workgroup[1] * m->workgroup[2];
    if (!k->cu) return; /* occupancy is a native device's fact */
    struct vyre_cuda_info info;
    if (vyre_cuda_device_info(c->be->dev, &info, &err) != VYRE_OK ||
        vyre_cuda_kernel_occupancy(k->cu, &g->per_sm, &g->cooperative, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
    g->measured = true;
    g->sms = info.sms;
    g->max_threads_per_sm = info.max_threads_per_sm;
    /* the grid the runtime launches, by its own rule (vyre_plan.h) */
    struct vyre_device_limits lim;
    if (vyre_cuda_device_limits(c->be->dev, &lim, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    g->blocks = vyre_occupancy_grid(&lim, VYRE_SIZE_COOPERATIVE, (uint32_t)g->per_sm, g->groups[0]);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

/* One meaning of `occupancy` everywhere (docs/API.md "Vocabulary"): the fraction in
 * [0, 1] of an SM's thread slots the co-resident blocks fill, as vyre.planners.occupancy
 * and the policy read it; blocks per SM is `blocks_per_sm`. Unknown (the reference): left out. */
static void push_occupancy(lua_State *L, const struct geometry *g) {
    if (g->max_threads_per_sm <= 0) return;
    double f = (double)g->per_sm * (double)g->threads / (double)g->max_threads_per_sm;
    lua_pushnumber(L, f > 1.0 ? 1.0 : f);
    lua_setfield(L, -2, "occupancy");
}

/* Pushes the facts a policy decides from. */
static void push_facts(lua_State *L, const struct mcall *c, const struct geometry *g) {
    const struct vyre_mega *m = c->m;
    lua_createtable(L, 0, 16);
    lua_pushstring(L, lvyre_backend_name(c->be));
    lua_setfield(L, -2, "backend");
    lua_pushboolean(L, g->cooperative);
    lua_setfield(L, -2, "cooperative");
    if (g->sms > 0) set_int(L, "sms", g->sms); /* else the policy takes the profile's */
    push_occupancy(L, g);
    set_int(L, "blocks", g->blocks);
    set_int(L, "threads", g->threads);
    set_int(L, "virtual_workgroups", g->groups[0]);
    set_int(L, "steps", (lua_Integer)c->n);
    set_int(L, "layers", m->nlayers);
    set_int(L, "barriers", m->nlayers ? m->nlayers - 1 : 0);
    set_int(L, "rounds", c->o.converge ? c->o.max : c->o.times);
    /* the names vyre.policy reads (docs/PLANNERS.md §2) */
    lua_pushboolean(L, g->cooperative && g->per_sm > 0); /* measured on a native device only */
    lua_setfield(L, -2, "fits");
    if (g->per_sm > 0) set_int(L, "blocks_per_sm", g->per_sm);
    if (c->o.converge) set_int(L, "max_rounds", c->o.max > 0 ? c->o.max : 1);
    else set_int(L, "times", c->o.times > 0 ? c->o.times : 1);
    lua_pushboolean(L, c->o.converge);
    lua_setfield(L, -2, "converge");
    if (c->o.wl) {
        lua_pushliteral(L, "worklist");
        lua_setfield(L, -2, "converge_on");
    }
    set_int(L, "bytes_per_round", (lua_Integer)c->bytes_per_round);
    if (c->o.grid_sync) {
        lua_pushstring(L, c->o.grid_sync);
        lua_setfield(L, -2, "grid_sync");
    }
}

static bool valid_mode(const char *m) {
    return m &&
           (strcmp(m, "cooperative") == 0 || strcmp(m, "graph") == 0 || strcmp(m, "split") == 0);
}

/* Hook (core.set_hook, lerror.c) of the megakernel policy: a function(facts) -> {mode,
 * reason} that lua/vyre/init.lua registers, so that this file requires no Lua module and
 * the policy has one home (lua/vyre/policy.lua, whose vyre.policy.megakernel the user
 * replaces). */
static const char POLICY[] = "megakernel_policy";
/* Hook of the function(plan) that gives a plan its methods (plan:dot(), a readable
 * tostring): vyre registers lua/vyre/plan_view.lua's attach. */
static const char PLAN_HOOK[] = "plan";

/* Calls the registered policy with the facts at facts_idx and copies its choice into c;
 * false when none is registered. A policy that raises is reported with a Fix. */
static bool ask_policy(lua_State *L, struct mcall *c, int facts_idx, const char *fname) {
    if (vyre_lua_gethook(L, POLICY) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return false;
    }
    lua_pushvalue(L, facts_idx);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK)
        vyre_lua_fail(
            L, "arg",
            "%s: the megakernel policy (vyre.policy.megakernel) raised: %s. Fix: make the "
            "policy return {mode = \"cooperative\" | \"graph\" | \"split\", reason "
            "= \"...\"} without raising, or pass opts.grid_sync",
            fname, luaL_tolstring(L, -1, NULL));
    if (!lua_istable(L, -1) || lua_getfield(L, -1, "mode") != LUA_TSTRING ||
        !valid_mode(lua_tostring(L, -1)))
        vyre_lua_fail(L, "arg",
                      "%s: vyre.policy.megakernel returned no mode%s. Fix: return {mode = "
                      "\"cooperative\" | \"graph\" | \"split\", reason = \"...\"}",
                      fname, renamed_mode(lua_tostring(L, -1)));
    snprintf(c->mode, sizeof c->mode, "%s", lua_tostring(L, -1));
    lua_getfield(L, -2, "reason");
    snprintf(c->reason, sizeof c->reason, "vyre.policy: %s",
             lua_isstring(L, -1) ? lua_tostring(L, -1) : "(no reason given)");
    lua_settop(L, facts_idx);
    return true;
}

/* opts.grid_sync = "cooperative" where it cannot run: the capability check's words, as
 * vyre.planners.capability says them (vyre_cuda_kernel_capability). */
static void refuse_cooperative(lua_State *L, struct lvyre_kernel *k, const char *fname) {
    struct vyre_cap_verdict *v = vyre_lua_scratch(L, sizeof *v);
    struct vyre_error err;
    if (vyre_cuda_kernel_capability(k->cu, true, v, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
    vyre_lua_fail(L, "unsupported", "%s: opts.grid_sync = \"cooperative\" refused: %s", fname,
                  v->ok ? "the device reports no co-resident grid for it. Fix: use grid_sync = "
                          "\"split\" or \"auto\""
                        : v->message);
}

/* The mode: opts.grid_sync if given, else the registered policy. Without one (vyre.core
 * used without vyre.policy), the backend object's grid sync setting (be:grid_sync; "auto":
 * the runtime's own rule). The words follow the backend's capabilities, not its name:
 * whether co-residency limits a cooperative run (occupancy was measured) and whether
 * graph replay is the device's own (vyre_backend_info.graphs_native). */
static void choose(lua_State *L, struct mcall *c, struct lvyre_kernel *k, const struct geometry *g,
                   int facts_idx, const char *fname) {
    struct vyre_backend_info info;
    struct vyre_error err;
    if (vyre_backend_info(c->be->core, &info, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
    bool graphs = info.graphs_native;
    bool can = g->cooperative && g->per_sm > 0; /* measured on a native device only */
    if (c->o.grid_sync && strcmp(c->o.grid_sync, "auto") != 0) {
        bool coop = strcmp(c->o.grid_sync, "cooperative") == 0;
        bool graph = strcmp(c->o.grid_sync, "graph") == 0;
        snprintf(c->mode, sizeof c->mode, "%s", coop ? "cooperative" : graph ? "graph" : "split");
        snprintf(c->reason, sizeof c->reason, "%s",
                 coop    ? "forced by opts.grid_sync"
                 : graph ? "forced by opts.grid_sync (a CUDA graph per converge round)"
                         : "forced by opts.grid_sync (host split)");
    } else if (!ask_policy(L, c, facts_idx, fname)) {
        snprintf(c->mode, sizeof c->mode, "%s",
                 vyre_cuda_grid_sync_name(vyre_backend_grid_sync(c->be->core)));
        snprintf(c->reason, sizeof c->reason,
                 "no megakernel policy registered (vyre.policy not loaded): the backend's grid "
                 "sync setting (be:grid_sync) decides at launch");
    }
    if (strcmp(c->mode, "cooperative") == 0 && g->measured && !can) {
        if (c->o.grid_sync && strcmp(c->o.grid_sync, "cooperative") == 0)
            refuse_cooperative(L, k, fname);
        snprintf(c->mode, sizeof c->mode, "split");
        snprintf(c->reason, sizeof c->reason, "cooperative was chosen but cannot run here");
    }
    if (strcmp(c->mode, "graph") == 0 && !c->o.wl) {
        size_t l = strlen(c->reason);
        snprintf(c->reason + l, sizeof c->reason - l, "%s",
                 graphs ? "; graph: one kernel per layer, each converge round captured once as a "
                          "CUDA graph, then one graph launch + one flag readback per round"
                        : "; the reference interpreter runs the sections one after another");
    }
    if (c->o.wl) { /* where the worklist's rounds are decided */
        bool device = strcmp(c->mode, "cooperative") == 0 ||
                      (strcmp(c->mode, "auto") == 0 && g->cooperative && g->per_sm > 0);
        size_t l = strlen(c->reason);
        snprintf(c->reason + l, sizeof c->reason - l, "%s",
                 !g->measured ? "; worklist rounds: the reference advances the worklist between "
                                "rounds"
                 : device     ? "; worklist rounds: advanced and decided on the device (no host "
                                "sync until the end)"
                              : "; worklist rounds: a host loop in this mode (one kernel per "
                                "layer, one header read per round)");
    }
}

/* The name step j binds buffer id under (its first such declaration). */
static const char *buffer_name(const struct mcall *c, uint32_t j, uint32_t id) {
    const struct lvyre_layout *lay = c->steps[j].k->lay;
    for (uint32_t i = 0; i < lay->nbuffers; i++)
        if (c->ms[j].buffers[i] == id) return lvyre_layout_slot(lay, VYRE_DECL_BUFFER, i)->name;
    return id < c->nids ? c->id_names[id] : "?";
}

static void push_plan(lua_State *L, const struct mcall *c, const struct geometry *g,
                      int facts_idx) {
    const struct vyre_mega *m = c->m;
    lua_createtable(L, 0, 16);
    lua_pushstring(L, c->mode);
    lua_setfield(L, -2, "mode");
    lua_pushstring(L, c->reason);
    lua_setfield(L, -2, "reason");
    lua_createtable(L, (int)m->nlayers, 0);
    for (uint32_t l = 0; l < m->nlayers; l++) {
        lua_createtable(L, 0, 1);
        lua_newtable(L);
        int k = 0;
        for (uint32_t j = 0; j < m->nsteps; j++)
            if (m->layer[j] == l) {
                lua_pushinteger(L, (lua_Integer)j + 1);
                lua_rawseti(L, -2, ++k);
            }
        lua_setfield(L, -2, "steps");
        lua_rawseti(L, -2, (lua_Integer)l + 1);
    }
    lua_setfield(L, -2, "layers");
    lua_createtable(L, (int)m->nbarriers, 0);
    for (uint32_t i = 0; i < m->nbarriers; i++) {
        const struct vyre_mega_dep *d = &m->barriers[i];
        lua_createtable(L, 0, 5);
        set_int(L, "after_layer", (lua_Integer)m->after_layer[i] + 1);
        lua_pushstring(L, vyre_mega_dep_name(d->kind));
        lua_setfield(L, -2, "kind");
        lua_pushstring(L, buffer_name(c, d->to, d->buffer));
        lua_setfield(L, -2, "buffer");
        set_int(L, "from", (lua_Integer)d->from + 1);
        set_int(L, "to", (lua_Integer)d->to + 1);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "barriers");
    /* every dependency (the barriers are one per layer boundary): as edges
     * {before = from, after = to}, vyre.planners.waves lays out the same layers */
    lua_createtable(L, (int)m->ndeps, 0);
    for (uint32_t i = 0; i < m->ndeps; i++) {
        const struct vyre_mega_dep *d = &m->deps[i];
        lua_createtable(L, 0, 4);
        set_int(L, "from", (lua_Integer)d->from + 1);
        set_int(L, "to", (lua_Integer)d->to + 1);
        lua_pushstring(L, vyre_mega_dep_name(d->kind));
        lua_setfield(L, -2, "kind");
        lua_pushstring(L, buffer_name(c, d->to, d->buffer));
        lua_setfield(L, -2, "buffer");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "deps");
    lua_createtable(L, 0, 4);
    set_int(L, "blocks", g->blocks);
    set_int(L, "blocks_per_sm", g->per_sm);
    if (g->sms > 0) set_int(L, "sms", g->sms); /* else the policy takes the profile's */
    set_int(L, "threads", g->threads);
    set_int(L, "virtual_workgroups", g->groups[0]);
    lua_setfield(L, -2, "grid");
    push_occupancy(L, g);
    set_int(L, "bytes_per_round", (lua_Integer)c->bytes_per_round);
    lua_createtable(L, 3, 0);
    for (int a = 0; a < 3; a++) {
        lua_pushinteger(L, m->workgroup[a]);
        lua_rawseti(L, -2, a + 1);
    }
    lua_setfield(L, -2, "workgroup");
    set_int(L, "remapped", m->remapped);
    lua_pushboolean(L, c->cached);
    lua_setfield(L, -2, "cached");
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)m->key);
    lua_pushstring(L, hex);
    lua_setfield(L, -2, "program_hash");
    void **box = vyre_lua_newbox(L); /* frees the text if pushing it raises */
    if (vyre_text_print(m->program, (char **)box, NULL) == VYRE_OK) {
        lua_pushstring(L, (const char *)*box);
        lua_setfield(L, -3, "text");
    }
    vyre_lua_box_release(box);
    lua_pop(L, 1);
    if (c->o.wl) { /* the converge's worklist: how the work-queue planner sized it */
        lvyre_push_workqueue_plan(L, &c->o.wl->plan);
        lua_setfield(L, -2, "worklist");
    }
    lua_pushvalue(L, facts_idx);
    lua_setfield(L, -2, "facts");
    /* plan:dot() and a readable tostring: the hook vyre registers (plan_view.attach),
     * given the steps too (argument 2 of be:plan, read_call's settop) so that it copies
     * what the steps carry for the plan (lib.steps.expand's `expansion`) */
    if (vyre_lua_gethook(L, PLAN_HOOK) == LUA_TFUNCTION) {
        lua_pushvalue(L, -2); /* the plan */
        lua_pushvalue(L, 2);  /* the steps */
        lua_call(L, 2, 0);
    } else {
        lua_pop(L, 1);
    }
}

/* Everything up to the mode; leaves the Kernel and the facts on the stack. */
/* A step sized by a worklist that drains in windows (vyre_mega.drains) covers one drain
 * window of workgroups, the work-queue plan's items_per_chunk (CUDA: the resident grid's
 * threads), instead of the worklist's whole capacity: each round its workgroups loop
 * over the current items, and the layer's virtual grid stays small. */
static void drain_windows(struct mcall *c) {
    for (size_t j = 0; j < c->n; j++) {
        const struct lvyre_worklist *w = c->steps[j].b.sized;
        if (!w || !c->m->drains[j]) continue;
        uint32_t w0 = c->steps[j].k->lay->workgroup[0];
        uint64_t win = w->plan.items_per_chunk / w0 + (w->plan.items_per_chunk % w0 != 0);
        if (win == 0) win = 1;
        if (win < c->ms[j].grid[0]) c->ms[j].grid[0] = (uint32_t)win;
    }
}

static struct lvyre_kernel *prepare(lua_State *L, struct mcall *c, vyre_bits *params,
                                    struct geometry *g, int *facts_idx, const char *fname) {
    read_call(L, c, fname);
    drain_windows(c);
    struct lvyre_kernel *k = plan_kernel(L, c, fname);
    measure(L, c, k, params, g, fname);
    push_facts(L, c, g);
    *facts_idx = lua_gettop(L);
    /* the composition is cached; the mode is decided afresh (the policy may change),
     * into this call's own record: a policy that plans other compositions cannot touch it */
    choose(L, c, k, g, *facts_idx, fname);
    return k;
}

/* ---- Lua functions ------------------------------------------------------------------------ */

/* be:plan(steps, opts) -> {mode, reason, layers, barriers, grid, occupancy, bytes_per_round,
 * workgroup, remapped, cached, program_hash, facts}; nothing runs. */
int lvyre_backend_plan(lua_State *L) {
    const char *fname = "vyre.Backend:plan";
    struct mcall c;
    memset(&c, 0, sizeof c);
    struct geometry g;
    vyre_bits params[VYRE_MAX_PARAMS];
    int facts;
    prepare(L, &c, params, &g, &facts, fname);
    push_plan(L, &c, &g, facts);
    drop_plan(&c);
    return 1;
}

/* be:megakernel(steps, {prefix, times | converge = {flag | worklist, max}, timed, grid_sync}) ->
 * rounds [, timing]: the steps as one program with grid barriers between dependent
 * layers; the results are those of be:sequence(steps, {prefix, times}). */
int lvyre_backend_megakernel(lua_State *L) {
    const char *fname = "vyre.Backend:megakernel";
    struct mcall c;
    memset(&c, 0, sizeof c);
    struct geometry g;
    vyre_bits params[VYRE_MAX_PARAMS];
    int facts;
    struct lvyre_kernel *k = prepare(L, &c, params, &g, &facts, fname);
    /* through the backend interface: the plan's mode goes with this one run
     * (vyre_grid_run_options.grid_sync); timing, rounds and a converge worklist's counts
     * (watch: an overflow is known right after) come back within its one sync */
    vyre_backend_buffer **hb = vyre_lua_scratch(L, (c.nids + 1) * sizeof *hb);
    for (uint32_t i = 0; i < c.nids; i++) hb[i] = c.ids[i]->h;
    vyre_backend_worklist *hw[VYRE_MAX_WORKLISTS];
    for (uint32_t w = 0; w < c.nwls; w++) {
        lvyre_worklist_check(L, c.wls[w], fname); /* an overflow not reported yet */
        hw[w] = c.wls[w]->h;
    }
    struct vyre_backend_args a = {.buffers = hb,
                                  .nbuffers = c.nids,
                                  .params = params,
                                  .nparams = k->lay->nparams,
                                  .grid = g.groups,
                                  .worklists = hw,
                                  .nworklists = c.nwls};
    enum vyre_grid_sync mode = VYRE_GRID_AUTO;
    vyre_cuda_grid_sync_from_name(c.mode, &mode);
    struct vyre_timing t = {0, 0, 0, 0};
    uint64_t rounds = 0;
    struct vyre_grid_run_options go = {
        .grid_sync = mode, .timing = &t, .rounds = &rounds, .watch = c.o.wl ? c.o.wl->h : NULL};
    struct vyre_error err;
    bool guarded = lvyre_refguard_enter(c.be, &err);
    enum vyre_status st = vyre_backend_grid_run(k->h, &a, &go, &err);
    lvyre_refguard_leave(guarded, st, &err);
    if (st != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    for (uint32_t w = 0; w < c.nwls; w++) lvyre_worklist_check(L, c.wls[w], fname);
    /* the kernel has a program of its own: the plan can go */
    drop_plan(&c);
    if (!c.o.converge) rounds = (uint64_t)c.o.times; /* rounds of a times-loop: times */
    lua_pushinteger(L, (lua_Integer)rounds);
    if (!c.o.timed) return 1;
    lvyre_pushtiming(L, &t); /* the one timing record; the mode is the plan's (be:plan) */
    return 2;
}

/* k:rounds() -> the rounds the converge loops of the kernel's last launch ran (waits for
 * the device after a cooperative launch). */
int lvyre_kernel_rounds(lua_State *L) {
    const char *fname = "vyre.Kernel:rounds";
    struct lvyre_kernel *k = lvyre_checkkernel(L, 1, fname);
    uint64_t r = 0; /* raw PTX (no backend kernel): no grid statements */
    struct vyre_error err;
    if (k->h && vyre_backend_kernel_rounds(k->h, &r, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_pushinteger(L, (lua_Integer)r);
    return 1;
}

/* k:occupancy() -> blocks per SM the driver allows (0 on the reference), whether the
 * device has cooperative launch, how the kernel's last launch ran ("cooperative",
 * "split", "graph", "none" before any, "plain" without grid statements; "reference") and with
 * how many blocks (cooperative). */
int lvyre_kernel_occupancy(lua_State *L) {
    const char *fname = "vyre.Kernel:occupancy";
    struct lvyre_kernel *k = lvyre_checkkernel(L, 1, fname);
    int per_sm = 0;
    bool coop = false;
    const char *mode = "reference";
    uint32_t blocks = 0;
    struct vyre_error err;
    if (k->cu) { /* a native device's kernel: the driver's occupancy */
        if (vyre_cuda_kernel_occupancy(k->cu, &per_sm, &coop, &err) != VYRE_OK)
            return vyre_lua_raise(L, fname, &err);
        mode = vyre_cuda_kernel_grid_mode(k->cu, &blocks);
    }
    lua_pushinteger(L, per_sm);
    lua_pushboolean(L, coop);
    lua_pushstring(L, mode);
    lua_pushinteger(L, blocks);
    return 4;
}

/* be:grid_sync([mode]) -> the mode before ("auto", "cooperative", "split", "graph"): how programs
 * with grid statements run on this backend object. The backend keeps it and passes it to
 * each launch (vyre_backend_set_grid_sync): no device state changes, so another backend
 * object on the same device keeps its own (the reference records it; it runs them the one
 * way it has). */
int lvyre_backend_grid_sync(lua_State *L) {
    const char *fname = "vyre.Backend:grid_sync";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    lua_settop(L, 2);
    lua_pushstring(L, vyre_cuda_grid_sync_name(vyre_backend_grid_sync(be->core)));
    if (lua_isnil(L, 2)) return 1;
    enum vyre_grid_sync m;
    if (!vyre_cuda_grid_sync_from_name(lua_tostring(L, 2), &m))
        return vyre_lua_fail(L, "arg",
                             "%s: mode must be \"auto\", \"cooperative\", \"split\" or \"graph\" "
                             "(got %s)%s. "
                             "Fix: be:grid_sync(\"split\")",
                             fname, luaL_tolstring(L, 2, NULL), renamed_mode(lua_tostring(L, 2)));
    struct vyre_error err;
    if (vyre_backend_set_grid_sync(be->core, m, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 3);
    return 1;
}

/* be:stats() fields of the backend's plan cache (lbackend.c calls this). */
void lvyre_mega_stats(lua_State *L, struct lvyre_backend *be) {
    struct vyre_mega_cache_stats st = {0, 0, 0, 0};
    if (be->plans) vyre_mega_cache_stats(be->plans, &st, NULL);
    set_int(L, "plan_hits", (lua_Integer)st.hits);
    set_int(L, "plan_misses", (lua_Integer)st.misses);
    set_int(L, "plan_evictions", (lua_Integer)st.evictions);
    set_int(L, "plan_entries", (lua_Integer)st.entries);
}

/* be:free() and __gc: the backend's plans go with it (plans a running call holds live
 * until it lets go). */
void lvyre_mega_release(struct lvyre_backend *be) {
    vyre_mega_cache_free(be->plans);
    be->plans = NULL;
}

/* be:trim(): the compiled megakernels and the plans of the backend at idx are dropped. */
void lvyre_mega_trim(lua_State *L, int idx) {
    idx = lua_absindex(L, idx);
    struct lvyre_backend *be = lua_touserdata(L, idx);
    if (be && be->plans) vyre_mega_cache_clear(be->plans, NULL);
    if (lua_getfield(L, LUA_REGISTRYINDEX, KERNELS) == LUA_TTABLE) {
        lua_pushvalue(L, idx);
        lua_pushnil(L);
        lua_rawset(L, -3);
    }
    lua_pop(L, 1);
}

/* core.set_megakernel_policy(fn | nil) -> the previous: the function be:plan and
 * be:megakernel ask for the mode (vyre.policy registers its decide when it loads). */
static int core_set_megakernel_policy(lua_State *L) {
    const char *fname = "vyre.core.set_megakernel_policy";
    if (!lua_isnoneornil(L, 1) && !lua_isfunction(L, 1))
        return vyre_lua_fail(L, "type",
                             "%s: expected a function(facts) -> {mode, reason} or nil (got %s). "
                             "Fix: replace vyre.policy.megakernel instead",
                             fname, luaL_typename(L, 1));
    lua_settop(L, 1);
    return vyre_lua_sethook(L, POLICY, 1);
}

/* core.set_plan_hook(fn | nil) -> the previous: called with each plan be:plan returns (and
 * its steps). */
static int core_set_plan_hook(lua_State *L) {
    if (!lua_isnoneornil(L, 1) && !lua_isfunction(L, 1))
        return vyre_lua_fail(L, "type",
                             "vyre.core.set_plan_hook: expected a function(plan) or nil (got %s). "
                             "Fix: pass require('vyre.plan_view').attach",
                             luaL_typename(L, 1));
    lua_settop(L, 1);
    return vyre_lua_sethook(L, PLAN_HOOK, 1);
}

/* core.mega_layers(n, edges) -> layer (per node, 1-based), nlayers; or nil and the list
 * of nodes a cycle leaves unscheduled. edges = {{before, after}, ...} (1-based). The Kahn
 * layering be:plan uses (vyre_mega_layers), for vyre.planners.waves. */
static int core_mega_layers(lua_State *L) {
    const char *fname = "vyre.core.mega_layers";
    lua_Integer n = luaL_checkinteger(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (n < 0 || n > (lua_Integer)(UINT32_MAX / 2))
        return vyre_lua_fail(L, "arg", "%s: n = %d is out of range. Fix: 0 <= n", fname, (int)n);
    size_t ne = (size_t)lua_rawlen(L, 2);
    struct vyre_mega_dep *d = vyre_lua_scratch(L, (ne + 1) * sizeof *d);
    uint32_t *layer = vyre_lua_scratch(L, ((size_t)n + 1) * sizeof *layer);
    for (size_t e = 0; e < ne; e++) {
        lua_rawgeti(L, 2, (lua_Integer)e + 1);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        lua_Integer from = lua_tointeger(L, -2), to = lua_tointeger(L, -1);
        if (from < 1 || from > n || to < 1 || to > n)
            return vyre_lua_fail(L, "arg",
                                 "%s: edge %d names a node outside 1..%d. Fix: number nodes from 1",
                                 fname, (int)e + 1, (int)n);
        if (from == to)
            return vyre_lua_fail(L, "arg",
                                 "%s: edge %d makes node %d depend on itself. Fix: drop the edge",
                                 fname, (int)e + 1, (int)from);
        d[e] = (struct vyre_mega_dep){(uint32_t)from - 1, (uint32_t)to - 1, 0, VYRE_DEP_RAW};
        lua_pop(L, 3);
    }
    uint32_t nl = 0;
    struct vyre_error err;
    enum vyre_status st = vyre_mega_layers((uint32_t)n, d, (uint32_t)ne, layer, &nl, &err);
    /* with ids in range and no self-dependency, VYRE_ERR_INVALID is a cycle */
    if (st != VYRE_OK && st != VYRE_ERR_INVALID) return vyre_lua_raise(L, fname, &err);
    lua_createtable(L, (int)n, 0);
    int k = 0;
    for (lua_Integer i = 0; i < n; i++) {
        if (st != VYRE_OK) {
            if (layer[i] == UINT32_MAX) {
                lua_pushinteger(L, i + 1);
                lua_rawseti(L, -2, ++k);
            }
            continue;
        }
        lua_pushinteger(L, (lua_Integer)layer[i] + 1);
        lua_rawseti(L, -2, i + 1);
    }
    if (st != VYRE_OK) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushinteger(L, nl);
    return 2;
}

/* The core functions of this file, into the table on top (the vyre.core module). */
void lvyre_mega_open(lua_State *L) {
    lua_pushcfunction(L, core_set_megakernel_policy);
    lua_setfield(L, -2, "set_megakernel_policy");
    lua_pushcfunction(L, core_set_plan_hook);
    lua_setfield(L, -2, "set_plan_hook");
    lua_pushcfunction(L, core_mega_layers);
    lua_setfield(L, -2, "mega_layers");
}
