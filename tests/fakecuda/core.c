/* core.c — the fake driver's state: configuration from the environment, the one lock
 * every entry point takes, per-entry call counters, the call trace, armed faults and
 * sticky context faults, misuse records, and the registry of live objects. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake.h"

struct fake_config fake_cfg;
struct fake_ctx fake_ctxs[FAKE_MAX_DEVICES];
uint64_t fake_clock_ns;
_Thread_local struct fake_ctx *fake_current;
bool fake_initialized;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* ---- configuration ---------------------------------------------------------- */

static long env_long(const char *name, long dflt, long lo, long hi) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end = NULL;
    long v = strtol(s, &end, 0);
    if (!end || *end || v < lo || v > hi) {
        fprintf(stderr, "vyre fakecuda: %s=%s is not a number in [%ld, %ld]; using %ld\n", name, s,
                lo, hi, dflt);
        return dflt;
    }
    return v;
}

/* ptxas from VYRE_FAKECUDA_PTXAS (a path, or 0 for none), else $PATH, else the toolkit. */
void fake_find_ptxas(char *out, size_t size);
void fake_find_ptxas(char *out, size_t size) {
    out[0] = '\0';
    const char *s = getenv("VYRE_FAKECUDA_PTXAS");
    if (s && *s) {
        if (strcmp(s, "0") != 0) snprintf(out, size, "%s", s);
        return;
    }
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s:/usr/local/cuda/bin", path ? path : "");
    for (char *dir = strtok(buf, ":"); dir; dir = strtok(NULL, ":")) {
        size_t n = strlen(dir);
        if (n + 7 > size) continue;
        memcpy(out, dir, n);
        memcpy(out + n, "/ptxas", 7);
        if (access(out, X_OK) == 0) return;
        out[0] = '\0';
    }
}

static void fault_arm_list(const char *list, char *err, size_t errsz);

static void load_config(void) {
    fake_cfg.devices = (int)env_long("VYRE_FAKECUDA_DEVICES", 1, 0, FAKE_MAX_DEVICES);
    fake_cfg.memory = (uint64_t)env_long("VYRE_FAKECUDA_MEMORY", 1L << 30, 1L << 16, 1L << 46);
    fake_cfg.sm = (unsigned)env_long("VYRE_FAKECUDA_SM", 80, 50, 200);
    fake_cfg.sm_count = (int)env_long("VYRE_FAKECUDA_SM_COUNT", 4, 1, 1024);
    fake_cfg.cooperative = env_long("VYRE_FAKECUDA_COOPERATIVE", 1, 0, 1) != 0;
    fake_cfg.occupancy = (int)env_long("VYRE_FAKECUDA_OCCUPANCY", 0, 0, 64);
    fake_cfg.version = (int)env_long("VYRE_FAKECUDA_VERSION", 12080, 1000, 99990);
    fake_cfg.persist = env_long("VYRE_FAKECUDA_PERSIST", 0, 0, 1) != 0;
    fake_cfg.verbose = env_long("VYRE_FAKECUDA_VERBOSE", 0, 0, 1) != 0;
    fake_cfg.foreign = env_long("VYRE_FAKECUDA_FOREIGN", 0, 0, 1) != 0;
    fake_cfg.peer = env_long("VYRE_FAKECUDA_PEER", 1, 0, 1) != 0;
    fake_cfg.noexec = env_long("VYRE_FAKECUDA_NOEXEC", 0, 0, 1) != 0;
    fake_cfg.jit_us = env_long("VYRE_FAKECUDA_JIT_US", 0, 0, 10000000);
    fake_find_ptxas(fake_cfg.ptxas, sizeof fake_cfg.ptxas);
    const char *m = getenv("VYRE_FAKECUDA_MISSING");
    snprintf(fake_cfg.missing, sizeof fake_cfg.missing, ",%s,", m ? m : "");
    for (int i = 0; i < FAKE_MAX_DEVICES; i++) fake_ctxs[i].dev = i;
    const char *f = getenv("VYRE_FAKECUDA_FAIL");
    if (f && *f) {
        char err[256] = "";
        fault_arm_list(f, err, sizeof err);
        if (err[0]) fprintf(stderr, "vyre fakecuda: VYRE_FAKECUDA_FAIL: %s\n", err);
    }
}

