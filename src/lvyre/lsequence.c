/* lsequence.c — be:sequence(steps, opts): launches in order with one synchronisation
 * at the end, a prefix run once and the rest repeated, and ranged readback; and the
 * step reader that be:graph shares. The steps go to vyre_backend_sequence on every
 * backend (vyre_backend.h). Collective steps (g:collective) are a CUDA device's own
 * kernels, not the interface's: a sequence with one runs on that device's
 * vyre_cuda_sequence (run_collectives). */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

struct readback {
    struct lvyre_buffer *buf;
    uint64_t first, count; /* elements, 0-based */
    void *dst;
};

/* ---- static helpers ------------------------------------------------------ */

/* Reads opts {prefix =, times =, readback =, timed =} (converge is lrounds.c's); rejects any
 * other key. */
static void read_opts(lua_State *L, int opts, lua_Integer *prefix, lua_Integer *times, bool *timed,
                      const char *fname) {
    *prefix = 0;
    *times = 1;
    *timed = false;
    if (lua_isnoneornil(L, opts)) return;
    if (!lua_istable(L, opts))
        vyre_lua_fail(L, "type",
                      "%s: opts must be a table (got %s). Fix: {times = 10, readback = {buf}}",
                      fname, luaL_typename(L, opts));
    static const char *const keys[] = {"prefix", "times", "readback", "timed", "converge", NULL};
    vyre_lua_checkopts(L, opts, keys, fname);
    for (int i = 0; i < 2; i++) {
        if (lua_getfield(L, opts, keys[i]) != LUA_TNIL) {
            int isnum = 0;
            lua_Integer v = lua_tointegerx(L, -1, &isnum);
            if (!isnum || v < 0 || v > (lua_Integer)UINT32_MAX)
                vyre_lua_fail(L, "type",
                              "%s: opts.%s must be an integer >= 0 (got %s). Fix: {prefix = 1, "
                              "times = 10}",
                              fname, keys[i], luaL_tolstring(L, -1, NULL));
            *(i == 0 ? prefix : times) = v;
        }
        lua_pop(L, 1);
    }
    lua_getfield(L, opts, "timed");
    *timed = lua_toboolean(L, -1);
    lua_pop(L, 1);
}

/* Reads opts.readback = {buf | {buf, first, count}, ...}: element ranges, first 1-based
 * and count defaulting to the rest, as buf:download{first =, count =} takes them. The
 * destination arrays go into a result list pushed on the stack. */
