/* stream.c — streams, events and graphs. Work submitted to a stream runs at once
 * (there is no asynchrony to observe), so synchronising only reports a sticky fault;
 * events read the virtual clock that copies and launches advance, so timed runs see
 * a device time. Stream capture records launches into a graph instead of running
 * them; a copy, memset or synchronize on a capturing stream is refused and
 * invalidates the capture, as the driver does. Replays run the recorded launches with
 * the argument values copied at capture time. */
#include <stdlib.h>
#include <string.h>

#include "fake.h"

struct fake_stream *fake_stream_get(CUstream s, CUresult *r) {
    *r = CUDA_SUCCESS;
    if (!s) return NULL; /* the legacy default stream */
    struct fake_stream *st = fake_obj_find(FK_STREAM, s);
    if (!st) *r = fake_misuse(FAKE_INVALID_HANDLE, "stream %p is not a live stream", (void *)s);
    else if (st->h.ctx != fake_current)
        *r = fake_misuse(FAKE_INVALID_HANDLE, "stream %p belongs to another context", (void *)s);
    return st;
}

CUresult fake_stream_plain_op(struct fake_stream *st) {
    if (!st || !st->capturing) return CUDA_SUCCESS;
    st->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult graph_add(struct fake_graph *g, struct fake_launch *l) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 8;
        struct fake_launch *v = realloc(g->v, cap * sizeof *v);
        if (!v) return CUDA_ERROR_OUT_OF_MEMORY;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = *l;
    memset(l, 0, sizeof *l); /* the graph owns the argument copy now */
    return CUDA_SUCCESS;
}

CUresult fake_stream_submit(struct fake_stream *st, struct fake_launch *l) {
    if (st && st->capturing) {
        if (st->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        return graph_add(st->capture, l);
    }
    return fake_launch_run(l);
}

CUresult fake_cuStreamCreate(CUstream *stream, unsigned int flags) {
    CUresult r = fake_begin("cuStreamCreate", F_CTX);
    if (r == CUDA_SUCCESS && (!stream || flags > CU_STREAM_NON_BLOCKING))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_stream *st = fake_obj_new(FK_STREAM, sizeof *st, fake_current);
        if (!st) r = CUDA_ERROR_OUT_OF_MEMORY;
        else *stream = (CUstream)(void *)st;
    }
    fake_end();
    return r;
}

CUresult fake_cuStreamDestroy(CUstream stream) {
    CUresult r = fake_begin("cuStreamDestroy", F_CTX);
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS && !st)
        r = fake_misuse(FAKE_INVALID_HANDLE, "cuStreamDestroy of the default stream");
    if (r == CUDA_SUCCESS) fake_destroy(&st->h);
    fake_end();
    return r;
}

CUresult fake_cuStreamSynchronize(CUstream stream) {
    CUresult r = fake_begin("cuStreamSynchronize", F_CTX);
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS) r = fake_stream_plain_op(st);
    fake_end();
    return r;
}

CUresult fake_cuEventCreate(CUevent *event, unsigned int flags) {
    CUresult r = fake_begin("cuEventCreate", F_CTX);
    if (r == CUDA_SUCCESS && (!event || flags > 0xf)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_event *e = fake_obj_new(FK_EVENT, sizeof *e, fake_current);
        if (!e) r = CUDA_ERROR_OUT_OF_MEMORY;
        else *event = (CUevent)(void *)e;
    }
    fake_end();
    return r;
}

static struct fake_event *event_get(CUevent ev, const char *call, CUresult *r) {
    struct fake_event *e = fake_obj_find(FK_EVENT, ev);
    if (!e) *r = fake_misuse(FAKE_INVALID_HANDLE, "%s: %p is not a live event", call, (void *)ev);
    return e;
}

CUresult fake_cuEventDestroy(CUevent event) {
    CUresult r = fake_begin("cuEventDestroy", F_CTX);
    struct fake_event *e = NULL;
    if (r == CUDA_SUCCESS) e = event_get(event, "cuEventDestroy", &r);
    if (r == CUDA_SUCCESS) fake_destroy(&e->h);
    fake_end();
    return r;
}

CUresult fake_cuEventRecord(CUevent event, CUstream stream) {
    CUresult r = fake_begin("cuEventRecord", F_CTX);
    struct fake_event *e = NULL;
    if (r == CUDA_SUCCESS) e = event_get(event, "cuEventRecord", &r);
    if (r == CUDA_SUCCESS) fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS) {
        e->recorded = true;
        e->t_ns = fake_clock_ns;
    }
    fake_end();
    return r;
}

CUresult fake_cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    CUresult r = fake_begin("cuEventElapsedTime", F_CTX);
    struct fake_event *a = NULL, *b = NULL;
    if (r == CUDA_SUCCESS && !ms) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) a = event_get(start, "cuEventElapsedTime", &r);
    if (r == CUDA_SUCCESS) b = event_get(end, "cuEventElapsedTime", &r);
    if (r == CUDA_SUCCESS && (!a->recorded || !b->recorded)) r = FAKE_INVALID_HANDLE;
    if (r == CUDA_SUCCESS) *ms = (float)((double)(b->t_ns - a->t_ns) / 1e6);
    fake_end();
    return r;
}

