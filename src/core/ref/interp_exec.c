/* interp_exec.c — the inner loop of the reference interpreter: evaluating expressions
 * and running one invocation over the flat instruction list built by interp.c.
 * Expressions contain no barriers (subgroup ops that exchange values are hoisted
 * into instructions of their own), so they are evaluated recursively (depth is bounded
 * by the validator's expression-depth limit); statements are a program counter. */
#include "interp.h"

#include <string.h>

#include "sem.h"

/* ---- memory --------------------------------------------------------------- */

/* Index expressions are u32, or i32 reinterpreted as unsigned (§2). */
static uint64_t index_of(vyre_bits b) { return b & UINT64_C(0xFFFFFFFF); }

static vyre_bits mem_read(const struct vyre_mem *m, uint64_t i) {
    const unsigned char *at = m->data + i * m->size;
    if (m->size == 4) {
        uint32_t w;
        memcpy(&w, at, sizeof w);
        return vyre_sem_from_memory(m->type, w);
    }
    uint64_t d;
    memcpy(&d, at, sizeof d);
    return d;
}

static void mem_write(const struct vyre_mem *m, uint64_t i, vyre_bits v) {
    unsigned char *at = m->data + i * m->size;
    if (m->size == 4) {
        uint32_t w = (uint32_t)(v & UINT64_C(0xFFFFFFFF));
        memcpy(at, &w, sizeof w);
    } else {
        memcpy(at, &v, sizeof v);
    }
}

/* ---- expressions ---------------------------------------------------------- */

static vyre_bits builtin(const struct vyre_exec *x, const struct vyre_lane *lane,
                         const struct vyre_expr *e) {
    unsigned a = e->u.builtin.axis < 3 ? e->u.builtin.axis : 0;
    switch (e->u.builtin.which) {
    case VYRE_GID: return lane->gid[a];
    case VYRE_LID: return lane->lid[a];
    case VYRE_WGID: return x->wgid[a];
    case VYRE_WGSIZE: return x->wgsize[a];
    case VYRE_NGROUPS: return x->ngroups[a];
    default: return 0;
    }
}

static vyre_bits eval(const struct vyre_exec *x, const struct vyre_lane *lane,
                      const struct vyre_expr *e) {
    switch (e->kind) {
    case VYRE_EX_LIT: return e->u.lit.bits;
    case VYRE_EX_NAME:
        if (e->u.name.ref == VYRE_REF_PARAM) return x->param_bits[e->u.name.index];
        return lane->slots[e->u.name.index];
    case VYRE_EX_BUILTIN: return builtin(x, lane, e);
    case VYRE_EX_LOAD: {
        const struct vyre_mem *m = &x->mem[e->u.access.decl];
        uint64_t i = index_of(eval(x, lane, e->u.access.index));
        if (x->race && i < m->count) vyre_race_note(x, lane, e->u.access.decl, i, VYRE_RACE_READ);
        if (i < m->count) return mem_read(m, i);
        if (m->oob) m->oob->loads++; /* debug mode */
        return 0;                    /* out of bounds: typed zero */
    }
    case VYRE_EX_LEN: return x->mem[e->u.access.decl].count;
    case VYRE_EX_UNARY:
        return vyre_sem_unary(e->u.op.op, e->u.op.a[0]->type, eval(x, lane, e->u.op.a[0]));
    case VYRE_EX_BINARY: {
        vyre_bits a = eval(x, lane, e->u.op.a[0]);
        vyre_bits b = eval(x, lane, e->u.op.a[1]);
        return vyre_sem_binary(e->u.op.op, e->u.op.a[0]->type, a, b);
    }
    case VYRE_EX_SELECT: {
        /* both arms are evaluated (§2); they have no side effects either way */
        vyre_bits c = eval(x, lane, e->u.op.a[0]);
        vyre_bits a = eval(x, lane, e->u.op.a[1]);
        vyre_bits b = eval(x, lane, e->u.op.a[2]);
        return c ? a : b;
    }
    case VYRE_EX_CAST:
        return vyre_sem_cast(e->u.op.to, e->u.op.a[0]->type, eval(x, lane, e->u.op.a[0]));
    case VYRE_EX_BITCAST:
        return vyre_sem_bitcast(e->u.op.to, e->u.op.a[0]->type, eval(x, lane, e->u.op.a[0]));
    case VYRE_EX_FMA: {
        vyre_bits a = eval(x, lane, e->u.op.a[0]);
        vyre_bits b = eval(x, lane, e->u.op.a[1]);
        vyre_bits c = eval(x, lane, e->u.op.a[2]);
        return vyre_sem_fma(e->type, a, b, c);
    }
    case VYRE_EX_SUBGROUP: return vyre_interp_subgroup_value(x, lane, e);
    }
    return 0;
}

vyre_bits vyre_interp_eval(const struct vyre_exec *x, const struct vyre_lane *lane,
                           const struct vyre_expr *e) {
    return eval(x, lane, e);
}

/* ---- statements ------------------------------------------------------------ */

static void exec_store(const struct vyre_exec *x, const struct vyre_lane *lane,
                       const struct vyre_stmt *s) {
    const struct vyre_mem *m = &x->mem[s->decl];
    uint64_t i = index_of(eval(x, lane, s->index));
    vyre_bits v = eval(x, lane, s->value);
    if (x->race && i < m->count) vyre_race_note(x, lane, s->decl, i, VYRE_RACE_WRITE);
    if (i < m->count) mem_write(m, i, v);
    else if (m->oob) /* out of bounds: dropped (debug mode: counted) */ m->oob->stores++;
}

/* (push W v): items are appended in the order the interpreter runs invocations; the
 * GPU's order differs (a round's items are a multiset, §3). Past the capacity the item
 * is not stored, and overflow_needed records the count the round needs. */
