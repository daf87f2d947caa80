/* larray.c — vyre.Array: a typed host array (one of the 7 IR types) that Lua
 * scripts fill and read 1-based, and that the backends read and write as raw
 * memory. Values cross the boundary through the §7 conversions in lvyre.c; tables
 * convert in bulk on a fast path. Also fill, iota, seeded random fill, raw bytes in
 * and out, views (a:view) and a __tostring that shows the first and last elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lvyre.h"
#include "lvyre_box.h"

/* Host arrays share the ABI's limit so that every array can be bound to a kernel. */
#define ARRAY_MAX_COUNT 0xFFFFFFFFull

/* ---- static helpers ------------------------------------------------------ */

/* A released array keeps its userdata; type VYRE_VOID marks it freed. Releasing an
 * array releases its views; a view owns no memory and unlinks itself. */
static void array_release(struct vyre_lua_array *a) {
    if (a->type == VYRE_VOID) return;
    while (a->vn.views) {
        a->vn.views->orphan = true;
        array_release(VYRE_LUA_VIEW_OF(struct vyre_lua_array, a->vn.views));
    }
    if (a->parent) {
        vyre_lua_vunlink(&a->parent->vn, &a->vn);
    } else {
        vyre_lua_host_free(a->data, a->count * vyre_type_size(a->type));
    }
    a->data = NULL;
    a->count = 0;
    a->type = VYRE_VOID;
}

/* The array userdata at idx (live or freed), or raises naming fname. */
static struct vyre_lua_array *check_ud(lua_State *L, int idx, const char *fname) {
    struct vyre_lua_array *a = luaL_testudata(L, idx, VYRE_LUA_ARRAY);
    if (!a && idx == 1 && strncmp(fname, VYRE_LUA_ARRAY ":", sizeof VYRE_LUA_ARRAY) == 0)
        vyre_lua_wrongself(L, idx, VYRE_LUA_ARRAY, fname); /* a method called with a dot */
    if (!a)
        vyre_lua_typeerror(L, idx, fname, VYRE_LUA_ARRAY,
                           "pass an array made by vyre.array(type, n | table | string), and "
                           "call methods with a colon (a:totable())");
    return a;
}

static struct vyre_lua_array *check_live(lua_State *L, int idx, const char *fname) {
    struct vyre_lua_array *a = check_ud(L, idx, fname);
    if (a->type == VYRE_VOID && a->vn.orphan)
        vyre_lua_fail(L, "freed",
                      "%s: this view's parent array was freed. Fix: keep the parent array "
                      "alive (no :free(), no ended <close> scope) while its views are used",
                      fname);
    if (a->type == VYRE_VOID)
        vyre_lua_fail(L, "freed",
                      "%s: this vyre.Array was freed. Fix: keep the array alive (do not call "
                      ":free() or leave its <close> scope) while using it",
                      fname);
    return a;
}

static size_t array_bytes(const struct vyre_lua_array *a) {
    return (size_t)a->count * vyre_type_size(a->type);
}

/* Converts a Lua index key to a 0-based element index or raises naming the valid
 * range. */
static uint64_t check_index(lua_State *L, const struct vyre_lua_array *a, int idx,
                            const char *fname) {
    int isnum = 0;
    lua_Integer i = lua_tointegerx(L, idx, &isnum);
    if (!isnum || lua_type(L, idx) != LUA_TNUMBER)
        vyre_lua_fail(L, "arg",
                      "%s: index %s is not an integer. Fix: index arrays with integers "
                      "1..#a",
                      fname, luaL_tolstring(L, idx, NULL));
    if (i < 1 || (uint64_t)i > a->count) {
        if (a->count == 0)
            vyre_lua_fail(L, "arg",
                          "%s: index %I is out of range: the array is empty. Fix: create "
                          "it with a size, e.g. vyre.array('%s', n)",
                          fname, (LUAI_UACINT)i, vyre_type_name(a->type));
        vyre_lua_fail(L, "arg",
                      "%s: index %I is out of range (valid indices are 1..%I). Fix: "
                      "arrays are 1-based; use an index between 1 and #a",
                      fname, (LUAI_UACINT)i, (LUAI_UACINT)a->count);
    }
    return (uint64_t)(i - 1);
}