static struct readback *read_readbacks(lua_State *L, int opts, struct lvyre_backend *be, size_t *n,
                                       const char *fname) {
    int rbt = 0;
    if (!lua_isnoneornil(L, opts)) {
        lua_getfield(L, opts, "readback");
        rbt = lua_gettop(L);
    }
    size_t nrb = rbt && lua_istable(L, rbt) ? (size_t)luaL_len(L, rbt) : 0;
    if (rbt && !lua_isnil(L, rbt) && !lua_istable(L, rbt))
        vyre_lua_fail(L, "arg",
                      "%s: opts.readback must be a list (got %s). Fix: readback = {buf, {buf2, "
                      "1, 4}}",
                      fname, luaL_typename(L, rbt));
    struct readback *rb = vyre_lua_scratch(L, (nrb + 1) * sizeof *rb);
    lua_createtable(L, (int)nrb, 0);
    int res = lua_gettop(L);
    for (size_t i = 0; i < nrb; i++) {
        lua_geti(L, rbt, (lua_Integer)i + 1);
        int e = lua_gettop(L);
        struct lvyre_buffer *b = lvyre_testbuffer(L, e);
        lua_Integer first = 1, count = -1;
        if (!b && lua_istable(L, e)) {
            lua_rawgeti(L, e, 1);
            b = lvyre_testbuffer(L, -1);
            lua_rawgeti(L, e, 2);
            first = vyre_lua_optint(L, -1, 1, fname, "a readback's first element",
                                    "write {buf, first, count} with integers (elements)");
            lua_rawgeti(L, e, 3);
            count = vyre_lua_optint(L, -1, -1, fname, "a readback's element count",
                                    "write {buf, first, count} with integers (elements)");
            lua_pop(L, 3);
        }
        if (!b || !b->live || b->be != be)
            vyre_lua_fail(L, "arg",
                          "%s: readback %d must be a live buffer of this backend or {buf, first, "
                          "count}. Fix: e.g. readback = {{out, 1, 4}} (elements 1..4)",
                          fname, (int)i + 1);
        uint64_t total = b->count;
        if (first < 1 || (uint64_t)first > total + 1)
            vyre_lua_fail(
                L, "arg",
                "%s: readback %d: first element %I is outside the buffer of %I elements. "
                "Fix: ranges are in elements, first from 1 to #buf (count defaults to the "
                "rest)",
                fname, (int)i + 1, (LUAI_UACINT)first, (LUAI_UACINT)total);
        uint64_t f0 = (uint64_t)first - 1;
        if (count < 0) count = (lua_Integer)(total - f0);
        if ((uint64_t)count > total - f0)
            vyre_lua_fail(L, "arg",
                          "%s: readback %d: elements %I..%I run past the end of the buffer of %I "
                          "elements. Fix: ranges are {buf, first, count} in elements; keep first + "
                          "count - 1 <= #buf",
                          fname, (int)i + 1, (LUAI_UACINT)first, (LUAI_UACINT)(first + count - 1),
                          (LUAI_UACINT)total);
        struct vyre_lua_array *a = vyre_lua_newarray(L, b->type, (uint64_t)count);
        lua_rawseti(L, res, (lua_Integer)i + 1);
        rb[i] = (struct readback){b, f0, (uint64_t)count, a->data};
        lua_settop(L, e - 1);
    }
    *n = nrb;
    return rb;
}

/* The interface's steps bs (lvyre_backend_steps of steps), readbacks and options through
 * vyre_backend_sequence (one synchronisation); t may be NULL. The kernels' converge
 * rounds are the backend's afterwards (k:rounds). */
static void run_interface(lua_State *L, struct lvyre_backend *be, struct lvyre_step *steps,
                          size_t n, const struct vyre_backend_step *bs, size_t m, size_t mprefix,
                          uint32_t times, const struct readback *rb, size_t nrb,
                          struct vyre_timing *t, const char *fname) {
    struct vyre_backend_readback *brb = vyre_lua_scratch(L, (nrb + 1) * sizeof *brb);
    for (size_t i = 0; i < nrb; i++)
        brb[i] = (struct vyre_backend_readback){rb[i].buf->h, rb[i].first, rb[i].count, rb[i].dst};
    struct vyre_sequence_options o = {mprefix, times, brb, nrb, t};
    struct vyre_error err;
    for (size_t i = 0; i < n; i++)
        if (steps[i].k) lvyre_bound_check(L, steps[i].k, &steps[i].b, fname);
    bool guarded = lvyre_refguard_enter(be, &err); /* Ctrl-C stops an interpreter run */
    enum vyre_status st = vyre_backend_sequence(be->core, bs, m, &o, &err);
    lvyre_refguard_leave(guarded, st, &err);
    if (st != VYRE_OK) vyre_lua_raise(L, fname, &err);
    for (size_t i = 0; i < n; i++) /* an overflow the backend knows right away */
        if (steps[i].k) lvyre_bound_check(L, steps[i].k, &steps[i].b, fname);
}

static void run_collectives(lua_State *L, struct lvyre_backend *be, struct lvyre_step *steps,
                            size_t n, size_t prefix, uint32_t times, const struct readback *rb,
                            size_t nrb, struct vyre_timing *t, const char *fname) {
    struct vyre_cuda_readback *crb = vyre_lua_scratch(L, (nrb + 1) * sizeof *crb);
    /* Steps with opts.n = 0 launch nothing: they are left out (the prefix counts only
     * the steps that stay). */
    size_t m = 0, mprefix = 0;
    struct vyre_cuda_step *cs = lvyre_cuda_steps(L, steps, n, &m);
    for (size_t i = 0, kept = 0; i < prefix; i++)
        if (steps[i].coll || !steps[i].b.empty) mprefix = ++kept;
    for (size_t i = 0; i < nrb; i++)
        crb[i] = (struct vyre_cuda_readback){rb[i].buf->cu, rb[i].first, rb[i].count, rb[i].dst};
    struct vyre_error err;
    struct vyre_cuda_sequence_options o = {mprefix, times, crb, nrb, t};
    if (vyre_cuda_sequence(be->dev, cs, m, &o, &err) != VYRE_OK) vyre_lua_raise(L, fname, &err);
}

