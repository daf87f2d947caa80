/* interp.h — private pieces of the reference interpreter shared by interp.c (argument
 * checks, compilation to a flat instruction list, workgroup scheduling) and
 * interp_exec.c (expression evaluation and running one invocation). */
#ifndef VYRE_INTERP_H
#define VYRE_INTERP_H

#include "ir.h"

/* Flat instructions: structured control flow becomes jumps, so an invocation is just
 * a program counter plus its variable slots and can be parked at a barrier. */
enum vyre_ins_kind {
    VYRE_IN_ASSIGN,      /* slots[s->slot] = eval(s->value)            (let, set) */
    VYRE_IN_STORE,       /* s->buf[s->index] = s->value                          */
    VYRE_IN_ATOMIC,      /* atomic on s->buf; old value into s->slot if bound     */
    VYRE_IN_JUMP_IF_NOT, /* if !eval(s->cond) pc = target                         */
    VYRE_IN_JUMP,        /* pc = target                                          */
    VYRE_IN_FOR_INIT,    /* var = from, hidden[aux] = to, hidden[aux+1] = step;
                            zero iterations -> pc = target (after the loop)       */
    VYRE_IN_FOR_NEXT,    /* var += step unless it would wrap; var < to -> pc = target */
    VYRE_IN_RETURN,      /* the invocation ends                                   */
    VYRE_IN_BARRIER,     /* park until every invocation of the workgroup is here  */
    VYRE_IN_PUSH,        /* append eval(s->value) to worklist s->decl's next items  */
    VYRE_IN_SUBGROUP     /* hidden[slot], hidden[slot+1] = the operands of subgroup op
                            e; park like a barrier; the scheduler then writes e's
                            result into hidden[slot] (interp_subgroup.c)          */
};

struct vyre_ins {
    enum vyre_ins_kind kind;
    uint32_t target;
    uint32_t aux; /* FOR_*: first hidden slot; BARRIER, SUBGROUP: index into barrier paths */
    const struct vyre_stmt *s;
    const struct vyre_expr *e; /* SUBGROUP: the op */
    uint32_t slot;             /* SUBGROUP: its two hidden slots */
};

struct vyre_code {
    struct vyre_ins *ins;
    uint32_t count, cap;
    uint32_t nslots;      /* program slots, two hidden slots per for loop and per subgroup op */
    char **barrier_paths; /* node path of each barrier (and subgroup op), for messages */
    uint32_t nbarriers, barriers_cap;
    /* Subgroup ops are hoisted out of their statement into SUBGROUP instructions that
     * run first; evaluating the op then reads its result slot: sg_slot[e->id] (NULL
     * when the program has none; UINT32_MAX for ids that are no hoisted op). */
    uint32_t *sg_slot;
    uint32_t nids;
    bool oom;
};

/* Memory of one buffer or shared declaration as the running program sees it. */
struct vyre_mem {
    unsigned char *data;
    uint64_t count;
    enum vyre_type type;
    uint32_t size;                /* bytes per element */
    struct vyre_oob_count *oob;   /* debug mode: this declaration's counts, else NULL */
    struct vyre_worklist_arg *wl; /* worklists: the binding (data/count: current items) */
};

struct vyre_race; /* race.c: the race check's shadow memory, NULL when off */

struct vyre_exec {
    struct vyre_race *race;
    const vyre_program *p;
    const struct vyre_code *code;
    struct vyre_mem *mem;  /* per decl index (params unused) */
    vyre_bits *param_bits; /* per decl index (buffers unused), normalised */
    uint32_t wgsize[3], ngroups[3], wgid[3];
    struct vyre_budget *budget; /* loop steps left and interrupts, shared by the run */
};

/* A run's guard: steps left (loop iterations and invocations), the interrupt generation
 * at its start (vyre_ref_interrupt bumps it) and the run's own interrupt flag
 * (options.interrupt). `stop` says why the run was stopped: 0 = not. */
struct vyre_budget {
    uint64_t left, limit;
    unsigned generation;
    int stop;                 /* 0, VYRE_STOP_STEPS or VYRE_STOP_INTERRUPT */
    const volatile int *flag; /* NULL: none */
};
enum { VYRE_STOP_STEPS = 1, VYRE_STOP_INTERRUPT = 2 };

/* The interrupt generation (interp.c); read once per loop iteration. */
VYRE_INTERNAL unsigned vyre_interp_generation(void);
/* true when the run was interrupted: globally (vyre_ref_interrupt) or by its own flag. */
static inline bool vyre_interp_stopped(const struct vyre_budget *b) {
    return vyre_interp_generation() != b->generation || (b->flag && *b->flag);
}