void fake_config_load(void);
void fake_config_load(void) { pthread_once(&config_once, load_config); }

/* ---- counters, trace, faults ----------------------------------------------- */

struct counter {
    char name[48];
    uint64_t n;
};

enum fault_mode { FM_PLAIN, FM_STICKY, FM_ASYNC };

struct fault {
    char name[48];
    uint64_t at;   /* fires when the entry's counter reaches this */
    uint32_t left; /* calls still to fail; UINT32_MAX: every call from `at` on */
    CUresult r;
    enum fault_mode mode;
};

#define MAX_COUNTERS 96
#define MAX_FAULTS 64
static struct counter counters[MAX_COUNTERS];
static int ncounters;
static struct fault faults[MAX_FAULTS];
static int nfaults;
static uint64_t fired;
static char injected[256];
static bool trace_on;
static char *trace_buf;
static size_t trace_len, trace_cap;
static uint64_t misuse_count;
static char misuse_last[512];

/* "cuMemAlloc_v2" -> "cuMemAlloc": faults may name the versioned symbol. */
static void base_name(const char *in, size_t n, char *out, size_t size) {
    if (n >= size) n = size - 1;
    memcpy(out, in, n);
    out[n] = '\0';
    char *v = strrchr(out, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' &&
        strspn(v + 2, "0123456789") == strlen(v + 2))
        *v = '\0';
}

static struct counter *counter_of(const char *name) {
    for (int i = 0; i < ncounters; i++)
        if (strcmp(counters[i].name, name) == 0) return &counters[i];
    if (ncounters == MAX_COUNTERS) return NULL;
    struct counter *c = &counters[ncounters++];
    snprintf(c->name, sizeof c->name, "%s", name);
    return c;
}

static void trace_add(const char *name) {
    size_t n = strlen(name) + 1;
    if (trace_len + n + 1 > trace_cap) {
        size_t cap = trace_cap ? trace_cap * 2 : 4096;
        while (cap < trace_len + n + 1) cap *= 2;
        char *b = realloc(trace_buf, cap);
        if (!b) return;
        trace_buf = b;
        trace_cap = cap;
    }
    memcpy(trace_buf + trace_len, name, n - 1);
    trace_buf[trace_len + n - 1] = ' ';
    trace_len += n;
    trace_buf[trace_len] = '\0';
}

CUresult fake_result_from_name(const char *s, bool *ok);
const char *fake_result_name(CUresult r);

/* NAME:N:RESULT[:sticky|:async|:always]... armed relative to the current counters. */
static bool fault_arm(const char *spec, char *err, size_t errsz) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *parts[6] = {0};
    int np = 0;
    for (char *s = buf, *t; np < 6 && (t = strsep(&s, ":")) != NULL;) parts[np++] = t;
    if (np < 3) {
        snprintf(err, errsz, "'%s' is not NAME:N:RESULT[:sticky|:async|:always]", spec);
        return false;
    }
    char *end = NULL;
    unsigned long long n = strtoull(parts[1], &end, 10);
    bool ok = false;
    CUresult r = fake_result_from_name(parts[2], &ok);
    if (!end || *end || n == 0 || !ok) {
        snprintf(err, errsz, "'%s': N must be >= 1 and RESULT a CUresult name or number", spec);
        return false;
    }
    if (nfaults == MAX_FAULTS) {
        snprintf(err, errsz, "too many armed faults (%d)", MAX_FAULTS);
        return false;
    }
    struct fault f = {.left = 1, .r = r, .mode = FM_PLAIN};
    base_name(parts[0], strlen(parts[0]), f.name, sizeof f.name);
    for (int i = 3; i < np; i++) {
        if (strcmp(parts[i], "sticky") == 0) f.mode = FM_STICKY;
        else if (strcmp(parts[i], "async") == 0) f.mode = FM_ASYNC;
        else if (strcmp(parts[i], "always") == 0) f.left = UINT32_MAX;
        else {
            snprintf(err, errsz, "'%s': unknown flag '%s' (sticky, async, always)", spec, parts[i]);
            return false;
        }
    }
    struct counter *c = counter_of(f.name);
    f.at = (c ? c->n : 0) + n;
    faults[nfaults++] = f;
    return true;
}

