/* lsequence.c — be:sequence(steps, opts): launches in order with one synchronisation
 * at the end, a prefix run once and the rest repeated, and ranged readback; and the
 * step reader that be:graph shares. On CUDA the steps go to vyre_cuda_sequence; on the
 * reference they run one after the other on the interpreter. */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

struct readback {
    struct lvyre_buffer *buf;
    uint64_t offset, nbytes;
    void *dst;
};

/* ---- static helpers ------------------------------------------------------ */

/* Reads opts {prefix =, times =, readback =, timed =}; rejects any other key. */
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
    static const char *const keys[] = {"prefix", "times", "readback", "timed", NULL};
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

/* Reads opts.readback = {buf | {buf, byte_offset, nbytes}, ...}: the destination arrays
 * go into a result list pushed on the stack. */
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
                      "0, 16}}",
                      fname, luaL_typename(L, rbt));
    struct readback *rb = vyre_lua_scratch(L, (nrb + 1) * sizeof *rb);
    lua_createtable(L, (int)nrb, 0);
    int res = lua_gettop(L);
    for (size_t i = 0; i < nrb; i++) {
        lua_geti(L, rbt, (lua_Integer)i + 1);
        int e = lua_gettop(L);
        struct lvyre_buffer *b = lvyre_testbuffer(L, e);
        lua_Integer off = 0, nbytes = -1;
        if (!b && lua_istable(L, e)) {
            lua_rawgeti(L, e, 1);
            b = lvyre_testbuffer(L, -1);
            lua_rawgeti(L, e, 2);
            off = vyre_lua_optint(L, -1, 0, fname, "a readback's byte offset",
                                  "write {buf, offset, nbytes} with integers");
            lua_rawgeti(L, e, 3);
            nbytes = vyre_lua_optint(L, -1, -1, fname, "a readback's byte count",
                                     "write {buf, offset, nbytes} with integers");
            lua_pop(L, 3);
        }
        if (!b || !b->live || b->be != be)
            vyre_lua_fail(L, "arg",
                          "%s: readback %d must be a live buffer of this backend or {buf, "
                          "byte_offset, nbytes}. Fix: e.g. readback = {{out, 0, 16}}",
                          fname, (int)i + 1);
        uint64_t es = vyre_type_size(b->type), total = b->count * es;
        if (off < 0 || (uint64_t)off > total)
            vyre_lua_fail(L, "arg",
                          "%s: readback %d: byte offset %I is outside the %I-byte buffer. Fix: "
                          "byte offsets start at 0",
                          fname, (int)i + 1, (LUAI_UACINT)off, (LUAI_UACINT)total);
        if (nbytes < 0) nbytes = (lua_Integer)(total - (uint64_t)off);
        if ((uint64_t)nbytes > total - (uint64_t)off || (uint64_t)off % es || (uint64_t)nbytes % es)
            vyre_lua_fail(L, "arg",
                          "%s: readback %d: range [%I, %I) must be whole %s elements inside the "
                          "buffer of %I bytes. Fix: read whole elements",
                          fname, (int)i + 1, (LUAI_UACINT)off, (LUAI_UACINT)(off + nbytes),
                          vyre_type_name(b->type), (LUAI_UACINT)total);
        struct vyre_lua_array *a = vyre_lua_newarray(L, b->type, (uint64_t)nbytes / es);
        lua_rawseti(L, res, (lua_Integer)i + 1);
        rb[i] = (struct readback){b, (uint64_t)off, (uint64_t)nbytes, a->data};
        lua_settop(L, e - 1);
    }
    *n = nrb;
    return rb;
}

static void run_reference(lua_State *L, struct lvyre_backend *be, struct lvyre_step *steps,
                          size_t n, size_t prefix, uint32_t times, const struct readback *rb,
                          size_t nrb, const char *fname) {
    for (size_t i = 0; i < prefix; i++) lvyre_kernel_run(L, steps[i].k, &steps[i].b, fname);
    for (uint32_t r = 0; r < times; r++)
        for (size_t i = prefix; i < n; i++) lvyre_kernel_run(L, steps[i].k, &steps[i].b, fname);
    for (size_t i = 0; i < nrb; i++) {
        if (rb[i].nbytes)
            memcpy(rb[i].dst, (const char *)rb[i].buf->host + rb[i].offset, (size_t)rb[i].nbytes);
        be->st.downloads++;
        be->st.bytes_down += rb[i].nbytes;
    }
    be->st.sequences++;
}

