/* ir.c — the program IR: arena, name tables for types and ops (the op facts are
 * generated from the table in ops.h, with the public operator-table and reserved-name
 * accessors of vyre.h), the builder used by the parser, the generator and tests, and
 * structural equality. Builders never
 * check names or types: a program may be built invalid and the validator says why. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ---- arena ----------------------------------------------------------------- */

struct vyre_chunk {
    struct vyre_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

struct vyre_arena {
    struct vyre_chunk *head;
};

#define VYRE_CHUNK_DEFAULT 16384u

void *vyre_arena_alloc(struct vyre_program *p, size_t size) {
    struct vyre_arena *a = p->arena;
    size = (size + 15u) & ~(size_t)15u;
    if (!a->head || a->head->size - a->head->used < size) {
        size_t cap = size > VYRE_CHUNK_DEFAULT ? size : VYRE_CHUNK_DEFAULT;
        struct vyre_chunk *c = malloc(sizeof *c + cap);
        if (!c) {
            p->oom = true;
            return NULL;
        }
        c->next = a->head;
        c->used = 0;
        c->size = cap;
        a->head = c;
    }
    void *ptr = a->head->data + a->head->used;
    a->head->used += size;
    memset(ptr, 0, size);
    return ptr;
}

char *vyre_arena_strdup(struct vyre_program *p, const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = vyre_arena_alloc(p, n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- types ------------------------------------------------------------------- */

static const char *const type_names[VYRE_TYPE_COUNT] = {"bool", "i32", "u32", "i64",
                                                        "u64",  "f32", "f64"};

const char *vyre_type_name(enum vyre_type t) {
    return (unsigned)t < VYRE_TYPE_COUNT ? type_names[t] : "void";
}

bool vyre_type_from_name(const char *name, enum vyre_type *out) {
    if (!name || !out) return false;
    for (unsigned i = 0; i < VYRE_TYPE_COUNT; i++) {
        if (strcmp(name, type_names[i]) == 0) {
            *out = (enum vyre_type)i;
            return true;
        }
    }
    return false;
}

size_t vyre_type_size(enum vyre_type t) { return vyre_type_bits(t) / 8u; }

bool vyre_type_is_int(enum vyre_type t) {
    return t == VYRE_I32 || t == VYRE_U32 || t == VYRE_I64 || t == VYRE_U64;
}

bool vyre_type_is_signed(enum vyre_type t) { return t == VYRE_I32 || t == VYRE_I64; }

bool vyre_type_is_float(enum vyre_type t) { return t == VYRE_F32 || t == VYRE_F64; }

unsigned vyre_type_bits(enum vyre_type t) {
    return (t == VYRE_I64 || t == VYRE_U64 || t == VYRE_F64) ? 64u : 32u;
}

/* ---- name tables --------------------------------------------------------------- */

/* Everything below about ops is generated from the table in ops.h. */

struct op_row {
    const char *name;
    unsigned char arity;
    unsigned char operands; /* enum vyre_op_class */
    unsigned char result;   /* enum vyre_op_result */
    bool approx;
    const char *method, *metamethods;
};

static const struct op_row op_rows[VYRE_OP_COUNT] = {
#define OP_ROW_(ID, NAME, ARITY, CLASS, RESULT, APPROX, METHOD, MM) \
    [VYRE_OP_##ID] = {NAME, ARITY, VYRE_OPC_##CLASS, VYRE_OPR_##RESULT, APPROX, METHOD, MM},
    VYRE_OPS(OP_ROW_)
#undef OP_ROW_
};

/* VYRE_OP_FIRST_UNARY splits the enum, so a binary row after a unary one would make
 * ops change arity silently: refuse to compile instead. (VYRE_OP_FIRST_UNARY itself
 * expands VYRE_OPS, which cannot expand again inside a VYRE_OPS row: hence OP_NBIN.) */
enum { OP_NBIN = VYRE_OP_FIRST_UNARY };
#define OP_ORDER_(ID, NAME, ARITY, CLASS, RESULT, APPROX, METHOD, MM)              \
    _Static_assert((ARITY) == 1 || (ARITY) == 2, "ops.h: arity is 1 or 2: " NAME); \
    _Static_assert(((ARITY) == 2) == ((int)VYRE_OP_##ID < (int)OP_NBIN),           \
                   "ops.h: every binary row comes before every unary row: " NAME);
VYRE_OPS(OP_ORDER_)
#undef OP_ORDER_

static const char *const class_names[VYRE_OPC_COUNT] = {
#define CLASS_NAME_(C) [VYRE_OPC_##C] = #C,
    VYRE_OP_CLASSES(CLASS_NAME_)
#undef CLASS_NAME_
};

static const char *const result_names[VYRE_OPR_COUNT] = {
#define RESULT_NAME_(R) [VYRE_OPR_##R] = #R,
    VYRE_OP_RESULTS(RESULT_NAME_)
#undef RESULT_NAME_
};

static bool op_valid(enum vyre_op op) { return (unsigned)op < VYRE_OP_COUNT; }

const char *vyre_op_name(enum vyre_op op) { return op_valid(op) ? op_rows[op].name : "?"; }

bool vyre_op_from_name(const char *name, enum vyre_op *out) {
    for (unsigned i = 0; i < VYRE_OP_COUNT; i++) {
        if (strcmp(name, op_rows[i].name) == 0) {
            *out = (enum vyre_op)i;
            return true;
        }
    }
    return false;
}

unsigned vyre_op_arity(enum vyre_op op) { return op_valid(op) ? op_rows[op].arity : 0u; }

enum vyre_op_class vyre_op_operands(enum vyre_op op) {
    return op_valid(op) ? (enum vyre_op_class)op_rows[op].operands : VYRE_OPC_COUNT;
}

enum vyre_op_result vyre_op_result(enum vyre_op op) {
    return op_valid(op) ? (enum vyre_op_result)op_rows[op].result : VYRE_OPR_COUNT;
}

const char *vyre_op_class_str(enum vyre_op_class c) {
    return (unsigned)c < VYRE_OPC_COUNT ? class_names[c] : "?";
}

const char *vyre_op_result_str(enum vyre_op_result r) {
    return (unsigned)r < VYRE_OPR_COUNT ? result_names[r] : "?";
}

bool vyre_op_class_has(enum vyre_op_class c, enum vyre_type t) {
    if ((unsigned)t >= VYRE_TYPE_COUNT) return false;
    bool in = vyre_type_is_int(t), fl = vyre_type_is_float(t);
    switch (c) {
    case VYRE_OPC_NUMERIC: return in || fl;
    case VYRE_OPC_INT: return in;
    case VYRE_OPC_INT_OR_BOOL: return in || t == VYRE_BOOL;
    case VYRE_OPC_FLOAT: return fl;
    case VYRE_OPC_BOOL: return t == VYRE_BOOL;
    case VYRE_OPC_ANY: return true;
    case VYRE_OPC_COUNT: break;
    }
    return false;
}

bool vyre_op_admits(enum vyre_op op, enum vyre_type t) {
    return op_valid(op) && vyre_op_class_has(vyre_op_operands(op), t);
}

enum vyre_type vyre_op_result_type(enum vyre_op op, enum vyre_type t) {
    if (!vyre_op_admits(op, t)) return VYRE_VOID;
    return vyre_op_result(op) == VYRE_OPR_BOOL ? VYRE_BOOL : t;
}

bool vyre_op_is_unary(enum vyre_op op) { return vyre_op_arity(op) == 1; }

/* A comparison is a binary op with a bool result over operands that need not be
 * bool (land/lor also give bool, but they are logic, not comparison). */
bool vyre_op_is_compare(enum vyre_op op) {
    return vyre_op_arity(op) == 2 && vyre_op_result(op) == VYRE_OPR_BOOL &&
           vyre_op_operands(op) != VYRE_OPC_BOOL;
}

bool vyre_op_is_approx(enum vyre_op op) { return op_valid(op) && op_rows[op].approx; }

/* ---- public operator table (vyre.h) ---------------------------------------------- */

size_t vyre_op_count(void) { return VYRE_OP_COUNT; }

bool vyre_op_info(unsigned i, struct vyre_op_info *out) {
    if (i >= VYRE_OP_COUNT || !out) return false;
    const struct op_row *r = &op_rows[i];
    *out = (struct vyre_op_info){
        .name = r->name,
        .arity = r->arity,
        .operand_class = r->operands,
        .operands = class_names[r->operands],
        .result = result_names[r->result],
        .approximate = r->approx,
        .dsl_method = r->method,
        .dsl_metamethods = r->metamethods,
    };
    return true;
}

size_t vyre_op_class_count(void) { return VYRE_OPC_COUNT; }

const char *vyre_op_class_name(unsigned c) { return c < VYRE_OPC_COUNT ? class_names[c] : NULL; }

bool vyre_op_class_admits(unsigned c, enum vyre_type t) {
    return c < VYRE_OPC_COUNT && vyre_op_class_has((enum vyre_op_class)c, t);
}

/* Literal spellings and type names: a name spelled like one of these could not be
 * written in the text format without reading back as something else. The validator
 * rejects them, and the Lua DSL asks for this list instead of keeping its own. */
static const char *const reserved_names[] = {"true",   "false",  "inf",    "nan",  "inff32",
                                             "inff64", "nanf32", "nanf64", "bool", "i32",
                                             "u32",    "i64",    "u64",    "f32",  "f64"};
_Static_assert(sizeof reserved_names / sizeof reserved_names[0] == 8u + VYRE_TYPE_COUNT,
               "every type name is reserved");

const char *const *vyre_reserved_names(size_t *n) {
    if (n) *n = sizeof reserved_names / sizeof reserved_names[0];
    return reserved_names;
}

static const char *const atomic_names[VYRE_ATOMIC_COUNT] = {"add", "sub", "min",      "max", "and",
                                                            "or",  "xor", "exchange", "cas"};

const char *vyre_atomic_name(enum vyre_atomic_op op) {
    return (unsigned)op < VYRE_ATOMIC_COUNT ? atomic_names[op] : "?";
}

bool vyre_atomic_from_name(const char *name, enum vyre_atomic_op *out) {
    for (unsigned i = 0; i < VYRE_ATOMIC_COUNT; i++) {
        if (strcmp(name, atomic_names[i]) == 0) {
            *out = (enum vyre_atomic_op)i;
            return true;
        }
    }
    return false;
}

size_t vyre_atomic_count(void) { return VYRE_ATOMIC_COUNT; }

const char *vyre_atomic_op_name(unsigned i) {
    return i < VYRE_ATOMIC_COUNT ? atomic_names[i] : NULL;
}

static const char *const builtin_names[VYRE_BUILTIN_COUNT] = {"gid", "lid", "wgid", "wgsize",
                                                              "ngroups"};

const char *vyre_builtin_name(enum vyre_builtin b) {
    return (unsigned)b < VYRE_BUILTIN_COUNT ? builtin_names[b] : "?";
}

const char *vyre_access_name(enum vyre_access a) {
    switch (a) {
    case VYRE_ACCESS_READ: return "read";
    case VYRE_ACCESS_WRITE: return "write";
    case VYRE_ACCESS_READ_WRITE: return "read_write";
    }
    return "?";
}

/* ---- program ---------------------------------------------------------------------- */

vyre_program *vyre_program_new(const char *name, uint32_t wx, uint32_t wy, uint32_t wz) {
    vyre_program *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->arena = calloc(1, sizeof *p->arena);
    if (!p->arena) {
        free(p);
        return NULL;
    }
    p->name = vyre_arena_strdup(p, name ? name : "");
    p->workgroup[0] = wx;
    p->workgroup[1] = wy;
    p->workgroup[2] = wz;
    if (!p->name) {
        vyre_program_free(p);
        return NULL;
    }
    return p;
}

void vyre_program_free(vyre_program *p) {
    if (!p) return;
    struct vyre_chunk *c = p->arena ? p->arena->head : NULL;
    while (c) {
        struct vyre_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(p->arena);
    free(p->decls);
    free(p);
}

const char *vyre_program_name(const vyre_program *p) { return p ? p->name : NULL; }

bool vyre_program_has_grid(const vyre_program *p) { return p && p->has_grid; }

void vyre_program_workgroup(const vyre_program *p, uint32_t out[3]) {
    if (!out) return;
    if (!p) { /* no program: no workgroup (every other entry point rejects NULL too) */
        out[0] = out[1] = out[2] = 0;
        return;
    }
    memcpy(out, p->workgroup, sizeof p->workgroup);
}

static struct vyre_decl *add_decl(vyre_program *p, enum vyre_decl_kind kind, const char *name,
                                  enum vyre_type t) {
    p->validated = false;
    if (p->ndecls == p->decls_cap) {
        uint32_t cap = p->decls_cap ? p->decls_cap * 2u : 8u;
        struct vyre_decl *d = realloc(p->decls, cap * sizeof *d);
        if (!d) {
            p->oom = true;
            return NULL;
        }
        p->decls = d;
        p->decls_cap = cap;
    }
    char *copy = vyre_arena_strdup(p, name);
    if (!copy) return NULL;
    struct vyre_decl *d = &p->decls[p->ndecls++];
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->name = copy;
    d->type = t;
    switch (kind) {
    case VYRE_DECL_BUFFER: d->slot = p->nbuffers++; break;
    case VYRE_DECL_SHARED: d->slot = p->nshared++; break;
    case VYRE_DECL_PARAM: d->slot = p->nparams++; break;
    case VYRE_DECL_WORKLIST: d->slot = p->nworklists++; break;
    }
    return d;
}

struct vyre_decl *vyre_ir_buffer(vyre_program *p, const char *name, enum vyre_type t,
                                 enum vyre_access access, uint32_t count) {
    struct vyre_decl *d = add_decl(p, VYRE_DECL_BUFFER, name, t);
    if (d) {
        d->access = access;
        d->count = count;
    }
    return d;
}

struct vyre_decl *vyre_ir_shared(vyre_program *p, const char *name, enum vyre_type t,
                                 uint32_t count) {
    struct vyre_decl *d = add_decl(p, VYRE_DECL_SHARED, name, t);
    if (d) {
        d->access = VYRE_ACCESS_READ_WRITE;
        d->count = count;
    }
    return d;
}

struct vyre_decl *vyre_ir_worklist(vyre_program *p, const char *name, enum vyre_type t) {
    struct vyre_decl *d = add_decl(p, VYRE_DECL_WORKLIST, name, t);
    if (d) d->access = VYRE_ACCESS_READ_WRITE;
    return d;
}

bool vyre_ir_has_worklist(const vyre_program *p) { return p && p->nworklists > 0; }

struct vyre_decl *vyre_ir_param(vyre_program *p, const char *name, enum vyre_type t) {
    return add_decl(p, VYRE_DECL_PARAM, name, t);
}

struct vyre_decl *vyre_ir_find_decl(const vyre_program *p, const char *name) {
    if (!name) return NULL;
    for (uint32_t i = 0; i < p->ndecls; i++)
        if (strcmp(p->decls[i].name, name) == 0) return &p->decls[i];
    return NULL;
}

/* ---- expressions ------------------------------------------------------------------ */

static struct vyre_expr *new_expr(vyre_program *p, enum vyre_expr_kind kind) {
    p->validated = false;
    struct vyre_expr *e = vyre_arena_alloc(p, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->type = VYRE_VOID;
    e->id = p->next_id++;
    return e;
}

struct vyre_expr *vyre_ir_lit(vyre_program *p, enum vyre_type t, vyre_bits bits) {
    struct vyre_expr *e = new_expr(p, VYRE_EX_LIT);
    if (!e) return NULL;
    e->type = t;
    if (t == VYRE_BOOL) bits = bits != 0;
    else if (vyre_type_bits(t) == 32) bits &= 0xFFFFFFFFu;
    e->u.lit.bits = bits;
    return e;
}

struct vyre_expr *vyre_ir_name(vyre_program *p, const char *name) {
    struct vyre_expr *e = new_expr(p, VYRE_EX_NAME);
    if (!e) return NULL;
    e->u.name.name = vyre_arena_strdup(p, name);
    return e->u.name.name ? e : NULL;
}

struct vyre_expr *vyre_ir_builtin(vyre_program *p, enum vyre_builtin b, unsigned axis) {
    struct vyre_expr *e = new_expr(p, VYRE_EX_BUILTIN);
    if (!e) return NULL;
    e->u.builtin.which = b;
    e->u.builtin.axis = (uint8_t)(axis < 3 ? axis : 0);
    return e;
}

static struct vyre_expr *access_expr(vyre_program *p, enum vyre_expr_kind k, const char *buf,
                                     struct vyre_expr *index) {
    struct vyre_expr *e = new_expr(p, k);
    if (!e) return NULL;
    e->u.access.buf = vyre_arena_strdup(p, buf);
    e->u.access.index = index;
    return e->u.access.buf ? e : NULL;
}

struct vyre_expr *vyre_ir_load(vyre_program *p, const char *buf, struct vyre_expr *index) {
    return access_expr(p, VYRE_EX_LOAD, buf, index);
}

struct vyre_expr *vyre_ir_len(vyre_program *p, const char *buf) {
    return access_expr(p, VYRE_EX_LEN, buf, NULL);
}

static struct vyre_expr *op_expr(vyre_program *p, enum vyre_expr_kind k, enum vyre_op op,
                                 struct vyre_expr *a, struct vyre_expr *b, struct vyre_expr *c) {
    struct vyre_expr *e = new_expr(p, k);
    if (!e) return NULL;
    e->u.op.op = op;
    e->u.op.a[0] = a;
    e->u.op.a[1] = b;
    e->u.op.a[2] = c;
    return e;
}

struct vyre_expr *vyre_ir_unary(vyre_program *p, enum vyre_op op, struct vyre_expr *a) {
    return op_expr(p, VYRE_EX_UNARY, op, a, NULL, NULL);
}

struct vyre_expr *vyre_ir_binary(vyre_program *p, enum vyre_op op, struct vyre_expr *a,
                                 struct vyre_expr *b) {
    return op_expr(p, VYRE_EX_BINARY, op, a, b, NULL);
}

struct vyre_expr *vyre_ir_select(vyre_program *p, struct vyre_expr *c, struct vyre_expr *a,
                                 struct vyre_expr *b) {
    return op_expr(p, VYRE_EX_SELECT, VYRE_OP_COUNT, c, a, b);
}

struct vyre_expr *vyre_ir_cast(vyre_program *p, enum vyre_type to, struct vyre_expr *a) {
    struct vyre_expr *e = op_expr(p, VYRE_EX_CAST, VYRE_OP_COUNT, a, NULL, NULL);
    if (e) e->u.op.to = to;
    return e;
}

struct vyre_expr *vyre_ir_bitcast(vyre_program *p, enum vyre_type to, struct vyre_expr *a) {
    struct vyre_expr *e = op_expr(p, VYRE_EX_BITCAST, VYRE_OP_COUNT, a, NULL, NULL);
    if (e) e->u.op.to = to;
    return e;
}

struct vyre_expr *vyre_ir_fma(vyre_program *p, struct vyre_expr *a, struct vyre_expr *b,
                              struct vyre_expr *c) {
    return op_expr(p, VYRE_EX_FMA, VYRE_OP_COUNT, a, b, c);
}

struct vyre_expr *vyre_ir_subgroup(vyre_program *p, enum vyre_subgroup k, enum vyre_op op,
                                   struct vyre_expr *a, struct vyre_expr *b) {
    struct vyre_expr *e = op_expr(p, VYRE_EX_SUBGROUP, op, a, b, NULL);
    if (e) e->u.op.sg = k;
    return e;
}

/* ---- statements ------------------------------------------------------------------- */

static struct vyre_stmt *new_stmt(vyre_program *p, enum vyre_stmt_kind kind, const char *name) {
    p->validated = false;
    struct vyre_stmt *s = vyre_arena_alloc(p, sizeof *s);
    if (!s) return NULL;
    s->kind = kind;
    s->id = p->next_id++;
    if (name) {
        s->name = vyre_arena_strdup(p, name);
        if (!s->name) return NULL;
    }
    return s;
}

struct vyre_stmt *vyre_ir_let(vyre_program *p, const char *name, struct vyre_expr *v) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_LET, name);
    if (s) s->value = v;
    return s;
}

struct vyre_stmt *vyre_ir_set(vyre_program *p, const char *name, struct vyre_expr *v) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_SET, name);
    if (s) s->value = v;
    return s;
}

struct vyre_stmt *vyre_ir_store(vyre_program *p, const char *buf, struct vyre_expr *index,
                                struct vyre_expr *v) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_STORE, NULL);
    if (!s) return NULL;
    s->buf = vyre_arena_strdup(p, buf);
    s->index = index;
    s->value = v;
    return s->buf ? s : NULL;
}

struct vyre_stmt *vyre_ir_if(vyre_program *p, struct vyre_expr *cond) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_IF, NULL);
    if (s) s->cond = cond;
    return s;
}

