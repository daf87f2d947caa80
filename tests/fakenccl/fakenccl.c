/* fakenccl.c — a fake NCCL (<build>/fakenccl/libnccl.so.2, loaded through
 * VYRE_LIBNCCL) over the fake CUDA driver's devices, so the group, collective and
 * step specs run without GPUs (docs/MULTIGPU.md, "Fake NCCL").
 *
 * Fake device memory is host memory, so collectives compute on it directly. A call is
 * queued by its rank and, at ncclGroupEnd (or at once outside a group), put in its
 * stream's order through the fake driver's vyre_fakecuda_stream_host: run now, or at
 * each replay of a graph being captured. Running it is the rank's *arrival*:
 *   - ranks of one process (every rank joined here): the last rank to arrive at the
 *     k-th collective computes every rank's result from snapshots of all inputs;
 *   - one process per rank: the clique lives in files under /dev/shm named from the id;
 *     a rank writes its input to <prefix>-c<k>-r<rank>, waits for every rank's file,
 *     and computes its own result. Sends write <prefix>-p<from>-<to>-<n>; receives wait
 *     for that file and remove it.
 * Communicators follow NCCL's non-blocking mode: with config->blocking = 0, init
 * answers ncclInProgress and ncclCommGetAsyncError says ncclInProgress until every rank
 * has joined (a file per rank) — a rank that never comes keeps it there, so the
 * caller's timeout fires. A wait for other ranks' files gives up after
 * $VYRE_FAKENCCL_WAIT seconds (30) and sets the communicator's error to ncclRemoteError.
 * Fault injection: $VYRE_FAKENCCL_FAIL="N:R" makes the N-th counted call (every entry
 * but ncclGetVersion, ncclGetErrorString and ncclCommGetAsyncError) return result R;
 * $VYRE_FAKENCCL_ASYNC="N:R" lets the N-th counted call succeed and then reports R
 * from ncclCommGetAsyncError, as a failure inside a running collective does.
 * $VYRE_FAKENCCL_BUSY_US=U: after each group of collectives, ncclCommGetAsyncError says
 * ncclInProgress for U microseconds, as a real non-blocking enqueue does for a while (a
 * caller's poll must not add a fixed sleep on top of it). $VYRE_FAKENCCL_BUSY_POLLS=N:
 * instead, the next N queries after each group say ncclInProgress — a count, not a
 * time, so a spec's numbers do not depend on the machine. Each query that follows an
 * in-progress answer on the same communicator is a re-poll; the fake notes whether the
 * asking thread blocked (slept) since that answer (vyre_fakenccl_polls), so a spec can
 * check that the caller's wait asks again before it sleeps without timing anything. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define API __attribute__((visibility("default")))
#define MAX_RANKS 64
#define MAX_LOCAL 64

struct clique {
    char key[40]; /* hex of the id's first 16 bytes */
    int size;
    int joined_here; /* ranks of this process */
    struct fcomm *local[MAX_RANKS];
    /* ranks of one process: the collective each rank is at, and its calls */
    struct pending *pend;
    struct p2p *sends, *recvs;
};

struct fcomm {
    struct clique *cq;
    int rank, size;
    bool blocking;
    ncclResult_t async;
    uint64_t coll_seq;         /* collectives issued by this rank */
    uint64_t sent[MAX_RANKS];  /* sends to each peer (files) */
    uint64_t recvd[MAX_RANKS]; /* receives from each peer (files) */
    bool shm;                  /* one process per rank: the clique is in files */
    long busy_nvcsw;           /* last answer in progress: the asker's blocks then, else -1 */
};

/* One call of one rank, queued until the group ends, then in stream order. */
struct call {
    int kind; /* 0 all_reduce, 1 broadcast, 2 reduce, 3 all_gather, 4 reduce_scatter, 5 send, 6 recv */
    const void *src;
    void *dst;
    size_t count; /* send count (all_gather), recv count (reduce_scatter), else count */
    ncclDataType_t type;
    ncclRedOp_t op;
    int root; /* or peer */
    struct fcomm *comm;
    void *stream;
    uint64_t seq; /* collectives: index in the rank's order */
};