/* Stores the value on top of the stack as element i when it is the plain case (a number
 * of the right kind in range, a boolean for bool): the bulk path of tables, which must
 * not format a message per element. Anything else returns false for the checked path. */
static bool store_fast(lua_State *L, struct vyre_lua_array *a, uint64_t i, int tt) {
    void *d = a->data;
    if (a->type == VYRE_BOOL) {
        if (tt != LUA_TBOOLEAN) return false;
        ((uint32_t *)d)[i] = (uint32_t)lua_toboolean(L, -1);
        return true;
    }
    if (tt != LUA_TNUMBER) return false;
    if (a->type == VYRE_F32 || a->type == VYRE_F64) {
        lua_Number x = lua_tonumber(L, -1);
        if (a->type == VYRE_F32) ((float *)d)[i] = (float)x;
        else ((double *)d)[i] = (double)x;
        return true;
    }
    if (!lua_isinteger(L, -1)) return false; /* exact floats take the checked path */
    lua_Integer v = lua_tointeger(L, -1);
    switch (a->type) {
    case VYRE_I32:
        if (v < INT32_MIN || v > INT32_MAX) return false;
        ((int32_t *)d)[i] = (int32_t)v;
        return true;
    case VYRE_U32:
        if (v < 0 || v > (lua_Integer)UINT32_MAX) return false;
        ((uint32_t *)d)[i] = (uint32_t)v;
        return true;
    default: /* i64, u64: every Lua integer (u64 holds the same bits) */
        ((int64_t *)d)[i] = (int64_t)v;
        return true;
    }
}

/* Errors name fname and, when prefix is not NULL, say "fname: prefix: element [i] ...". */
static void fill_from_table(lua_State *L, struct vyre_lua_array *a, int tidx, const char *fname,
                            const char *prefix) {
    char what[160];
    for (uint64_t i = 0; i < a->count; i++) {
        int tt = lua_rawgeti(L, tidx, (lua_Integer)(i + 1));
        if (!store_fast(L, a, i, tt)) {
            snprintf(what, sizeof what, "%s%selement [%llu]", prefix ? prefix : "",
                     prefix ? ": " : "", (unsigned long long)(i + 1));
            vyre_lua_storebits(a->data, a->type, i, vyre_lua_tobits(L, -1, a->type, fname, what));
        }
        lua_pop(L, 1);
    }
}

static void fill_from_string(lua_State *L, struct vyre_lua_array *a, const char *s) {
    if (a->count == 0) return; /* data is NULL: memcpy(NULL, s, 0) is undefined */
    memcpy(a->data, s, array_bytes(a));
    if (a->type == VYRE_BOOL) /* keep the 0/1 word invariant */
        for (uint64_t i = 0; i < a->count; i++)
            vyre_lua_storebits(a->data, a->type, i, vyre_lua_loadbits(a->data, a->type, i));
    (void)L;
}

/* ---- shared helpers (lvyre.h) -------------------------------------------- */

struct vyre_lua_array *vyre_lua_toarray(lua_State *L, int idx) {
    struct vyre_lua_array *a = luaL_testudata(L, idx, VYRE_LUA_ARRAY);
    return a && a->type != VYRE_VOID ? a : NULL;
}

struct vyre_lua_array *vyre_lua_array_fromtable(lua_State *L, int tidx, enum vyre_type t,
                                                const char *fname, const char *prefix) {
    tidx = lua_absindex(L, tidx);
    struct vyre_lua_array *a = vyre_lua_newarray(L, t, (uint64_t)lua_rawlen(L, tidx));
    fill_from_table(L, a, tidx, fname, prefix);
    return a;
}

struct vyre_lua_array *vyre_lua_newarray(lua_State *L, enum vyre_type t, uint64_t count) {
    if (count > ARRAY_MAX_COUNT)
        vyre_lua_fail(L, "limit",
                      "vyre.array: %I elements is more than the limit of 4294967295. Fix: "
                      "split the data into smaller arrays",
                      (LUAI_UACINT)count);
    struct vyre_lua_array *a = lua_newuserdatauv(L, sizeof *a, 0);
    memset(a, 0, sizeof *a);
    a->type = t;
    luaL_setmetatable(L, VYRE_LUA_ARRAY);
    if (count > 0) {
        a->data = vyre_lua_host_alloc(L, count * vyre_type_size(t), true, "vyre.array");
        a->count = count;
    }
    return a;
}

