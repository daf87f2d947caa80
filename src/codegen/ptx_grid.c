/* ptx_grid.c — the cooperative kernel of a program with grid statements (ARCHITECTURE.md
 * §3, docs/GRID.md). The runtime launches as many workgroups as can be co-resident
 * (a 1-D physical grid); each runs the program's virtual workgroups of a section in
 * a grid-stride loop, with wgid, gid and ngroups computed from the virtual grid the
 * runtime passes, so they keep the dispatch's meaning. Between sections all blocks
 * meet at our own grid barrier, one word (scratch+16) and one atomic per block:
 *
 *   bar.sync 0
 *   thread 0: atom.release.gpu.add [word], a   (block 0: a = 0x80000001 - blocks, else 1;
 *             the release publishes the block's writes, which bar.sync ordered before it)
 *             spin on ld.relaxed.gpu until bit 31 of the word differs from the old value's,
 *             then one ld.acquire.gpu of the word (it reads the last arrival's value or a
 *             later one of the same chain of atomics, so it synchronises with every block's
 *             release; an acquire per spin iteration would invalidate L1 every time)
 *   bar.sync 0
 *
 * The word's low 31 bits are 0 between barriers (the adds sum to 0x80000000), so bit 31
 * flips exactly at the last arrival, and that block knows it is last from its own
 * atomic: (old + a) ^ old has bit 31 set. A converge loop's barriers carry an action
 * which that last block runs while the others wait on a generation word (scratch+4):
 *
 *   bar.sync 0
 *   thread 0: gen = ld.relaxed [scratch+4]; atom.release.gpu.add [word], a
 *             last: fence.acq_rel.gpu (acquire everyone's writes); the action;
 *                   st.release.gpu [scratch+4] = gen + 1
 *             others: spin ld.relaxed [scratch+4] == gen, then one ld.acquire
 *   bar.sync 0
 *
 * The action: zero the flag at entry; at the end of a round read the flag, decide
 * whether another round runs, zero the flag if so, count the round ([scratch+12],
 * reported as `rounds`) and publish the decision ([scratch+8]), which thread 0 of each
 * block passes to its block through shared memory. So a converge round costs one
 * barrier: the flag test is folded into the barrier that ends the round's last layer.
 * A section boundary costs a barrier only when a section ran since the last one (the
 * `dirty` predicate, grid-uniform), so adjacent boundaries are one barrier.
 *
 * Each section is zero-filled shared memory (its own arrays laid out from offset 0 of
 * one window, so the window is the largest section's need), its statements, and for
 * `return` a jump to the end of the current virtual workgroup. */
#include "ptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte offsets in the scratch block the runtime passes (vyre_cuda: 32 bytes, zeroed);
 * word 0 (the arrival counter of an earlier scheme) is unused. */
#define GS_GEN 4
#define GS_DECISION 8
#define GS_ROUNDS 12
#define GS_FAST 16 /* the plain barrier's word: bit 31 flips once per barrier */

enum gs_action { GS_PLAIN, GS_ZERO, GS_ROUND };

/* ---- parameters, declarations, prologue -------------------------------------------- */

void vyre_ptx_grid_params(struct ptx_ctx *c, struct vyre_pbuf *out, bool *first) {
    (void)c;
    vyre_pbuf_printf(out,
                     "%s\n\t.param .u64 vy_scratch,\n\t.param .u32 vy_ng_x,\n"
                     "\t.param .u32 vy_ng_y,\n\t.param .u32 vy_ng_z",
                     *first ? "" : ",");
    *first = false;
}

void vyre_ptx_grid_decls(struct ptx_ctx *c, struct vyre_pbuf *out) {
    if (c->gs_smem) vyre_pbuf_printf(out, "\t.shared .align 8 .b8 vy_smem[%u];\n", c->gs_smem);
    vyre_pbuf_puts(out, "\t.shared .align 4 .u32 vy_word;\n");
}

static unsigned label(struct ptx_ctx *c) { return c->gs_label++; }

