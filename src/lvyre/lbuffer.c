/* lbuffer.c — vyre.Buffer: a buffer of the backend's (vyre_backend_buffer of
 * vyre_backend.h: device memory on CUDA, host memory on the reference), whose every
 * operation is the backend's. upload/download of the whole buffer or a byte
 * range, zero, fill/iota/random, views (buf:view), pointer/device_ptr (interop), free,
 * #buf, buf.type / buf.count / buf.bytes / buf.freed, and __gc/__close/free sharing one
 * idempotent release. User value 1 is the backend, so the backend (and its device)
 * outlives its buffers; a view's user value 2 is the buffer that owns its storage. */
#include <stdlib.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static struct lvyre_buffer *tobuffer(lua_State *L, int idx) {
    return vyre_lua_checkself(L, idx, VYRE_LUA_BUFFER);
}

/* The buffer userdata at idx (live or freed), or raises naming fname. */
static struct lvyre_buffer *check_ud(lua_State *L, int idx, const char *fname) {
    struct lvyre_buffer *b = luaL_testudata(L, idx, VYRE_LUA_BUFFER);
    if (!b && idx == 1 && strncmp(fname, VYRE_LUA_BUFFER ":", sizeof VYRE_LUA_BUFFER) == 0)
        vyre_lua_wrongself(L, idx, VYRE_LUA_BUFFER, fname); /* a method called with a dot */
    if (!b)
        vyre_lua_typeerror(L, idx, fname, VYRE_LUA_BUFFER,
                           "pass a buffer made by be:buffer(type, n), and call methods with a "
                           "colon (buf:download())");
    return b;
}

static uint64_t bytes_of(const struct lvyre_buffer *b) {
    return b->count * vyre_type_size(b->type);
}

/* Raises unless [off, off + n) is whole elements inside the buffer. */
static void check_range(lua_State *L, const struct lvyre_buffer *b, uint64_t off, uint64_t n,
                        const char *fname) {
    uint64_t es = vyre_type_size(b->type), total = bytes_of(b);
    if (off % es != 0 || n % es != 0)
        vyre_lua_fail(L, "arg",
                      "%s: byte offset %I and size %I must be non-negative multiples of the "
                      "element size %I (%s). Fix: use whole elements",
                      fname, (LUAI_UACINT)off, (LUAI_UACINT)n, (LUAI_UACINT)es,
                      vyre_type_name(b->type));
    if (off > total || n > total - off)
        vyre_lua_fail(L, "arg",
                      "%s: byte offset %I with size %I is outside the %I bytes held. Fix: "
                      "keep offset + size <= %I",
                      fname, (LUAI_UACINT)off, (LUAI_UACINT)n, (LUAI_UACINT)total,
                      (LUAI_UACINT)total);
}

static void release(struct lvyre_buffer *b) {
    if (!b->live) return;
    b->live = false;
    while (b->vn.views) { /* freeing the owner ends its views (each unlinks itself) */
        b->vn.views->orphan = true;
        release(VYRE_LUA_VIEW_OF(struct lvyre_buffer, b->vn.views));
    }
    vyre_backend_buffer *h = b->h;
    b->h = NULL;
    b->cu = NULL;
    b->host = NULL;
    if (b->parent) vyre_lua_vunlink(&b->parent->vn, &b->vn); /* a view owns no memory */
    else if (b->be->host_memory) vyre_lua_host_unreserve(bytes_of(b));
    vyre_backend_buffer_free(h); /* a device's errors are deferred to its next call */
    lvyre_backend_unref(b->be);
}

/* Takes the new backend buffer h into b (live from here: release frees it). */
static void adopt(struct lvyre_buffer *b, vyre_backend_buffer *h, uint64_t count) {
    b->h = h;
    b->be->nchildren++;
    b->count = count;
    b->live = true;
    b->cu = vyre_backend_buffer_native(h);
    b->host = b->be->host_memory ? (void *)(uintptr_t)vyre_backend_buffer_address(h) : NULL;
}

/* ---- shared helpers (lbackend.h) ----------------------------------------- */

struct lvyre_buffer *lvyre_testbuffer(lua_State *L, int idx) {
    return luaL_testudata(L, idx, VYRE_LUA_BUFFER);
}