static void fault_arm_list(const char *list, char *err, size_t errsz) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *s = buf, *t; (t = strsep(&s, ", \t\n")) != NULL;)
        if (*t && !fault_arm(t, err, errsz)) return;
}

void fake_poison(struct fake_ctx *ctx, CUresult r, const char *why) {
    if (!ctx || ctx->fault != CUDA_SUCCESS) return;
    ctx->fault = r;
    if (fake_cfg.verbose)
        fprintf(stderr, "vyre fakecuda: context of device %d poisoned with %s (%s)\n", ctx->dev,
                fake_result_name(r), why);
}

CUresult fake_begin(const char *name, unsigned flags) {
    fake_config_load();
    pthread_mutex_lock(&lock);
    injected[0] = '\0';
    struct counter *c = counter_of(name);
    if (c) c->n++;
    if (trace_on) trace_add(name);
    struct fake_ctx *cx = fake_current;
    if (flags & F_CTX) {
        if (!cx || cx->refs <= 0)
            return fake_misuse(CUDA_ERROR_INVALID_CONTEXT, "%s called without a current context",
                               name);
        if (cx->fault != CUDA_SUCCESS) return cx->fault;
    }
    for (int i = 0; c && i < nfaults; i++) {
        struct fault *f = &faults[i];
        if (f->left == 0 || c->n < f->at || strcmp(f->name, name) != 0) continue;
        if (f->left != UINT32_MAX) f->left--;
        fired++;
        snprintf(injected, sizeof injected, "vyre fakecuda: injected %s into call %llu of %s%s",
                 fake_result_name(f->r), (unsigned long long)c->n, name,
                 f->mode == FM_STICKY  ? " (sticky)"
                 : f->mode == FM_ASYNC ? " (async: reported by later calls)"
                                       : "");
        if (fake_cfg.verbose) fprintf(stderr, "%s\n", injected);
        if (f->mode != FM_PLAIN) fake_poison(cx ? cx : &fake_ctxs[0], f->r, injected);
        if (f->mode == FM_ASYNC) return CUDA_SUCCESS;
        return f->r;
    }
    return CUDA_SUCCESS;
}

void fake_end(void) { pthread_mutex_unlock(&lock); }

const char *fake_injected(void) { return injected; }

CUresult fake_misuse(CUresult r, const char *fmt, ...) {
    misuse_count++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(misuse_last, sizeof misuse_last, fmt, ap);
    va_end(ap);
    if (fake_cfg.verbose) fprintf(stderr, "vyre fakecuda: misuse: %s\n", misuse_last);
    return r;
}

/* ---- registry ---------------------------------------------------------------- */

static struct fake_obj **objs;
static size_t nobjs, objs_cap;

void *fake_obj_new(enum fake_kind kind, size_t size, struct fake_ctx *ctx) {
    if (nobjs == objs_cap) {
        size_t cap = objs_cap ? objs_cap * 2 : 64;
        struct fake_obj **n = realloc(objs, cap * sizeof *n);
        if (!n) return NULL;
        objs = n;
        objs_cap = cap;
    }
    struct fake_obj *o = calloc(1, size);
    if (!o) return NULL;
    o->kind = kind;
    o->ctx = ctx;
    o->gen = ctx ? ctx->gen : 0;
    objs[nobjs++] = o;
    return o;
}

