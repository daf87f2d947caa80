/* cache_mem.c — the two in-memory cache levels of a device:
 * (1) PTX text keyed by program hash + PTX target (the device's chosen target, not its
 *     SM: target.c) + VYRE_CODEGEN_VERSION + optimiser passes
 *     (bounded, LRU);
 * (2) loaded modules keyed by PTX hash (per device, bounded LRU). A module evicted
 *     from (2) is unloaded only when no kernel uses it any more (reference count).
 * A module miss goes to the disk cubin cache (cache_disk.c), and a disk miss to the
 * JIT (module.c), whose cubin is then written to disk.
 * A PTX miss first reads the program's entry on disk (its PTX under a key that needs
 * no PTX: cache_disk.c), and only then emits; emitted PTX is written there once a
 * module was loaded from it (vyre_cu_ptx_saved), so a new process with a warm disk
 * cache emits nothing (counters ptx_emits, disk_program_hits/misses/writes). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cuda_int.h"
#include "opt.h"

static uint32_t env_cap(const char *name, uint32_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    long v = strtol(s, NULL, 10);
    return v > 0 && v < 1000000 ? (uint32_t)v : dflt;
}

/* ---- (1) PTX ------------------------------------------------------------- */

static void ptx_evict_lru(struct vyre_cuda_device *d) {
    uint32_t victim = 0;
    for (uint32_t i = 1; i < d->nptx; i++)
        if (d->ptx[i].last_use < d->ptx[victim].last_use) victim = i;
    free(d->ptx[victim].ptx);
    d->ptx[victim] = d->ptx[--d->nptx];
}

enum vyre_status vyre_cu_ptx_find(struct vyre_cuda_device *d, vyre_program *p,
                                  struct vyre_cu_ptx_want *w, struct vyre_error *err) {
    enum vyre_status st = vyre_ensure_valid(p, err);
    if (st != VYRE_OK) return st;
    /* The codegen version is part of the key so a newer emitter never sees stale text,
     * and so are the optimiser passes $VYRE_OPT leaves on and the debug mode (the PTX
     * differs with them). */
    st = vyre_opt_resolve(NULL, &w->passes, err);
    if (st != VYRE_OK) return st;
    w->key = vyre_program_hash(p) ^ ((uint64_t)VYRE_CODEGEN_VERSION << 48) ^
             ((uint64_t)vyre_opt_mask(&w->passes) << 40) ^ ((uint64_t)d->debug << 39);
    unsigned sm = d->info.target; /* the chosen target: what the PTX is written for */
    w->opt = (struct vyre_ptx_options){.sm = sm, .debug = d->debug, .passes = &w->passes};
    w->ptx = NULL;
    for (uint32_t i = 0; i < d->nptx; i++) {
        struct vyre_cu_ptx_entry *e = &d->ptx[i];
        if (e->prog_hash == w->key && e->sm == sm && e->debug == d->debug) {
            e->last_use = ++d->tick;
            d->st.ptx_hits++;
            w->ptx = e->ptx;
            w->len = e->len;
            w->ptx_hash = e->ptx_hash;
            return VYRE_OK;
        }
    }
    w->disk_key = vyre_cu_disk_prog_key(d, w->key, vyre_opt_mask(&w->passes), d->debug);
    return VYRE_OK;
}

char *vyre_cu_ptx_disk(const struct vyre_cu_ptx_want *w, size_t *n) {
    uint64_t h = 0; /* put hashes the text again, as for emitted text */
    return vyre_cu_disk_ptx_read(w->disk_key, w->key, n, &h);
}

void vyre_cu_ptx_saved(struct vyre_cuda_device *d, uint64_t ptx_hash) {
    for (uint32_t i = 0; i < d->nptx; i++) {
        struct vyre_cu_ptx_entry *e = &d->ptx[i];
        if (e->ptx_hash != ptx_hash || !e->unsaved) continue;
        e->unsaved = false; /* one try: a failed write is a miss next time, not an error */
        uint64_t evicted = 0;
        if (vyre_cu_disk_ptx_write(e->disk_key, e->prog_hash, e->ptx, e->len, &evicted))
            d->st.disk_program_writes++;
        d->st.disk_evictions += evicted;
    }
}

