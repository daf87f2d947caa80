/* ptx_worklist.c — worklists in PTX (ARCHITECTURE.md §5, "Worklists").
 *
 * Each worklist declaration W adds one parameter, `.u64 w_W`: the global address of
 * its 32-byte device header
 *     +0 u64 cur    the current items        +16 u32 cur_count
 *     +8 u64 next   the next round's items   +20 u32 next_count (pushes so far)
 *                                            +24 u32 capacity
 *                                            +28 u32 overflow_needed
 * read once at entry: (load W i) and (len W) then lower exactly like a buffer's, with
 * the current items as the pointer and min(cur_count, capacity) as the count (the
 * runtime's advance swaps cur/next in the header on the stream, so the kernel's
 * arguments never change between rounds and a captured graph stays valid).
 *
 * (push W v) is warp-aggregated: the lanes pushing together (activemask) count
 * themselves (popc), the lowest of them does one atom.add on next_count for all, the
 * base is shuffled to the others, and each stores at base + its rank among them. A slot
 * at or past the capacity is not stored; the leader then raises overflow_needed to
 * base + count (red.max), which the runtime reports after the round.
 *
 * Programs with a worklist also get a second entry, NAME_wl, for launches sized by a
 * worklist ({n = wl}): its extra parameter `.u64 vyre_wn` is the header whose
 * min(cur_count, capacity) is the number of invocations, read on the device. The
 * launch uses a bounded grid; each block loops over virtual workgroups
 * vwg = ctaid.x, ctaid.x + nctaid.x, ... below ceil(n / wgsize.x), with wgid.x = vwg,
 * ngroups.x = that count and gid.x = vwg * wgsize.x + tid.x, so the body sees exactly
 * the dispatch of {n = count} (y and z: one workgroup). The loop bound is uniform over
 * the block, so barriers in the body stay legal; a `return` ends the invocation's
 * current virtual workgroup only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx.h"

struct ptx_wl {
    struct ptx_reg *hdr, *next, *cap; /* per decl (worklists only) */
    bool stride;                      /* emitting NAME_wl */
    struct ptx_reg vwg, nv;           /* the current virtual workgroup, their count */
};

static bool alloc_wl(struct ptx_ctx *c) {
    if (c->wl) return true;
    size_t nd = c->p->ndecls ? c->p->ndecls : 1;
    c->wl = calloc(1, sizeof *c->wl);
    if (c->wl) {
        c->wl->hdr = calloc(nd, sizeof *c->wl->hdr);
        c->wl->next = calloc(nd, sizeof *c->wl->next);
        c->wl->cap = calloc(nd, sizeof *c->wl->cap);
    }
    if (!c->wl || !c->wl->hdr || !c->wl->next || !c->wl->cap) {
        vyre_ptx_fail(c, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
        return false;
    }
    return true;
}

void vyre_ptx_wl_free(struct ptx_ctx *c) {
    if (!c->wl) return;
    free(c->wl->hdr);
    free(c->wl->next);
    free(c->wl->cap);
    free(c->wl);
    c->wl = NULL;
}

/* Loads header `h` (a generic .u64 parameter value) into the current-items pointer,
 * the next-items pointer, the capacity and the count min(cur_count, capacity). */
static void load_header(struct ptx_ctx *c, const char *param, struct ptx_reg *hdr,
                        struct ptx_reg *cur, struct ptx_reg *next, struct ptx_reg *cap,
                        struct ptx_reg *len) {
    struct ptx_reg raw = vyre_ptx_reg(c, PTX_RD), cnt = vyre_ptx_reg(c, PTX_R);
    *hdr = vyre_ptx_reg(c, PTX_RD);
    *cur = vyre_ptx_reg(c, PTX_RD);
    *next = vyre_ptx_reg(c, PTX_RD);
    *cap = vyre_ptx_reg(c, PTX_R);
    *len = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "ld.param.u64 %s, [%s]", raw.s, param);
    vyre_ptx_ins(c, "cvta.to.global.u64 %s, %s", hdr->s, raw.s);
    vyre_ptx_ins(c, "ld.global.u64 %s, [%s]", cur->s, hdr->s);
    vyre_ptx_ins(c, "ld.global.u64 %s, [%s+8]", next->s, hdr->s);
    vyre_ptx_ins(c, "ld.global.u32 %s, [%s+16]", cnt.s, hdr->s);
    vyre_ptx_ins(c, "ld.global.u32 %s, [%s+24]", cap->s, hdr->s);
    vyre_ptx_ins(c, "min.u32 %s, %s, %s", len->s, cnt.s, cap->s);
}

