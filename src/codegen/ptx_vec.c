/* ptx_vec.c — the vector entry NAME_v4 of an elementwise program (docs/ARCHITECTURE.md
 * §5; which programs, and which buffers, in src/core/opt/elementwise.c).
 *
 * Each thread runs the program for VEC consecutive virtual invocations at a time,
 * gid = base .. base+VEC-1 with base = VEC * thread index, in a grid-stride loop over the
 * `vyre_vn` invocations the launch stands for (its extra parameter: the program's grid
 * times its workgroup, so every invocation the program's own entry would run runs here
 * once, and no other). Per step:
 *
 *   fast path, when all VEC invocations exist (base + VEC <= vyre_vn), every buffer
 *   accessed at the own index holds them (base + VEC <= len) and every vector buffer
 *   is 16-byte aligned: the VLOAD buffers are read with one ld.global[.nc].v4 (two .v2
 *   for 64-bit types), the body is emitted once per invocation with those elements for
 *   its own-index loads, other own-index accesses unchecked (they are in bounds), ifs
 *   whose condition is fast-true reduced to their then-block, and stores to VSTORE
 *   buffers kept in registers; then one st.global.v4 per VSTORE buffer;
 *   slow path otherwise (the tail, a short buffer, misalignment): the program's own
 *   lowering, bounds checks and all, for each invocation of the step that exists.
 * A `return` ends only its invocation (a branch to the next one). Labels of the body
 * come from statement ids; each copy renumbers the private optimised program's
 * statements first, so the copies' labels never clash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "ptx.h"

#define VEC 4u /* invocations per step; elements per vector access */

struct ptx_vec {
    struct vyre_ew ew;
    bool fast;                  /* emitting the fast path */
    unsigned lane;              /* which invocation of the step (fast path) */
    struct ptx_reg gid;         /* the invocation's own index */
    char ret[16];               /* the label a `return` branches to */
    struct ptx_reg (*val)[VEC]; /* per decl: the elements loaded (VLOAD) */
    struct ptx_reg (*out)[VEC]; /* per decl: the elements to store (VSTORE) */
};

/* ---- memory views (a bool is a 32-bit word of 0 or 1) ------------------------------ */

static enum vyre_type mem_type(enum vyre_type t) { return t == VYRE_BOOL ? VYRE_U32 : t; }

static const char *mem_sfx(enum vyre_type t) {
    switch (mem_type(t)) {
    case VYRE_F32: return ".f32";
    case VYRE_F64: return ".f64";
    case VYRE_I64:
    case VYRE_U64: return ".u64";
    default: return ".u32";
    }
}

static const char *mov_sfx(enum vyre_type t) {
    t = mem_type(t);
    return t == VYRE_F32 ? ".f32" : t == VYRE_F64 ? ".f64" : vyre_ptx_bsfx(t);
}

static const char *load_space(const struct vyre_decl *d) {
    return d->access == VYRE_ACCESS_READ ? ".global.nc" : ".global";
}

/* ---- hooks of ptx.c and ptx_expr.c ------------------------------------------------- */

struct ptx_reg vyre_ptx_vec_gid(struct ptx_ctx *c) {
    return c->vec->gid;
}

/* An access at the own index on the fast path (in bounds there). */
static bool own_fast(const struct ptx_ctx *c, uint32_t decl, const struct vyre_expr *idx) {
    return c->vec->fast && c->p->decls[decl].kind == VYRE_DECL_BUFFER &&
           vyre_ew_is_gid(&c->vec->ew, idx);
}

bool vyre_ptx_vec_load(struct ptx_ctx *c, const struct vyre_expr *e, struct ptx_reg *out) {
    struct ptx_vec *v = c->vec;
    uint32_t decl = e->u.access.decl;
    if (!own_fast(c, decl, e->u.access.index)) return false;
    const struct vyre_decl *d = &c->p->decls[decl];
    struct ptx_reg w;
    if (v->ew.role[decl] & VYRE_EW_VLOAD) {
        w = v->val[decl][v->lane];
    } else {
        w = vyre_ptx_treg(c, mem_type(d->type));
        struct ptx_reg a = vyre_ptx_addr(c, decl, v->gid);
        vyre_ptx_ins(c, "ld%s%s %s, [%s]", load_space(d), mem_sfx(d->type), w.s, a.s);
    }
    if (d->type == VYRE_BOOL) {
        struct ptx_reg p = vyre_ptx_reg(c, PTX_P);
        vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", p.s, w.s);
        w = p;
    }
    *out = w;
    return true;
}

