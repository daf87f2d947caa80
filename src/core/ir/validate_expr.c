/* validate_expr.c — typing of expressions (the "Typing rules" of the validator):
 * every operator's operand types (classes and result rules come from the op table
 * in ops.h), names resolved to variable slots or params,
 * buffer references resolved to declarations, and the expression depth limit.
 * An expression whose operand already failed gets type VOID silently, so one
 * mistake yields one problem, not a cascade up the tree. */
#include <stdio.h>
#include <string.h>

#include "validate_int.h"

#define FIX_MISSING "rebuild the program; a builder call returned NULL (out of memory)"

bool vyre_vv_index_type(enum vyre_type t) { return t == VYRE_U32 || t == VYRE_I32; }

static const char *tn(enum vyre_type t) { return vyre_type_name(t); }

static enum vyre_type sub(struct vyre_vv *v, const char *seg, struct vyre_expr *e, unsigned depth) {
    size_t old = vyre_vv_push(v, "%s", seg);
    enum vyre_type t = vyre_vv_expr(v, e, depth);
    vyre_vv_pop(v, old);
    return t;
}

enum vyre_type vyre_vv_child(struct vyre_vv *v, const char *seg, struct vyre_expr *e) {
    v->depth_reported = false;
    return sub(v, seg, e, 1);
}

uint32_t vyre_vv_buffer(struct vyre_vv *v, const char *name, const char *quote) {
    if (!name) {
        vyre_vv_report(v, "missing-node", FIX_MISSING, "the buffer name of %s is missing", quote);
        return UINT32_MAX;
    }
    uint32_t k = vyre_vv_lookup(v, name);
    if (k == UINT32_MAX) {
        vyre_vv_report(v, "undeclared-name",
                       "declare it first: (buffer NAME TYPE ACCESS) or (shared NAME TYPE COUNT)",
                       "no buffer or shared array named '%.64s' is declared (in %s)", name, quote);
        return UINT32_MAX;
    }
    const struct vyre_vv_name *n = &v->names[k];
    if (n->kind == VYRE_VV_DECL) {
        const struct vyre_decl *d = &v->p->decls[n->index];
        if (d->kind == VYRE_DECL_BUFFER || d->kind == VYRE_DECL_SHARED) return n->index;
        if (d->kind == VYRE_DECL_WORKLIST) {
            vyre_vv_report(v, "not-a-buffer",
                           "append to a worklist with (push NAME v); read it with (load NAME i) "
                           "and (len NAME)",
                           "'%.64s' is a worklist: store, atomic and converge take a buffer "
                           "(in %s)",
                           name, quote);
            return UINT32_MAX;
        }
        vyre_vv_report(v, "not-a-buffer",
                       "load/len/store/atomic take a buffer or shared array name",
                       "'%.64s' is a param, not a buffer or shared array (in %s)", name, quote);
    } else {
        vyre_vv_report(v, "not-a-buffer",
                       "load/len/store/atomic take a buffer or shared array name",
                       "'%.64s' is a variable, not a buffer or shared array (in %s)", name, quote);
    }
    return UINT32_MAX;
}

static enum vyre_type decl_type(const struct vyre_vv *v, uint32_t d) {
    if (d == UINT32_MAX) return VYRE_VOID;
    enum vyre_type t = v->p->decls[d].type;
    return (unsigned)t < VYRE_TYPE_COUNT ? t : VYRE_VOID;
}

static enum vyre_type check_lit(struct vyre_vv *v, struct vyre_expr *e, const char *q) {
    enum vyre_type t = e->type;
    if ((unsigned)t >= VYRE_TYPE_COUNT) {
        vyre_vv_report(v, "invalid-literal", "give the literal a type suffix like 5u32 or 1.5f32",
                       "literal %s has no valid type", q);
        return VYRE_VOID;
    }
    vyre_bits b = e->u.lit.bits;
    if ((t == VYRE_BOOL && b > 1u) || (t != VYRE_BOOL && vyre_type_bits(t) == 32 && (b >> 32))) {
        vyre_vv_report(v, "invalid-literal",
                       "build literals with vyre_ir_lit, which normalises the bits",
                       "literal %s holds bits 0x%llx that do not fit its type %s", q,
                       (unsigned long long)b, tn(t));
        return VYRE_VOID;
    }
    return t;
}