void vyre_ptx_grid_prologue(struct ptx_ctx *c) {
    static const char ax[3] = {'x', 'y', 'z'};
    vyre_pbuf_puts(&c->body, "\t// grid: virtual workgroups, scratch word\n");
    struct ptx_reg raw = vyre_ptx_reg(c, PTX_RD);
    c->gs_scr = vyre_ptx_reg(c, PTX_RD);
    vyre_ptx_ins(c, "ld.param.u64 %s, [vy_scratch]", raw.s);
    vyre_ptx_ins(c, "cvta.to.global.u64 %s, %s", c->gs_scr.s, raw.s);
    for (int a = 0; a < 3; a++) {
        c->gs_ng[a] = vyre_ptx_reg(c, PTX_R);
        c->gs_wgid[a] = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "ld.param.u32 %s, [vy_ng_%c]", c->gs_ng[a].s, ax[a]);
    }
    /* virtual workgroups = x * y * z (up to 2^63: u64); physical blocks */
    struct ptx_reg t = vyre_ptx_reg(c, PTX_RD), y = vyre_ptx_reg(c, PTX_RD);
    c->gs_nv = vyre_ptx_reg(c, PTX_RD);
    c->gs_nb = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mul.wide.u32 %s, %s, %s", t.s, c->gs_ng[0].s, c->gs_ng[1].s);
    vyre_ptx_ins(c, "cvt.u64.u32 %s, %s", y.s, c->gs_ng[2].s);
    vyre_ptx_ins(c, "mul.lo.u64 %s, %s, %s", c->gs_nv.s, t.s, y.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%nctaid.x", c->gs_nb.s);
    c->gs_1d = vyre_ptx_reg(c, PTX_P); /* the virtual grid is 1-D: wgid.x = v */
    struct ptx_reg yz = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "or.b32 %s, %s, %s", yz.s, c->gs_ng[1].s, c->gs_ng[2].s);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, 1", c->gs_1d.s, yz.s);
    /* thread 0 of the block runs the barrier protocol */
    struct ptx_reg tx = vyre_ptx_reg(c, PTX_R), ty = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg tz = vyre_ptx_reg(c, PTX_R), o = vyre_ptx_reg(c, PTX_R);
    c->gs_tid0 = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.x", tx.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.y", ty.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.z", tz.s);
    vyre_ptx_ins(c, "or.b32 %s, %s, %s", o.s, tx.s, ty.s);
    vyre_ptx_ins(c, "or.b32 %s, %s, %s", o.s, o.s, tz.s);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, 0", c->gs_tid0.s, o.s);
    /* block 0 restarts the round count; it arrives at every barrier after this store */
    struct ptx_reg b = vyre_ptx_reg(c, PTX_R), p = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "mov.u32 %s, %%ctaid.x", b.s);
    vyre_ptx_ins(c, "setp.eq.and.u32 %s, %s, 0, %s", p.s, b.s, c->gs_tid0.s);
    vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u32 [%s+%d], 0", p.s, c->gs_scr.s, GS_ROUNDS);
    c->gs_dirty = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, %s", c->gs_dirty.s, b.s, b.s); /* false */
    /* the barrier word's add, once: block 0 0x80000001 - blocks, the others 1 */
    struct ptx_reg b0 = vyre_ptx_reg(c, PTX_P);
    c->gs_add = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, 0", b0.s, b.s);
    vyre_ptx_ins(c, "sub.u32 %s, 0x80000001, %s", c->gs_add.s, c->gs_nb.s);
    vyre_ptx_ins(c, "@!%s mov.u32 %s, 1", b0.s, c->gs_add.s);
}

/* ---- the barrier ------------------------------------------------------------------ */

/* The flag word's address and "the flag buffer has an element". */
static void flag_addr(struct ptx_ctx *c, uint32_t decl, struct ptx_reg *has) {
    *has = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", has->s, c->decl_len[decl].s);
}

/* A plain grid barrier (the header's scheme): one release atomic per block on the
 * barrier word, a relaxed spin for the flip of bit 31, one acquire load. */