struct pending {
    uint64_t seq;
    struct call c[MAX_RANKS];
    bool arrived[MAX_RANKS];
    int n;
    struct pending *next;
};

struct p2p {
    struct call c;
    struct p2p *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct clique *cliques[MAX_LOCAL];
static int ncliques;
static int group_depth;
/* Blocking inits inside a group: NCCL defers them to ncclGroupEnd, which waits for them
 * (one thread can initialise every rank of a clique that way). */
static struct fcomm *deferred_init[MAX_LOCAL];
static int ndeferred;
static struct call *queued;
static size_t nqueued, capqueued;
static unsigned long long ncalls;
static int (*stream_host)(void *stream, void (*fn)(void *), void *ud);

/* ---- faults ---------------------------------------------------------------------- */

static bool parse_fault(const char *env, unsigned long long *at, int *r) {
    const char *s = getenv(env);
    return s && sscanf(s, "%llu:%d", at, r) == 2;
}

static unsigned long long async_fired; /* asynchronous faults set on a communicator */

/* Counts a call; returns the result an armed fault gives it (ncclSuccess if none). */
static ncclResult_t counted(struct fcomm *c) {
    unsigned long long at;
    int r;
    ncalls++;
    if (parse_fault("VYRE_FAKENCCL_FAIL", &at, &r) && ncalls == at) return (ncclResult_t)r;
    if (c && parse_fault("VYRE_FAKENCCL_ASYNC", &at, &r) && ncalls == at) {
        c->async = (ncclResult_t)r;
        async_fired++;
    }
    return ncclSuccess;
}

/* The counted calls so far, for an in-process fault sweep (spec 101): the fake
 * driver's Lua control (tests/fakecuda/lcontrol.c, fakecuda.nccl) reads it to arm
 * VYRE_FAKENCCL_FAIL / _ASYNC at "the k-th call from now" with setenv. */
API unsigned long long vyre_fakenccl_calls(void);
unsigned long long vyre_fakenccl_calls(void) {
    pthread_mutex_lock(&lock);
    unsigned long long n = ncalls;
    pthread_mutex_unlock(&lock);
    return n;
}

/* How many VYRE_FAKENCCL_ASYNC faults were set on a communicator (an armed one on a call
 * without a communicator, e.g. ncclGroupStart, does nothing). */
API unsigned long long vyre_fakenccl_async_fired(void);
unsigned long long vyre_fakenccl_async_fired(void) {
    pthread_mutex_lock(&lock);
    unsigned long long n = async_fired;
    pthread_mutex_unlock(&lock);
    return n;
}

static double wait_limit(void) {
    const char *s = getenv("VYRE_FAKENCCL_WAIT");
    double v = s ? atof(s) : 0;
    return v > 0 ? v : 30.0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* $VYRE_FAKENCCL_BUSY_US: until when (now_s) the communicators still say in progress;
 * $VYRE_FAKENCCL_BUSY_POLLS: how many more queries do. */
static double busy_until;
static long busy_polls;

static void start_busy(void) {
    const char *s = getenv("VYRE_FAKENCCL_BUSY_US");
    double us = s ? atof(s) : 0;
    if (us > 0) busy_until = now_s() + us * 1e-6;
    s = getenv("VYRE_FAKENCCL_BUSY_POLLS");
    busy_polls = s ? atol(s) : 0;
}

/* The polls: in-progress answers, re-polls (a query after an in-progress answer on that
 * communicator), and re-polls whose thread blocked in between. A voluntary context
 * switch (getrusage's ru_nvcsw) is counted when a thread blocks — nanosleep, a wait —
 * and not when it yields (sched_yield) or is preempted, so it tells a poll that slept
 * from one that only gave the CPU away, whatever the machine's load. */
static unsigned long long polls_busy, polls_again, polls_after_block;

static long thread_blocks(void) {
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nvcsw : 0;
}

API void vyre_fakenccl_polls(unsigned long long out[3]);
void vyre_fakenccl_polls(unsigned long long out[3]) {
    pthread_mutex_lock(&lock);
    out[0] = polls_busy;
    out[1] = polls_again;
    out[2] = polls_after_block;
    pthread_mutex_unlock(&lock);
}

static void nap(void) {
    struct timespec ts = {0, 500000};
    nanosleep(&ts, NULL);
}

/* ---- files (one process per rank) ------------------------------------------------ */

static void path_of(char *out, size_t n, const struct clique *q, const char *what) {
    snprintf(out, n, "/dev/shm/vyre-fakenccl-%s-%s", q->key, what);
}

static bool write_file(const char *path, const void *a, size_t na, const void *b, size_t nb) {
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    bool ok = fwrite(a, 1, na, f) == na && (nb == 0 || fwrite(b, 1, nb, f) == nb);
    ok = fclose(f) == 0 && ok;
    return ok && rename(tmp, path) == 0;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Waits (without the lock) until path exists; false after the wait limit. */
static bool await_file(const char *path) {
    double end = now_s() + wait_limit();
    while (!exists(path)) {
        if (now_s() > end) return false;
        nap();
    }
    return true;
}

static void *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(len > 0 ? (size_t)len : 1);
    if (buf && len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = len > 0 ? (size_t)len : 0;
    return buf;
}

/* ---- arithmetic ---------------------------------------------------------------- */

static size_t type_size(ncclDataType_t t) {
    return t == ncclInt64 || t == ncclUint64 || t == ncclFloat64 ? 8 : 4;
}

#define REDUCE_AS(T)                                               \
    do {                                                           \
        T *x = acc;                                                \
        const T *y = in;                                           \
        for (size_t i = 0; i < n; i++) switch (op) {               \
            case ncclProd: x[i] = (T)(x[i] * y[i]); break;         \
            case ncclMax: x[i] = x[i] > y[i] ? x[i] : y[i]; break; \
            case ncclMin: x[i] = x[i] < y[i] ? x[i] : y[i]; break; \
            default: x[i] = (T)(x[i] + y[i]); break;               \
            }                                                      \
    } while (0)

/* acc[i] = acc[i] op in[i]; integers wrap (computed unsigned), floats in IEEE. */
static void reduce_into(void *acc, const void *in, size_t n, ncclDataType_t t, ncclRedOp_t op) {
    switch (t) {
    case ncclInt32:
        if (op == ncclSum || op == ncclProd) {
            uint32_t *x = acc;
            const uint32_t *y = in;
            for (size_t i = 0; i < n; i++) x[i] = op == ncclSum ? x[i] + y[i] : x[i] * y[i];
        } else {
            REDUCE_AS(int32_t);
        }
        break;
    case ncclInt64:
        if (op == ncclSum || op == ncclProd) {
            uint64_t *x = acc;
            const uint64_t *y = in;
            for (size_t i = 0; i < n; i++) x[i] = op == ncclSum ? x[i] + y[i] : x[i] * y[i];
        } else {
            REDUCE_AS(int64_t);
        }
        break;
    case ncclUint64: REDUCE_AS(uint64_t); break;
    case ncclFloat32: REDUCE_AS(float); break;
    case ncclFloat64: REDUCE_AS(double); break;
    default: REDUCE_AS(uint32_t); break;
    }
}

/* Rank r's result of collective c from every rank's input (ins[j]: rank j's src,
 * ins_n elements each): written to c->dst. Inputs never alias the output (copies). */
static void compute(const struct call *c, int size, void *const *ins, size_t ins_n) {
    size_t es = type_size(c->type);
    int r = c->comm->rank;
    switch (c->kind) {
    case 0: /* all_reduce */
    case 2: /* reduce: only the root receives */
        if (c->kind == 2 && r != c->root) return;
        memcpy(c->dst, ins[0], ins_n * es);
        for (int j = 1; j < size; j++) reduce_into(c->dst, ins[j], ins_n, c->type, c->op);
        return;
    case 1: memcpy(c->dst, ins[c->root], ins_n * es); return; /* broadcast */
    case 3:                                                   /* all_gather */
        for (int j = 0; j < size; j++)
            memcpy((char *)c->dst + (size_t)j * ins_n * es, ins[j], ins_n * es);
        return;
    case 4: { /* reduce_scatter: block r of the sum */
        size_t blk = ins_n / (size_t)size;
        memcpy(c->dst, (const char *)ins[0] + (size_t)r * blk * es, blk * es);
        for (int j = 1; j < size; j++)
            reduce_into(c->dst, (const char *)ins[j] + (size_t)r * blk * es, blk, c->type, c->op);
        return;
    }
    }
}

/* Elements of src a collective reads. */
static size_t src_count(const struct call *c) {
    return c->kind == 4 ? c->count * (size_t)c->comm->size : c->count;
}

/* ---- arrival: ranks of one process ----------------------------------------------- */

static void arrive_local(struct call *c) {
    struct clique *q = c->comm->cq;
    struct pending *p = q->pend;
    while (p && p->seq != c->seq) p = p->next;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p) {
            c->comm->async = ncclSystemError;
            return;
        }
        p->seq = c->seq;
        p->next = q->pend;
        q->pend = p;
    }
    p->c[c->comm->rank] = *c;
    p->arrived[c->comm->rank] = true;
    if (++p->n < q->size) return;
    size_t n = src_count(c), es = type_size(c->type);
    void *ins[MAX_RANKS] = {0};
    for (int j = 0; j < q->size; j++) {
        /* Snapshots: a rank's output may be another rank's input (or its own). */
        ins[j] = malloc(n * es + 1);
        if (ins[j] && p->c[j].src) memcpy(ins[j], p->c[j].src, n * es);
    }
    for (int j = 0; j < q->size; j++)
        if (p->c[j].kind != c->kind || p->c[j].count != c->count)
            p->c[j].comm->async = ncclInvalidUsage;
        else compute(&p->c[j], q->size, ins, n);
    for (int j = 0; j < q->size; j++) free(ins[j]);
    struct pending **pp = &q->pend;
    while (*pp != p) pp = &(*pp)->next;
    *pp = p->next;
    free(p);
}

/* Sends and receives of one process: matched first in, first out per pair. */
static void p2p_local(struct call *c) {
    struct clique *q = c->comm->cq;
    bool send = c->kind == 5;
    struct p2p **other = send ? &q->recvs : &q->sends;
    for (struct p2p **pp = other; *pp; pp = &(*pp)->next) {
        struct call *o = &(*pp)->c;
        int from = send ? c->comm->rank : o->comm->rank, to = send ? o->comm->rank : c->comm->rank;
        if ((send ? o->root : c->root) != from || (send ? c->root : o->root) != to) continue;
        const struct call *s = send ? c : o, *r = send ? o : c;
        memcpy(r->dst, s->src, (s->count < r->count ? s->count : r->count) * type_size(s->type));
        struct p2p *dead = *pp;
        *pp = dead->next;
        free(dead);
        return;
    }
    struct p2p *e = calloc(1, sizeof *e);
    if (!e) return;
    e->c = *c;
    e->next = send ? q->sends : q->recvs;
    if (send) q->sends = e;
    else q->recvs = e;
}

/* ---- arrival: one process per rank (files) --------------------------------------- */

static void arrive_shm(struct call *c) {
    struct fcomm *m = c->comm;
    struct clique *q = m->cq;
    size_t es = type_size(c->type), n = src_count(c);
    char path[256], name[64];
    if (c->kind == 5 || c->kind == 6) {
        int from = c->kind == 5 ? m->rank : c->root, to = c->kind == 5 ? c->root : m->rank;
        uint64_t k = c->kind == 5 ? m->sent[to]++ : m->recvd[from]++;
        snprintf(name, sizeof name, "p%d-%d-%llu", from, to, (unsigned long long)k);
        path_of(path, sizeof path, q, name);
        if (c->kind == 5) {
            if (!write_file(path, c->src, c->count * es, NULL, 0)) m->async = ncclSystemError;
            return;
        }
        pthread_mutex_unlock(&lock);
        bool ok = await_file(path);
        pthread_mutex_lock(&lock);
        size_t len = 0;
        void *data = ok ? read_file(path, &len) : NULL;
        if (!data) {
            m->async = ncclRemoteError;
            return;
        }
        memcpy(c->dst, data, len < c->count * es ? len : c->count * es);
        free(data);
        unlink(path);
        return;
    }
    snprintf(name, sizeof name, "c%llu-r%d", (unsigned long long)c->seq, m->rank);
    path_of(path, sizeof path, q, name);
    if (!write_file(path, c->src, n * es, NULL, 0)) {
        m->async = ncclSystemError;
        return;
    }
    void *ins[MAX_RANKS] = {0};
    bool ok = true;
    pthread_mutex_unlock(&lock);
    for (int j = 0; j < m->size && ok; j++) {
        snprintf(name, sizeof name, "c%llu-r%d", (unsigned long long)c->seq, j);
        path_of(path, sizeof path, q, name);
        size_t len = 0;
        ok = await_file(path) && (ins[j] = read_file(path, &len)) != NULL && len == n * es;
    }
    pthread_mutex_lock(&lock);
    if (ok) compute(c, m->size, ins, n);
    else m->async = ncclRemoteError;
    for (int j = 0; j < m->size; j++) free(ins[j]);
    /* Everyone has read collective seq - 1 once all arrived at seq: drop my file of it. */
    if (ok && c->seq > 0) {
        snprintf(name, sizeof name, "c%llu-r%d", (unsigned long long)(c->seq - 1), m->rank);
        path_of(path, sizeof path, q, name);
        unlink(path);
    }
}

/* Runs in stream order (from the fake driver, which holds its own lock). */
static void run_call(void *ud) {
    struct call *c = ud;
    pthread_mutex_lock(&lock);
    /* The k-th collective of a rank is the k-th to run on its stream (a graph replays
     * its calls again: each replay is a new collective). */
    if (c->kind < 5) c->seq = c->comm->coll_seq++;
    if (c->comm->async == ncclSuccess || c->comm->async == ncclInProgress) {
        if (c->comm->shm) arrive_shm(c);
        else if (c->kind >= 5) p2p_local(c);
        else arrive_local(c);
    }
    pthread_mutex_unlock(&lock);
}

/* Hands the queued calls to their streams. A call captured into a graph must stay
 * alive for every replay, so each call gets its own block that is never freed (the
 * fake is a test tool; a process makes few). */
static ncclResult_t flush(void) {
    for (size_t i = 0; i < nqueued; i++) {
        struct call *c = malloc(sizeof *c);
        if (!c) return ncclSystemError;
        *c = queued[i];
        pthread_mutex_unlock(&lock);
        int r = stream_host ? stream_host(c->stream, run_call, c) : 1;
        pthread_mutex_lock(&lock);
        if (r != 0) {
            nqueued = 0;
            return ncclUnhandledCudaError;
        }
    }
    nqueued = 0;
    return ncclSuccess;
}

static ncclResult_t enqueue(struct call *c) {
    if (nqueued == capqueued) {
        size_t cap = capqueued ? capqueued * 2 : 16;
        struct call *v = realloc(queued, cap * sizeof *v);
        if (!v) return ncclSystemError;
        queued = v;
        capqueued = cap;
    }
    queued[nqueued++] = *c;
    return group_depth ? ncclSuccess : flush();
}

/* ---- entry points ----------------------------------------------------------------- */

/* Declared from the vendored prototypes, so a drift from what vyre calls fails here. */
#define DECLARE(n, req) API vyre_nccl_fn_##n n;
VYRE_NCCL_ENTRIES(DECLARE)
#undef DECLARE

API ncclResult_t ncclGetVersion(int *v) {
    if (!v) return ncclInvalidArgument;
    const char *s = getenv("VYRE_FAKENCCL_VERSION");
    *v = s ? atoi(s) : 22703;
    return ncclSuccess;
}

API const char *ncclGetErrorString(ncclResult_t r) {
    switch ((int)r) {
    case 0: return "no error (fake NCCL)";
    case 1: return "unhandled cuda error (fake NCCL)";
    case 2: return "unhandled system error (fake NCCL)";
    case 3: return "internal error (fake NCCL)";
    case 4: return "invalid argument (fake NCCL)";
    case 5: return "invalid usage (fake NCCL)";
    case 6: return "remote process exited or there was a network error (fake NCCL)";
    case 7: return "NCCL operation in progress (fake NCCL)";
    default: return "unknown result (fake NCCL)";
    }
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return ncclInvalidArgument;
    pthread_mutex_lock(&lock);
    ncclResult_t r = counted(NULL);
    pthread_mutex_unlock(&lock);
    if (r != ncclSuccess) return r;
    int fd = open("/dev/urandom", O_RDONLY);
    bool ok =
        fd >= 0 && read(fd, id->internal, sizeof id->internal) == (ssize_t)sizeof id->internal;
    if (fd >= 0) close(fd);
    return ok ? ncclSuccess : ncclSystemError;
}

static void load_hook(void) {
    if (stream_host) return;
    const char *p = getenv("VYRE_LIBCUDA");
    void *h = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
    void *s = h ? dlsym(h, "vyre_fakecuda_stream_host") : NULL;
    if (s) memcpy(&stream_host, &s, sizeof s);
}

static struct clique *clique_for(const ncclUniqueId *id, int size) {
    char key[40];
    for (int i = 0; i < 16; i++) snprintf(key + 2 * i, 3, "%02x", (unsigned char)id->internal[i]);
    for (int i = 0; i < ncliques; i++)
        if (strcmp(cliques[i]->key, key) == 0) return cliques[i];
    if (ncliques == MAX_LOCAL) return NULL;
    struct clique *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    memcpy(q->key, key, sizeof key);
    q->size = size;
    cliques[ncliques++] = q;
    return q;
}

/* Every rank joined: here (one process) or as files (one process per rank). */
static bool complete(struct fcomm *c) {
    struct clique *q = c->cq;
    if (q->joined_here == q->size) return true;
    for (int j = 0; j < q->size; j++) {
        char path[256], name[32];
        snprintf(name, sizeof name, "join-%d", j);
        path_of(path, sizeof path, q, name);
        if (!exists(path)) return false;
    }
    c->shm = true;
    return true;
}

static ncclResult_t wait_joined(struct fcomm *c);

static ncclResult_t init_rank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank,
                              bool blocking) {
    if (!out || nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    load_hook();
    pthread_mutex_lock(&lock);
    ncclResult_t r = counted(NULL);
    struct clique *q = r == ncclSuccess ? clique_for(&id, nranks) : NULL;
    if (r == ncclSuccess && (!q || q->size != nranks || q->local[rank])) r = ncclInvalidUsage;
    struct fcomm *c = r == ncclSuccess ? calloc(1, sizeof *c) : NULL;
    if (r == ncclSuccess && !c) r = ncclSystemError;
    if (r != ncclSuccess) {
        pthread_mutex_unlock(&lock);
        return r;
    }
    c->cq = q;
    c->rank = rank;
    c->size = nranks;
    c->blocking = blocking;
    c->busy_nvcsw = -1;
    q->local[rank] = c;
    q->joined_here++;
    char path[256], name[32];
    snprintf(name, sizeof name, "join-%d", rank);
    path_of(path, sizeof path, q, name);
    write_file(path, "", 0, NULL, 0);
    c->async = ncclInProgress;
    *out = (ncclComm_t)(void *)c;
    bool defer = blocking && group_depth > 0 && ndeferred < MAX_LOCAL;
    if (defer) deferred_init[ndeferred++] = c;
    pthread_mutex_unlock(&lock);
    if (!blocking) return ncclInProgress;
    if (defer) return ncclSuccess;
    return wait_joined(c);
}

/* A blocking init's wait: every rank joined, or ncclRemoteError after the wait limit. */
static ncclResult_t wait_joined(struct fcomm *c) {
    double end = now_s() + wait_limit();
    for (;;) {
        pthread_mutex_lock(&lock);
        bool done = complete(c);
        if (done) c->async = ncclSuccess;
        pthread_mutex_unlock(&lock);
        if (done) return ncclSuccess;
        if (now_s() > end) return ncclRemoteError;
        nap();
    }
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    return init_rank(comm, nranks, id, rank, true);
}

API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                        ncclConfig_t *config) {
    if (config && (config->magic != VYRE_NCCL_API_MAGIC || config->size < sizeof(size_t)))
        return ncclInvalidArgument;
    return init_rank(comm, nranks, id, rank, !config || config->blocking != 0);
}

