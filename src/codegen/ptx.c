/* ptx.c — the PTX emitter's entry point: target selection, the kernel ABI of
 * ARCHITECTURE.md §5 (pointers, counts, scalar params), shared-array zero fill, and
 * the lowering of statements (let/set/store/if/for/break/return/barrier/atomic).
 * Expressions live in ptx_expr.c, op templates in ptx_ops.c and ptx_approx.c.
 *
 * Layout habits (tinygrad's renderer): the program is validated, then optimised on a
 * copy (the canonical text parsed again: the optimiser, docs/OPT.md, then bounds checks),
 * so the caller's program never changes; then one small template per construct writes into
 * the body buffer using virtual registers from per-class counters; register
 * declarations are written after the body is known and prepended to it. Labels
 * come from statement ids (L12_else, L12_end), so output is deterministic. */
#include "ptx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "opt.h"

/* ---- targets ----------------------------------------------------------------- */

/* Every compute capability the PTX ISA names from 7.0 up (PTX ISA 9.1, "PTX Release
 * History"; the same minimums as LLVM's NVPTX getMinPTXVersionForSM), with the oldest
 * `.version` that knows it and the CUDA release that first ships that ISA. The oldest
 * version is what vyre writes, so every driver that can load PTX for the target loads
 * vyre's. That is sound because every construct vyre emits is legal at each target's
 * minimum (audit, 2026-11-26, checked by ptxas at each minimum in test_ptx):
 *   - shfl.sync, vote.sync.ballot, bar.sync, ld.relaxed.gpu / ld.acquire.gpu /
 *     st.relaxed.gpu / st.release.gpu, atom.relaxed.gpu, fence.acq_rel.gpu: PTX 6.0,
 *     sm_70 -- the oldest target's own minimum;
 *   - redux.sync: PTX 7.0, sm_80; emitted only for sm >= 80 (ptx_subgroup.c), whose
 *     minimums are all >= 7.0;
 *   - everything else (ld.global.nc.v4, cvt.rzi.sat, min/max, copysign, mul.hi, brev,
 *     popc, clz, red.global.add.u64, ...) predates PTX 6.0.
 * So no target needs more than its minimum. A new construct with a newer minimum must
 * raise the affected targets' versions here, with the reason.
 * sm_101 is the PTX 8.6-8.8 name of what PTX 9.0 renamed sm_110 (Jetson Thor): CUDA 12.8
 * and 12.9 drivers report the device as 10.1, CUDA 13 drivers as 11.0. Both are
 * accepted (CUDA 13's ptxas has no -arch=sm_101 but still reads `.target sm_101` PTX,
 * for sm_110). */
static const struct vyre_ptx_target targets[] = {
    {70, "6.0", 9000, "Tesla V100, Titan V (Volta)"},
    {72, "6.1", 9010, "Jetson AGX Xavier, Xavier NX (Volta)"},
    {75, "6.3", 10000, "T4, GeForce RTX 20xx, Quadro RTX (Turing)"},
    {80, "7.0", 11000, "A100, A30 (Ampere)"},
    {86, "7.1", 11010, "GeForce RTX 30xx, A10, A40, RTX A6000 (Ampere)"},
    {87, "7.4", 11040, "Jetson AGX Orin, Orin NX, Orin Nano (Ampere)"},
    {88, "9.0", 13000, "none announced (named by PTX ISA 9.0)"},
    {89, "7.8", 11080, "GeForce RTX 40xx, L4, L40S, RTX 6000 Ada (Ada Lovelace)"},
    {90, "7.8", 11080, "H100, H200, GH200 (Hopper)"},
    {100, "8.6", 12070, "B200, GB200 (Blackwell)"},
    {101, "8.6", 12070, "Jetson Thor under CUDA 12.8/12.9 drivers (now sm_110)"},
    {103, "8.8", 12090, "B300, GB300 (Blackwell Ultra)"},
    {110, "9.0", 13000, "Jetson Thor (Blackwell)"},
    {120, "8.7", 12080, "GeForce RTX 50xx, RTX PRO 6000 Blackwell (Blackwell)"},
    {121, "8.8", 12090, "DGX Spark / GB10 (Blackwell)"},
};

#define NTARGETS (sizeof targets / sizeof targets[0])

size_t vyre_ptx_target_count(void) { return NTARGETS; }

const struct vyre_ptx_target *vyre_ptx_target_at(size_t i) {
    return i < NTARGETS ? &targets[i] : NULL;
}

const struct vyre_ptx_target *vyre_ptx_target_find(unsigned sm) {
    for (size_t i = 0; i < NTARGETS; i++)
        if (targets[i].sm == sm) return &targets[i];
    return NULL;
}

/* ---- context helpers ------------------------------------------------------- */

static const char *const cls_prefix[PTX_NCLS] = {"%p", "%r", "%rd", "%f", "%fd"};
static const char *const cls_decl[PTX_NCLS] = {".pred", ".b32", ".b64", ".f32", ".f64"};

struct ptx_reg vyre_ptx_reg(struct ptx_ctx *c, enum ptx_cls cls) {
    struct ptx_reg r;
    r.cls = cls;
    r.n = c->next[cls]++;
    snprintf(r.s, sizeof r.s, "%s%u", cls_prefix[cls], (unsigned)r.n);
    return r;
}