struct vyre_stmt *vyre_ir_for(vyre_program *p, const char *var, struct vyre_expr *from,
                              struct vyre_expr *to, struct vyre_expr *step) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_FOR, var);
    if (!s) return NULL;
    s->from = from;
    s->to = to;
    if (!step && from && from->kind == VYRE_EX_LIT) step = vyre_ir_lit(p, from->type, 1);
    s->step = step;
    return s;
}

struct vyre_stmt *vyre_ir_simple(vyre_program *p, enum vyre_stmt_kind k) {
    return new_stmt(p, k, NULL);
}

struct vyre_stmt *vyre_ir_atomic(vyre_program *p, const char *result, enum vyre_atomic_op op,
                                 const char *buf, struct vyre_expr *index,
                                 struct vyre_expr *expected, struct vyre_expr *value) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_ATOMIC, result);
    if (!s) return NULL;
    s->atomic = op;
    s->buf = vyre_arena_strdup(p, buf);
    s->index = index;
    s->expected = expected;
    s->value = value;
    return s->buf ? s : NULL;
}

struct vyre_stmt *vyre_ir_converge(vyre_program *p, const char *flag, struct vyre_expr *max) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_CONVERGE, NULL);
    if (!s) return NULL;
    s->buf = vyre_arena_strdup(p, flag);
    s->value = max;
    return s->buf ? s : NULL;
}

