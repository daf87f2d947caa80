/* lvyre.h — shared pieces of the Lua binding (module vyre.core): userdata layouts,
 * checkers and value conversion used by every C file of src/lvyre. The binding
 * checks and converts arguments and calls libvyre's public API. It also holds what
 * the reference backend needs around the interpreter (host buffers, its counters,
 * sequences and graphs as loops over vyre_ref_run) and the sizing of run's outputs. */
#ifndef VYRE_LVYRE_H
#define VYRE_LVYRE_H

#include <lauxlib.h>
#include <stddef.h>
#include <lua.h>

#include "vyre.h"

/* Marks the module's one exported symbol, luaopen_vyre_core. Everything else is
 * compiled with hidden visibility (CMake C_VISIBILITY_PRESET). */
#if defined(_WIN32)
#define VYRE_LUA_EXPORT __declspec(dllexport)
#else
#define VYRE_LUA_EXPORT __attribute__((visibility("default")))
#endif

#define VYRE_LUA_PROGRAM "vyre.Program"
#define VYRE_LUA_ARRAY "vyre.Array"

/* vyre.Program: owns its IR. p == NULL once released. */
struct vyre_lua_program {
    vyre_program *p;
};

/* The list of live views an owner keeps, for Arrays and Buffers alike (lvyre.c): a view
 * links itself into its owner's list when made and unlinks when released; releasing the
 * owner marks each view orphan (for the message) and releases it first. */
struct vyre_lua_vnode {
    struct vyre_lua_vnode *views, *next, *prev; /* owner: its views; view: its siblings */
    bool orphan;
};
void vyre_lua_vlink(struct vyre_lua_vnode *owner, struct vyre_lua_vnode *view);
void vyre_lua_vunlink(struct vyre_lua_vnode *owner, struct vyre_lua_vnode *view);
/* The struct of type T whose vnode member `vn` is at node n. */
#define VYRE_LUA_VIEW_OF(T, n) ((T *)(void *)((char *)(n)-offsetof(T, vn)))

/* vyre.Array: a host array of `count` elements of `type`, stored contiguously as
 * vyre_type_size(type) bytes each (bool as 32-bit 0/1 words). data == NULL only
 * when count == 0 or after release. */
struct vyre_lua_array {
    enum vyre_type type;
    uint64_t count;
    void *data;
    /* a:view: a view's data points into its parent's (user value 1 keeps the parent
     * alive); the parent lists its live views, and releasing it releases them too
     * (they are marked orphan, for the message). NULL for an ordinary array. */
    struct vyre_lua_array *parent;
    struct vyre_lua_vnode vn;
};

/* Checkers raise the standard "bad argument #i to 'f' (vyre.X expected, got Y)"
 * and also reject released objects with a message saying how to fix it. */
vyre_program *vyre_lua_checkprogram(lua_State *L, int idx);
/* The live Program at idx, or raises "fname: ..." (wrong type, freed) with a Fix. */
vyre_program *vyre_lua_checkprogram_named(lua_State *L, int idx, const char *fname);
struct vyre_lua_array *vyre_lua_toarray(lua_State *L, int idx); /* NULL if not a live array */
/* Pushes a new zero-filled array; raises on out-of-memory. */
struct vyre_lua_array *vyre_lua_newarray(lua_State *L, enum vyre_type t, uint64_t count);
/* Pushes a new array of type t converted from the plain table at tidx; a bad element
 * raises "fname: [prefix: ]element [i] must be ...". */
struct vyre_lua_array *vyre_lua_array_fromtable(lua_State *L, int tidx, enum vyre_type t,
                                                const char *fname, const char *prefix);
/* a:fill(v), a:iota([start, step]), a:random(seed [, lo, hi]) into a, reading the
 * arguments at stack index 2.. and raising "fname: ..." (lgen.c). */
void vyre_lua_array_fill(lua_State *L, struct vyre_lua_array *a, const char *fname);
void vyre_lua_array_iota(lua_State *L, struct vyre_lua_array *a, const char *fname);
void vyre_lua_array_random(lua_State *L, struct vyre_lua_array *a, const char *fname);

/* The same generators as a description (lgen.c): Buffers run it on the host (the
 * reference) or in a vyre.lib.basic kernel (CUDA), with the same elements. */