struct ptx_reg vyre_ptx_treg(struct ptx_ctx *c, enum vyre_type t) {
    return vyre_ptx_reg(c, vyre_ptx_cls(t));
}

void vyre_ptx_ins(struct ptx_ctx *c, const char *fmt, ...) {
    va_list ap;
    vyre_pbuf_put(&c->body, "\t", 1);
    va_start(ap, fmt);
    vyre_pbuf_vprintf(&c->body, fmt, ap);
    va_end(ap);
    vyre_pbuf_put(&c->body, ";\n", 2);
}

void vyre_ptx_fail(struct ptx_ctx *c, enum vyre_status st, const char *fmt, ...) {
    if (c->st != VYRE_OK) return;
    c->st = st;
    if (!c->err) return;
    va_list ap;
    va_start(ap, fmt);
    char msg[VYRE_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vyre_error_set(c->err, st, "%s", msg);
}

/* ---- type helpers ------------------------------------------------------------- */

enum ptx_cls vyre_ptx_cls(enum vyre_type t) {
    switch (t) {
    case VYRE_BOOL: return PTX_P;
    case VYRE_I32:
    case VYRE_U32: return PTX_R;
    case VYRE_I64:
    case VYRE_U64: return PTX_RD;
    case VYRE_F32: return PTX_F;
    case VYRE_F64: return PTX_FD;
    default: return PTX_R;
    }
}

const char *vyre_ptx_sfx(enum vyre_type t) {
    switch (t) {
    case VYRE_BOOL: return ".pred";
    case VYRE_I32: return ".s32";
    case VYRE_U32: return ".u32";
    case VYRE_I64: return ".s64";
    case VYRE_U64: return ".u64";
    case VYRE_F32: return ".f32";
    case VYRE_F64: return ".f64";
    default: return ".b32";
    }
}

const char *vyre_ptx_bsfx(enum vyre_type t) {
    if (t == VYRE_BOOL) return ".pred";
    return vyre_type_bits(t) == 64 ? ".b64" : ".b32";
}

void vyre_ptx_imm(enum vyre_type t, vyre_bits bits, char out[24]) {
    switch (t) {
    case VYRE_BOOL: snprintf(out, 24, "%u", bits ? 1u : 0u); break;
    case VYRE_F32: snprintf(out, 24, "0f%08X", (unsigned)(bits & 0xffffffffu)); break;
    case VYRE_F64: snprintf(out, 24, "0d%016llX", (unsigned long long)bits); break;
    case VYRE_I64:
    case VYRE_U64: snprintf(out, 24, "0x%016llx", (unsigned long long)bits); break;
    default: snprintf(out, 24, "0x%08x", (unsigned)(bits & 0xffffffffu)); break;
    }
}

/* ---- statements -------------------------------------------------------------- */

static void emit_block(struct ptx_ctx *c, const struct vyre_block *b);

/* One comment line per source statement: its canonical text on a single line. */
static void emit_comment(struct ptx_ctx *c, const struct vyre_stmt *s) {
    char text[160];
    vyre_stmt_text(s, text, sizeof text);
    char line[160];
    size_t n = 0;
    bool space = false;
    for (const char *q = text; *q && n + 1 < sizeof line; q++) {
        if (*q == '\n' || *q == '\r' || *q == '\t' || *q == ' ') {
            space = true;
            continue;
        }
        if (space && n > 0 && n + 2 < sizeof line) line[n++] = ' ';
        space = false;
        line[n++] = *q;
    }
    line[n] = '\0';
    vyre_pbuf_printf(&c->body, "\t// %s\n", line);
}

static struct ptx_reg slot_reg(struct ptx_ctx *c, uint32_t slot) {
    if (!c->slot_def[slot]) {
        c->slot_reg[slot] = vyre_ptx_treg(c, c->p->slot_types[slot]);
        c->slot_def[slot] = true;
    }
    return c->slot_reg[slot];
}

static void emit_mov(struct ptx_ctx *c, enum vyre_type t, struct ptx_reg d, struct ptx_reg a) {
    vyre_ptx_ins(c, "mov%s %s, %s", t == VYRE_BOOL ? ".pred" : vyre_ptx_sfx(t), d.s, a.s);
}

/* Memory view of a type: bool is a 32-bit word. */
static const char *mem_sfx(enum vyre_type t) {
    switch (t) {
    case VYRE_BOOL:
    case VYRE_I32:
    case VYRE_U32: return ".u32";
    case VYRE_I64:
    case VYRE_U64: return ".u64";
    case VYRE_F32: return ".f32";
    default: return ".f64";
    }
}

static const char *space_of(const struct ptx_ctx *c, uint32_t decl) {
    return c->p->decls[decl].kind == VYRE_DECL_SHARED ? ".shared" : ".global";
}

static void emit_store(struct ptx_ctx *c, const struct vyre_stmt *s) {
    if (c->vec && vyre_ptx_vec_store(c, s)) return;
    const struct vyre_decl *d = &c->p->decls[s->decl];
    struct ptx_reg idx = vyre_ptx_index(c, s->index);
    struct ptx_reg v = vyre_ptx_expr(c, s->value);
    if (d->type == VYRE_BOOL) { /* bool lives in memory as a 0/1 word */
        struct ptx_reg w = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "selp.u32 %s, 1, 0, %s", w.s, v.s);
        v = w;
    }
    struct ptx_reg a = vyre_ptx_addr(c, s->decl, idx);
    if (s->in_bounds) {
        vyre_ptx_ins(c, "st%s%s [%s], %s", space_of(c, s->decl), mem_sfx(d->type), a.s, v.s);
    } else {
        struct ptx_reg ok = vyre_ptx_in_range(c, s->decl, idx);
        vyre_ptx_ins(c, "@%s st%s%s [%s], %s", ok.s, space_of(c, s->decl), mem_sfx(d->type), a.s,
                     v.s);
        vyre_ptx_count_oob(c, s->decl, ok, true);
    }
}

