/* interp.c — the reference interpreter (ARCHITECTURE.md §3: it *is* the spec).
 * vyre_ref_run checks the bindings, compiles the statement tree once into a flat
 * instruction list with jumps, then runs workgroups in order (x fastest, then y, z).
 * Inside a workgroup every invocation runs until it reaches a barrier or returns;
 * when all live invocations wait at the same barrier they are released together,
 * which is exactly what a GPU barrier guarantees. Subgroup ops that exchange values
 * wait the same way, so every lane's operands are known before any result
 * (interp_subgroup.c). Anything else (some returned, or waiting at different
 * barriers) is a run-time error naming the barrier. */
#include "interp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "sem.h"

#define GRID_MAX_X 2147483647u
#define GRID_MAX_YZ 65535u

/* ---- compilation ------------------------------------------------------------ */

struct loop_ctx {
    uint32_t *breaks; /* instruction indices of break jumps to patch */
    uint32_t nbreaks, cap;
};

struct compiler {
    const vyre_program *p;
    struct vyre_code *code;
    char path[512];
};

static uint32_t emit(struct compiler *c, enum vyre_ins_kind kind, const struct vyre_stmt *s) {
    struct vyre_code *code = c->code;
    if (code->oom) return 0;
    if (code->count == code->cap) {
        uint32_t cap = code->cap ? code->cap * 2 : 64;
        struct vyre_ins *ins = realloc(code->ins, (size_t)cap * sizeof *ins);
        if (!ins) {
            code->oom = true;
            return 0;
        }
        code->ins = ins;
        code->cap = cap;
    }
    uint32_t at = code->count++;
    code->ins[at] = (struct vyre_ins){kind, 0, 0, s, NULL, 0};
    return at;
}

static void patch(struct compiler *c, uint32_t at, uint32_t target) {
    if (!c->code->oom) c->code->ins[at].target = target;
}

static uint32_t add_barrier_path(struct compiler *c) {
    struct vyre_code *code = c->code;
    if (code->oom) return 0;
    if (code->nbarriers == code->barriers_cap) {
        uint32_t cap = code->barriers_cap ? code->barriers_cap * 2 : 8;
        char **paths = realloc(code->barrier_paths, (size_t)cap * sizeof *paths);
        if (!paths) {
            code->oom = true;
            return 0;
        }
        code->barrier_paths = paths;
        code->barriers_cap = cap;
    }
    size_t n = strlen(c->path) + 1;
    char *copy = malloc(n);
    if (!copy) {
        code->oom = true;
        return 0;
    }
    memcpy(copy, c->path, n);
    code->barrier_paths[code->nbarriers] = copy;
    return code->nbarriers++;
}

static void compile_block(struct compiler *c, const struct vyre_block *b, const char *field,
                          struct loop_ctx *loop);

static void add_break(struct compiler *c, struct loop_ctx *loop, uint32_t at) {
    if (!loop || c->code->oom) return; /* the validator rejects break outside a for */
    if (loop->nbreaks == loop->cap) {
        uint32_t cap = loop->cap ? loop->cap * 2 : 4;
        uint32_t *b = realloc(loop->breaks, (size_t)cap * sizeof *b);
        if (!b) {
            c->code->oom = true;
            return;
        }
        loop->breaks = b;
        loop->cap = cap;
    }
    loop->breaks[loop->nbreaks++] = at;
}

static void compile_for(struct compiler *c, const struct vyre_stmt *s) {
    struct loop_ctx inner = {0};
    uint32_t hidden = c->code->nslots;
    c->code->nslots += 2; /* `to` and `step`, evaluated once */
    uint32_t init = emit(c, VYRE_IN_FOR_INIT, s);
    if (!c->code->oom) c->code->ins[init].aux = hidden;
    uint32_t body = c->code->count;
    compile_block(c, &s->then_, "body", &inner);
    uint32_t next = emit(c, VYRE_IN_FOR_NEXT, s);
    if (!c->code->oom) c->code->ins[next].aux = hidden;
    patch(c, next, body);
    uint32_t end = c->code->count;
    patch(c, init, end);
    for (uint32_t i = 0; i < inner.nbreaks; i++) patch(c, inner.breaks[i], end);
    free(inner.breaks);
}