enum vyre_lua_gen_kind { VYRE_LUA_FILL, VYRE_LUA_IOTA, VYRE_LUA_RANDOM };
struct vyre_lua_gen {
    enum vyre_lua_gen_kind kind;
    enum vyre_type type;
    vyre_bits a, b;         /* fill: a = the value; iota: a = start, b = step */
    uint64_t seed;          /* random: splitmix64 draw i is element i */
    vyre_bits lo, hi, prev; /* random floats: lo, hi and the value just below hi */
    uint64_t ilo, span;     /* random integers: lo and hi - lo + 1 (0: every value) */
};
/* Reads the arguments at stack index 2.. (raising "fname: ..." with a Fix). */
void vyre_lua_gen_parse(lua_State *L, enum vyre_lua_gen_kind kind, enum vyre_type t,
                        const char *fname, struct vyre_lua_gen *g);
/* Elements 0..count of data, as described. */
void vyre_lua_gen_host(const struct vyre_lua_gen *g, void *data, uint64_t count);

/* "f32" etc.; raises naming fname and listing the valid type names. */
enum vyre_type vyre_lua_checktype(lua_State *L, int idx, const char *fname);

/* Lua value -> bits of type t (§7 conventions: range-checked integers, exact
 * integers only, booleans for bool); raises "fname: what ..." with a Fix. */
vyre_bits vyre_lua_tobits(lua_State *L, int idx, enum vyre_type t, const char *fname,
                          const char *what);
void vyre_lua_pushbits(lua_State *L, enum vyre_type t, vyre_bits b);
/* Element i (0-based) of a typed memory block, as bits / from bits. */
vyre_bits vyre_lua_loadbits(const void *data, enum vyre_type t, uint64_t i);
void vyre_lua_storebits(void *data, enum vyre_type t, uint64_t i, vyre_bits b);

/* Raises a vyre.Error (lerror.c) whose text is "fname: <err->message>" and whose code
 * is vyre_status_code(err->status) (never returns). */
int vyre_lua_raise(lua_State *L, const char *fname, const struct vyre_error *err);
/* Raises a vyre.Error with a stable code (docs/API.md "Errors": "arg", "type", "freed",
 * "self", "unsupported", "limit", "oom", ...) and the text formatted as by
 * lua_pushfstring, worded "vyre.fn: what. Fix: how" (never returns). */
int vyre_lua_fail(lua_State *L, const char *code, const char *fmt, ...);
/* Pushes (does not raise) the vyre.Error for text with code and the position prefix
 * where (NULL: none), for callers that add fields (line, column) before lua_error. */
void vyre_lua_pusherror(lua_State *L, const char *code, const char *text, const char *where);
/* Pushes the Lua function registered with core.set_hook(name, fn) (lerror.c), or raises
 * "fname: needs the Lua part of vyre" with code "unsupported". */
void vyre_lua_pushhook(lua_State *L, const char *name, const char *fname);
/* Pushes the hook registered under name (or nil) and returns its Lua type. */
int vyre_lua_gethook(lua_State *L, const char *name);
/* Registers the value at idx (a function or nil) as hook name; pushes the previous one
 * and returns 1 (the result of core.set_hook and the two older setters of lmega.c). */
int vyre_lua_sethook(lua_State *L, const char *name, int idx);

/* The userdata of class tname at idx, or an error naming the method called and what it
 * got ("vyre.Launch:launch: called on a vyre.Buffer, not a vyre.Launch. Fix: ...") in
 * place of luaL_checkudata's "bad argument #1 to '?'". */
void *vyre_lua_checkself(lua_State *L, int idx, const char *tname);
/* The one wording of a wrong self, for checkers that know the method's full name fname
 * ("vyre.Backend:run"): "fname: called on a X, not a TNAME. Fix: call it with a colon on a
 * TNAME, e.g. obj:run(...)", code "self" (never returns). */
int vyre_lua_wrongself(lua_State *L, int idx, const char *tname, const char *fname);

/* The one option-key check of every options table the binding reads: raises "fname:
 * unknown option 'k'. Fix: use A, B, ... (names are lower case)" when the table at t has
 * a key not in allowed (NULL-ended), so a misspelt option is never ignored. The caller
 * reads the values with lua_getfield. */
void vyre_lua_checkopts(lua_State *L, int t, const char *const *allowed, const char *fname);

