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

/* Downloads the counters of ks[0..n) with one wait for all of them (the stream runs the
 * copies after every queued launch), adds them to the pending report and zeroes them on
 * the device. */
static enum vyre_status fold(struct vyre_cuda_device *d, vyre_cuda_kernel *const *ks, uint32_t n,
                             struct vyre_error *err) {
    size_t words = 0;
    for (uint32_t i = 0; i < n; i++) words += 2u * (size_t)ks[i]->ndecls;
    if (words == 0) return VYRE_OK;
    uint64_t *host = malloc(words * sizeof *host);
    if (!host) return nomem(err);
    const char *call = "cuMemcpyDtoHAsync", *program = NULL;
    CUresult r = CUDA_SUCCESS;
    size_t off = 0;
    for (uint32_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        size_t bytes = 16u * (size_t)ks[i]->ndecls;
        program = ks[i]->name;
        if (bytes) r = vyre_cu.cuMemcpyDtoHAsync(host + off, ks[i]->oob, bytes, d->stream);
        off += bytes / 8u;
    }
    if (r == CUDA_SUCCESS) {
        call = "cuStreamSynchronize";
        program = NULL;
        d->st.syncs++;
        d->st.bytes_down += words * sizeof *host;
        r = vyre_cu.cuStreamSynchronize(d->stream);
    }
    for (uint32_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        call = "cuMemsetD8Async";
        program = ks[i]->name;
        if (ks[i]->ndecls)
            r = vyre_cu.cuMemsetD8Async(ks[i]->oob, 0, 16u * (size_t)ks[i]->ndecls, d->stream);
    }
    enum vyre_status st = r == CUDA_SUCCESS ? VYRE_OK : vyre_cu_fail(d, r, call, program, err);
    off = 0;
    for (uint32_t i = 0; st == VYRE_OK && i < n; i++) {
        for (uint32_t j = 0; st == VYRE_OK && j < ks[i]->ndecls; j++)
            st = acc_add(d, ks[i]->decl_names[j], host[off + 2 * j], host[off + 2 * j + 1], err);
        off += 2u * (size_t)ks[i]->ndecls;
    }
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
        if (d->debug && fold(d, &k, 1, &e) != VYRE_OK) vyre_cu_defer(d, &e);
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

/* Moves every live debug kernel's counts into the pending report (after the device's
 * queued work: one wait). */
static enum vyre_status collect(struct vyre_cuda_device *d, const char *fname,
                                struct vyre_error *err) {
    if (d->capturing)
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "%s: a graph capture is in progress, and the counts can only be "
                              "read when the device's work has run. Fix: end the capture first",
                              fname);
    return fold(d, d->dbg, d->ndbg, err);
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