void vyre_lua_array_push(lua_State *L, const struct vyre_lua_array *a, uint64_t i) {
    vyre_lua_pushbits(L, a->type, vyre_lua_loadbits(a->data, a->type, i));
}

/* ---- Lua-callable functions ---------------------------------------------- */

/* vyre.array(type, n | table | binary string) */
static int array_new(lua_State *L) {
    enum vyre_type t = vyre_lua_checktype(L, 1, "vyre.array");
    size_t esize = vyre_type_size(t);
    switch (lua_type(L, 2)) {
    case LUA_TNUMBER: {
        int isnum = 0;
        lua_Integer n = lua_tointegerx(L, 2, &isnum);
        if (!isnum || n < 0)
            return vyre_lua_fail(L, "arg",
                                 "vyre.array: size %s is not a non-negative integer. Fix: "
                                 "pass an element count such as 1024",
                                 lua_tostring(L, 2));
        vyre_lua_newarray(L, t, (uint64_t)n);
        return 1;
    }
    case LUA_TTABLE: {
        struct vyre_lua_array *a = vyre_lua_newarray(L, t, (uint64_t)lua_rawlen(L, 2));
        fill_from_table(L, a, 2, "vyre.array", NULL);
        return 1;
    }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, 2, &len);
        if (len % esize)
            return vyre_lua_fail(L, "arg",
                                 "vyre.array: a binary string of %I bytes is not a whole "
                                 "number of %s elements (%I bytes each). Fix: pass a string "
                                 "whose length is a multiple of %I",
                                 (LUAI_UACINT)len, vyre_type_name(t), (LUAI_UACINT)esize,
                                 (LUAI_UACINT)esize);
        struct vyre_lua_array *a = vyre_lua_newarray(L, t, len / esize);
        fill_from_string(L, a, s);
        return 1;
    }
    default:
        return vyre_lua_fail(L, "type",
                             "vyre.array: expected an element count, a table or a binary "
                             "string as argument #2 (got %s). Fix: vyre.array('%s', {1, 2, 3})",
                             luaL_typename(L, 2), vyre_type_name(t));
    }
}

static int array_index(lua_State *L) {
    /* methods stay reachable on a freed array so that a:free() stays idempotent */
    struct vyre_lua_array *a = vyre_lua_checkself(L, 1, VYRE_LUA_ARRAY);
    if (lua_type(L, 2) == LUA_TNUMBER) {
        /* One past the end is nil, as for a Lua sequence, so ipairs(a) stops there. */
        if (lua_isinteger(L, 2) && a->type != VYRE_VOID &&
            lua_tointeger(L, 2) == (lua_Integer)a->count + 1)
            return 0;
        uint64_t i = check_index(L, check_live(L, 1, "vyre.Array"), 2, "vyre.Array");
        vyre_lua_array_push(L, a, i);
        return 1;
    }
    const char *key = lua_tostring(L, 2);
    if (key && strcmp(key, "type") == 0) {
        lua_pushstring(L, vyre_type_name(a->type));
        return 1;
    }
    if (key && strcmp(key, "count") == 0) {
        lua_pushinteger(L, (lua_Integer)a->count);
        return 1;
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1)); /* methods */
    return 1;
}

static int array_newindex(lua_State *L) {
    struct vyre_lua_array *a = check_live(L, 1, "vyre.Array");
    if (lua_type(L, 2) != LUA_TNUMBER)
        return vyre_lua_fail(L, "arg",
                             "vyre.Array: cannot set field '%s'. Fix: arrays only take "
                             "integer indices 1..#a",
                             luaL_tolstring(L, 2, NULL));
    uint64_t i = check_index(L, a, 2, "vyre.Array");
    char what[48];
    snprintf(what, sizeof what, "element [%llu]", (unsigned long long)(i + 1));
    vyre_lua_storebits(a->data, a->type, i, vyre_lua_tobits(L, 3, a->type, "vyre.Array", what));
    return 0;
}

