/* validate.c — the validator's entry points (vyre_validate, vyre_ensure_valid, the
 * problem list and its formatting) and the pieces every validator file shares: node
 * paths, the program-wide name table, identifier rules, and the checks of the
 * program header and declarations. Expressions, statements and the barrier
 * uniformity analysis live in validate_expr.c, validate_stmt.c and validate_flow.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate_int.h"

/* ---- problems ------------------------------------------------------------------ */

static struct vyre_problem *new_problem(struct vyre_vv *v) {
    struct vyre_problems *ps = v->probs;
    if (ps->count == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2u : 8u;
        struct vyre_problem *items = realloc(ps->items, cap * sizeof *items);
        if (!items) {
            v->nomem = true;
            v->full = true;
            return NULL;
        }
        ps->items = items;
        ps->cap = cap;
    }
    struct vyre_problem *pr = &ps->items[ps->count++];
    memset(pr, 0, sizeof *pr);
    return pr;
}

/* Copies the current path, keeping its tail when it is too long: the innermost
 * segments say the most about where the problem is. */
static void copy_path(const struct vyre_vv *v, char *out, size_t size) {
    const char *path = v->plen ? v->path : "program";
    size_t n = strlen(path);
    if (n < size) {
        memcpy(out, path, n + 1);
        return;
    }
    size_t keep = size - 4u;
    memcpy(out, "...", 3);
    memcpy(out + 3, path + (n - keep), keep);
    out[size - 1] = '\0';
}

static void vreport(struct vyre_vv *v, const char *code, enum vyre_type cast, const char *fix,
                    const char *fmt, va_list ap) {
    if (v->full) return;
    struct vyre_problem *pr;
    if (v->probs->count >= VYRE_MAX_PROBLEMS) {
        pr = new_problem(v);
        v->full = true;
        if (!pr) return;
        snprintf(pr->code, sizeof pr->code, "%s", "too-many-problems");
        copy_path(v, pr->path, sizeof pr->path);
        snprintf(pr->message, sizeof pr->message, "more than %u problems; validation stopped here",
                 VYRE_MAX_PROBLEMS);
        snprintf(pr->fix, sizeof pr->fix, "%s", "fix the problems above and validate again");
        return;
    }
    pr = new_problem(v);
    if (!pr) return;
    snprintf(pr->code, sizeof pr->code, "%s", code);
    copy_path(v, pr->path, sizeof pr->path);
    vsnprintf(pr->message, sizeof pr->message, fmt, ap);
    snprintf(pr->fix, sizeof pr->fix, "%s", fix);
    if (cast != VYRE_VOID) snprintf(pr->cast, sizeof pr->cast, "%s", vyre_type_name(cast));
}

void vyre_vv_report(struct vyre_vv *v, const char *code, const char *fix, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(v, code, VYRE_VOID, fix, fmt, ap);
    va_end(ap);
}

void vyre_vv_report_cast(struct vyre_vv *v, const char *code, enum vyre_type cast, const char *fix,
                         const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(v, code, cast, fix, fmt, ap);
    va_end(ap);
}

void vyre_problems_free(struct vyre_problems *probs) {
    if (!probs) return;
    free(probs->items);
    probs->items = NULL;
    probs->count = 0;
    probs->cap = 0;
}

void vyre_problems_format(const vyre_program *p, const struct vyre_problems *probs,
                          struct vyre_error *err) {
    if (!err) return;
    char msg[VYRE_MSG_MAX];
    size_t n = probs ? probs->count : 0;
    const char *name = p && p->name ? p->name : "?";
    int w = snprintf(msg, sizeof msg, "invalid program '%.64s': %zu problem%s:", name, n,
                     n == 1 ? "" : "s");
    size_t len = w > 0 ? (size_t)w : 0;
    if (len >= sizeof msg) len = sizeof msg - 1;
    /* Room kept for the closing "... and N more" line. */
    const size_t tail = 48;
    for (size_t i = 0; i < n; i++) {
        const struct vyre_problem *pr = &probs->items[i];
        size_t mlen = strlen(pr->message);
        bool stop = mlen && strchr(".!?", pr->message[mlen - 1]) != NULL;
        char line[sizeof pr->path + sizeof pr->message + sizeof pr->fix + 32];
        int lw = snprintf(line, sizeof line, "\n  %s: %s%s Fix: %s", pr->path, pr->message,
                          stop ? "" : ".", pr->fix);
        size_t ll = lw > 0 ? (size_t)lw : 0;
        if (ll >= sizeof line) ll = sizeof line - 1;
        if (len + ll + tail >= sizeof msg) {
            snprintf(msg + len, sizeof msg - len, "\n  ... and %zu more", n - i);
            len = strlen(msg);
            break;
        }
        memcpy(msg + len, line, ll + 1);
        len += ll;
    }
    if (n == 0 && len + 40 < sizeof msg)
        snprintf(msg + len, sizeof msg - len, " Fix: validate the program again");
    vyre_error_set(err, VYRE_ERR_INVALID, "%s", msg);
}