bool vyre_ptx_vec_store(struct ptx_ctx *c, const struct vyre_stmt *s) {
    struct ptx_vec *v = c->vec;
    if (!own_fast(c, s->decl, s->index)) return false;
    const struct vyre_decl *d = &c->p->decls[s->decl];
    bool vstore = v->ew.role[s->decl] & VYRE_EW_VSTORE;
    struct ptx_reg x = vyre_ptx_expr(c, s->value);
    struct ptx_reg w = x;
    if (vstore) w = v->out[s->decl][v->lane];
    else if (d->type == VYRE_BOOL) w = vyre_ptx_reg(c, PTX_R);
    if (d->type == VYRE_BOOL) vyre_ptx_ins(c, "selp.u32 %s, 1, 0, %s", w.s, x.s);
    else if (vstore) vyre_ptx_ins(c, "mov%s %s, %s", mov_sfx(d->type), w.s, x.s);
    if (vstore) return true; /* written by the step's vector store */
    struct ptx_reg a = vyre_ptx_addr(c, s->decl, v->gid);
    vyre_ptx_ins(c, "st.global%s [%s], %s", mem_sfx(d->type), a.s, w.s);
    return true;
}

bool vyre_ptx_vec_if(struct ptx_ctx *c, const struct vyre_stmt *s) {
    if (!c->vec->fast || !vyre_ew_fast_true(&c->vec->ew, c->p, s->cond)) return false;
    vyre_pbuf_puts(&c->body, "\t// holds for every invocation of the step\n");
    vyre_ptx_block(c, &s->then_);
    return true;
}

void vyre_ptx_vec_return(struct ptx_ctx *c) { vyre_ptx_ins(c, "bra %s", c->vec->ret); }

/* ---- the entry ---------------------------------------------------------------------- */

static void renumber(struct vyre_block *b, uint32_t by) {
    for (uint32_t i = 0; i < b->count; i++) {
        struct vyre_stmt *s = b->items[i];
        s->id += by;
        renumber(&s->then_, by);
        renumber(&s->else_, by);
    }
}

/* One copy of the body for the invocation in v->gid; `return` branches to ret. */
static void body_copy(struct ptx_ctx *c, const char *ret) {
    vyre_program *p = c->p;
    renumber(&p->body, p->next_id);
    memset(c->slot_def, 0, (p->nslots ? p->nslots : 1) * sizeof *c->slot_def);
    snprintf(c->vec->ret, sizeof c->vec->ret, "%s", ret);
    vyre_ptx_block(c, &p->body);
    vyre_pbuf_printf(&c->body, "%s:\n", ret);
}

/* Vector accesses of VLOAD/VSTORE buffer d at element base: a 32-bit type moves VEC
 * elements in one .v4, a 64-bit type in two .v2 (16 bytes each). */
static void vector_access(struct ptx_ctx *c, uint32_t d, struct ptx_reg base, bool store) {
    const struct vyre_decl *dc = &c->p->decls[d];
    struct ptx_reg *r = store ? c->vec->out[d] : c->vec->val[d];
    struct ptx_reg a = vyre_ptx_addr(c, d, base);
    bool wide = vyre_type_bits(mem_type(dc->type)) == 64;
    for (unsigned h = 0; h < (wide ? 2u : 1u); h++) {
        char regs[80];
        if (wide) snprintf(regs, sizeof regs, "{%s, %s}", r[2 * h].s, r[2 * h + 1].s);
        else snprintf(regs, sizeof regs, "{%s, %s, %s, %s}", r[0].s, r[1].s, r[2].s, r[3].s);
        const char *v = wide ? ".v2" : ".v4";
        if (store)
            vyre_ptx_ins(c, "st.global%s%s [%s+%u], %s", v, mem_sfx(dc->type), a.s, 16u * h, regs);
        else
            vyre_ptx_ins(c, "ld%s%s%s %s, [%s+%u]", load_space(dc), v, mem_sfx(dc->type), regs, a.s,
                         16u * h);
    }
}

