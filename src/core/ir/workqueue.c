/* workqueue.c — the device work-queue planner (include/vyre_mega.h, docs/PLANNERS.md
 * §3.12): the original system's rules for a resident queue that drains on the device
 * with final-only host synchronisation — its bytes against a budget, the capacity an
 * expansion headroom gives within that budget, and the drain windows (backpressure)
 * that bound how many items one device-side pass covers. Pure arithmetic; the runtime
 * sizes worklists with it (be:worklist without a capacity, wl:plan()). */
#include "vyre_mega.h"

#include <string.h>

#include "ir.h"

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static enum vyre_status overflow(struct vyre_error *err, const char *what) {
    return vyre_error_set(err, VYRE_ERR_ARG,
                          "work queue plan: the %s passed 2^64 bytes. Fix: shard the work "
                          "into smaller queues",
                          what);
}

enum vyre_status vyre_workqueue_plan(const struct vyre_workqueue_profile *in,
                                     struct vyre_workqueue_plan *out, struct vyre_error *err) {
    if (!in || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "work queue plan: NULL argument. Fix: pass the profile and the "
                              "plan to fill.");
    memset(out, 0, sizeof *out);
    if (in->entry_bytes == 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "work queue plan: entry_bytes is 0. Fix: pass the bytes each item "
                              "of capacity holds (a worklist: 2 x its item size)");
    if (in->host_participates)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "work queue plan: the host reads the queue every round, which is "
                              "a host loop. Fix: read only the final state (converge on the "
                              "device)");
    uint64_t need;
    if (!mul_ok(in->initial_items, in->entry_bytes, &need) || need > UINT64_MAX - in->control_bytes)
        return overflow(err, "initial items");
    need += in->control_bytes;
    uint64_t cap = in->capacity;
    if (cap) {
        if (in->initial_items > cap)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "work queue plan: %llu initial items exceed the capacity of "
                                  "%llu. Fix: raise the capacity to at least %llu, or seed fewer "
                                  "items",
                                  (unsigned long long)in->initial_items, (unsigned long long)cap,
                                  (unsigned long long)in->initial_items);
    } else {
        /* expansion: as much headroom as asked for, as far as the budget holds */
        if (in->initial_items > UINT64_MAX - in->expansion_items)
            return overflow(err, "expansion capacity");
        cap = in->initial_items + in->expansion_items;
        if (cap == 0)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "work queue plan: no capacity: capacity, initial_items and "
                                  "expansion_items are all 0. Fix: give a capacity, or the "
                                  "items the rounds may push as expansion_items");
        if (need > in->budget_bytes)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "work queue plan: the initial items need %llu bytes but the "
                                  "budget is %llu. Fix: raise budget_bytes to at least %llu, or "
                                  "seed fewer items",
                                  (unsigned long long)need, (unsigned long long)in->budget_bytes,
                                  (unsigned long long)need);
        uint64_t fits = (in->budget_bytes - in->control_bytes) / in->entry_bytes;
        if (cap > fits) cap = fits;
    }
    uint64_t qb;
    if (!mul_ok(cap, in->entry_bytes, &qb) || qb > UINT64_MAX - in->control_bytes)
        return overflow(err, "queue");
    uint64_t resident = qb + in->control_bytes;
    if (resident > in->budget_bytes)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "work queue plan: the queue needs %llu resident bytes but the "
                              "budget is %llu. Fix: lower the capacity, shard the work, or "
                              "raise budget_bytes to at least %llu",
                              (unsigned long long)resident, (unsigned long long)in->budget_bytes,
                              (unsigned long long)resident);
    out->capacity = cap;
    out->queue_bytes = qb;
    out->control_bytes = in->control_bytes;
    out->resident_bytes = resident;
    /* initial * 10000 / capacity, exact for any u64 (initial <= capacity) */
    __extension__ unsigned __int128 occ = (unsigned __int128)in->initial_items * 10000u / cap;
    out->initial_occupancy_bps = (uint32_t)occ;
    uint64_t drain = in->drain_items && in->drain_items < cap ? in->drain_items : cap;
    out->items_per_chunk = drain;
    out->chunks = (cap - 1) / drain + 1;
    out->chunked = out->chunks > 1;
    out->final_only_host_sync = true;
    return VYRE_OK;
}