enum vyre_status vyre_cu_ptx_put(struct vyre_cuda_device *d, struct vyre_cu_ptx_want *w, char *text,
                                 size_t n, bool from_disk, struct vyre_error *err) {
    d->st.ptx_misses++;
    uint32_t cap = env_cap("VYRE_PTX_CACHE_ENTRIES", 256);
    if (d->nptx >= cap) ptx_evict_lru(d);
    if (d->nptx == d->ptx_cap) {
        uint32_t ncap = d->ptx_cap ? d->ptx_cap * 2 : 16;
        struct vyre_cu_ptx_entry *ne = realloc(d->ptx, ncap * sizeof *ne);
        if (!ne) {
            vyre_free(text);
            return vyre_error_set(err, VYRE_ERR_NOMEM,
                                  "PTX cache: out of host memory. Fix: "
                                  "free memory.");
        }
        d->ptx = ne;
        d->ptx_cap = ncap;
    }
    /* Own copy with malloc so the cache frees what it allocated. */
    char *own = malloc(n + 1);
    if (!own) {
        vyre_free(text);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "PTX cache: out of host memory. Fix: free "
                              "memory.");
    }
    memcpy(own, text, n);
    own[n] = '\0';
    vyre_free(text);
    struct vyre_cu_ptx_entry *e = &d->ptx[d->nptx++];
    e->prog_hash = w->key;
    e->sm = w->opt.sm;
    e->debug = w->opt.debug;
    e->ptx = own;
    e->len = n;
    e->ptx_hash = XXH3_64bits(own, n);
    e->unsaved = !from_disk;
    e->disk_key = w->disk_key;
    e->last_use = ++d->tick;
    w->ptx = own;
    w->len = n;
    w->ptx_hash = e->ptx_hash;
    return VYRE_OK;
}

enum vyre_status vyre_cu_ptx_get(struct vyre_cuda_device *d, vyre_program *p, const char **ptx,
                                 size_t *len, uint64_t *ptx_hash, struct vyre_error *err) {
    struct vyre_cu_ptx_want w;
    enum vyre_status st = vyre_cu_ptx_find(d, p, &w, err);
    if (st != VYRE_OK) return st;
    if (!w.ptx) {
        size_t n = 0;
        char *text = vyre_cu_ptx_disk(&w, &n);
        bool from_disk = text != NULL;
        if (from_disk) {
            d->st.disk_program_hits++;
        } else {
            d->st.disk_program_misses++;
            d->st.ptx_emits++;
            st = vyre_ptx_emit(p, &w.opt, &text, &n, err);
        }
        if (st == VYRE_OK) st = vyre_cu_ptx_put(d, &w, text, n, from_disk, err);
        if (st != VYRE_OK) return st;
    }
    *ptx = w.ptx;
    *len = w.len;
    *ptx_hash = w.ptx_hash;
    return VYRE_OK;
}

/* ---- (2) modules ----------------------------------------------------------- */

static void module_unload(struct vyre_cu_module *m) {
    struct vyre_cuda_device *d = m->dev;
    if (m->mod && vyre_cu_alive(d) && m->generation == d->generation) {
        CUresult r = vyre_cu.cuModuleUnload(m->mod);
        if (r != CUDA_SUCCESS) {
            struct vyre_error e;
            vyre_cu_fail(d, r, "cuModuleUnload", NULL, &e);
            vyre_cu_defer(d, &e);
        }
    }
    d->st.live_modules--;
    free(m);
}

void vyre_cu_module_release(struct vyre_cu_module *m) {
    if (!m) return;
    if (--m->refs == 0 && !m->cached) module_unload(m);
}

static void module_evict_lru(struct vyre_cuda_device *d) {
    uint32_t victim = 0;
    for (uint32_t i = 1; i < d->nmods; i++)
        if (d->mods[i]->last_use < d->mods[victim]->last_use) victim = i;
    struct vyre_cu_module *m = d->mods[victim];
    d->mods[victim] = d->mods[--d->nmods];
    d->st.module_evictions++;
    m->cached = false;
    if (m->refs == 0) module_unload(m);
}