/* Post-order: an op nested in another's operand gets its instruction first, so its
 * result is in place when the outer op's operands are evaluated. Only the ops that
 * exchange values between lanes are hoisted; subgroup_size and subgroup_lane are
 * evaluated in place. Depth is bounded by the validator's expression-depth limit. */
static void hoist(struct compiler *c, const struct vyre_expr *e) {
    if (!e || c->code->oom) return;
    struct vyre_expr *ops[3];
    unsigned n = vyre_expr_operands(e, ops);
    for (unsigned i = 0; i < n; i++) hoist(c, ops[i]);
    if (e->kind != VYRE_EX_SUBGROUP || !vyre_subgroup_communicates(e->u.op.sg)) return;
    struct vyre_code *code = c->code;
    if (!code->sg_slot) {
        code->nids = c->p->next_id;
        code->sg_slot = malloc((code->nids ? code->nids : 1) * sizeof *code->sg_slot);
        if (!code->sg_slot) {
            code->oom = true;
            return;
        }
        for (uint32_t i = 0; i < code->nids; i++) code->sg_slot[i] = UINT32_MAX;
    }
    if (e->id >= code->nids) return; /* ids are below next_id; a corrupt node reads 0 */
    /* A node shared by several statements (a DAG built through the C builder) keeps
     * one slot: each use recomputes it right before its own statement. */
    if (code->sg_slot[e->id] == UINT32_MAX) {
        code->sg_slot[e->id] = code->nslots;
        code->nslots += 2;
    }
    size_t base = strlen(c->path);
    snprintf(c->path + base, sizeof c->path - base, " (%s)", vyre_subgroup_name(e->u.op.sg));
    uint32_t at = emit(c, VYRE_IN_SUBGROUP, NULL);
    uint32_t idx = add_barrier_path(c);
    c->path[base] = '\0';
    if (code->oom) return;
    code->ins[at].aux = idx;
    code->ins[at].e = e;
    code->ins[at].slot = code->sg_slot[e->id];
}

static void compile_stmt(struct compiler *c, const struct vyre_stmt *s, struct loop_ctx *loop) {
    /* Every operand a statement's instruction evaluates (for bounds: once, before the
     * loop) is evaluated after the hoisted subgroup ops it contains. */
    const struct vyre_expr *operands[] = {s->cond,  s->from,     s->to,   s->step,
                                          s->index, s->expected, s->value};
    for (size_t i = 0; i < sizeof operands / sizeof operands[0]; i++) hoist(c, operands[i]);
    switch (s->kind) {
    case VYRE_ST_LET:
    case VYRE_ST_SET: emit(c, VYRE_IN_ASSIGN, s); break;
    case VYRE_ST_STORE: emit(c, VYRE_IN_STORE, s); break;
    case VYRE_ST_ATOMIC: emit(c, VYRE_IN_ATOMIC, s); break;
    case VYRE_ST_PUSH: emit(c, VYRE_IN_PUSH, s); break;
    case VYRE_ST_IF: {
        uint32_t jf = emit(c, VYRE_IN_JUMP_IF_NOT, s);
        compile_block(c, &s->then_, "then", loop);
        if (s->else_.count > 0) {
            uint32_t jend = emit(c, VYRE_IN_JUMP, s);
            patch(c, jf, c->code->count);
            compile_block(c, &s->else_, "else", loop);
            patch(c, jend, c->code->count);
        } else {
            patch(c, jf, c->code->count);
        }
        break;
    }
    case VYRE_ST_FOR: compile_for(c, s); break;
    case VYRE_ST_BREAK: add_break(c, loop, emit(c, VYRE_IN_JUMP, s)); break;
    case VYRE_ST_RETURN: emit(c, VYRE_IN_RETURN, s); break;
    case VYRE_ST_BARRIER: {
        uint32_t at = emit(c, VYRE_IN_BARRIER, s);
        uint32_t idx = add_barrier_path(c);
        if (!c->code->oom) c->code->ins[at].aux = idx;
        break;
    }
    case VYRE_ST_GRID_BARRIER:
    case VYRE_ST_CONVERGE: break; /* grid statements: sections.c runs them, never a lane */
    }
}

