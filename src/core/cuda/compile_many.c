/* compile_many.c — compiling a batch of programs (a rule set's kernels) with the
 * expensive part in parallel. A cold start JIT-compiles each kernel through cuLink*
 * (tens of milliseconds each); one after another that dominated the first iteration.
 *
 * The batch runs in three phases:
 * 1. each program's PTX and its hash: the memory cache's, looked up on the calling
 *    thread, else in worker threads its program entry on disk (cache_disk.c: no
 *    emission, the warm start's case), else emitted (the radix sort's passes take tens
 *    of milliseconds each); programs whose module is already loaded, and repeats of one
 *    PTX, need nothing more;
 * 2. in worker threads (the caller is one of them): each remaining PTX's cubin from the
 *    disk cache, else from the JIT (each worker makes the device's context current and
 *    uses its own link state; workers touch no device state, so the device needs no
 *    lock);
 * 3. on the calling thread: the cubins are staged on the device (d->staged) and every
 *    program goes through vyre_cuda_compile, whose module load takes the staged cubin
 *    instead of the disk or the JIT, and writes a JIT-ed one to disk as it always does.
 * Phase 3 is the one-by-one path, so the kernels are the same ones. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_int.h"

#define MAX_THREADS 8

struct job {
    size_t prog;     /* the first program with this PTX */
    char *ptx;       /* own copy: the PTX cache may evict its text meanwhile */
    size_t len;
    struct vyre_cu_staged out;
    bool jit;        /* it went to the JIT (counted on the calling thread) */
    CUresult r;      /* CUDA_SUCCESS, or the failure of `call` */
    const char *call;
    char *log;       /* the JIT's log (VYRE_CU_LOG_BYTES), allocated by the worker */
};

struct batch {
    struct vyre_cuda_device *d;
    struct job *jobs;
    size_t njobs;
    const char *const *names;
};

/* One job: the disk cache, else the JIT. */
static void run_job(struct batch *b, struct job *j) {
    struct vyre_cuda_device *d = b->d;
    uint64_t key = vyre_cu_disk_key(j->out.ptx_hash, d->info.sm, vyre_cu.version);
    size_t clen = 0;
    void *cubin = vyre_cu_disk_read(key, j->out.ptx_hash, &clen);
    if (cubin) {
        j->out.cubin = cubin;
        j->out.len = clen;
        j->out.from_disk = true;
        return;
    }
    j->jit = true;
    j->log = calloc(1, VYRE_CU_LOG_BYTES);
    if (!j->log) {
        j->r = CUDA_ERROR_OUT_OF_MEMORY;
        j->call = NULL;
        return;
    }
    j->r = vyre_cu_link(j->ptx, j->len, b->names[j->prog], j->log, &j->out.cubin, &j->out.len,
                        &j->call);
    if (j->r != CUDA_SUCCESS) j->out.cubin = NULL;
}

/* $VYRE_JIT_THREADS (1..64), else min(jobs, online CPUs, 8). */
static size_t thread_count(size_t njobs) {
    const char *s = getenv("VYRE_JIT_THREADS");
    size_t n = 0;
    if (s && *s) {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end && *end == '\0' && v >= 1 && v <= 64) n = (size_t)v;
    }
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (size_t)cpus : 1;
        if (n > MAX_THREADS) n = MAX_THREADS;
    }
    return n < njobs ? n : njobs;
}

/* Work items 0..n-1 spread over threads; see pool_run. */
struct pool {
    atomic_size_t next; /* the next item to take */
    size_t n;
    void (*fn)(void *arg, size_t i);
    void *arg;
    CUcontext cuctx; /* made current on each worker first (NULL: the items need none) */
};

/* A worker takes items until none is left. One that cannot make the context current
 * takes none: the calling thread (whose context is current) and the other workers do
 * its share, and a device really gone fails there with the cause. */
static void *pool_worker(void *arg) {
    struct pool *p = arg;
    if (p->cuctx && vyre_cu.cuCtxSetCurrent(p->cuctx) != CUDA_SUCCESS) return NULL;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) break;
        p->fn(p->arg, i);
    }
    return NULL;
}

/* The items on thread_count(n) threads, the calling thread being one of them. A thread
 * that cannot be started leaves its share to the others. */
static void pool_run(struct pool *p) {
    size_t nt = thread_count(p->n);
    pthread_t tid[64];
    bool started[64] = {false};
    for (size_t t = 1; t < nt; t++) started[t] = pthread_create(&tid[t], NULL, pool_worker, p) == 0;
    /* the calling thread has the context current already (vyre_cu_enter) */
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) break;
        p->fn(p->arg, i);
    }
    for (size_t t = 1; t < nt; t++)
        if (started[t]) pthread_join(tid[t], NULL);
}

