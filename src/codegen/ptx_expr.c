/* ptx_expr.c — lowers expressions to PTX: literals, variable and param reads,
 * invocation ids, bounds-checked loads, len, select, casts, bitcasts and fma, and
 * dispatches unary/binary ops to the templates in ptx_ops.c / ptx_approx.c.
 * Every expression yields a register of its type's class; a bool is a predicate. */
#include "ptx.h"

#include <stdio.h>

static const char axis_name[3] = {'x', 'y', 'z'};

static struct ptx_reg special(struct ptx_ctx *c, const char *name, unsigned axis) {
    struct ptx_reg d = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mov.u32 %s, %%%s.%c", d.s, name, axis_name[axis % 3]);
    return d;
}

static struct ptx_reg builtin(struct ptx_ctx *c, const struct vyre_expr *e) {
    unsigned ax = e->u.builtin.axis;
    struct ptx_reg vr;
    if (c->grid && vyre_ptx_grid_builtin(c, e, &vr)) return vr; /* virtual workgroups */
    if (c->wl && vyre_ptx_wl_builtin(c, e, &vr)) return vr;     /* NAME_wl's, likewise */
    switch (e->u.builtin.which) {
    case VYRE_LID: return special(c, "tid", ax);
    case VYRE_WGID: return special(c, "ctaid", ax);
    case VYRE_WGSIZE: return special(c, "ntid", ax);
    case VYRE_NGROUPS: return special(c, "nctaid", ax);
    case VYRE_GID:
    default: {
        if (c->vec) return vyre_ptx_vec_gid(c); /* the vector entry's virtual invocation */
        /* gid = wgid * wgsize + lid, wrapping in u32 like every u32 op. */
        struct ptx_reg g = special(c, "ctaid", ax), n = special(c, "ntid", ax);
        struct ptx_reg t = special(c, "tid", ax), d = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %s, %s", d.s, g.s, n.s, t.s);
        return d;
    }
    }
}

static struct ptx_reg literal(struct ptx_ctx *c, const struct vyre_expr *e) {
    struct ptx_reg d = vyre_ptx_treg(c, e->type);
    char imm[24];
    vyre_ptx_imm(e->type, e->u.lit.bits, imm);
    switch (e->type) {
    case VYRE_BOOL: vyre_ptx_ins(c, "mov.pred %s, %s", d.s, imm); break;
    case VYRE_F32: vyre_ptx_ins(c, "mov.f32 %s, %s", d.s, imm); break;
    case VYRE_F64: vyre_ptx_ins(c, "mov.f64 %s, %s", d.s, imm); break;
    default: vyre_ptx_ins(c, "mov%s %s, %s", vyre_ptx_bsfx(e->type), d.s, imm); break;
    }
    return d;
}

struct ptx_reg vyre_ptx_index(struct ptx_ctx *c, const struct vyre_expr *e) {
    /* u32 and i32 both live in %r; an i32 index is read as unsigned by the
     * unsigned bounds compare and the zero-extending address multiply. */
    return vyre_ptx_expr(c, e);
}

struct ptx_reg vyre_ptx_addr(struct ptx_ctx *c, uint32_t decl, struct ptx_reg idx) {
    const struct vyre_decl *d = &c->p->decls[decl];
    unsigned size = (unsigned)vyre_type_size(d->type);
    if (d->kind == VYRE_DECL_SHARED) {
        /* Shared windows are below 4 GiB: 32-bit addresses. An out-of-range index may
         * wrap here, but such an address is never dereferenced (the access is guarded). */
        struct ptx_reg base = vyre_ptx_reg(c, PTX_R), a = vyre_ptx_reg(c, PTX_R);
        if (c->grid) base = vyre_ptx_grid_shared(c, decl); /* per-section window */
        else vyre_ptx_ins(c, "mov.u32 %s, s_%s", base.s, d->name);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", a.s, idx.s, size, base.s);
        return a;
    }
    struct ptx_reg off = vyre_ptx_reg(c, PTX_RD), a = vyre_ptx_reg(c, PTX_RD);
    vyre_ptx_ins(c, "mul.wide.u32 %s, %s, %u", off.s, idx.s, size);
    vyre_ptx_ins(c, "add.s64 %s, %s, %s", a.s, c->decl_ptr[decl].s, off.s);
    return a;
}