static enum vyre_type check_name(struct vyre_vv *v, struct vyre_expr *e, const char *q) {
    const char *name = e->u.name.name;
    e->u.name.ref = VYRE_REF_NONE;
    e->u.name.index = 0;
    if (!name) {
        vyre_vv_report(v, "missing-node", FIX_MISSING, "a name expression has no name");
        return VYRE_VOID;
    }
    uint32_t k = vyre_vv_lookup(v, name);
    if (k == UINT32_MAX) {
        vyre_vv_report(v, "undeclared-name",
                       "declare it before this point with (let NAME ...) or (param NAME TYPE)",
                       "'%.64s' is not declared before this use", name);
        return VYRE_VOID;
    }
    const struct vyre_vv_name *n = &v->names[k];
    if (n->kind == VYRE_VV_DECL) {
        const struct vyre_decl *d = &v->p->decls[n->index];
        if (d->kind == VYRE_DECL_PARAM) {
            e->u.name.ref = VYRE_REF_PARAM;
            e->u.name.index = n->index;
            return decl_type(v, n->index);
        }
        vyre_vv_report(v, "not-a-value",
                       "read an element with (load NAME i) or the count with (len NAME)",
                       "'%.64s' is a %s, not a value", name,
                       d->kind == VYRE_DECL_SHARED     ? "shared array"
                       : d->kind == VYRE_DECL_WORKLIST ? "worklist"
                                                       : "buffer");
        (void)q;
        return VYRE_VOID;
    }
    if (!n->in_scope && n->grid_closed) {
        vyre_vv_grid_scope(v, name);
        return VYRE_VOID;
    }
    if (!n->in_scope) {
        vyre_vv_report(v, "out-of-scope",
                       "declare the variable with let before the enclosing if/for and assign it "
                       "with set inside",
                       "'%.64s' is declared inside another block and is not visible here", name);
        return VYRE_VOID;
    }
    e->u.name.ref = VYRE_REF_VAR;
    e->u.name.index = n->index;
    return n->index < v->nslots ? v->slot_types[n->index] : VYRE_VOID;
}

static enum vyre_type check_access(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                   const char *q) {
    /* load and len also read a worklist's current items (§2) */
    uint32_t d = vyre_vv_find_worklist(v, e->u.access.buf);
    if (d == UINT32_MAX) d = vyre_vv_buffer(v, e->u.access.buf, q);
    e->u.access.decl = d;
    if (e->kind == VYRE_EX_LEN) return VYRE_U32;
    enum vyre_type it = sub(v, "index", e->u.access.index, depth + 1);
    if (it != VYRE_VOID && !vyre_vv_index_type(it)) {
        char qi[VYRE_VV_QUOTE];
        size_t old = vyre_vv_push(v, "index");
        vyre_vv_report_cast(v, "index-type", VYRE_U32, "wrap the index in (cast u32 ...)",
                            "the index %s of %s is %s; indices are u32 or i32",
                            vyre_vv_qe(e->u.access.index, qi), q, tn(it));
        vyre_vv_pop(v, old);
    }
    return decl_type(v, d);
}

/* How a problem names each operand class of ops.h: after "needs" in a unary message
 * ("neg needs a numeric (...) operand"), in a binary one ("add needs numeric (...)
 * operands"), and the default Fix of a unary op whose operand is outside the class. */
struct class_words {
    const char *unary_need, *binary_need, *unary_fix;
};