/* Scratch memory for n records of size sz pushed on the stack, NOT zeroed (unlike
 * vyre_lua_scratch): a step's bound arguments are ~3 KiB (every slot of every kind) of
 * which a launch fills and reads only its layout's slots, and zeroing them all was the
 * largest cost of reading a step list (about 8 k instructions per step under callgrind).
 * Callers initialise every field they read. */
static void *raw_scratch(lua_State *L, size_t n, size_t sz) {
    return lua_newuserdatauv(L, (n + 1) * sz, 0);
}

/* be:sequence's step memory, kept between calls: the steps, the interface's steps and
 * their argument slots of a list of ~20 launches come to ~90 KiB, and a new userdata of
 * that size per call (an e-graph iteration makes ~11) drove the collector to run several
 * times as often as the Lua that builds the steps does (callgrind: ~1 M instructions per
 * iteration). One block per Lua state, grown on demand (up to SEQ_KEEP bytes; a longer
 * list gets memory of its own). A call that finds it in use (a finalizer or metamethod
 * running be:sequence while one reads its steps) takes memory of its own; the block is
 * released by a to-be-closed slot, so an error leaves it free too. */
#define SEQ_KEEP ((size_t)4 << 20)
struct seq_block {
    bool busy;
    size_t cap; /* bytes of the memory userdata (its user value 1) */
};
static const char *const SEQ_BLOCK = "vyre.SequenceMemory";

static int seq_block_close(lua_State *L) {
    struct seq_block *sb = luaL_checkudata(L, 1, SEQ_BLOCK);
    sb->busy = false;
    return 0;
}

static size_t round16(size_t x) { return (x + 15) & ~(size_t)15; }

/* Memory for bytes, not zeroed: the kept block (its holder pushed and marked to be
 * closed) or, when that is in use or bytes is past SEQ_KEEP, a userdata of its own
 * (pushed). */
static void *seq_memory(lua_State *L, size_t bytes) {
    if (bytes > SEQ_KEEP) return lua_newuserdatauv(L, bytes, 0);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, SEQ_BLOCK) != LUA_TUSERDATA) {
        lua_pop(L, 1);
        struct seq_block *nb = lua_newuserdatauv(L, sizeof *nb, 1);
        nb->busy = false;
        nb->cap = 0;
        if (luaL_newmetatable(L, SEQ_BLOCK)) {
            lua_pushcfunction(L, seq_block_close);
            lua_setfield(L, -2, "__close");
        }
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, SEQ_BLOCK);
    }
    struct seq_block *sb = lua_touserdata(L, -1);
    if (sb->busy) {
        lua_pop(L, 1);
        return lua_newuserdatauv(L, bytes, 0);
    }
    if (sb->cap < bytes) {
        size_t cap = bytes < 2 * sb->cap ? 2 * sb->cap : bytes;
        if (cap > SEQ_KEEP) cap = SEQ_KEEP;
        lua_newuserdatauv(L, cap, 0);
        lua_setiuservalue(L, -2, 1);
        sb->cap = cap;
    }
    lua_getiuservalue(L, -1, 1);
    void *mem = lua_touserdata(L, -1);
    lua_pop(L, 1);
    sb->busy = true;
    lua_toclose(L, -1); /* frees the block when be:sequence returns or raises */
    return mem;
}

/* ---- shared helpers (lbackend.h) ----------------------------------------- */

/* The interface's steps of steps[0..n) into bs and args (n + 1 each); false when a step
 * is a collective. */
