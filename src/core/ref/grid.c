/* grid.c — launch geometry (ARCHITECTURE.md §5): how many workgroups a dispatch
 * launches, shared by the reference interpreter and the CUDA runtime so both
 * backends run exactly the same invocations for the same arguments. */
#include "ir.h"

#define GRID_MAX_X UINT64_C(2147483647) /* 2^31 - 1, the CUDA limit on grid x */
#define GRID_MAX_YZ UINT64_C(65535)

static uint64_t ceil_div(uint64_t n, uint64_t d) { return n / d + (n % d != 0); }

enum vyre_status vyre_launch_grid(const vyre_program *p, const struct vyre_grid_options *o,
                                  uint32_t out[3], struct vyre_error *err) {
    static const struct vyre_grid_options none;
    if (!o) o = &none;
    const uint64_t *buffer_counts = o->buffer_counts;
    size_t nbuffers = o->nbuffers;
    uint64_t n = o->n;
    const uint32_t *explicit_grid = o->grid;
    static const char axis_name[3] = {'x', 'y', 'z'};
    if (!p || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_launch_grid: program and output must not be NULL. Fix: pass a "
                              "program and a uint32_t[3] to receive the grid.");
    if (nbuffers > 0 && !buffer_counts)
        return vyre_error_set(
            err, VYRE_ERR_ARG,
            "vyre_launch_grid: %zu buffer counts announced but o->buffer_counts is NULL. "
            "Fix: pass the counts or nbuffers = 0.",
            nbuffers);
    for (unsigned a = 0; a < 3; a++) {
        if (p->workgroup[a] == 0)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "program '%s' has workgroup size 0 on axis %c. Fix: every "
                                  "workgroup axis must be at least 1.",
                                  p->name ? p->name : "?", axis_name[a]);
    }
    uint64_t g[3] = {1, 1, 1};
    if (explicit_grid) {
        for (unsigned a = 0; a < 3; a++) {
            if (explicit_grid[a] == 0)
                return vyre_error_set(err, VYRE_ERR_ARG,
                                      "grid {%u, %u, %u} has 0 workgroups on axis %c. Fix: give "
                                      "every grid axis at least 1 (use 1 for unused axes).",
                                      explicit_grid[0], explicit_grid[1], explicit_grid[2],
                                      axis_name[a]);
            g[a] = explicit_grid[a];
        }
    } else {
        uint64_t elems = n;
        const char *what = "n";
        if (elems == 0) {
            what = "the largest bound buffer";
            for (size_t i = 0; i < nbuffers; i++)
                if (buffer_counts[i] > elems) elems = buffer_counts[i];
        }
        g[0] = elems ? ceil_div(elems, p->workgroup[0]) : 1;
        if (g[0] > GRID_MAX_X)
            return vyre_error_set(err, VYRE_ERR_LIMIT,
                                  "%s (%llu elements) over workgroup x = %u needs %llu workgroups, "
                                  "more than the grid x limit of 2147483647. Fix: use a larger "
                                  "workgroup, process several elements per invocation, or pass "
                                  "an explicit 2-D grid.",
                                  what, (unsigned long long)elems, p->workgroup[0],
                                  (unsigned long long)g[0]);
    }
    if (g[0] > GRID_MAX_X)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "grid x = %llu exceeds the limit of 2147483647 workgroups. Fix: "
                              "spread the work over grid y/z or over several launches.",
                              (unsigned long long)g[0]);
    for (unsigned a = 1; a < 3; a++) {
        if (g[a] > GRID_MAX_YZ)
            return vyre_error_set(err, VYRE_ERR_LIMIT,
                                  "grid %c = %llu exceeds the limit of 65535 workgroups. Fix: "
                                  "put the larger extent on grid x (limit 2147483647).",
                                  axis_name[a], (unsigned long long)g[a]);
    }
    for (unsigned a = 0; a < 3; a++) out[a] = (uint32_t)g[a];
    return VYRE_OK;
}