API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
    (void)devlist;
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    group_depth++;
    for (int i = 0; i < ndev && r == ncclSuccess; i++) {
        r = init_rank(&comms[i], ndev, id, i, false);
        if (r == ncclInProgress) r = ncclSuccess;
    }
    group_depth--;
    for (int i = 0; i < ndev && r == ncclSuccess; i++)
        ((struct fcomm *)(void *)comms[i])->async = ncclSuccess;
    return r;
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
    struct fcomm *c = (struct fcomm *)(void *)comm;
    if (!c || !state) return ncclInvalidArgument;
    long blocks = thread_blocks();
    pthread_mutex_lock(&lock);
    if (c->busy_nvcsw >= 0) {
        polls_again++;
        if (blocks != c->busy_nvcsw) polls_after_block++;
    }
    if (c->async == ncclInProgress && complete(c)) c->async = ncclSuccess;
    bool busy = c->async == ncclSuccess && (now_s() < busy_until || busy_polls > 0);
    if (busy && busy_polls > 0) busy_polls--;
    *state = busy ? ncclInProgress : c->async;
    if (*state == ncclInProgress) polls_busy++;
    c->busy_nvcsw = *state == ncclInProgress ? blocks : -1;
    pthread_mutex_unlock(&lock);
    return ncclSuccess;
}

