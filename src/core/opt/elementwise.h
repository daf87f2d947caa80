/* elementwise.h — which programs are elementwise, and which of their buffers can move
 * four elements per access (docs/ARCHITECTURE.md §5, "The vector entry"). The PTX
 * emitter asks this of its optimised copy to decide whether to emit a vector entry
 * (src/codegen/ptx_vec.c); the C tests ask it directly. */
#ifndef VYRE_OPT_ELEMENTWISE_H
#define VYRE_OPT_ELEMENTWISE_H

#include "ir.h"

/* Roles of a buffer declaration (bit flags). */
enum {
    VYRE_EW_GID = 1,    /* loaded or stored at the invocation's own index somewhere */
    VYRE_EW_VLOAD = 2,  /* every own-index load can read one vector loaded up front */
    VYRE_EW_VSTORE = 4, /* every own-index store can go to one vector stored at the end */
    VYRE_EW_LIMIT = 8,  /* an if compares the own index below its count (a buffer) or its
                           value (a u32 param): the fast path needs 4 invocations below it */
};

struct vyre_ew {
    bool ok;         /* elementwise, with at least one vector access */
    char why[160];   /* when !ok: the first reason found ("reads (lid x)", ...) */
    uint8_t *role;   /* per declaration: VYRE_EW_* flags */
    bool *gid_slot;  /* per variable slot: a let never `set` that holds the own index */
    uint32_t nvload; /* buffers with VYRE_EW_VLOAD */
    uint32_t nvstore;
};

/* Analyses validated program p. A program is elementwise when its workgroup is 1-D, it
 * reads no builtin but (gid x), has no barrier, shared array, atomic or subgroup op,
 * every store and every load of a write/read_write buffer is at the own index (gid x,
 * directly, through lets never `set`, or through a 32-bit integer cast or bitcast of
 * it), and `read` buffers are loaded at the own index or anywhere. VYRE_ERR_NOMEM is
 * the only failure; *out is then cleared. Free with vyre_ew_free. */
VYRE_INTERNAL enum vyre_status vyre_opt_elementwise(const vyre_program *p, struct vyre_ew *out);
VYRE_INTERNAL void vyre_ew_free(struct vyre_ew *ew);

/* True when e is the own index (u32 or i32 bits equal to (gid x)). */
VYRE_INTERNAL bool vyre_ew_is_gid(const struct vyre_ew *ew, const struct vyre_expr *e);
/* True when cond holds on the fast path, for every invocation of a step: (lt G X) or
 * (gt X G) with G the own index (u32) and X (len B) of a buffer with VYRE_EW_GID or
 * VYRE_EW_LIMIT, or a u32 param with VYRE_EW_LIMIT; or a land of such. Every
 * condition of that form in an if of the program gives its X VYRE_EW_LIMIT. */
VYRE_INTERNAL bool vyre_ew_fast_true(const struct vyre_ew *ew, const vyre_program *p,
                                     const struct vyre_expr *cond);

#endif