static const struct class_words class_words[] = {
    [VYRE_OPC_NUMERIC] = {"a numeric (i32 u32 i64 u64 f32 f64)",
                          "numeric (i32 u32 i64 u64 f32 f64)",
                          "convert a bool with (cast i32 ...) or (select c 1i32 0i32)"},
    [VYRE_OPC_INT] = {"an integer", "integer (i32 u32 i64 u64)",
                      "use (bitcast ...) to reach the float's bits as an integer"},
    [VYRE_OPC_INT_OR_BOOL] = {"an integer or bool", "integer or bool",
                              "use (bitcast ...) to reach the float's bits as an integer"},
    [VYRE_OPC_FLOAT] = {"a float (f32 or f64)", "float (f32 or f64)",
                        "convert the operand with (cast f32 ...) first"},
    [VYRE_OPC_BOOL] = {"a bool", "bool", "compare first, e.g. (ne x 0u32)"},
    [VYRE_OPC_ANY] = {"any", "any", ""},
};
_Static_assert(sizeof class_words / sizeof class_words[0] == VYRE_OPC_COUNT,
               "every operand class of ops.h has its words here");

/* Fix for a unary op whose operand type t is outside its class. not/lnot point at
 * each other, the mistake people make between bitwise and logical negation. */
static const char *unary_fix(enum vyre_op op, enum vyre_type t) {
    if (op == VYRE_OP_NOT)
        return t == VYRE_BOOL ? "use lnot for bool" : "use (bitcast ...) to an integer type first";
    if (op == VYRE_OP_LNOT)
        return "use not for bitwise complement, or compare first, e.g. (eq x 0u32)";
    return class_words[vyre_op_operands(op)].unary_fix;
}

static enum vyre_type check_unary(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                  const char *q) {
    enum vyre_op op = e->u.op.op;
    bool op_ok = vyre_op_arity(op) == 1;
    enum vyre_type t = sub(v, "arg", e->u.op.a[0], depth + 1);
    if (!op_ok) {
        vyre_vv_report(v, "invalid-op", "use a unary op: neg not lnot abs sqrt ... brev",
                       "operator %d of %s is not a unary op", (int)op, q);
        return VYRE_VOID;
    }
    if (t == VYRE_VOID) return VYRE_VOID;
    if (!vyre_op_admits(op, t)) {
        vyre_vv_report(v, "operand-type", unary_fix(op, t), "%s needs %s operand, got %s in %s",
                       vyre_op_name(op), class_words[vyre_op_operands(op)].unary_need, tn(t), q);
        return VYRE_VOID;
    }
    return vyre_op_result_type(op, t);
}

static enum vyre_type check_binary(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                   const char *q) {
    enum vyre_op op = e->u.op.op;
    bool op_ok = vyre_op_arity(op) == 2;
    enum vyre_type ta = sub(v, "a", e->u.op.a[0], depth + 1);
    enum vyre_type tb = sub(v, "b", e->u.op.a[1], depth + 1);
    if (!op_ok) {
        vyre_vv_report(v, "invalid-op", "use a binary op: add sub mul ... mulhi",
                       "operator %d of %s is not a binary op", (int)op, q);
        return VYRE_VOID;
    }
    if (ta == VYRE_VOID || tb == VYRE_VOID) return VYRE_VOID;
    char fix[160];
    if (ta != tb) {
        if (op == VYRE_OP_SHL || op == VYRE_OP_SHR)
            snprintf(fix, sizeof fix,
                     "the shift amount must have the value's type: wrap it in "
                     "(cast %s ...)",
                     tn(ta));
        else snprintf(fix, sizeof fix, "wrap the %s operand in (cast %s ...)", tn(tb), tn(ta));
        vyre_vv_report_cast(v, "type-mismatch", ta, fix,
                            "%s needs two operands of the same type, got %s and %s in %s",
                            vyre_op_name(op), tn(ta), tn(tb), q);
        return VYRE_VOID;
    }
    if (!vyre_op_admits(op, ta)) {
        enum vyre_op_class cls = vyre_op_operands(op);
        const char *need = class_words[cls].binary_need;
        if (op == VYRE_OP_REM && vyre_type_is_float(ta)) {
            vyre_vv_report(v, "rem-float",
                           "compute (sub a (mul b (trunc (div a b)))) for floats, or cast to an "
                           "integer type",
                           "rem is integer-only, got %s in %s", tn(ta), q);
            return VYRE_VOID;
        }
        if (cls == VYRE_OPC_BOOL)
            snprintf(fix, sizeof fix, "compare first, e.g. (ne x 0%s)%s",
                     vyre_type_is_int(ta) ? tn(ta) : "u32",
                     op == VYRE_OP_LAND  ? ", or use and for bitwise"
                     : op == VYRE_OP_LOR ? ", or use or for bitwise"
                                         : "");
        else if (ta == VYRE_BOOL)
            snprintf(fix, sizeof fix, "convert the bools with (cast u32 ...) or use land/lor/eq");
        else
            snprintf(fix, sizeof fix, "convert the operands with (cast TYPE ...) to a %s type",
                     need);
        vyre_vv_report_cast(
            v, "operand-type", cls != VYRE_OPC_BOOL && ta == VYRE_BOOL ? VYRE_U32 : VYRE_VOID, fix,
            "%s needs %s operands, got %s in %s", vyre_op_name(op), need, tn(ta), q);
        return VYRE_VOID;
    }
    return vyre_op_result_type(op, ta);
}