/* The atom opcode suffix for op on type t, or NULL when the pair is unsupported. */
static const char *atom_op(enum vyre_atomic_op op, enum vyre_type t) {
    bool i32 = t == VYRE_I32, u32 = t == VYRE_U32, u64 = t == VYRE_U64;
    if (!(i32 || u32 || u64)) {
        if (t == VYRE_F32 && (op == VYRE_ATOMIC_ADD || op == VYRE_ATOMIC_SUB)) return ".add.f32";
        return NULL;
    }
    switch (op) {
    case VYRE_ATOMIC_ADD:
    case VYRE_ATOMIC_SUB: return i32 ? ".add.s32" : u32 ? ".add.u32" : ".add.u64";
    case VYRE_ATOMIC_MIN: return i32 ? ".min.s32" : u32 ? ".min.u32" : ".min.u64";
    case VYRE_ATOMIC_MAX: return i32 ? ".max.s32" : u32 ? ".max.u32" : ".max.u64";
    case VYRE_ATOMIC_AND: return u64 ? ".and.b64" : ".and.b32";
    case VYRE_ATOMIC_OR: return u64 ? ".or.b64" : ".or.b32";
    case VYRE_ATOMIC_XOR: return u64 ? ".xor.b64" : ".xor.b32";
    case VYRE_ATOMIC_EXCHANGE: return u64 ? ".exch.b64" : ".exch.b32";
    case VYRE_ATOMIC_CAS: return u64 ? ".cas.b64" : ".cas.b32";
    default: return NULL;
    }
}

/* f32 atomic min/max (docs/ARCHITECTURE.md §10). PTX's atom has no .min/.max on .f32 on
 * any target up to sm_90 (ptxas 13.0: integers, f16 and bf16 only), so every target gets
 * the same compare-and-swap loop on the 32-bit word:
 *   cur = load; if v is NaN: done (the word stays);
 *   loop: new = cur is NaN ? v : min.f32(cur, v); if new == cur (bits): done;
 *         prev = atom.cas(addr, cur, new); if prev != cur: cur = prev, loop;
 *   old = cur.
 * min.f32/max.f32 (no .ftz) only ever see two non-NaN operands: they return one
 * operand's exact bits, subnormals kept, and order -0 below +0 -- the reference's rule.
 * The NaN cases are decided by setp.nan, so neither the NaN the hardware makes for two
 * NaNs nor its handling of signalling NaNs matters. Skipping the cas when nothing
 * changes is still atomic: the load is the point where the operation takes effect.
 * The load is relaxed at gpu scope, the ordering every other vyre atomic has (atom's
 * default). Out of bounds: no access, old reads 0. */
static void emit_atomic_minmax_f32(struct ptx_ctx *c, const struct vyre_stmt *s) {
    unsigned id = (unsigned)s->id;
    const char *space = space_of(c, s->decl);
    struct ptx_reg idx = vyre_ptx_index(c, s->index);
    struct ptx_reg v = vyre_ptx_expr(c, s->value);
    struct ptx_reg a = vyre_ptx_addr(c, s->decl, idx);
    struct ptx_reg old = s->name ? slot_reg(c, s->slot) : vyre_ptx_reg(c, PTX_F);
    struct ptx_reg cur = vyre_ptx_reg(c, PTX_R), next = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg prev = vyre_ptx_reg(c, PTX_R);
    struct ptx_reg fcur = vyre_ptx_reg(c, PTX_F), fnext = vyre_ptx_reg(c, PTX_F);
    struct ptx_reg p = vyre_ptx_reg(c, PTX_P);
    if (!s->in_bounds) {
        struct ptx_reg ok = vyre_ptx_in_range(c, s->decl, idx);
        vyre_ptx_ins(c, "mov.b32 %s, 0", cur.s);
        vyre_ptx_count_oob(c, s->decl, ok, true);
        vyre_ptx_ins(c, "@!%s bra L%u_end", ok.s, id);
    }
    vyre_ptx_ins(c, "ld.relaxed.gpu%s.b32 %s, [%s]", space, cur.s, a.s);
    vyre_ptx_ins(c, "setp.nan.f32 %s, %s, %s", p.s, v.s, v.s);
    vyre_ptx_ins(c, "@%s bra L%u_end", p.s, id);
    vyre_pbuf_printf(&c->body, "L%u_cas:\n", id);
    vyre_ptx_ins(c, "mov.b32 %s, %s", fcur.s, cur.s);
    vyre_ptx_ins(c, "%s.f32 %s, %s, %s", s->atomic == VYRE_ATOMIC_MIN ? "min" : "max", fnext.s,
                 fcur.s, v.s);
    vyre_ptx_ins(c, "mov.b32 %s, %s", next.s, fnext.s);
    vyre_ptx_ins(c, "setp.nan.f32 %s, %s, %s", p.s, fcur.s, fcur.s);
    vyre_ptx_ins(c, "@%s mov.b32 %s, %s", p.s, next.s, v.s);
    vyre_ptx_ins(c, "setp.eq.b32 %s, %s, %s", p.s, next.s, cur.s);
    vyre_ptx_ins(c, "@%s bra L%u_end", p.s, id);
    vyre_ptx_ins(c, "atom%s.cas.b32 %s, [%s], %s, %s", space, prev.s, a.s, cur.s, next.s);
    vyre_ptx_ins(c, "setp.ne.b32 %s, %s, %s", p.s, prev.s, cur.s);
    vyre_ptx_ins(c, "mov.b32 %s, %s", cur.s, prev.s);
    vyre_ptx_ins(c, "@%s bra L%u_cas", p.s, id);
    vyre_pbuf_printf(&c->body, "L%u_end:\n", id);
    vyre_ptx_ins(c, "mov.b32 %s, %s", old.s, cur.s);
}

