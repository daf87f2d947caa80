/* nccl_group.c — NCCL communicators over vyre devices, collectives on vyre buffers,
 * collectives as sequence/graph steps, and the lockstep sequence of one process
 * driving many devices (docs/MULTIGPU.md).
 *
 * Every communicator is created non-blocking (ncclCommInitRankConfig, blocking = 0):
 * NCCL then answers ncclInProgress instead of waiting, and vyre polls
 * ncclCommGetAsyncError until the work is done or the communicator's deadline has
 * passed, when it calls ncclCommAbort. So a rank that never joins, or one that dies,
 * costs the others at most the timeout, never a hang. Calls are checked in full
 * before anything is enqueued: a mistake in one rank's list leaves every stream as it
 * was. Each call is issued on its device's stream, so it is ordered with the kernels
 * vyre launches there. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_int.h"

#define DEFAULT_TIMEOUT_S 300.0

static double resolve_timeout(double t) {
    if (t > 0) return t;
    const char *e = getenv("VYRE_NCCL_TIMEOUT");
    if (e && *e) {
        char *end = NULL;
        double v = strtod(e, &end);
        if (end && *end == '\0' && v > 0) return v;
    }
    return DEFAULT_TIMEOUT_S;
}

/* Polling NCCL's progress (or a stream): a collective's enqueue or a small one's whole
 * run takes microseconds, so a fixed sleep per poll put a floor of a sleep under every
 * call (0.2 ms made a 1 MiB all_reduce 5x slower than torch's). The caller checks once
 * before pausing; then the poller yields the CPU for the first SPIN_NS (answers within a
 * few microseconds), then sleeps from 10 us, doubling up to 1 ms but never more than a
 * 16th of the time waited (so no busy core on a long wait, and little lateness on a
 * short one). The deadline is the caller's, checked each poll. */
#define SPIN_NS 50000u
#define SLEEP_MIN_NS 10000L
#define SLEEP_MAX_NS 1000000L

struct poller {
    uint64_t start;
    long sleep_ns;
};

static struct poller poller_start(void) {
    struct poller p = {vyre_cu_now_ns(), SLEEP_MIN_NS};
    return p;
}

static void pause_briefly(struct poller *p) {
    if (vyre_cu_now_ns() - p->start < SPIN_NS) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, p->sleep_ns};
    nanosleep(&ts, NULL);
    /* Doubling, capped at 1 ms and at 1/16 of the time waited so far: a wait ends at
     * most ~6 % late (a 1.5 ms collective is not answered 1 ms after it finished). */
    long next = p->sleep_ns * 2, share = (long)((vyre_cu_now_ns() - p->start) / 16u);
    if (next > share) next = share;
    if (next > SLEEP_MAX_NS) next = SLEEP_MAX_NS;
    p->sleep_ns = next < SLEEP_MIN_NS ? SLEEP_MIN_NS : next;
}

static enum vyre_status no_nccl(const struct vyre_nccl_lib *l, struct vyre_error *err) {
    return vyre_error_set(err, VYRE_ERR_UNSUPPORTED, "%s", l->info.reason);
}

static void abort_all(vyre_nccl_comm *const *c, size_t n) {
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    for (size_t i = 0; i < n; i++) {
        if (!c[i] || !c[i]->comm || c[i]->failed) continue;
        vyre_cu_current(c[i]->dev);
        l->ncclCommAbort(c[i]->comm);
        c[i]->comm = NULL;
        c[i]->failed = true;
    }
}

/* Polls the comms until none is in progress; the first error, or the deadline, aborts
 * them all (one failed rank of a group leaves the others waiting for it). */
static enum vyre_status settle(vyre_nccl_comm *const *c, size_t n, const char *call,
                               struct vyre_error *err) {
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    double timeout = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i]->timeout_s > timeout) timeout = c[i]->timeout_s;
    uint64_t deadline = vyre_cu_now_ns() + (uint64_t)(timeout * 1e9);
    struct poller poll = poller_start();
    for (;;) {
        bool busy = false;
        for (size_t i = 0; i < n; i++) {
            ncclResult_t state = ncclSuccess;
            ncclResult_t r = l->ncclCommGetAsyncError(c[i]->comm, &state);
            if (r == ncclSuccess && state == ncclInProgress) {
                busy = true;
                continue;
            }
            if (r != ncclSuccess || state != ncclSuccess) {
                enum vyre_status st = vyre_nccl_fail(r != ncclSuccess ? r : state, call, err);
                abort_all(c, n);
                return st;
            }
        }
        if (!busy) return VYRE_OK;
        if (vyre_cu_now_ns() > deadline) {
            abort_all(c, n);
            return vyre_error_set(err, VYRE_ERR_CUDA,
                                  "%s: NCCL did not finish within %.1f s (a rank that never "
                                  "joined, or one that stopped?); the communicator was "
                                  "aborted. Fix: start every rank with the same id and size, "
                                  "check the other ranks' output, raise $VYRE_NCCL_TIMEOUT (or "
                                  "opts.timeout) if they are only slow, and open a new group.",
                                  call, timeout);
        }
        pause_briefly(&poll);
    }
}