static bool same_handle(const struct fake_obj *o, const void *handle) {
    if (o->kind == FK_MEM || o->kind == FK_HOST)
        return (const void *)((const struct fake_mem *)o)->base == handle;
    return (const void *)o == handle;
}

void *fake_obj_find(enum fake_kind kind, const void *handle) {
    if (!handle) return NULL;
    for (size_t i = 0; i < nobjs; i++)
        if (objs[i]->kind == kind && same_handle(objs[i], handle)) return objs[i];
    return NULL;
}

struct fake_mem *fake_mem_find(uint64_t p, uint64_t n) {
    for (size_t i = 0; i < nobjs; i++) {
        if (objs[i]->kind != FK_MEM) continue;
        struct fake_mem *m = (struct fake_mem *)objs[i];
        uint64_t b = (uint64_t)(uintptr_t)m->base;
        if (p >= b && p - b <= m->size && n <= m->size - (p - b)) return m;
    }
    return NULL;
}

bool fake_func_live(const struct fake_func *fn) {
    /* By address only: a stale function pointer is never dereferenced. */
    for (size_t i = 0; fn && i < nobjs; i++) {
        if (objs[i]->kind != FK_MODULE) continue;
        const struct fake_module *m = (const struct fake_module *)objs[i];
        uintptr_t a = (uintptr_t)fn, b = (uintptr_t)m->funcs;
        if (m->funcs && a >= b && a < b + m->nfuncs * sizeof *m->funcs &&
            (a - b) % sizeof *m->funcs == 0)
            return true;
    }
    return false;
}

void fake_obj_free(void *obj) {
    for (size_t i = 0; i < nobjs; i++)
        if (objs[i] == obj) {
            objs[i] = objs[--nobjs];
            break;
        }
    free(obj);
}

void fake_destroy(struct fake_obj *o) {
    switch (o->kind) {
    case FK_MEM: {
        struct fake_mem *m = (struct fake_mem *)o;
        o->ctx->mem_used -= m->size;
        free(m->base);
        break;
    }
    case FK_HOST: free(((struct fake_mem *)o)->base); break;
    case FK_MODULE: {
        struct fake_module *m = (struct fake_module *)o;
        free(m->ptx);
        free(m->funcs);
        fake_prog_free(m->prog);
        break;
    }
    case FK_LINK: {
        struct fake_link *l = (struct fake_link *)o;
        free(l->ptx);
        free(l->image);
        break;
    }
    case FK_STREAM: {
        struct fake_stream *s = (struct fake_stream *)o;
        if (s->capture) fake_destroy(&s->capture->h);
        break;
    }
    case FK_GRAPH:
    case FK_EXEC: {
        struct fake_graph *g = (struct fake_graph *)o;
        for (size_t i = 0; i < g->n; i++) fake_launch_clear(&g->v[i]);
        free(g->v);
        /* A stream capturing into this graph stops pointing at it. */
        for (size_t i = 0; i < nobjs; i++)
            if (objs[i]->kind == FK_STREAM && ((struct fake_stream *)objs[i])->capture == g)
                ((struct fake_stream *)objs[i])->capture = NULL;
        break;
    }
    default: break;
    }
    fake_obj_free(o);
}