struct lvyre_buffer *lvyre_checkbuffer(lua_State *L, int idx, const char *fname) {
    struct lvyre_buffer *b = check_ud(L, idx, fname);
    if (!b->live && b->vn.orphan)
        vyre_lua_fail(L, "freed",
                      "%s: this view's parent buffer was freed. Fix: keep the parent buffer "
                      "alive (no buf:free(), no ended <close> scope) while its views are used",
                      fname);
    if (!b->live)
        vyre_lua_fail(L, "freed",
                      "%s: the buffer was freed. Fix: do not use a buffer after buf:free() or "
                      "after its <close> scope ended",
                      fname);
    return b;
}

/* The userdata comes first, its metatable and owner set, and only then the memory:
 * an error at any point leaves an object that __gc releases correctly. */
struct lvyre_buffer *lvyre_newbuffer(lua_State *L, int be_idx, enum vyre_type t, uint64_t count,
                                     const void *init, const char *fname) {
    be_idx = lua_absindex(L, be_idx);
    struct lvyre_backend *be = lua_touserdata(L, be_idx);
    struct lvyre_buffer *b = lua_newuserdatauv(L, sizeof *b, 1);
    memset(b, 0, sizeof *b);
    luaL_setmetatable(L, VYRE_LUA_BUFFER);
    lua_pushvalue(L, be_idx);
    lua_setiuservalue(L, -2, 1);
    b->be = be;
    b->type = t;
    uint64_t nbytes = count * vyre_type_size(t);
    struct vyre_error err;
    if (!be->core)
        vyre_lua_fail(L, "freed", "%s: the backend was freed. Fix: open a new one", fname);
    if (be->host_memory) { /* host memory counts toward the host cap, as arrays do */
        if (count > 0xFFFFFFFFull)
            vyre_lua_fail(L, "limit",
                          "%s: %I elements is more than a kernel can address (4294967295). Fix: "
                          "split the data",
                          fname, (LUAI_UACINT)count);
        if (nbytes > 0) vyre_lua_host_reserve(L, nbytes, fname);
    }
    vyre_backend_buffer *h = NULL;
    if (vyre_backend_buffer_alloc(be->core, t, count, &h, &err) != VYRE_OK) {
        if (be->host_memory) vyre_lua_host_unreserve(nbytes);
        vyre_lua_raise(L, fname, &err);
    }
    adopt(b, h, count); /* zeroed by the backend */
    if (init && count && vyre_backend_buffer_upload(h, 0, init, count, &err) != VYRE_OK)
        vyre_lua_raise(L, fname, &err);
    return b;
}

void lvyre_buffer_arg(const struct lvyre_buffer *b, struct vyre_buffer_arg *out) {
    out->data = b->host;
    out->count = b->count;
}

/* ---- Buffer methods ------------------------------------------------------ */

/* Reads a range table at idx: an element range {first = i [, count = n]} (1-based, whole
 * elements), or bytes only by name {byte_offset = o [, nbytes = n]} (docs/API.md
 * "Vocabulary": a range is in elements unless its name says bytes), into a byte offset and, with
 * want_count, a byte count (*nbytes untouched when the count is absent). Returns true
 * for the byte form. Any other key, or keys of both forms, is an error: a misspelt
 * option must not be ignored. */
static bool read_range(lua_State *L, int idx, const struct lvyre_buffer *b, bool want_count,
                       uint64_t *off, uint64_t *nbytes, const char *fname) {
    uint64_t es = vyre_type_size(b->type);
    int elems = 0, bytes = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
        bool first = strcmp(k, "first") == 0, count = want_count && strcmp(k, "count") == 0;
        bool boff = strcmp(k, "byte_offset") == 0, bn = want_count && strcmp(k, "nbytes") == 0;
        if (!first && !count && !boff && !bn)
            vyre_lua_fail(L, "arg",
                          "%s: unknown range key '%s'. Fix: use {first = i%s} (elements, 1-based), "
                          "or bytes by name {byte_offset = o%s}",
                          fname, luaL_tolstring(L, -2, NULL), want_count ? ", count = n" : "",
                          want_count ? ", nbytes = n" : "");
        int isint = 0;
        lua_Integer v = lua_tointegerx(L, -1, &isint);
        if (!isint || v < (first ? 1 : 0))
            vyre_lua_fail(L, "type", "%s: %s must be an integer >= %d (got %s). Fix: %s", fname, k,
                          first ? 1 : 0, luaL_tolstring(L, -1, NULL),
                          first || count ? "count elements from 1" : "pass a byte count >= 0");
        if (first) *off = ((uint64_t)v - 1) * es;
        else if (count) *nbytes = (uint64_t)v * es;
        else if (boff) *off = (uint64_t)v;
        else *nbytes = (uint64_t)v;
        if (first || count) elems++;
        else bytes++;
        lua_pop(L, 1);
    }
    if (elems && bytes)
        vyre_lua_fail(L, "arg",
                      "%s: a range is either elements {first =, count =} or bytes {byte_offset =, "
                      "nbytes =}, not both. Fix: use one form",
                      fname);
    return bytes > 0;
}