struct vyre_stmt *vyre_ir_push_item(vyre_program *p, const char *wl, struct vyre_expr *v) {
    struct vyre_stmt *s = new_stmt(p, VYRE_ST_PUSH, NULL);
    if (!s) return NULL;
    s->buf = vyre_arena_strdup(p, wl);
    s->value = v;
    return s->buf ? s : NULL;
}

bool vyre_stmt_has_blocks(const struct vyre_stmt *s) {
    return s && (s->kind == VYRE_ST_IF || s->kind == VYRE_ST_FOR || s->kind == VYRE_ST_CONVERGE);
}

bool vyre_ir_push(vyre_program *p, struct vyre_block *b, struct vyre_stmt *s) {
    p->validated = false;
    if (!s) {
        p->oom = true;
        return false;
    }
    if (b->count == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2u : 4u;
        struct vyre_stmt **items = vyre_arena_alloc(p, cap * sizeof *items);
        if (!items) return false;
        if (b->count) memcpy(items, b->items, b->count * sizeof *items);
        b->items = items;
        b->cap = cap;
    }
    b->items[b->count++] = s;
    return true;
}

/* ---- structural equality ------------------------------------------------------------ */

static bool str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

bool vyre_ir_expr_equal(const struct vyre_expr *a, const struct vyre_expr *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case VYRE_EX_LIT: return a->type == b->type && a->u.lit.bits == b->u.lit.bits;
    case VYRE_EX_NAME: return str_eq(a->u.name.name, b->u.name.name);
    case VYRE_EX_BUILTIN:
        return a->u.builtin.which == b->u.builtin.which && a->u.builtin.axis == b->u.builtin.axis;
    case VYRE_EX_LOAD:
    case VYRE_EX_LEN:
        return str_eq(a->u.access.buf, b->u.access.buf) &&
               vyre_ir_expr_equal(a->u.access.index, b->u.access.index);
    case VYRE_EX_UNARY:
    case VYRE_EX_BINARY:
    case VYRE_EX_SELECT:
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST:
    case VYRE_EX_FMA:
    case VYRE_EX_SUBGROUP:
        if (a->u.op.op != b->u.op.op) return false;
        if (a->kind == VYRE_EX_SUBGROUP && a->u.op.sg != b->u.op.sg) return false;
        if ((a->kind == VYRE_EX_CAST || a->kind == VYRE_EX_BITCAST) && a->u.op.to != b->u.op.to)
            return false;
        for (int i = 0; i < 3; i++)
            if (!vyre_ir_expr_equal(a->u.op.a[i], b->u.op.a[i])) return false;
        return true;
    }
    return false;
}

