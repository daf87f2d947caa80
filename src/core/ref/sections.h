/* sections.h — programs with grid statements (ARCHITECTURE.md §3, grid barriers) as
 * sections and grid-level control flow. A section is a maximal run of non-grid
 * statements of one block; vyre_sections lists them in program order, which is the
 * numbering every consumer shares (interpreter, PTX emitter, CUDA host split).
 * vyre_grid_run executes the grid-level control flow on the host — grid if, grid for,
 * converge — evaluating its grid-uniform expressions with the reference semantics and
 * handing each section to a callback: the interpreter runs the section over the whole
 * grid, the CUDA host split launches the section's kernel. */
#ifndef VYRE_SECTIONS_H
#define VYRE_SECTIONS_H

#include "ir.h"

#define VYRE_SECTION_PATH 192

struct vyre_section {
    const struct vyre_block *block;
    uint32_t first, count;        /* block->items[first .. first + count) */
    char base[VYRE_SECTION_PATH]; /* path of the block's owner ("" for the body) */
    const char *field;            /* "body", "then" or "else" */
};

/* The sections of validated p in program order (malloc'd; free with free()). False
 * only when memory runs out. A program without grid statements has one section. */
VYRE_INTERNAL bool vyre_sections(const vyre_program *p, struct vyre_section **out, uint32_t *n);

/* What the grid-level runner needs from an executor. */
struct vyre_grid_ops {
    void *ud;
    /* Runs section `index` over the whole grid; slots (p->nslots values) hold the grid
     * loop variables, every other slot is 0. */
    enum vyre_status (*section)(void *ud, uint32_t index, const vyre_bits *slots,
                                struct vyre_error *err);
    /* FLAG[0] = 0 (the flag buffer is declaration `decl`, bound with >= 1 element). */
    enum vyre_status (*flag_zero)(void *ud, uint32_t decl, struct vyre_error *err);
    /* *set = FLAG[0] != 0 (after every section before it has finished). */
    enum vyre_status (*flag_read)(void *ud, uint32_t decl, bool *set, struct vyre_error *err);
    /* Optional (all three or none; the CUDA graph mode): the rounds of a converge loop
     * whose body holds no converge of its own, replayed as one recorded unit. A round
     * depends only on the grid-uniform values at the loop's entry, so it is recorded
     * once per (s, slots): round_open finds a recorded round (*recorded = true) or starts
     * recording one (the section callbacks that follow are recorded, not run);
     * round_close ends the recording (st: how the body went; it is returned if not
     * VYRE_OK). round_run runs the round — FLAG[0] = 0, the body, then reads the flag:
     * *set = FLAG[0] != 0. */
    enum vyre_status (*round_open)(void *ud, const struct vyre_stmt *s, const vyre_bits *slots,
                                   bool *recorded, struct vyre_error *err);
    enum vyre_status (*round_close)(void *ud, enum vyre_status st, struct vyre_error *err);
    enum vyre_status (*round_run)(void *ud, bool *set, struct vyre_error *err);
    /* The end of a round of a converge on worklist `decl` (p->decls[decl].kind is
     * VYRE_DECL_WORKLIST), after every section before it has finished: when the round
     * overflowed the worklist, *more = false and nothing changes (the overflow is
     * reported after the run); else the pushed items become current (the item arrays
     * swap, the count is the pushed count clamped to the capacity, the next count 0)
     * and *more = the new count > 0. */
    enum vyre_status (*wl_round)(void *ud, uint32_t decl, bool *more, struct vyre_error *err);
    /* Optional (the reference): called at every back edge of a grid-level loop (before
     * its next iteration, or the next converge round); an error stops the run (the step
     * budget, an interrupt). */
    enum vyre_status (*tick)(void *ud, struct vyre_error *err);
};

/* The values grid-uniform expressions read. */
struct vyre_grid_env {
    const vyre_program *p;       /* validated, has_grid */
    const vyre_bits *param_bits; /* per declaration index (params), normalised */
    const uint64_t *counts;      /* per declaration index: bound element count (buffers) */
    uint32_t wgsize[3], ngroups[3];
};

/* Runs the grid-level control flow of env->p; *rounds (may be NULL) gets the rounds
 * its converge loops ran, summed. Stops at the first failing callback. */
VYRE_INTERNAL enum vyre_status vyre_grid_run(const struct vyre_grid_env *env,
                                             const struct vyre_section *sections, uint32_t n,
                                             const struct vyre_grid_ops *ops, uint64_t *rounds,
                                             struct vyre_error *err);

#endif