/* Node paths follow the validator's spelling: body[2].then[0], for bodies as .body[i]. */
static void compile_block(struct compiler *c, const struct vyre_block *b, const char *field,
                          struct loop_ctx *loop) {
    size_t base = strlen(c->path);
    for (uint32_t i = 0; i < b->count && !c->code->oom; i++) {
        snprintf(c->path + base, sizeof c->path - base, "%s%s[%u]", base ? "." : "", field, i);
        compile_stmt(c, b->items[i], loop);
        c->path[base] = '\0';
    }
}

bool vyre_interp_compile(const vyre_program *p, struct vyre_code *code) {
    return vyre_interp_compile_range(p, &p->body, 0, p->body.count, "", "body", code);
}

bool vyre_interp_compile_range(const vyre_program *p, const struct vyre_block *b, uint32_t first,
                               uint32_t count, const char *base, const char *field,
                               struct vyre_code *code) {
    struct compiler c;
    memset(code, 0, sizeof *code);
    c.p = p;
    c.code = code;
    snprintf(c.path, sizeof c.path, "%s", base);
    code->nslots = p->nslots;
    size_t len = strlen(c.path);
    for (uint32_t i = first; i < first + count && !code->oom; i++) {
        snprintf(c.path + len, sizeof c.path - len, "%s%s[%u]", len ? "." : "", field, i);
        compile_stmt(&c, b->items[i], NULL);
        c.path[len] = '\0';
    }
    emit(&c, VYRE_IN_RETURN, NULL); /* falling off the end returns */
    return !code->oom;
}

void vyre_interp_code_free(struct vyre_code *code) {
    if (!code) return;
    free(code->sg_slot);
    for (uint32_t i = 0; i < code->nbarriers; i++) free(code->barrier_paths[i]);
    free(code->barrier_paths);
    free(code->ins);
    memset(code, 0, sizeof *code);
}

/* ---- the run guard: step budget and interrupts ---------------------------------- */

/* Lock-free on every target we build for, so the bump is async-signal-safe. */
static _Atomic unsigned interrupt_generation;

void vyre_ref_interrupt(void) {
    atomic_fetch_add_explicit(&interrupt_generation, 1u, memory_order_relaxed);
}

unsigned vyre_interp_generation(void) {
    return atomic_load_explicit(&interrupt_generation, memory_order_relaxed);
}

static uint64_t step_limit(const struct vyre_ref_run_options *o) {
    if (o->max_steps) return o->max_steps;
    const char *env = getenv("VYRE_REF_MAX_STEPS");
    if (env && *env) {
        char *end;
        unsigned long long v = strtoull(env, &end, 10);
        if (*end == 0 && v > 0) return v;
    }
    return VYRE_REF_DEFAULT_MAX_STEPS;
}

static enum vyre_status stop_error(const struct vyre_exec *x, struct vyre_error *err) {
    if (x->budget->stop == VYRE_STOP_INTERRUPT) {
        vyre_error_set(err, VYRE_ERR_RUNTIME,
                       "program '%s' was interrupted (vyre_ref_interrupt, e.g. Ctrl-C, or "
                       "vyre_ref_run_options.interrupt) "
                       "in workgroup (%u,%u,%u); buffers hold a partial result. Fix: "
                       "run it again, or with smaller sizes or fewer loop iterations",
                       x->p->name, x->wgid[0], x->wgid[1], x->wgid[2]);
        /* marks the stop as the interrupt's, for a SIGINT guard (lrefguard.c) */
        if (err) snprintf(err->call, sizeof err->call, "vyre_ref_interrupt");
        return VYRE_ERR_RUNTIME;
    }
    return vyre_error_set(err, VYRE_ERR_RUNTIME,
                          "program '%s' stopped after %llu steps (loop iterations and "
                          "invocations), the reference interpreter's step budget, in workgroup (%u,%u,%u); buffers hold a "
                          "partial result. Fix: check the loop bounds; if the work is meant to "
                          "be this long, raise the budget (VYRE_REF_MAX_STEPS, "
                          "vyre.reference.new{max_steps = n}, or vyre_ref_run_options.max_steps)",
                          x->p->name, (unsigned long long)x->budget->limit, x->wgid[0], x->wgid[1],
                          x->wgid[2]);
}