static void emit_atomic(struct ptx_ctx *c, const struct vyre_stmt *s) {
    const struct vyre_decl *d = &c->p->decls[s->decl];
    if (d->type == VYRE_F32 && (s->atomic == VYRE_ATOMIC_MIN || s->atomic == VYRE_ATOMIC_MAX)) {
        emit_atomic_minmax_f32(c, s);
        return;
    }
    const char *op = atom_op(s->atomic, d->type);
    if (!op) {
        vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                      "ptx: atomic %s on %s is not supported for sm_%u. Fix: atomics work on "
                      "u32, i32 and u64 (all ops) and f32 (add, min and max)",
                      vyre_atomic_name(s->atomic), vyre_type_name(d->type), c->sm);
        return;
    }
    struct ptx_reg idx = vyre_ptx_index(c, s->index);
    struct ptx_reg v = vyre_ptx_expr(c, s->value);
    if (s->atomic == VYRE_ATOMIC_SUB) { /* sub = add of the negation (wraps) */
        struct ptx_reg n = vyre_ptx_treg(c, d->type);
        vyre_ptx_ins(c, "neg%s %s, %s",
                     d->type == VYRE_F32             ? ".f32"
                     : vyre_type_bits(d->type) == 64 ? ".s64"
                                                     : ".s32",
                     n.s, v.s);
        v = n;
    }
    struct ptx_reg e = v;
    if (s->atomic == VYRE_ATOMIC_CAS) e = vyre_ptx_expr(c, s->expected);
    struct ptx_reg a = vyre_ptx_addr(c, s->decl, idx);
    struct ptx_reg old = s->name ? slot_reg(c, s->slot) : vyre_ptx_treg(c, d->type);
    char pred[24] = "";
    if (!s->in_bounds) {
        /* Out of bounds: no effect, the old value reads as zero. */
        struct ptx_reg ok = vyre_ptx_in_range(c, s->decl, idx);
        char zero[24];
        vyre_ptx_imm(d->type, 0, zero);
        vyre_ptx_ins(c, "mov%s %s, %s", vyre_ptx_bsfx(d->type), old.s, zero);
        vyre_ptx_count_oob(c, s->decl, ok, true);
        snprintf(pred, sizeof pred, "@%s ", ok.s);
    }
    if (s->atomic == VYRE_ATOMIC_CAS)
        vyre_ptx_ins(c, "%satom%s%s %s, [%s], %s, %s", pred, space_of(c, s->decl), op, old.s, a.s,
                     e.s, v.s);
    else
        vyre_ptx_ins(c, "%satom%s%s %s, [%s], %s", pred, space_of(c, s->decl), op, old.s, a.s, v.s);
}

static void emit_if(struct ptx_ctx *c, const struct vyre_stmt *s) {
    if (c->vec && vyre_ptx_vec_if(c, s)) return;
    struct ptx_reg cond = vyre_ptx_expr(c, s->cond);
    bool has_else = s->else_.count > 0;
    vyre_ptx_ins(c, "@!%s bra L%u_%s", cond.s, (unsigned)s->id, has_else ? "else" : "end");
    emit_block(c, &s->then_);
    if (has_else) {
        vyre_ptx_ins(c, "bra L%u_end", (unsigned)s->id);
        vyre_pbuf_printf(&c->body, "L%u_else:\n", (unsigned)s->id);
        emit_block(c, &s->else_);
    }
    vyre_pbuf_printf(&c->body, "L%u_end:\n", (unsigned)s->id);
}

/* Copies a bound into a fresh register: a variable read returns the variable's own
 * register, and the body may `set` that variable, but bounds are evaluated once. */
