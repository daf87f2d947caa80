/* pipeline.c — the optimiser's driver: which passes run (options, $VYRE_OPT), in which
 * order, and the public vyre_program_optimize. Order within a round: fold, simplify,
 * copy propagation, cse, licm, dce; rounds repeat (at most 4) while anything changed,
 * because each pass exposes work for the others (copy propagation feeds literals to
 * folding and branch elimination, licm leaves `let a licmN` copies, ...). Each pass
 * that changed something is followed by validation, which re-resolves slots for the
 * next pass; a result that does not validate would be an optimiser bug, so the pass is
 * undone from a text snapshot rather than emitted. */
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "opt_int.h"

struct vyre_opt_min_cost vyre_opt_min_cost = {2u, 3u};

enum pass { P_FOLD, P_SIMPLIFY, P_COPY, P_CSE, P_LICM, P_DCE, P_COUNT };
static const char *const pass_names[P_COUNT] = {"fold", "simplify", "copy", "cse", "licm", "dce"};

static bool *field(struct vyre_opt_options *o, int i) {
    bool *f[P_COUNT] = {&o->fold, &o->simplify, &o->copy, &o->cse, &o->licm, &o->dce};
    return f[i];
}

uint32_t vyre_opt_mask(const struct vyre_opt_options *o) {
    struct vyre_opt_options c = *o;
    uint32_t m = 0;
    for (int i = 0; i < P_COUNT; i++)
        if (*field(&c, i)) m |= 1u << i;
    return m;
}

enum vyre_status vyre_opt_options_parse(const char *spec, struct vyre_opt_options *o,
                                        struct vyre_error *err) {
    if (!o)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_opt_options_parse: options are NULL. Fix: pass a struct");
    const char *s = spec ? spec : "";
    while (*s) {
        while (*s == ',' || *s == ' ') s++;
        if (!*s) break;
        size_t n = strcspn(s, ", ");
        bool on = true;
        const char *w = s;
        size_t wn = n;
        if (*w == '-' || *w == '+') {
            on = *w == '+';
            w++;
            wn--;
        }
        bool known = false;
        if (wn == 3 && strncmp(w, "all", 3) == 0) {
            for (int i = 0; i < P_COUNT; i++) *field(o, i) = on;
            known = true;
        } else if (wn == 4 && strncmp(w, "none", 4) == 0) {
            for (int i = 0; i < P_COUNT; i++) *field(o, i) = !on;
            known = true;
        }
        for (int i = 0; i < P_COUNT && !known; i++)
            if (strlen(pass_names[i]) == wn && strncmp(w, pass_names[i], wn) == 0) {
                *field(o, i) = on;
                known = true;
            }
        if (!known)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "optimiser options: unknown pass '%.*s' in \"%s\". Fix: use "
                                  "fold, simplify, copy, cse, licm, dce, all or none, each "
                                  "optionally prefixed by - (off) or + (on), separated by commas",
                                  (int)n, s, spec);
        s += n;
    }
    return VYRE_OK;
}

enum vyre_status vyre_opt_options_default(struct vyre_opt_options *o, struct vyre_error *err) {
    if (!o)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_opt_options_default: options are NULL. Fix: pass a struct");
    for (int i = 0; i < P_COUNT; i++) *field(o, i) = true;
    enum vyre_status st = vyre_opt_options_parse(getenv("VYRE_OPT"), o, err);
    if (st != VYRE_OK && err) {
        /* name the variable, so the user knows where the bad word came from */
        char msg[VYRE_MSG_MAX];
        memcpy(msg, err->message, sizeof msg);
        vyre_error_set(err, st, "VYRE_OPT: %s", msg);
    }
    return st;
}

enum vyre_status vyre_opt_resolve(const struct vyre_opt_options *given,
                                  struct vyre_opt_options *out, struct vyre_error *err) {
    if (given) {
        *out = *given;
        return VYRE_OK;
    }
    return vyre_opt_options_default(out, err);
}