static vyre_nccl_comm *new_comm(struct vyre_cuda_device *d, int rank, int size, double t,
                                bool blocking) {
    vyre_nccl_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->dev = d;
    c->rank = rank;
    c->size = size;
    c->timeout_s = t;
    c->blocking = blocking;
    c->local = 1;
    c->refs = 1;
    vyre_cuda_device_retain(d);
    return c;
}

static ncclConfig_t comm_config(bool blocking) {
    ncclConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.magic = VYRE_NCCL_API_MAGIC;
    cfg.version = VYRE_NCCL_CONFIG_VERSION;
    cfg.blocking = blocking ? 1 : 0;
    cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = cfg.splitShare = VYRE_NCCL_UNDEF_INT;
    cfg.netName = NULL;
    return cfg;
}

static bool parse_id(const char *hex, ncclUniqueId *id) {
    if (!hex || strlen(hex) != VYRE_NCCL_ID_CHARS) return false;
    for (size_t i = 0; i < VYRE_NCCL_UNIQUE_ID_BYTES; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = hex[2 * i + (size_t)k];
            int x = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
            if (x < 0) return false;
            v = v * 16 + x;
        }
        id->internal[i] = (char)v;
    }
    return true;
}

static bool wants_blocking(const struct vyre_nccl_options *o, bool dflt) {
    if (!o || o->mode == VYRE_NCCL_MODE_DEFAULT) return dflt;
    return o->mode == VYRE_NCCL_BLOCKING;
}

static double opts_timeout(const struct vyre_nccl_options *o) {
    return resolve_timeout(o ? o->timeout_s : 0);
}

bool vyre_nccl_comm_blocking(const vyre_nccl_comm *c) { return c && c->blocking; }

enum vyre_status vyre_nccl_init_rank(vyre_cuda_device *d, int rank, int size, const char *id,
                                     const struct vyre_nccl_options *opts,
                                     vyre_nccl_comm **out, struct vyre_error *err) {
    if (!out) return vyre_error_set(err, VYRE_ERR_ARG, "group: out is NULL. Fix: pass a pointer.");
    *out = NULL;
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    if (!l->info.usable) return no_nccl(l, err);
    if (size < 1 || rank < 0 || rank >= size)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "group: rank %d of size %d is out of range. Fix: ranks are 0 .. "
                              "size - 1 (bin/vyre launch sets VYRE_RANK and VYRE_SIZE).",
                              rank, size);
    ncclUniqueId uid;
    if (!parse_id(id, &uid))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "group: the id must be the %d hex digits vyre.cuda.nccl_id() "
                              "gives. Fix: make it once on one rank and pass it to every rank "
                              "(bin/vyre launch sets VYRE_NCCL_ID).",
                              VYRE_NCCL_ID_CHARS);
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    if (opts && (opts->mode < VYRE_NCCL_MODE_DEFAULT || opts->mode > VYRE_NCCL_NONBLOCKING))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "group: mode %d is not a vyre_nccl_mode. Fix: use "
                              "VYRE_NCCL_MODE_DEFAULT, VYRE_NCCL_BLOCKING or "
                              "VYRE_NCCL_NONBLOCKING.",
                              (int)opts->mode);
    bool blocking = wants_blocking(opts, false);
    vyre_nccl_comm *c = new_comm(d, rank, size, opts_timeout(opts), blocking);
    if (!c)
        return vyre_error_set(err, VYRE_ERR_NOMEM, "group: out of host memory. Fix: free memory.");
    ncclResult_t r;
    if (l->ncclCommInitRankConfig) {
        ncclConfig_t cfg = comm_config(blocking);
        r = l->ncclCommInitRankConfig(&c->comm, size, uid, rank, &cfg);
    } else {
        r = l->ncclCommInitRank(&c->comm, size, uid, rank); /* old NCCL: blocking */
    }
    if (r != ncclSuccess && r != ncclInProgress) {
        st = vyre_nccl_fail(
            r, l->ncclCommInitRankConfig ? "ncclCommInitRankConfig" : "ncclCommInitRank", err);
        if (c->comm) l->ncclCommAbort(c->comm);
        c->comm = NULL;
        vyre_nccl_comm_free(c);
        return st;
    }
    st = settle(&c, 1, "ncclCommInitRankConfig", err);
    if (st != VYRE_OK) {
        vyre_nccl_comm_free(c);
        return st;
    }
    *out = c;
    return VYRE_OK;
}