static int array_len(lua_State *L) {
    lua_pushinteger(
        L, (lua_Integer)((struct vyre_lua_array *)vyre_lua_checkself(L, 1, VYRE_LUA_ARRAY))->count);
    return 1;
}

static int array_totable(lua_State *L) {
    struct vyre_lua_array *a = check_live(L, 1, "vyre.Array:totable");
    if (a->count > (uint64_t)INT32_MAX)
        return vyre_lua_fail(L, "limit",
                             "vyre.Array:totable: %I elements do not fit a Lua table. Fix: "
                             "read ranges with a[i]",
                             (LUAI_UACINT)a->count);
    lua_createtable(L, (int)a->count, 0);
    for (uint64_t i = 0; i < a->count; i++) {
        vyre_lua_array_push(L, a, i);
        lua_rawseti(L, -2, (lua_Integer)(i + 1));
    }
    return 1;
}

/* a:bytes() -> the elements as raw little-endian bytes (tostring(a) gives text). */
static int array_bytes_raw(lua_State *L) {
    struct vyre_lua_array *a = check_live(L, 1, "vyre.Array:bytes");
    lua_pushlstring(L, a->count ? (const char *)a->data : "", array_bytes(a));
    return 1;
}

/* __gc, __close and a:free(): one idempotent release. */
static int array_gc(lua_State *L) {
    array_release(check_ud(L, 1, "vyre.Array:free"));
    return 0;
}

/* ---- element text ---------------------------------------------------------- */

/* The text of a float given by its bits (f32: the low 32): the shortest decimal that
 * reads back (strtof/strtod, and Lua's tonumber then a store as f32) to the same bits, always with a point or an exponent so
 * it reads as a float: 10.0, 0.1, -0.0, 1e-45, 3.4028235e+38, inf, -inf. Positional
 * for decimal exponents -5..16, else d.ddde+N. NaN: "nan" and "-nan" for the quiet NaN
 * of each sign (what arithmetic makes), else its bits as the text format spells them,
 * nan:0x7fc00001, so no NaN is printed as another. Lua's own number printing (%.14g)
 * is not used: it prints 1e+01 and loses digits and the NaN sign. */
static void float_text(char *s, size_t n, uint64_t bits, bool f32) {
    uint64_t sign = f32 ? 0x80000000ull : 0x8000000000000000ull;
    uint64_t expo = f32 ? 0x7f800000ull : 0x7ff0000000000000ull;
    uint64_t quiet = f32 ? 0x7fc00000ull : 0x7ff8000000000000ull;
    uint64_t mag = bits & ~sign;
    const char *minus = bits & sign ? "-" : "";
    if ((mag & expo) == expo) {
        if (mag == expo) snprintf(s, n, "%sinf", minus);
        else if (mag == quiet) snprintf(s, n, "%snan", minus);
        else snprintf(s, n, f32 ? "nan:0x%08llx" : "nan:0x%016llx", (unsigned long long)bits);
        return;
    }
    double d;
    float f = 0;
    if (f32) {
        uint32_t w = (uint32_t)bits;
        memcpy(&f, &w, sizeof f);
        d = f;
    } else {
        memcpy(&d, &bits, sizeof d);
    }
    /* The fewest significant digits that read back exactly, as d.ddde±X. */
    char e[40];
    for (int p = 0; p < (f32 ? 9 : 17); p++) {
        snprintf(e, sizeof e, "%.*e", p, d);
        if (f32) {
            /* Lua reads the text as a double that is then stored as f32: both that and
             * strtof must give f's bits (they differ only near a midpoint, and then a
             * digit more settles it). */
            float g = strtof(e, NULL), h = (float)strtod(e, NULL);
            if (memcmp(&g, &f, sizeof f) == 0 && memcmp(&h, &f, sizeof f) == 0) break;
        } else {
            double g = strtod(e, NULL);
            if (memcmp(&g, &d, sizeof d) == 0) break;
        }
    }
    /* Split into digits and exponent, then lay them out. */
    char digits[24];
    size_t nd = 0;
    const char *c = e + (e[0] == '-');
    for (; *c && *c != 'e'; c++)
        if (*c != '.') digits[nd++] = *c;
    digits[nd] = 0;
    int x = atoi(c + 1);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0; /* %.0e of 10.0 is 1e+01 */
    char out[64];
    size_t o = 0;
    if (x < -5 || x > 16) {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (size_t i = 1; i < nd; i++) out[o++] = digits[i];
        }
        snprintf(out + o, sizeof out - o, "e%c%d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    } else if (x < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > x; i--) out[o++] = '0';
        for (size_t i = 0; i < nd; i++) out[o++] = digits[i];
        out[o] = 0;
    } else {
        for (int i = 0; i <= x; i++) out[o++] = (size_t)i < nd ? digits[i] : '0';
        out[o++] = '.';
        if ((size_t)x + 1 >= nd) out[o++] = '0';
        for (size_t i = (size_t)x + 1; i < nd; i++) out[o++] = digits[i];
        out[o] = 0;
    }
    snprintf(s, n, "%s%s", minus, out);
}