static struct ptx_reg once(struct ptx_ctx *c, const struct vyre_expr *e) {
    struct ptx_reg r = vyre_ptx_expr(c, e);
    if (e->kind != VYRE_EX_NAME) return r;
    struct ptx_reg t = vyre_ptx_treg(c, e->type);
    emit_mov(c, e->type, t, r);
    return t;
}

/* for v = from, to, step: half open, bounds and step evaluated once, a step <= 0
 * runs zero iterations, and the loop stops where v + step would pass `to` or wrap:
 * continuing needs to - v > step, which an unsigned compare of the distance
 * decides without overflow for both signed and unsigned loops. */
static void emit_for(struct ptx_ctx *c, const struct vyre_stmt *s) {
    enum vyre_type t = c->p->slot_types[s->slot];
    if (!vyre_type_is_int(t)) {
        vyre_ptx_fail(c, VYRE_ERR_UNSUPPORTED,
                      "ptx: for loop over %s is not supported for sm_%u. Fix: loop over an integer "
                      "type",
                      vyre_type_name(t), c->sm);
        return;
    }
    unsigned id = (unsigned)s->id;
    bool sgn = vyre_type_is_signed(t);
    bool wide = vyre_type_bits(t) == 64;
    struct ptx_reg from = vyre_ptx_expr(c, s->from);
    struct ptx_reg to = once(c, s->to);
    struct ptx_reg step = once(c, s->step);
    struct ptx_reg v = slot_reg(c, s->slot);
    struct ptx_reg p = vyre_ptx_reg(c, PTX_P);
    emit_mov(c, t, v, from);
    if (sgn) vyre_ptx_ins(c, "setp.le%s %s, %s, 0", vyre_ptx_sfx(t), p.s, step.s);
    else vyre_ptx_ins(c, "setp.eq%s %s, %s, 0", vyre_ptx_sfx(t), p.s, step.s);
    vyre_ptx_ins(c, "@%s bra L%u_end", p.s, id);
    vyre_ptx_ins(c, "setp.ge%s %s, %s, %s", vyre_ptx_sfx(t), p.s, v.s, to.s);
    vyre_ptx_ins(c, "@%s bra L%u_end", p.s, id);
    vyre_pbuf_printf(&c->body, "L%u_body:\n", id);
    c->loops[c->nloops++] = s->id;
    emit_block(c, &s->then_);
    c->nloops--;
    struct ptx_reg dist = vyre_ptx_reg(c, wide ? PTX_RD : PTX_R);
    struct ptx_reg q = vyre_ptx_reg(c, PTX_P);
    vyre_ptx_ins(c, "sub%s %s, %s, %s", wide ? ".u64" : ".u32", dist.s, to.s, v.s);
    vyre_ptx_ins(c, "setp.le%s %s, %s, %s", wide ? ".u64" : ".u32", q.s, dist.s, step.s);
    vyre_ptx_ins(c, "@%s bra L%u_end", q.s, id);
    vyre_ptx_ins(c, "add%s %s, %s, %s", wide ? ".u64" : ".u32", v.s, v.s, step.s);
    vyre_ptx_ins(c, "bra L%u_body", id);
    vyre_pbuf_printf(&c->body, "L%u_end:\n", id);
}

static void emit_stmt(struct ptx_ctx *c, const struct vyre_stmt *s) {
    emit_comment(c, s);
    switch (s->kind) {
    case VYRE_ST_LET:
    case VYRE_ST_SET: {
        struct ptx_reg v = vyre_ptx_expr(c, s->value);
        emit_mov(c, c->p->slot_types[s->slot], slot_reg(c, s->slot), v);
        break;
    }
    case VYRE_ST_STORE: emit_store(c, s); break;
    case VYRE_ST_IF: emit_if(c, s); break;
    case VYRE_ST_FOR: emit_for(c, s); break;
    case VYRE_ST_BREAK:
        if (c->nloops == 0)
            vyre_ptx_fail(c, VYRE_ERR_INVALID,
                          "ptx: break outside a for loop. Fix: validate "
                          "the program first");
        else vyre_ptx_ins(c, "bra L%u_end", (unsigned)c->loops[c->nloops - 1]);
        break;
    case VYRE_ST_RETURN: /* in a grid program: the end of this section's workgroup */
        if (c->vec) vyre_ptx_vec_return(c);
        else if (vyre_ptx_wl_return(c)) break;
        else if (c->grid) vyre_ptx_ins(c, "bra %s", c->gs_ret);
        else vyre_ptx_ins(c, "ret");
        break;
    case VYRE_ST_BARRIER: vyre_ptx_ins(c, "bar.sync 0"); break;
    case VYRE_ST_ATOMIC: emit_atomic(c, s); break;
    case VYRE_ST_PUSH: vyre_ptx_wl_push(c, s); break;
    case VYRE_ST_GRID_BARRIER:
    case VYRE_ST_CONVERGE: vyre_ptx_grid_stmt(c, s); break;
    }
}

static void emit_block(struct ptx_ctx *c, const struct vyre_block *b) {
    if (c->grid && !c->in_section) {
        vyre_ptx_grid_block(c, b); /* grid level: sections and grid statements */
        return;
    }
    for (uint32_t i = 0; i < b->count && c->st == VYRE_OK; i++) emit_stmt(c, b->items[i]);
}