enum vyre_status vyre_nccl_init_all(vyre_cuda_device *const *devs, int n,
                                    const struct vyre_nccl_options *opts,
                                    vyre_nccl_comm **comms, struct vyre_error *err) {
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    if (!devs || !comms || n < 1)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "group: no devices. Fix: pass at least one device.");
    for (int i = 0; i < n; i++) comms[i] = NULL;
    if (!l->info.usable) return no_nccl(l, err);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (devs[i]->ordinal == devs[j]->ordinal)
                return vyre_error_set(err, VYRE_ERR_ARG,
                                      "group: device %d is listed twice. Fix: list each GPU "
                                      "once, e.g. {0, 1}.",
                                      devs[i]->ordinal);
    if (opts && (opts->mode < VYRE_NCCL_MODE_DEFAULT || opts->mode > VYRE_NCCL_NONBLOCKING))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "group: mode %d is not a vyre_nccl_mode. Fix: use "
                              "VYRE_NCCL_MODE_DEFAULT, VYRE_NCCL_BLOCKING or "
                              "VYRE_NCCL_NONBLOCKING.",
                              (int)opts->mode);
    /* Every rank lives in this process, so none can go missing: blocking by default. */
    bool blocking = wants_blocking(opts, true);
    double t = opts_timeout(opts);
    enum vyre_status st = VYRE_OK;
    for (int i = 0; i < n && st == VYRE_OK; i++) {
        st = vyre_cu_enter(devs[i], err);
        if (st == VYRE_OK && !(comms[i] = new_comm(devs[i], i, n, t, blocking)))
            st =
                vyre_error_set(err, VYRE_ERR_NOMEM, "group: out of host memory. Fix: free memory.");
        if (st == VYRE_OK) comms[i]->local = n;
    }
    ncclResult_t r = ncclSuccess;
    const char *call = "ncclCommInitRankConfig";
    if (st == VYRE_OK && l->ncclCommInitRankConfig) {
        /* One id, every rank initialised inside one NCCL group, each with its own
         * device's context current (NCCL takes the device from the current context). */
        ncclUniqueId uid;
        memset(&uid, 0, sizeof uid);
        r = l->ncclGetUniqueId(&uid);
        if (r != ncclSuccess) call = "ncclGetUniqueId";
        if (r == ncclSuccess) r = l->ncclGroupStart();
        for (int i = 0; i < n && r == ncclSuccess; i++) {
            ncclConfig_t cfg = comm_config(blocking);
            st = vyre_cu_enter(devs[i], err);
            if (st != VYRE_OK) break;
            r = l->ncclCommInitRankConfig(&comms[i]->comm, n, uid, i, &cfg);
            if (r == ncclInProgress) r = ncclSuccess;
        }
        ncclResult_t e = l->ncclGroupEnd();
        if (r == ncclSuccess && e != ncclSuccess && e != ncclInProgress) {
            r = e;
            call = "ncclGroupEnd";
        }
    } else if (st == VYRE_OK) {
        call = "ncclCommInitAll"; /* old NCCL: blocking, no timeout */
        ncclComm_t raw[VYRE_CU_MAX_ORDINALS];
        int ords[VYRE_CU_MAX_ORDINALS];
        for (int i = 0; i < n && i < VYRE_CU_MAX_ORDINALS; i++) ords[i] = devs[i]->ordinal;
        r = l->ncclCommInitAll(raw, n, ords);
        for (int i = 0; i < n && r == ncclSuccess; i++) comms[i]->comm = raw[i];
    }
    if (st == VYRE_OK && r != ncclSuccess) st = vyre_nccl_fail(r, call, err);
    if (st == VYRE_OK) st = settle(comms, (size_t)n, call, err);
    if (st != VYRE_OK) {
        for (int i = 0; i < n; i++) {
            if (comms[i]) comms[i]->failed = comms[i]->failed || st != VYRE_OK;
            vyre_nccl_comm_free(comms[i]);
            comms[i] = NULL;
        }
    }
    return st;
}