static uint32_t run_pass(int i, vyre_program *p) {
    switch (i) {
    case P_FOLD: return vyre_opt_fold_count(p);
    case P_SIMPLIFY: return vyre_opt_simplify(p);
    case P_COPY: return vyre_opt_copy(p);
    case P_CSE: return vyre_opt_cse(p);
    case P_LICM: return vyre_opt_licm(p);
    default: return vyre_opt_dce(p);
    }
}

enum vyre_status vyre_opt_run(vyre_program **pp, const struct vyre_opt_options *o,
                              struct vyre_opt_report *report, struct vyre_opt_stats *stats,
                              struct vyre_error *err) {
    struct vyre_opt_report rep_local;
    struct vyre_opt_stats st_local;
    if (!report) report = &rep_local;
    if (!stats) stats = &st_local;
    memset(report, 0, sizeof *report);
    memset(stats, 0, sizeof *stats);
    struct vyre_opt_options on = *o;
    uint32_t *counts[P_COUNT] = {&report->folded, &report->simplified, &report->copied,
                                 &report->cse,    &report->hoisted,    &report->removed};
    enum vyre_status st = vyre_ensure_valid(*pp, err);
    if (st != VYRE_OK) return st;
    /* Grid statements cut the body into sections that run as separate dispatches
     * (docs/GRID.md): a value or a load from before a grid barrier is not the same after
     * it. copy, cse, licm and dce reason about one straight program, so on programs with
     * grid statements only the expression-local passes (fold, simplify) run. */
    if ((*pp)->has_grid) on.copy = on.cse = on.licm = on.dce = false;
    for (int round = 0; round < 4; round++) {
        uint32_t changed = 0;
        stats->rounds++;
        for (int i = 0; i < P_COUNT; i++) {
            if (!*field(&on, i)) continue;
            vyre_program *snap = NULL;
            st = vyre_program_copy(*pp, &snap, err);
            if (st != VYRE_OK) return st;
            uint32_t n = run_pass(i, *pp);
            bool ok = !(*pp)->oom;
            if (ok && n) {
                (*pp)->validated = false;
                struct vyre_problems pr = {0};
                ok = vyre_validate(*pp, &pr) == VYRE_OK;
                vyre_problems_free(&pr);
            }
            if (!ok) {
                /* undo: back to the snapshot, and this pass is off from now on */
                st = vyre_ensure_valid(snap, err);
                if (st != VYRE_OK) {
                    vyre_program_free(snap);
                    return st;
                }
                vyre_program_free(*pp);
                *pp = snap;
                *field(&on, i) = false;
                stats->undone++;
                continue;
            }
            vyre_program_free(snap);
            *counts[i] += n;
            changed += n;
        }
        if (!changed) break;
    }
    return VYRE_OK;
}

enum vyre_status vyre_program_optimize(vyre_program *p, const struct vyre_opt_options *o,
                                       vyre_program **out, struct vyre_opt_report *report,
                                       struct vyre_error *err) {
    if (out) *out = NULL;
    if (report) memset(report, 0, sizeof *report);
    if (!p || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_program_optimize: program and out must not be NULL. Fix: "
                              "pass a program and a place for the result");
    struct vyre_opt_options opts;
    enum vyre_status st = vyre_opt_resolve(o, &opts, err);
    if (st != VYRE_OK) return st;
    st = vyre_ensure_valid(p, err);
    if (st != VYRE_OK) return st;
    vyre_program *q = NULL;
    st = vyre_program_copy(p, &q, err);
    if (st == VYRE_OK) st = vyre_ensure_valid(q, err);
    if (st == VYRE_OK) st = vyre_opt_run(&q, &opts, report, NULL, err);
    if (st != VYRE_OK) {
        vyre_program_free(q);
        return st;
    }
    *out = q;
    return VYRE_OK;
}