static void plain_sync(struct ptx_ctx *c, unsigned n) {
    const char *scr = c->gs_scr.s;
    struct ptx_reg old = vyre_ptx_reg(c, PTX_R), cur = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg q = vyre_ptx_reg(c, PTX_P);
    vyre_pbuf_printf(&c->body, "\t// grid barrier %u\n", n);
    vyre_ptx_ins(c, "bar.sync 0");
    vyre_ptx_ins(c, "@!%s bra GB%u_wait", c->gs_tid0.s, n);
    vyre_ptx_ins(c, "atom.release.gpu.global.add.u32 %s, [%s+%d], %s", old.s, scr, GS_FAST,
                 c->gs_add.s);
    vyre_pbuf_printf(&c->body, "GB%u_spin:\n", n);
    vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+%d]", cur.s, scr, GS_FAST);
    vyre_ptx_ins(c, "xor.b32 %s, %s, %s", cur.s, cur.s, old.s);
    vyre_ptx_ins(c, "and.b32 %s, %s, 0x80000000", cur.s, cur.s);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, 0", q.s, cur.s);
    vyre_ptx_ins(c, "@%s bra GB%u_spin", q.s, n);
    vyre_ptx_ins(c, "ld.acquire.gpu.global.u32 %s, [%s+%d]", cur.s, scr, GS_FAST);
    vyre_pbuf_printf(&c->body, "GB%u_wait:\n", n);
    vyre_ptx_ins(c, "bar.sync 0");
}

/* One grid barrier; GS_ROUND also needs `next` (rounds after this one) and `max`, and
 * returns the decision "run another round" as a predicate every thread holds. A
 * barrier with an action takes two words: the last block to arrive (counter) runs the
 * action while the others wait for the generation it then publishes. */