static void exec_push(const struct vyre_exec *x, const struct vyre_lane *lane,
                      const struct vyre_stmt *s) {
    const struct vyre_mem *m = &x->mem[s->decl];
    struct vyre_worklist_arg *w = m->wl;
    vyre_bits v = eval(x, lane, s->value);
    uint32_t n = w->next_count;
    if (n < w->capacity) {
        struct vyre_mem next = *m;
        next.data = w->next;
        mem_write(&next, n, v);
    } else if (n != UINT32_MAX && n + 1u > w->overflow_needed) {
        w->overflow_needed = n + 1u;
    }
    if (n != UINT32_MAX) w->next_count = n + 1u;
}

/* Atomics run one at a time in this interpreter, so "atomic" is simply read, compute,
 * write. Out of bounds: no effect, the old value reads as zero. */
static void exec_atomic(const struct vyre_exec *x, struct vyre_lane *lane,
                        const struct vyre_stmt *s) {
    const struct vyre_mem *m = &x->mem[s->decl];
    uint64_t i = index_of(eval(x, lane, s->index));
    vyre_bits expected = s->expected ? eval(x, lane, s->expected) : 0;
    vyre_bits v = eval(x, lane, s->value);
    vyre_bits old = 0;
    if (x->race && i < m->count) vyre_race_note(x, lane, s->decl, i, VYRE_RACE_ATOMIC);
    if (i < m->count) {
        old = mem_read(m, i);
        mem_write(m, i, vyre_sem_atomic(s->atomic, m->type, old, v, expected));
    } else if (m->oob) {
        m->oob->stores++;
    }
    if (s->name) lane->slots[s->slot] = old;
}

static bool positive_step(enum vyre_type t, vyre_bits step) {
    if (step == 0) return false;
    if (t == VYRE_I32) return (step & UINT64_C(0x80000000)) == 0;
    if (t == VYRE_I64) return (step & UINT64_C(0x8000000000000000)) == 0;
    return true;
}

static bool loop_less(enum vyre_type t, vyre_bits a, vyre_bits b) {
    return vyre_sem_binary(VYRE_OP_LT, t, a, b) != 0;
}

static void exec_for_init(const struct vyre_exec *x, struct vyre_lane *lane,
                          const struct vyre_ins *in) {
    const struct vyre_stmt *s = in->s;
    enum vyre_type t = s->from->type;
    vyre_bits from = eval(x, lane, s->from);
    vyre_bits to = eval(x, lane, s->to);
    vyre_bits step = eval(x, lane, s->step);
    lane->slots[s->slot] = from;
    lane->slots[in->aux] = to;
    lane->slots[in->aux + 1] = step;
    if (!positive_step(t, step) || !loop_less(t, from, to)) lane->pc = in->target;
    else lane->pc++;
}

/* Advances the loop variable; the loop ends when it reaches `to` or when adding the
 * step would wrap around (so every loop terminates). */
static void exec_for_next(struct vyre_lane *lane, const struct vyre_ins *in) {
    const struct vyre_stmt *s = in->s;
    enum vyre_type t = s->from->type;
    vyre_bits var = lane->slots[s->slot];
    vyre_bits to = lane->slots[in->aux];
    vyre_bits step = lane->slots[in->aux + 1];
    vyre_bits next = vyre_sem_binary(VYRE_OP_ADD, t, var, step);
    /* step > 0, so a wrapped sum is exactly one that compares below the old value */
    if (!loop_less(t, next, var) && loop_less(t, next, to)) {
        lane->slots[s->slot] = next;
        lane->pc = in->target;
    } else {
        lane->pc++;
    }
}

void vyre_interp_run_lane(const struct vyre_exec *x, struct vyre_lane *lane) {
    const struct vyre_ins *code = x->code->ins;
    for (;;) {
        const struct vyre_ins *in = &code[lane->pc];
        const struct vyre_stmt *s = in->s;
        switch (in->kind) {
        case VYRE_IN_ASSIGN:
            lane->slots[s->slot] = eval(x, lane, s->value);
            lane->pc++;
            break;
        case VYRE_IN_STORE:
            exec_store(x, lane, s);
            lane->pc++;
            break;
        case VYRE_IN_ATOMIC:
            exec_atomic(x, lane, s);
            lane->pc++;
            break;
        case VYRE_IN_PUSH:
            exec_push(x, lane, s);
            lane->pc++;
            break;
        case VYRE_IN_JUMP_IF_NOT:
            lane->pc = eval(x, lane, s->cond) ? lane->pc + 1 : in->target;
            break;
        case VYRE_IN_JUMP: lane->pc = in->target; break;
        case VYRE_IN_FOR_INIT: exec_for_init(x, lane, in); break;
        case VYRE_IN_FOR_NEXT:
            /* The guard sits on the only backward edge, so a run cannot loop past it. */
            if (--x->budget->left == 0 || vyre_interp_stopped(x->budget)) {
                x->budget->stop = x->budget->left == 0 ? VYRE_STOP_STEPS : VYRE_STOP_INTERRUPT;
                x->budget->left = 1; /* keep the count from wrapping if lanes go on */
                lane->state = VYRE_LANE_DONE;
                return;
            }
            exec_for_next(lane, in);
            break;
        case VYRE_IN_RETURN: lane->state = VYRE_LANE_DONE; return;
        case VYRE_IN_BARRIER: lane->state = VYRE_LANE_BARRIER; return;
        case VYRE_IN_SUBGROUP:
            vyre_interp_subgroup_arrive(x, lane, in);
            lane->state = VYRE_LANE_BARRIER;
            return;
        }
    }
}