void vyre_ptx_wl_prologue(struct ptx_ctx *c) {
    const vyre_program *p = c->p;
    if (!p->nworklists || !alloc_wl(c)) return;
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind != VYRE_DECL_WORKLIST) continue;
        char param[VYRE_MAX_NAME + 4];
        snprintf(param, sizeof param, "w_%s", d->name);
        load_header(c, param, &c->wl->hdr[i], &c->decl_ptr[i], &c->wl->next[i], &c->wl->cap[i],
                    &c->decl_len[i]);
    }
}

void vyre_ptx_wl_reload(struct ptx_ctx *c) {
    const vyre_program *p = c->p;
    if (!p->nworklists || !c->wl) return;
    for (uint32_t i = 0; i < p->ndecls; i++) {
        if (p->decls[i].kind != VYRE_DECL_WORKLIST) continue;
        const char *h = c->wl->hdr[i].s;
        struct ptx_reg cnt = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "ld.global.u64 %s, [%s]", c->decl_ptr[i].s, h);
        vyre_ptx_ins(c, "ld.global.u64 %s, [%s+8]", c->wl->next[i].s, h);
        vyre_ptx_ins(c, "ld.global.u32 %s, [%s+16]", cnt.s, h);
        vyre_ptx_ins(c, "ld.global.u32 %s, [%s+24]", c->wl->cap[i].s, h);
        vyre_ptx_ins(c, "min.u32 %s, %s, %s", c->decl_len[i].s, cnt.s, c->wl->cap[i].s);
    }
}

/* Run by the last block to arrive at the barrier that ends a converge round, after it
 * acquired every block's pushes: the same advance as the runtime's (worklist.c), with
 * the pushed count clamped to the capacity, skipped when the round overflowed (the host
 * reports the overflow after the run, naming the capacity needed). */
void vyre_ptx_wl_advance(struct ptx_ctx *c, uint32_t decl, struct ptx_reg pushed) {
    if (!c->wl) {
        vyre_ptx_fail(c, VYRE_ERR_INVALID,
                      "ptx: converge on a worklist without its prologue. Fix: validate the "
                      "program first");
        return;
    }
    const char *h = c->wl->hdr[decl].s;
    struct ptx_reg n = vyre_ptx_reg(c, PTX_R), cap = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg ov = vyre_ptx_reg(c, PTX_R), ok = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg a = vyre_ptx_reg(c, PTX_RD), b = vyre_ptx_reg(c, PTX_RD);
    vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+20]", n.s, h);
    vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+24]", cap.s, h);
    vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+28]", ov.s, h);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, 0", ok.s, ov.s);
    vyre_ptx_ins(c, "@%s ld.relaxed.gpu.global.u64 %s, [%s]", ok.s, a.s, h);
    vyre_ptx_ins(c, "@%s ld.relaxed.gpu.global.u64 %s, [%s+8]", ok.s, b.s, h);
    vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u64 [%s], %s", ok.s, h, b.s);
    vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u64 [%s+8], %s", ok.s, h, a.s);
    vyre_ptx_ins(c, "min.u32 %s, %s, %s", n.s, n.s, cap.s);
    vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u32 [%s+16], %s", ok.s, h, n.s);
    vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u32 [%s+20], 0", ok.s, h);
    vyre_ptx_ins(c, "setp.ne.and.u32 %s, %s, 0, %s", pushed.s, n.s, ok.s);
}

