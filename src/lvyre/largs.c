/* largs.c — the one argument matcher: an args table (name = buffer | array | table |
 * value) and an opts table ({n =, grid =}) matched against a program's declarations,
 * for run, launch, bind, sequence and graph on both backends, with one wording of
 * every mistake ("fname: what went wrong. Fix: how").
 *
 * Speed matters here: k:launch(args, opts) goes through it on every call. A layout
 * holds the declaration names as interned Lua strings, so the single pass over the
 * args table (lua_next) matches a key by comparing pointers; the Buffer metatable is
 * fetched once per call, not once per value. Nothing is allocated on the launch path. */
#include <stdio.h>
#include <string.h>

#include "lbackend.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static const char *example_value(enum vyre_type t) {
    if (t == VYRE_BOOL) return "true";
    if (vyre_type_is_float(t)) return "1.5";
    return "1";
}

/* "x, y, a": the names an args table may use, for the unknown-name error. */
static void push_names(lua_State *L, const struct lvyre_layout *lay) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    bool any = false;
    for (uint32_t i = 0; i < lay->ndecls; i++) {
        if (lay->d[i].kind == VYRE_DECL_SHARED) continue;
        if (any) luaL_addstring(&b, ", ");
        luaL_addstring(&b, lay->d[i].name);
        any = true;
    }
    if (!any) luaL_addstring(&b, "(nothing)");
    luaL_pushresult(&b);
}

/* The declaration a string key names: interned pointer first, then bytes (long
 * names are not interned by Lua). NULL when none does. */
static const struct lvyre_decl *find_decl(const struct lvyre_layout *lay, const char *key,
                                          size_t len) {
    for (uint32_t i = 0; i < lay->ndecls; i++)
        if (lay->d[i].name == key) return &lay->d[i];
    for (uint32_t i = 0; i < lay->ndecls; i++)
        if (lay->d[i].len == len && memcmp(lay->d[i].name, key, len) == 0) return &lay->d[i];
    return NULL;
}

static void unknown_name(lua_State *L, int key, const struct lvyre_layout *lay, const char *fname) {
    const char *k = luaL_tolstring(L, key, NULL);
    push_names(L, lay);
    vyre_lua_fail(L, "arg",
                  "%s: unknown argument '%s': program '%s' declares %s. Fix: use one of those "
                  "names",
                  fname, k, lay->name, lua_tostring(L, -1));
}

/* The common cases without building a message: a float for f32/f64, an integer in range
 * for the integer types, a boolean for bool. false sends the value to the full checker. */
static bool fast_param(lua_State *L, int v, enum vyre_type t, vyre_bits *out) {
    if (t == VYRE_BOOL) {
        if (!lua_isboolean(L, v)) return false;
        *out = lua_toboolean(L, v) ? 1u : 0u;
        return true;
    }
    if (t == VYRE_F32 || t == VYRE_F64) {
        if (lua_type(L, v) != LUA_TNUMBER) return false;
        if (t == VYRE_F64) {
            double x = (double)lua_tonumber(L, v);
            memcpy(out, &x, sizeof x);
        } else {
            float x = (float)lua_tonumber(L, v);
            uint32_t u;
            memcpy(&u, &x, sizeof u);
            *out = u;
        }
        return true;
    }
    if (!lua_isinteger(L, v)) return false;
    lua_Integer i = lua_tointeger(L, v);
    switch (t) {
    case VYRE_I32:
        if (i < INT32_MIN || i > INT32_MAX) return false;
        *out = (uint32_t)(int32_t)i;
        return true;
    case VYRE_U32:
        if (i < 0 || i > (lua_Integer)UINT32_MAX) return false;
        *out = (uint64_t)i;
        return true;
    case VYRE_I64:
    case VYRE_U64: /* u64 holds the same 64 bits as the Lua integer (§7) */
        *out = (uint64_t)i;
        return true;
    default: return false;
    }
}