/* Text of element i (0-based): floats as float_text, integers as such, u64 unsigned.
 * The one formatter of elements: tostring(a), the REPL and `vyre run` (core.element_text). */
static void elem_text(char *s, size_t n, const struct vyre_lua_array *a, uint64_t i) {
    vyre_bits v = vyre_lua_loadbits(a->data, a->type, i);
    if (a->type == VYRE_F32 || a->type == VYRE_F64) float_text(s, n, v, a->type == VYRE_F32);
    else if (a->type == VYRE_BOOL) snprintf(s, n, "%s", v ? "true" : "false");
    else if (a->type == VYRE_I32) snprintf(s, n, "%ld", (long)(int32_t)(uint32_t)v);
    else if (a->type == VYRE_I64) snprintf(s, n, "%lld", (long long)(int64_t)v);
    else snprintf(s, n, "%llu", (unsigned long long)v);
}

static void add_elem(luaL_Buffer *b, const struct vyre_lua_array *a, uint64_t i) {
    char s[64];
    elem_text(s, sizeof s, a, i);
    luaL_addstring(b, s);
}

/* core.element_text(a, i) -> the text of a[i] (1-based) as tostring(a) writes it. */
static int array_element_text(lua_State *L) {
    struct vyre_lua_array *a = check_live(L, 1, "vyre.core.element_text");
    lua_Integer i = luaL_checkinteger(L, 2);
    if (i < 1 || (uint64_t)i > a->count)
        return vyre_lua_fail(L, "arg",
                             "vyre.core.element_text: index %I is outside 1..%I. Fix: pass an "
                             "index of the array",
                             (LUAI_UACINT)i, (LUAI_UACINT)a->count);
    char s[64];
    elem_text(s, sizeof s, a, (uint64_t)i - 1);
    lua_pushstring(L, s);
    return 1;
}

/* core.float_text(x [, "f32" | "f64"]) -> the text of the Lua number x as that type
 * (f64 by default; f32 rounds x to f32 first), as an Array of the type prints it. */
static int l_float_text(lua_State *L) {
    double d = luaL_checknumber(L, 1);
    const char *t = luaL_optstring(L, 2, "f64");
    bool f32 = strcmp(t, "f32") == 0;
    if (!f32 && strcmp(t, "f64") != 0)
        return vyre_lua_fail(L, "arg",
                             "vyre.core.float_text: type must be 'f32' or 'f64' (got %s). Fix: "
                             "core.float_text(x, 'f32')",
                             t);
    uint64_t bits;
    if (f32) {
        float f = (float)d;
        uint32_t w;
        memcpy(&w, &f, sizeof w);
        bits = w;
    } else {
        memcpy(&bits, &d, sizeof bits);
    }
    char s[64];
    float_text(s, sizeof s, bits, f32);
    lua_pushstring(L, s);
    return 1;
}