static struct ptx_reg grid_sync(struct ptx_ctx *c, enum gs_action act, uint32_t decl,
                                struct ptx_reg next, struct ptx_reg max) {
    unsigned n = label(c);
    if (act == GS_PLAIN) {
        plain_sync(c, n);
        return (struct ptx_reg){PTX_P, 0, ""};
    }
    const char *scr = c->gs_scr.s;
    struct ptx_reg gen = vyre_ptx_reg(c, PTX_R), old = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg g2 = vyre_ptx_reg(c, PTX_R), last = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg flip = vyre_ptx_reg(c, PTX_R), q = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg dec = vyre_ptx_reg(c, PTX_R), cont = vyre_ptx_reg(c, PTX_P);
    vyre_pbuf_printf(&c->body, "\t// grid barrier %u%s\n", n,
                     act == GS_ZERO    ? " (converge entry: zero the flag)"
                     : act == GS_ROUND ? " (converge round: read the flag / advance the worklist)"
                                       : "");
    vyre_ptx_ins(c, "bar.sync 0");
    vyre_ptx_ins(c, "@!%s bra GB%u_wait", c->gs_tid0.s, n);
    vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+%d]", gen.s, scr, GS_GEN);
    vyre_ptx_ins(c, "atom.release.gpu.global.add.u32 %s, [%s+%d], %s", old.s, scr, GS_FAST,
                 c->gs_add.s);
    /* last to arrive: this block's add flipped bit 31 */
    vyre_ptx_ins(c, "add.u32 %s, %s, %s", flip.s, old.s, c->gs_add.s);
    vyre_ptx_ins(c, "xor.b32 %s, %s, %s", flip.s, flip.s, old.s);
    vyre_ptx_ins(c, "and.b32 %s, %s, 0x80000000", flip.s, flip.s);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", last.s, flip.s);
    vyre_ptx_ins(c, "@!%s bra GB%u_spin", last.s, n);
    vyre_ptx_ins(c, "fence.acq_rel.gpu"); /* with the atomic's read: acquire everyone's */
    if (c->p->decls[decl].kind == VYRE_DECL_WORKLIST) {
        /* converge on a worklist: entry nothing; a round's end advances it */
        if (act == GS_ROUND) {
            struct ptx_reg pushed = vyre_ptx_reg(c, PTX_P), more = vyre_ptx_reg(c, PTX_P);
            struct ptx_reg r = vyre_ptx_reg(c, PTX_R);
            vyre_ptx_wl_advance(c, decl, pushed);
            vyre_ptx_ins(c, "setp.lt.and.u32 %s, %s, %s, %s", more.s, next.s, max.s, pushed.s);
            vyre_ptx_ins(c, "selp.u32 %s, 1, 0, %s", dec.s, more.s);
            vyre_ptx_ins(c, "st.relaxed.gpu.global.u32 [%s+%d], %s", scr, GS_DECISION, dec.s);
            vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+%d]", r.s, scr, GS_ROUNDS);
            vyre_ptx_ins(c, "add.u32 %s, %s, 1", r.s, r.s);
            vyre_ptx_ins(c, "st.relaxed.gpu.global.u32 [%s+%d], %s", scr, GS_ROUNDS, r.s);
        }
    } else {
        struct ptx_reg has;
        flag_addr(c, decl, &has);
        const char *fp = c->decl_ptr[decl].s;
        if (act == GS_ZERO) {
            vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u32 [%s], 0", has.s, fp);
        } else {
            struct ptx_reg f = vyre_ptx_reg(c, PTX_R), set = vyre_ptx_reg(c, PTX_P);
            struct ptx_reg more = vyre_ptx_reg(c, PTX_P), r = vyre_ptx_reg(c, PTX_R);
            vyre_ptx_ins(c, "mov.u32 %s, 0", f.s);
            vyre_ptx_ins(c, "@%s ld.relaxed.gpu.global.u32 %s, [%s]", has.s, f.s, fp);
            vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", set.s, f.s);
            vyre_ptx_ins(c, "setp.lt.and.u32 %s, %s, %s, %s", more.s, next.s, max.s, set.s);
            vyre_ptx_ins(c, "@%s st.relaxed.gpu.global.u32 [%s], 0", more.s, fp);
            vyre_ptx_ins(c, "selp.u32 %s, 1, 0, %s", dec.s, more.s);
            vyre_ptx_ins(c, "st.relaxed.gpu.global.u32 [%s+%d], %s", scr, GS_DECISION, dec.s);
            vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+%d]", r.s, scr, GS_ROUNDS);
            vyre_ptx_ins(c, "add.u32 %s, %s, 1", r.s, r.s);
            vyre_ptx_ins(c, "st.relaxed.gpu.global.u32 [%s+%d], %s", scr, GS_ROUNDS, r.s);
        }
    }
    vyre_ptx_ins(c, "add.u32 %s, %s, 1", g2.s, gen.s);
    vyre_ptx_ins(c, "st.release.gpu.global.u32 [%s+%d], %s", scr, GS_GEN, g2.s);
    vyre_ptx_ins(c, "bra GB%u_out", n);
    vyre_pbuf_printf(&c->body, "GB%u_spin:\n", n);
    vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+%d]", g2.s, scr, GS_GEN);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, %s", q.s, g2.s, gen.s);
    vyre_ptx_ins(c, "@%s bra GB%u_spin", q.s, n);
    vyre_ptx_ins(c, "ld.acquire.gpu.global.u32 %s, [%s+%d]", g2.s, scr, GS_GEN);
    vyre_pbuf_printf(&c->body, "GB%u_out:\n", n);
    if (act == GS_ROUND) {
        vyre_ptx_ins(c, "ld.relaxed.gpu.global.u32 %s, [%s+%d]", dec.s, scr, GS_DECISION);
        vyre_ptx_ins(c, "st.shared.u32 [vy_word], %s", dec.s);
    }
    vyre_pbuf_printf(&c->body, "GB%u_wait:\n", n);
    vyre_ptx_ins(c, "bar.sync 0");
    if (act == GS_ROUND) {
        vyre_ptx_ins(c, "ld.shared.u32 %s, [vy_word]", dec.s);
        vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", cont.s, dec.s);
    }
    return cont;
}