/* ---- paths and quoting ------------------------------------------------------------- */

size_t vyre_vv_push(struct vyre_vv *v, const char *fmt, ...) {
    size_t old = v->plen;
    if (v->plen + 1 >= sizeof v->path) return old;
    if (v->plen) v->path[v->plen++] = '.';
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(v->path + v->plen, sizeof v->path - v->plen, fmt, ap);
    va_end(ap);
    if (w < 0) w = 0;
    v->plen += (size_t)w;
    if (v->plen >= sizeof v->path) v->plen = sizeof v->path - 1;
    v->path[v->plen] = '\0';
    return old;
}

void vyre_vv_pop(struct vyre_vv *v, size_t len) {
    v->plen = len;
    v->path[len] = '\0';
}

/* The text printer stops once the fixed buffer is full, so quoting a node is
 * cheap and shallow however deep the tree below it is. */
const char *vyre_vv_qe(const struct vyre_expr *e, char *buf) {
    return vyre_expr_text(e, buf, VYRE_VV_QUOTE);
}

/* if/for quote only their head: the body is reported on its own, and a block is
 * the one part of a statement the printer trusts to be well formed. */
const char *vyre_vv_qs(const struct vyre_stmt *s, char *buf) {
    if (s && s->kind == VYRE_ST_IF) {
        char c[VYRE_VV_QUOTE - 16];
        snprintf(buf, VYRE_VV_QUOTE, "(if %s ...)", vyre_expr_text(s->cond, c, sizeof c));
        return buf;
    }
    if (s && s->kind == VYRE_ST_FOR) {
        char a[40], b[40], c[40];
        snprintf(buf, VYRE_VV_QUOTE, "(for %.24s %s %s %s ...)", s->name ? s->name : "<null>",
                 vyre_expr_text(s->from, a, sizeof a), vyre_expr_text(s->to, b, sizeof b),
                 vyre_expr_text(s->step, c, sizeof c));
        return buf;
    }
    if (s && s->kind == VYRE_ST_CONVERGE) {
        char c[VYRE_VV_QUOTE - 40];
        snprintf(buf, VYRE_VV_QUOTE, "(converge %.24s %s ...)", s->buf ? s->buf : "<null>",
                 vyre_expr_text(s->value, c, sizeof c));
        return buf;
    }
    return vyre_stmt_text(s, buf, VYRE_VV_QUOTE);
}

/* ---- name table ------------------------------------------------------------------ */

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

uint32_t vyre_vv_lookup(const struct vyre_vv *v, const char *name) {
    if (!name || !v->table_cap) return UINT32_MAX;
    uint32_t mask = v->table_cap - 1u;
    for (uint32_t i = hash_name(name) & mask;; i = (i + 1u) & mask) {
        uint32_t e = v->table[i];
        if (!e) return UINT32_MAX;
        if (strcmp(v->names[e - 1u].name, name) == 0) return e - 1u;
    }
}

static bool grow_table(struct vyre_vv *v) {
    uint32_t cap = v->table_cap ? v->table_cap * 2u : 64u;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (uint32_t k = 0; k < v->nnames; k++) {
        uint32_t i = hash_name(v->names[k].name) & (cap - 1u);
        while (t[i]) i = (i + 1u) & (cap - 1u);
        t[i] = k + 1u;
    }
    free(v->table);
    v->table = t;
    v->table_cap = cap;
    return true;
}

bool vyre_vv_insert(struct vyre_vv *v, const char *name, enum vyre_vv_name_kind kind,
                    uint32_t index) {
    if (!name) return false;
    if (v->nnames == v->names_cap) {
        uint32_t cap = v->names_cap ? v->names_cap * 2u : 32u;
        struct vyre_vv_name *n = realloc(v->names, cap * sizeof *n);
        if (!n) {
            v->nomem = v->full = true;
            return false;
        }
        v->names = n;
        v->names_cap = cap;
    }
    /* Keep the index at most half full. */
    if ((v->nnames + 1u) * 2u > v->table_cap && !grow_table(v)) {
        v->nomem = v->full = true;
        return false;
    }
    uint32_t k = v->nnames++;
    v->names[k] = (struct vyre_vv_name){name, kind, index, true, false};
    uint32_t mask = v->table_cap - 1u;
    uint32_t i = hash_name(name) & mask;
    while (v->table[i]) i = (i + 1u) & mask;
    v->table[i] = k + 1u;
    return true;
}

