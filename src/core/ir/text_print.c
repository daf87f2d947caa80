/* text_print.c — the canonical printer of ARCHITECTURE.md §4: vyre_text_print (the whole
 * program, the text the program hash is computed from), and vyre_expr_text /
 * vyre_stmt_text (one node on one line, for error messages and PTX comments).
 * Output never depends on the locale or the C library: floats are written as exact
 * hex floats by hand, so two machines always produce the same bytes (and hashes). */
#include "text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer --------------------------------------------------------------- */

void vyre_tw_flush(struct vyre_tw *w) {
    if (w->mode == VYRE_TW_SINK && w->len > 0) {
        w->sink(w->ctx, w->buf, w->len);
        w->len = 0;
    }
}

static void tw_put(struct vyre_tw *w, const char *s, size_t n) {
    switch (w->mode) {
    case VYRE_TW_FIXED: {
        size_t avail = w->cap > 0 ? w->cap - 1 - w->len : 0;
        if (n > avail) {
            n = avail;
            w->truncated = true;
        }
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        break;
    }
    case VYRE_TW_SINK:
        while (n > 0) {
            size_t room = w->cap - w->len, k = n < room ? n : room;
            memcpy(w->buf + w->len, s, k);
            w->len += k;
            s += k;
            n -= k;
            if (w->len == w->cap) vyre_tw_flush(w);
        }
        break;
    case VYRE_TW_GROW:
        if (w->oom) return;
        if (w->len + n + 1 > w->cap) {
            size_t ncap = w->cap ? w->cap : 256;
            while (w->len + n + 1 > ncap) ncap *= 2;
            char *nb = realloc(w->buf, ncap);
            if (!nb) {
                w->oom = true;
                return;
            }
            w->buf = nb;
            w->cap = ncap;
        }
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        w->buf[w->len] = '\0';
        break;
    }
}

static void tw_str(struct vyre_tw *w, const char *s) {
    if (!s) {
        w->bad = true;
        s = "<null>";
    }
    tw_put(w, s, strlen(s));
}

static void tw_indent(struct vyre_tw *w, int level) {
    static const char spaces[] = "                                ";
    size_t n = (size_t)level * 2;
    while (n > 0) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        tw_put(w, spaces, k);
        n -= k;
    }
}

/* A printing stops early once a fixed buffer is full: nothing more can show. */
static bool tw_done(const struct vyre_tw *w) { return w->mode == VYRE_TW_FIXED && w->truncated; }

/* ---- literals ------------------------------------------------------------- */

static const char hexdig[] = "0123456789abcdef";

/* "0x1.<fraction>p<exp>": `frac` holds the `fbits` fraction bits below the
 * implicit leading one; trailing zero nibbles are dropped (like glibc's %a). */