/* ---- sections ---------------------------------------------------------------------- */

/* Lays out the shared arrays the section uses from offset 0 (shared_layout.c, the same
 * code the validator checks the limit with); returns the section's bytes. */
static uint32_t layout(struct ptx_ctx *c, const struct vyre_block *b, uint32_t first,
                       uint32_t count) {
    const vyre_program *p = c->p;
    uint64_t *off = calloc(p->ndecls ? p->ndecls : 1u, sizeof *off);
    bool oom = off == NULL;
    uint64_t bytes = off ? vyre_shared_section(p, b, first, count, off, &oom) : 0;
    if (oom) {
        free(off);
        vyre_ptx_fail(c, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
        return 0;
    }
    for (uint32_t d = 0; d < p->ndecls; d++)
        if (p->decls[d].kind == VYRE_DECL_SHARED) c->gs_off[d] = (uint32_t)off[d];
    free(off);
    if (bytes + VYRE_GRID_SHARED_WORD > VYRE_MAX_SHARED_BYTES) {
        vyre_ptx_fail(c, VYRE_ERR_LIMIT,
                      "ptx: a section needs %llu bytes of shared memory, more than the %u a "
                      "workgroup may use. Fix: shrink the shared arrays of that section",
                      (unsigned long long)bytes, VYRE_MAX_SHARED_BYTES - VYRE_GRID_SHARED_WORD);
        return 0;
    }
    if (bytes > c->gs_smem) c->gs_smem = (uint32_t)bytes;
    return (uint32_t)bytes;
}

struct ptx_reg vyre_ptx_grid_shared(struct ptx_ctx *c, uint32_t decl) {
    struct ptx_reg r = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mov.u32 %s, vy_smem", r.s);
    if (c->gs_off[decl]) vyre_ptx_ins(c, "add.u32 %s, %s, %u", r.s, r.s, c->gs_off[decl]);
    return r;
}

/* Shared memory of the section zeroed by the whole block, as at workgroup start. */
static void zero_shared(struct ptx_ctx *c, uint32_t bytes, unsigned n) {
    const uint32_t *w = c->p->workgroup;
    uint32_t nthreads = w[0] * w[1] * w[2];
    struct ptx_reg tx = vyre_ptx_reg(c, PTX_R), ty = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg tz = vyre_ptx_reg(c, PTX_R), i = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg a = vyre_ptx_reg(c, PTX_R), base = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg q = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.x", tx.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.y", ty.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.z", tz.s);
    vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", i.s, tz.s, (unsigned)w[1], ty.s);
    vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", i.s, i.s, (unsigned)w[0], tx.s);
    vyre_ptx_ins(c, "mov.u32 %s, vy_smem", base.s);
    vyre_pbuf_printf(&c->body, "GZ%u_loop:\n", n);
    vyre_ptx_ins(c, "setp.ge.u32 %s, %s, %u", q.s, i.s, bytes / 4u);
    vyre_ptx_ins(c, "@%s bra GZ%u_done", q.s, n);
    vyre_ptx_ins(c, "mad.lo.u32 %s, %s, 4, %s", a.s, i.s, base.s);
    vyre_ptx_ins(c, "st.shared.u32 [%s], 0", a.s);
    vyre_ptx_ins(c, "add.u32 %s, %s, %u", i.s, i.s, nthreads);
    vyre_ptx_ins(c, "bra GZ%u_loop", n);
    vyre_pbuf_printf(&c->body, "GZ%u_done:\n", n);
    vyre_ptx_ins(c, "bar.sync 0");
}

/* Statements [first, first + count) of b: a barrier if a section ran since the last
 * one, then every virtual workgroup v = ctaid.x, ctaid.x + blocks, ... of the grid. */
static void section(struct ptx_ctx *c, const struct vyre_block *b, uint32_t first, uint32_t count) {
    unsigned n = label(c);
    struct ptx_reg none = {PTX_R, 0, ""};
    vyre_pbuf_printf(&c->body, "\t// section %u\n", n);
    vyre_ptx_ins(c, "@!%s bra GS%u_go", c->gs_dirty.s, n);
    grid_sync(c, GS_PLAIN, 0, none, none);
    vyre_pbuf_printf(&c->body, "GS%u_go:\n", n);
    vyre_ptx_ins(c, "setp.eq.u32 %s, %s, %s", c->gs_dirty.s, c->gs_nb.s, c->gs_nb.s); /* true */
    uint32_t bytes = layout(c, b, first, count);
    vyre_ptx_wl_reload(c); /* a converge may have advanced a worklist since the last */
    struct ptx_reg v = vyre_ptx_reg(c, PTX_RD), nb = vyre_ptx_reg(c, PTX_RD);
    struct ptx_reg t = vyre_ptx_reg(c, PTX_RD), u = vyre_ptx_reg(c, PTX_RD);
    struct ptx_reg k = vyre_ptx_reg(c, PTX_RD), q = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg cta = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mov.u32 %s, %%ctaid.x", cta.s);
    vyre_ptx_ins(c, "cvt.u64.u32 %s, %s", v.s, cta.s);
    vyre_ptx_ins(c, "cvt.u64.u32 %s, %s", nb.s, c->gs_nb.s);
    vyre_pbuf_printf(&c->body, "GS%u_loop:\n", n);
    vyre_ptx_ins(c, "setp.ge.u64 %s, %s, %s", q.s, v.s, c->gs_nv.s);
    vyre_ptx_ins(c, "@%s bra GS%u_done", q.s, n);
    /* v = x + ngx * (y + ngy * z); a 1-D virtual grid needs no division */
    vyre_ptx_ins(c, "@!%s bra GS%u_3d", c->gs_1d.s, n);
    vyre_ptx_ins(c, "cvt.u32.u64 %s, %s", c->gs_wgid[0].s, v.s);
    vyre_ptx_ins(c, "mov.u32 %s, 0", c->gs_wgid[1].s);
    vyre_ptx_ins(c, "mov.u32 %s, 0", c->gs_wgid[2].s);
    vyre_ptx_ins(c, "bra GS%u_ids", n);
    vyre_pbuf_printf(&c->body, "GS%u_3d:\n", n);
    vyre_ptx_ins(c, "cvt.u64.u32 %s, %s", k.s, c->gs_ng[0].s);
    vyre_ptx_ins(c, "div.u64 %s, %s, %s", t.s, v.s, k.s);
    vyre_ptx_ins(c, "rem.u64 %s, %s, %s", u.s, v.s, k.s);
    vyre_ptx_ins(c, "cvt.u32.u64 %s, %s", c->gs_wgid[0].s, u.s);
    vyre_ptx_ins(c, "cvt.u64.u32 %s, %s", k.s, c->gs_ng[1].s);
    vyre_ptx_ins(c, "rem.u64 %s, %s, %s", u.s, t.s, k.s);
    vyre_ptx_ins(c, "cvt.u32.u64 %s, %s", c->gs_wgid[1].s, u.s);
    vyre_ptx_ins(c, "div.u64 %s, %s, %s", u.s, t.s, k.s);
    vyre_ptx_ins(c, "cvt.u32.u64 %s, %s", c->gs_wgid[2].s, u.s);
    vyre_pbuf_printf(&c->body, "GS%u_ids:\n", n);
    if (bytes) zero_shared(c, bytes, n);
    char saved[sizeof c->gs_ret];
    memcpy(saved, c->gs_ret, sizeof saved);
    snprintf(c->gs_ret, sizeof c->gs_ret, "GS%u_next", n);
    c->in_section = true;
    for (uint32_t i = first; i < first + count && c->st == VYRE_OK; i++)
        vyre_ptx_stmt(c, b->items[i]);
    c->in_section = false;
    memcpy(c->gs_ret, saved, sizeof saved);
    vyre_pbuf_printf(&c->body, "GS%u_next:\n", n);
    /* the next virtual workgroup zero-fills the same window: wait for every reader */
    if (bytes) vyre_ptx_ins(c, "bar.sync 0");
    vyre_ptx_ins(c, "add.u64 %s, %s, %s", v.s, v.s, nb.s);
    vyre_ptx_ins(c, "bra GS%u_loop", n);
    vyre_pbuf_printf(&c->body, "GS%u_done:\n", n);
}

/* ---- grid statements ------------------------------------------------------------------ */

static void converge(struct ptx_ctx *c, const struct vyre_stmt *s) {
    unsigned n = label(c);
    struct ptx_reg none = {PTX_R, 0, ""};
    vyre_pbuf_printf(&c->body, "\t// converge %u\n", n);
    struct ptx_reg max = vyre_ptx_reg(c, PTX_R), r = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg next = vyre_ptx_reg(c, PTX_R), q = vyre_ptx_reg(c, PTX_P);
    struct ptx_reg m = vyre_ptx_expr(c, s->value); /* once, before the loop */
    vyre_ptx_ins(c, "mov.u32 %s, %s", max.s, m.s);
    grid_sync(c, GS_ZERO, s->decl, none, none);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, %s", c->gs_dirty.s, max.s, max.s); /* false */
    vyre_ptx_ins(c, "mov.u32 %s, 0", r.s);
    vyre_pbuf_printf(&c->body, "GC%u_top:\n", n);
    vyre_ptx_ins(c, "setp.ge.u32 %s, %s, %s", q.s, r.s, max.s);
    vyre_ptx_ins(c, "@%s bra GC%u_end", q.s, n);
    vyre_ptx_grid_block(c, &s->then_);
    vyre_ptx_ins(c, "add.u32 %s, %s, 1", next.s, r.s);
    struct ptx_reg cont = grid_sync(c, GS_ROUND, s->decl, next, max);
    vyre_ptx_ins(c, "mov.u32 %s, %s", r.s, next.s);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, %s", c->gs_dirty.s, max.s, max.s);
    vyre_ptx_ins(c, "@%s bra GC%u_top", cont.s, n);
    vyre_pbuf_printf(&c->body, "GC%u_end:\n", n);
}

void vyre_ptx_grid_stmt(struct ptx_ctx *c, const struct vyre_stmt *s) {
    if (s->kind == VYRE_ST_CONVERGE) converge(c, s);
    /* grid_barrier: only a boundary; the next section pays the barrier if needed */
}

void vyre_ptx_grid_block(struct ptx_ctx *c, const struct vyre_block *b) {
    uint32_t i = 0;
    while (i < b->count && c->st == VYRE_OK) {
        const struct vyre_stmt *s = b->items[i];
        if (s->grid) {
            vyre_ptx_stmt(c, s); /* grid if/for emit their blocks back through here */
            i++;
            continue;
        }
        uint32_t j = i;
        while (j < b->count && !b->items[j]->grid) j++;
        section(c, b, i, j - i);
        i = j;
    }
}

bool vyre_ptx_grid_builtin(struct ptx_ctx *c, const struct vyre_expr *e, struct ptx_reg *out) {
    unsigned ax = e->u.builtin.axis % 3u;
    switch (e->u.builtin.which) {
    case VYRE_WGID: *out = c->gs_wgid[ax]; return true;
    case VYRE_NGROUPS: *out = c->gs_ng[ax]; return true;
    case VYRE_GID: {
        static const char name[3] = {'x', 'y', 'z'};
        struct ptx_reg n = vyre_ptx_reg(c, PTX_R), t = vyre_ptx_reg(c, PTX_R);
        struct ptx_reg d = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "mov.u32 %s, %%ntid.%c", n.s, name[ax]);
        vyre_ptx_ins(c, "mov.u32 %s, %%tid.%c", t.s, name[ax]);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %s, %s", d.s, c->gs_wgid[ax].s, n.s, t.s);
        *out = d;
        return true;
    }
    default: return false;
    }
}