void fake_ctx_destroy_objects(struct fake_ctx *ctx) {
    /* Graphs first: a capturing stream points at its graph. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = nobjs; i-- > 0;) {
            if (i >= nobjs || objs[i]->ctx != ctx) continue;
            bool graph = objs[i]->kind == FK_GRAPH || objs[i]->kind == FK_EXEC;
            if ((pass == 0) == graph) fake_destroy(objs[i]);
        }
    ctx->mem_used = 0;
}

/* ---- control (control.c reads these) ------------------------------------- */

char *fake_control_state(const char *what, bool *ok);
char *fake_control_state(const char *what, bool *ok) {
    char *out = malloc(1024);
    if (!out) return NULL;
    *ok = true;
    if (strncmp(what, "calls ", 6) == 0) {
        char name[48];
        base_name(what + 6, strlen(what + 6), name, sizeof name);
        uint64_t n = 0;
        for (int i = 0; i < ncounters; i++)
            if (strcmp(counters[i].name, name) == 0) n = counters[i].n;
        snprintf(out, 1024, "%llu", (unsigned long long)n);
    } else if (strcmp(what, "live") == 0) {
        uint64_t k[FK_NKINDS] = {0}, mem_bytes = 0, host_bytes = 0;
        for (size_t i = 0; i < nobjs; i++) {
            k[objs[i]->kind]++;
            if (objs[i]->kind == FK_MEM) mem_bytes += ((struct fake_mem *)objs[i])->size;
            if (objs[i]->kind == FK_HOST) host_bytes += ((struct fake_mem *)objs[i])->size;
        }
        int refs = 0;
        for (int i = 0; i < FAKE_MAX_DEVICES; i++) refs += fake_ctxs[i].refs;
        snprintf(out, 1024,
                 "mem=%llu mem_bytes=%llu host=%llu host_bytes=%llu modules=%llu links=%llu "
                 "streams=%llu events=%llu graphs=%llu execs=%llu ctx_refs=%d",
                 (unsigned long long)k[FK_MEM], (unsigned long long)mem_bytes,
                 (unsigned long long)k[FK_HOST], (unsigned long long)host_bytes,
                 (unsigned long long)k[FK_MODULE], (unsigned long long)k[FK_LINK],
                 (unsigned long long)k[FK_STREAM], (unsigned long long)k[FK_EVENT],
                 (unsigned long long)k[FK_GRAPH], (unsigned long long)k[FK_EXEC], refs);
    } else if (strcmp(what, "faults") == 0) {
        int armed = 0;
        for (int i = 0; i < nfaults; i++) armed += faults[i].left != 0;
        snprintf(out, 1024, "fired=%llu armed=%d", (unsigned long long)fired, armed);
    } else if (strcmp(what, "misuse") == 0) {
        snprintf(out, 1024, "%llu %s", (unsigned long long)misuse_count, misuse_last);
    } else if (strcmp(what, "clear") == 0) {
        nfaults = 0;
        snprintf(out, 1024, "ok");
    } else if (strcmp(what, "trace start") == 0) {
        trace_on = true;
        trace_len = 0;
        if (trace_buf) trace_buf[0] = '\0';
        snprintf(out, 1024, "ok");
    } else if (strcmp(what, "trace stop") == 0) {
        trace_on = false;
        free(out);
        out = strdup(trace_buf ? trace_buf : "");
    } else if (strncmp(what, "fail ", 5) == 0) {
        out[0] = '\0';
        fault_arm_list(what + 5, out, 1024);
        *ok = out[0] == '\0';
        if (*ok) snprintf(out, 1024, "ok");
    } else if (strncmp(what, "fault ", 6) == 0) {
        bool rok = false;
        CUresult r = fake_result_from_name(what + 6, &rok);
        struct fake_ctx *cx = fake_current ? fake_current : &fake_ctxs[0];
        *ok = rok && r != CUDA_SUCCESS;
        if (*ok) fake_poison(cx, r, "control: fault");
        snprintf(out, 1024, *ok ? "ok" : "fault: '%s' is not a failing CUresult", what + 6);
    } else {
        *ok = false;
        snprintf(out, 1024, "unknown command '%.200s'", what);
    }
    return out;
}

void fake_lock(void);
void fake_unlock(void);
void fake_lock(void) {
    fake_config_load();
    pthread_mutex_lock(&lock);
}
void fake_unlock(void) { pthread_mutex_unlock(&lock); }