enum vyre_lane_state { VYRE_LANE_RUNNING, VYRE_LANE_BARRIER, VYRE_LANE_DONE };

struct vyre_lane {
    uint32_t pc;
    enum vyre_lane_state state;
    uint32_t lid[3], gid[3];
    vyre_bits *slots;
};

/* The race check (race.c; vyre_ref_run_options.races). Accesses are recorded per
 * element with the invocation, the workgroup run, the barrier epoch and the grid
 * section; two of one element race unless one invocation made both, a barrier of their
 * workgroup lies between them, or a grid section boundary does. */
enum vyre_race_access { VYRE_RACE_READ, VYRE_RACE_WRITE, VYRE_RACE_ATOMIC };
VYRE_INTERNAL struct vyre_race *vyre_race_new(const vyre_program *p, const struct vyre_mem *mem,
                                              struct vyre_race_report *report);
VYRE_INTERNAL void vyre_race_free(struct vyre_race *r);
VYRE_INTERNAL void vyre_race_note(const struct vyre_exec *x, const struct vyre_lane *lane,
                                  uint32_t decl, uint64_t index, enum vyre_race_access a);
VYRE_INTERNAL void vyre_race_workgroup(struct vyre_race *r); /* a workgroup starts */
VYRE_INTERNAL void vyre_race_barrier(struct vyre_race *r);   /* its lanes pass a barrier */
VYRE_INTERNAL void vyre_race_section(struct vyre_race *r);   /* a grid section starts */

/* Runs one invocation from lane->pc until it returns (state DONE) or reaches a
 * barrier (state BARRIER, pc left on the barrier instruction). Never fails: every
 * operation is total (§3). */
VYRE_INTERNAL void vyre_interp_run_lane(const struct vyre_exec *x, struct vyre_lane *lane);

/* Evaluates expression e for one lane (interp_exec.c). */
VYRE_INTERNAL vyre_bits vyre_interp_eval(const struct vyre_exec *x, const struct vyre_lane *lane,
                                         const struct vyre_expr *e);

/* interp_subgroup.c: the subgroup semantics of docs/SUBGROUPS.md. interp.c hoists
 * every subgroup op that exchanges values between lanes out of its statement, innermost
 * first, into a SUBGROUP instruction placed before the statement. */
/* Runs a SUBGROUP instruction's lane part: its operands into the hidden slots. */
VYRE_INTERNAL void vyre_interp_subgroup_arrive(const struct vyre_exec *x, struct vyre_lane *lane,
                                               const struct vyre_ins *in);
/* Every lane of the workgroup waits at SUBGROUP instruction `in`: computes each
 * subgroup's results (lanes in linear order, 32 per subgroup, the last one partial
 * when the workgroup is not a multiple of 32) into every lane's result slot. */
VYRE_INTERNAL void vyre_interp_subgroup_release(struct vyre_lane *lanes, uint32_t nlanes,
                                                const struct vyre_ins *in);
/* Value of subgroup op e in one lane: subgroup_size and subgroup_lane directly,
 * the others from the slot their SUBGROUP instruction filled. */
VYRE_INTERNAL vyre_bits vyre_interp_subgroup_value(const struct vyre_exec *x,
                                                   const struct vyre_lane *lane,
                                                   const struct vyre_expr *e);

/* Compiles the program's body into code (validated program required). Returns false
 * only on allocation failure. vyre_interp_code_free releases what it allocated. */
VYRE_INTERNAL bool vyre_interp_compile(const vyre_program *p, struct vyre_code *code);
/* The same for statements [first, first + count) of block b only (a section of a
 * program with grid statements); base and field spell the block's node path. */
VYRE_INTERNAL bool vyre_interp_compile_range(const vyre_program *p, const struct vyre_block *b,
                                             uint32_t first, uint32_t count, const char *base,
                                             const char *field, struct vyre_code *code);
VYRE_INTERNAL void vyre_interp_code_free(struct vyre_code *code);

/* Runs every invocation of one workgroup (x->wgid set by the caller) on lanes laid
 * out x fastest, stepping them barrier to barrier. VYRE_ERR_RUNTIME with a message in
 * err when the invocations do not meet at the same barriers. */
VYRE_INTERNAL enum vyre_status vyre_interp_workgroup(const struct vyre_exec *x,
                                                     struct vyre_lane *lanes, uint32_t nlanes,
                                                     struct vyre_error *err);

#endif
