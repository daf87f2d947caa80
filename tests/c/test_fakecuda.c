/* test_fakecuda.c — the CUDA runtime (src/core/cuda) against the fake driver
 * (tests/fakecuda, VYRE_FAKECUDA_PATH): every entry the runtime resolves is there, a
 * device computes registered programs through buffers, kernels, run, sequences and
 * graphs, and a fault sweep fails each driver call of each operation in turn with
 * out-of-memory, invalid-value and a sticky illegal address. Each failure must give
 * an error naming the call with a Fix, leave nothing behind in the fake (objects and
 * bytes back to their values after trim), and leave the device usable (sticky: lost,
 * then reopened). Under the sanitizer build this runs the error paths under ASan and
 * LeakSanitizer. The Lua specs 50-54 cover the same through the binding. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"

typedef char *control_fn(const char *cmd, int *ok);
static control_fn *control;
static void (*control_free)(char *);

/* Runs a control command; the answer is copied into a static buffer. */
static const char *ctl(const char *cmd) {
    static char buf[8192];
    int ok = 0;
    char *out = control(cmd, &ok);
    snprintf(buf, sizeof buf, "%s", out ? out : "(null)");
    control_free(out);
    if (!ok) harness_fail(__FILE__, __LINE__, "control('%s'): %s", cmd, buf);
    return buf;
}

static const char INC[] = "(program inc (workgroup 64)\n"
                          "  (buffer v u32 read_write)\n"
                          "  (let i (gid x))\n"
                          "  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))";

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error e;
    if (vyre_text_parse(text, strlen(text), &p, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "%s", e.message);
    return p;
}

/* v[i] += K for a K unique to each call: a new program, so caches miss. */
static vyre_program *fresh_program(void) {
    static unsigned k = 1000;
    char text[512];
    snprintf(text, sizeof text,
             "(program add%u (workgroup 64) (buffer v u32 read_write) (let i (gid x))\n"
             "  (if (lt i (len v)) (then (store v i (add (load v i) %uu32)))))",
             k, k);
    k++;
    return parse(text);
}

static void test_entries_resolve(void) {
    struct vyre_cu_driver drv;
    vyre_cu_probe(VYRE_FAKECUDA_PATH, &drv);
    CHECK(drv.usable);
    CHECK_EQ_U64(drv.device_count, 1);
    CHECK_EQ_U64(drv.version, 12080);
#define VYRE_CU_RESOLVED(n, v, req) CHECK(drv.n != NULL);
    VYRE_CU_ENTRIES(VYRE_CU_RESOLVED)
#undef VYRE_CU_RESOLVED
    /* The grid-barrier work will resolve these too. */
    vyre_cu_fn_cuGetProcAddress_v2 *gpa = NULL;
    void *s = dlsym(drv.handle, "cuGetProcAddress_v2");
    memcpy(&gpa, &s, sizeof s);
    const char *more[] = {"cuLaunchCooperativeKernel",
                          "cuOccupancyMaxActiveBlocksPerMultiprocessor"};
    for (size_t i = 0; i < 2; i++) {
        void *fn = NULL;
        CHECK_EQ_U64(gpa(more[i], &fn, 12000, 0, NULL), CUDA_SUCCESS);
        CHECK(fn != NULL);
    }
    void *fn = (void *)1;
    CHECK_EQ_U64(gpa("cuNoSuchEntry", &fn, 12000, 0, NULL), CUDA_ERROR_NOT_FOUND);
    CHECK(fn == NULL);
}

/* ---- a device with a buffer and the INC kernel ------------------------------------ */

struct fx {
    vyre_cuda_device *d;
    vyre_cuda_buffer *b;
    vyre_cuda_kernel *k;
    vyre_cuda_graph *g;
    vyre_cuda_device *d2; /* a second object of the same ordinal */
    vyre_program *p;
    uint32_t host[300];
};

static enum vyre_status fx_open(struct fx *f, struct vyre_error *e) {
    memset(f, 0, sizeof *f);
    return vyre_cuda_device_open(0, &f->d, e);
}