/* ---- workgroup scheduling ---------------------------------------------------- */

static const char barrier_fix[] =
    "Fix: every invocation of a workgroup must reach the same barriers in the same "
    "order; keep returns, conditions and loop bounds around a barrier uniform (not "
    "depending on gid, lid, loads or atomic results).";

static enum vyre_status barrier_error(const struct vyre_exec *x, const struct vyre_lane *lanes,
                                      uint32_t nlanes, uint32_t waiting, uint32_t done,
                                      struct vyre_error *err) {
    const struct vyre_code *code = x->code;
    const struct vyre_ins *first = NULL, *other = NULL;
    uint32_t nfirst = 0;
    for (uint32_t i = 0; i < nlanes; i++) {
        if (lanes[i].state != VYRE_LANE_BARRIER) continue;
        const struct vyre_ins *in = &code->ins[lanes[i].pc];
        if (!first) first = in;
        if (in == first) nfirst++;
        else if (!other) other = in;
    }
    if (!first) return VYRE_OK;
    const char *path = code->barrier_paths[first->aux];
    if (other)
        return vyre_error_set(err, VYRE_ERR_RUNTIME,
                              "program '%s': invocations of workgroup (%u,%u,%u) wait at "
                              "different barriers: %u of %u at %s and others at %s. %s",
                              x->p->name, x->wgid[0], x->wgid[1], x->wgid[2], nfirst, nlanes, path,
                              code->barrier_paths[other->aux], barrier_fix);
    return vyre_error_set(err, VYRE_ERR_RUNTIME,
                          "program '%s': barrier at %s reached by %u of %u invocations of "
                          "workgroup (%u,%u,%u); the other %u returned without reaching it. %s",
                          x->p->name, path, waiting, nlanes, x->wgid[0], x->wgid[1], x->wgid[2],
                          done, barrier_fix);
}

enum vyre_status vyre_interp_workgroup(const struct vyre_exec *x, struct vyre_lane *lanes,
                                       uint32_t nlanes, struct vyre_error *err) {
    for (;;) {
        uint32_t waiting = 0, done = 0;
        for (uint32_t i = 0; i < nlanes; i++) {
            if (lanes[i].state == VYRE_LANE_RUNNING) vyre_interp_run_lane(x, &lanes[i]);
            if (lanes[i].state == VYRE_LANE_DONE) done++;
            else waiting++;
        }
        if (x->budget->stop) return stop_error(x, err);
        if (waiting == 0) return VYRE_OK;
        if (done > 0) return barrier_error(x, lanes, nlanes, waiting, done, err);
        uint32_t pc = lanes[0].pc;
        for (uint32_t i = 1; i < nlanes; i++)
            if (lanes[i].pc != pc) return barrier_error(x, lanes, nlanes, waiting, done, err);
        if (x->code->ins[pc].kind == VYRE_IN_SUBGROUP)
            vyre_interp_subgroup_release(lanes, nlanes, &x->code->ins[pc]);
        else if (x->race)
            vyre_race_barrier(x->race);
        for (uint32_t i = 0; i < nlanes; i++) {
            lanes[i].pc++;
            lanes[i].state = VYRE_LANE_RUNNING;
        }
    }
}

/* ---- argument checks ------------------------------------------------------------ */

