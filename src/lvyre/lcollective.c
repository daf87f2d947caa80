/* lcollective.c — vyre.Collective: one device's part of a collective as a step of
 * be:sequence, be:graph and g:sequence (docs/MULTIGPU.md, "Collectives as steps").
 * g:collective(name, ...) returns one step per device the group drives here, each
 * `{c}` with c a Collective, to be put in that device's step list next to kernel
 * steps: in the stream's order, so a round of compute + exchange is one sequence (or
 * one replayed graph) per device. In C a Collective is a kernel object whose launch
 * issues the NCCL call (vyre_nccl_step). User value 1 keeps the Group alive, user
 * value 2 the buffer lists. Also g:sequence, the lockstep runner for a group that
 * drives several devices from one process. */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

struct lvyre_collective {
    vyre_cuda_kernel *k;            /* NULL once freed */
    struct lvyre_buffer *src, *dst; /* its rank's buffers (user value 2 keeps them) */
    struct lvyre_group *g;          /* user value 1 keeps it */
};

static struct lvyre_collective *tocoll(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_COLLECTIVE);
}

void lvyre_collective_check(lua_State *L, const void *ud, const char *fname) {
    const struct lvyre_collective *c = ud;
    if (!c->k)
        vyre_lua_fail(L, "freed",
                      "%s: a collective step was freed. Fix: build it again with g:collective",
                      fname);
    if (!lvyre_group_live(c->g))
        vyre_lua_fail(L, "freed",
                      "%s: the group of a collective step was freed. Fix: keep the group "
                      "alive (no g:free()) while its steps are used",
                      fname);
    if (!c->src->live || (c->dst && !c->dst->live))
        vyre_lua_fail(L, "freed",
                      "%s: a buffer of a collective step was freed. Fix: keep the buffers "
                      "alive while steps use them",
                      fname);
}

vyre_cuda_kernel *lvyre_testcollective(lua_State *L, int idx, const void **ud, const char *fname) {
    struct lvyre_collective *c = luaL_testudata(L, idx, VYRE_LUA_COLLECTIVE);
    *ud = c;
    if (!c) return NULL;
    lvyre_collective_check(L, c, fname);
    return c->k;
}

static int coll_free(lua_State *L) {
    struct lvyre_collective *c = tocoll(L, 1);
    if (c->k) {
        vyre_cuda_kernel *k = c->k;
        c->k = NULL;
        vyre_cuda_kernel_free(k);
    }
    return 0;
}

static int coll_tostring(lua_State *L) {
    struct lvyre_collective *c = tocoll(L, 1);
    lua_pushfstring(L, "vyre.Collective(%s)", c->k ? vyre_cuda_kernel_name(c->k) : "freed");
    return 1;
}

static bool is_list(lua_State *L, int idx) {
    return lua_istable(L, idx) || luaL_testudata(L, idx, VYRE_LUA_BUFFER);
}

static enum vyre_nccl_op op_of(lua_State *L, int idx, const char *fname) {
    const char *s = luaL_optstring(L, idx, "add");
    if (strcmp(s, "add") == 0 || strcmp(s, "sum") == 0) return VYRE_NCCL_ADD;
    if (strcmp(s, "prod") == 0) return VYRE_NCCL_PROD;
    if (strcmp(s, "min") == 0) return VYRE_NCCL_MIN;
    if (strcmp(s, "max") == 0) return VYRE_NCCL_MAX;
    vyre_lua_fail(L, "arg", "%s: unknown op '%s'. Fix: \"add\", \"prod\", \"min\" or \"max\"",
                  fname, s);
    return VYRE_NCCL_ADD;
}