/* A positional number where a range table is taken: ranges went from positional bytes to
 * named ranges (docs/API.md "Vocabulary"); say which table the call means. */
static void positional_range(lua_State *L, int idx, const struct lvyre_buffer *b, bool count,
                             const char *fname) {
    uint64_t es = vyre_type_size(b->type);
    int isint = 0, nint = 0;
    lua_Integer o = lua_tointegerx(L, idx, &isint), n = -1;
    if (count && !lua_isnoneornil(L, idx + 1)) n = lua_tointegerx(L, idx + 1, &nint);
    if (count && !lua_isnoneornil(L, idx + 1) && (!nint || n < 0)) isint = 0;
    if (isint && o >= 0 && (uint64_t)o % es == 0 && (n < 0 || (uint64_t)n % es == 0)) {
        if (n >= 0)
            vyre_lua_fail(L, "type",
                          "%s: a range is no longer positional bytes (%I, %I). Fix: write "
                          "{first = %I, count = %I} (elements), or {byte_offset = %I, nbytes = %I}",
                          fname, (LUAI_UACINT)o, (LUAI_UACINT)n,
                          (LUAI_UACINT)((uint64_t)o / es + 1), (LUAI_UACINT)((uint64_t)n / es),
                          (LUAI_UACINT)o, (LUAI_UACINT)n);
        vyre_lua_fail(L, "type",
                      "%s: a range is no longer a positional byte offset (%I). Fix: write {first = "
                      "%I} (elements), or {byte_offset = %I}",
                      fname, (LUAI_UACINT)o, (LUAI_UACINT)((uint64_t)o / es + 1), (LUAI_UACINT)o);
    }
    vyre_lua_fail(L, "type",
                  "%s: a range is a table: {first = i, count = n} (elements, 1-based) or "
                  "{byte_offset = o, nbytes = n} (got %s). Fix: pass one of those",
                  fname, luaL_tolstring(L, idx, NULL));
}

/* check_range in the words of an element range (the {first, count} forms). */
static void check_elems(lua_State *L, const struct lvyre_buffer *b, uint64_t off, uint64_t n,
                        const char *fname) {
    uint64_t es = vyre_type_size(b->type);
    if (n == 0 && off / es > b->count)
        vyre_lua_fail(L, "arg",
                      "%s: first = %I is past the end of the %I elements held. Fix: first <= "
                      "#buf + 1",
                      fname, (LUAI_UACINT)(off / es + 1), (LUAI_UACINT)b->count);
    if (off / es + n / es > b->count)
        vyre_lua_fail(L, "arg",
                      "%s: elements %I..%I are outside the %I held. Fix: keep first + count - 1 "
                      "<= #buf",
                      fname, (LUAI_UACINT)(off / es + 1), (LUAI_UACINT)(off / es + n / es),
                      (LUAI_UACINT)b->count);
}

