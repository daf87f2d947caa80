/* lgroup.c — vyre.Group: NCCL communicators over CUDA backends (docs/MULTIGPU.md).
 * One process many devices (core.cuda_group(backends)) or one rank of a group of
 * processes (core.cuda_group_rank(be, rank, size, id)); collectives on lists of
 * Buffers, one per device the group drives here, checked in full before anything is
 * enqueued; g:collective builds the per-device steps that be:sequence / be:graph /
 * g:sequence take (lcollective.c). Also the module functions nccl() and nccl_id(),
 * buf:copy_to (peer copies) and the `peers` table of be:info().
 * User value 1 of a Group is the list of its backends (g.backends), which keeps them
 * alive while the communicators use their devices. */
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

#define MAX_LOCAL 64

struct lvyre_group {
    bool live;
    int n;    /* devices driven by this process */
    int size; /* ranks in the group */
    int rank; /* the first local rank */
    vyre_nccl_comm *comms[MAX_LOCAL];
};

static struct lvyre_group *togroup(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_GROUP);
}

struct lvyre_group *lvyre_checkgroup(lua_State *L, int idx, const char *fname) {
    struct lvyre_group *g = togroup(L, idx);
    if (!g->live)
        vyre_lua_fail(L, "freed",
                      "%s: the group was freed. Fix: open a new one with vyre.cuda.group", fname);
    return g;
}

int lvyre_group_local(const struct lvyre_group *g) { return g->n; }
bool lvyre_group_live(const struct lvyre_group *g) { return g->live; }

static int group_free(lua_State *L) {
    struct lvyre_group *g = togroup(L, 1);
    if (!g->live) return 0;
    g->live = false;
    for (int i = 0; i < g->n; i++) {
        vyre_nccl_comm_free(g->comms[i]);
        g->comms[i] = NULL;
    }
    return 0;
}

/* Pushes a new Group with the backends list at idx as user value 1. */
static struct lvyre_group *new_group(lua_State *L, int list) {
    struct lvyre_group *g = lua_newuserdatauv(L, sizeof *g, 1);
    memset(g, 0, sizeof *g);
    luaL_setmetatable(L, VYRE_LUA_GROUP);
    lua_pushvalue(L, list);
    lua_setiuservalue(L, -2, 1);
    return g;
}

/* The timeout (seconds) at idx and the blocking choice (nil: the default) at idx + 1. */
static struct vyre_nccl_options opt_nccl(lua_State *L, int idx, const char *fname) {
    struct vyre_nccl_options o = {0, VYRE_NCCL_MODE_DEFAULT};
    if (!lua_isnoneornil(L, idx)) {
        if (!lua_isnumber(L, idx) || lua_tonumber(L, idx) <= 0)
            vyre_lua_fail(L, "arg",
                          "%s: timeout must be a number of seconds > 0. Fix: {timeout = 60}",
                          fname);
        o.timeout_s = (double)lua_tonumber(L, idx);
    }
    if (!lua_isnoneornil(L, idx + 1)) {
        if (!lua_isboolean(L, idx + 1))
            vyre_lua_fail(L, "arg", "%s: blocking must be true or false. Fix: {blocking = true}",
                          fname);
        o.mode = lua_toboolean(L, idx + 1) ? VYRE_NCCL_BLOCKING : VYRE_NCCL_NONBLOCKING;
    }
    return o;
}

/* core.cuda_group(backends [, timeout [, blocking]]) -> Group: one process, one rank per
 * backend. */
