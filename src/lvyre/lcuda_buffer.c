/* lcuda_buffer.c — vyre.cuda.Buffer: a device-resident buffer. upload/download of
 * the whole buffer or a byte range (checked in C with a clear error), free, #buf,
 * buf.type / buf.count / buf.bytes, and __gc/__close/free sharing one idempotent
 * release. User value 1 is the device userdata, so the device outlives its buffers. */
#include <string.h>

#include "lcuda.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static struct lcuda_buffer *tobuffer(lua_State *L, int idx)
{
    return luaL_checkudata(L, idx, VYRE_LUA_CUDA_BUFFER);
}

/* The buffer userdata at idx (live or freed), or raises naming fname. */
static struct lcuda_buffer *checkbuffer_ud(lua_State *L, int idx, const char *fname)
{
    struct lcuda_buffer *u = luaL_testudata(L, idx, VYRE_LUA_CUDA_BUFFER);
    if (!u)
        vyre_lua_typeerror(L, idx, fname, VYRE_LUA_CUDA_BUFFER,
                           "pass a buffer made by be:buffer(type, n), and call methods with a "
                           "colon (buf:download())");
    return u;
}

static uint64_t check_offset(lua_State *L, int idx, const char *fname, const char *what)
{
    if (!lua_isnoneornil(L, idx) && !lua_isinteger(L, idx))
        luaL_error(L, "%s: %s must be an integer number of bytes (got %s). Fix: pass a "
                      "multiple of the element size, e.g. 0", fname, what,
                   luaL_tolstring(L, idx, NULL));
    lua_Integer v = luaL_optinteger(L, idx, 0);
    if (v < 0)
        luaL_error(L, "%s: %s %I is negative. Fix: pass a byte offset >= 0", fname, what,
                   (LUAI_UACINT)v);
    return (uint64_t)v;
}

/* ---- shared helpers (lcuda.h) ----------------------------------------------- */

vyre_cuda_buffer *vyre_lcuda_checkbuffer(lua_State *L, int idx, const char *fname)
{
    struct lcuda_buffer *u = checkbuffer_ud(L, idx, fname);
    if (!u->b)
        luaL_error(L, "%s: the buffer was freed. Fix: do not use a buffer after buf:free() or "
                      "after its <close> scope ended", fname);
    return u->b;
}

void vyre_lcuda_pushbuffer(lua_State *L, vyre_cuda_buffer *b, int dev_idx)
{
    dev_idx = lua_absindex(L, dev_idx);
    struct lcuda_buffer *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->b = b;
    luaL_setmetatable(L, VYRE_LUA_CUDA_BUFFER);
    lua_pushvalue(L, dev_idx);
    lua_setiuservalue(L, -2, 1);
}

/* ---- Buffer methods ------------------------------------------------------------ */