static enum vyre_status check_args(const vyre_program *p, const struct vyre_run_args *args,
                                   struct vyre_worklist_arg *const *wl, size_t nwl,
                                   struct vyre_error *err) {
    if (args->nbuffers != p->nbuffers)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "program '%s' declares %u buffer(s) but %zu were bound. Fix: bind "
                              "one vyre_buffer_arg per `buffer` declaration, in order.",
                              p->name, p->nbuffers, args->nbuffers);
    if (args->nparams != p->nparams)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "program '%s' declares %u param(s) but %zu values were given. Fix: "
                              "pass one value per `param` declaration, in order.",
                              p->name, p->nparams, args->nparams);
    if (nwl != p->nworklists || (nwl && !wl))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "program '%s' declares %u worklist(s) but %zu were bound. Fix: "
                              "bind one vyre_worklist_arg per `worklist` declaration, in order.",
                              p->name, p->nworklists, nwl);
    for (uint32_t w = 0; w < nwl; w++) {
        const struct vyre_worklist_arg *a = wl[w];
        if (!a)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "worklist %u of program '%s' is NULL. Fix: bind every "
                                  "worklist declaration.",
                                  w, p->name);
        if ((a->capacity && (!a->cur || !a->next)) || a->cur_count > a->capacity)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "worklist %u of program '%s' has %u current items for "
                                  "capacity %u (or no item arrays). Fix: give cur and next "
                                  "arrays of `capacity` elements and cur_count <= capacity.",
                                  w, p->name, a->cur_count, a->capacity);
    }
    if ((args->nbuffers && !args->buffers) || (args->nparams && !args->params))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_ref_run: buffer or param array is NULL while its count is "
                              "not zero. Fix: pass the arrays.");
    for (uint32_t d = 0; d < p->ndecls; d++) {
        const struct vyre_decl *decl = &p->decls[d];
        if (decl->kind != VYRE_DECL_BUFFER) continue;
        const struct vyre_buffer_arg *b = &args->buffers[decl->slot];
        if (b->count > UINT32_MAX)
            return vyre_error_set(err, VYRE_ERR_LIMIT,
                                  "buffer '%s' has %llu elements; buffers hold at most "
                                  "4294967295 (element counts are u32). Fix: split the data.",
                                  decl->name, (unsigned long long)b->count);
        if (b->count > 0 && !b->data)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "buffer '%s' is bound with %llu elements but no data. Fix: "
                                  "pass a data pointer, or a count of 0.",
                                  decl->name, (unsigned long long)b->count);
        if (decl->nonempty && b->count == 0)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "buffer '%s' is bound with 0 elements, but it is the flag of "
                                  "a converge loop, which reads and writes element 0. Fix: bind "
                                  "a buffer of at least 1 element (e.g. declare it "
                                  "(buffer %s u32 read_write 1)).",
                                  decl->name, decl->name);
        if (decl->count != 0 && b->count != decl->count)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "buffer '%s' is declared with %u elements but %llu were "
                                  "bound. Fix: bind exactly %u elements, or declare the buffer "
                                  "without a count.",
                                  decl->name, decl->count, (unsigned long long)b->count,
                                  decl->count);
    }
    const uint32_t *g = args->grid;
    if (g[0] == 0 || g[1] == 0 || g[2] == 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "grid {%u, %u, %u} has an axis with 0 workgroups. Fix: every grid "
                              "axis must be at least 1 (vyre_launch_grid computes one).",
                              g[0], g[1], g[2]);
    if (g[0] > GRID_MAX_X || g[1] > GRID_MAX_YZ || g[2] > GRID_MAX_YZ)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "grid {%u, %u, %u} exceeds the launch limits (x <= 2147483647, "
                              "y and z <= 65535). Fix: shrink the grid or use several launches.",
                              g[0], g[1], g[2]);
    return VYRE_OK;
}

/* ---- running ---------------------------------------------------------------------- */

struct run_state {
    struct vyre_code code;
    struct vyre_code *codes; /* per section (programs with grid statements) */
    struct vyre_section *sections;
    uint32_t nsections;
    struct vyre_mem *mem;
    vyre_bits *param_bits;
    unsigned char *shared;
    struct vyre_lane *lanes;
    vyre_bits *slots;
};

static void run_state_free(struct run_state *st) {
    vyre_interp_code_free(&st->code);
    for (uint32_t i = 0; st->codes && i < st->nsections; i++) vyre_interp_code_free(&st->codes[i]);
    free(st->codes);
    free(st->sections);
    free(st->mem);
    free(st->param_bits);
    free(st->shared);
    free(st->lanes);
    free(st->slots);
}

