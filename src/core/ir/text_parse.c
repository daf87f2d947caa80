/* text_parse.c — vyre_text_parse: the text format of ARCHITECTURE.md §4 into IR, through
 * the builder of ir.h. Recursive descent straight over the token stream (no
 * intermediate tree). It checks form only (head keywords, arity, type/access/axis
 * names, literal syntax and ranges, balanced parentheses, nothing after the
 * program); names and types are the validator's business. Nesting is bounded so
 * hostile input cannot overflow the stack; every error carries line and column. */
#include "text_lex.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Parenthesis levels accepted; a valid program needs far fewer (statement nesting
 * 64 and expression depth 128, validator limits). */
/* Every valid program fits (statement nesting 64 = 128 levels with then/else, plus an
 * expression of depth 128, plus the program and statement forms); the bound keeps
 * the recursion inside a 128 KiB thread stack (tests/c/test_parse_stack.c). */
#define PARSE_MAX_DEPTH 320
/* The recursions (parse_expr -> parse_form_expr -> parse_<form> -> parse_expr, and
 * parse_stmt -> parse_if/for -> parse_items -> parse_stmt) are the parser's deepest
 * paths. Their frames hold only node pointers: head words, name buffers and message
 * buffers live in PARSE_LEAF/PARSE_COLD helpers that return before the recursion goes
 * on, so -O3 inlining cannot pull them into the recursive frames
 * (tests/c/test_parse_stack.c, in every build type). */
#define PARSE_COLD __attribute__((noinline, cold))
#define PARSE_LEAF __attribute__((noinline))

struct parser {
    struct vyre_lex lx;
    struct vyre_tok t; /* current token */
    vyre_program *p;
    struct vyre_error *err;
    unsigned depth;
    enum vyre_status st; /* VYRE_OK until the first failure */
};

static const char *const stmt_heads[] = {"let",    "set",          "store",    "if",
                                         "for",    "break",        "return",   "barrier",
                                         "atomic", "grid_barrier", "converge", "push"};
static const char TYPE_LIST[] = "bool i32 u32 i64 u64 f32 f64";

/* ---- errors ------------------------------------------------------------------- */