/* One process per rank: a rank's files may be unlinked only once every rank has read
 * them, i.e. once every rank is done. Each rank appends a byte to <prefix>-bye when it
 * leaves and waits (at most 5 s) until it holds `size` bytes; the last one removes it. */
static void leave_shm(struct fcomm *c) {
    char path[256];
    path_of(path, sizeof path, c->cq, "bye");
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0) return;
    bool ok = write(fd, "x", 1) == 1;
    close(fd);
    double end = now_s() + 5.0;
    while (ok) {
        FILE *f = fopen(path, "rb");
        if (!f) return; /* the last rank removed it: everyone is done */
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fclose(f);
        if (len >= c->size) {
            unlink(path);
            return;
        }
        if (now_s() > end) return;
        nap();
    }
}

static void drop(struct fcomm *c) {
    if (c->shm && c->async == ncclSuccess) leave_shm(c);
    pthread_mutex_lock(&lock);
    struct clique *q = c->cq;
    char path[256], name[64];
    snprintf(name, sizeof name, "join-%d", c->rank);
    path_of(path, sizeof path, q, name);
    unlink(path);
    for (uint64_t k = c->coll_seq > 2 ? c->coll_seq - 2 : 0; k < c->coll_seq; k++) {
        snprintf(name, sizeof name, "c%llu-r%d", (unsigned long long)k, c->rank);
        path_of(path, sizeof path, q, name);
        unlink(path);
    }
    q->local[c->rank] = NULL;
    q->joined_here--;
    free(c);
    /* The last communicator of the clique here: forget the clique, so a process may open
     * groups without end (the fault sweep of spec 101 opens hundreds; the table holds 64). */
    if (q->joined_here <= 0) {
        for (int i = 0; i < ncliques; i++)
            if (cliques[i] == q) {
                cliques[i] = cliques[--ncliques];
                break;
            }
        for (struct pending *p = q->pend, *n; p; p = n) {
            n = p->next;
            free(p);
        }
        for (struct p2p *p = q->sends, *n; p; p = n) {
            n = p->next;
            free(p);
        }
        for (struct p2p *p = q->recvs, *n; p; p = n) {
            n = p->next;
            free(p);
        }
        free(q);
    }
    pthread_mutex_unlock(&lock);
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    struct fcomm *c = (struct fcomm *)(void *)comm;
    if (!c) return ncclInvalidArgument;
    pthread_mutex_lock(&lock);
    ncclResult_t r = counted(NULL);
    pthread_mutex_unlock(&lock);
    drop(c);
    return r;
}

