/* graph.c — CUDA-graph capture and replay of a sequence of launches. The steps are
 * enqueued on the device's stream between cuStreamBeginCapture and
 * cuStreamEndCapture (nothing runs), the graph is instantiated once, and every
 * replay is one cuGraphLaunch: the per-launch CPU cost of a long sequence drops to
 * a fraction of separate launches. Arguments are captured by value, so a replay
 * uses the buffers and params given at capture time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "trace.h"

struct vyre_cuda_graph {
    struct vyre_cuda_device *dev;
    CUgraph graph;
    CUgraphExec exec;
    size_t nsteps;
    char name[VYRE_MAX_NAME + 1]; /* the first step's program: the replay range's name */
};

static bool graphs_supported(void) {
    return vyre_cu.cuStreamBeginCapture && vyre_cu.cuStreamEndCapture &&
           vyre_cu.cuGraphInstantiateWithFlags && vyre_cu.cuGraphLaunch &&
           vyre_cu.cuGraphExecDestroy && vyre_cu.cuGraphDestroy;
}

enum vyre_status vyre_cuda_graph_capture(vyre_cuda_device *d, const struct vyre_cuda_step *steps,
                                         size_t nsteps, vyre_cuda_graph **out,
                                         struct vyre_error *err) {
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "graph: out is NULL. Fix: pass a pointer "
                              "to receive the graph.");
    *out = NULL;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    if (!graphs_supported())
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "graph: this NVIDIA driver lacks the "
                              "stream-capture entry points. Fix: update "
                              "the driver, or use sequences.");
    if (nsteps == 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "graph: no steps to capture. Fix: pass at least "
                              "one launch.");
    for (size_t i = 0; i < nsteps; i++)
        if (!steps[i].kernel || steps[i].kernel->dev != d)
            return vyre_error_set(err, VYRE_ERR_ARG,
                                  "graph: step %zu has no kernel of this "
                                  "device. Fix: compile every step on this "
                                  "device.",
                                  i + 1);
    struct vyre_cuda_graph *g = calloc(1, sizeof *g);
    if (!g)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "graph: out of host memory. Fix: free "
                              "memory.");
    /* Thread-local mode: other threads of an embedding host may keep using CUDA. */
    CUresult r = vyre_cu.cuStreamBeginCapture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) {
        free(g);
        return vyre_cu_fail(d, r, "cuStreamBeginCapture", NULL, err);
    }
    d->capturing = true;
    for (size_t i = 0; i < nsteps && st == VYRE_OK; i++) {
        st = vyre_cu_launch_one(steps[i].kernel, &steps[i].args, err);
        if (st == VYRE_OK) d->st.launches--; /* captured, not run */
    }
    d->capturing = false;
    /* Always end the capture, even after a failed step, so the stream is usable. */
    r = vyre_cu.cuStreamEndCapture(d->stream, &g->graph);
    if (st == VYRE_OK && r != CUDA_SUCCESS)
        st = vyre_cu_fail(d, r, "cuStreamEndCapture", NULL, err);
    if (st == VYRE_OK) {
        r = vyre_cu.cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
        if (r != CUDA_SUCCESS) st = vyre_cu_fail(d, r, "cuGraphInstantiateWithFlags", NULL, err);
    }
    if (st != VYRE_OK) {
        if (g->graph) vyre_cu.cuGraphDestroy(g->graph);
        free(g);
        return st;
    }
    g->dev = d;
    g->nsteps = nsteps;
    snprintf(g->name, sizeof g->name, "%s", steps[0].kernel->name);
    vyre_cuda_device_retain(d);
    d->st.live_graphs++;
    *out = g;
    return VYRE_OK;
}

static enum vyre_status replay(vyre_cuda_graph *g, uint32_t repeat, struct vyre_timing *timing,
                               struct vyre_error *err) {
    struct vyre_cuda_device *d = g->dev;
    enum vyre_status st = vyre_cu_enter(d, err);
    if (st != VYRE_OK) return st;
    uint64_t t0 = vyre_cu_now_ns();
    if (timing)
        VYRE_CU_CHECK(d, vyre_cu.cuEventRecord(d->ev_start, d->stream), "cuEventRecord", NULL, err);
    for (uint32_t i = 0; i < repeat; i++) {
        VYRE_CU_CHECK(d, vyre_cu.cuGraphLaunch(g->exec, d->stream), "cuGraphLaunch", NULL, err);
        d->st.graph_launches++;
        d->st.launches += g->nsteps;
    }
    if (timing)
        VYRE_CU_CHECK(d, vyre_cu.cuEventRecord(d->ev_stop, d->stream), "cuEventRecord", NULL, err);
    uint64_t t_enq = vyre_cu_now_ns();
    st = vyre_cu_sync(d, NULL, err);
    if (st != VYRE_OK || !timing) return st;
    uint64_t t1 = vyre_cu_now_ns();
    float ms = 0.0f;
    if (vyre_cu.cuEventElapsedTime(&ms, d->ev_start, d->ev_stop) != CUDA_SUCCESS) ms = 0.0f;
    timing->wall_ns = t1 - t0;
    timing->enqueue_ns = t_enq - t0;
    timing->wait_ns = t1 - t_enq;
    timing->device_ns = (uint64_t)((double)ms * 1e6);
    d->st.timed_runs++;
    d->st.timed_wall_ns += timing->wall_ns;
    d->st.timed_enqueue_ns += timing->enqueue_ns;
    d->st.timed_wait_ns += timing->wait_ns;
    d->st.timed_device_ns += timing->device_ns;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_graph_launch(vyre_cuda_graph *g, uint32_t repeat,
                                        struct vyre_timing *timing, struct vyre_error *err) {
    if (!g)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "graph launch: graph is NULL. Fix: capture "
                              "one first.");
    int tr = vyre_trace_push("graph replay", g->name);
    enum vyre_status st = replay(g, repeat, timing, err);
    vyre_trace_pop(tr);
    return st;
}

void vyre_cuda_graph_free(vyre_cuda_graph *g) {
    if (!g) return;
    struct vyre_cuda_device *d = g->dev;
    if (vyre_cu_current(d)) {
        /* Both, whatever the first returns (the graph must not leak), and the error
         * names the call that failed first. */
        CUresult r = vyre_cu.cuGraphExecDestroy(g->exec), r2 = vyre_cu.cuGraphDestroy(g->graph);
        const char *call = r != CUDA_SUCCESS ? "cuGraphExecDestroy" : "cuGraphDestroy";
        if (r == CUDA_SUCCESS) r = r2;
        if (r != CUDA_SUCCESS) {
            struct vyre_error e;
            vyre_cu_fail(d, r, call, NULL, &e);
            vyre_cu_defer(d, &e);
        }
    }
    d->st.live_graphs--;
    free(g);
    vyre_cuda_device_release(d);
}