static bool stmt_equal(const struct vyre_stmt *a, const struct vyre_stmt *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || !str_eq(a->name, b->name) || !str_eq(a->buf, b->buf)) return false;
    if (a->kind == VYRE_ST_ATOMIC && a->atomic != b->atomic) return false;
    return vyre_ir_expr_equal(a->value, b->value) && vyre_ir_expr_equal(a->index, b->index) &&
           vyre_ir_expr_equal(a->expected, b->expected) && vyre_ir_expr_equal(a->cond, b->cond) &&
           vyre_ir_expr_equal(a->from, b->from) && vyre_ir_expr_equal(a->to, b->to) &&
           vyre_ir_expr_equal(a->step, b->step) && vyre_ir_block_equal(&a->then_, &b->then_) &&
           vyre_ir_block_equal(&a->else_, &b->else_);
}

bool vyre_ir_block_equal(const struct vyre_block *a, const struct vyre_block *b) {
    if (a->count != b->count) return false;
    for (uint32_t i = 0; i < a->count; i++)
        if (!stmt_equal(a->items[i], b->items[i])) return false;
    return true;
}

bool vyre_program_equal(const vyre_program *a, const vyre_program *b) {
    if (!a || !b) return a == b;
    if (!str_eq(a->name, b->name) || memcmp(a->workgroup, b->workgroup, sizeof a->workgroup) != 0 ||
        a->ndecls != b->ndecls)
        return false;
    for (uint32_t i = 0; i < a->ndecls; i++) {
        const struct vyre_decl *x = &a->decls[i], *y = &b->decls[i];
        if (x->kind != y->kind || !str_eq(x->name, y->name) || x->type != y->type ||
            x->count != y->count || (x->kind == VYRE_DECL_BUFFER && x->access != y->access))
            return false;
    }
    return vyre_ir_block_equal(&a->body, &b->body);
}