static void check_param(lua_State *L, int v, const struct lvyre_decl *d, struct lvyre_bound *out,
                        const char *fname) {
    if (fast_param(L, v, d->type, &out->params[d->slot])) return;
    int tv = lua_type(L, v);
    int want = d->type == VYRE_BOOL ? LUA_TBOOLEAN : LUA_TNUMBER;
    if (tv != want)
        vyre_lua_fail(L, "arg", "%s: param '%s' (%s) needs a %s, got %s. Fix: pass {%s = %s}",
                      fname, d->name, vyre_type_name(d->type), lua_typename(L, want),
                      lua_typename(L, tv), d->name, example_value(d->type));
    char what[96];
    snprintf(what, sizeof what, "param '%s'", d->name);
    out->params[d->slot] = vyre_lua_tobits(L, v, d->type, fname, what);
}

/* A Buffer value for declaration d: live, of this backend, of the declared type. */
static void bind_buffer(lua_State *L, struct lvyre_buffer *b, const struct lvyre_decl *d,
                        struct lvyre_backend *be, struct lvyre_bound *out, const char *fname) {
    if (!b->live)
        vyre_lua_fail(L, "freed",
                      "%s: buffer '%s' was freed. Fix: do not pass a buffer after buf:free() "
                      "or after its <close> scope ended",
                      fname, d->name);
    if (b->be != be)
        vyre_lua_fail(L, "backend",
                      "%s: buffer '%s' must be a vyre.Buffer of this %s backend (it belongs to "
                      "another backend object). Fix: create it with this backend's "
                      "be:buffer('%s', n)",
                      fname, d->name, lvyre_backend_name(be), vyre_type_name(d->type));
    if (b->type != d->type)
        vyre_lua_fail(L, "arg",
                      "%s: buffer '%s' is declared %s but the buffer holds %s. Fix: pass a %s "
                      "buffer",
                      fname, d->name, vyre_type_name(d->type), vyre_type_name(b->type),
                      vyre_type_name(d->type));
    out->buf[d->slot] = b;
}

/* run only: a vyre.Array or a plain table for declaration d. Tables are converted
 * into an array stored in the holder table (which keeps it alive). */
static void bind_host(lua_State *L, int v, int holder, const struct lvyre_decl *d,
                      struct lvyre_bound *out, const char *fname) {
    struct vyre_lua_array *a = vyre_lua_toarray(L, v);
    if (!a && lua_type(L, v) == LUA_TTABLE && !lua_getmetatable(L, v)) {
        char prefix[96];
        snprintf(prefix, sizeof prefix, "buffer '%s'", d->name);
        a = vyre_lua_array_fromtable(L, v, d->type, fname, prefix);
        lua_rawseti(L, holder, (lua_Integer)d->slot + 1);
    } else if (!a) {
        vyre_lua_fail(L, "arg",
                      "%s: buffer '%s' (%s, %s) needs a buffer, vyre.Array or table, got %s. "
                      "Fix: pass {%s = vyre.array('%s', {...})}",
                      fname, d->name, vyre_type_name(d->type), vyre_access_name(d->access),
                      luaL_typename(L, v), d->name, vyre_type_name(d->type));
    }
    if (a->type != d->type)
        vyre_lua_fail(L, "arg",
                      "%s: buffer '%s' is declared %s but the array holds %s. Fix: pass "
                      "vyre.array('%s', ...)",
                      fname, d->name, vyre_type_name(d->type), vyre_type_name(a->type),
                      vyre_type_name(d->type));
    out->arr[d->slot] = a;
}

/* opts.n as {w [, h [, d]]}: elements per axis, into n3 (missing axes are 1). */
static void read_n3(lua_State *L, int idx, uint64_t n3[3], const char *fname) {
    for (int a = 0; a < 3; a++) {
        lua_rawgeti(L, idx, a + 1);
        int isnum = 1;
        lua_Integer v = lua_isnil(L, -1) && a > 0 ? 1 : lua_tointegerx(L, -1, &isnum);
        if (!isnum || v < 0 || (a == 0 && lua_isnil(L, -1)))
            vyre_lua_fail(L, "type",
                          "%s: opts.n axis %d must be an integer >= 0. Fix: {n = 1024} or {n = {w, "
                          "h}} for a 2-D launch",
                          fname, a + 1);
        n3[a] = (uint64_t)v;
        lua_pop(L, 1);
    }
}