static enum vyre_type check_select(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                   const char *q) {
    enum vyre_type tc = sub(v, "a", e->u.op.a[0], depth + 1);
    enum vyre_type ta = sub(v, "b", e->u.op.a[1], depth + 1);
    enum vyre_type tb = sub(v, "c", e->u.op.a[2], depth + 1);
    if (tc != VYRE_VOID && tc != VYRE_BOOL) {
        size_t old = vyre_vv_push(v, "a");
        vyre_vv_report(v, "condition-type", "compare it first, e.g. (ne c 0u32)",
                       "the condition of %s is %s; it must be bool", q, tn(tc));
        vyre_vv_pop(v, old);
    }
    if (ta == VYRE_VOID || tb == VYRE_VOID) return VYRE_VOID;
    if (ta != tb) {
        char fix[128];
        snprintf(fix, sizeof fix, "wrap the %s arm in (cast %s ...)", tn(tb), tn(ta));
        vyre_vv_report_cast(v, "type-mismatch", ta, fix,
                            "select needs two arms of the same type, got %s "
                            "and %s in %s",
                            tn(ta), tn(tb), q);
        return VYRE_VOID;
    }
    return ta;
}

static enum vyre_type check_cast(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                 const char *q) {
    enum vyre_type to = e->u.op.to;
    enum vyre_type t = sub(v, "arg", e->u.op.a[0], depth + 1);
    bool bit = e->kind == VYRE_EX_BITCAST;
    if ((unsigned)to >= VYRE_TYPE_COUNT) {
        vyre_vv_report(v, "invalid-type", "use one of bool i32 u32 i64 u64 f32 f64",
                       "%s has no valid target type", q);
        return VYRE_VOID;
    }
    if (!bit) return to;
    if (to == VYRE_BOOL || t == VYRE_BOOL ||
        (t != VYRE_VOID && vyre_type_bits(t) != vyre_type_bits(to))) {
        vyre_vv_report(
            v, "bitcast-type",
            "bitcast within i32/u32/f32 or within i64/u64/f64; use cast to convert values",
            "bitcast from %s to %s is not allowed in %s (same width, no bool)",
            t == VYRE_VOID ? "?" : tn(t), tn(to), q);
        return to == VYRE_BOOL ? VYRE_VOID : to;
    }
    return to;
}