/* ---- declarations, for callers outside the IR (the Lua binding, C hosts) ---- */

const char *vyre_decl_kind_name(enum vyre_decl_kind k) {
    switch (k) {
    case VYRE_DECL_BUFFER: return "buffer";
    case VYRE_DECL_SHARED: return "shared";
    case VYRE_DECL_PARAM: return "param";
    case VYRE_DECL_WORKLIST: return "worklist";
    }
    return "?";
}

uint32_t vyre_program_decl_count(const vyre_program *p) { return p ? p->ndecls : 0; }

bool vyre_program_decl(const vyre_program *p, uint32_t i, struct vyre_decl_info *out) {
    if (!p || !out || i >= p->ndecls) return false;
    const struct vyre_decl *d = &p->decls[i];
    *out = (struct vyre_decl_info){d->kind, d->name, d->type, d->access, d->count, d->slot};
    return true;
}

uint32_t vyre_program_buffer_count(const vyre_program *p) { return p ? p->nbuffers : 0; }

uint32_t vyre_program_param_count(const vyre_program *p) { return p ? p->nparams : 0; }

uint32_t vyre_program_worklist_count(const vyre_program *p) { return p ? p->nworklists : 0; }

unsigned vyre_expr_operands(const struct vyre_expr *e, struct vyre_expr *out[3]) {
    unsigned n = 0;
    if (!e) return 0;
    switch (e->kind) {
    case VYRE_EX_LOAD:
        if (e->u.access.index) out[n++] = e->u.access.index;
        return n;
    case VYRE_EX_UNARY:
    case VYRE_EX_BINARY:
    case VYRE_EX_SELECT:
    case VYRE_EX_CAST:
    case VYRE_EX_BITCAST:
    case VYRE_EX_FMA:
    case VYRE_EX_SUBGROUP:
        for (int i = 0; i < 3; i++)
            if (e->u.op.a[i]) out[n++] = e->u.op.a[i];
        return n;
    default: return 0;
    }
}