void vyre_nccl_comm_unref(vyre_nccl_comm *c) {
    if (!c || --c->refs > 0) return;
    vyre_cuda_device_release(c->dev);
    free(c);
}

/* The NCCL communicator goes now; the struct stays while collective steps refer to it
 * (they then report "the group was freed"). */
void vyre_nccl_comm_free(vyre_nccl_comm *c) {
    if (!c) return;
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    if (c->comm) {
        vyre_cu_current(c->dev);
        /* A communicator is finalised first (its outstanding work flushed, polled with
         * the timeout); a failed or stuck one is aborted. A failure here has no caller
         * to return to (free cannot fail), so it becomes the device's deferred error:
         * the next call on the device raises it, as other failed releases do. */
        struct vyre_error err;
        vyre_error_clear(&err);
        bool lost = false;
        if (!c->failed && l->ncclCommFinalize) {
            ncclResult_t r = l->ncclCommFinalize(c->comm);
            if (r != ncclSuccess && r != ncclInProgress) {
                vyre_nccl_fail(r, "ncclCommFinalize", &err);
                lost = true;
            } else if (settle(&c, 1, "ncclCommFinalize", &err) != VYRE_OK) {
                lost = true;
                c->comm = NULL; /* settle aborted it */
            }
            if (lost) c->failed = true;
        }
        if (c->comm && c->failed) {
            l->ncclCommAbort(c->comm);
        } else if (c->comm) {
            ncclResult_t r = l->ncclCommDestroy(c->comm);
            if (r != ncclSuccess) {
                vyre_nccl_fail(r, "ncclCommDestroy", &err);
                lost = true;
            }
        }
        c->comm = NULL;
        if (lost) vyre_cu_defer(c->dev, &err);
    }
    vyre_nccl_comm_unref(c);
}

int vyre_nccl_comm_rank(const vyre_nccl_comm *c) { return c ? c->rank : -1; }
int vyre_nccl_comm_size(const vyre_nccl_comm *c) { return c ? c->size : 0; }
vyre_cuda_device *vyre_nccl_comm_device(const vyre_nccl_comm *c) { return c ? c->dev : NULL; }

const char *vyre_nccl_coll_name(enum vyre_nccl_coll c) {
    static const char *const names[] = {"all_reduce",     "broadcast",  "reduce", "all_gather",
                                        "reduce_scatter", "all_to_all", "send",   "recv"};
    return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "?";
}

const char *vyre_nccl_op_name(enum vyre_nccl_op op) {
    static const char *const names[] = {"add", "prod", "min", "max"};
    return (unsigned)op < 4 ? names[op] : "?";
}

/* ---- checking ------------------------------------------------------------------ */

static ncclDataType_t nccl_type(enum vyre_type t) {
    switch (t) {
    case VYRE_I32: return ncclInt32;
    case VYRE_I64: return ncclInt64;
    case VYRE_U64: return ncclUint64;
    case VYRE_F32: return ncclFloat32;
    case VYRE_F64: return ncclFloat64;
    default: return ncclUint32; /* u32, and bool as its 32-bit words */
    }
}

static ncclRedOp_t nccl_op(enum vyre_nccl_op op) {
    switch (op) {
    case VYRE_NCCL_PROD: return ncclProd;
    case VYRE_NCCL_MIN: return ncclMin;
    case VYRE_NCCL_MAX: return ncclMax;
    default: return ncclSum;
    }
}

static bool reduces(enum vyre_nccl_coll c) {
    return c == VYRE_NCCL_ALL_REDUCE || c == VYRE_NCCL_REDUCE || c == VYRE_NCCL_REDUCE_SCATTER;
}

#define BAD(...) vyre_error_set(err, VYRE_ERR_ARG, __VA_ARGS__)