/* ---- identifiers ------------------------------------------------------------------- */

bool vyre_vv_check_ident(struct vyre_vv *v, const char *name, const char *what) {
    if (!name || !*name) {
        vyre_vv_report(v, "invalid-name", "give it a name like [A-Za-z_][A-Za-z0-9_]*",
                       "the %s has an empty name", what);
        return false;
    }
    size_t n = 0;
    bool ok = !(name[0] >= '0' && name[0] <= '9');
    for (const char *c = name; *c; c++, n++) {
        bool alnum = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                     (*c >= '0' && *c <= '9') || *c == '_';
        if (!alnum) ok = false;
        if (n > VYRE_MAX_NAME + 1u) break;
    }
    if (!ok) {
        vyre_vv_report(
            v, "invalid-name", "use only letters, digits and '_', not starting with a digit",
            "'%.64s' is not a valid %s name (names match [A-Za-z_][A-Za-z0-9_]*)", name, what);
        return false;
    }
    if (n > VYRE_MAX_NAME) {
        vyre_vv_report(v, "name-too-long", "shorten the name to at most 64 characters",
                       "the %s name '%.40s...' is longer than %d characters", what, name,
                       VYRE_MAX_NAME);
        return false;
    }
    /* One list (ir.c) shared with the Lua DSL, so both reject the same words. */
    size_t nreserved;
    const char *const *reserved = vyre_reserved_names(&nreserved);
    for (size_t i = 0; i < nreserved; i++) {
        if (strcmp(name, reserved[i]) == 0) {
            vyre_vv_report(v, "reserved-name", "rename it, e.g. to 'v_' followed by the name",
                           "'%s' is reserved (literal or type name) and cannot name a %s", name,
                           what);
            return false;
        }
    }
    return true;
}

void vyre_vv_count(struct vyre_vv *v) {
    if (++v->nodes > VYRE_MAX_NODES && !v->nodes_reported) {
        v->nodes_reported = true;
        vyre_vv_report(v, "limit-nodes", "split the work into several smaller programs",
                       "the program has more than %u nodes (statements plus expressions)",
                       VYRE_MAX_NODES);
    }
}

/* ---- program header and declarations ----------------------------------------------- */

static void check_workgroup(struct vyre_vv *v) {
    const uint32_t *w = v->p->workgroup;
    size_t old = vyre_vv_push(v, "workgroup");
    uint64_t total = (uint64_t)w[0] * w[1] * w[2];
    if (w[0] == 0 || w[1] == 0 || w[2] == 0)
        vyre_vv_report(v, "workgroup-size", "give every axis at least 1, e.g. (workgroup 256)",
                       "workgroup (%u %u %u) has an axis of size 0", w[0], w[1], w[2]);
    else if (total > VYRE_MAX_WORKGROUP)
        vyre_vv_report(v, "workgroup-size", "use at most 1024 invocations per workgroup, e.g. 256",
                       "workgroup (%u %u %u) has %llu invocations, more than %u", w[0], w[1], w[2],
                       (unsigned long long)total, VYRE_MAX_WORKGROUP);
    if (w[2] > VYRE_MAX_WORKGROUP_Z)
        vyre_vv_report(v, "workgroup-size", "use at most 64 on the z axis; move the rest to x or y",
                       "workgroup z size %u is more than %u", w[2], VYRE_MAX_WORKGROUP_Z);
    vyre_vv_pop(v, old);
}

static const char *decl_what(enum vyre_decl_kind k) {
    switch (k) {
    case VYRE_DECL_BUFFER: return "buffer";
    case VYRE_DECL_SHARED: return "shared array";
    case VYRE_DECL_PARAM: return "param";
    case VYRE_DECL_WORKLIST: return "worklist";
    }
    return "declaration";
}