static void fx_close(struct fx *f) {
    vyre_cuda_graph_free(f->g);
    vyre_cuda_kernel_free(f->k);
    vyre_cuda_buffer_free(f->b);
    if (f->p) vyre_program_free(f->p);
    vyre_cuda_device_release(f->d2);
    vyre_cuda_device_release(f->d);
    memset(f, 0, sizeof *f);
}

static struct vyre_cuda_args inc_args(struct fx *f) {
    return (struct vyre_cuda_args){&f->b, 1, NULL, 0, 0, NULL, 0, VYRE_GRID_AUTO};
}

/* Buffer {1, 2, 3} and INC compiled. */
static void prep_kernel(struct fx *f) {
    struct vyre_error e;
    uint32_t v[3] = {1, 2, 3};
    CHECK_EQ_U64(vyre_cuda_buffer_alloc(f->d, VYRE_U32, 3, &f->b, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_buffer_upload(f->b, 0, v, sizeof v, &e), VYRE_OK);
    f->p = parse(INC);
    CHECK_EQ_U64(vyre_cuda_compile(f->d, f->p, &f->k, &e), VYRE_OK);
}

/* The device computes: INC on {1, 2, 3} gives {2, 3, 4}. */
static bool usable(vyre_cuda_device *d) {
    struct fx f = {.d = d};
    vyre_cuda_device_retain(d);
    prep_kernel(&f);
    struct vyre_error e;
    struct vyre_cuda_args a = inc_args(&f);
    uint32_t got[3] = {0};
    bool ok = f.k && vyre_cuda_launch(f.k, &a, &e) == VYRE_OK &&
              vyre_cuda_buffer_download(f.b, 0, got, sizeof got, &e) == VYRE_OK && got[0] == 2 &&
              got[1] == 3 && got[2] == 4;
    fx_close(&f);
    return ok;
}

static void test_computes(void) {
    struct fx f;
    struct vyre_error e;
    CHECK_EQ_U64(fx_open(&f, &e), VYRE_OK);
    prep_kernel(&f);
    struct vyre_cuda_args a = inc_args(&f);
    CHECK_EQ_U64(vyre_cuda_launch(f.k, &a, &e), VYRE_OK);
    uint32_t got[3];
    CHECK_EQ_U64(vyre_cuda_buffer_download(f.b, 0, got, sizeof got, &e), VYRE_OK);
    CHECK(got[0] == 2 && got[1] == 3 && got[2] == 4);
    struct vyre_cuda_step step = {f.k, a};
    CHECK_EQ_U64(vyre_cuda_graph_capture(f.d, &step, 1, &f.g, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_graph_launch(f.g, 5, NULL, &e), VYRE_OK);
    CHECK_EQ_U64(vyre_cuda_buffer_download(f.b, 0, got, sizeof got, &e), VYRE_OK);
    CHECK(got[0] == 7 && got[1] == 8 && got[2] == 9);
    /* A fresh buffer from a count is poisoned by the fake: run zeroes it. */
    struct vyre_buffer_arg in = {NULL, 3};
    void *out[1] = {got};
    CHECK_EQ_U64(
        vyre_cuda_run(f.d, f.p,
                      &(struct vyre_cuda_run_options){.buffers = &in, .nbuffers = 1, .out = out},
                      &e),
        VYRE_OK);
    CHECK(got[0] == 1 && got[1] == 1 && got[2] == 1);
    /* The sequence options: element-range readbacks after the repeated steps, and the
     * rounds/timing results asked for through options, not side channels. */
    uint32_t two[2] = {0, 0};
    struct vyre_cuda_readback rb = {f.b, 1, 2, two}; /* elements [1, 3) */
    struct vyre_timing t = {0, 0, 0, 0};
    struct vyre_cuda_sequence_options so = {
        .times = 2, .readback = &rb, .nreadback = 1, .timing = &t};
    CHECK_EQ_U64(vyre_cuda_sequence(f.d, &step, 1, &so, &e), VYRE_OK);
    CHECK(two[0] == 10 && two[1] == 11 && t.wall_ns > 0); /* {7, 8, 9} + 2 */
    rb.first = 2;                                         /* [2, 4) of 3 elements */
    CHECK_EQ_U64(vyre_cuda_sequence(f.d, &step, 1, &so, &e), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(e.message, "ranges are in elements");
    uint64_t rounds = 99;
    CHECK_EQ_U64(vyre_cuda_run(f.d, f.p,
                               &(struct vyre_cuda_run_options){
                                   .buffers = &in, .nbuffers = 1, .out = out, .rounds = &rounds},
                               &e),
                 VYRE_OK);
    CHECK_EQ_U64(rounds, 0); /* no grid statements: 0, written */
    CHECK_EQ_U64(vyre_cuda_run(f.d, f.p, NULL, &e), VYRE_ERR_ARG);
    fx_close(&f);
    CHECK_STR_CONTAINS(ctl("misuse"), "0 ");
}

/* A sticky fault while opening, with no other object of the ordinal to notice it:
 * the next open must still reset the context and work. */
static void test_sticky_open_recovers(void) {
    struct fx f;
    struct vyre_error e;
    const char *calls[] = {"cuStreamCreate", "cuEventCreate", "cuDeviceGetName",
                           "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain"};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "fail %s:1:CUDA_ERROR_ILLEGAL_ADDRESS:sticky", calls[i]);
        ctl(cmd);
        CHECK_EQ_U64(fx_open(&f, &e), VYRE_ERR_DEVICE_LOST);
        CHECK_STR_CONTAINS(e.message, calls[i]);
        CHECK(f.d == NULL);
        CHECK_EQ_U64(fx_open(&f, &e), VYRE_OK);
        CHECK(f.d && usable(f.d));
        fx_close(&f);
    }
    CHECK_STR_CONTAINS(ctl("live"), "mem=0 mem_bytes=0 host=0 host_bytes=0 modules=0 links=0 "
                                    "streams=0 events=0 graphs=0 execs=0 ctx_refs=0");
}

/* The entries the grid-barrier work will use, straight through cuGetProcAddress_v2:
 * occupancy, cooperative launches within and past it, and the device attribute. */
typedef CUresult coop_fn(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shared, CUstream s, void **params);
typedef CUresult occ_fn(int *blocks, CUfunction f, int block_size, size_t dynamic_smem);

static void test_cooperative(void) {
    struct fx f;
    struct vyre_error e;
    CHECK_EQ_U64(fx_open(&f, &e), VYRE_OK);
    prep_kernel(&f);
    void *s = dlsym(vyre_cu.handle, "cuGetProcAddress_v2"), *pc = NULL, *po = NULL;
    vyre_cu_fn_cuGetProcAddress_v2 *gpa = NULL;
    memcpy(&gpa, &s, sizeof s);
    CHECK_EQ_U64(gpa("cuLaunchCooperativeKernel", &pc, 12000, 0, NULL), CUDA_SUCCESS);
    CHECK_EQ_U64(gpa("cuOccupancyMaxActiveBlocksPerMultiprocessor", &po, 12000, 0, NULL),
                 CUDA_SUCCESS);
    coop_fn *coop = NULL;
    occ_fn *occ = NULL;
    memcpy(&coop, &pc, sizeof pc);
    memcpy(&occ, &po, sizeof po);
    struct vyre_cuda_info info;
    CHECK_EQ_U64(vyre_cuda_device_info(f.d, &info, &e), VYRE_OK);
    CHECK(info.cooperative_launch);
    int blocks = 0;
    CHECK_EQ_U64(occ(&blocks, f.k->fn, 64, 0), CUDA_SUCCESS);
    CHECK_EQ_U64(blocks, 32); /* 2048 threads per SM / 64, at most 32 */
    CHECK_EQ_U64(occ(&blocks, f.k->fn, 128, 0), CUDA_SUCCESS);
    CHECK_EQ_U64(blocks, 0); /* past the kernel's .maxntid 64 */
    uint64_t ptr = vyre_cuda_buffer_pointer(f.b);
    uint32_t count = 3;
    void *params[2] = {&ptr, &count};
    unsigned fit = 32u * (unsigned)info.sms;
    CHECK_EQ_U64(coop(f.k->fn, fit + 1, 1, 1, 64, 1, 1, 0, f.d->stream, params), 720);
    CHECK_EQ_U64(coop(f.k->fn, 1, 1, 1, 64, 1, 1, 0, f.d->stream, params), CUDA_SUCCESS);
    uint32_t got[3];
    CHECK_EQ_U64(vyre_cuda_buffer_download(f.b, 0, got, sizeof got, &e), VYRE_OK);
    CHECK(got[0] == 2 && got[1] == 3 && got[2] == 4); /* it ran the registered program */
    ctl("set cooperative 0");
    CHECK_EQ_U64(coop(f.k->fn, 1, 1, 1, 64, 1, 1, 0, f.d->stream, params), 801);
    ctl("set cooperative 1");
    fx_close(&f);
}

/* ---- the fault sweep ------------------------------------------------------------------ */

struct op {
    const char *name;
    void (*prep)(struct fx *);
    enum vyre_status (*run)(struct fx *, struct vyre_error *);
};

static void prep_none(struct fx *f) { (void)f; }
static void prep_buffer(struct fx *f) {
    struct vyre_error e;
    CHECK_EQ_U64(vyre_cuda_buffer_alloc(f->d, VYRE_U32, 300, &f->b, &e), VYRE_OK);
}
static void prep_graph(struct fx *f) {
    prep_kernel(f);
    struct vyre_error e;
    struct vyre_cuda_step s = {f->k, inc_args(f)};
    CHECK_EQ_U64(vyre_cuda_graph_capture(f->d, &s, 1, &f->g, &e), VYRE_OK);
}
static void prep_pools(struct fx *f) {
    struct vyre_error e;
    prep_kernel(f);
    struct vyre_buffer_arg in = {f->host, 3};
    void *out[1] = {f->host};
    CHECK_EQ_U64(
        vyre_cuda_run(f->d, f->p,
                      &(struct vyre_cuda_run_options){.buffers = &in, .nbuffers = 1, .out = out},
                      &e),
        VYRE_OK);
    vyre_cuda_kernel_free(f->k);
    f->k = NULL;
}

static enum vyre_status run_open(struct fx *f, struct vyre_error *e) {
    return vyre_cuda_device_open(0, &f->d2, e);
}
static enum vyre_status run_alloc(struct fx *f, struct vyre_error *e) {
    return vyre_cuda_buffer_alloc(f->d, VYRE_F64, 1000, &f->b, e);
}
static enum vyre_status run_upload(struct fx *f, struct vyre_error *e) {
    return vyre_cuda_buffer_upload(f->b, 8, f->host, 800, e);
}
static enum vyre_status run_download(struct fx *f, struct vyre_error *e) {
    return vyre_cuda_buffer_download(f->b, 0, f->host, 1200, e);
}
static enum vyre_status run_compile(struct fx *f, struct vyre_error *e) {
    f->p = fresh_program();
    return vyre_cuda_compile(f->d, f->p, &f->k, e);
}
static enum vyre_status run_launch(struct fx *f, struct vyre_error *e) {
    struct vyre_cuda_args a = inc_args(f);
    enum vyre_status st = vyre_cuda_launch(f->k, &a, e);
    return st == VYRE_OK ? vyre_cuda_synchronize(f->d, e) : st;
}
static enum vyre_status run_run(struct fx *f, struct vyre_error *e) {
    struct vyre_timing t;
    struct vyre_buffer_arg in = {f->host, 100};
    void *out[1] = {f->host};
    return vyre_cuda_run(
        f->d, f->p,
        &(struct vyre_cuda_run_options){.buffers = &in, .nbuffers = 1, .out = out, .timing = &t},
        e);
}
static void prep_run(struct fx *f) {
    prep_kernel(f);
    struct vyre_error e;
    vyre_cuda_kernel_free(f->k); /* the module stays cached until trim */
    f->k = NULL;
    CHECK_EQ_U64(vyre_cuda_trim(f->d, &e), VYRE_OK); /* module unloaded: run reloads from disk */
}
/* A module cache of one entry holding an unused module: the next compile evicts it. */
static void prep_evict(struct fx *f) {
    setenv("VYRE_MODULE_CACHE_ENTRIES", "1", 1);
    prep_kernel(f);
    vyre_cuda_kernel_free(f->k);
    vyre_program_free(f->p);
    f->k = NULL;
    f->p = NULL;
}
static enum vyre_status run_evict(struct fx *f, struct vyre_error *e) {
    enum vyre_status st = run_compile(f, e);
    unsetenv("VYRE_MODULE_CACHE_ENTRIES");
    return st;
}
static enum vyre_status run_sequence(struct fx *f, struct vyre_error *e) {
    struct vyre_cuda_step s = {f->k, inc_args(f)};
    struct vyre_cuda_readback rb = {f->b, 1, 2, f->host}; /* elements [1, 3) */
    struct vyre_timing t;
    struct vyre_cuda_sequence_options o = {
        .times = 3, .readback = &rb, .nreadback = 1, .timing = &t};
    return vyre_cuda_sequence(f->d, &s, 1, &o, e);
}
static enum vyre_status run_capture(struct fx *f, struct vyre_error *e) {
    struct vyre_cuda_step s[2] = {{f->k, inc_args(f)}, {f->k, inc_args(f)}};
    return vyre_cuda_graph_capture(f->d, s, 2, &f->g, e);
}
static enum vyre_status run_replay(struct fx *f, struct vyre_error *e) {
    struct vyre_timing t;
    return vyre_cuda_graph_launch(f->g, 2, &t, e);
}
static enum vyre_status run_trim(struct fx *f, struct vyre_error *e) {
    return vyre_cuda_trim(f->d, e);
}

static const struct op ops[] = {
    {"open", prep_none, run_open},
    {"buffer_alloc", prep_none, run_alloc},
    {"upload", prep_buffer, run_upload},
    {"download", prep_buffer, run_download},
    {"compile", prep_none, run_compile},
    {"launch", prep_kernel, run_launch},
    {"run", prep_run, run_run},
    {"sequence", prep_kernel, run_sequence},
    {"graph_capture", prep_kernel, run_capture},
    {"graph_launch", prep_graph, run_replay},
    {"trim", prep_pools, run_trim},
    {"compile_evict", prep_evict, run_evict},
};

/* Calls whose failure the runtime absorbs (a retry, a fallback, an optional value). */
static bool tolerated(const char *call, const char *result) {
    return strcmp(call, "cuCtxGetCurrent") == 0 || strcmp(call, "cuMemHostAlloc") == 0 ||
           strcmp(call, "cuEventElapsedTime") == 0 || strcmp(call, "cuFuncGetAttribute") == 0 ||
           strcmp(call, "cuLinkDestroy") == 0 || strcmp(call, "cuModuleLoadDataEx") == 0 ||
           (strcmp(call, "cuMemAlloc") == 0 && strcmp(result, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
}

/* A failed release leaves its object with the driver: it may stay live. */
static bool release_call(const char *call) {
    return strcmp(call, "cuMemFree") == 0 || strcmp(call, "cuMemFreeHost") == 0 ||
           strcmp(call, "cuModuleUnload") == 0 || strcmp(call, "cuLinkDestroy") == 0 ||
           strcmp(call, "cuGraphDestroy") == 0 || strcmp(call, "cuGraphExecDestroy") == 0;
}

static int cases;

static void one_case(const struct op *op, const char *call, int nth, const char *result,
                     bool sticky) {
    struct fx f;
    struct vyre_error e;
    char what[160], cmd[160], base[1024];
    snprintf(what, sizeof what, "%s: call %d of %s -> %s%s", op->name, nth, call, result,
             sticky ? " (sticky)" : "");
    harness_current = what;
    cases++;
    if (fx_open(&f, &e) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "open before the case: %s", e.message);
        return;
    }
    snprintf(base, sizeof base, "%s", ctl("live"));
    op->prep(&f);
    snprintf(cmd, sizeof cmd, "fail %s:%d:%s%s", call, nth, result, sticky ? ":sticky" : "");
    unsigned long long fired0 = 0, fired1 = 0;
    sscanf(ctl("faults"), "fired=%llu", &fired0);
    ctl(cmd);
    enum vyre_status st = op->run(&f, &e);
    sscanf(ctl("faults"), "fired=%llu", &fired1);
    ctl("clear");
    CHECK_EQ_U64(fired1, fired0 + 1); /* the run made the same calls as the traced one */
    if (st != VYRE_OK) {
        CHECK_STR_CONTAINS(e.message, "Fix:");
        CHECK_STR_CONTAINS(e.message, sticky ? result : call);
    } else if (!sticky && !tolerated(call, result)) {
        /* Not raised: then recorded (a destructor's call) and reported next. */
        CHECK(vyre_cuda_synchronize(f.d, &e) != VYRE_OK);
        CHECK_STR_CONTAINS(e.message, call);
    }
    struct vyre_error e2;
    if (sticky) {
        CHECK(vyre_cuda_synchronize(f.d, &e2) == VYRE_ERR_DEVICE_LOST);
        CHECK(vyre_cuda_device_lost(f.d));
        CHECK_STR_CONTAINS(e2.message, result);
        fx_close(&f);
        CHECK(fx_open(&f, &e) == VYRE_OK && usable(f.d)); /* the reopen resets the context */
        fx_close(&f);
        return;
    }
    vyre_cuda_synchronize(f.d, &e2); /* a deferred error is reported once */
    vyre_cuda_graph_free(f.g);
    vyre_cuda_kernel_free(f.k);
    vyre_cuda_buffer_free(f.b);
    vyre_cuda_device_release(f.d2);
    f.g = NULL, f.k = NULL, f.b = NULL, f.d2 = NULL;
    vyre_cuda_synchronize(f.d, &e2);
    CHECK_EQ_U64(vyre_cuda_trim(f.d, &e2), VYRE_OK);
    if (!release_call(call)) CHECK_STR_CONTAINS(ctl("live"), base);
    CHECK(!vyre_cuda_device_lost(f.d) && usable(f.d));
    fx_close(&f);
}

static void sweep(const struct op *op) {
    struct fx f;
    struct vyre_error e;
    harness_current = op->name;
    if (fx_open(&f, &e) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "open: %s", e.message);
        return;
    }
    op->prep(&f);
    ctl("trace start");
    CHECK_EQ_U64(op->run(&f, &e), VYRE_OK);
    char trace[4096];
    snprintf(trace, sizeof trace, "%s", ctl("trace stop"));
    fx_close(&f);
    CHECK(trace[0] != '\0');
    printf("  %s: %s\n", op->name, trace);
    char seen[4096] = " ";
    for (char *save = NULL, *t = strtok_r(trace, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        int nth = 1;
        char key[80];
        snprintf(key, sizeof key, " %s ", t);
        for (const char *p = strstr(seen, key); p; p = strstr(p + 1, key)) nth++;
        strncat(seen, key + 1, sizeof seen - strlen(seen) - 1);
        one_case(op, t, nth, "CUDA_ERROR_OUT_OF_MEMORY", false);
        one_case(op, t, nth, "CUDA_ERROR_INVALID_VALUE", false);
        one_case(op, t, nth, "CUDA_ERROR_ILLEGAL_ADDRESS", true);
    }
}

static void test_fault_sweep(void) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) sweep(&ops[i]);
    harness_current = "test_fault_sweep";
    printf("  fault sweep: %d cases\n", cases);
    CHECK(cases > 100);
    CHECK_STR_CONTAINS(ctl("misuse"), "0 ");
}