/* Element counts a call moves: *in from src, *out into dst (0: not used). */
static enum vyre_status shape(const struct vyre_nccl_call *c, size_t i, struct vyre_error *err) {
    const char *name = vyre_nccl_coll_name(c->coll);
    vyre_cuda_buffer *s = c->src, *d = c->dst ? c->dst : c->src;
    uint64_t size = (uint64_t)c->comm->size;
    if (!s)
        return BAD("%s: buffer %zu is missing. Fix: pass one Buffer per device of the group.", name,
                   i + 1);
    if (s->dev != c->comm->dev || d->dev != c->comm->dev)
        return BAD("%s: buffer %zu is on device %d, but rank %d of the group is on device %d. "
                   "Fix: list the buffers in the order of g.backends, each made by its "
                   "backend.",
                   name, i + 1, (s->dev != c->comm->dev ? s : d)->dev->ordinal, c->comm->rank,
                   c->comm->dev->ordinal);
    if (s->type != d->type)
        return BAD("%s: buffer %zu: source is %s but destination is %s. Fix: use buffers of "
                   "one type.",
                   name, i + 1, vyre_type_name(s->type), vyre_type_name(d->type));
    if (reduces(c->coll) && s->type == VYRE_BOOL &&
        (c->op == VYRE_NCCL_ADD || c->op == VYRE_NCCL_PROD))
        return BAD("%s: bool buffers reduce with \"min\" (and) or \"max\" (or) only, not "
                   "\"%s\". Fix: pass op \"max\" for or, \"min\" for and, or use u32.",
                   name, vyre_nccl_op_name(c->op));
    uint64_t ns = s->count, nd = d->count;
    switch (c->coll) {
    case VYRE_NCCL_ALL_REDUCE:
    case VYRE_NCCL_BROADCAST:
    case VYRE_NCCL_REDUCE:
        if (ns != nd)
            return BAD("%s: buffer %zu: source has %llu elements, destination %llu. Fix: "
                       "the same count, or no destination list to work in place.",
                       name, i + 1, (unsigned long long)ns, (unsigned long long)nd);
        break;
    case VYRE_NCCL_ALL_GATHER:
        if (!c->dst || nd != ns * size)
            return BAD("%s: buffer %zu: the destination must hold size x source = %llu x %llu "
                       "elements (got %llu). Fix: dst[i] = be:buffer(type, %llu).",
                       name, i + 1, (unsigned long long)size, (unsigned long long)ns,
                       (unsigned long long)(c->dst ? nd : 0), (unsigned long long)(ns * size));
        break;
    case VYRE_NCCL_REDUCE_SCATTER:
        if (!c->dst || ns != nd * size)
            return BAD("%s: buffer %zu: the source must hold size x destination = %llu x %llu "
                       "elements (got %llu). Fix: dst[i] = be:buffer(type, #src / %llu).",
                       name, i + 1, (unsigned long long)size, (unsigned long long)(c->dst ? nd : 0),
                       (unsigned long long)ns, (unsigned long long)size);
        break;
    case VYRE_NCCL_ALL_TO_ALL:
        if (!c->dst || c->dst == c->src || ns != nd || ns % size)
            return BAD("%s: buffer %zu: source and destination must be two buffers of the same "
                       "count, a multiple of the group size %llu (got %llu and %llu). Fix: "
                       "block j of src goes to rank j; pass a second list.",
                       name, i + 1, (unsigned long long)size, (unsigned long long)ns,
                       (unsigned long long)(c->dst ? nd : 0));
        break;
    case VYRE_NCCL_SEND:
    case VYRE_NCCL_RECV: break;
    }
    bool rooted = c->coll == VYRE_NCCL_BROADCAST || c->coll == VYRE_NCCL_REDUCE;
    bool p2p = c->coll == VYRE_NCCL_SEND || c->coll == VYRE_NCCL_RECV;
    if ((rooted || p2p) &&
        (c->root < 0 || c->root >= c->comm->size || (p2p && c->root == c->comm->rank)))
        return BAD("%s: %s %d is not %s of this group of %d. Fix: ranks are 0 .. %d.", name,
                   p2p ? "peer" : "root", c->root, p2p ? "another rank" : "a rank", c->comm->size,
                   c->comm->size - 1);
    return VYRE_OK;
}