static void check_decl(struct vyre_vv *v, uint32_t i, uint32_t *nbuf, uint32_t *nparam,
                       uint64_t *shared_bytes) {
    struct vyre_decl *d = &v->p->decls[i];
    size_t old = vyre_vv_push(v, "decls[%u]", i);
    d->nonempty = false; /* set again by check_converge for a converge's flag */
    bool kind_ok = d->kind == VYRE_DECL_BUFFER || d->kind == VYRE_DECL_SHARED ||
                   d->kind == VYRE_DECL_PARAM || d->kind == VYRE_DECL_WORKLIST;
    const char *what = decl_what(d->kind);
    if (!kind_ok)
        vyre_vv_report(v, "invalid-decl", "declare a buffer, shared array, param or worklist",
                       "declaration kind %d is unknown", (int)d->kind);
    bool type_ok = (unsigned)d->type < VYRE_TYPE_COUNT;
    if (!type_ok)
        vyre_vv_report(v, "invalid-type", "use one of bool i32 u32 i64 u64 f32 f64",
                       "the %s '%.64s' has no valid type (%d)", what, d->name ? d->name : "",
                       (int)d->type);
    vyre_vv_check_ident(v, d->name, what);
    if (d->kind == VYRE_DECL_BUFFER) {
        if (d->access != VYRE_ACCESS_READ && d->access != VYRE_ACCESS_WRITE &&
            d->access != VYRE_ACCESS_READ_WRITE)
            vyre_vv_report(v, "invalid-decl", "use access read, write or read_write",
                           "the buffer '%.64s' has an unknown access mode (%d)",
                           d->name ? d->name : "", (int)d->access);
        if (++*nbuf == VYRE_MAX_BUFFERS + 1u)
            vyre_vv_report(v, "limit-buffers", "pack data into fewer buffers",
                           "the program declares more than %u buffers", VYRE_MAX_BUFFERS);
    } else if (d->kind == VYRE_DECL_PARAM) {
        if (++*nparam == VYRE_MAX_PARAMS + 1u)
            vyre_vv_report(v, "limit-params", "pass the values through a read buffer instead",
                           "the program declares more than %u params", VYRE_MAX_PARAMS);
    } else if (d->kind == VYRE_DECL_WORKLIST) {
        vyre_vv_worklist_decl(v, d);
    } else if (d->kind == VYRE_DECL_SHARED) {
        if (d->count == 0)
            vyre_vv_report(v, "shared-count", "give the shared array a count of at least 1",
                           "the shared array '%.64s' has count 0", d->name ? d->name : "");
        uint64_t before = *shared_bytes;
        uint64_t bytes = (uint64_t)d->count * (type_ok ? vyre_type_size(d->type) : 4u);
        /* A program with grid statements overlaps the arrays of different sections and
         * of exclusive branches (shared_layout.c): its window is checked once the body's
         * names are resolved (check_grid_shared); here only an array that cannot fit
         * on its own. */
        *shared_bytes = v->p->has_grid ? bytes : before + bytes;
        if (v->p->has_grid) before = 0;
        if (before <= VYRE_MAX_SHARED_BYTES && *shared_bytes > VYRE_MAX_SHARED_BYTES)
            vyre_vv_report(
                v, "shared-size", "shrink the shared arrays or split the workgroup's work",
                "shared arrays need %llu bytes up to '%.64s', more than the %u bytes "
                "a workgroup may use",
                (unsigned long long)*shared_bytes, d->name ? d->name : "", VYRE_MAX_SHARED_BYTES);
    }
    if (d->name) {
        uint32_t prev = vyre_vv_lookup(v, d->name);
        if (prev != UINT32_MAX)
            vyre_vv_report(
                v, "duplicate-name", "rename one of the two declarations",
                "'%.64s' is already declared at decls[%u]; names are unique in a program", d->name,
                v->names[prev].index);
        else vyre_vv_insert(v, d->name, VYRE_VV_DECL, i);
    }
    vyre_vv_pop(v, old);
}

static void check_header(struct vyre_vv *v) {
    size_t old = vyre_vv_push(v, "name");
    vyre_vv_check_ident(v, v->p->name, "program");
    vyre_vv_pop(v, old);
    check_workgroup(v);
    uint32_t nbuf = 0, nparam = 0;
    uint64_t shared_bytes = 0;
    if (v->p->ndecls && !v->p->decls) {
        vyre_vv_report(v, "missing-node", "rebuild the program; the builder ran out of memory",
                       "the declaration list is missing");
        return;
    }
    for (uint32_t i = 0; i < v->p->ndecls && !v->full; i++)
        check_decl(v, i, &nbuf, &nparam, &shared_bytes);
}

/* The shared window of a program with grid statements, as the PTX lays it out: the
 * largest section, arrays of exclusive branches overlapped (a megakernel's steps),
 * plus the grid barrier's word. Needs every name resolved, so it runs last. */
