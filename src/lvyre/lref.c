/* lref.c — the C half of the reference backend (lua/vyre/reference.lua): one
 * function that runs a program on the CPU interpreter over vyre.Array storage,
 * and the §5 launch geometry (core.grid) that both backends size launches with. */
#include <stdio.h>
#include <string.h>

#include "ir.h"
#include "lvyre.h"
#include "lvyre_box.h"

/* ---- static helpers ------------------------------------------------------ */

static const struct vyre_decl *nth_decl(const vyre_program *p, enum vyre_decl_kind kind,
                                        uint32_t slot) {
    for (uint32_t i = 0; i < p->ndecls; i++)
        if (p->decls[i].kind == kind && p->decls[i].slot == slot) return &p->decls[i];
    return NULL;
}

/* ---- Lua-callable functions ---------------------------------------------- */

/* core.ref_run(p, buffers, params, grid [, fname]): buffers[slot] is a vyre.Array of
 * the slot's declared type (mutated in place), params[slot] a Lua value converted by
 * the §7 rules, grid {x, y, z}. Runs to completion on the CPU. */
static int ref_run(lua_State *L) {
    lua_settop(L, 5); /* scratch memory is pushed above the arguments */
    vyre_program *p = vyre_lua_checkprogram(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    const char *fname = luaL_optstring(L, 5, "vyre.run");
    struct vyre_run_args args;
    memset(&args, 0, sizeof args);
    vyre_lua_checkgrid(L, 4, args.grid, fname);
    args.nbuffers = p->nbuffers;
    args.nparams = p->nparams;
    args.buffers = vyre_lua_scratch(L, p->nbuffers * sizeof *args.buffers);
    vyre_bits *params = vyre_lua_scratch(L, p->nparams * sizeof *params);
    args.params = params;
    for (uint32_t s = 0; s < p->nbuffers; s++) {
        const struct vyre_decl *d = nth_decl(p, VYRE_DECL_BUFFER, s);
        lua_rawgeti(L, 2, (lua_Integer)s + 1);
        struct vyre_lua_array *a = vyre_lua_toarray(L, -1);
        if (!a || !d)
            return luaL_error(L, "%s: buffer '%s' is not bound to a live vyre.Array. Fix: "
                              "bind every buffer the program declares", fname,
                              d ? d->name : "?");
        if (a->type != d->type)
            return luaL_error(L, "%s: buffer '%s' is declared %s but the array holds %s. Fix: "
                              "pass vyre.array('%s', ...)", fname, d->name,
                              vyre_type_name(d->type), vyre_type_name(a->type),
                              vyre_type_name(d->type));
        args.buffers[s].data = a->data;
        args.buffers[s].count = a->count;
        lua_pop(L, 1); /* the caller's table keeps the array alive */
    }
    for (uint32_t s = 0; s < p->nparams; s++) {
        const struct vyre_decl *d = nth_decl(p, VYRE_DECL_PARAM, s);
        char what[96];
        snprintf(what, sizeof what, "param '%s'", d ? d->name : "?");
        lua_rawgeti(L, 3, (lua_Integer)s + 1);
        params[s] = vyre_lua_tobits(L, -1, d ? d->type : VYRE_U32, fname, what);
        lua_pop(L, 1);
    }
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_ref_run(p, &args, &err) != VYRE_OK) return vyre_lua_raise(L, fname, &err);
    return 0;
}

/* core.grid(p, counts, n, grid [, fname]) -> x, y, z  (§5 geometry) */
static int ref_grid(lua_State *L) {
    lua_settop(L, 5); /* scratch memory is pushed above the arguments */
    vyre_program *p = vyre_lua_checkprogram(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *fname = luaL_optstring(L, 5, "vyre.grid");
    size_t n = (size_t)lua_rawlen(L, 2);
    uint64_t *counts = vyre_lua_scratch(L, n * sizeof *counts);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        counts[i] = (uint64_t)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
    }
    lua_Integer elems = 0;
    if (!lua_isnoneornil(L, 3)) {
        int isnum = 0;
        elems = lua_tointegerx(L, 3, &isnum);
        if (!isnum || elems < 0)
            return luaL_error(L, "%s: n must be a non-negative integer (got %s). Fix: pass "
                              "{n = element_count}", fname, luaL_tolstring(L, 3, NULL));
    }
    uint32_t explicit_grid[3], out[3];
    bool has_grid = !lua_isnoneornil(L, 4);
    if (has_grid) vyre_lua_checkgrid(L, 4, explicit_grid, fname);
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_grid(p, counts, n, (uint64_t)elems, has_grid ? explicit_grid : NULL, out, &err) !=
        VYRE_OK)
        return vyre_lua_raise(L, fname, &err);
    for (int a = 0; a < 3; a++) lua_pushinteger(L, (lua_Integer)out[a]);
    return 3;
}

/* ---- registration ----------------------------------------------------------- */

static const luaL_Reg ref_funcs[] = {
    {"ref_run", ref_run},
    {"grid", ref_grid},
    {NULL, NULL}
};

void vyre_lua_open_ref(lua_State *L) {
    luaL_setfuncs(L, ref_funcs, 0);
}