/* "vyre.Array(f32, 100) [1.0, 2.0, ..., 100.0]": the first 8 and the last 4 elements. */
static int array_tostring(lua_State *L) {
    struct vyre_lua_array *a = vyre_lua_checkself(L, 1, VYRE_LUA_ARRAY);
    if (a->type == VYRE_VOID) {
        lua_pushfstring(L, "vyre.Array (freed): %p", (void *)a);
        return 1;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "vyre.Array(%s, %I) [", vyre_type_name(a->type), (LUAI_UACINT)a->count);
    luaL_addvalue(&b);
    for (uint64_t i = 0; i < a->count; i++) {
        if (a->count > 12 && i == 8) {
            luaL_addstring(&b, "\xe2\x80\xa6, "); /* U+2026 */
            i = a->count - 4;
        }
        add_elem(&b, a, i);
        if (i + 1 < a->count) luaL_addstring(&b, ", ");
    }
    luaL_addchar(&b, ']');
    luaL_pushresult(&b);
    return 1;
}

/* ---- fill, iota, random, from_string (in place; each returns the array) ------ */

/* a:fill(v) -> a */
static int array_fill(lua_State *L) {
    vyre_lua_array_fill(L, check_live(L, 1, "vyre.Array:fill"), "vyre.Array:fill");
    lua_settop(L, 1);
    return 1;
}

/* a:iota([start [, step]]) -> a */
static int array_iota(lua_State *L) {
    vyre_lua_array_iota(L, check_live(L, 1, "vyre.Array:iota"), "vyre.Array:iota");
    lua_settop(L, 1);
    return 1;
}

/* a:random(seed [, lo, hi]) -> a */
static int array_random(lua_State *L) {
    vyre_lua_array_random(L, check_live(L, 1, "vyre.Array:random"), "vyre.Array:random");
    lua_settop(L, 1);
    return 1;
}

/* a:from_string(s [, first]) -> a: the raw bytes of s (whole elements, little-endian as
 * a:bytes() gives them) copied in place from element `first` (1-based, default 1). */
static int array_from_string(lua_State *L) {
    const char *fname = "vyre.Array:from_string";
    struct vyre_lua_array *a = check_live(L, 1, fname);
    size_t len;
    if (lua_type(L, 2) != LUA_TSTRING)
        return vyre_lua_fail(L, "type",
                             "%s: expected a string of raw bytes (got %s). Fix: "
                             "a:from_string(other:bytes())",
                             fname, luaL_typename(L, 2));
    const char *s = lua_tolstring(L, 2, &len);
    lua_Integer first = vyre_lua_optint(L, 3, 1, fname, "first", "a 1-based element index, e.g. 1");
    size_t es = vyre_type_size(a->type);
    if (len % es)
        return vyre_lua_fail(L, "arg",
                             "%s: %I bytes are not a whole number of %s elements (%I bytes "
                             "each). Fix: pass whole elements",
                             fname, (LUAI_UACINT)len, vyre_type_name(a->type), (LUAI_UACINT)es);
    if (first < 1 || (uint64_t)(first - 1) > a->count ||
        len / es > a->count - (uint64_t)(first - 1))
        return vyre_lua_fail(L, "arg",
                             "%s: %I elements from element %I do not fit the %I held. Fix: "
                             "keep first >= 1 and first + #s / %I - 1 <= #a",
                             fname, (LUAI_UACINT)(len / es), (LUAI_UACINT)first,
                             (LUAI_UACINT)a->count, (LUAI_UACINT)es);
    if (len) memcpy((char *)a->data + (size_t)(first - 1) * es, s, len);
    if (a->type == VYRE_BOOL) /* keep the 0/1 word invariant */
        for (uint64_t i = (uint64_t)(first - 1); i < (uint64_t)(first - 1) + len / es; i++)
            vyre_lua_storebits(a->data, a->type, i, vyre_lua_loadbits(a->data, a->type, i));
    lua_settop(L, 1);
    return 1;
}

/* a:view(first [, count]) -> an Array of count elements (default: to the end) sharing
 * this one's memory from element first (1-based): writes through either show in both,
 * and it binds to kernels like any Array. It keeps its parent alive; freeing the parent
 * ends its views. */