/* ---- capture and graphs -------------------------------------------------------- */

CUresult fake_cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
    CUresult r = fake_begin("cuStreamBeginCapture", F_CTX);
    struct fake_stream *st = NULL;
    (void)mode;
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS && !st) r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == CUDA_SUCCESS && st->capturing)
        r = fake_misuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "capture begun twice on %p",
                        (void *)stream);
    if (r == CUDA_SUCCESS) {
        st->capture = fake_obj_new(FK_GRAPH, sizeof *st->capture, fake_current);
        if (!st->capture) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            st->capturing = true;
            st->invalidated = false;
        }
    }
    fake_end();
    return r;
}

CUresult fake_cuStreamEndCapture(CUstream stream, CUgraph *graph) {
    CUresult r = fake_begin("cuStreamEndCapture", F_CTX);
    CUresult rs = CUDA_SUCCESS;
    struct fake_stream *st = fake_stream_get(stream, &rs);
    if (graph) *graph = NULL;
    if (rs == CUDA_SUCCESS && st && st->capturing) {
        /* The capture ends whatever is returned; on failure the graph is discarded. */
        struct fake_graph *g = st->capture;
        bool bad = st->invalidated;
        st->capturing = st->invalidated = false;
        st->capture = NULL;
        if (r == CUDA_SUCCESS && bad) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        if (r == CUDA_SUCCESS && !graph) r = CUDA_ERROR_INVALID_VALUE;
        if (r == CUDA_SUCCESS) *graph = (CUgraph)(void *)g;
        else if (g) fake_destroy(&g->h);
    } else if (r == CUDA_SUCCESS) {
        r = rs != CUDA_SUCCESS
                ? rs
                : fake_misuse(CUDA_ERROR_INVALID_VALUE,
                              "cuStreamEndCapture on a stream that is not capturing");
    }
    fake_end();
    return r;
}

static struct fake_graph *graph_get(enum fake_kind k, const void *h, const char *call,
                                    CUresult *r) {
    struct fake_graph *g = fake_obj_find(k, h);
    if (!g)
        *r = fake_misuse(FAKE_INVALID_HANDLE, "%s: %p is not a live graph%s", call, h,
                         k == FK_EXEC ? " exec" : "");
    return g;
}

CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags) {
    CUresult r = fake_begin("cuGraphInstantiateWithFlags", F_CTX);
    struct fake_graph *g = NULL, *x = NULL;
    if (r == CUDA_SUCCESS && (!exec || flags)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) g = graph_get(FK_GRAPH, graph, "cuGraphInstantiateWithFlags", &r);
    if (r == CUDA_SUCCESS) {
        x = fake_obj_new(FK_EXEC, sizeof *x, fake_current);
        if (!x) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < g->n; i++) {
        struct fake_launch l = g->v[i];
        l.args = malloc(l.args_len ? l.args_len : 1);
        if (!l.args) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            memcpy(l.args, g->v[i].args, l.args_len);
            r = graph_add(x, &l);
            if (r != CUDA_SUCCESS) free(l.args);
        }
    }
    if (r == CUDA_SUCCESS) *exec = (CUgraphExec)(void *)x;
    else if (x) fake_destroy(&x->h);
    fake_end();
    return r;
}

CUresult fake_cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    CUresult r = fake_begin("cuGraphLaunch", F_CTX);
    struct fake_graph *x = NULL;
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS) x = graph_get(FK_EXEC, exec, "cuGraphLaunch", &r);
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    if (r == CUDA_SUCCESS) r = fake_stream_plain_op(st);
    for (size_t i = 0; r == CUDA_SUCCESS && i < x->n; i++) {
        if (!x->v[i].host && !fake_func_live(x->v[i].fn)) {
            r = fake_misuse(CUDA_ERROR_LAUNCH_FAILED,
                            "cuGraphLaunch: the module of a captured kernel was unloaded");
            break;
        }
        r = fake_launch_run(&x->v[i]);
    }
    fake_end();
    return r;
}

CUresult fake_cuGraphExecDestroy(CUgraphExec exec) {
    CUresult r = fake_begin("cuGraphExecDestroy", F_CTX);
    struct fake_graph *x = NULL;
    if (r == CUDA_SUCCESS) x = graph_get(FK_EXEC, exec, "cuGraphExecDestroy", &r);
    if (r == CUDA_SUCCESS) fake_destroy(&x->h);
    fake_end();
    return r;
}

CUresult fake_cuGraphDestroy(CUgraph graph) {
    CUresult r = fake_begin("cuGraphDestroy", F_CTX);
    struct fake_graph *g = NULL;
    if (r == CUDA_SUCCESS) g = graph_get(FK_GRAPH, graph, "cuGraphDestroy", &r);
    if (r == CUDA_SUCCESS) fake_destroy(&g->h);
    fake_end();
    return r;
}