/* Phase 2's item: job i of the batch. */
static void jit_item(void *arg, size_t i) {
    struct batch *b = arg;
    run_job(b, &b->jobs[i]);
}

/* A program whose PTX the cache lacks: emitted by a worker (phase 1). */
struct emit {
    size_t prog;
    vyre_program *p;
    struct vyre_cu_ptx_want *w;
    char *text;
    size_t n;
    bool from_disk; /* the program entry had it: nothing emitted */
    enum vyre_status st;
    struct vyre_error err;
};

static void emit_item(void *arg, size_t i) {
    struct emit *e = &((struct emit *)arg)[i];
    e->text = vyre_cu_ptx_disk(e->w, &e->n);
    e->from_disk = e->text != NULL;
    e->st = e->from_disk ? VYRE_OK : vyre_ptx_emit(e->p, &e->w->opt, &e->text, &e->n, &e->err);
}

static void jobs_free(struct job *jobs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(jobs[i].ptx);
        free(jobs[i].log);
        free(jobs[i].out.cubin);
    }
    free(jobs);
}

/* "compile_many: program i ('name'): " + the cause, when the cause does not name it. */
static enum vyre_status name_failure(size_t i, const char *name, struct vyre_error *err) {
    if (strstr(err->message, name)) return err->status;
    struct vyre_error e = *err;
    vyre_error_set(err, e.status, "compile_many: program %zu ('%s'): %.3800s", i + 1, name,
                   e.message);
    memcpy(err->call, e.call, sizeof e.call);
    memcpy(err->result, e.result, sizeof e.result);
    return e.status;
}

/* A job for PTX ptx of program i, unless its module is loaded or an earlier job has it. */
static enum vyre_status add_job(struct vyre_cuda_device *d, struct job *jobs, size_t *njobs,
                                size_t i, const char *ptx, size_t len, uint64_t h,
                                struct vyre_error *err) {
    for (uint32_t m = 0; m < d->nmods; m++)
        if (d->mods[m]->ptx_hash == h) return VYRE_OK;
    for (size_t k = 0; k < *njobs; k++)
        if (jobs[k].out.ptx_hash == h) return VYRE_OK;
    struct job *j = &jobs[(*njobs)++];
    j->prog = i;
    j->out.ptx_hash = h;
    j->len = len;
    j->ptx = malloc(len + 1); /* own copy: a later put may evict the cache's text */
    if (!j->ptx)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "compile_many: out of host memory. Fix: free memory.");
    memcpy(j->ptx, ptx, len + 1);
    return VYRE_OK;
}

/* Phase 1: each program's PTX (the cache's, or emitted in worker threads: the emitter
 * only reads its program, and each program is emitted once), then one job per distinct
 * PTX whose module is not loaded yet. */
static enum vyre_status plan_jobs(struct vyre_cuda_device *d, vyre_program *const *programs,
                                  size_t n, struct job *jobs, size_t *njobs,
                                  struct vyre_error *err) {
    *njobs = 0;
    struct vyre_cu_ptx_want *w = calloc(n, sizeof *w);
    struct emit *em = calloc(n, sizeof *em);
    if (!w || !em) {
        free(w);
        free(em);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "compile_many: out of host memory. Fix: free memory.");
    }
    size_t nem = 0;
    enum vyre_status st = VYRE_OK;
    for (size_t i = 0; st == VYRE_OK && i < n; i++) {
        st = vyre_cu_ptx_find(d, programs[i], &w[i], err);
        if (st != VYRE_OK) {
            name_failure(i, programs[i]->name, err);
        } else if (w[i].ptx) {
            st = add_job(d, jobs, njobs, i, w[i].ptx, w[i].len, w[i].ptx_hash, err);
        } else {
            bool dup = false; /* the same key: the same text, emitted once */
            for (size_t k = 0; k < nem && !dup; k++) dup = em[k].w->key == w[i].key;
            if (!dup) em[nem++] = (struct emit){.prog = i, .p = programs[i], .w = &w[i]};
        }
    }
    bool ran = st == VYRE_OK && nem; /* then every item ran, failed or not */
    if (ran) {
        struct pool pl = {.n = nem, .fn = emit_item, .arg = em};
        atomic_init(&pl.next, 0);
        pool_run(&pl);
    }
    for (size_t k = 0; k < nem; k++) { /* in program order: the first failure is reported */
        struct emit *e = &em[k];
        if (ran && e->from_disk) {
            d->st.disk_program_hits++;
        } else if (ran) {
            d->st.disk_program_misses++;
            d->st.ptx_emits++;
        }
        if (st == VYRE_OK && e->st != VYRE_OK) {
            *err = e->err;
            st = name_failure(e->prog, programs[e->prog]->name, err);
        } else if (st != VYRE_OK) {
            if (e->st == VYRE_OK && e->text) vyre_free(e->text);
        } else {
            st = vyre_cu_ptx_put(d, e->w, e->text, e->n, e->from_disk, err); /* takes the text */
            if (st == VYRE_OK)
                st = add_job(d, jobs, njobs, e->prog, e->w->ptx, e->w->len, e->w->ptx_hash, err);
        }
    }
    free(w);
    free(em);
    return st;
}