static enum vyre_type check_fma(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                const char *q) {
    enum vyre_type ta = sub(v, "a", e->u.op.a[0], depth + 1);
    enum vyre_type tb = sub(v, "b", e->u.op.a[1], depth + 1);
    enum vyre_type tc = sub(v, "c", e->u.op.a[2], depth + 1);
    if (ta == VYRE_VOID || tb == VYRE_VOID || tc == VYRE_VOID) return VYRE_VOID;
    if (ta != tb || ta != tc) {
        char fix[128];
        snprintf(fix, sizeof fix, "wrap the other operands in (cast %s ...)", tn(ta));
        vyre_vv_report_cast(v, "type-mismatch", ta, fix,
                            "fma needs three operands of the same type, got %s, %s and %s in %s",
                            tn(ta), tn(tb), tn(tc), q);
        return VYRE_VOID;
    }
    if (!vyre_type_is_float(ta)) {
        vyre_vv_report(v, "operand-type", "use (add (mul a b) c) for integers",
                       "fma needs f32 or f64 operands, got %s in %s", tn(ta), q);
        return VYRE_VOID;
    }
    return ta;
}

/* Subgroup ops (docs/SUBGROUPS.md): ballot/all/any take a bool; shuffles take a
 * numeric value and a u32 lane, mask or delta; reduce/scan a numeric value that their
 * combining op admits. Where they may appear is validate_flow.c's business. */
static enum vyre_type check_subgroup(struct vyre_vv *v, struct vyre_expr *e, unsigned depth,
                                     const char *q) {
    enum vyre_subgroup k = e->u.op.sg;
    if ((unsigned)k >= VYRE_SG_COUNT) {
        vyre_vv_report(v, "invalid-expr", FIX_MISSING, "subgroup op %d of %s is unknown", (int)k,
                       q);
        return VYRE_VOID;
    }
    unsigned n = vyre_subgroup_arity(k);
    enum vyre_type ta = n >= 1 ? sub(v, n == 1 ? "arg" : "a", e->u.op.a[0], depth + 1) : VYRE_U32;
    enum vyre_type tb = n >= 2 ? sub(v, "b", e->u.op.a[1], depth + 1) : VYRE_U32;
    const char *name = vyre_subgroup_name(k);
    switch (k) {
    case VYRE_SG_SIZE:
    case VYRE_SG_LANE: return VYRE_U32;
    case VYRE_SG_BALLOT:
    case VYRE_SG_ALL:
    case VYRE_SG_ANY:
        if (ta == VYRE_VOID) return VYRE_VOID;
        if (ta != VYRE_BOOL) {
            char fix[96];
            snprintf(fix, sizeof fix, "compare it first, e.g. (ne x 0%s)",
                     vyre_type_is_int(ta) ? tn(ta) : "u32");
            vyre_vv_report(v, "operand-type", fix, "%s needs a bool operand, got %s in %s", name,
                           tn(ta), q);
            return VYRE_VOID;
        }
        return k == VYRE_SG_BALLOT ? VYRE_U32 : VYRE_BOOL;
    case VYRE_SG_MATCH_ANY:
        if (ta == VYRE_VOID) return VYRE_VOID;
        if (ta == VYRE_BOOL) {
            vyre_vv_report(v, "operand-type",
                           "match (select c 1u32 0u32), or use (ballot c) and its complement",
                           "match_any needs a numeric (i32 u32 i64 u64 f32 f64) value, got bool "
                           "in %s",
                           q);
            return VYRE_VOID;
        }
        return VYRE_U32;
    case VYRE_SG_REDUCE:
    case VYRE_SG_SCAN: {
        enum vyre_op op = e->u.op.op;
        if (!vyre_subgroup_is_combiner(op)) {
            vyre_vv_report(v, "invalid-op", "combine with add, min, max, and, or or xor",
                           "%s cannot combine with operator %s in %s", name,
                           (unsigned)op < VYRE_OP_COUNT ? vyre_op_name(op) : "?", q);
            return VYRE_VOID;
        }
        if (ta == VYRE_VOID) return VYRE_VOID;
        if (!vyre_subgroup_op_admits(op, ta)) {
            bool bitwise = op == VYRE_OP_AND || op == VYRE_OP_OR || op == VYRE_OP_XOR;
            const char *fix =
                ta == VYRE_BOOL ? "reduce bools with subgroup_all/subgroup_any, or count them "
                                  "with (popcount (ballot c))"
                : bitwise       ? "bitwise reductions take integers: (bitcast u32 x) first"
                                : "convert the value with (cast TYPE ...) to a numeric type";
            vyre_vv_report(v, "operand-type", fix, "%s %s needs %s value, got %s in %s", name,
                           vyre_op_name(op),
                           bitwise ? "an integer (i32 u32 i64 u64)"
                                   : "a numeric (i32 u32 i64 u64 f32 f64)",
                           tn(ta), q);
            return VYRE_VOID;
        }
        return ta;
    }
    default: /* the four shuffles */
        if (tb != VYRE_VOID && tb != VYRE_U32) {
            char qb[VYRE_VV_QUOTE];
            size_t old = vyre_vv_push(v, "b");
            vyre_vv_report_cast(v, "lane-type", VYRE_U32, "wrap it in (cast u32 ...)",
                                "the lane, mask or delta %s of %s is %s; it must be u32",
                                vyre_vv_qe(e->u.op.a[1], qb), q, tn(tb));
            vyre_vv_pop(v, old);
        }
        if (ta == VYRE_VOID || tb == VYRE_VOID) return VYRE_VOID;
        if (ta == VYRE_BOOL) {
            vyre_vv_report(v, "operand-type",
                           "shuffle (select c 1u32 0u32) and compare the result with (ne r 0u32)",
                           "%s needs a numeric (i32 u32 i64 u64 f32 f64) value, got bool in %s",
                           name, q);
            return VYRE_VOID;
        }
        return tb == VYRE_U32 ? ta : VYRE_VOID;
    }
}