static void run_cuda(lua_State *L, struct lvyre_backend *be, struct lvyre_step *steps, size_t n,
                     size_t prefix, uint32_t times, const struct readback *rb, size_t nrb,
                     struct vyre_cuda_timing *t, const char *fname) {
    struct vyre_cuda_step *cs = vyre_lua_scratch(L, (n + 1) * sizeof *cs);
    vyre_cuda_buffer **bufs = vyre_lua_scratch(L, (n * VYRE_MAX_BUFFERS + 1) * sizeof *bufs);
    struct vyre_cuda_readback *crb = vyre_lua_scratch(L, (nrb + 1) * sizeof *crb);
    /* Steps with opts.n = 0 launch nothing: they are left out (the prefix counts only
     * the steps that stay). */
    size_t m = 0, mprefix = 0;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].b.empty) continue;
        cs[m].kernel = steps[i].k->cu;
        lvyre_cuda_args(steps[i].k, &steps[i].b, bufs + m * VYRE_MAX_BUFFERS, &cs[m].args);
        m++;
        if (i < prefix) mprefix = m;
    }
    for (size_t i = 0; i < nrb; i++)
        crb[i] = (struct vyre_cuda_readback){rb[i].buf->cu, rb[i].offset, rb[i].nbytes, rb[i].dst};
    struct vyre_error err;
    if (vyre_cuda_sequence(be->dev, cs, m, mprefix, times, crb, nrb, t, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
}

/* ---- shared helpers (lbackend.h) ----------------------------------------- */

struct lvyre_step *lvyre_read_steps(lua_State *L, int idx, struct lvyre_backend *be, size_t *n,
                                    const char *fname) {
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx))
        vyre_lua_fail(L, "arg",
                      "%s: steps must be a list of {kernel, args, opts} (got %s). Fix: e.g. "
                      "{{k, {x = buf}, {n = 1024}}}",
                      fname, luaL_typename(L, idx));
    size_t count = (size_t)luaL_len(L, idx);
    struct lvyre_step *steps = vyre_lua_scratch(L, (count + 1) * sizeof *steps);
    for (size_t i = 0; i < count; i++) {
        lua_geti(L, idx, (lua_Integer)i + 1);
        int st = lua_gettop(L);
        if (!lua_istable(L, st))
            vyre_lua_fail(L, "arg",
                          "%s: step %d must be {kernel, args, opts}. Fix: e.g. {{k, {x = buf}, "
                          "{n = 1024}}}",
                          fname, (int)i + 1);
        lua_rawgeti(L, st, 1);
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
    *n = count;
    return steps;
}

/* be:sequence(steps, {prefix =, times =, readback = {buf | {buf, off, nbytes}, ...},
 * timed =}) -> list of readback arrays [, timing]. steps[1..prefix] run once, the
 * rest `times` times (default 1), then the readbacks, with one final sync. */
int lvyre_backend_sequence(lua_State *L) {
    const char *fname = "vyre.Backend:sequence";
    struct lvyre_backend *be = lvyre_checkbackend(L, 1, fname);
    lua_settop(L, 3);
    lua_Integer prefix, times;
    bool timed;
    read_opts(L, 3, &prefix, &times, &timed, fname);
    size_t n = 0, nrb = 0;
    struct lvyre_step *steps = lvyre_read_steps(L, 2, be, &n, fname);
    if ((size_t)prefix > n)
        return vyre_lua_fail(L, "arg",
                             "%s: prefix %d is longer than the %d steps. Fix: prefix must be at "
                             "most #steps",
                             fname, (int)prefix, (int)n);
    struct readback *rb = read_readbacks(L, 3, be, &nrb, fname);
    int results = lua_gettop(L);
    struct vyre_cuda_timing t = {0, 0, 0, 0};
    if (be->kind == LVYRE_CUDA) {
        run_cuda(L, be, steps, n, (size_t)prefix, (uint32_t)times, rb, nrb, timed ? &t : NULL,
                 fname);
    } else {
        uint64_t t0 = lvyre_now_ns();
        run_reference(L, be, steps, n, (size_t)prefix, (uint32_t)times, rb, nrb, fname);
        t.wall_ns = t.device_ns = t.enqueue_ns = lvyre_now_ns() - t0;
    }
    lua_pushvalue(L, results);
    if (!timed) return 1;
    lvyre_pushtiming(L, &t);
    return 2;
}