API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    struct fcomm *c = (struct fcomm *)(void *)comm;
    if (!c) return ncclInvalidArgument;
    pthread_mutex_lock(&lock);
    ncclResult_t r = counted(NULL);
    pthread_mutex_unlock(&lock);
    return r == ncclSuccess ? (c->blocking ? ncclSuccess : ncclInProgress) : r;
}

API ncclResult_t ncclCommAbort(ncclComm_t comm) {
    struct fcomm *c = (struct fcomm *)(void *)comm;
    if (c) drop(c);
    return ncclSuccess;
}

API ncclResult_t ncclGroupStart(void) {
    pthread_mutex_lock(&lock);
    ncclResult_t r = counted(NULL);
    if (r == ncclSuccess) group_depth++;
    pthread_mutex_unlock(&lock);
    return r;
}

API ncclResult_t ncclGroupEnd(void) {
    pthread_mutex_lock(&lock);
    ncclResult_t r = counted(NULL);
    if (group_depth > 0) group_depth--;
    if (r == ncclSuccess && group_depth == 0) {
        r = flush();
        start_busy();
    } else if (r != ncclSuccess && group_depth == 0) nqueued = 0;
    struct fcomm *inits[MAX_LOCAL];
    int ninits = group_depth == 0 ? ndeferred : 0;
    if (ninits) memcpy(inits, deferred_init, sizeof inits[0] * (size_t)ninits);
    if (group_depth == 0) ndeferred = 0;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < ninits && r == ncclSuccess; i++) r = wait_joined(inits[i]);
    return r;
}