void vyre_ptx_stmt(struct ptx_ctx *c, const struct vyre_stmt *s) { emit_stmt(c, s); }

void vyre_ptx_block(struct ptx_ctx *c, const struct vyre_block *b) { emit_block(c, b); }

/* ---- prologue: parameters and shared memory ---------------------------------- */

void vyre_ptx_prologue(struct ptx_ctx *c) {
    const vyre_program *p = c->p;
    if (c->debug) {
        struct ptx_reg raw = vyre_ptx_reg(c, PTX_RD);
        c->oob = vyre_ptx_reg(c, PTX_RD);
        vyre_ptx_ins(c, "ld.param.u64 %s, [vy_oob]", raw.s);
        vyre_ptx_ins(c, "cvta.to.global.u64 %s, %s", c->oob.s, raw.s);
    }
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind == VYRE_DECL_BUFFER) {
            struct ptx_reg raw = vyre_ptx_reg(c, PTX_RD);
            c->decl_ptr[i] = vyre_ptx_reg(c, PTX_RD);
            c->decl_len[i] = vyre_ptx_reg(c, PTX_R);
            vyre_ptx_ins(c, "ld.param.u64 %s, [b_%s]", raw.s, d->name);
            vyre_ptx_ins(c, "cvta.to.global.u64 %s, %s", c->decl_ptr[i].s, raw.s);
            vyre_ptx_ins(c, "ld.param.u32 %s, [n_%s]", c->decl_len[i].s, d->name);
        } else if (d->kind == VYRE_DECL_PARAM) {
            c->decl_val[i] = vyre_ptx_treg(c, d->type);
            if (d->type == VYRE_BOOL) {
                struct ptx_reg w = vyre_ptx_reg(c, PTX_R);
                vyre_ptx_ins(c, "ld.param.u32 %s, [p_%s]", w.s, d->name);
                vyre_ptx_ins(c, "setp.ne.u32 %s, %s, 0", c->decl_val[i].s, w.s);
            } else {
                vyre_ptx_ins(c, "ld.param%s %s, [p_%s]", vyre_ptx_sfx(d->type), c->decl_val[i].s,
                             d->name);
            }
        }
    }
    if (p->nshared == 0 || c->grid) return; /* grid programs: per section (ptx_grid.c) */
    /* Zero-fill every shared array, 32-bit words spread over the workgroup's
     * invocations, then one barrier so no invocation reads before the fill ends. */
    uint32_t nthreads = p->workgroup[0] * p->workgroup[1] * p->workgroup[2];
    vyre_pbuf_puts(&c->body, "\t// zero-fill shared arrays\n");
    struct ptx_reg lid = vyre_ptx_reg(c, PTX_R);
    vyre_ptx_ins(c, "mov.u32 %s, %%tid.x", lid.s);
    if (p->workgroup[1] > 1 || p->workgroup[2] > 1) {
        struct ptx_reg ty = vyre_ptx_reg(c, PTX_R), tz = vyre_ptx_reg(c, PTX_R);
        struct ptx_reg yz = vyre_ptx_reg(c, PTX_R), lin = vyre_ptx_reg(c, PTX_R);
        vyre_ptx_ins(c, "mov.u32 %s, %%tid.y", ty.s);
        vyre_ptx_ins(c, "mov.u32 %s, %%tid.z", tz.s);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", yz.s, tz.s, (unsigned)p->workgroup[1], ty.s);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, %u, %s", lin.s, yz.s, (unsigned)p->workgroup[0], lid.s);
        lid = lin;
    }
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind != VYRE_DECL_SHARED) continue;
        uint32_t words = (uint32_t)(d->count * vyre_type_size(d->type) / 4u);
        struct ptx_reg w = vyre_ptx_reg(c, PTX_R), base = vyre_ptx_reg(c, PTX_R);
        struct ptx_reg a = vyre_ptx_reg(c, PTX_R);
        struct ptx_reg q = vyre_ptx_reg(c, PTX_P);
        vyre_ptx_ins(c, "mov.u32 %s, s_%s", base.s, d->name);
        vyre_ptx_ins(c, "mov.u32 %s, %s", w.s, lid.s);
        vyre_pbuf_printf(&c->body, "Z%u_loop:\n", (unsigned)i);
        vyre_ptx_ins(c, "setp.ge.u32 %s, %s, %u", q.s, w.s, (unsigned)words);
        vyre_ptx_ins(c, "@%s bra Z%u_done", q.s, (unsigned)i);
        vyre_ptx_ins(c, "mad.lo.u32 %s, %s, 4, %s", a.s, w.s, base.s);
        vyre_ptx_ins(c, "st.shared.u32 [%s], 0", a.s);
        vyre_ptx_ins(c, "add.u32 %s, %s, %u", w.s, w.s, (unsigned)nthreads);
        vyre_ptx_ins(c, "bra Z%u_loop", (unsigned)i);
        vyre_pbuf_printf(&c->body, "Z%u_done:\n", (unsigned)i);
    }
    vyre_ptx_ins(c, "bar.sync 0");
}

/* ---- module assembly ---------------------------------------------------------- */

static const char *param_type(enum vyre_type t) {
    return t == VYRE_BOOL ? ".u32" : vyre_ptx_sfx(t);
}