/* ---- which grid axes a program reads -------------------------------------- */

/* Whether e reads a builtin in the mask (1u << VYRE_GID ...) on axis (3: any axis). */
static bool expr_reads(const struct vyre_expr *e, unsigned mask, unsigned axis) {
    if (!e) return false;
    if (e->kind == VYRE_EX_BUILTIN)
        return (axis == 3 || e->u.builtin.axis == axis) && (mask & (1u << e->u.builtin.which)) != 0;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++)
        if (expr_reads(ops[i], mask, axis)) return true;
    return false;
}

static bool block_reads(const struct vyre_block *b, unsigned mask, unsigned axis) {
    for (uint32_t i = 0; i < b->count; i++) {
        const struct vyre_stmt *s = b->items[i];
        const struct vyre_expr *es[] = {s->value, s->index, s->expected, s->cond,
                                        s->from,  s->to,    s->step};
        for (size_t j = 0; j < sizeof es / sizeof es[0]; j++)
            if (expr_reads(es[j], mask, axis)) return true;
        if (block_reads(&s->then_, mask, axis) || block_reads(&s->else_, mask, axis)) return true;
    }
    return false;
}

bool vyre_program_reads_axis(const vyre_program *p, unsigned axis) {
    return p && axis < 3 && block_reads(&p->body, (1u << VYRE_GID) | (1u << VYRE_WGID), axis);
}

bool vyre_program_reads_ngroups(const vyre_program *p) {
    return p && block_reads(&p->body, 1u << VYRE_NGROUPS, 3);
}