/* The whole list: every call valid, and all calls one collective over one group. */
static enum vyre_status check_calls(const struct vyre_nccl_call *calls, size_t n,
                                    struct vyre_error *err) {
    if (!calls || n == 0) return BAD("collective: no calls. Fix: pass one per device.");
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    if (!l->info.usable) return no_nccl(l, err);
    for (size_t i = 0; i < n; i++) {
        const struct vyre_nccl_call *c = &calls[i];
        if (!c->comm || !c->comm->comm)
            return BAD("%s: the group was freed or aborted after an error. Fix: open a new "
                       "group.",
                       vyre_nccl_coll_name(c->coll));
        enum vyre_status st = shape(c, i, err);
        if (st != VYRE_OK) return st;
        if (i == 0) continue;
        const struct vyre_nccl_call *a = &calls[0];
        if (c->coll != a->coll || c->op != a->op || c->root != a->root)
            return BAD("collective: call %zu differs from call 1 (collective, op or root). "
                       "Fix: one collective at a time.",
                       i + 1);
        if (c->src->type != a->src->type || c->src->count != a->src->count)
            return BAD("%s: buffer %zu is %s[%llu] but buffer 1 is %s[%llu]. Fix: every "
                       "device's buffer must have the same type and count.",
                       vyre_nccl_coll_name(c->coll), i + 1, vyre_type_name(c->src->type),
                       (unsigned long long)c->src->count, vyre_type_name(a->src->type),
                       (unsigned long long)a->src->count);
        for (size_t j = 0; j < i; j++)
            if (calls[j].comm == c->comm)
                return BAD("%s: buffers %zu and %zu are both for rank %d. Fix: one buffer "
                           "per device, in the order of g.backends.",
                           vyre_nccl_coll_name(c->coll), j + 1, i + 1, c->comm->rank);
    }
    return VYRE_OK;
}

/* ---- issuing ------------------------------------------------------------------- */

static ncclResult_t issue_one(const struct vyre_nccl_lib *l, const struct vyre_nccl_call *c,
                              const char **call) {
    vyre_cuda_buffer *s = c->src, *d = c->dst ? c->dst : c->src;
    const void *sp = (const void *)(uintptr_t)s->ptr;
    void *dp = (void *)(uintptr_t)d->ptr;
    ncclDataType_t t = nccl_type(s->type);
    ncclComm_t comm = c->comm->comm;
    vyre_nccl_stream stream = (vyre_nccl_stream)c->comm->dev->stream;
    size_t es = vyre_type_size(s->type);
    switch (c->coll) {
    case VYRE_NCCL_ALL_REDUCE:
        *call = "ncclAllReduce";
        return l->ncclAllReduce(sp, dp, s->count, t, nccl_op(c->op), comm, stream);
    case VYRE_NCCL_BROADCAST:
        *call = "ncclBroadcast";
        return l->ncclBroadcast(sp, dp, s->count, t, c->root, comm, stream);
    case VYRE_NCCL_REDUCE:
        *call = "ncclReduce";
        return l->ncclReduce(sp, dp, s->count, t, nccl_op(c->op), c->root, comm, stream);
    case VYRE_NCCL_ALL_GATHER:
        *call = "ncclAllGather";
        return l->ncclAllGather(sp, dp, s->count, t, comm, stream);
    case VYRE_NCCL_REDUCE_SCATTER:
        *call = "ncclReduceScatter";
        return l->ncclReduceScatter(sp, dp, d->count, t, nccl_op(c->op), comm, stream);
    case VYRE_NCCL_SEND:
        *call = "ncclSend";
        return l->ncclSend(sp, s->count, t, c->root, comm, stream);
    case VYRE_NCCL_RECV:
        *call = "ncclRecv";
        return l->ncclRecv(dp, d->count, t, c->root, comm, stream);
    case VYRE_NCCL_ALL_TO_ALL: {
        /* Block j of src to rank j, block j of dst from rank j: grouped sends and
         * receives (ncclAlltoAll is only in the newest NCCL). */
        size_t blk = (size_t)(s->count / (uint64_t)c->comm->size);
        ncclResult_t r = ncclSuccess;
        for (int j = 0; j < c->comm->size && r == ncclSuccess; j++) {
            *call = "ncclSend";
            r = l->ncclSend((const char *)sp + (size_t)j * blk * es, blk, t, j, comm, stream);
            if (r == ncclSuccess) {
                *call = "ncclRecv";
                r = l->ncclRecv((char *)dp + (size_t)j * blk * es, blk, t, j, comm, stream);
            }
        }
        return r;
    }
    }
    return ncclInvalidArgument;
}