/* opts.n (at n) and opts.grid (at g; either may be nil) into out. */
static void read_opts_values(lua_State *L, int n, int g, struct lvyre_bound *out,
                             const char *fname) {
    int ty = lua_type(L, n);
    struct lvyre_worklist *wn = ty == LUA_TUSERDATA ? lvyre_testworklist(L, n) : NULL;
    if (wn) { /* sized by a worklist: its current count, read on the device */
        out->sized = wn;
    } else if (ty == LUA_TTABLE) {
        read_n3(L, n, out->n3, fname);
        out->has_n = out->has_n3 = true;
    } else if (ty != LUA_TNIL) {
        int isnum = 0;
        lua_Integer v = lua_tointegerx(L, n, &isnum);
        if (!isnum || ty != LUA_TNUMBER || v < 0)
            vyre_lua_fail(L, "arg",
                          "%s: opts.n must be a non-negative integer, {w, h [, d]} or a "
                          "vyre.Worklist (got %s). Fix: {n = 1024}",
                          fname, luaL_tolstring(L, n, NULL));
        out->n = (uint64_t)v;
        out->has_n = true;
    }
    if (!lua_isnil(L, g)) {
        if (!lua_istable(L, g))
            vyre_lua_fail(L, "type",
                          "%s: opts.grid must be a table {x, y, z} (got %s). Fix: {grid = "
                          "{4, 1, 1}}",
                          fname, luaL_typename(L, g));
        vyre_lua_checkgrid(L, g, out->grid, fname);
        out->has_grid = true;
    }
}

/* Reads opts. A plain table (the launch path's case) takes one pass of lua_next that
 * finds n and grid by comparing the keys' pointers with the layout's interned "n" and
 * "grid"; any other key is left to vyre_lua_checkopts, which raises with the list of
 * options. A table with a metatable is read with lua_getfield, as its __index may
 * supply the values. */
static void read_opts(lua_State *L, int opts, const struct lvyre_layout *lay,
                      struct lvyre_bound *out, const char *fname) {
    out->sized = NULL;
    out->n = 0;
    out->has_n = false;
    out->has_n3 = false;
    out->has_grid = false;
    if (lua_isnoneornil(L, opts)) return;
    if (!lua_istable(L, opts))
        vyre_lua_fail(L, "type",
                      "%s: opts must be a table (got %s). Fix: pass {n = count} or {grid = {x, "
                      "y, z}}",
                      fname, luaL_typename(L, opts));
    static const char *const keys[] = {"n", "grid", NULL};
    int top = lua_gettop(L), n = top + 1, g = top + 2; /* stack: lvyre_match checked it */
    if (lua_getmetatable(L, opts)) {
        lua_pop(L, 1);
        vyre_lua_checkopts(L, opts, keys, fname);
        lua_getfield(L, opts, "n");
        lua_getfield(L, opts, "grid");
    } else {
        lua_pushnil(L); /* n */
        lua_pushnil(L); /* grid */
        lua_pushnil(L);
        while (lua_next(L, opts)) {
            const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
            if (k && k == lay->key_n) {
                lua_replace(L, n);
            } else if (k && k == lay->key_grid) {
                lua_replace(L, g);
            } else {
                lua_settop(L, top);
                vyre_lua_checkopts(L, opts, keys, fname); /* raises: an unknown option */
                lua_pushnil(L);
                lua_pushnil(L);
                break;
            }
        }
    }
    read_opts_values(L, n, g, out, fname);
    lua_settop(L, top);
}