enum vyre_type vyre_vv_expr(struct vyre_vv *v, struct vyre_expr *e, unsigned depth) {
    char q[VYRE_VV_QUOTE];
    if (v->full) return VYRE_VOID;
    vyre_vv_count(v);
    /* Past the node limit nothing more is visited: this also bounds the work on a
     * tree whose subexpressions are shared (a DAG walked as a tree is exponential). */
    if (v->nodes_reported) return VYRE_VOID;
    if (!e) {
        vyre_vv_report(v, "missing-node", FIX_MISSING, "the expression is missing (NULL)");
        return VYRE_VOID;
    }
    vyre_vv_qe(e, q);
    if (depth > VYRE_MAX_EXPR_DEPTH) {
        /* Nothing below is visited: the tree may be arbitrarily deep. One problem
         * per statement operand, however many branches cross the limit. */
        if (!v->depth_reported)
            vyre_vv_report(v, "limit-expr-depth", "split the expression with let variables",
                           "expression nesting exceeds %d levels at %s", VYRE_MAX_EXPR_DEPTH, q);
        v->depth_reported = true;
        return VYRE_VOID;
    }
    enum vyre_type t = VYRE_VOID;
    switch (e->kind) {
    case VYRE_EX_LIT: return check_lit(v, e, q); /* keeps its own type field */
    case VYRE_EX_NAME: t = check_name(v, e, q); break;
    case VYRE_EX_BUILTIN:
        if ((unsigned)e->u.builtin.which >= VYRE_BUILTIN_COUNT || e->u.builtin.axis > 2)
            vyre_vv_report(v, "invalid-builtin",
                           "use gid lid wgid wgsize ngroups with axis x, y or z",
                           "builtin %s is not valid", q);
        else t = VYRE_U32;
        break;
    case VYRE_EX_LOAD:
    case VYRE_EX_LEN: t = check_access(v, e, depth, q); break;
    case VYRE_EX_UNARY: t = check_unary(v, e, depth, q); break;
    case VYRE_EX_BINARY: t = check_binary(v, e, depth, q); break;
    case VYRE_EX_SELECT: t = check_select(v, e, depth, q); break;
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST: t = check_cast(v, e, depth, q); break;
    case VYRE_EX_FMA: t = check_fma(v, e, depth, q); break;
    case VYRE_EX_SUBGROUP: t = check_subgroup(v, e, depth, q); break;
    default:
        vyre_vv_report(v, "invalid-expr", FIX_MISSING, "expression kind %d is unknown",
                       (int)e->kind);
        break;
    }
    e->type = t;
    return t;
}