void vyre_ptx_wl_push(struct ptx_ctx *c, const struct vyre_stmt *s) {
    if (!c->wl) {
        vyre_ptx_fail(c, VYRE_ERR_INVALID,
                      "ptx: push without a worklist prologue. Fix: validate "
                      "the program first");
        return;
    }
    uint32_t d = s->decl;
    enum vyre_type t = c->p->decls[d].type;
    struct ptx_reg v = vyre_ptx_expr(c, s->value);
    struct ptx_reg m = vyre_ptx_reg(c, PTX_R), lt = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg rank = vyre_ptx_reg(c, PTX_R), cnt = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg rev = vyre_ptx_reg(c, PTX_R), lead = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg base = vyre_ptx_reg(c, PTX_R), idx = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg end = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg isl = vyre_ptx_reg(c, PTX_P), ovf = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg fits = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg off = vyre_ptx_reg(c, PTX_RD), at = vyre_ptx_reg(c, PTX_RD);
    const char *h = c->wl->hdr[d].s;
    if (c->sm < 75) {
        /* sm_70 is emitted as PTX 6.0, which has no activemask: one atomic per item */
        vyre_ptx_ins(c, "atom.global.add.u32 %s, [%s+20], 1", idx.s, h);
        vyre_ptx_ins(c, "add.u32 %s, %s, 1", end.s, idx.s);
        vyre_ptx_ins(c, "setp.gt.u32 %s, %s, %s", ovf.s, end.s, c->wl->cap[d].s);
        vyre_ptx_ins(c, "@%s red.global.max.u32 [%s+28], %s", ovf.s, h, end.s);
    } else {
        vyre_ptx_ins(c, "activemask.b32 %s", m.s);
        vyre_ptx_ins(c, "mov.u32 %s, %%lanemask_lt", lt.s);
        vyre_ptx_ins(c, "and.b32 %s, %s, %s", lt.s, lt.s, m.s);
        vyre_ptx_ins(c, "popc.b32 %s, %s", rank.s, lt.s);
        vyre_ptx_ins(c, "popc.b32 %s, %s", cnt.s, m.s);
        /* the leader is the lowest lane present: bfind.shiftamt of the reversed mask */
        vyre_ptx_ins(c, "brev.b32 %s, %s", rev.s, m.s);
        vyre_ptx_ins(c, "bfind.shiftamt.u32 %s, %s", lead.s, rev.s);
        vyre_ptx_ins(c, "setp.eq.u32 %s, %s, 0", isl.s, rank.s);
        vyre_ptx_ins(c, "mov.u32 %s, 0", base.s);
        vyre_ptx_ins(c, "@%s atom.global.add.u32 %s, [%s+20], %s", isl.s, base.s, h, cnt.s);
        vyre_ptx_ins(c, "shfl.sync.idx.b32 %s, %s, %s, 31, %s", base.s, base.s, lead.s, m.s);
        vyre_ptx_ins(c, "add.u32 %s, %s, %s", idx.s, base.s, rank.s);
        vyre_ptx_ins(c, "add.u32 %s, %s, %s", end.s, base.s, cnt.s);
        vyre_ptx_ins(c, "setp.gt.u32 %s, %s, %s", ovf.s, end.s, c->wl->cap[d].s);
        vyre_ptx_ins(c, "and.pred %s, %s, %s", ovf.s, ovf.s, isl.s);
        vyre_ptx_ins(c, "@%s red.global.max.u32 [%s+28], %s", ovf.s, h, end.s);
    }
    vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", fits.s, idx.s, c->wl->cap[d].s);
    vyre_ptx_ins(c, "mul.wide.u32 %s, %s, %u", off.s, idx.s, (unsigned)vyre_type_size(t));
    vyre_ptx_ins(c, "add.u64 %s, %s, %s", at.s, c->wl->next[d].s, off.s);
    vyre_ptx_ins(c, "@%s st.global%s [%s], %s", fits.s, vyre_ptx_sfx(t), at.s, v.s);
}

void vyre_ptx_wl_params(struct ptx_ctx *c, struct vyre_pbuf *out, bool *first) {
    for (uint32_t i = 0; i < c->p->ndecls; i++) {
        const struct vyre_decl *d = &c->p->decls[i];
        if (d->kind != VYRE_DECL_WORKLIST) continue;
        vyre_pbuf_printf(out, "%s\n\t.param .u64 w_%s", *first ? "" : ",", d->name);
        *first = false;
    }
}

/* ---- NAME_wl: the entry of launches sized by a worklist ---------------------------- */

bool vyre_ptx_wl_builtin(struct ptx_ctx *c, const struct vyre_expr *e, struct ptx_reg *out) {
    if (!c->wl || !c->wl->stride || e->u.builtin.axis != 0) return false;
    switch (e->u.builtin.which) {
    case VYRE_WGID: *out = c->wl->vwg; return true;
    case VYRE_NGROUPS: *out = c->wl->nv; return true;
    case VYRE_GID: {
        struct ptx_reg t = vyre_ptx_reg(c, PTX_R), n = vyre_ptx_reg(c, PTX_R);
        *out = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "mov.u32 %s, %%tid.x", t.s);
        vyre_ptx_ins(c, "mov.u32 %s, %%ntid.x", n.s);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %s, %s", out->s, c->wl->vwg.s, n.s, t.s);
        return true;
    }
    default: return false;
    }
}