/* What the options mean once the program's workgroup is known: n = {w, h, d} becomes
 * the grid that covers it (and n its element count, for sizing outputs); n = 0 on any
 * axis launches nothing. Sized from a scalar n or the buffers, the grid has one
 * workgroup on y and z: a program that reads gid.y or wgid.y then sees only y in
 * [0, workgroup y) and silently computes one row, so that launch is an error with the
 * fix (it was a Lua warning that only lua5.4 -W showed, so users missed it). Two launches
 * stay as asked: an explicit shape (n = {w, h, d} or grid = {...}, even {n = {N}}),
 * and a program that reads ngroups, which computes with the grid's shape (a flattened
 * index over every axis, as vyre.random_program's do, or a grid-stride loop) and so
 * covers its space from any grid. */
static void resolve_geometry(lua_State *L, const struct lvyre_layout *lay, struct lvyre_bound *out,
                             const char *fname) {
    if (out->has_n3) {
        uint64_t total = 1;
        for (int a = 0; a < 3; a++) {
            uint64_t wg = lay->workgroup[a], g = (out->n3[a] + wg - 1) / wg;
            out->grid[a] = (uint32_t)(g > UINT32_MAX ? UINT32_MAX : g);
            total = out->n3[a] && total > UINT64_MAX / out->n3[a] ? UINT64_MAX : total * out->n3[a];
        }
        out->n = total;
        out->has_grid = total > 0;
    }
    out->empty = out->has_n && out->n == 0;
    if (out->sized) { /* sized by a worklist: like a scalar n, known only on the device */
        if (out->has_n || out->has_grid)
            vyre_lua_fail(L, "arg",
                          "%s: opts.n = worklist cannot be combined with opts.grid. Fix: pass "
                          "one of them",
                          fname);
        out->has_n = true;
    }
    if (out->has_grid || out->empty || lay->reads_ngroups) return;
    for (int a = 1; a < 3; a++) {
        if (!lay->reads_axis[a]) continue;
        char c = "xyz"[a];
        vyre_lua_fail(L, "arg",
                      "%s: program '%s' reads gid.%c or wgid.%c, but the launch is sized from %s, "
                      "which gives one workgroup on %c: %c would only span 0..%d and the rest of "
                      "the space is never computed. Fix: launch with n = {%s} or grid = {x, y, "
                      "z} (or read ngroups.%c in the program to cover any grid)",
                      fname, lay->name, c, c, out->has_n ? "a scalar n" : "the buffers", c, c,
                      (int)lay->workgroup[a] - 1, a == 1 ? "W, H" : "W, H, D", c);
    }
}

/* ---- shared helpers (lbackend.h) ----------------------------------------- */

const struct lvyre_layout *lvyre_layout_push(lua_State *L, int prog_idx) {
    struct vyre_lua_program *lp = luaL_checkudata(L, prog_idx, VYRE_LUA_PROGRAM);
    vyre_program *p = lp->p;
    uint32_t n = vyre_program_decl_count(p);
    struct lvyre_layout *lay = lua_newuserdatauv(L, sizeof *lay + n * sizeof lay->d[0], 1);
    memset(lay, 0, sizeof *lay);
    lua_createtable(L, (int)n + 2, 0);   /* the interned names, kept alive with the layout */
    lay->key_n = lua_pushstring(L, "n"); /* read_opts compares opts' keys with these */
    lua_rawseti(L, -2, (lua_Integer)n + 1);
    lay->key_grid = lua_pushstring(L, "grid");
    lua_rawseti(L, -2, (lua_Integer)n + 2);
    vyre_program_workgroup(p, lay->workgroup);
    snprintf(lay->name, sizeof lay->name, "%s", vyre_program_name(p));
    for (unsigned a = 0; a < 3; a++) lay->reads_axis[a] = vyre_program_reads_axis(p, a);
    lay->reads_ngroups = vyre_program_reads_ngroups(p);
    for (uint32_t i = 0; i < n; i++) {
        struct vyre_decl_info di;
        vyre_program_decl(p, i, &di);
        struct lvyre_decl *d = &lay->d[i];
        d->name = lua_pushstring(L, di.name);
        d->len = strlen(di.name);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
        d->kind = di.kind;
        d->type = di.type;
        d->access = di.access;
        d->count = di.count;
        d->slot = di.slot;
        lay->ndecls = i + 1;
    }
    lua_setiuservalue(L, -2, 1);
    lay->nbuffers = vyre_program_buffer_count(p);
    lay->nparams = vyre_program_param_count(p);
    lay->nworklists = vyre_program_worklist_count(p);
    return lay;
}

