/* validate_worklist.c — the validator's rules for worklists (ARCHITECTURE.md §2):
 * (worklist NAME TYPE) declarations, (len W) and (load W i) on the current items,
 * (push W v) onto the next round's, and where a worklist may stand at all. */
#include <stdio.h>

#include "validate_int.h"

static const char *tn(enum vyre_type t) { return t == VYRE_VOID ? "void" : vyre_type_name(t); }

/* Worklist items live in global memory as their type's bits; a bool would need the
 * word convention of buffers for no gain, so the item types are the numeric ones. */
void vyre_vv_worklist_decl(struct vyre_vv *v, const struct vyre_decl *d) {
    if (d->slot == VYRE_MAX_WORKLISTS)
        vyre_vv_report(v, "limit-worklists", "merge worklists, or split the program",
                       "the program declares more than %u worklists", VYRE_MAX_WORKLISTS);
    if ((unsigned)d->type < VYRE_TYPE_COUNT && d->type == VYRE_BOOL)
        vyre_vv_report(v, "worklist-type",
                       "give the worklist a numeric item type, e.g. (worklist frontier u32)",
                       "the worklist '%.64s' has item type bool; items are i32 u32 i64 u64 f32 "
                       "or f64",
                       d->name ? d->name : "");
}

uint32_t vyre_vv_find_worklist(const struct vyre_vv *v, const char *name) {
    if (!name) return UINT32_MAX;
    uint32_t k = vyre_vv_lookup(v, name);
    if (k == UINT32_MAX || v->names[k].kind != VYRE_VV_DECL) return UINT32_MAX;
    uint32_t d = v->names[k].index;
    return v->p->decls[d].kind == VYRE_DECL_WORKLIST ? d : UINT32_MAX;
}

/* (push W v): W a declared worklist, v of its item type. */
void vyre_vv_check_push(struct vyre_vv *v, struct vyre_stmt *s, const char *q) {
    enum vyre_type t = vyre_vv_child(v, "value", s->value);
    uint32_t d = vyre_vv_find_worklist(v, s->buf);
    s->decl = d;
    if (d == UINT32_MAX) {
        uint32_t k = s->buf ? vyre_vv_lookup(v, s->buf) : UINT32_MAX;
        if (k == UINT32_MAX)
            vyre_vv_report(v, "undeclared-name",
                           "declare it first: (worklist NAME TYPE) among the declarations",
                           "no worklist named '%.64s' is declared (in %s)", s->buf ? s->buf : "",
                           q);
        else
            vyre_vv_report(v, "not-a-worklist",
                           "push appends to a worklist: declare one with (worklist NAME TYPE); "
                           "write a buffer with (store BUF i v)",
                           "'%.64s' is not a worklist (in %s)", s->buf, q);
        return;
    }
    enum vyre_type want = v->p->decls[d].type;
    if (t != VYRE_VOID && (unsigned)want < VYRE_TYPE_COUNT && t != want) {
        char qv[VYRE_VV_QUOTE], fix[96];
        size_t old = vyre_vv_push(v, "value");
        snprintf(fix, sizeof fix, "wrap it in (cast %s ...)", tn(want));
        vyre_vv_report_cast(v, "type-mismatch", want, fix,
                            "the pushed value %s is %s but the worklist '%.64s' holds %s",
                            vyre_vv_qe(s->value, qv), tn(t), s->buf, tn(want));
        vyre_vv_pop(v, old);
    }
}

/* Worklists and grid statements go together (docs/GRID.md): a converge on a
 * worklist advances it at every round boundary inside one dispatch (both backends), and
 * len of a worklist is not grid-uniform (validate_grid.c). Nothing else to check. */
void vyre_vv_worklist_rules(struct vyre_vv *v) { (void)v; }