/* Binds buffers, params and shared storage by declaration index. */
static bool setup_memory(const vyre_program *p, const struct vyre_run_args *args,
                         struct vyre_worklist_arg *const *wl, struct vyre_oob_count *oob,
                         struct run_state *st, size_t *shared_bytes) {
    size_t nd = p->ndecls ? p->ndecls : 1;
    st->mem = calloc(nd, sizeof *st->mem);
    st->param_bits = calloc(nd, sizeof *st->param_bits);
    if (!st->mem || !st->param_bits) return false;
    size_t total = 0;
    for (uint32_t d = 0; d < p->ndecls; d++) {
        const struct vyre_decl *decl = &p->decls[d];
        if (decl->kind != VYRE_DECL_SHARED) continue;
        total = (total + 7u) & ~(size_t)7u; /* keep 8-byte elements aligned */
        total += (size_t)decl->count * vyre_type_size(decl->type);
    }
    *shared_bytes = total;
    st->shared = calloc(total ? total : 1, 1);
    if (!st->shared) return false;
    size_t off = 0;
    for (uint32_t d = 0; d < p->ndecls; d++) {
        const struct vyre_decl *decl = &p->decls[d];
        struct vyre_mem *m = &st->mem[d];
        m->type = decl->type;
        m->size = (uint32_t)vyre_type_size(decl->type);
        m->oob = oob ? &oob[d] : NULL;
        if (decl->kind == VYRE_DECL_BUFFER) {
            m->data = args->buffers[decl->slot].data;
            m->count = args->buffers[decl->slot].count;
        } else if (decl->kind == VYRE_DECL_WORKLIST) {
            m->wl = wl[decl->slot];
            m->data = m->wl->cur;
            m->count = m->wl->cur_count;
        } else if (decl->kind == VYRE_DECL_SHARED) {
            off = (off + 7u) & ~(size_t)7u;
            m->data = st->shared + off;
            m->count = decl->count;
            off += (size_t)decl->count * m->size;
        } else {
            st->param_bits[d] = vyre_sem_from_memory(decl->type, args->params[decl->slot]);
        }
    }
    return true;
}

/* Each invocation takes one step of the run's budget before its workgroup runs, and
 * interrupts are seen between workgroups: a loop-free program over a huge grid has no
 * back edge to count, and would otherwise ignore both the budget and Ctrl-C. */
static enum vyre_status charge_workgroup(struct vyre_exec *x, uint32_t nlanes,
                                         struct vyre_error *err) {
    struct vyre_budget *b = x->budget;
    if (vyre_interp_generation() != b->generation) b->stop = VYRE_STOP_INTERRUPT;
    else if (b->left <= nlanes) b->stop = VYRE_STOP_STEPS;
    else {
        b->left -= nlanes;
        return VYRE_OK;
    }
    b->left = 1;
    return stop_error(x, err);
}

/* Every workgroup of the grid runs `code` (x fastest, then y, z), each starting with
 * zeroed shared memory and slots; `init` (p->nslots values, may be NULL) seeds the
 * program's slots: the grid loop variables of a section. */
static enum vyre_status run_pass(struct run_state *st, struct vyre_exec *x,
                                 const struct vyre_code *code, size_t shared_bytes, size_t nslots,
                                 const vyre_bits *init, const uint32_t grid[3],
                                 struct vyre_error *err) {
    const vyre_program *p = x->p;
    const uint32_t *wg = p->workgroup;
    uint32_t nlanes = wg[0] * wg[1] * wg[2];
    enum vyre_status status = VYRE_OK;
    x->code = code;
    for (uint32_t gz = 0; gz < grid[2] && status == VYRE_OK; gz++) {
        for (uint32_t gy = 0; gy < grid[1] && status == VYRE_OK; gy++) {
            for (uint32_t gx = 0; gx < grid[0] && status == VYRE_OK; gx++) {
                x->wgid[0] = gx;
                x->wgid[1] = gy;
                x->wgid[2] = gz;
                if ((status = charge_workgroup(x, nlanes, err)) != VYRE_OK) break;
                if (shared_bytes) memset(st->shared, 0, shared_bytes);
                if (x->race) vyre_race_workgroup(x->race);
                memset(st->slots, 0, (size_t)nlanes * nslots * sizeof *st->slots);
                uint32_t l = 0;
                for (uint32_t lz = 0; lz < wg[2]; lz++)
                    for (uint32_t ly = 0; ly < wg[1]; ly++)
                        for (uint32_t lx = 0; lx < wg[0]; lx++, l++) {
                            struct vyre_lane *lane = &st->lanes[l];
                            lane->pc = 0;
                            lane->state = VYRE_LANE_RUNNING;
                            lane->lid[0] = lx;
                            lane->lid[1] = ly;
                            lane->lid[2] = lz;
                            /* gid = wgid * wgsize + lid, wrapping in u32 */
                            for (unsigned a = 0; a < 3; a++)
                                lane->gid[a] = x->wgid[a] * wg[a] + lane->lid[a];
                            lane->slots = st->slots + (size_t)l * nslots;
                            if (init && p->nslots)
                                memcpy(lane->slots, init, p->nslots * sizeof *init);
                        }
                status = vyre_interp_workgroup(x, st->lanes, nlanes, err);
            }
        }
    }
    return status;
}