const struct lvyre_decl *lvyre_layout_slot(const struct lvyre_layout *lay, enum vyre_decl_kind kind,
                                           uint32_t s) {
    for (uint32_t i = 0; i < lay->ndecls; i++)
        if (lay->d[i].kind == kind && lay->d[i].slot == s) return &lay->d[i];
    return NULL;
}

/* A Worklist for declaration d: live, of this backend, of the declared type. */
static void bind_worklist(lua_State *L, int v, const struct lvyre_decl *d, struct lvyre_backend *be,
                          struct lvyre_bound *out, const char *fname) {
    struct lvyre_worklist *w = lvyre_testworklist(L, v);
    if (!w)
        vyre_lua_fail(L, "type",
                      "%s: worklist '%s' (%s) needs a vyre.Worklist, got %s. Fix: pass {%s = "
                      "be:worklist('%s', capacity)}",
                      fname, d->name, vyre_type_name(d->type), luaL_typename(L, v), d->name,
                      vyre_type_name(d->type));
    if (!w->live)
        vyre_lua_fail(L, "freed",
                      "%s: worklist '%s' was freed. Fix: do not pass a worklist after wl:free()",
                      fname, d->name);
    if (w->be != be)
        vyre_lua_fail(L, "backend",
                      "%s: worklist '%s' belongs to another backend object. Fix: create it with "
                      "this backend's be:worklist('%s', capacity)",
                      fname, d->name, vyre_type_name(d->type));
    if (w->type != d->type)
        vyre_lua_fail(L, "type",
                      "%s: worklist '%s' is declared %s but the worklist holds %s. Fix: pass a "
                      "worklist of %s",
                      fname, d->name, vyre_type_name(d->type), vyre_type_name(w->type),
                      vyre_type_name(d->type));
    out->wl[d->slot] = w;
    /* CUDA: the kernel takes the header's address after the scalar params */
}

/* What the single pass found for one declaration. */
enum seen { SEEN_NONE, SEEN_OK, SEEN_CHECK };

