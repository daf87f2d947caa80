/* debug.c — the debug mode on a CUDA device (ARCHITECTURE.md §3, §7): kernels compiled
 * while it is on come from debug PTX (vyre_ptx_options.debug), whose out-of-bounds paths
 * add 1 to a counter per declaration. Each such kernel owns its counters (2 u64 per
 * declaration: loads, then stores and atomics), passed as the entry's last parameter,
 * and the device lists its live debug kernels. A report waits for the device, downloads
 * and zeroes every list member's counters and sums them by declaration name, together
 * with what kernels freed since the last report left behind (folded at free). Launches
 * stay asynchronous: nothing is read back until a report or a free asks. */
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

_Static_assert(VYRE_CUDA_OOB_NAME == VYRE_MAX_NAME + 1, "report names hold any declaration name");

static enum vyre_status nomem(struct vyre_error *err) {
    return vyre_error_set(err, VYRE_ERR_NOMEM,
                          "debug mode: out of host memory. Fix: free memory or switch the "
                          "debug mode off");
}

/* Adds counts under name to the device's pending report. */
static enum vyre_status acc_add(struct vyre_cuda_device *d, const char *name, uint64_t loads,
                                uint64_t stores, struct vyre_error *err) {
    if (loads == 0 && stores == 0) return VYRE_OK;
    for (uint32_t i = 0; i < d->nacc; i++) {
        if (strcmp(d->acc[i].name, name) != 0) continue;
        d->acc[i].loads += loads;
        d->acc[i].stores += stores;
        return VYRE_OK;
    }
    if (d->nacc == d->acc_cap) {
        uint32_t cap = d->acc_cap ? 2 * d->acc_cap : 8;
        struct vyre_cuda_oob *n = realloc(d->acc, cap * sizeof *n);
        if (!n) return nomem(err);
        d->acc = n;
        d->acc_cap = cap;
    }
    struct vyre_cuda_oob *e = &d->acc[d->nacc++];
    memset(e, 0, sizeof *e);
    strncpy(e->name, name, sizeof e->name - 1);
    e->loads = loads;
    e->stores = stores;
    return VYRE_OK;
}

/* Downloads k's counters (the caller waited for the device), adds them to the pending
 * report and zeroes them on the device. */
static enum vyre_status fold(vyre_cuda_kernel *k, struct vyre_error *err) {
    struct vyre_cuda_device *d = k->dev;
    size_t bytes = 16u * (size_t)k->ndecls;
    if (bytes == 0) return VYRE_OK;
    uint64_t *host = malloc(bytes);
    if (!host) return nomem(err);
    enum vyre_status st = VYRE_OK;
    const char *call = "cuMemcpyDtoHAsync";
    CUresult r = vyre_cu.cuMemcpyDtoHAsync(host, k->oob, bytes, d->stream);
    if (r == CUDA_SUCCESS) {
        call = "cuStreamSynchronize";
        d->st.syncs++;
        d->st.bytes_down += bytes;
        r = vyre_cu.cuStreamSynchronize(d->stream);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuMemsetD8Async";
        r = vyre_cu.cuMemsetD8Async(k->oob, 0, bytes, d->stream);
    }
    if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, call, k->name, err);
    for (uint32_t i = 0; st == VYRE_OK && i < k->ndecls; i++)
        st = acc_add(d, k->decl_names[i], host[2 * i], host[2 * i + 1], err);
    free(host);
    return st;
}