static int cuda_group(lua_State *L) {
    const char *fname = "vyre.cuda.group";
    luaL_checktype(L, 1, LUA_TTABLE);
    struct vyre_nccl_options o = opt_nccl(L, 2, fname);
    int n = (int)luaL_len(L, 1);
    if (n < 1 || n > MAX_LOCAL)
        return vyre_lua_fail(
            L, "arg", "%s: give 1 to %d device ordinals (got %d). Fix: vyre.cuda.group({0, 1})",
            fname, MAX_LOCAL, n);
    vyre_cuda_device *devs[MAX_LOCAL];
    for (int i = 0; i < n; i++) {
        lua_geti(L, 1, i + 1);
        devs[i] = lvyre_cuda_device(L, lvyre_checkbackend(L, -1, fname), fname);
        lua_pop(L, 1);
    }
    struct lvyre_group *g = new_group(L, 1);
    struct vyre_error err;
    if (vyre_nccl_init_all(devs, n, &o, g->comms, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    g->n = n;
    g->size = n;
    g->rank = 0;
    g->live = true;
    return 1;
}

/* core.cuda_group_rank(be, rank, size, id [, timeout [, blocking]]) -> Group: this
 * process's rank. */
static int cuda_group_rank(lua_State *L) {
    const char *fname = "vyre.cuda.group";
    vyre_cuda_device *d = lvyre_cuda_device(L, lvyre_checkbackend(L, 1, fname), fname);
    int rank = (int)luaL_checkinteger(L, 2), size = (int)luaL_checkinteger(L, 3);
    const char *id = luaL_checkstring(L, 4);
    struct vyre_nccl_options o = opt_nccl(L, 5, fname);
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, 1);
    struct lvyre_group *g = new_group(L, lua_gettop(L));
    struct vyre_error err;
    if (vyre_nccl_init_rank(d, rank, size, id, &o, &g->comms[0], &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    g->n = 1;
    g->size = size;
    g->rank = rank;
    g->live = true;
    return 1;
}

static enum vyre_nccl_op check_op(lua_State *L, int idx, const char *fname) {
    const char *s = luaL_optstring(L, idx, "add");
    if (strcmp(s, "add") == 0 || strcmp(s, "sum") == 0) return VYRE_NCCL_ADD;
    if (strcmp(s, "prod") == 0) return VYRE_NCCL_PROD;
    if (strcmp(s, "min") == 0) return VYRE_NCCL_MIN;
    if (strcmp(s, "max") == 0) return VYRE_NCCL_MAX;
    vyre_lua_fail(L, "arg", "%s: unknown op '%s'. Fix: \"add\", \"prod\", \"min\" or \"max\"",
                  fname, s);
    return VYRE_NCCL_ADD;
}

/* The i-th (0-based) Buffer of the list at idx (a single Buffer counts as a list of one
 * for a group with one local device); checked against the group's i-th backend. */
static struct lvyre_buffer *list_buffer(lua_State *L, struct lvyre_group *g, int idx, int i,
                                        const char *what, const char *fname) {
    struct lvyre_buffer *b = lvyre_testbuffer(L, idx);
    if (!b) {
        if (!lua_istable(L, idx))
            vyre_lua_fail(L, "type",
                          "%s: %s must be a list of Buffers, one per device of the group (got %s). "
                          "Fix: {buf_on_dev0, buf_on_dev1, ...} in the order of g.backends",
                          fname, what, luaL_typename(L, idx));
        int len = (int)luaL_len(L, idx);
        if (len != g->n)
            vyre_lua_fail(L, "arg",
                          "%s: %s has %d Buffers but the group drives %d devices here. Fix: one "
                          "Buffer per entry of g.backends, in that order",
                          fname, what, len, g->n);
        lua_geti(L, idx, i + 1);
        b = lvyre_testbuffer(L, -1);
        lua_pop(L, 1); /* the list keeps it alive */
        if (!b)
            vyre_lua_fail(L, "type", "%s: %s[%d] is not a Buffer. Fix: one Buffer per device",
                          fname, what, i + 1);
    } else if (g->n != 1) {
        vyre_lua_fail(L, "arg",
                      "%s: %s is one Buffer but the group drives %d devices here. Fix: pass a "
                      "list, one Buffer per entry of g.backends",
                      fname, what, g->n);
    }
    if (!b->live)
        vyre_lua_fail(L, "freed",
                      "%s: %s[%d] was freed. Fix: keep buffers alive while collectives use them",
                      fname, what, i + 1);
    if (!b->cu || b->be->dev != vyre_nccl_comm_device(g->comms[i])) /* native: NCCL's */
        vyre_lua_fail(L, "backend",
                      "%s: %s[%d] belongs to another backend than g.backends[%d]. Fix: make it "
                      "with g.backends[%d]:buffer(...)",
                      fname, what, i + 1, i + 1, i + 1);
    return b;
}

/* Builds the group's calls of one collective from (src list, dst list or nil). */
int lvyre_group_calls(lua_State *L, struct lvyre_group *g, enum vyre_nccl_coll coll, int src,
                      int dst, enum vyre_nccl_op op, int root, struct vyre_nccl_call *calls,
                      struct lvyre_buffer **bufs, const char *fname) {
    bool has_dst = dst && !lua_isnoneornil(L, dst);
    for (int i = 0; i < g->n; i++) {
        struct lvyre_buffer *s =
            list_buffer(L, g, src, i, coll == VYRE_NCCL_RECV ? "bufs" : "src", fname);
        struct lvyre_buffer *d = has_dst ? list_buffer(L, g, dst, i, "dst", fname) : NULL;
        calls[i].coll = coll;
        calls[i].comm = g->comms[i];
        calls[i].op = op;
        calls[i].root = root;
        calls[i].src = s->cu;
        calls[i].dst = d ? d->cu : NULL;
        if (bufs) {
            bufs[2 * i] = s;
            bufs[2 * i + 1] = d;
        }
    }
    return g->n;
}

/* Checks then issues; raises naming fname with NCCL's error text. */
static int issue(lua_State *L, struct lvyre_group *g, enum vyre_nccl_coll coll, int src, int dst,
                 enum vyre_nccl_op op, int root, const char *fname) {
    struct vyre_nccl_call calls[MAX_LOCAL];
    int n = lvyre_group_calls(L, g, coll, src, dst, op, root, calls, NULL, fname);
    struct vyre_error err;
    if (vyre_nccl_issue(calls, (size_t)n, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

static int root_arg(lua_State *L, int idx, const char *fname) {
    return (int)vyre_lua_optint(L, idx, 0, fname, "root", "a rank number, 0 .. g.size - 1");
}

/* Collectives: g:NAME(...) -> g (asynchronous on each device's stream). */
static int group_all_reduce(lua_State *L) {
    const char *f = "vyre.Group:all_reduce";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    /* g:all_reduce(bufs [, op]) in place, or g:all_reduce(src, dst [, op]) */
    bool two = lua_istable(L, 3) || lvyre_testbuffer(L, 3);
    return issue(L, g, VYRE_NCCL_ALL_REDUCE, 2, two ? 3 : 0, check_op(L, two ? 4 : 3, f), 0, f);
}
static int group_broadcast(lua_State *L) {
    const char *f = "vyre.Group:broadcast";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    bool two = lua_istable(L, 3) || lvyre_testbuffer(L, 3);
    return issue(L, g, VYRE_NCCL_BROADCAST, 2, two ? 3 : 0, VYRE_NCCL_ADD,
                 root_arg(L, two ? 4 : 3, f), f);
}
static int group_reduce(lua_State *L) {
    const char *f = "vyre.Group:reduce";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    bool two = lua_istable(L, 3) || lvyre_testbuffer(L, 3);
    int at = two ? 4 : 3;
    return issue(L, g, VYRE_NCCL_REDUCE, 2, two ? 3 : 0, check_op(L, at + 1, f), root_arg(L, at, f),
                 f);
}
static int group_all_gather(lua_State *L) {
    const char *f = "vyre.Group:all_gather";
    return issue(L, lvyre_checkgroup(L, 1, f), VYRE_NCCL_ALL_GATHER, 2, 3, VYRE_NCCL_ADD, 0, f);
}
static int group_reduce_scatter(lua_State *L) {
    const char *f = "vyre.Group:reduce_scatter";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    return issue(L, g, VYRE_NCCL_REDUCE_SCATTER, 2, 3, check_op(L, 4, f), 0, f);
}
static int group_all_to_all(lua_State *L) {
    const char *f = "vyre.Group:all_to_all";
    return issue(L, lvyre_checkgroup(L, 1, f), VYRE_NCCL_ALL_TO_ALL, 2, 3, VYRE_NCCL_ADD, 0, f);
}
static int point_to_point(lua_State *L, enum vyre_nccl_coll coll, const char *f) {
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    if (g->n != 1)
        return vyre_lua_fail(L, "unsupported",
                             "%s: send and recv are for groups of one process per GPU (this one "
                             "drives %d devices). Fix: use buf:copy_to(dst) between devices of "
                             "one process, or vyre.cuda.group({rank =, size =, id =})",
                             f, g->n);
    int peer = (int)vyre_lua_optint(L, 3, -1, f, "peer", "the other rank's number");
    return issue(L, g, coll, 2, coll == VYRE_NCCL_RECV ? 2 : 0, VYRE_NCCL_ADD, peer, f);
}
static int group_send(lua_State *L) { return point_to_point(L, VYRE_NCCL_SEND, "vyre.Group:send"); }
static int group_recv(lua_State *L) { return point_to_point(L, VYRE_NCCL_RECV, "vyre.Group:recv"); }

/* g:synchronize() -> g: waits for every local device, with the group's timeout. */
static int group_synchronize(lua_State *L) {
    const char *f = "vyre.Group:synchronize";
    struct lvyre_group *g = lvyre_checkgroup(L, 1, f);
    struct vyre_error err;
    if (vyre_nccl_wait(g->comms, (size_t)g->n, &err) != VYRE_OK) return vyre_lua_raise(L, f, &err);
    lua_settop(L, 1);
    return 1;
}

static int group_index(lua_State *L) {
    struct lvyre_group *g = togroup(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "size") == 0) {
        lua_pushinteger(L, g->size);
        return 1;
    }
    if (k && strcmp(k, "rank") == 0) {
        lua_pushinteger(L, g->rank);
        return 1;
    }
    if (k && strcmp(k, "backends") == 0) {
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    if (k && strcmp(k, "freed") == 0) {
        lua_pushboolean(L, !g->live);
        return 1;
    }
    if (k && strcmp(k, "blocking") == 0) {
        lua_pushboolean(L, g->n > 0 && vyre_nccl_comm_blocking(g->comms[0]));
        return 1;
    }
    return vyre_lua_method(L);
}

static int group_tostring(lua_State *L) {
    struct lvyre_group *g = togroup(L, 1);
    lua_pushfstring(L, "vyre.Group(size %d, %d here, rank %d%s)", g->size, g->n, g->rank,
                    g->live ? "" : ", freed");
    return 1;
}

/* ---- module functions, buf:copy_to, be:info().peers ---------------------------- */

/* core.nccl() -> {version =, version_string =, path =} | false, why */
static int core_nccl(lua_State *L) {
    struct vyre_nccl_info in;
    vyre_nccl_probe(&in);
    if (!in.usable) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, in.reason);
        return 2;
    }
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, in.version);
    lua_setfield(L, -2, "version");
    int v = in.version, major = v >= 10000 ? v / 10000 : v / 1000;
    int minor = v >= 10000 ? (v % 10000) / 100 : (v % 1000) / 100;
    lua_pushfstring(L, "%d.%d.%d", major, minor, v % 100);
    lua_setfield(L, -2, "version_string");
    lua_pushstring(L, in.path);
    lua_setfield(L, -2, "path");
    return 1;
}

/* core.nccl_id() -> hex string */
static int core_nccl_id(lua_State *L) {
    char id[VYRE_NCCL_ID_CHARS + 1];
    struct vyre_error err;
    if (vyre_nccl_id(id, &err) != VYRE_OK) return vyre_lua_raise(L, "vyre.cuda.nccl_id", &err);
    lua_pushstring(L, id);
    return 1;
}

/* buf:copy_to(dst) -> buf: all of buf into the start of dst, across devices. */
int lvyre_buffer_copy_to(lua_State *L) {
    const char *f = "vyre.Buffer:copy_to";
    struct lvyre_buffer *s = lvyre_checkbuffer(L, 1, f), *d = lvyre_checkbuffer(L, 2, f);
    if (s->type != d->type || s->count > d->count)
        return vyre_lua_fail(L, "arg",
                             "%s: cannot copy %s[%I] into %s[%I]. Fix: a destination of the same "
                             "type with at least as many elements (or a view of the source)",
                             f, vyre_type_name(s->type), (LUAI_UACINT)s->count,
                             vyre_type_name(d->type), (LUAI_UACINT)d->count);
    struct vyre_error err; /* the backend's copy (peer or staged), or staged between two */
    if (vyre_backend_buffer_copy(s->h, d->h, s->count, &err) != VYRE_OK)
        return vyre_lua_raise(L, f, &err);
    lua_settop(L, 1);
    return 1;
}

/* Pushes {[ordinal] = "peer" | "staged"} for every other device of the machine, asked
 * without opening them (opening would create a context on every GPU). */
void lvyre_push_peers(lua_State *L, vyre_cuda_device *d, int self) {
    (void)d;
    lua_newtable(L);
    int count = 0;
    struct vyre_error err;
    if (vyre_cuda_device_count(&count, &err) != VYRE_OK) return;
    for (int j = 0; j < count; j++) {
        enum vyre_cuda_peer_path p = VYRE_PEER_STAGED;
        if (j == self || vyre_cuda_peer_path_of(self, j, &p, &err) != VYRE_OK) continue;
        lua_pushstring(L, vyre_cuda_peer_path_name(p));
        lua_rawseti(L, -2, j);
    }
}

static const luaL_Reg group_methods[] = {{"all_reduce", group_all_reduce},
                                         {"broadcast", group_broadcast},
                                         {"reduce", group_reduce},
                                         {"all_gather", group_all_gather},
                                         {"reduce_scatter", group_reduce_scatter},
                                         {"all_to_all", group_all_to_all},
                                         {"send", group_send},
                                         {"recv", group_recv},
                                         {"synchronize", group_synchronize},
                                         {"collective", lvyre_group_collective},
                                         {"sequence", lvyre_group_sequence},
                                         {NULL, NULL}};

static const luaL_Reg group_meta[] = {
    {"__gc", group_free}, {"__close", group_free}, {"__tostring", group_tostring}, {NULL, NULL}};

static const luaL_Reg group_funcs[] = {{"cuda_group", cuda_group},
                                       {"cuda_group_rank", cuda_group_rank},
                                       {"nccl", core_nccl},
                                       {"nccl_id", core_nccl_id},
                                       {NULL, NULL}};

void vyre_lua_open_group(lua_State *L) {
    vyre_lua_newclass_fields(L, VYRE_LUA_GROUP, group_methods, group_meta, group_index, group_free,
                             false);
    luaL_setfuncs(L, group_funcs, 0);
    vyre_lua_open_collective(L);
    vyre_lua_open_spawn(L);
}