static void check_grid_shared(struct vyre_vv *v) {
    bool oom = false;
    uint64_t bytes = vyre_shared_grid_bytes(v->p, &oom);
    if (oom) {
        v->nomem = true;
        return;
    }
    if (bytes > VYRE_MAX_SHARED_BYTES) {
        size_t old = vyre_vv_push(v, "decls");
        vyre_vv_report(v, "shared-size",
                       "shrink the shared arrays of the largest section, or move steps that "
                       "run together into separate grid sections",
                       "shared arrays need %llu bytes in the largest grid section (sections "
                       "and exclusive branches overlap; 4 bytes are the grid barrier's), "
                       "more than the %u bytes a workgroup may use",
                       (unsigned long long)bytes, VYRE_MAX_SHARED_BYTES);
        vyre_vv_pop(v, old);
    }
}

/* ---- entry points ------------------------------------------------------------------ */

/* Copies the slot tables into the program's arena (they live as long as it). */
static bool publish_slots(struct vyre_vv *v) {
    vyre_program *p = v->p;
    p->nslots = v->nslots;
    p->slot_types = NULL;
    p->slot_names = NULL;
    if (!v->nslots) return true;
    p->slot_types = vyre_arena_alloc(p, v->nslots * sizeof *p->slot_types);
    p->slot_names = vyre_arena_alloc(p, v->nslots * sizeof *p->slot_names);
    if (!p->slot_types || !p->slot_names) {
        p->slot_types = NULL;
        p->slot_names = NULL;
        p->nslots = 0;
        return false;
    }
    memcpy(p->slot_types, v->slot_types, v->nslots * sizeof *p->slot_types);
    memcpy(p->slot_names, v->slot_names, v->nslots * sizeof *p->slot_names);
    return true;
}

enum vyre_status vyre_validate(vyre_program *p, struct vyre_problems *out) {
    struct vyre_problems local = {0};
    struct vyre_problems *probs = out ? out : &local;
    probs->count = 0;
    if (!p) return VYRE_ERR_ARG;
    struct vyre_vv *v = calloc(1, sizeof *v);
    if (!v) return VYRE_ERR_NOMEM;
    v->p = p;
    v->probs = probs;
    p->validated = false;

    vyre_vv_grid_mark(v); /* first: the shared-memory rule depends on it */
    check_header(v);
    if (!v->full) vyre_vv_block(v, &p->body, "body", 1);
    if (!v->full && !v->nodes_reported && p->has_grid) vyre_vv_grid_check(v);
    if (!v->full) vyre_vv_worklist_rules(v);
    /* The uniformity analysis needs every name resolved and every subtree inside the
     * limits; on a huge program it is skipped (the program is already rejected). */
    if (!v->full && !v->nodes_reported) vyre_vv_flow(v);
    if (!v->full && !probs->count && p->has_grid) check_grid_shared(v);
    bool builder_oom = p->oom;
    if (builder_oom) {
        vyre_vv_pop(v, 0);
        vyre_vv_report(v, "out-of-memory", "free memory and build the program again",
                       "the program is incomplete: an allocation failed while building it");
    }

    enum vyre_status st = VYRE_OK;
    if (v->nomem || builder_oom) st = VYRE_ERR_NOMEM;
    else if (probs->count) st = VYRE_ERR_INVALID;
    else if (!publish_slots(v)) st = VYRE_ERR_NOMEM;
    else p->validated = true;

    free(v->names);
    free(v->table);
    free(v->scope);
    free(v->slot_types);
    free(v->slot_names);
    free(v);
    if (!out) vyre_problems_free(&local);
    return st;
}

enum vyre_status vyre_ensure_valid(vyre_program *p, struct vyre_error *err) {
    if (!p)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "no program given. Fix: pass a program built "
                              "with the builder or vyre_text_parse");
    if (p->validated) return VYRE_OK;
    struct vyre_problems probs = {0};
    enum vyre_status st = vyre_validate(p, &probs);
    if (st == VYRE_ERR_INVALID) {
        vyre_problems_format(p, &probs, err);
    } else if (st == VYRE_ERR_NOMEM) {
        if (p->oom)
            vyre_error_set(err, VYRE_ERR_NOMEM,
                           "program '%.64s' is incomplete: memory ran out while building it. "
                           "Fix: free memory and build the program again",
                           p->name ? p->name : "?");
        else
            vyre_error_set(err, VYRE_ERR_NOMEM,
                           "out of memory while validating program '%.64s'. Fix: free memory "
                           "and try again",
                           p->name ? p->name : "?");
    }
    vyre_problems_free(&probs);
    return st;
}

enum vyre_status vyre_program_check(vyre_program *p, struct vyre_error *err) {
    return vyre_ensure_valid(p, err);
}