static void fast_path(struct ptx_ctx *c, struct ptx_reg base) {
    struct ptx_vec *v = c->vec;
    const vyre_program *p = c->p;
    v->fast = true;
    for (uint32_t d = 0; d < p->ndecls; d++) {
        for (unsigned k = 0; k < VEC; k++) {
            if (v->ew.role[d] & VYRE_EW_VLOAD)
                v->val[d][k] = vyre_ptx_treg(c, mem_type(p->decls[d].type));
            if (v->ew.role[d] & VYRE_EW_VSTORE)
                v->out[d][k] = vyre_ptx_treg(c, mem_type(p->decls[d].type));
        }
        if (v->ew.role[d] & VYRE_EW_VLOAD) vector_access(c, d, base, false);
    }
    for (unsigned k = 0; k < VEC && c->st == VYRE_OK; k++) {
        char ret[16];
        snprintf(ret, sizeof ret, "VRET%u", k);
        vyre_pbuf_printf(&c->body, "\t// fast path: invocation base + %u\n", k);
        v->lane = k;
        v->gid = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "add.u32 %s, %s, %u", v->gid.s, base.s, k);
        body_copy(c, ret);
    }
    for (uint32_t d = 0; d < p->ndecls; d++)
        if (v->ew.role[d] & VYRE_EW_VSTORE) vector_access(c, d, base, true);
    v->fast = false;
}

/* The invocations base .. base+VEC-1 that exist (left = vn - base >= 1 of them). */
static void slow_path(struct ptx_ctx *c, struct ptx_reg base, struct ptx_reg vn) {
    struct ptx_reg k = vyre_ptx_reg(c, PTX_R), left = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg p = vyre_ptx_reg(c, PTX_P), q = vyre_ptx_reg(c, PTX_P);
    vyre_pbuf_puts(&c->body,
                   "\t// slow path: the program's own lowering, one invocation at a time\n");
    vyre_ptx_ins(c, "sub.u32 %s, %s, %s", left.s, vn.s, base.s);
    vyre_ptx_ins(c, "mov.u32 %s, 0", k.s);
    vyre_pbuf_puts(&c->body, "VSLOOP:\n");
    c->vec->gid = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "add.u32 %s, %s, %s", c->vec->gid.s, base.s, k.s);
    body_copy(c, "VSNEXT");
    vyre_ptx_ins(c, "add.u32 %s, %s, 1", k.s, k.s);
    vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %u", p.s, k.s, VEC);
    vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", q.s, k.s, left.s);
    vyre_ptx_ins(c, "and.pred %s, %s, %s", p.s, p.s, q.s);
    vyre_ptx_ins(c, "@%s bra VSLOOP", p.s);
}