/* The grid-level runner's callbacks (sections.h) on the interpreter. */
struct ref_grid {
    struct run_state *st;
    struct vyre_exec *x;
    size_t shared_bytes, nslots;
    const uint32_t *grid;
};

static enum vyre_status ref_section(void *ud, uint32_t index, const vyre_bits *slots,
                                    struct vyre_error *err) {
    struct ref_grid *g = ud;
    if (g->x->race) vyre_race_section(g->x->race);
    return run_pass(g->st, g->x, &g->st->codes[index], g->shared_bytes, g->nslots, slots, g->grid,
                    err);
}

static enum vyre_status ref_flag_zero(void *ud, uint32_t decl, struct vyre_error *err) {
    (void)err;
    struct ref_grid *g = ud;
    memset(g->x->mem[decl].data, 0, 4); /* u32, i32 or bool: one 32-bit word */
    return VYRE_OK;
}

static enum vyre_status ref_flag_read(void *ud, uint32_t decl, bool *set, struct vyre_error *err) {
    (void)err;
    struct ref_grid *g = ud;
    uint32_t w;
    memcpy(&w, g->x->mem[decl].data, sizeof w);
    *set = w != 0;
    return VYRE_OK;
}

/* The end of a converge round on a worklist (sections.h): advance it in place (the
 * binding's own state: the caller sees the rounds' result), and every declaration
 * bound to it reads the new current items. */
static enum vyre_status ref_wl_round(void *ud, uint32_t decl, bool *more, struct vyre_error *err) {
    (void)err;
    struct ref_grid *g = ud;
    struct vyre_worklist_arg *w = g->x->mem[decl].wl;
    *more = false;
    if (w->overflow_needed) return VYRE_OK;
    void *c = w->cur;
    w->cur = w->next;
    w->next = c;
    w->cur_count = w->next_count < w->capacity ? w->next_count : w->capacity;
    w->next_count = 0;
    const vyre_program *p = g->x->p;
    for (uint32_t d = 0; d < p->ndecls; d++) {
        if (p->decls[d].kind != VYRE_DECL_WORKLIST || g->x->mem[d].wl != w) continue;
        g->x->mem[d].data = w->cur;
        g->x->mem[d].count = w->cur_count;
    }
    *more = w->cur_count > 0;
    return VYRE_OK;
}

/* A grid-level loop iteration or converge round takes one step of the run's budget, as
 * a loop iteration inside a section does, and sees interrupts: a grid loop whose
 * sections hold no loop of their own would otherwise never stop. */
static enum vyre_status ref_tick(void *ud, struct vyre_error *err) {
    struct ref_grid *g = ud;
    struct vyre_budget *b = g->x->budget;
    if (--b->left == 0 || vyre_interp_stopped(b)) {
        b->stop = b->left == 0 ? VYRE_STOP_STEPS : VYRE_STOP_INTERRUPT;
        b->left = 1;
        return stop_error(g->x, err);
    }
    return VYRE_OK;
}

/* Compiles every section of p (which has grid statements) into st->codes; returns the
 * most slots any section's code needs, 0 when memory ran out. */
static size_t compile_sections(const vyre_program *p, struct run_state *st) {
    if (!vyre_sections(p, &st->sections, &st->nsections)) return 0;
    st->codes = calloc(st->nsections ? st->nsections : 1u, sizeof *st->codes);
    if (!st->codes) return 0;
    size_t most = 1;
    for (uint32_t i = 0; i < st->nsections; i++) {
        const struct vyre_section *s = &st->sections[i];
        if (!vyre_interp_compile_range(p, s->block, s->first, s->count, s->base, s->field,
                                       &st->codes[i]))
            return 0;
        if (st->codes[i].nslots > most) most = st->codes[i].nslots;
    }
    return most;
}