void lvyre_match(lua_State *L, int args, int opts, const struct lvyre_layout *lay,
                 struct lvyre_backend *be, enum lvyre_match_mode mode, struct lvyre_bound *out,
                 const char *fname) {
    args = lua_absindex(L, args);
    opts = lua_absindex(L, opts);
    luaL_checkstack(L, 8, fname); /* read_opts and the pass over args push at most 5 */
    uint8_t pseen[VYRE_MAX_PARAMS], bseen[VYRE_MAX_BUFFERS];
    memset(pseen, SEEN_NONE, lay->nparams);
    memset(bseen, SEEN_NONE, lay->nbuffers);
    for (uint32_t s = 0; s < lay->nbuffers; s++) {
        out->buf[s] = NULL;
        out->arr[s] = NULL;
    }
    for (uint32_t s = 0; s < lay->nworklists; s++) out->wl[s] = NULL;
    read_opts(L, opts, lay, out, fname);
    if (lay->nworklists && mode == LVYRE_MATCH_RUN)
        vyre_lua_fail(L, "arg",
                      "%s: program '%s' declares a worklist; be:run takes none. Fix: compile it "
                      "(k = be:compile(p)) and k:launch(args) with {NAME = be:worklist(type, "
                      "capacity)}",
                      fname, lay->name);
    if (out->sized) {
        if (!out->sized->live || out->sized->be != be)
            vyre_lua_fail(L, "arg",
                          "%s: opts.n is a freed worklist or one of another backend. Fix: pass "
                          "a live worklist of this backend",
                          fname);
        if (!lay->nworklists)
            vyre_lua_fail(L, "arg",
                          "%s: opts.n is a worklist but program '%s' declares none, so it cannot "
                          "read the count on the device. Fix: declare (worklist NAME TYPE) in "
                          "the program, or pass a number",
                          fname, lay->name);
    }
    resolve_geometry(L, lay, out, fname);
    bool has_args = !lua_isnoneornil(L, args);
    if (has_args && !lua_istable(L, args))
        vyre_lua_fail(L, "type",
                      "%s: args must be a table of name = value (got %s). Fix: pass {x = array, "
                      "a = 2.0}",
                      fname, luaL_typename(L, args));
    /* One pass over the args table: names matched by pointer, the values that are right
     * taken as they are. Anything else is only marked, and checked below in declaration
     * order, so the same mistakes always give the same first error. */
    if (has_args) {
        int key = lua_gettop(L) + 1, v = key + 1; /* where lua_next leaves them */
        lua_pushnil(L);
        while (lua_next(L, args)) {
            const struct lvyre_decl *d = NULL;
            if (lua_type(L, key) == LUA_TSTRING) {
                size_t len;
                const char *k = lua_tolstring(L, key, &len);
                d = find_decl(lay, k, len);
            }
            if (!d) unknown_name(L, key, lay, fname);
            if (d->kind == VYRE_DECL_SHARED)
                vyre_lua_fail(L, "arg",
                              "%s: '%s' is a shared (workgroup) array and cannot be bound. Fix: "
                              "remove it from the args table",
                              fname, d->name);
            if (d->kind == VYRE_DECL_PARAM) {
                pseen[d->slot] =
                    fast_param(L, v, d->type, &out->params[d->slot]) ? SEEN_OK : SEEN_CHECK;
            } else if (d->kind == VYRE_DECL_WORKLIST) {
                /* a right one is bound now; a wrong one raises below, in declaration order */
                struct lvyre_worklist *w = lvyre_testworklist(L, v);
                if (w && w->live && w->be == be && w->type == d->type)
                    bind_worklist(L, v, d, be, out, fname);
            } else {
                struct lvyre_buffer *b = NULL;
                if (lua_getmetatable(L, v)) { /* any value: only a Buffer has buffer_mt */
                    if (lua_topointer(L, -1) == be->buffer_mt) b = lua_touserdata(L, v);
                    lua_pop(L, 1);
                }
                bool ok = b && b->live && b->be == be && b->type == d->type;
                if (ok) out->buf[d->slot] = b;
                bseen[d->slot] = ok ? SEEN_OK : SEEN_CHECK;
            }
            lua_pop(L, 1);
        }
    }
    int holder = 0;
    for (uint32_t i = 0; i < lay->ndecls; i++) {
        const struct lvyre_decl *d = &lay->d[i];
        if (d->kind == VYRE_DECL_PARAM && pseen[d->slot] == SEEN_CHECK) {
            lua_getfield(L, args, d->name);
            check_param(L, lua_gettop(L), d, out, fname);
            lua_pop(L, 1);
        } else if (d->kind == VYRE_DECL_PARAM && pseen[d->slot] == SEEN_NONE) {
            vyre_lua_fail(L, "arg",
                          "%s: missing param '%s' (%s). Fix: pass it in the args table: {%s = "
                          "%s}",
                          fname, d->name, vyre_type_name(d->type), d->name, example_value(d->type));
        } else if (d->kind == VYRE_DECL_BUFFER && bseen[d->slot] == SEEN_CHECK) {
            lua_getfield(L, args, d->name);
            int v = lua_gettop(L);
            struct lvyre_buffer *b = lvyre_testbuffer(L, v);
            if (b) {
                bind_buffer(L, b, d, be, out, fname); /* raises: something is wrong with it */
            } else if (mode == LVYRE_MATCH_RUN) {
                if (!holder) { /* arrays converted from tables live here until the run ends */
                    lua_createtable(L, (int)lay->nbuffers, 0);
                    lua_replace(L, v);
                    holder = v;
                    lua_getfield(L, args, d->name);
                    v = lua_gettop(L);
                }
                bind_host(L, v, holder, d, out, fname);
            } else {
                vyre_lua_fail(L, "type",
                              "%s: buffer '%s' must be a vyre.Buffer of this %s backend (got "
                              "%s). Fix: create it with be:buffer('%s', n)",
                              fname, d->name, lvyre_backend_name(be), luaL_typename(L, v),
                              vyre_type_name(d->type));
            }
            lua_settop(L, holder ? holder : v - 1);
        }
    }
    for (uint32_t i = 0; i < lay->ndecls; i++) {
        const struct lvyre_decl *d = &lay->d[i];
        if (d->kind == VYRE_DECL_WORKLIST && !out->wl[d->slot] && has_args) {
            lua_getfield(L, args, d->name);
            if (!lua_isnil(L, -1)) bind_worklist(L, lua_gettop(L), d, be, out, fname); /* raises */
            lua_pop(L, 1);
        }
        if (d->kind == VYRE_DECL_WORKLIST && !out->wl[d->slot])
            vyre_lua_fail(L, "arg",
                          "%s: missing worklist '%s' (%s). Fix: pass it in the args table: {%s = "
                          "be:worklist('%s', capacity)}",
                          fname, d->name, vyre_type_name(d->type), d->name,
                          vyre_type_name(d->type));
        if (d->kind != VYRE_DECL_BUFFER) continue;
        uint64_t bound = out->buf[d->slot]   ? out->buf[d->slot]->count
                         : out->arr[d->slot] ? out->arr[d->slot]->count
                                             : d->count;
        if (d->count > 0 && bound != d->count) /* both backends: §10 "Bindings" */
            vyre_lua_fail(L, "arg",
                          "%s: buffer '%s' is declared with %I elements but %I were bound. Fix: "
                          "bind exactly %I elements, or declare the buffer without a count",
                          fname, d->name, (LUAI_UACINT)d->count, (LUAI_UACINT)bound,
                          (LUAI_UACINT)d->count);
        if (out->buf[d->slot] || out->arr[d->slot]) continue;
        if (mode == LVYRE_MATCH_LAUNCH)
            vyre_lua_fail(L, "arg",
                          "%s: missing buffer '%s' (%s, %s). Fix: pass a buffer from "
                          "be:buffer('%s', n) in the args table",
                          fname, d->name, vyre_type_name(d->type), vyre_access_name(d->access),
                          vyre_type_name(d->type));
        if (d->access != VYRE_ACCESS_WRITE)
            vyre_lua_fail(L, "arg",
                          "%s: missing buffer '%s' (%s, %s). Fix: pass it in the args table: "
                          "{%s = vyre.array('%s', {...})}",
                          fname, d->name, vyre_type_name(d->type), vyre_access_name(d->access),
                          d->name, vyre_type_name(d->type));
    }
}

void lvyre_bound_counts(const struct lvyre_layout *lay, const struct lvyre_bound *b,
                        uint64_t *counts) {
    for (uint32_t s = 0; s < lay->nbuffers; s++)
        counts[s] = b->buf[s] ? b->buf[s]->count : b->arr[s] ? b->arr[s]->count : 0;
}

uint64_t lvyre_output_count(lua_State *L, const struct lvyre_layout *lay,
                            const struct lvyre_bound *b, uint32_t slot, const char *fname) {
    const struct lvyre_decl *d = lvyre_layout_slot(lay, VYRE_DECL_BUFFER, slot);
    if (d->count > 0) return d->count;
    if (b->n > 0) return b->n;
    uint64_t best = 0, counts[VYRE_MAX_BUFFERS];
    lvyre_bound_counts(lay, b, counts);
    for (uint32_t s = 0; s < lay->nbuffers; s++)
        if (counts[s] > best) best = counts[s];
    if (best == 0)
        vyre_lua_fail(L, "arg",
                      "%s: cannot size write buffer '%s': it has no declared count, no opts.n "
                      "was given and no other buffer is bound. Fix: pass {n = count} in opts or "
                      "bind '%s'",
                      fname, d->name, d->name);
    return best;
}