static ncclResult_t issue(int kind, const void *src, void *dst, size_t count, ncclDataType_t t,
                          ncclRedOp_t op, int root, ncclComm_t comm, vyre_nccl_stream stream) {
    struct fcomm *c = (struct fcomm *)(void *)comm;
    if (!c || (kind != 6 && !src && count) || (kind != 5 && !dst && count))
        return ncclInvalidArgument;
    if ((kind == 1 || kind == 2 || kind >= 5) && (root < 0 || root >= c->size))
        return ncclInvalidArgument;
    pthread_mutex_lock(&lock);
    ncclResult_t r = c->async != ncclSuccess ? ncclInvalidUsage : counted(c);
    struct call call = {kind, src, dst, count, t, op, root, c, (void *)stream, 0};
    if (r == ncclSuccess) r = enqueue(&call);
    pthread_mutex_unlock(&lock);
    return r;
}

API ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t c, vyre_nccl_stream st) {
    return issue(0, s, d, n, t, op, 0, c, st);
}
API ncclResult_t ncclBroadcast(const void *s, void *d, size_t n, ncclDataType_t t, int root,
                               ncclComm_t c, vyre_nccl_stream st) {
    return issue(1, s, d, n, t, ncclSum, root, c, st);
}
API ncclResult_t ncclReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op,
                            int root, ncclComm_t c, vyre_nccl_stream st) {
    return issue(2, s, d, n, t, op, root, c, st);
}
API ncclResult_t ncclAllGather(const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t c,
                               vyre_nccl_stream st) {
    return issue(3, s, d, n, t, ncclSum, 0, c, st);
}
API ncclResult_t ncclReduceScatter(const void *s, void *d, size_t n, ncclDataType_t t,
                                   ncclRedOp_t op, ncclComm_t c, vyre_nccl_stream st) {
    return issue(4, s, d, n, t, op, 0, c, st);
}
API ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                          vyre_nccl_stream st) {
    return issue(5, s, NULL, n, t, ncclSum, peer, c, st);
}
API ncclResult_t ncclRecv(void *d, size_t n, ncclDataType_t t, int peer, ncclComm_t c,
                          vyre_nccl_stream st) {
    return issue(6, NULL, d, n, t, ncclSum, peer, c, st);
}