enum vyre_status vyre_ref_run(vyre_program *p, const struct vyre_run_args *args,
                              const struct vyre_ref_run_options *o, struct vyre_error *err) {
    static const struct vyre_ref_run_options none;
    if (!o) o = &none;
    uint64_t *rounds = o->rounds;
    struct vyre_oob_count *oob = o->oob;
    struct vyre_worklist_arg *const *wl = o->worklists;
    size_t nwl = o->nworklists;
    if (rounds) *rounds = 0;
    if (!p || !args)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_ref_run: program and arguments must not be NULL. Fix: pass "
                              "both.");
    enum vyre_status st_valid = vyre_ensure_valid(p, err);
    if (st_valid != VYRE_OK) return st_valid;
    enum vyre_status status = check_args(p, args, wl, nwl, err);
    if (status != VYRE_OK) return status;

    struct run_state st;
    memset(&st, 0, sizeof st);
    size_t shared_bytes = 0, nslots = 1;
    uint32_t nlanes = p->workgroup[0] * p->workgroup[1] * p->workgroup[2];
    bool compiled =
        p->has_grid ? (nslots = compile_sections(p, &st)) > 0 : vyre_interp_compile(p, &st.code);
    if (!p->has_grid) nslots = st.code.nslots ? st.code.nslots : 1;
    if (!compiled || !setup_memory(p, args, wl, oob, &st, &shared_bytes)) {
        run_state_free(&st);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "vyre_ref_run: out of memory preparing program '%s'. Fix: free "
                              "memory or run a smaller program.",
                              p->name);
    }
    st.lanes = calloc(nlanes, sizeof *st.lanes);
    st.slots = calloc((size_t)nlanes * nslots, sizeof *st.slots);
    if (!st.lanes || !st.slots) {
        run_state_free(&st);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "vyre_ref_run: out of memory for %u invocations of '%s'. Fix: "
                              "free memory.",
                              nlanes, p->name);
    }

    struct vyre_exec x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.mem = st.mem;
    x.param_bits = st.param_bits;
    if (o->races) {
        o->races->count = 0;
        o->races->first[0] = 0;
        if (!(x.race = vyre_race_new(p, st.mem, o->races))) {
            run_state_free(&st);
            return vyre_error_set(err, VYRE_ERR_NOMEM,
                                  "vyre_ref_run: out of memory for the race check of '%s'. Fix: "
                                  "run smaller buffers with the check.",
                                  p->name);
        }
    }
    struct vyre_budget budget = {0, 0, vyre_interp_generation(), 0, o->interrupt};
    budget.left = budget.limit = step_limit(o);
    x.budget = &budget;
    for (unsigned a = 0; a < 3; a++) {
        x.wgsize[a] = p->workgroup[a];
        x.ngroups[a] = args->grid[a];
    }
    if (!p->has_grid) {
        status = run_pass(&st, &x, &st.code, shared_bytes, nslots, NULL, args->grid, err);
    } else {
        uint64_t *counts = calloc(p->ndecls ? p->ndecls : 1u, sizeof *counts);
        if (!counts) {
            status = vyre_error_set(err, VYRE_ERR_NOMEM,
                                    "vyre_ref_run: out of memory. Fix: free memory.");
        } else {
            for (uint32_t d = 0; d < p->ndecls; d++) counts[d] = st.mem[d].count;
            struct vyre_grid_env env = {p, st.param_bits, counts, {0, 0, 0}, {0, 0, 0}};
            memcpy(env.wgsize, x.wgsize, sizeof env.wgsize);
            memcpy(env.ngroups, x.ngroups, sizeof env.ngroups);
            struct ref_grid g = {&st, &x, shared_bytes, nslots, args->grid};
            struct vyre_grid_ops ops = {&g,   ref_section, ref_flag_zero, ref_flag_read, NULL,
                                        NULL, NULL,        ref_wl_round,  ref_tick};
            status = vyre_grid_run(&env, st.sections, st.nsections, &ops, rounds, err);
            free(counts);
        }
    }
    vyre_race_free(x.race);
    run_state_free(&st);
    return status;
}