struct ptx_reg vyre_ptx_in_range(struct ptx_ctx *c, uint32_t decl, struct ptx_reg idx) {
    const struct vyre_decl *d = &c->p->decls[decl];
    struct ptx_reg ok = vyre_ptx_reg(c, PTX_P);
    if (d->kind == VYRE_DECL_SHARED)
        vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %u", ok.s, idx.s, (unsigned)d->count);
    else vyre_ptx_ins(c, "setp.lt.u32 %s, %s, %s", ok.s, idx.s, c->decl_len[decl].s);
    return ok;
}

void vyre_ptx_count_oob(struct ptx_ctx *c, uint32_t decl, struct ptx_reg ok, bool store) {
    if (!c->debug) return;
    /* red: nobody reads the counter on the device; the runtime downloads it. */
    vyre_ptx_ins(c, "@!%s red.global.add.u64 [%s+%u], 1", ok.s, c->oob.s,
                 (unsigned)(16u * decl + (store ? 8u : 0u)));
}

static struct ptx_reg load(struct ptx_ctx *c, const struct vyre_expr *e) {
    struct ptx_reg r;
    if (c->vec && vyre_ptx_vec_load(c, e, &r)) return r;
    uint32_t decl = e->u.access.decl;
    const struct vyre_decl *d = &c->p->decls[decl];
    /* A `read` buffer is never written by the kernel (the validator refuses stores and
     * atomics on it), so its loads take the read-only, non-coherent path (.nc). Binding
     * one buffer to a read and a written declaration of the same launch is a data race
     * unless each invocation reads only what it alone writes (§3: races have no parity). */
    const char *space = d->kind == VYRE_DECL_SHARED     ? ".shared"
                        : d->access == VYRE_ACCESS_READ ? ".global.nc"
                                                        : ".global";
    struct ptx_reg idx = vyre_ptx_index(c, e->u.access.index);
    struct ptx_reg a = vyre_ptx_addr(c, decl, idx);
    bool is_bool = d->type == VYRE_BOOL;
    /* bool: load the 32-bit word, any nonzero word is true. */
    struct ptx_reg w = is_bool ? vyre_ptx_reg(c, PTX_R) : vyre_ptx_treg(c, d->type);
    enum vyre_type mt = is_bool ? VYRE_U32 : d->type;
    const char *msfx = mt == VYRE_F32             ? ".f32"
                       : mt == VYRE_F64           ? ".f64"
                       : vyre_type_bits(mt) == 64 ? ".u64"
                                                  : ".u32";
    if (e->u.access.in_bounds) {
        vyre_ptx_ins(c, "ld%s%s %s, [%s]", space, msfx, w.s, a.s);
    } else {
        /* Out of bounds: the typed zero stays in the register. */
        struct ptx_reg ok = vyre_ptx_in_range(c, decl, idx);
        char zero[24];
        vyre_ptx_imm(mt, 0, zero);
        vyre_ptx_ins(c, "mov%s %s, %s", vyre_ptx_bsfx(mt), w.s, zero);
        vyre_ptx_ins(c, "@%s ld%s%s %s, [%s]", ok.s, space, msfx, w.s, a.s);
        vyre_ptx_count_oob(c, decl, ok, false);
    }
    if (!is_bool) return w;
    struct ptx_reg d2 = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", d2.s, w.s);
    return d2;
}

static struct ptx_reg len(struct ptx_ctx *c, const struct vyre_expr *e) {
    uint32_t decl = e->u.access.decl;
    const struct vyre_decl *d = &c->p->decls[decl];
    /* buffers: the bound count; worklists: the current count (ptx_worklist.c) */
    if (d->kind == VYRE_DECL_BUFFER || d->kind == VYRE_DECL_WORKLIST) return c->decl_len[decl];
    struct ptx_reg r = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mov.u32 %s, %u", r.s, (unsigned)d->count);
    return r;
}

static struct ptx_reg select_(struct ptx_ctx *c, const struct vyre_expr *e) {
    struct ptx_reg cond = vyre_ptx_expr(c, e->u.op.a[0]);
    struct ptx_reg a = vyre_ptx_expr(c, e->u.op.a[1]);
    struct ptx_reg b = vyre_ptx_expr(c, e->u.op.a[2]);
    struct ptx_reg d = vyre_ptx_treg(c, e->type);
    if (e->type == VYRE_BOOL) { /* selp has no predicate form: (c & a) | (!c & b) */
        struct ptx_reg t = vyre_ptx_reg(c, PTX_P), f = vyre_ptx_reg(c, PTX_P);
        vyre_ptx_ins(c, "and.pred %s, %s, %s", t.s, cond.s, a.s);
        vyre_ptx_ins(c, "and.pred %s, %s, !%s", f.s, b.s, cond.s);
        vyre_ptx_ins(c, "or.pred %s, %s, %s", d.s, t.s, f.s);
        return d;
    }
    const char *sfx = e->type == VYRE_F32   ? ".f32"
                      : e->type == VYRE_F64 ? ".f64"
                                            : vyre_ptx_bsfx(e->type);
    vyre_ptx_ins(c, "selp%s %s, %s, %s, %s", sfx, d.s, a.s, b.s, cond.s);
    return d;
}