enum vyre_status vyre_cu_debug_attach(vyre_cuda_kernel *k, const vyre_program *p, uint32_t at,
                                      struct vyre_error *err) {
    struct vyre_cuda_device *d = k->dev;
    if (d->ndbg == d->dbg_cap) {
        uint32_t cap = d->dbg_cap ? 2 * d->dbg_cap : 8;
        vyre_cuda_kernel **n = realloc(d->dbg, cap * sizeof *n);
        if (!n) return nomem(err);
        d->dbg = n;
        d->dbg_cap = cap;
    }
    uint32_t nd = p->ndecls;
    k->decl_names = calloc(nd ? nd : 1, sizeof *k->decl_names);
    if (!k->decl_names) return nomem(err);
    k->ndecls = nd;
    for (uint32_t i = 0; i < nd; i++) {
        k->decl_names[i] = malloc(strlen(p->decls[i].name) + 1);
        if (!k->decl_names[i]) return nomem(err); /* the detach frees what was made */
        strcpy(k->decl_names[i], p->decls[i].name);
    }
    size_t bytes = 16u * (size_t)(nd ? nd : 1);
    enum vyre_status st = vyre_cu_malloc(d, bytes, &k->oob, "debug counters", err);
    if (st != VYRE_OK) return st;
    VYRE_CU_CHECK(d, vyre_cu.cuMemsetD8Async(k->oob, 0, bytes, d->stream), "cuMemsetD8Async",
                  k->name, err);
    k->slot[at] = (uint64_t)k->oob; /* the entry's last parameter, set once */
    k->oob_at = at;
    d->dbg[d->ndbg++] = k;
    return VYRE_OK;
}

void vyre_cu_debug_detach(vyre_cuda_kernel *k) {
    struct vyre_cuda_device *d = k->dev;
    for (uint32_t i = 0; i < d->ndbg; i++) {
        if (d->dbg[i] != k) continue;
        d->dbg[i] = d->dbg[--d->ndbg];
        break;
    }
    if (k->oob && vyre_cu_current(d)) {
        struct vyre_error e;
        /* Its counts so far belong to the next report: fold before freeing. */
        if (d->debug && fold(k, &e) != VYRE_OK) vyre_cu_defer(d, &e);
        CUresult r = vyre_cu.cuMemFree(k->oob);
        if (r != CUDA_SUCCESS) {
            vyre_cu_fail(d, r, "cuMemFree", k->name, &e);
            vyre_cu_defer(d, &e);
        }
    }
    for (uint32_t i = 0; k->decl_names && i < k->ndecls; i++) free(k->decl_names[i]);
    free(k->decl_names);
    k->decl_names = NULL;
    k->oob = 0;
}

void vyre_cu_debug_destroy(struct vyre_cuda_device *d) {
    free(d->dbg);
    free(d->acc);
    d->dbg = NULL;
    d->acc = NULL;
    d->ndbg = d->dbg_cap = d->nacc = d->acc_cap = 0;
}

/* Waits for the device and moves every live debug kernel's counts into the pending
 * report. */
static enum vyre_status collect(struct vyre_cuda_device *d, const char *fname,
                                struct vyre_error *err) {
    if (d->capturing)
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "%s: a graph capture is in progress, and the counts can only be "
                              "read when the device's work has run. Fix: end the capture first",
                              fname);
    enum vyre_status st = d->ndbg ? vyre_cu_sync(d, NULL, err) : VYRE_OK;
    for (uint32_t i = 0; st == VYRE_OK && i < d->ndbg; i++) st = fold(d->dbg[i], err);
    return st;
}

enum vyre_status vyre_cuda_set_debug(vyre_cuda_device *d, bool on, struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    /* Switching (also to the same state) starts a new report: the counts so far are
     * dropped, as on the reference backend. */
    st = collect(d, "debug mode", err);
    d->nacc = 0;
    if (st == VYRE_OK) d->debug = on;
    return st;
}

bool vyre_cuda_debug(const vyre_cuda_device *d) { return d && d->debug; }

bool vyre_cuda_kernel_debug(const vyre_cuda_kernel *k) { return k && k->oob != 0; }

enum vyre_status vyre_cuda_oob_report(vyre_cuda_device *d, struct vyre_cuda_oob **out, size_t *n,
                                      struct vyre_error *err) {
    if (!d || !out || !n)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "oob report: NULL argument. Fix: pass a device and the places "
                              "for the report and its length");
    *out = NULL;
    *n = 0;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st == VYRE_OK) st = collect(d, "oob report", err);
    if (st != VYRE_OK) return st;
    if (d->debug && d->nacc) {
        *out = malloc(d->nacc * sizeof **out);
        if (!*out) return nomem(err);
        memcpy(*out, d->acc, d->nacc * sizeof **out);
        *n = d->nacc;
    }
    d->nacc = 0; /* debug mode off: counts of kernels compiled in it are dropped */
    return VYRE_OK;
}