static size_t fmt_hexfloat(char *out, bool neg, uint64_t frac, unsigned fbits, int exp) {
    size_t n = 0;
    if (neg) out[n++] = '-';
    memcpy(out + n, "0x1", 3);
    n += 3;
    if (fbits > 0 && frac != 0) {
        uint64_t f = frac << (64 - fbits); /* left-align the fraction */
        out[n++] = '.';
        while (f != 0) {
            out[n++] = hexdig[f >> 60];
            f <<= 4;
        }
    }
    n += (size_t)snprintf(out + n, 16, "p%c%d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return n;
}

static unsigned top_bit(uint64_t v) {
    unsigned k = 0;
    while (v >>= 1) k++;
    return k;
}

/* Float of `mbits` mantissa bits, `ebits` exponent bits (f32: 23/8, f64: 52/11). */
static size_t fmt_float(char *out, uint64_t bits, unsigned mbits, unsigned ebits) {
    unsigned width = 1 + ebits + mbits;
    bool neg = (bits >> (width - 1)) & 1;
    uint64_t emax = (1u << ebits) - 1;
    uint64_t e = (bits >> mbits) & emax;
    uint64_t m = bits & ((UINT64_C(1) << mbits) - 1);
    int bias = (int)(emax >> 1);
    if (e == emax) {
        if (m == 0) return (size_t)sprintf(out, "%sinf", neg ? "-" : "");
        return (size_t)sprintf(out, "nan:0x%0*" PRIx64, (int)(width / 4), bits);
    }
    if (e == 0 && m == 0) return (size_t)sprintf(out, "%s0x0p+0", neg ? "-" : "");
    if (e == 0) { /* subnormal: normalise so the text has one canonical form */
        unsigned k = top_bit(m);
        return fmt_hexfloat(out, neg, m & ((UINT64_C(1) << k) - 1), k,
                            (int)k - (int)mbits - bias + 1);
    }
    return fmt_hexfloat(out, neg, m, mbits, (int)e - bias);
}

/* Canonical literal text with its suffix into out (at least 48 bytes). */
static void fmt_lit(char *out, enum vyre_type t, vyre_bits bits, bool *bad) {
    size_t n;
    switch (t) {
    case VYRE_BOOL: strcpy(out, bits ? "true" : "false"); return;
    case VYRE_I32: sprintf(out, "%" PRId32 "i32", (int32_t)(uint32_t)bits); return;
    case VYRE_U32: sprintf(out, "%" PRIu32 "u32", (uint32_t)bits); return;
    case VYRE_I64: sprintf(out, "%" PRId64 "i64", (int64_t)bits); return;
    case VYRE_U64: sprintf(out, "%" PRIu64 "u64", (uint64_t)bits); return;
    case VYRE_F32:
        n = fmt_float(out, bits & 0xffffffffu, 23, 8);
        strcpy(out + n, "f32");
        return;
    case VYRE_F64:
        n = fmt_float(out, bits, 52, 11);
        strcpy(out + n, "f64");
        return;
    default:
        *bad = true;
        strcpy(out, "<bad-literal>");
        return;
    }
}

/* ---- names of enums (placeholders keep a broken program printable) --------- */

static const char *type_text(struct vyre_tw *w, enum vyre_type t) {
    if ((unsigned)t >= VYRE_TYPE_COUNT) {
        w->bad = true;
        return "<bad-type>";
    }
    return vyre_type_name(t);
}

static void put_name(struct vyre_tw *w, const char *s) {
    tw_put(w, " ", 1);
    tw_str(w, s);
}

/* ---- expressions (always one line) ----------------------------------------- */

static void print_expr(struct vyre_tw *w, const struct vyre_expr *e);

static void print_args(struct vyre_tw *w, const struct vyre_expr *e, int n) {
    for (int i = 0; i < n; i++) {
        tw_put(w, " ", 1);
        print_expr(w, e->u.op.a[i]);
    }
}

/* (subgroup_size), (ballot C), (shuffle V LANE), (subgroup_reduce OP V). */
static void print_subgroup(struct vyre_tw *w, const struct vyre_expr *e) {
    enum vyre_subgroup k = e->u.op.sg;
    bool combines = k == VYRE_SG_REDUCE || k == VYRE_SG_SCAN;
    if ((unsigned)k >= VYRE_SG_COUNT || (combines && !vyre_subgroup_is_combiner(e->u.op.op))) {
        w->bad = true;
        tw_str(w, "(<bad-subgroup>");
    } else {
        tw_put(w, "(", 1);
        tw_str(w, vyre_subgroup_name(k));
        if (combines) put_name(w, vyre_op_name(e->u.op.op));
    }
    print_args(w, e, (int)vyre_subgroup_arity(k));
    tw_put(w, ")", 1);
}

static void print_expr(struct vyre_tw *w, const struct vyre_expr *e) {
    char lit[64];
    if (tw_done(w)) return;
    if (!e) {
        w->bad = true;
        tw_str(w, "<null>");
        return;
    }
    switch (e->kind) {
    case VYRE_EX_LIT:
        fmt_lit(lit, e->type, e->u.lit.bits, &w->bad);
        tw_str(w, lit);
        return;
    case VYRE_EX_NAME: tw_str(w, e->u.name.name); return;
    case VYRE_EX_BUILTIN:
        if ((unsigned)e->u.builtin.which >= VYRE_BUILTIN_COUNT || e->u.builtin.axis > 2) {
            w->bad = true;
            tw_str(w, "(<bad-builtin>)");
            return;
        }
        tw_put(w, "(", 1);
        tw_str(w, vyre_builtin_name(e->u.builtin.which));
        tw_put(w, " ", 1);
        tw_put(w, &"xyz"[e->u.builtin.axis], 1);
        tw_put(w, ")", 1);
        return;
    case VYRE_EX_LOAD:
        tw_str(w, "(load");
        put_name(w, e->u.access.buf);
        tw_put(w, " ", 1);
        print_expr(w, e->u.access.index);
        tw_put(w, ")", 1);
        return;
    case VYRE_EX_LEN:
        tw_str(w, "(len");
        put_name(w, e->u.access.buf);
        tw_put(w, ")", 1);
        return;
    case VYRE_EX_UNARY:
    case VYRE_EX_BINARY: {
        bool unary = e->kind == VYRE_EX_UNARY;
        if ((unsigned)e->u.op.op >= VYRE_OP_COUNT || vyre_op_is_unary(e->u.op.op) != unary) {
            w->bad = true;
            tw_str(w, "(<bad-op>");
        } else {
            tw_put(w, "(", 1);
            tw_str(w, vyre_op_name(e->u.op.op));
        }
        print_args(w, e, unary ? 1 : 2);
        tw_put(w, ")", 1);
        return;
    }
    case VYRE_EX_SELECT:
        tw_str(w, "(select");
        print_args(w, e, 3);
        tw_put(w, ")", 1);
        return;
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST:
        tw_str(w, e->kind == VYRE_EX_CAST ? "(cast " : "(bitcast ");
        tw_str(w, type_text(w, e->u.op.to));
        print_args(w, e, 1);
        tw_put(w, ")", 1);
        return;
    case VYRE_EX_FMA:
        tw_str(w, "(fma");
        print_args(w, e, 3);
        tw_put(w, ")", 1);
        return;
    case VYRE_EX_SUBGROUP: print_subgroup(w, e); return;
    }
    w->bad = true;
    tw_str(w, "<bad-expr>");
}

/* ---- statements ------------------------------------------------------------ */

static void print_atomic(struct vyre_tw *w, const struct vyre_stmt *s) {
    if (s->name) {
        tw_str(w, "(let ");
        tw_str(w, s->name);
        tw_put(w, " ", 1);
    }
    tw_str(w, "(atomic ");
    if ((unsigned)s->atomic >= VYRE_ATOMIC_COUNT) {
        w->bad = true;
        tw_str(w, "<bad-atomic>");
    } else {
        tw_str(w, vyre_atomic_name(s->atomic));
    }
    put_name(w, s->buf);
    tw_put(w, " ", 1);
    print_expr(w, s->index);
    if (s->atomic == VYRE_ATOMIC_CAS) {
        tw_put(w, " ", 1);
        print_expr(w, s->expected);
    }
    tw_put(w, " ", 1);
    print_expr(w, s->value);
    tw_put(w, s->name ? "))" : ")", s->name ? 2 : 1);
}

static void print_stmt(struct vyre_tw *w, const struct vyre_stmt *s, int indent, bool oneline);

/* Statement i of a block. A damaged block (count > 0 with no items array, from a
 * hand-built or corrupted IR) yields NULL, which print_stmt shows as "<null>"
 * and reports as bad, instead of dereferencing a NULL array. */
static const struct vyre_stmt *block_item(const struct vyre_block *b, uint32_t i) {
    return b->items ? b->items[i] : NULL;
}

static bool is_block_stmt(const struct vyre_stmt *s) { return vyre_stmt_has_blocks(s); }

/* Block items after an already written head ("(then", "(for i ..."): none prints
 * nothing, one plain statement goes on the head's line, anything else one per
 * line one level deeper than `indent`; the caller writes the closing ')'. */
static void print_items(struct vyre_tw *w, const struct vyre_block *b, int indent) {
    if (b->count == 1 && !is_block_stmt(block_item(b, 0))) {
        tw_put(w, " ", 1);
        print_stmt(w, block_item(b, 0), indent + 1, false);
        return;
    }
    for (uint32_t i = 0; i < b->count && !tw_done(w); i++) {
        tw_put(w, "\n", 1);
        tw_indent(w, indent + 1);
        print_stmt(w, block_item(b, i), indent + 1, false);
    }
}

static void print_stmt(struct vyre_tw *w, const struct vyre_stmt *s, int indent, bool oneline) {
    if (tw_done(w)) return;
    if (!s) {
        w->bad = true;
        tw_str(w, "<null>");
        return;
    }
    switch (s->kind) {
    case VYRE_ST_LET:
    case VYRE_ST_SET:
        tw_str(w, s->kind == VYRE_ST_LET ? "(let" : "(set");
        put_name(w, s->name);
        tw_put(w, " ", 1);
        print_expr(w, s->value);
        tw_put(w, ")", 1);
        return;
    case VYRE_ST_STORE:
        tw_str(w, "(store");
        put_name(w, s->buf);
        tw_put(w, " ", 1);
        print_expr(w, s->index);
        tw_put(w, " ", 1);
        print_expr(w, s->value);
        tw_put(w, ")", 1);
        return;
    case VYRE_ST_IF:
        tw_str(w, "(if ");
        print_expr(w, s->cond);
        if (oneline) {
            tw_str(w, " ...)");
            return;
        }
        tw_put(w, "\n", 1);
        tw_indent(w, indent + 1);
        tw_str(w, "(then");
        print_items(w, &s->then_, indent + 1);
        tw_put(w, ")", 1);
        if (s->else_.count > 0) {
            tw_put(w, "\n", 1);
            tw_indent(w, indent + 1);
            tw_str(w, "(else");
            print_items(w, &s->else_, indent + 1);
            tw_put(w, ")", 1);
        }
        tw_put(w, ")", 1);
        return;
    case VYRE_ST_FOR:
        tw_str(w, "(for");
        put_name(w, s->name);
        tw_put(w, " ", 1);
        print_expr(w, s->from);
        tw_put(w, " ", 1);
        print_expr(w, s->to);
        tw_put(w, " ", 1);
        print_expr(w, s->step);
        if (oneline) {
            tw_str(w, " ...)");
            return;
        }
        print_items(w, &s->then_, indent);
        tw_put(w, ")", 1);
        return;
    case VYRE_ST_BREAK: tw_str(w, "(break)"); return;
    case VYRE_ST_RETURN: tw_str(w, "(return)"); return;
    case VYRE_ST_BARRIER: tw_str(w, "(barrier)"); return;
    case VYRE_ST_ATOMIC: print_atomic(w, s); return;
    case VYRE_ST_GRID_BARRIER: tw_str(w, "(grid_barrier)"); return;
    case VYRE_ST_PUSH:
        tw_str(w, "(push");
        put_name(w, s->buf);
        tw_put(w, " ", 1);
        print_expr(w, s->value);
        tw_put(w, ")", 1);
        return;
    case VYRE_ST_CONVERGE:
        tw_str(w, "(converge");
        put_name(w, s->buf);
        tw_put(w, " ", 1);
        print_expr(w, s->value);
        if (oneline) {
            tw_str(w, " ...)");
            return;
        }
        print_items(w, &s->then_, indent);
        tw_put(w, ")", 1);
        return;
    }
    w->bad = true;
    tw_str(w, "<bad-stmt>");
}

/* ---- program ---------------------------------------------------------------- */

static void print_decl(struct vyre_tw *w, const struct vyre_decl *d) {
    char num[16];
    switch (d->kind) {
    case VYRE_DECL_BUFFER:
        tw_str(w, "(buffer");
        put_name(w, d->name);
        put_name(w, type_text(w, d->type));
        if ((unsigned)d->access > VYRE_ACCESS_READ_WRITE) {
            w->bad = true;
            put_name(w, "<bad-access>");
        } else {
            put_name(w, vyre_access_name(d->access));
        }
        if (d->count != 0) {
            snprintf(num, sizeof num, " %" PRIu32, d->count);
            tw_str(w, num);
        }
        tw_put(w, ")", 1);
        return;
    case VYRE_DECL_SHARED:
        tw_str(w, "(shared");
        put_name(w, d->name);
        put_name(w, type_text(w, d->type));
        snprintf(num, sizeof num, " %" PRIu32 ")", d->count);
        tw_str(w, num);
        return;
    case VYRE_DECL_WORKLIST:
    case VYRE_DECL_PARAM:
        tw_str(w, d->kind == VYRE_DECL_PARAM ? "(param" : "(worklist");
        put_name(w, d->name);
        put_name(w, type_text(w, d->type));
        tw_put(w, ")", 1);
        return;
    }
    w->bad = true;
    tw_str(w, "(<bad-decl>)");
}

void vyre_tw_program(struct vyre_tw *w, const vyre_program *p) {
    char num[48];
    const uint32_t *wg = p->workgroup;
    tw_str(w, "(program");
    put_name(w, p->name);
    if (wg[2] != 1)
        snprintf(num, sizeof num, " (workgroup %" PRIu32 " %" PRIu32 " %" PRIu32 ")", wg[0], wg[1],
                 wg[2]);
    else if (wg[1] != 1)
        snprintf(num, sizeof num, " (workgroup %" PRIu32 " %" PRIu32 ")", wg[0], wg[1]);
    else snprintf(num, sizeof num, " (workgroup %" PRIu32 ")", wg[0]);
    tw_str(w, num);
    for (uint32_t i = 0; i < p->ndecls; i++) {
        tw_put(w, "\n  ", 3);
        print_decl(w, &p->decls[i]);
    }
    for (uint32_t i = 0; i < p->body.count; i++) {
        tw_put(w, "\n  ", 3);
        print_stmt(w, block_item(&p->body, i), 1, false);
    }
    tw_put(w, ")\n", 2);
}

enum vyre_status vyre_text_print(const vyre_program *p, char **out, size_t *out_len) {
    struct vyre_tw w = {.mode = VYRE_TW_GROW};
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!p || !out) return VYRE_ERR_ARG;
    if (p->oom) return VYRE_ERR_NOMEM;
    vyre_tw_program(&w, p);
    if (w.oom) {
        free(w.buf);
        return VYRE_ERR_NOMEM;
    }
    if (w.bad) { /* a half-built program has no canonical text */
        free(w.buf);
        return VYRE_ERR_ARG;
    }
    *out = w.buf;
    if (out_len) *out_len = w.len;
    return VYRE_OK;
}