static int array_view(lua_State *L) {
    const char *fname = "vyre.Array:view";
    struct vyre_lua_array *a = check_live(L, 1, fname);
    lua_settop(L, 3);
    uint64_t count;
    uint64_t first0 = vyre_lua_view_range(L, a->count, fname, "a", &count);
    struct vyre_lua_array *root = a->parent ? a->parent : a;
    struct vyre_lua_array *v = lua_newuserdatauv(L, sizeof *v, 1);
    memset(v, 0, sizeof *v);
    v->type = VYRE_VOID; /* not live until linked */
    luaL_setmetatable(L, VYRE_LUA_ARRAY);
    if (a->parent) lua_getiuservalue(L, 1, 1);
    else lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    if (count > 0) v->data = (char *)a->data + (size_t)first0 * vyre_type_size(a->type);
    v->count = count;
    v->parent = root;
    vyre_lua_vlink(&root->vn, &v->vn);
    v->type = a->type;
    return 1;
}

/* Arrays compare equal when they hold the same type, count and bytes. */
static int array_eq(lua_State *L) {
    struct vyre_lua_array *a = vyre_lua_toarray(L, 1), *b = vyre_lua_toarray(L, 2);
    lua_pushboolean(L, a && b && a->type == b->type && a->count == b->count &&
                           (a->count == 0 || memcmp(a->data, b->data, array_bytes(a)) == 0));
    return 1;
}

/* a:copy() -> a new array with the same contents. */
static int array_copy(lua_State *L) {
    struct vyre_lua_array *a = check_live(L, 1, "vyre.Array:copy");
    struct vyre_lua_array *c = vyre_lua_newarray(L, a->type, a->count);
    if (a->count) memcpy(c->data, a->data, array_bytes(a));
    return 1;
}

/* ---- registration ----------------------------------------------------------- */

static const luaL_Reg array_funcs[] = {{"array", array_new},
                                       {"element_text", array_element_text},
                                       {"float_text", l_float_text},
                                       {NULL, NULL}};

/* The iterator of pairs(a): (a, i) -> i + 1, a[i + 1] while in range. */
static int array_next(lua_State *L) {
    struct vyre_lua_array *a = check_live(L, 1, "vyre.Array:__pairs");
    lua_Integer i = luaL_optinteger(L, 2, 0);
    if (i < 0 || (uint64_t)i >= a->count) return 0;
    lua_pushinteger(L, i + 1);
    vyre_lua_array_push(L, a, (uint64_t)i);
    return 2;
}

/* pairs(a) walks the elements 1..#a in order, like ipairs. */
static int array_pairs(lua_State *L) {
    check_live(L, 1, "vyre.Array:__pairs");
    lua_pushcfunction(L, array_next);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

static const luaL_Reg array_methods[] = {{"totable", array_totable},
                                         {"bytes", array_bytes_raw},
                                         {"from_string", array_from_string},
                                         {"fill", array_fill},
                                         {"iota", array_iota},
                                         {"random", array_random},
                                         {"copy", array_copy},
                                         {"view", array_view},
                                         {"free", array_gc},
                                         {NULL, NULL}};

static const luaL_Reg array_meta[] = {
    {"__newindex", array_newindex}, {"__len", array_len}, {"__pairs", array_pairs},
    {"__tostring", array_tostring}, {"__eq", array_eq},   {"__gc", array_gc},
    {"__close", array_gc},          {NULL, NULL}};

void vyre_lua_open_array(lua_State *L) {
    vyre_lua_newclass(L, VYRE_LUA_ARRAY, array_methods, array_meta);
    /* Integer keys are elements, so __index is a function that falls back to the
     * methods table (its upvalue). */
    luaL_getmetatable(L, VYRE_LUA_ARRAY);
    lua_getfield(L, -1, "__index");
    lua_pushcclosure(L, array_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_setfuncs(L, array_funcs, 0);
    static const struct vyre_lua_renamed renamed[] = {
        {"tostring", "a:bytes() (raw bytes; tostring(a) gives text)", "call a:bytes()"},
        {NULL, NULL, NULL}};
    vyre_lua_add_renamed(L, VYRE_LUA_ARRAY, renamed);
}