/* buf:upload(array | table | binary string [, {first = i} | {byte_offset = o}]) -> buf */
static int buffer_upload(lua_State *L) {
    const char *fname = "vyre.Buffer:upload";
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, fname);
    uint64_t off = 0, es = vyre_type_size(b->type);
    bool by_bytes = false;
    if (lua_type(L, 3) == LUA_TTABLE) by_bytes = read_range(L, 3, b, false, &off, NULL, fname);
    else if (!lua_isnoneornil(L, 3)) positional_range(L, 3, b, false, fname);
    lua_settop(L, 3);
    struct vyre_lua_array *a = vyre_lua_toarray(L, 2);
    const void *src = a ? a->data : NULL;
    uint64_t nbytes = a ? a->count * vyre_type_size(a->type) : 0;
    if (a && a->type != b->type)
        return vyre_lua_fail(L, "arg",
                             "%s: cannot copy %s data into a %s buffer. Fix: convert the data "
                             "first, e.g. vyre.array('%s', t)",
                             fname, vyre_type_name(a->type), vyre_type_name(b->type),
                             vyre_type_name(b->type));
    if (!a && lua_type(L, 2) == LUA_TSTRING) { /* raw little-endian elements */
        size_t len;
        src = lua_tolstring(L, 2, &len);
        nbytes = len;
        if (len % es)
            return vyre_lua_fail(L, "arg",
                                 "%s: %I bytes are not whole %s elements. Fix: pass a multiple "
                                 "of %I bytes",
                                 fname, (LUAI_UACINT)len, vyre_type_name(b->type), (LUAI_UACINT)es);
        if (b->type == VYRE_BOOL) { /* keep the 0/1 word invariant: go through an Array */
            a = vyre_lua_newarray(L, VYRE_BOOL, len / es);
            for (uint64_t i = 0; i < a->count; i++)
                vyre_lua_storebits(a->data, VYRE_BOOL, i, vyre_lua_loadbits(src, VYRE_BOOL, i));
            src = a->data;
        }
    } else if (!a && lua_type(L, 2) == LUA_TTABLE && !lua_getmetatable(L, 2)) {
        a = vyre_lua_array_fromtable(L, 2, b->type, fname, NULL);
        src = a->data;
        nbytes = a->count * es;
    } else if (!a) {
        return vyre_lua_fail(L, "type",
                             "%s: expected a vyre.Array, a table of values or a binary string "
                             "(got %s). Fix: buf:upload(vyre.array('%s', {...}))",
                             fname, luaL_typename(L, 2), vyre_type_name(b->type));
    }
    if (!by_bytes) check_elems(L, b, off, nbytes, fname);
    check_range(L, b, off, nbytes, fname);
    struct vyre_error err;
    if (vyre_backend_buffer_upload(b->h, off / es, src, nbytes / es, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

/* buf:download([{first = i, count = n} | {byte_offset = o, nbytes = n}]) -> vyre.Array of
 * the buffer's type (a copy). */
static int buffer_download(lua_State *L) {
    const char *fname = "vyre.Buffer:download";
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, fname);
    uint64_t total = bytes_of(b), off = 0, nbytes = UINT64_MAX;
    bool by_bytes = false;
    if (lua_type(L, 2) == LUA_TTABLE) by_bytes = read_range(L, 2, b, true, &off, &nbytes, fname);
    else if (!lua_isnoneornil(L, 2)) positional_range(L, 2, b, true, fname);
    if (nbytes == UINT64_MAX) nbytes = off <= total ? total - off : 0;
    if (!by_bytes) check_elems(L, b, off, nbytes, fname);
    check_range(L, b, off, nbytes, fname);
    uint64_t es = vyre_type_size(b->type);
    struct vyre_lua_array *a = vyre_lua_newarray(L, b->type, nbytes / es);
    struct vyre_error err;
    if (vyre_backend_buffer_download(b->h, off / es, a->data, nbytes / es, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    return 1;
}

/* buf:zero() -> buf (asynchronous on CUDA) */
static int buffer_zero(lua_State *L) {
    const char *fname = "vyre.Buffer:zero";
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, fname);
    struct vyre_error err;
    if (vyre_backend_buffer_zero(b->h, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

/* buf:view(first [, count]) -> a Buffer of count elements (default: to the end) that
 * aliases this one's storage from element first (1-based): writes through either are
 * seen by both, and run/launch/sequence/graph bind it as its own length. The view keeps
 * its parent alive; freeing the parent ends the view. */
static int buffer_view(lua_State *L) {
    const char *fname = "vyre.Buffer:view";
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, fname);
    lua_settop(L, 3);
    uint64_t count;
    uint64_t first0 = vyre_lua_view_range(L, b->count, fname, "buf", &count);
    struct lvyre_buffer *root = b->parent ? b->parent : b;
    uint64_t base = b->first + first0;
    struct lvyre_buffer *v = lua_newuserdatauv(L, sizeof *v, 2);
    memset(v, 0, sizeof *v);
    luaL_setmetatable(L, VYRE_LUA_BUFFER);
    lua_getiuservalue(L, 1, 1);
    lua_setiuservalue(L, -2, 1);
    if (b->parent) lua_getiuservalue(L, 1, 2);
    else lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 2);
    v->be = b->be;
    v->type = b->type;
    v->first = base;
    struct vyre_error err;
    vyre_backend_buffer *h = NULL;
    if (vyre_backend_buffer_view(root->h, base, count, &h, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    v->parent = root; /* before adopt: release unlinks a view, and frees no host bytes */
    vyre_lua_vlink(&root->vn, &v->vn);
    adopt(v, h, count);
    return 1;
}

/* Pushes g's values as vyre.lib.basic.generate reads them. */
static void push_gen(lua_State *L, const struct vyre_lua_gen *g) {
    static const char *const kinds[] = {"fill", "iota", "random"};
    lua_createtable(L, 0, 8);
    lua_pushstring(L, kinds[g->kind]);
    lua_setfield(L, -2, "kind");
    vyre_lua_pushbits(L, g->type, g->a);
    lua_setfield(L, -2, "a");
    vyre_lua_pushbits(L, g->type, g->b);
    lua_setfield(L, -2, "b");
    lua_pushinteger(L, (lua_Integer)g->seed);
    lua_setfield(L, -2, "seed");
    if (vyre_type_is_float(g->type)) {
        vyre_lua_pushbits(L, g->type, g->lo);
        lua_setfield(L, -2, "lo");
        vyre_lua_pushbits(L, g->type, g->hi);
        lua_setfield(L, -2, "hi");
        vyre_lua_pushbits(L, g->type, g->prev);
        lua_setfield(L, -2, "prev");
    }
    lua_pushinteger(L, (lua_Integer)g->ilo);
    lua_setfield(L, -2, "ilo");
    lua_pushinteger(L, (lua_Integer)g->span);
    lua_setfield(L, -2, "span");
}

/* buf:fill / buf:iota / buf:random: the elements the same vyre.Array method gives
 * (lgen.c). A backend of host memory (the reference) is filled in place; any other runs
 * one kernel of vyre.lib.basic, enqueued after the queued launches like any launch. */
static int buffer_generate(lua_State *L, const char *fname, enum vyre_lua_gen_kind kind) {
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, fname);
    lua_settop(L, 4);
    struct vyre_lua_gen g;
    vyre_lua_gen_parse(L, kind, b->type, fname, &g);
    if (!b->be->host_memory) {
        vyre_lua_pushhook(L, "generate", fname); /* vyre.lib.basic.generate (init.lua) */
        lua_getiuservalue(L, 1, 1);              /* the backend */
        lua_pushvalue(L, 1);
        push_gen(L, &g);
        lua_call(L, 3, 0);
    } else {
        vyre_lua_gen_host(&g, b->host, b->count);
    }
    lua_settop(L, 1);
    return 1;
}

/* buf:fill(value) -> buf */
static int buffer_fill(lua_State *L) {
    return buffer_generate(L, "vyre.Buffer:fill", VYRE_LUA_FILL);
}

/* buf:iota([start [, step]]) -> buf */
static int buffer_iota(lua_State *L) {
    return buffer_generate(L, "vyre.Buffer:iota", VYRE_LUA_IOTA);
}

/* buf:random(seed [, lo, hi]) -> buf */
static int buffer_random(lua_State *L) {
    return buffer_generate(L, "vyre.Buffer:random", VYRE_LUA_RANDOM);
}

/* buf:pointer() -> the address of the data as an integer, for raw PTX kernels and a
 * host's own code (interop): the CUdeviceptr on CUDA, the host address of the memory on
 * the reference (0 when the buffer is empty). Both backends answer, so an embedding host
 * can hand the same pointer to its own code whichever backend runs; valid until the
 * buffer is freed. (One name: buf:device_ptr() was the same thing and now raises.) */
static int buffer_pointer(lua_State *L) {
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, "vyre.Buffer:pointer");
    lua_pushinteger(L, (lua_Integer)vyre_backend_buffer_address(b->h));
    return 1;
}

/* buf:free(), __gc, __close: idempotent. */
static int buffer_free(lua_State *L) {
    release(check_ud(L, 1, "vyre.Buffer:free"));
    return 0;
}

static int buffer_len(lua_State *L) {
    struct lvyre_buffer *b = tobuffer(L, 1);
    lua_pushinteger(L, b->live ? (lua_Integer)b->count : 0);
    return 1;
}

static int buffer_tostring(lua_State *L) {
    struct lvyre_buffer *b = tobuffer(L, 1);
    const char *kind = lvyre_backend_name(b->be);
    if (!b->live) lua_pushfstring(L, "vyre.Buffer(%s, %s, freed)", kind, vyre_type_name(b->type));
    else if (b->parent)
        lua_pushfstring(L, "vyre.Buffer(%s, %s, %I, view of %I from %I)", kind,
                        vyre_type_name(b->type), (LUAI_UACINT)b->count,
                        (LUAI_UACINT)b->parent->count, (LUAI_UACINT)(b->first + 1));
    else
        lua_pushfstring(L, "vyre.Buffer(%s, %s, %I)", kind, vyre_type_name(b->type),
                        (LUAI_UACINT)b->count);
    return 1;
}

/* core.buffer_extent(buf) -> root, first_byte, end_byte: the memory a live Buffer covers.
 * root is a light userdata naming the allocation that owns the storage (the buffer
 * itself, or a view's parent), and [first_byte, end_byte) the bytes within it, so two
 * Buffers alias exactly when their roots are equal and their ranges intersect. vyre.lib
 * and the planners compare memory this way, not objects (two views of one buffer are
 * different objects over the same bytes). */
static int core_buffer_extent(lua_State *L) {
    struct lvyre_buffer *b = lvyre_checkbuffer(L, 1, "vyre.core.buffer_extent");
    struct lvyre_buffer *root = b->parent ? b->parent : b;
    uint64_t first = b->first * vyre_type_size(b->type);
    lua_pushlightuserdata(L, root);
    lua_pushinteger(L, (lua_Integer)first);
    lua_pushinteger(L, (lua_Integer)(first + bytes_of(b)));
    return 3;
}

static const luaL_Reg buffer_methods[] = {{"upload", buffer_upload},
                                          {"download", buffer_download},
                                          {"zero", buffer_zero},
                                          {"pointer", buffer_pointer},
                                          {"view", buffer_view},
                                          {"fill", buffer_fill},
                                          {"iota", buffer_iota},
                                          {"random", buffer_random},
                                          {"copy_to", lvyre_buffer_copy_to},
                                          {NULL, NULL}};

/* Read-only fields (type, count, bytes, freed, backend), then methods; nothing can be assigned. */
static int buffer_index(lua_State *L) {
    struct lvyre_buffer *b = tobuffer(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && b->live) {
        if (strcmp(k, "type") == 0) {
            lua_pushstring(L, vyre_type_name(b->type));
            return 1;
        }
        if (strcmp(k, "count") == 0) {
            lua_pushinteger(L, (lua_Integer)b->count);
            return 1;
        }
        if (strcmp(k, "bytes") == 0) {
            lua_pushinteger(L, (lua_Integer)bytes_of(b));
            return 1;
        }
    }
    if (k && strcmp(k, "freed") == 0) {
        lua_pushboolean(L, !b->live);
        return 1;
    }
    if (k && strcmp(k, "backend") == 0) { /* the owner, so no one reads tostring(buf) */
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    return vyre_lua_method(L);
}

static const luaL_Reg buffer_meta[] = {{"__gc", buffer_free},
                                       {"__close", buffer_free},
                                       {"__len", buffer_len},
                                       {"__tostring", buffer_tostring},
                                       {NULL, NULL}};

void vyre_lua_open_buffer(lua_State *L) {
    vyre_lua_newclass_fields(L, VYRE_LUA_BUFFER, buffer_methods, buffer_meta, buffer_index,
                             buffer_free, false);
    static const struct vyre_lua_renamed renamed[] = {
        {"device_ptr", "buf:pointer() (the data's address on either backend)",
         "call buf:pointer()"},
        {NULL, NULL, NULL}};
    vyre_lua_add_renamed(L, VYRE_LUA_BUFFER, renamed);
    lua_pushcfunction(L, core_buffer_extent); /* into the vyre.core table below */
    lua_setfield(L, -2, "buffer_extent");
}
