/* lvyre_box.h — private helpers of the Lua binding files written alongside lvyre.c:
 * boxes that make C heap memory owned by a Lua userdata, so that an error raised
 * while the memory is live (out of memory inside lua_pushlstring, a bad argument)
 * cannot leak it. */
#ifndef VYRE_LVYRE_BOX_H
#define VYRE_LVYRE_BOX_H

#include "lvyre.h"

/* Pushes a userdata holding one pointer (initially NULL) that is passed to
 * vyre_free when the userdata is collected. Store the pointer into *box right
 * after allocating it; call vyre_lua_box_release(box) to free it early. */
void **vyre_lua_newbox(lua_State *L);
void vyre_lua_box_release(void **box);

/* Pushes a userdata of `size` zeroed bytes with no metatable: scratch memory
 * that the garbage collector reclaims. */
void *vyre_lua_scratch(lua_State *L, size_t size);

/* Raises "fname: bad argument #idx to 'short' (expected expected, got T). Fix: fix",
 * where short is fname after its last '.' or ':' and T is the value's __name or
 * type name: the lauxlib wording, plus the function's full name and a fix. */
int vyre_lua_typeerror(lua_State *L, int idx, const char *fname, const char *expected,
                       const char *fix);

/* Pushes a typed element (i is 0-based) of an array / reads a Lua value into it. */
void vyre_lua_array_push(lua_State *L, const struct vyre_lua_array *a, uint64_t i);

/* Reads a launch grid table at idx into g (missing y, z axes are 1); raises naming fname. */
void vyre_lua_checkgrid(lua_State *L, int idx, uint32_t g[3], const char *fname);

#endif