enum vyre_status vyre_nccl_issue(const struct vyre_nccl_call *calls, size_t n,
                                 struct vyre_error *err) {
    enum vyre_status st = check_calls(calls, n, err);
    if (st != VYRE_OK) return st;
    for (size_t i = 0; i < n && st == VYRE_OK; i++) st = vyre_cu_enter(calls[i].comm->dev, err);
    if (st != VYRE_OK) return st;
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    vyre_nccl_comm *comms[VYRE_CU_MAX_ORDINALS];
    size_t nc = n < VYRE_CU_MAX_ORDINALS ? n : VYRE_CU_MAX_ORDINALS;
    for (size_t i = 0; i < nc; i++) comms[i] = calls[i].comm;
    const char *call = "ncclGroupStart";
    ncclResult_t r = l->ncclGroupStart();
    for (size_t i = 0; i < n && r == ncclSuccess; i++) {
        st = vyre_cu_enter(calls[i].comm->dev, err);
        if (st != VYRE_OK) break;
        r = issue_one(l, &calls[i], &call);
        if (r == ncclInProgress) r = ncclSuccess;
    }
    ncclResult_t e = l->ncclGroupEnd();
    if (st != VYRE_OK) return st;
    if (r == ncclSuccess && e != ncclSuccess && e != ncclInProgress) {
        r = e;
        call = "ncclGroupEnd";
    }
    if (r != ncclSuccess) {
        st = vyre_nccl_fail(r, call, err);
        for (size_t i = 0; i < nc; i++) comms[i]->failed = true;
        return st;
    }
    return settle(comms, nc, calls[0].coll == VYRE_NCCL_ALL_TO_ALL ? "ncclSend/ncclRecv" : call,
                  err);
}

enum vyre_status vyre_nccl_wait(vyre_nccl_comm *const *comms, size_t n, struct vyre_error *err) {
    if (!comms || n == 0) return VYRE_OK;
    const struct vyre_nccl_lib *l = vyre_nccl_load();
    if (!l->info.usable) return no_nccl(l, err);
    double timeout = 0;
    for (size_t i = 0; i < n; i++) {
        if (!comms[i] || !comms[i]->comm)
            return BAD("wait: the group was freed or aborted. Fix: open a new group.");
        if (comms[i]->timeout_s > timeout) timeout = comms[i]->timeout_s;
    }
    uint64_t deadline = vyre_cu_now_ns() + (uint64_t)(timeout * 1e9);
    for (size_t i = 0; i < n; i++) {
        struct vyre_cuda_device *d = comms[i]->dev;
        struct poller poll = poller_start();
        for (;;) {
            enum vyre_status st = vyre_cu_enter(d, err);
            if (st != VYRE_OK) return st;
            if (!vyre_cu.cuStreamQuery) { /* old driver: a plain wait */
                st = vyre_cu_sync(d, NULL, err);
                if (st != VYRE_OK) return st;
                break;
            }
            CUresult r = vyre_cu.cuStreamQuery(d->stream);
            if (r == CUDA_SUCCESS) break;
            if (r != CUDA_ERROR_NOT_READY) return vyre_cu_fail(d, r, "cuStreamQuery", NULL, err);
            ncclResult_t state = ncclSuccess;
            ncclResult_t q = l->ncclCommGetAsyncError(comms[i]->comm, &state);
            if (q != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
                st = vyre_nccl_fail(q != ncclSuccess ? q : state, "ncclCommGetAsyncError", err);
                abort_all(comms, n);
                return st;
            }
            if (vyre_cu_now_ns() > deadline) {
                abort_all(comms, n);
                return vyre_error_set(err, VYRE_ERR_CUDA,
                                      "wait: device %d's work did not finish within %.1f s (a "
                                      "collective waiting for a rank that stopped?); the group "
                                      "was aborted. Fix: check the other ranks' output, raise "
                                      "$VYRE_NCCL_TIMEOUT if they are only slow, and open a new "
                                      "group.",
                                      d->ordinal, timeout);
            }
            pause_briefly(&poll);
        }
    }
    return VYRE_OK;
}

/* ---- steps --------------------------------------------------------------------- */

enum vyre_status vyre_nccl_step(const struct vyre_nccl_call *call, vyre_cuda_kernel **out,
                                struct vyre_error *err) {
    if (!out) return BAD("collective step: out is NULL. Fix: pass a pointer.");
    *out = NULL;
    enum vyre_status st = check_calls(call, 1, err);
    if (st != VYRE_OK) return st;
    /* The call lives in the kernel's own block, so kernel_free releases both. */
    vyre_cuda_kernel *k = calloc(1, sizeof *k + sizeof *call);
    const char *nm = vyre_nccl_coll_name(call->coll);
    char *name = k ? malloc(strlen(nm) + 1) : NULL;
    if (!k || !name) {
        free(k);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "collective step: out of host memory. Fix: "
                              "free memory.");
    }
    memcpy(name, nm, strlen(nm) + 1);
    k->coll = (struct vyre_nccl_call *)(void *)(k + 1);
    *k->coll = *call;
    k->name = name;
    k->dev = call->comm->dev;
    call->comm->refs++; /* released by vyre_cuda_kernel_free (module.c) */
    vyre_cuda_device_retain(k->dev);
    k->dev->st.live_kernels++;
    *out = k;
    return VYRE_OK;
}