static bool fail_at(struct parser *P, const struct vyre_tok *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static bool fail_at(struct parser *P, const struct vyre_tok *at, const char *fmt, ...) {
    char msg[VYRE_MSG_MAX - 64];
    va_list ap;
    if (P->st != VYRE_OK) return false; /* keep the first error */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    P->st = VYRE_ERR_SYNTAX;
    vyre_error_set(P->err, VYRE_ERR_SYNTAX, "line %zu, column %zu: %s", at->line, at->col, msg);
    if (P->err) {
        P->err->line = at->line > UINT32_MAX ? UINT32_MAX : (uint32_t)at->line;
        P->err->column = at->col > UINT32_MAX ? UINT32_MAX : (uint32_t)at->col;
    }
    return false;
}

/* "expected WHAT, found TOKEN. Fix: FIX" at the current token. */
PARSE_COLD static bool expected(struct parser *P, const char *what, const char *fix) {
    char found[128];
    vyre_tok_describe(&P->t, found, sizeof found);
    return fail_at(P, &P->t, "expected %s, found %s. Fix: %s", what, found, fix);
}

/* A builder call returned NULL: allocation failed. */
static bool oom(struct parser *P) {
    if (P->st == VYRE_OK) {
        P->st = VYRE_ERR_NOMEM;
        vyre_error_set(P->err, VYRE_ERR_NOMEM,
                       "out of memory while parsing. Fix: free memory "
                       "or parse a smaller program");
    }
    return false;
}

/* ---- token helpers ------------------------------------------------------------- */

static void next(struct parser *P) { vyre_lex_next(&P->lx, &P->t); }

/* At '(' : enters one nesting level. */
static bool enter_list(struct parser *P) {
    if (++P->depth > PARSE_MAX_DEPTH)
        return fail_at(P, &P->t,
                       "nesting deeper than %d parentheses. Fix: split the "
                       "expression with let variables",
                       PARSE_MAX_DEPTH);
    next(P);
    return true;
}

PARSE_COLD static bool unclosed(struct parser *P, const char *shape) {
    char what[160];
    snprintf(what, sizeof what, "')' closing %s", shape);
    char fix[200];
    snprintf(fix, sizeof fix, "the form is %s; remove the extra part or add the missing ')'",
             shape);
    return expected(P, what, fix);
}

/* Expects ')' closing the form described by `shape`. */
static bool close_form(struct parser *P, const char *shape) {
    if (P->t.kind != VYRE_TK_RP) return unclosed(P, shape);
    P->depth--;
    next(P);
    return true;
}

PARSE_COLD static bool unclosed_of(struct parser *P, const char *fmt, const char *word) {
    char shape[64];
    snprintf(shape, sizeof shape, fmt, word);
    return unclosed(P, shape);
}

/* close_form with the shape made from fmt and word only when it is needed. */
static bool close_form_of(struct parser *P, const char *fmt, const char *word) {
    if (P->t.kind == VYRE_TK_RP) return close_form(P, NULL);
    return unclosed_of(P, fmt, word);
}

/* Head atom of the list whose '(' is the current token, without consuming. */
static bool peek_head(const struct parser *P, struct vyre_tok *head) {
    struct vyre_lex save = P->lx;
    vyre_lex_next(&save, head);
    return head->kind == VYRE_TK_ATOM;
}

static bool is_stmt_head(const struct vyre_tok *t) {
    for (size_t i = 0; i < sizeof stmt_heads / sizeof stmt_heads[0]; i++)
        if (vyre_tok_is(t, stmt_heads[i])) return true;
    return false;
}

/* Copies the current atom into a NUL-terminated buffer (false if it does not fit). */
static bool atom_copy(const struct vyre_tok *t, char *out, size_t size) {
    if (t->kind != VYRE_TK_ATOM || t->n >= size) return false;
    memcpy(out, t->s, t->n);
    out[t->n] = '\0';
    return true;
}

PARSE_LEAF static bool take_name(struct parser *P, const char *role, char out[VYRE_MAX_NAME + 1]) {
    char what[96];
    snprintf(what, sizeof what, "%s name", role);
    if (P->t.kind != VYRE_TK_ATOM || !vyre_lex_is_ident(P->t.s, P->t.n))
        return expected(P, what, "names are [A-Za-z_][A-Za-z0-9_]*, e.g. x, out_1");
    if (!atom_copy(&P->t, out, VYRE_MAX_NAME + 1))
        return fail_at(P, &P->t, "%s is longer than %d characters. Fix: use a shorter name", what,
                       VYRE_MAX_NAME);
    next(P);
    return true;
}

PARSE_LEAF static bool take_type(struct parser *P, enum vyre_type *t) {
    char word[8];
    if (!atom_copy(&P->t, word, sizeof word) || !vyre_type_from_name(word, t)) {
        char what[64];
        snprintf(what, sizeof what, "a type name (%s)", TYPE_LIST);
        return expected(P, what, "write one of the seven type names");
    }
    next(P);
    return true;
}

/* A plain decimal u32 (workgroup sizes, element counts). */
static bool take_u32(struct parser *P, const char *role, uint32_t *out) {
    uint64_t v = 0;
    bool ok = P->t.kind == VYRE_TK_ATOM && P->t.n <= 10;
    for (size_t i = 0; ok && i < P->t.n; i++) {
        char c = P->t.s[i];
        if (c < '0' || c > '9') ok = false;
        else v = v * 10 + (uint64_t)(c - '0');
    }
    if (!ok || v > UINT32_MAX) {
        char what[96];
        snprintf(what, sizeof what, "%s as a plain decimal integer", role);
        return expected(P, what, "write a number from 0 to 4294967295 without a suffix, e.g. 256");
    }
    *out = (uint32_t)v;
    next(P);
    return true;
}

/* ---- expressions ---------------------------------------------------------------- */

static struct vyre_expr *parse_expr(struct parser *P);

/* The validator's node limit, enforced while parsing: a text far past it (millions of
 * statements) stops here instead of costing memory and time for a tree that
 * vyre_validate would refuse anyway. Node ids count every expression and statement
 * built, the same nodes the validator counts. */
PARSE_COLD static bool too_many_nodes(struct parser *P) {
    return fail_at(P, &P->t,
                   "the program has more than %u nodes (statements plus expressions), the "
                   "validator's limit. Fix: split the work into several smaller programs",
                   VYRE_MAX_NODES);
}

static struct vyre_expr *built(struct parser *P, struct vyre_expr *e) {
    if (!e) {
        oom(P);
    } else if (P->p->next_id > VYRE_MAX_NODES) {
        too_many_nodes(P);
        return NULL;
    }
    return e;
}

PARSE_COLD static struct vyre_expr *bad_literal(struct parser *P, const struct vyre_tok *t) {
    enum vyre_type ty;
    vyre_bits bits;
    char msg[512], found[128];
    (void)vyre_lex_literal(t->s, t->n, &ty, &bits, msg, sizeof msg);
    vyre_tok_describe(t, found, sizeof found);
    fail_at(P, t, "bad literal %s: %s", found, msg);
    return NULL;
}

/* A name as an expression; its buffer lives only in this (leaf) frame. */
static struct vyre_expr *parse_name_expr(struct parser *P) {
    char name[VYRE_MAX_NAME + 1];
    if (!take_name(P, "a variable", name)) return NULL;
    return built(P, vyre_ir_name(P->p, name));
}

PARSE_LEAF static struct vyre_expr *parse_atom_expr(struct parser *P) {
    const struct vyre_tok t = P->t;
    if (vyre_lex_looks_literal(t.s, t.n)) {
        enum vyre_type ty;
        vyre_bits bits;
        if (!vyre_lex_literal(t.s, t.n, &ty, &bits, NULL, 0)) return bad_literal(P, &t);
        next(P);
        return built(P, vyre_ir_lit(P->p, ty, bits));
    }
    if (!vyre_lex_is_ident(t.s, t.n)) {
        expected(P, "an expression",
                 "write a literal (5u32, 1.5f32, true), a name, or a form "
                 "such as (add a b)");
        return NULL;
    }
    return parse_name_expr(P);
}

static bool take_axis(struct parser *P, unsigned *axis) {
    if (vyre_tok_is(&P->t, "x")) *axis = 0;
    else if (vyre_tok_is(&P->t, "y")) *axis = 1;
    else if (vyre_tok_is(&P->t, "z")) *axis = 2;
    else return expected(P, "an axis (x y z)", "write e.g. (gid x)");
    next(P);
    return true;
}

/* Parses n operand expressions into a[]. */
static bool parse_operands(struct parser *P, struct vyre_expr **a, int n) {
    for (int i = 0; i < n; i++)
        if (!(a[i] = parse_expr(P))) return false;
    return true;
}

/* What the head of an expression form names (classify_form). */
enum form_class {
    FC_BAD,
    FC_BUILTIN,
    FC_LOAD,
    FC_LEN,
    FC_CAST,
    FC_BITCAST,
    FC_SELECT,
    FC_FMA,
    FC_SUBGROUP,
    FC_OP
};

PARSE_COLD static struct vyre_expr *unknown_form(struct parser *P, const struct vyre_tok *at);

/* At the head of an expression form: consumes it and returns its class | (its
 * builtin, subgroup or op number << 8); FC_BAD after reporting an unknown head. */
PARSE_LEAF static unsigned classify_form(struct parser *P) {
    const struct vyre_tok head = P->t;
    char word[16];
    if (head.kind != VYRE_TK_ATOM) {
        expected(P, "an operator name after '('", "write a form such as (add a b) or (load buf i)");
        return FC_BAD;
    }
    unsigned c = FC_BAD;
    enum vyre_op op;
    enum vyre_subgroup sg;
    if (atom_copy(&head, word, sizeof word)) {
        for (int b = 0; c == FC_BAD && b < VYRE_BUILTIN_COUNT; b++)
            if (strcmp(word, vyre_builtin_name((enum vyre_builtin)b)) == 0)
                c = FC_BUILTIN | (unsigned)b << 8;
        if (c != FC_BAD) {
            /* a builtin */
        } else if (strcmp(word, "load") == 0) c = FC_LOAD;
        else if (strcmp(word, "len") == 0) c = FC_LEN;
        else if (strcmp(word, "cast") == 0) c = FC_CAST;
        else if (strcmp(word, "bitcast") == 0) c = FC_BITCAST;
        else if (strcmp(word, "select") == 0) c = FC_SELECT;
        else if (strcmp(word, "fma") == 0) c = FC_FMA;
        else if (vyre_subgroup_from_name(word, &sg)) c = FC_SUBGROUP | (unsigned)sg << 8;
        else if (vyre_op_from_name(word, &op)) c = FC_OP | (unsigned)op << 8;
    }
    if (c == FC_BAD) unknown_form(P, &head);
    else next(P);
    return c;
}

/* After the head of a subgroup form: [OP] operands ')'. OP (reduce and scan only) is
 * one of the combining ops; anything else is a syntax error, as for atomics. */
PARSE_LEAF static bool take_combiner(struct parser *P, enum vyre_op *op) {
    char word[16];
    if (!atom_copy(&P->t, word, sizeof word) || !vyre_op_from_name(word, op) ||
        !vyre_subgroup_is_combiner(*op))
        return expected(P, "a combining op (add min max and or xor)",
                        "write e.g. (subgroup_reduce add v) or (subgroup_scan max v)");
    next(P);
    return true;
}

static const char *const sg_shapes[VYRE_SG_COUNT] = {
    [VYRE_SG_SIZE] = "(subgroup_size)",
    [VYRE_SG_LANE] = "(subgroup_lane)",
    [VYRE_SG_BALLOT] = "(ballot COND)",
    [VYRE_SG_ALL] = "(subgroup_all COND)",
    [VYRE_SG_ANY] = "(subgroup_any COND)",
    [VYRE_SG_SHUFFLE] = "(shuffle VALUE LANE)",
    [VYRE_SG_SHUFFLE_XOR] = "(shuffle_xor VALUE MASK)",
    [VYRE_SG_SHUFFLE_UP] = "(shuffle_up VALUE DELTA)",
    [VYRE_SG_SHUFFLE_DOWN] = "(shuffle_down VALUE DELTA)",
    [VYRE_SG_REDUCE] = "(subgroup_reduce OP VALUE)",
    [VYRE_SG_SCAN] = "(subgroup_scan OP VALUE)",
    [VYRE_SG_MATCH_ANY] = "(match_any VALUE)",
};

static struct vyre_expr *parse_subgroup(struct parser *P, enum vyre_subgroup k) {
    struct vyre_expr *a[2] = {NULL, NULL};
    enum vyre_op op = VYRE_OP_COUNT;
    if ((k == VYRE_SG_REDUCE || k == VYRE_SG_SCAN) && !take_combiner(P, &op)) return NULL;
    if (!parse_operands(P, a, (int)vyre_subgroup_arity(k))) return NULL;
    struct vyre_expr *e = built(P, vyre_ir_subgroup(P->p, k, op, a[0], a[1]));
    return e && close_form(P, sg_shapes[k]) ? e : NULL;
}

/* After "(gid" etc.: AXIS ')'. A leaf: nothing nests inside. */
PARSE_LEAF static struct vyre_expr *parse_builtin(struct parser *P, enum vyre_builtin b) {
    unsigned axis = 0;
    if (!take_axis(P, &axis)) return NULL;
    struct vyre_expr *e = built(P, vyre_ir_builtin(P->p, b, axis));
    return e && close_form_of(P, "(%s AXIS)", vyre_builtin_name(b)) ? e : NULL;
}

/* Builds (load NAME INDEX) or (len NAME) once the index is parsed; the name is read
 * again from its token, so no name buffer waits in a recursive frame. */
PARSE_LEAF static struct vyre_expr *build_load_len(struct parser *P, const struct vyre_tok *name,
                                                   struct vyre_expr *index) {
    char buf[VYRE_MAX_NAME + 1];
    (void)atom_copy(name, buf, sizeof buf); /* checked by take_name already */
    return built(P, index ? vyre_ir_load(P->p, buf, index) : vyre_ir_len(P->p, buf));
}

/* The current atom is a name of a buffer (checked and consumed; its token kept). */
PARSE_LEAF static bool take_name_tok(struct parser *P, const char *role, struct vyre_tok *tok) {
    char name[VYRE_MAX_NAME + 1];
    *tok = P->t;
    return take_name(P, role, name);
}

/* After "(load" or "(len": the buffer name, the index for load, ')'. */
static struct vyre_expr *parse_load_len(struct parser *P, bool load) {
    struct vyre_tok name;
    struct vyre_expr *index = NULL;
    if (!take_name_tok(P, "a buffer", &name)) return NULL;
    if (load && !(index = parse_expr(P))) return NULL;
    struct vyre_expr *e = build_load_len(P, &name, index);
    return e && close_form(P, load ? "(load BUF INDEX)" : "(len BUF)") ? e : NULL;
}

static struct vyre_expr *parse_cast(struct parser *P, bool cast) {
    enum vyre_type to;
    struct vyre_expr *a[1] = {NULL};
    if (!take_type(P, &to) || !parse_operands(P, a, 1)) return NULL;
    struct vyre_expr *e =
        built(P, cast ? vyre_ir_cast(P->p, to, a[0]) : vyre_ir_bitcast(P->p, to, a[0]));
    return e && close_form(P, cast ? "(cast TYPE VALUE)" : "(bitcast TYPE VALUE)") ? e : NULL;
}

static struct vyre_expr *parse_three(struct parser *P, bool sel) {
    struct vyre_expr *a[3] = {NULL, NULL, NULL};
    if (!parse_operands(P, a, 3)) return NULL;
    struct vyre_expr *e = built(P, sel ? vyre_ir_select(P->p, a[0], a[1], a[2])
                                       : vyre_ir_fma(P->p, a[0], a[1], a[2]));
    return e && close_form(P, sel ? "(select COND A B)" : "(fma A B C)") ? e : NULL;
}

static struct vyre_expr *parse_op(struct parser *P, enum vyre_op op) {
    struct vyre_expr *a[2] = {NULL, NULL};
    bool unary = vyre_op_is_unary(op);
    if (!parse_operands(P, a, unary ? 1 : 2)) return NULL;
    struct vyre_expr *e =
        built(P, unary ? vyre_ir_unary(P->p, op, a[0]) : vyre_ir_binary(P->p, op, a[0], a[1]));
    return e && close_form_of(P, unary ? "(%s A)" : "(%s A B)", vyre_op_name(op)) ? e : NULL;
}

/* Kept out of line so that each form's frame is paid only by that form's recursion. */
static struct vyre_expr *parse_form_expr(struct parser *P) {
    if (!enter_list(P)) return NULL;
    unsigned c = classify_form(P);
    unsigned sub = c >> 8;
    switch ((enum form_class)(c & 0xffu)) {
    case FC_BUILTIN: return parse_builtin(P, (enum vyre_builtin)sub);
    case FC_LOAD: return parse_load_len(P, true);
    case FC_LEN: return parse_load_len(P, false);
    case FC_CAST: return parse_cast(P, true);
    case FC_BITCAST: return parse_cast(P, false);
    case FC_SELECT: return parse_three(P, true);
    case FC_FMA: return parse_three(P, false);
    case FC_SUBGROUP: return parse_subgroup(P, (enum vyre_subgroup)sub);
    case FC_OP: return parse_op(P, (enum vyre_op)sub);
    case FC_BAD: break;
    }
    return NULL;
}

PARSE_COLD static struct vyre_expr *unknown_form(struct parser *P, const struct vyre_tok *at) {
    const struct vyre_tok head = *at;
    char found[128];
    vyre_tok_describe(&head, found, sizeof found);
    if (vyre_tok_is(&head, "atomic"))
        fail_at(P, &head,
                "an atomic is a statement, not an expression. Fix: bind its old value "
                "with (let NAME (atomic OP BUF INDEX VALUE)) and use NAME");
    else if (is_stmt_head(&head))
        fail_at(P, &head,
                "expected an expression, found the statement %s. Fix: statements go "
                "in a program body or a then/else/for block",
                found);
    else
        fail_at(P, &head,
                "unknown expression form %s. Fix: use gid lid wgid wgsize ngroups "
                "load len select cast bitcast fma, a subgroup op (subgroup_size "
                "subgroup_lane ballot subgroup_all subgroup_any shuffle shuffle_xor "
                "shuffle_up shuffle_down subgroup_reduce subgroup_scan match_any) or an operator "
                "(add sub mul div rem and or "
                "xor shl shr eq ne lt le gt ge min max land lor mulhi neg not lnot abs sqrt "
                "rsqrt floor ceil round trunc exp exp2 log log2 sin cos tanh popcount clz ctz "
                "brev)",
                found);
    return NULL;
}

static struct vyre_expr *parse_expr(struct parser *P) {
    if (P->t.kind == VYRE_TK_ATOM) return parse_atom_expr(P);
    if (P->t.kind == VYRE_TK_LP) return parse_form_expr(P);
    expected(P, "an expression", "write a literal, a name or a form such as (add a b)");
    return NULL;
}

/* ---- statements ----------------------------------------------------------------- */

static bool parse_stmt(struct parser *P, struct vyre_block *into);

static bool push(struct parser *P, struct vyre_block *into, struct vyre_stmt *s) {
    if (!s || !vyre_ir_push(P->p, into, s)) return oom(P);
    if (P->p->next_id > VYRE_MAX_NODES) return too_many_nodes(P);
    return true;
}

/* Statements up to (not including) the closing ')'. */
static bool parse_items(struct parser *P, struct vyre_block *into) {
    while (P->t.kind == VYRE_TK_LP)
        if (!parse_stmt(P, into)) return false;
    if (P->t.kind != VYRE_TK_RP)
        return expected(P, "a statement or ')'", "statements are forms such as (store buf i v)");
    return true;
}

/* After "(atomic": OP BUF INDEX [EXPECTED] VALUE ). */
PARSE_LEAF static bool parse_atomic_rest(struct parser *P, const char *result,
                                         struct vyre_block *into) {
    char word[16], buf[VYRE_MAX_NAME + 1];
    enum vyre_atomic_op op;
    struct vyre_expr *a[3] = {NULL, NULL, NULL};
    if (!atom_copy(&P->t, word, sizeof word) || !vyre_atomic_from_name(word, &op))
        return expected(P, "an atomic operation (add sub min max and or xor exchange cas)",
                        "write e.g. (atomic add counts i 1u32)");
    next(P);
    if (!take_name(P, "a buffer", buf)) return false;
    bool cas = op == VYRE_ATOMIC_CAS;
    if (!parse_operands(P, a, cas ? 3 : 2)) return false;
    struct vyre_stmt *s = cas ? vyre_ir_atomic(P->p, result, op, buf, a[0], a[1], a[2])
                              : vyre_ir_atomic(P->p, result, op, buf, a[0], NULL, a[1]);
    if (!push(P, into, s)) return false;
    return close_form(P, cas ? "(atomic cas BUF INDEX EXPECTED DESIRED)"
                             : "(atomic OP BUF INDEX VALUE)");
}

/* `(then ...)` or `(else ...)` into b. */
static bool parse_branch(struct parser *P, const char *word, struct vyre_block *b) {
    if (!enter_list(P)) return false;
    next(P); /* the head, already checked by the caller */
    return parse_items(P, b) &&
           close_form(P, strcmp(word, "then") == 0 ? "(then STMT...)" : "(else STMT...)");
}

/* Whether the current token opens a form whose head is `word`. */
PARSE_LEAF static bool at_form(const struct parser *P, const char *word) {
    struct vyre_tok head;
    return P->t.kind == VYRE_TK_LP && peek_head(P, &head) && vyre_tok_is(&head, word);
}

static bool parse_if(struct parser *P, struct vyre_block *into) {
    struct vyre_expr *cond = parse_expr(P);
    if (!cond) return false;
    struct vyre_stmt *s = vyre_ir_if(P->p, cond);
    if (!push(P, into, s)) return false;
    if (!at_form(P, "then"))
        return expected(P, "(then ...)",
                        "write (if COND (then STMT...) (else STMT...)); "
                        "(then) may be empty");
    if (!parse_branch(P, "then", &s->then_)) return false;
    if (at_form(P, "else") && !parse_branch(P, "else", &s->else_)) return false;
    return close_form(P, "(if COND (then STMT...) (else STMT...))");
}

/* After "(for": VAR FROM TO [STEP]; pushes the loop (its body still empty) into
 * `into`. Out of line, so the name buffer is not held while the body is parsed. */
PARSE_LEAF static struct vyre_stmt *parse_for_head(struct parser *P, struct vyre_block *into) {
    char var[VYRE_MAX_NAME + 1];
    struct vyre_expr *from, *to, *step = NULL;
    struct vyre_tok head;
    if (!take_name(P, "a loop variable", var)) return NULL;
    if (!(from = parse_expr(P)) || !(to = parse_expr(P))) return NULL;
    /* STEP may be left out when the next element is already a statement */
    bool has_step = P->t.kind == VYRE_TK_ATOM ||
                    (P->t.kind == VYRE_TK_LP && !(peek_head(P, &head) && is_stmt_head(&head)));
    if (has_step) {
        if (!(step = parse_expr(P))) return NULL;
    } else if (from->kind != VYRE_EX_LIT) {
        fail_at(P, &P->t,
                "a for loop without STEP needs a literal FROM (the step is 1 of "
                "its type). Fix: write the step, e.g. (for i n m 1u32 ...)");
        return NULL;
    }
    struct vyre_stmt *s = vyre_ir_for(P->p, var, from, to, step);
    return push(P, into, s) ? s : NULL;
}

static bool parse_for(struct parser *P, struct vyre_block *into) {
    struct vyre_stmt *s = parse_for_head(P, into);
    return s && parse_items(P, &s->then_) && close_form(P, "(for VAR FROM TO STEP STMT...)");
}

/* After "(converge": FLAG MAX; pushes the statement (its body still empty). */
PARSE_LEAF static struct vyre_stmt *parse_converge_head(struct parser *P, struct vyre_block *into) {
    char flag[VYRE_MAX_NAME + 1];
    struct vyre_expr *max;
    if (!take_name(P, "a flag buffer", flag) || !(max = parse_expr(P))) return NULL;
    struct vyre_stmt *s = vyre_ir_converge(P->p, flag, max);
    return push(P, into, s) ? s : NULL;
}

/* After "(converge": FLAG MAX STMT... ). */
static bool parse_converge(struct parser *P, struct vyre_block *into) {
    struct vyre_stmt *s = parse_converge_head(P, into);
    return s && parse_items(P, &s->then_) && close_form(P, "(converge FLAG MAX STMT...)");
}

/* After "(let", "(set", "(store" or "(push" (kind 0, 1, 2, 3): the rest of the
 * statement. A leaf of the statement recursion (only expressions nest inside). */
PARSE_LEAF static bool parse_assign(struct parser *P, int kind, struct vyre_block *into) {
    vyre_program *p = P->p;
    char name[VYRE_MAX_NAME + 1];
    struct vyre_expr *a[2] = {NULL, NULL};
    if (kind == 0) {
        if (!take_name(P, "a variable", name)) return false;
        struct vyre_tok h2;
        if (P->t.kind == VYRE_TK_LP && peek_head(P, &h2) && vyre_tok_is(&h2, "atomic")) {
            if (!enter_list(P)) return false;
            next(P);
            if (!parse_atomic_rest(P, name, into)) return false;
        } else {
            if (!parse_operands(P, a, 1) || !push(P, into, vyre_ir_let(p, name, a[0])))
                return false;
        }
        return close_form(P, "(let NAME VALUE)");
    }
    if (kind == 1) {
        if (!take_name(P, "a variable", name) || !parse_operands(P, a, 1) ||
            !push(P, into, vyre_ir_set(p, name, a[0])))
            return false;
        return close_form(P, "(set NAME VALUE)");
    }
    if (kind == 3) {
        if (!take_name(P, "a worklist", name) || !parse_operands(P, a, 1) ||
            !push(P, into, vyre_ir_push_item(p, name, a[0])))
            return false;
        return close_form(P, "(push WORKLIST VALUE)");
    }
    if (!take_name(P, "a buffer", name) || !parse_operands(P, a, 2) ||
        !push(P, into, vyre_ir_store(p, name, a[0], a[1])))
        return false;
    return close_form(P, "(store BUF INDEX VALUE)");
}

static const struct {
    const char *word;
    enum vyre_stmt_kind kind;
} simple_stmts[] = {{"break", VYRE_ST_BREAK},
                    {"return", VYRE_ST_RETURN},
                    {"barrier", VYRE_ST_BARRIER},
                    {"grid_barrier", VYRE_ST_GRID_BARRIER}};

/* (break) (return) (barrier) (grid_barrier): entry i of simple_stmts. */
PARSE_LEAF static bool parse_simple(struct parser *P, size_t i, struct vyre_block *into) {
    if (!push(P, into, vyre_ir_simple(P->p, simple_stmts[i].kind))) return false;
    char shape[24];
    snprintf(shape, sizeof shape, "(%s)", simple_stmts[i].word);
    return close_form(P, shape);
}

PARSE_COLD static bool unknown_stmt(struct parser *P, const struct vyre_tok *at);

/* Statement classes of classify_stmt; SC_SIMPLE + i is simple_stmts[i]. */
enum {
    SC_BAD,
    SC_LET,
    SC_SET,
    SC_STORE,
    SC_IF,
    SC_FOR,
    SC_ATOMIC,
    SC_CONVERGE,
    SC_PUSH,
    SC_SIMPLE
};

/* At a statement's head: consumes it and returns its class (SC_BAD after reporting). */
PARSE_LEAF static size_t classify_stmt(struct parser *P) {
    const struct vyre_tok head = P->t;
    static const char *const words[] = {"let", "set",    "store",    "if",
                                        "for", "atomic", "converge", "push"};
    if (head.kind != VYRE_TK_ATOM) {
        expected(P, "a statement name after '('", "write e.g. (store buf i v)");
        return SC_BAD;
    }
    next(P);
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (vyre_tok_is(&head, words[i])) return SC_LET + i;
    for (size_t i = 0; i < sizeof simple_stmts / sizeof simple_stmts[0]; i++)
        if (vyre_tok_is(&head, simple_stmts[i].word)) return SC_SIMPLE + i;
    unknown_stmt(P, &head);
    return SC_BAD;
}

static bool parse_stmt(struct parser *P, struct vyre_block *into) {
    if (!enter_list(P)) return false;
    size_t c = classify_stmt(P);
    switch (c) {
    case SC_BAD: return false;
    case SC_LET: return parse_assign(P, 0, into);
    case SC_SET: return parse_assign(P, 1, into);
    case SC_STORE: return parse_assign(P, 2, into);
    case SC_IF: return parse_if(P, into);
    case SC_FOR: return parse_for(P, into);
    case SC_ATOMIC: return parse_atomic_rest(P, NULL, into);
    case SC_CONVERGE: return parse_converge(P, into);
    case SC_PUSH: return parse_assign(P, 3, into);
    default: return parse_simple(P, c - SC_SIMPLE, into);
    }
}

PARSE_COLD static bool unknown_stmt(struct parser *P, const struct vyre_tok *at) {
    const struct vyre_tok head = *at;
    char found[128];
    vyre_tok_describe(&head, found, sizeof found);
    if (vyre_tok_is(&head, "then") || vyre_tok_is(&head, "else"))
        return fail_at(P, &head,
                       "%s is only allowed inside (if COND ...), right after the "
                       "condition. Fix: write (if COND (then ...) (else ...))",
                       found);
    if (vyre_tok_is(&head, "buffer") || vyre_tok_is(&head, "shared") ||
        vyre_tok_is(&head, "param") || vyre_tok_is(&head, "worklist"))
        return fail_at(
            P, &head,
            "declaration %s after a statement or inside a block. Fix: put "
            "all buffer/shared/param/worklist declarations at the top of the program, before "
            "the first statement",
            found);
    return fail_at(P, &head,
                   "expected a statement, found %s. Fix: use let set store if for "
                   "break return barrier atomic grid_barrier converge push (an expression must "
                   "be bound with let)",
                   found);
}

/* ---- program -------------------------------------------------------------------- */

static bool parse_decl(struct parser *P, const struct vyre_tok *head) {
    vyre_program *p = P->p;
    char name[VYRE_MAX_NAME + 1];
    enum vyre_type t;
    uint32_t count = 0;
    if (!enter_list(P)) return false;
    next(P);
    if (vyre_tok_is(head, "param")) {
        if (!take_name(P, "a param", name) || !take_type(P, &t)) return false;
        if (!vyre_ir_param(p, name, t)) return oom(P);
        return close_form(P, "(param NAME TYPE)");
    }
    if (vyre_tok_is(head, "worklist")) {
        if (!take_name(P, "a worklist", name) || !take_type(P, &t)) return false;
        if (!vyre_ir_worklist(p, name, t)) return oom(P);
        return close_form(P, "(worklist NAME TYPE)");
    }
    if (vyre_tok_is(head, "shared")) {
        if (!take_name(P, "a shared array", name) || !take_type(P, &t) ||
            !take_u32(P, "an element count", &count))
            return false;
        if (!vyre_ir_shared(p, name, t, count)) return oom(P);
        return close_form(P, "(shared NAME TYPE COUNT)");
    }
    enum vyre_access acc = VYRE_ACCESS_READ;
    if (!take_name(P, "a buffer", name) || !take_type(P, &t)) return false;
    bool found = false;
    for (int i = VYRE_ACCESS_READ; i <= VYRE_ACCESS_READ_WRITE && !found; i++) {
        if (vyre_tok_is(&P->t, vyre_access_name((enum vyre_access)i))) {
            acc = (enum vyre_access)i;
            found = true;
        }
    }
    if (!found)
        return expected(P, "an access mode (read write read_write)",
                        "write e.g. (buffer y f32 "
                        "read_write)");
    next(P);
    if (P->t.kind != VYRE_TK_RP && !take_u32(P, "an element count", &count)) return false;
    if (!vyre_ir_buffer(p, name, t, acc, count)) return oom(P);
    return close_form(P, "(buffer NAME TYPE ACCESS [COUNT])");
}

static bool parse_program(struct parser *P) {
    char name[VYRE_MAX_NAME + 1];
    uint32_t wg[3] = {1, 1, 1};
    struct vyre_tok head;
    const char *form = "(program NAME (workgroup X [Y [Z]]) DECL... STMT...)";
    next(P);
    if (P->t.kind == VYRE_TK_EOF)
        return fail_at(P, &P->t, "empty input: no program. Fix: write %s", form);
    if (P->t.kind != VYRE_TK_LP || !peek_head(P, &head) || !vyre_tok_is(&head, "program"))
        return expected(P, "(program ...)",
                        "a text holds exactly one "
                        "(program NAME (workgroup X [Y [Z]]) DECL... STMT...)");
    if (!enter_list(P)) return false;
    next(P);
    if (!take_name(P, "a program", name)) return false;
    if (P->t.kind != VYRE_TK_LP || !peek_head(P, &head) || !vyre_tok_is(&head, "workgroup"))
        return expected(P, "(workgroup X [Y [Z]])",
                        "write the workgroup size after the name, "
                        "e.g. (program saxpy (workgroup 256) ...)");
    if (!enter_list(P)) return false;
    next(P);
    for (int i = 0; i < 3 && (i == 0 || P->t.kind != VYRE_TK_RP); i++)
        if (!take_u32(P, "a workgroup size", &wg[i])) return false;
    if (!close_form(P, "(workgroup X [Y [Z]])")) return false;
    if (!(P->p = vyre_program_new(name, wg[0], wg[1], wg[2]))) return oom(P);
    bool in_body = false;
    while (P->t.kind == VYRE_TK_LP) {
        bool decl =
            peek_head(P, &head) && (vyre_tok_is(&head, "buffer") || vyre_tok_is(&head, "shared") ||
                                    vyre_tok_is(&head, "param") || vyre_tok_is(&head, "worklist"));
        if (decl && !in_body) {
            if (!parse_decl(P, &head)) return false;
        } else {
            in_body = true;
            if (!parse_stmt(P, &P->p->body)) return false;
        }
    }
    if (P->t.kind != VYRE_TK_RP)
        return expected(P, "a declaration, a statement or ')'",
                        "every item of a program is a "
                        "parenthesised form such as (param a f32) or (store y i v)");
    if (!close_form(P, form)) return false;
    if (P->t.kind != VYRE_TK_EOF)
        return expected(P, "end of input after the program",
                        "a text holds exactly one program; "
                        "remove what follows its closing ')'");
    if (P->p->oom) return oom(P);
    return true;
}

enum vyre_status vyre_text_parse(const char *text, size_t len, vyre_program **out,
                                 struct vyre_error *err) {
    struct parser P;
    if (err) vyre_error_clear(err);
    if (out) *out = NULL;
    if (!out || (!text && len > 0))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_text_parse: %s is NULL. Fix: pass the text "
                              "and a place for the program",
                              out ? "text" : "out");
    memset(&P, 0, sizeof P);
    P.err = err;
    vyre_lex_init(&P.lx, text ? text : "", len);
    if (!parse_program(&P)) {
        vyre_program_free(P.p);
        if (P.st == VYRE_OK) /* every failing path reports; this is a safety net */
            fail_at(&P, &P.t,
                    "malformed program. Fix: compare with the format in ARCHITECTURE.md §4");
        return P.st;
    }
    *out = P.p;
    return VYRE_OK;
}