static void emit_module(struct ptx_ctx *c, struct vyre_pbuf *out, const char *version) {
    const vyre_program *p = c->p;
    vyre_pbuf_printf(out, "//\n// vyre %s codegen %u: program '%s'\n//\n", VYRE_VERSION,
                     VYRE_CODEGEN_VERSION, p->name);
    vyre_ptx_meta_program(c, out); /* the program's text, for tools (ptx_meta.c) */
    vyre_pbuf_printf(out, ".version %s\n.target sm_%u\n.address_size 64\n\n", version, c->sm);
    vyre_ptx_entry(c, out, p->name, NULL);
}

void vyre_ptx_entry(struct ptx_ctx *c, struct vyre_pbuf *out, const char *name, const char *extra) {
    const vyre_program *p = c->p;
    vyre_ptx_meta_entry(c, out, name);
    vyre_pbuf_printf(out, ".visible .entry %s(", name);
    /* ABI: pointers, then counts, then scalar params, each in declaration order. */
    bool first = true;
    for (int pass = 0; pass < 3; pass++) {
        for (uint32_t i = 0; i < p->ndecls; i++) {
            const struct vyre_decl *d = &p->decls[i];
            const char *line = NULL;
            char tmp[128];
            if (pass == 0 && d->kind == VYRE_DECL_BUFFER) {
                snprintf(tmp, sizeof tmp, ".param .u64 b_%s", d->name);
                line = tmp;
            } else if (pass == 1 && d->kind == VYRE_DECL_BUFFER) {
                snprintf(tmp, sizeof tmp, ".param .u32 n_%s", d->name);
                line = tmp;
            } else if (pass == 2 && d->kind == VYRE_DECL_PARAM) {
                snprintf(tmp, sizeof tmp, ".param %s p_%s", param_type(d->type), d->name);
                line = tmp;
            }
            if (!line) continue;
            vyre_pbuf_printf(out, "%s\n\t%s", first ? "" : ",", line);
            first = false;
        }
    }
    vyre_ptx_wl_params(c, out, &first);
    if (c->grid) vyre_ptx_grid_params(c, out, &first);
    if (c->debug) { /* after the grid's; only NAME_wl's `extra` follows (no v4 in debug) */
        vyre_pbuf_printf(out, "%s\n\t.param .u64 vy_oob", first ? "" : ",");
        first = false;
    }
    if (extra) { /* grid programs have no extra entry, so this order changes nothing else */
        vyre_pbuf_printf(out, "%s\n\t%s", first ? "" : ",", extra);
        first = false;
    }
    vyre_pbuf_printf(out, "%s)\n.maxntid %u, %u, %u\n{\n", first ? "" : "\n",
                     (unsigned)p->workgroup[0], (unsigned)p->workgroup[1],
                     (unsigned)p->workgroup[2]);
    if (c->grid) vyre_ptx_grid_decls(c, out);
    for (uint32_t i = 0; i < p->ndecls && !c->grid; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind != VYRE_DECL_SHARED) continue;
        vyre_pbuf_printf(out, "\t.shared .align 8 .b8 s_%s[%llu];\n", d->name,
                         (unsigned long long)((uint64_t)d->count * vyre_type_size(d->type)));
    }
    for (int k = 0; k < PTX_NCLS; k++)
        if (c->next[k] > 0)
            vyre_pbuf_printf(out, "\t.reg %s %s<%u>;\n", cls_decl[k], cls_prefix[k],
                             (unsigned)c->next[k]);
    vyre_pbuf_puts(out, "\n");
    if (c->body.len) vyre_pbuf_put(out, c->body.data, c->body.len);
    vyre_pbuf_puts(out, "\tret;\n}\n");
}

/* The error lists the table itself, so it can never disagree with it. */
static enum vyre_status check_target(const struct vyre_ptx_options *opt, struct vyre_error *err,
                                     const char **version) {
    unsigned sm = opt ? opt->sm : 0;
    const struct vyre_ptx_target *t = vyre_ptx_target_find(sm);
    *version = t ? t->isa : NULL;
    if (t) return VYRE_OK;
    char list[160];
    size_t n = 0;
    for (size_t i = 0; i < NTARGETS && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%u",
                              i == 0              ? ""
                              : i + 1 == NTARGETS ? " or "
                                                  : ", ",
                              targets[i].sm);
    return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                          "ptx: target sm_%u is not supported. Fix: pass sm = %s (a GPU between "
                          "or above them runs the PTX of the highest one below its own SM)",
                          sm, list);
}

/* The optimiser's passes run on a copy (the canonical text parsed again), so emitting
 * never changes the caller's program, its text or its hash: the pipeline of
 * src/core/opt/pipeline.c (the passes `oo` enables; NULL: all, less $VYRE_OPT), then
 * bounds-check elimination. Every pass keeps the §3 results bit-identical. */