bool vyre_cuda_kernel_collective(const vyre_cuda_kernel *k) { return k && k->coll; }

enum vyre_status vyre_nccl_step_run(const struct vyre_nccl_call *call, struct vyre_error *err) {
    vyre_nccl_comm *c = call->comm;
    if (c && c->comm && c->size > 1 && call->coll != VYRE_NCCL_SEND &&
        call->coll != VYRE_NCCL_RECV && c->local > 1)
        return BAD("%s step: this group drives %d devices from one process, so its collectives "
                   "must go out together. Fix: run the devices' step lists with "
                   "g:sequence({steps1, steps2, ...}) instead of be:sequence / be:graph.",
                   vyre_nccl_coll_name(call->coll), c->local);
    if (c) c->dev->st.launches++; /* graph capture counts a captured step back down */
    return vyre_nccl_issue(call, 1, err);
}

/* One round of the lockstep: every list's kernels up to its next collective, then
 * those collectives as one group. pos[i] is where list i stands. */
static enum vyre_status lockstep_round(vyre_cuda_device *const *devs, size_t ndev,
                                       const struct vyre_cuda_step *const *steps,
                                       const size_t *nsteps, struct vyre_error *err) {
    size_t pos[VYRE_CU_MAX_ORDINALS] = {0};
    struct vyre_nccl_call calls[VYRE_CU_MAX_ORDINALS];
    for (;;) {
        size_t ncoll = 0, done = 0;
        for (size_t i = 0; i < ndev; i++) {
            enum vyre_status st = vyre_cu_enter(devs[i], err); /* its context, for launches */
            if (st != VYRE_OK) return st;
            while (pos[i] < nsteps[i] && !steps[i][pos[i]].kernel->coll) {
                st = vyre_cu_launch_one(steps[i][pos[i]].kernel, &steps[i][pos[i]].args, err);
                if (st != VYRE_OK) return st;
                pos[i]++;
            }
            if (pos[i] < nsteps[i]) calls[ncoll++] = *steps[i][pos[i]++].kernel->coll;
            else done++;
        }
        if (ncoll == 0) return VYRE_OK;
        if (done)
            return BAD("sequence: %zu of the %zu step lists have no more collective steps "
                       "while the others do. Fix: give every device's list the same collectives "
                       "in the same order.",
                       done, ndev);
        enum vyre_status st = vyre_nccl_issue(calls, ncoll, err);
        if (st != VYRE_OK) return st;
    }
}

enum vyre_status vyre_nccl_sequence(vyre_cuda_device *const *devs, size_t ndev,
                                    const struct vyre_cuda_step *const *steps, const size_t *nsteps,
                                    uint32_t times, struct vyre_error *err) {
    if (!devs || !steps || !nsteps || ndev == 0 || ndev > VYRE_CU_MAX_ORDINALS)
        return BAD("sequence: no step lists. Fix: pass one list per device.");
    vyre_nccl_comm *comms[VYRE_CU_MAX_ORDINALS];
    size_t nc = 0;
    for (size_t i = 0; i < ndev; i++)
        for (size_t j = 0; j < nsteps[i]; j++) {
            const vyre_cuda_kernel *k = steps[i][j].kernel;
            if (!k || k->dev != devs[i])
                return BAD("sequence: list %zu, step %zu is not for device %d. Fix: list i "
                           "holds the steps of g.backends[i].",
                           i + 1, j + 1, devs[i]->ordinal);
            if (k->coll && nc < ndev) {
                bool seen = false;
                for (size_t c = 0; c < nc; c++) seen = seen || comms[c] == k->coll->comm;
                if (!seen) comms[nc++] = k->coll->comm;
            }
        }
    for (uint32_t r = 0; r < times; r++) {
        enum vyre_status st = lockstep_round(devs, ndev, steps, nsteps, err);
        if (st != VYRE_OK) return st;
    }
    if (nc) return vyre_nccl_wait(comms, nc, err);
    for (size_t i = 0; i < ndev; i++) {
        enum vyre_status st = vyre_cuda_synchronize(devs[i], err);
        if (st != VYRE_OK) return st;
    }
    return VYRE_OK;
}