int main(void) {
    char dir[] = "/tmp/vyre-fakecuda-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("VYRE_CACHE_DIR", dir, 1);
    setenv("VYRE_LIBCUDA", VYRE_FAKECUDA_PATH, 1);
    void *h = dlopen(VYRE_FAKECUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    void *c = h ? dlsym(h, "vyre_fakecuda_control") : NULL;
    void *fr = h ? dlsym(h, "vyre_fakecuda_free") : NULL;
    if (!c || !fr) {
        fprintf(stderr, "cannot load the fake driver %s: %s\n", VYRE_FAKECUDA_PATH, dlerror());
        return 1;
    }
    memcpy(&control, &c, sizeof c);
    memcpy(&control_free, &fr, sizeof fr);
    ctl("set ptxas 0"); /* thousands of throwaway programs: structural PTX checks only */
    struct vyre_error e;
    CHECK(vyre_cuda_available(&e));
    char reg[512];
    snprintf(reg, sizeof reg, "program %s", INC); /* launches of INC compute */
    ctl(reg);
    RUN_TEST(test_entries_resolve);
    RUN_TEST(test_computes);
    RUN_TEST(test_cooperative);
    RUN_TEST(test_sticky_open_recovers);
    RUN_TEST(test_fault_sweep);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return harness_finish();
}