static bool backend_steps_into(const struct lvyre_step *steps, size_t n, size_t prefix,
                               struct vyre_backend_step *bs, struct lvyre_args *args, size_t *m,
                               size_t *mprefix) {
    for (size_t i = 0; i < n; i++)
        if (steps[i].coll) return false;
    size_t k = 0, kp = 0;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].b.empty) continue; /* opts.n = 0: launches nothing */
        bs[k].kernel = steps[i].k->h;
        lvyre_backend_args(steps[i].k, &steps[i].b, &args[k], &bs[k].args);
        k++;
        if (i < prefix) kp = k;
    }
    *m = k;
    *mprefix = kp;
    return true;
}

struct vyre_backend_step *lvyre_backend_steps(lua_State *L, const struct lvyre_step *steps,
                                              size_t n, size_t prefix, size_t *m, size_t *mprefix) {
    for (size_t i = 0; i < n; i++)
        if (steps[i].coll) return NULL;
    struct vyre_backend_step *bs = vyre_lua_scratch(L, (n + 1) * sizeof *bs);
    /* lvyre_backend_args fills the layout's slots, the only ones the backend reads */
    struct lvyre_args *args = raw_scratch(L, n, sizeof *args);
    backend_steps_into(steps, n, prefix, bs, args, m, mprefix);
    return bs;
}

/* The number of steps in the list at idx (absolute), which must be a table. */
static size_t steps_count(lua_State *L, int idx, const char *fname) {
    if (!lua_istable(L, idx))
        vyre_lua_fail(L, "arg",
                      "%s: steps must be a list of {kernel, args, opts} (got %s). Fix: e.g. "
                      "{{k, {x = buf}, {n = 1024}}}",
                      fname, luaL_typename(L, idx));
    return (size_t)luaL_len(L, idx);
}

/* Reads the count steps of the list at idx (absolute) into steps. Not zeroed first: each
 * step's fields are set here and lvyre_match sets the bound slots of the kernel's layout
 * (every reader of a bound goes by the layout's counts). */
static void read_steps_into(lua_State *L, int idx, struct lvyre_backend *be, size_t count,
                            struct lvyre_step *steps, const char *fname) {
    for (size_t i = 0; i < count; i++) {
        steps[i].k = NULL;
        steps[i].coll = NULL;
        steps[i].collud = NULL;
        lua_geti(L, idx, (lua_Integer)i + 1);
        int st = lua_gettop(L);
        if (!lua_istable(L, st))
            vyre_lua_fail(L, "arg",
                          "%s: step %d must be {kernel, args, opts}. Fix: e.g. {{k, {x = buf}, "
                          "{n = 1024}}}",
                          fname, (int)i + 1);
        lua_rawgeti(L, st, 1);
        steps[i].coll = lvyre_testcollective(L, st + 1, &steps[i].collud, fname);
        if (steps[i].coll) { /* a collective step {c} of g:collective */
            if (!be->dev || vyre_cuda_kernel_device(steps[i].coll) != be->dev) /* native */
                vyre_lua_fail(L, "backend",
                              "%s: step %d is a collective of another device. Fix: put step i "
                              "of g:collective(...) into the steps of g.backends[i]",
                              fname, (int)i + 1);
            steps[i].k = NULL;
            memset(&steps[i].b, 0, sizeof steps[i].b);
            lua_settop(L, st - 1);
            continue;
        }
        struct lvyre_kernel *k = lvyre_checkkernel(L, st + 1, fname);
        lvyre_kernel_program(L, k, fname);
        if (k->be != be)
            vyre_lua_fail(L, "backend",
                          "%s: step %d's kernel was compiled by another backend object. Fix: "
                          "compile it with this backend's be:compile(p)",
                          fname, (int)i + 1);
        lua_rawgeti(L, st, 2);
        lua_rawgeti(L, st, 3);
        steps[i].k = k;
        lvyre_match(L, st + 2, st + 3, k->lay, be, LVYRE_MATCH_LAUNCH, &steps[i].b, fname);
        uint32_t grid[3];
        lvyre_kernel_grid(L, k, &steps[i].b, grid, fname);
        lua_settop(L, st - 1); /* the steps table keeps kernels and buffers alive */
    }
}