/* The first failed job in program order, as vyre_cuda_compile would report it. */
static enum vyre_status first_failure(struct vyre_cuda_device *d, struct batch *b,
                                      struct vyre_error *err) {
    struct job *first = NULL;
    for (size_t i = 0; i < b->njobs; i++) {
        struct job *j = &b->jobs[i];
        if (j->r != CUDA_SUCCESS && (!first || j->prog < first->prog)) first = j;
    }
    if (!first) return VYRE_OK;
    const char *name = b->names[first->prog];
    if (!first->log)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "compile_many: out of host memory for program '%s'. Fix: free "
                              "memory.",
                              name);
    return vyre_cu_link_error(d, first->r, first->call, name, first->ptx, first->log,
                              first->out.len, err);
}

static enum vyre_status compile_many(vyre_cuda_device *d, vyre_program *const *programs,
                                     size_t n, vyre_cuda_kernel **out, struct vyre_error *err) {
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    struct job *jobs = calloc(n, sizeof *jobs);
    const char **names = calloc(n, sizeof *names);
    if (!jobs || !names) {
        free(jobs);
        free(names);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "compile_many: out of host memory. Fix: free memory.");
    }
    for (size_t i = 0; i < n; i++) names[i] = programs[i]->name;
    struct batch b = {.d = d, .jobs = jobs, .names = names};
    st = plan_jobs(d, programs, n, jobs, &b.njobs, err);
    if (st == VYRE_OK && b.njobs) {
        struct pool pl = {.n = b.njobs, .fn = jit_item, .arg = &b, .cuctx = d->ctx};
        atomic_init(&pl.next, 0);
        pool_run(&pl);
        for (size_t i = 0; i < b.njobs; i++) d->st.jit_compiles += jobs[i].jit;
        st = first_failure(d, &b, err);
    }
    if (st == VYRE_OK) {
        /* Phase 3: the one-by-one path, taking the staged cubins. */
        struct vyre_cu_staged *staged = calloc(b.njobs ? b.njobs : 1, sizeof *staged);
        if (!staged)
            st = vyre_error_set(err, VYRE_ERR_NOMEM,
                                "compile_many: out of host memory. Fix: free memory.");
        for (size_t i = 0; staged && i < b.njobs; i++) {
            staged[i] = jobs[i].out;
            jobs[i].out.cubin = NULL; /* the staged table owns it now */
        }
        d->staged = staged;
        d->nstaged = staged ? (uint32_t)b.njobs : 0;
        for (size_t i = 0; st == VYRE_OK && i < n; i++) {
            st = vyre_cuda_compile(d, programs[i], &out[i], err);
            if (st != VYRE_OK) {
                name_failure(i, names[i], err);
                while (i > 0) {
                    vyre_cuda_kernel_free(out[--i]);
                    out[i] = NULL;
                }
            }
        }
        for (uint32_t i = 0; i < d->nstaged; i++) free(staged[i].cubin);
        free(staged);
        d->staged = NULL;
        d->nstaged = 0;
    }
    jobs_free(jobs, b.njobs);
    free(names);
    return st;
}

enum vyre_status vyre_cuda_compile_many(vyre_cuda_device *d, vyre_program *const *programs,
                                        size_t n, vyre_cuda_kernel **out,
                                        struct vyre_error *err) {
    struct vyre_error scratch;
    if (!err) err = &scratch; /* name_failure reads the message back */
    if (n && (!programs || !out))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "compile_many: programs or out is NULL. Fix: pass arrays of n "
                              "entries.");
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    for (size_t i = 0; i < n; i++)
        if (!programs[i])
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "compile_many: program %zu is NULL. Fix: pass n programs.",
                                  i + 1);
    if (n == 0) return VYRE_OK;
    return compile_many(d, programs, n, out, err);
}