/* The integer at idx (def when none or nil), else "fname: WHAT must be an integer (got
 * X). Fix: FIX" in place of luaL_optinteger's "bad argument #n to '?'". */
lua_Integer vyre_lua_optint(lua_State *L, int idx, lua_Integer def, const char *fname,
                            const char *what, const char *fix);

/* The (first [, count]) arguments at 2 and 3 of a view method over `held` elements
 * (1-based first, count defaulting to the rest), checked with errors naming fname and
 * using `self` ("a", "buf") in the Fix. Returns the 0-based first; *count set. */
uint64_t vyre_lua_view_range(lua_State *L, uint64_t held, const char *fname, const char *self,
                             uint64_t *count);

/* Host memory for arrays and reference buffers (zeroed when `zero`): refused when the
 * live total of such memory would pass the host cap (VYRE_HOST_MAX_BYTES, default half
 * of physical memory; after a full collection) with a Fix, and
 * reported to Lua's collector first (a GC step as if `bytes` were allocated), since
 * memory outside the Lua allocator is otherwise invisible to its pacing. Raises on
 * failure; bytes > 0. */
void *vyre_lua_host_alloc(lua_State *L, uint64_t bytes, bool zero, const char *fname);
/* The cap, collector step and accounting of vyre_lua_host_alloc without the allocation,
 * for host memory another layer allocates (a host-memory backend's buffers); raises as
 * it does. vyre_lua_host_unreserve gives the bytes back. */
void vyre_lua_host_reserve(lua_State *L, uint64_t bytes, const char *fname);
void vyre_lua_host_unreserve(uint64_t bytes);
/* Frees what vyre_lua_host_alloc gave (bytes: the size asked for); NULL is a no-op. */
void vyre_lua_host_free(void *mem, uint64_t bytes);
/* Host bytes live in arrays and reference buffers of this process (the capped total). */
uint64_t vyre_lua_host_live(void);

/* Creates a metatable named tname with __index = methods, metamethods set, and
 * leaves nothing on the stack. */
void vyre_lua_newclass(lua_State *L, const char *tname, const luaL_Reg *methods,
                       const luaL_Reg *metamethods);

/* A class whose __index serves fields before methods: __index is index_fn with the
 * methods table as upvalue 1, and index_fn ends with `return vyre_lua_method(L)`.
 * methods.free is free_fn without upvalues, so it is the same function as __gc and
 * __close. With self_upvalue, every other method gets the metatable as upvalue 1, so a
 * hot method checks its self without a registry lookup. */
void vyre_lua_newclass_fields(lua_State *L, const char *tname, const luaL_Reg *methods,
                              const luaL_Reg *metamethods, lua_CFunction index_fn,
                              lua_CFunction free_fn, bool self_upvalue);
/* The method named by argument 2 from the methods table in upvalue 1, or nil. */
int vyre_lua_method(lua_State *L);

/* A method that went away when the API took one name per thing (docs/API.md): calling
 * tname's method `old` raises "<tname>:<old>() is now <now>. Fix: <fix>". Each entry is
 * {old, now, fix}; the list ends with {NULL}. Call after the class is created (either
 * kind: the methods table is __index or its closure's upvalue 1). */
struct vyre_lua_renamed {
    const char *old, *now, *fix;
};
void vyre_lua_add_renamed(lua_State *L, const char *tname, const struct vyre_lua_renamed *list);

/* Per-file openers, called by luaopen_vyre_core with the module table on top of
 * the stack: each registers its classes and adds its functions to that table. */
/* lerror.c: vyre.Error, core.error_new, core.extend, core.methods, core.set_hook */
void vyre_lua_open_error(lua_State *L);
void vyre_lua_open_gen(lua_State *L); /* lgen.c: core.random_kernel_text */
void vyre_lua_open_program(lua_State *L);
void vyre_lua_open_fuse(lua_State *L); /* lfuse.c: core.fuse */
void vyre_lua_open_array(lua_State *L);
void vyre_lua_open_ref(lua_State *L);
void vyre_lua_open_ops(lua_State *L);     /* lops.c: core.ops, reserved_names, atomic_ops */
void vyre_lua_open_backend(lua_State *L); /* lbackend.c: both backends and their types */
int vyre_lua_backends(lua_State *L);      /* lbackends.c: core.backends() */

#endif