struct lvyre_step *lvyre_read_steps(lua_State *L, int idx, struct lvyre_backend *be, size_t *n,
                                    const char *fname) {
    idx = lua_absindex(L, idx);
    size_t count = steps_count(L, idx, fname);
    struct lvyre_step *steps = raw_scratch(L, count, sizeof *steps);
    read_steps_into(L, idx, be, count, steps, fname);
    *n = count;
    return steps;
}

/* be:sequence(steps, {prefix =, times =, readback = {buf | {buf, first, count}, ...},
 * timed =}) -> list of readback arrays [, timing]. steps[1..prefix] run once, the
 * rest `times` times (default 1), then the readbacks, with one final sync. */
int lvyre_backend_sequence(lua_State *L) {
    const char *fname = "vyre.Backend:sequence";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    lua_settop(L, 3);
    lua_Integer prefix, times;
    bool timed;
    read_opts(L, 3, &prefix, &times, &timed, fname);
    size_t nrb = 0;
    /* one block: the steps, the interface's steps and their argument slots */
    size_t n = steps_count(L, 2, fname);
    size_t s1 = round16((n + 1) * sizeof(struct lvyre_step));
    size_t s2 = round16((n + 1) * sizeof(struct vyre_backend_step));
    char *mem = seq_memory(L, s1 + s2 + (n + 1) * sizeof(struct lvyre_args));
    struct lvyre_step *steps = (struct lvyre_step *)mem;
    read_steps_into(L, 2, be, n, steps, fname);
    if ((size_t)prefix > n)
        return vyre_lua_fail(L, "arg",
                             "%s: prefix %d is longer than the %d steps. Fix: prefix must be at "
                             "most #steps",
                             fname, (int)prefix, (int)n);
    struct lvyre_worklist *wl = NULL;
    uint32_t max = 0;
    bool conv = lvyre_read_wl_converge(L, 3, be, &wl, &max, fname);
    if (!conv && !lua_isnoneornil(L, 3) && (lua_getfield(L, 3, "converge"), !lua_isnil(L, -1)))
        return vyre_lua_fail(L, "arg",
                             "%s: opts.converge must be {worklist = wl, max = N}. Fix: "
                             "{converge = {worklist = wl, max = 1000}}",
                             fname);
    struct readback *rb = read_readbacks(L, 3, be, &nrb, fname);
    int results = lua_gettop(L);
    struct vyre_timing t = {0, 0, 0, 0};
    struct vyre_backend_step *bs;
    size_t m = 0, mprefix = 0;
    if (conv) { /* rounds until one pushes nothing (lrounds.c), then the readbacks */
        uint64_t rounds =
            lvyre_rounds_by_worklist(L, be, steps, n, (size_t)prefix, wl, max, &t, fname);
        struct vyre_timing tr = {0, 0, 0, 0};
        run_interface(L, be, steps, 0, NULL, 0, 0, 0, rb, nrb, &tr, fname);
        t.wall_ns += tr.wall_ns;
        lua_pushinteger(L, (lua_Integer)rounds);
        lua_setfield(L, results, "rounds");
    } else if (backend_steps_into(steps, n, (size_t)prefix,
                                  bs = (struct vyre_backend_step *)(mem + s1),
                                  (struct lvyre_args *)(mem + s1 + s2), &m, &mprefix)) {
        run_interface(L, be, steps, n, bs, m, mprefix, (uint32_t)times, rb, nrb, timed ? &t : NULL,
                      fname);
    } else { /* collectives: a CUDA device's own steps (see the top) */
        run_collectives(L, be, steps, n, (size_t)prefix, (uint32_t)times, rb, nrb,
                        timed ? &t : NULL, fname);
    }
    lua_pushvalue(L, results);
    if (!timed) return 1;
    lvyre_pushtiming(L, &t);
    return 2;
}