static void emit_body(struct ptx_ctx *c) {
    const vyre_program *p = c->p;
    const uint8_t *role = c->vec->ew.role;
    vyre_ptx_prologue(c);
    struct ptx_reg vn = vyre_ptx_reg(c, PTX_R), t = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg ct = vyre_ptx_reg(c, PTX_R), nt = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg ti = vyre_ptx_reg(c, PTX_R), nc = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg base = vyre_ptx_reg(c, PTX_R), stride = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg lim = vyre_ptx_reg(c, PTX_R), last = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg bits = vyre_ptx_reg(c, PTX_RD), dist = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg ok = vyre_ptx_reg(c, PTX_P), q = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "ld.param.u32 %s, [vyre_vn]", vn.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%ctaid.x", ct.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%ntid.x", nt.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.x", ti.s);
    vyre_ptx_ins(c, "mov.u32 %s, %%nctaid.x", nc.s);
    vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %s, %s", t.s, ct.s, nt.s, ti.s);
    vyre_ptx_ins(c, "shl.b32 %s, %s, 2", base.s, t.s);
    vyre_ptx_ins(c, "mul.lo.u32 %s, %s, %s", stride.s, nc.s, nt.s);
    vyre_ptx_ins(c, "shl.b32 %s, %s, 2", stride.s, stride.s);
    /* The fast path needs base + VEC <= lim: the invocations, every own-index buffer and
     * every bound a guard compares the own index with. */
    vyre_ptx_ins(c, "mov.u32 %s, %s", lim.s, vn.s);
    for (uint32_t d = 0; d < p->ndecls; d++)
        if (role[d] & (VYRE_EW_GID | VYRE_EW_LIMIT))
            vyre_ptx_ins(c, "min.u32 %s, %s, %s", lim.s, lim.s,
                         p->decls[d].kind == VYRE_DECL_PARAM ? c->decl_val[d].s : c->decl_len[d].s);
    vyre_ptx_ins(c, "sub.u32 %s, %s, %u", last.s, lim.s, VEC);
    vyre_ptx_ins(c, "setp.ge.u32 %s, %s, %u", ok.s, lim.s, VEC);
    /* ... and 16-byte aligned vector buffers (base is a multiple of VEC). */
    vyre_ptx_ins(c, "mov.b64 %s, 0", bits.s);
    for (uint32_t d = 0; d < p->ndecls; d++)
        if (role[d] & (VYRE_EW_VLOAD | VYRE_EW_VSTORE))
            vyre_ptx_ins(c, "or.b64 %s, %s, %s", bits.s, bits.s, c->decl_ptr[d].s);
    vyre_ptx_ins(c, "and.b64 %s, %s, 15", bits.s, bits.s);
    vyre_ptx_ins(c, "setp.eq.and.u64 %s, %s, 0, %s", ok.s, bits.s, ok.s);
    vyre_ptx_ins(c, "setp.ge.u32 %s, %s, %s", q.s, base.s, vn.s);
    vyre_ptx_ins(c, "@%s bra VDONE", q.s);
    vyre_pbuf_puts(&c->body, "VLOOP:\n");
    vyre_ptx_ins(c, "setp.le.and.u32 %s, %s, %s, %s", q.s, base.s, last.s, ok.s);
    vyre_ptx_ins(c, "@!%s bra VSLOW", q.s);
    fast_path(c, base);
    vyre_ptx_ins(c, "bra VNEXT");
    vyre_pbuf_puts(&c->body, "VSLOW:\n");
    slow_path(c, base, vn);
    vyre_pbuf_puts(&c->body, "VNEXT:\n");
    /* Next step while vn - base > stride (no u32 wrap of base + stride). */
    vyre_ptx_ins(c, "sub.u32 %s, %s, %s", dist.s, vn.s, base.s);
    vyre_ptx_ins(c, "setp.le.u32 %s, %s, %s", q.s, dist.s, stride.s);
    vyre_ptx_ins(c, "@%s bra VDONE", q.s);
    vyre_ptx_ins(c, "add.u32 %s, %s, %s", base.s, base.s, stride.s);
    vyre_ptx_ins(c, "bra VLOOP");
    vyre_pbuf_puts(&c->body, "VDONE:\n");
}

enum vyre_status vyre_ptx_vec_emit(vyre_program *p, unsigned sm, struct vyre_pbuf *out,
                                   struct vyre_error *err) {
    struct ptx_vec v;
    memset(&v, 0, sizeof v);
    /* A program with grid statements is one cooperative kernel (ptx_grid.c): its
     * sections are not a flat elementwise body, and the grid registers its barriers
     * need exist only in that kernel's prologue. */
    if (p->has_grid || p->nworklists) return VYRE_OK; /* worklists: NAME_wl instead */
    if (vyre_opt_elementwise(p, &v.ew) != VYRE_OK)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
    if (!v.ew.ok) {
        vyre_ew_free(&v.ew);
        return VYRE_OK;
    }
    struct ptx_ctx c;
    enum vyre_status st = vyre_ptx_ctx_init(&c, p, sm, err);
    size_t nd = p->ndecls ? p->ndecls : 1;
    v.val = calloc(nd, sizeof *v.val);
    v.out = calloc(nd, sizeof *v.out);
    if (st == VYRE_OK && (!v.val || !v.out))
        st = vyre_error_set(err, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
    if (st == VYRE_OK) {
        c.vec = &v;
        emit_body(&c);
        st = c.st;
    }
    if (st == VYRE_OK) {
        char name[VYRE_MAX_NAME + 16];
        snprintf(name, sizeof name, "%s_v%u", p->name, VEC);
        vyre_pbuf_puts(out, "\n");
        vyre_ptx_entry(&c, out, name, ".param .u32 vyre_vn");
        if (c.body.oom || out->oom)
            st = vyre_error_set(err, VYRE_ERR_NOMEM,
                                "ptx: out of memory writing PTX. Fix: free memory");
    }
    vyre_ptx_ctx_free(&c);
    free(v.val);
    free(v.out);
    vyre_ew_free(&v.ew);
    return st;
}