/* buf:upload(array_or_table [, byte_offset]) -> buf */
static int buffer_upload(lua_State *L)
{
    const char *fname = "vyre.Buffer:upload";
    vyre_cuda_buffer *b = vyre_lcuda_checkbuffer(L, 1, fname);
    uint64_t off = check_offset(L, 3, fname, "byte offset");
    struct vyre_lua_array *a = vyre_lcuda_toarray(L, 2, vyre_cuda_buffer_type(b), fname);
    struct vyre_error err;
    uint64_t nbytes = a->count * vyre_type_size(a->type);
    if (vyre_cuda_buffer_upload(b, off, a->data, nbytes, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    lua_settop(L, 1);
    return 1;
}

/* buf:download([byte_offset [, nbytes]]) -> vyre.Array of the buffer's type */
static int buffer_download(lua_State *L)
{
    const char *fname = "vyre.Buffer:download";
    vyre_cuda_buffer *b = vyre_lcuda_checkbuffer(L, 1, fname);
    enum vyre_type t = vyre_cuda_buffer_type(b);
    uint64_t esize = vyre_type_size(t);
    uint64_t off = check_offset(L, 2, fname, "byte offset");
    uint64_t total = vyre_cuda_buffer_bytes(b);
    uint64_t nbytes = lua_isnoneornil(L, 3) ? (off <= total ? total - off : 0)
                                            : check_offset(L, 3, fname, "byte count");
    if (off % esize != 0 || nbytes % esize != 0)
        return luaL_error(L, "%s: byte offset %I and count %I must be multiples of the %s "
                             "element size (%d bytes). Fix: pass whole elements",
                          fname, (LUAI_UACINT)off, (LUAI_UACINT)nbytes, vyre_type_name(t),
                          (int)esize);
    struct vyre_error err;
    if (off > total || nbytes > total - off) {
        vyre_error_set(&err, VYRE_ERR_ARG,
                       "byte range [%llu, %llu) is outside the %s buffer of %llu bytes. Fix: "
                       "keep offset + size within %llu bytes",
                       (unsigned long long)off, (unsigned long long)(off + nbytes),
                       vyre_type_name(t), (unsigned long long)total, (unsigned long long)total);
        return vyre_lua_raise(L, fname, &err);
    }
    struct vyre_lua_array *a = vyre_lua_newarray(L, t, nbytes / esize);
    if (vyre_cuda_buffer_download(b, off, a->data, nbytes, &err) != VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    return 1;
}

/* buf:zero() -> buf (asynchronous fill with zero bytes) */
static int buffer_zero(lua_State *L)
{
    vyre_cuda_buffer *b = vyre_lcuda_checkbuffer(L, 1, "vyre.Buffer:zero");
    struct vyre_error err;
    if (vyre_cuda_buffer_zero(b, &err) != VYRE_OK) return vyre_lua_raise(L, "vyre.Buffer:zero", &err);
    lua_settop(L, 1);
    return 1;
}

/* buf:pointer() -> the device address as an integer (raw PTX kernels, tests) */
static int buffer_pointer(lua_State *L)
{
    vyre_cuda_buffer *b = vyre_lcuda_checkbuffer(L, 1, "vyre.Buffer:pointer");
    lua_pushinteger(L, (lua_Integer)vyre_cuda_buffer_pointer(b));
    return 1;
}

/* __gc / __close / buf:free(): idempotent. Driver errors here are recorded on the
 * device and raised by its next call (a finalizer must not raise). */
static int buffer_release(lua_State *L)
{
    struct lcuda_buffer *u = checkbuffer_ud(L, 1, "vyre.Buffer:free");
    if (u->b) {
        vyre_cuda_buffer *b = u->b;
        u->b = NULL;
        vyre_cuda_buffer_free(b);
    }
    return 0;
}

static int buffer_len(lua_State *L)
{
    struct lcuda_buffer *u = tobuffer(L, 1);
    lua_pushinteger(L, u->b ? (lua_Integer)vyre_cuda_buffer_count(u->b) : 0);
    return 1;
}

static const luaL_Reg buffer_methods[] = {
    {"upload", buffer_upload},
    {"download", buffer_download},
    {"zero", buffer_zero},
    {"pointer", buffer_pointer},
    {"free", buffer_release},
    {NULL, NULL}
};

/* Fields first (type, count, bytes, freed), then methods. */
static int buffer_index(lua_State *L)
{
    struct lcuda_buffer *u = tobuffer(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && u->b) {
        if (strcmp(k, "type") == 0) {
            lua_pushstring(L, vyre_type_name(vyre_cuda_buffer_type(u->b)));
            return 1;
        }
        if (strcmp(k, "count") == 0) {
            lua_pushinteger(L, (lua_Integer)vyre_cuda_buffer_count(u->b));
            return 1;
        }
        if (strcmp(k, "bytes") == 0) {
            lua_pushinteger(L, (lua_Integer)vyre_cuda_buffer_bytes(u->b));
            return 1;
        }
    }
    if (k && strcmp(k, "freed") == 0) {
        lua_pushboolean(L, u->b == NULL);
        return 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int buffer_tostring(lua_State *L)
{
    struct lcuda_buffer *u = tobuffer(L, 1);
    if (!u->b) {
        lua_pushstring(L, "vyre.Buffer(cuda, freed)");
        return 1;
    }
    lua_pushfstring(L, "vyre.Buffer(cuda, %s, %I)", vyre_type_name(vyre_cuda_buffer_type(u->b)),
                    (LUAI_UACINT)vyre_cuda_buffer_count(u->b));
    return 1;
}

void vyre_lcuda_open_buffer(lua_State *L)
{
    luaL_newmetatable(L, VYRE_LUA_CUDA_BUFFER);
    luaL_newlib(L, buffer_methods);
    lua_pushcclosure(L, buffer_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, buffer_release);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, buffer_release);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, buffer_len);
    lua_setfield(L, -2, "__len");
    lua_pushcfunction(L, buffer_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
}