/* A program made of part of p: p's header under another name, p's declarations (of the
 * shared arrays, those the statements use), more
 * declarations already written as text (extra, may be NULL), and statements
 * [first, first + count) of block b. The CUDA host split builds one kernel per section
 * of a program with grid statements this way. */
enum vyre_status vyre_text_print_part(const vyre_program *p, const char *name, const char *extra,
                                      const struct vyre_block *b, uint32_t first, uint32_t count,
                                      char **out) {
    struct vyre_tw w = {.mode = VYRE_TW_GROW};
    *out = NULL;
    if (p->oom) return VYRE_ERR_NOMEM;
    if (!name) { /* the statements alone (megakernel composition, mega.c) */
        for (uint32_t i = first; i < first + count && i < b->count; i++) {
            tw_put(&w, "\n  ", 3);
            print_stmt(&w, block_item(b, i), 1, false);
        }
        tw_put(&w, "", 1); /* NUL */
        goto done;
    }
    char num[48];
    const uint32_t *wg = p->workgroup;
    tw_str(&w, "(program");
    put_name(&w, name);
    snprintf(num, sizeof num, " (workgroup %" PRIu32 " %" PRIu32 " %" PRIu32 ")", wg[0], wg[1],
             wg[2]);
    tw_str(&w, num);
    /* only the shared arrays the section uses: the others take no room in its kernel
     * (as in the cooperative kernel's window, shared_layout.c), so a megakernel's
     * section kernel needs its own steps' arrays, not every step's */
    bool *used = calloc(p->ndecls ? p->ndecls : 1u, sizeof *used);
    if (!used) return VYRE_ERR_NOMEM;
    vyre_shared_used(p, b, first, count, used);
    for (uint32_t i = 0; i < p->ndecls; i++) {
        if (p->decls[i].kind == VYRE_DECL_SHARED && !used[i]) continue;
        tw_put(&w, "\n  ", 3);
        print_decl(&w, &p->decls[i]);
    }
    free(used);
    if (extra) tw_str(&w, extra);
    for (uint32_t i = first; i < first + count && i < b->count; i++) {
        tw_put(&w, "\n  ", 3);
        print_stmt(&w, block_item(b, i), 1, false);
    }
    tw_put(&w, ")\n", 2);
done:
    if (w.oom || w.bad) {
        free(w.buf);
        return w.oom ? VYRE_ERR_NOMEM : VYRE_ERR_ARG;
    }
    *out = w.buf;
    return VYRE_OK;
}

/* ---- one node on one line ----------------------------------------------------- */

static char *finish_fixed(struct vyre_tw *w) {
    if (w->cap == 0) return w->buf;
    if (w->truncated && w->cap >= 4) memcpy(w->buf + w->cap - 4, "...", 3);
    w->buf[w->truncated ? w->cap - 1 : w->len] = '\0';
    return w->buf;
}

char *vyre_expr_text(const struct vyre_expr *e, char *buf, size_t size) {
    struct vyre_tw w = {.mode = VYRE_TW_FIXED, .buf = buf, .cap = buf ? size : 0};
    if (!buf) return buf;
    print_expr(&w, e);
    return finish_fixed(&w);
}

char *vyre_stmt_text(const struct vyre_stmt *s, char *buf, size_t size) {
    struct vyre_tw w = {.mode = VYRE_TW_FIXED, .buf = buf, .cap = buf ? size : 0};
    if (!buf) return buf;
    print_stmt(&w, s, 0, true);
    return finish_fixed(&w);
}