bool vyre_ptx_wl_is_entry(const struct ptx_ctx *c) { return c->wl && c->wl->stride; }

bool vyre_ptx_wl_return(struct ptx_ctx *c) {
    if (!c->wl || !c->wl->stride) return false;
    vyre_ptx_ins(c, "bra WLNEXT");
    return true;
}

enum vyre_status vyre_ptx_wl_emit(vyre_program *p, unsigned sm, bool debug, struct vyre_pbuf *out,
                                  struct vyre_error *err) {
    if (!p->nworklists || p->has_grid) return VYRE_OK;
    struct ptx_ctx c;
    enum vyre_status st = vyre_ptx_ctx_init(&c, p, sm, err);
    if (st == VYRE_OK) {
        c.debug = debug;
        if (alloc_wl(&c)) c.wl->stride = true;
    }
    if (st == VYRE_OK && c.st == VYRE_OK) {
        struct ptx_reg hdr, cur, next, cap, n;
        struct ptx_reg q = vyre_ptx_reg(&c, PTX_P), step = vyre_ptx_reg(&c, PTX_R);
        vyre_pbuf_puts(&c.body, "\t// sized by a worklist: virtual workgroups below "
                                "ceil(count / wgsize.x), grid-stride\n");
        load_header(&c, "vyre_wn", &hdr, &cur, &next, &cap, &n);
        c.wl->nv = vyre_ptx_reg(&c, PTX_R);
        c.wl->vwg = vyre_ptx_reg(&c, PTX_R);
        /* ceil(n / wgsize.x) without overflow: n / w + (n % w != 0) */
        struct ptx_reg rem = vyre_ptx_reg(&c, PTX_R), qr = vyre_ptx_reg(&c, PTX_P);
        vyre_ptx_ins(&c, "div.u32 %s, %s, %u", c.wl->nv.s, n.s, (unsigned)p->workgroup[0]);
        vyre_ptx_ins(&c, "rem.u32 %s, %s, %u", rem.s, n.s, (unsigned)p->workgroup[0]);
        vyre_ptx_ins(&c, "setp.ne.u32 %s, %s, 0", qr.s, rem.s);
        vyre_ptx_ins(&c, "@%s add.u32 %s, %s, 1", qr.s, c.wl->nv.s, c.wl->nv.s);
        vyre_ptx_ins(&c, "mov.u32 %s, %%ctaid.x", c.wl->vwg.s);
        vyre_ptx_ins(&c, "mov.u32 %s, %%nctaid.x", step.s);
        vyre_pbuf_puts(&c.body, "WLLOOP:\n");
        vyre_ptx_ins(&c, "setp.ge.u32 %s, %s, %s", q.s, c.wl->vwg.s, c.wl->nv.s);
        vyre_ptx_ins(&c, "@%s bra WLDONE", q.s);
        /* per virtual workgroup: parameters, shared arrays zeroed (§2), headers */
        vyre_ptx_prologue(&c);
        vyre_ptx_wl_prologue(&c);
        vyre_ptx_subgroup_prologue(&c);
        vyre_ptx_block(&c, &p->body);
        vyre_pbuf_puts(&c.body, "WLNEXT:\n");
        /* the next virtual workgroup starts after every invocation left this one
         * (shared arrays and barriers belong to one workgroup at a time) */
        if (p->nshared) vyre_ptx_ins(&c, "bar.sync 0");
        vyre_ptx_ins(&c, "add.u32 %s, %s, %s", c.wl->vwg.s, c.wl->vwg.s, step.s);
        vyre_ptx_ins(&c, "bra WLLOOP");
        vyre_pbuf_puts(&c.body, "WLDONE:\n");
        st = c.st;
    } else if (st == VYRE_OK) {
        st = c.st;
    }
    if (st == VYRE_OK) {
        char name[VYRE_MAX_NAME + 8];
        snprintf(name, sizeof name, "%s_wl", p->name);
        vyre_pbuf_puts(out, "\n");
        vyre_ptx_entry(&c, out, name, ".param .u64 vyre_wn");
        if (c.body.oom || out->oom)
            st = vyre_error_set(err, VYRE_ERR_NOMEM,
                                "ptx: out of memory writing PTX. Fix: free memory");
    }
    vyre_ptx_ctx_free(&c);
    return st;
}