/* g:collective(name, <the arguments of g:name>) -> {step for g.backends[1], ...} */
int lvyre_group_collective(lua_State *L) {
    const char *f = "vyre.Group:collective";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    const char *name = luaL_checkstring(L, 2);
    static const char *const names[] = {"all_reduce", "broadcast",      "reduce",
                                        "all_gather", "reduce_scatter", "all_to_all",
                                        "send",       "recv",           NULL};
    int which = -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) which = i;
    if (which < 0)
        return vyre_lua_fail(L, "arg",
                             "%s: unknown collective '%s'. Fix: all_reduce, broadcast, reduce, "
                             "all_gather, reduce_scatter, all_to_all, send or recv",
                             f, name);
    enum vyre_nccl_coll coll = (enum vyre_nccl_coll)which;
    bool two = is_list(L, 4);
    int dst = 0, at = 4, root = 0;
    enum vyre_nccl_op op = VYRE_NCCL_ADD;
    switch (coll) {
    case VYRE_NCCL_ALL_GATHER:
    case VYRE_NCCL_ALL_TO_ALL: dst = 4; break;
    case VYRE_NCCL_REDUCE_SCATTER:
        dst = 4;
        op = op_of(L, 5, f);
        break;
    case VYRE_NCCL_SEND:
    case VYRE_NCCL_RECV:
        if (lvyre_group_local(g) != 1)
            return vyre_lua_fail(L, "unsupported",
                                 "%s: send and recv steps are for groups of one process per GPU. "
                                 "Fix: use vyre.cuda.group({rank =, size =, id =})",
                                 f);
        dst = coll == VYRE_NCCL_RECV ? 3 : 0;
        root = (int)vyre_lua_optint(L, 4, -1, f, "peer", "the other rank's number");
        break;
    default:
        if (two) {
            dst = 4;
            at = 5;
        }
        if (coll == VYRE_NCCL_ALL_REDUCE) op = op_of(L, at, f);
        else root = (int)vyre_lua_optint(L, at, 0, f, "root", "a rank number");
        if (coll == VYRE_NCCL_REDUCE) op = op_of(L, at + 1, f);
        break;
    }
    struct vyre_nccl_call calls[64];
    struct lvyre_buffer *bufs[128];
    int n = lvyre_group_calls(L, g, coll, 3, dst, op, root, calls, bufs, f);
    lua_createtable(L, n, 0);
    int out = lua_gettop(L);
    for (int i = 0; i < n; i++) {
        struct lvyre_collective *c = lua_newuserdatauv(L, sizeof *c, 2);
        c->k = NULL;
        c->src = bufs[2 * i];
        c->dst = bufs[2 * i + 1];
        c->g = g;
        luaL_setmetatable(L, VYRE_LUA_COLLECTIVE);
        lua_pushvalue(L, 1);
        lua_setiuservalue(L, -2, 1);
        lua_createtable(L, 2, 0);
        lua_pushvalue(L, 3);
        lua_rawseti(L, -2, 1);
        if (dst) {
            lua_pushvalue(L, dst);
            lua_rawseti(L, -2, 2);
        }
        lua_setiuservalue(L, -2, 2);
        struct vyre_error err;
        if (vyre_nccl_step(&calls[i], &c->k, &err) != VYRE_OK) return vyre_lua_raise(L, f, &err);
        lua_createtable(L, 1, 0); /* the step {c} */
        lua_insert(L, -2);
        lua_rawseti(L, -2, 1);
        lua_rawseti(L, out, i + 1);
    }
    return 1;
}

/* The CUDA steps of read steps (collectives included; steps with n = 0 left out),
 * in scratch memory pushed on the stack. */
struct vyre_cuda_step *lvyre_cuda_steps(lua_State *L, struct lvyre_step *steps, size_t n,
                                        size_t *m) {
    struct vyre_cuda_step *cs = vyre_lua_scratch(L, (n + 1) * sizeof *cs);
    struct lvyre_cuda_scratch *sc = vyre_lua_scratch(L, (n + 1) * sizeof *sc);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].coll) {
            memset(&cs[k], 0, sizeof cs[k]);
            cs[k++].kernel = steps[i].coll;
            continue;
        }
        if (steps[i].b.empty) continue;
        cs[k].kernel = steps[i].k->cu;
        lvyre_cuda_args(steps[i].k, &steps[i].b, &sc[k], &cs[k].args);
        k++;
    }
    *m = k;
    return cs;
}

/* g:sequence({steps for g.backends[1], ...} [, {times = n}]) -> g: every list on its
 * device, collectives of all devices issued together; waits (with the timeout). */
int lvyre_group_sequence(lua_State *L) {
    const char *f = "vyre.Group:sequence";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 3);
    lua_Integer times = 1;
    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "times");
        times = vyre_lua_optint(L, -1, 1, f, "opts.times", "{times = 10}");
        lua_pop(L, 1);
    }
    if (times < 0 || times > (lua_Integer)UINT32_MAX)
        return vyre_lua_fail(L, "arg", "%s: opts.times must be >= 0. Fix: {times = 10}", f);
    int n = lvyre_group_local(g);
    if ((int)luaL_len(L, 2) != n)
        return vyre_lua_fail(L, "arg",
                             "%s: %d step lists for %d devices. Fix: one list per entry of "
                             "g.backends, in that order",
                             f, (int)luaL_len(L, 2), n);
    const struct vyre_cuda_step *lists[64];
    size_t counts[64];
    vyre_cuda_device *devs[64];
    lua_getiuservalue(L, 1, 1);
    int bes = lua_gettop(L);
    for (int i = 0; i < n; i++) {
        lua_geti(L, bes, i + 1);
        struct lvyre_backend *be = lvyre_checkbackend(L, -1, f);
        lua_geti(L, 2, i + 1);
        size_t ns = 0;
        struct lvyre_step *steps = lvyre_read_steps(L, -1, be, &ns, f);
        lists[i] = lvyre_cuda_steps(L, steps, ns, &counts[i]);
        devs[i] = be->dev;
    }
    struct vyre_error err;
    if (vyre_nccl_sequence(devs, (size_t)n, lists, counts, (uint32_t)times, &err) != VYRE_OK)
        return vyre_lua_raise(L, f, &err);
    lua_settop(L, 1);
    return 1;
}

static const luaL_Reg coll_methods[] = {{"free", coll_free}, {NULL, NULL}};

static const luaL_Reg coll_meta[] = {
    {"__gc", coll_free}, {"__close", coll_free}, {"__tostring", coll_tostring}, {NULL, NULL}};

void vyre_lua_open_collective(lua_State *L) {
    vyre_lua_newclass(L, VYRE_LUA_COLLECTIVE, coll_methods, coll_meta);
}