static enum vyre_status optimized_copy(vyre_program *p, const struct vyre_opt_options *oo,
                                       vyre_program **out, struct vyre_error *err) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    struct vyre_opt_options opts;
    enum vyre_status st = vyre_opt_resolve(oo, &opts, err);
    if (st != VYRE_OK) return st;
    if (vyre_text_print(p, &text, &len) != VYRE_OK)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
    st = vyre_text_parse(text, len, out, err);
    vyre_free(text);
    if (st == VYRE_OK) st = vyre_ensure_valid(*out, err);
    if (st == VYRE_OK) st = vyre_opt_run(out, &opts, NULL, NULL, err);
    if (st == VYRE_OK) vyre_opt_bounds(*out);
    if (st != VYRE_OK) {
        vyre_program_free(*out);
        *out = NULL;
    }
    return st;
}

static enum vyre_status emit_optimized(vyre_program *p, unsigned sm, bool debug,
                                       const char *version, char **out_ptx, size_t *out_len,
                                       struct vyre_error *err);

enum vyre_status vyre_ptx_emit(vyre_program *p, const struct vyre_ptx_options *opt, char **out_ptx,
                               size_t *out_len, struct vyre_error *err) {
    if (out_ptx) *out_ptx = NULL;
    if (out_len) *out_len = 0;
    if (!p || !out_ptx)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_ptx_emit: program and out_ptx must not be NULL. Fix: pass a "
                              "program and a place for the PTX text");
    const char *version;
    enum vyre_status st = check_target(opt, err, &version);
    if (st != VYRE_OK) return st;
    st = vyre_ensure_valid(p, err);
    if (st != VYRE_OK) return st;
    /* Debug mode counts the accesses the program makes as written (the reference's
     * counts): no pass that could merge, hoist or drop a load or store runs. */
    struct vyre_opt_options none;
    memset(&none, 0, sizeof none);
    const struct vyre_opt_options *oo = opt->debug ? &none : opt->passes;
    vyre_program *q = NULL;
    st = optimized_copy(p, oo, &q, err);
    if (st != VYRE_OK) return st;
    st = emit_optimized(q, opt->sm, opt->debug, version, out_ptx, out_len, err);
    vyre_program_free(q);
    return st;
}

enum vyre_status vyre_ptx_ctx_init(struct ptx_ctx *c, vyre_program *p, unsigned sm,
                                   struct vyre_error *err) {
    memset(c, 0, sizeof *c);
    c->p = p;
    c->sm = sm;
    c->err = err;
    size_t nslots = p->nslots ? p->nslots : 1, ndecls = p->ndecls ? p->ndecls : 1;
    c->slot_reg = calloc(nslots, sizeof *c->slot_reg);
    c->slot_def = calloc(nslots, sizeof *c->slot_def);
    c->decl_ptr = calloc(ndecls, sizeof *c->decl_ptr);
    c->decl_len = calloc(ndecls, sizeof *c->decl_len);
    c->decl_val = calloc(ndecls, sizeof *c->decl_val);
    if (!c->slot_reg || !c->slot_def || !c->decl_ptr || !c->decl_len || !c->decl_val)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
    c->grid = p->has_grid; /* the cooperative kernel of ptx_grid.c */
    c->gs_off = c->grid ? calloc(ndecls, sizeof *c->gs_off) : NULL;
    if (c->grid && !c->gs_off)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "ptx: out of memory. Fix: free memory");
    return VYRE_OK;
}

void vyre_ptx_ctx_free(struct ptx_ctx *c) {
    vyre_pbuf_free(&c->body);
    free(c->slot_reg);
    free(c->slot_def);
    free(c->decl_ptr);
    free(c->decl_len);
    free(c->decl_val);
    free(c->gs_off);
    vyre_ptx_wl_free(c);
    memset(c, 0, sizeof *c);
}

/* PTX for p, which is validated and optimised: the program's entry, then the vector
 * entry when p is elementwise (ptx_vec.c). Debug mode has no vector entry: its fast
 * path has no out-of-bounds accesses to count, and one counting entry is enough. */
static enum vyre_status emit_optimized(vyre_program *p, unsigned sm, bool debug,
                                       const char *version, char **out_ptx, size_t *out_len,
                                       struct vyre_error *err) {
    struct ptx_ctx c;
    struct vyre_pbuf out = {0};
    enum vyre_status st = vyre_ptx_ctx_init(&c, p, sm, err);
    if (st != VYRE_OK) goto done;
    c.debug = debug;
    vyre_ptx_prologue(&c);
    vyre_ptx_wl_prologue(&c);
    if (c.grid) vyre_ptx_grid_prologue(&c);
    vyre_ptx_subgroup_prologue(&c);
    emit_block(&c, &p->body);
    if (c.st != VYRE_OK) {
        st = c.st;
        goto done;
    }
    emit_module(&c, &out, version);
    if (c.body.oom || out.oom) {
        st =
            vyre_error_set(err, VYRE_ERR_NOMEM, "ptx: out of memory writing PTX. Fix: free memory");
        goto done;
    }
    if (!debug && (st = vyre_ptx_vec_emit(p, sm, &out, err)) != VYRE_OK) goto done;
    if ((st = vyre_ptx_wl_emit(p, sm, debug, &out, err)) != VYRE_OK) goto done;
    *out_ptx = out.data;
    if (out_len) *out_len = out.len;
    out.data = NULL;
done:
    vyre_pbuf_free(&out);
    vyre_ptx_ctx_free(&c);
    return st;
}