struct ptx_reg vyre_ptx_expr(struct ptx_ctx *c, const struct vyre_expr *e) {
    switch (e->kind) {
    case VYRE_EX_LIT: return literal(c, e);
    case VYRE_EX_NAME:
        if (e->u.name.ref == VYRE_REF_PARAM) return c->decl_val[e->u.name.index];
        if (e->u.name.ref == VYRE_REF_VAR && e->u.name.index < c->p->nslots &&
            c->slot_def[e->u.name.index])
            return c->slot_reg[e->u.name.index];
        break;
    case VYRE_EX_BUILTIN: return builtin(c, e);
    case VYRE_EX_LOAD: return load(c, e);
    case VYRE_EX_LEN: return len(c, e);
    case VYRE_EX_UNARY: {
        struct ptx_reg a = vyre_ptx_expr(c, e->u.op.a[0]);
        struct ptx_reg d = vyre_ptx_treg(c, e->type);
        if (vyre_op_is_approx(e->u.op.op)) vyre_ptx_approx(c, e->u.op.op, e->u.op.a[0]->type, d, a);
        else vyre_ptx_unary(c, e->u.op.op, e->u.op.a[0]->type, d, a);
        return d;
    }
    case VYRE_EX_BINARY: {
        struct ptx_reg a = vyre_ptx_expr(c, e->u.op.a[0]);
        struct ptx_reg b = vyre_ptx_expr(c, e->u.op.a[1]);
        struct ptx_reg d = vyre_ptx_treg(c, e->type);
        vyre_ptx_binary(c, e->u.op.op, e->u.op.a[0]->type, d, a, b);
        return d;
    }
    case VYRE_EX_SELECT: return select_(c, e);
    case VYRE_EX_CAST: {
        struct ptx_reg a = vyre_ptx_expr(c, e->u.op.a[0]);
        struct ptx_reg d = vyre_ptx_treg(c, e->u.op.to);
        vyre_ptx_cast(c, e->u.op.to, e->u.op.a[0]->type, d, a);
        return d;
    }
    case VYRE_EX_BITCAST: {
        enum vyre_type from = e->u.op.a[0]->type, to = e->u.op.to;
        struct ptx_reg a = vyre_ptx_expr(c, e->u.op.a[0]);
        struct ptx_reg d = vyre_ptx_treg(c, to);
        if (from == VYRE_BOOL || to == VYRE_BOOL || vyre_type_bits(from) != vyre_type_bits(to)) {
            vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                          "ptx: bitcast from %s to %s is not supported for sm_%u. Fix: bitcast "
                          "between types of the same width (bool excluded)",
                          vyre_type_name(from), vyre_type_name(to), c->sm);
            return d;
        }
        vyre_ptx_ins(c, "mov%s %s, %s", vyre_ptx_bsfx(to), d.s, a.s);
        return d;
    }
    case VYRE_EX_FMA: {
        struct ptx_reg a = vyre_ptx_expr(c, e->u.op.a[0]);
        struct ptx_reg b = vyre_ptx_expr(c, e->u.op.a[1]);
        struct ptx_reg x = vyre_ptx_expr(c, e->u.op.a[2]);
        struct ptx_reg d = vyre_ptx_treg(c, e->type);
        if (!vyre_type_is_float(e->type)) {
            vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                          "ptx: fma on %s is not supported for sm_%u. Fix: fma takes f32 or f64",
                          vyre_type_name(e->type), c->sm);
            return d;
        }
        vyre_ptx_ins(c, "fma.rn%s %s, %s, %s, %s", vyre_ptx_sfx(e->type), d.s, a.s, b.s, x.s);
        return d;
    }
    case VYRE_EX_SUBGROUP: return vyre_ptx_subgroup(c, e);
    }
    vyre_ptx_fail(c, VYRE_ERR_INVALID,
                  "ptx: expression node %u was not resolved by validation. Fix: validate the "
                  "program before emitting PTX",
                  (unsigned)e->id);
    return vyre_ptx_treg(c, e->type);
}