/* Loads a module for the PTX from disk or through the JIT. */
static enum vyre_status load_module(struct vyre_cuda_device *d, const char *ptx, size_t len,
                                    uint64_t ptx_hash, const char *program, CUmodule *out,
                                    struct vyre_error *err) {
    /* The cubin is machine code for the device's own SM; the PTX it came from names the
     * chosen target in its .target line, so the PTX hash keys the target too. */
    uint64_t key = vyre_cu_disk_key(ptx_hash, d->info.sm, vyre_cu.version);
    size_t clen = 0;
    /* A batch (compile_many.c) read or compiled this cubin ahead: take it. */
    struct vyre_cu_staged *sg = NULL;
    for (uint32_t i = 0; i < d->nstaged && !sg; i++)
        if (d->staged[i].cubin && d->staged[i].ptx_hash == ptx_hash) sg = &d->staged[i];
    void *cubin = NULL;
    if (sg && sg->from_disk) {
        cubin = sg->cubin;
        clen = sg->len;
        sg->cubin = NULL;
    } else if (!sg) {
        cubin = vyre_cu_disk_read(key, ptx_hash, &clen);
    }
    if (cubin) {
        enum vyre_status st = vyre_cu_load_image(d, cubin, NULL, program, out, NULL);
        free(cubin);
        if (st == VYRE_OK) {
            d->st.disk_hits++;
            return VYRE_OK;
        }
        /* A cubin the driver refuses (e.g. a corrupted file) is just a miss. */
    }
    d->st.disk_misses++;
    enum vyre_status st = VYRE_OK;
    if (sg && sg->cubin) { /* compiled ahead by a worker, counted there */
        cubin = sg->cubin;
        clen = sg->len;
        sg->cubin = NULL;
    } else {
        st = vyre_cu_jit(d, ptx, len, program, &cubin, &clen, err);
    }
    if (st != VYRE_OK) return st;
    st = vyre_cu_load_image(d, cubin, NULL, program, out, err);
    if (st == VYRE_OK) {
        uint64_t evicted = 0;
        if (vyre_cu_disk_write(key, ptx_hash, cubin, clen, &evicted)) d->st.disk_writes++;
        d->st.disk_evictions += evicted;
    }
    free(cubin);
    return st;
}

enum vyre_status vyre_cu_module_get(struct vyre_cuda_device *d, const char *ptx, size_t len,
                                    uint64_t ptx_hash, const char *program,
                                    struct vyre_cu_module **out, struct vyre_error *err) {
    for (uint32_t i = 0; i < d->nmods; i++) {
        struct vyre_cu_module *m = d->mods[i];
        if (m->ptx_hash == ptx_hash) {
            m->last_use = ++d->tick;
            m->refs++;
            d->st.module_hits++;
            *out = m;
            return VYRE_OK;
        }
    }
    d->st.module_misses++;
    struct vyre_cu_module *m = calloc(1, sizeof *m);
    if (!m)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "module cache: out of host memory. Fix: "
                              "free memory.");
    if (d->nmods == d->mods_cap) {
        uint32_t ncap = d->mods_cap ? d->mods_cap * 2 : 16;
        struct vyre_cu_module **nm = realloc(d->mods, ncap * sizeof *nm);
        if (!nm) {
            free(m);
            return vyre_error_set(err, VYRE_ERR_NOMEM,
                                  "module cache: out of host memory. "
                                  "Fix: free memory.");
        }
        d->mods = nm;
        d->mods_cap = ncap;
    }
    enum vyre_status st = load_module(d, ptx, len, ptx_hash, program, &m->mod, err);
    if (st != VYRE_OK) {
        free(m);
        return st;
    }
    uint32_t cap = env_cap("VYRE_MODULE_CACHE_ENTRIES", 128);
    if (d->nmods >= cap) module_evict_lru(d);
    m->dev = d;
    m->ptx_hash = ptx_hash;
    m->refs = 1;
    m->cached = true;
    m->last_use = ++d->tick;
    m->generation = d->generation;
    d->mods[d->nmods++] = m;
    d->st.live_modules++;
    *out = m;
    return VYRE_OK;
}

void vyre_cu_caches_destroy(struct vyre_cuda_device *d) {
    for (uint32_t i = 0; i < d->nptx; i++) free(d->ptx[i].ptx);
    free(d->ptx);
    d->ptx = NULL;
    d->nptx = d->ptx_cap = 0;
    /* Kernels hold device references, so at teardown no module is in use. */
    for (uint32_t i = 0; i < d->nmods; i++) {
        d->mods[i]->cached = false;
        if (d->mods[i]->refs == 0) module_unload(d->mods[i]);
    }
    free(d->mods);
    d->mods = NULL;
    d->nmods = d->mods_cap = 0;
}

void vyre_cu_modules_trim(struct vyre_cuda_device *d) {
    uint32_t keep = 0;
    for (uint32_t i = 0; i < d->nmods; i++) {
        struct vyre_cu_module *m = d->mods[i];
        if (m->refs > 0) {
            d->mods[keep++] = m;
            continue;
        }
        m->cached = false;
        module_unload(m);
    }
    d->nmods = keep;
}
