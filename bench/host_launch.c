/* host_launch.c — the C side of bench/host_launch.sh: the host cost of one launch, in
 * ns, with the launches themselves computing nothing (the fake driver under
 * VYRE_FAKECUDA_NOEXEC=1), so what is left is the CPU time of the caller, libvyre and
 * the driver entry. The Lua side (host_launch.lua) times the same two programs
 * through k:launch (by name) and k:bind (bound); the difference to these loops is the
 * binding's own cost per launch, which a real GPU adds on top of its ~2-3 us floor.
 *
 * Usage: vyre_bench_host N [REPS]. Prints "name value ns" lines:
 *   c_raw_<prog>       cuLaunchKernel on a module of the same PTX, arguments packed
 *                      once: the plain-C loop of bench/run.sh, on this driver
 *   c_launch_<prog>    vyre_cuda_launch (arguments by slot, checked every call)
 *   c_prepared_<prog>  vyre_cuda_launch_prepared (what a bound launch calls)
 *   c_backend_<prog>   vyre_backend_launch_prepared (the same through vyre_backend.h)
 * Each number is the best of REPS (default 7) runs of N launches, per launch. Exit 2 when no
 * device opens. Needs no cuda.h: the few driver types are declared here. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vyre.h"
#include "vyre_backend.h"
#include "vyre_cuda.h"

typedef int cu_result;
typedef cu_result (*gpa_fn)(const char *, void **, int, unsigned long long, int *);
typedef cu_result (*load_fn)(void **, const void *, unsigned, void *, void **);
typedef cu_result (*getfn_fn)(void **, void *, const char *);
typedef cu_result (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, void *, void **, void **);

static const char *const INC = "(program inc (workgroup 64)\n"
                               "  (buffer v u32 read_write)\n"
                               "  (let i (gid x))\n"
                               "  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))";
static const char *const SAXPY = "(program saxpy (workgroup 256)\n"
                                 "  (buffer x f32 read)\n"
                                 "  (buffer y f32 read_write)\n"
                                 "  (param a f32)\n"
                                 "  (let i (gid x))\n"
                                 "  (if (lt i (len y))\n"
                                 "    (then (store y i (add (mul a (load x i)) (load y i))))))";

/* CPU time of the process, not wall time: on a shared machine a run that loses the
 * core for a while does not count the wait (both sides measure the same way). */
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, const struct vyre_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->message : "failed");
    exit(1);
}

/* The driver's own entry points, from the library libvyre loaded (same handle). */
static struct {
    load_fn load;
    getfn_fn getfn;
    launch_fn launch;
} cu;

static int load_driver(void) {
    const char *path = getenv("VYRE_LIBCUDA");
    void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!sym) return 0;
    gpa_fn gpa;
    memcpy(&gpa, &sym, sizeof gpa);
    void *f[3] = {NULL, NULL, NULL};
    if (gpa("cuModuleLoadDataEx", &f[0], 2010, 0, NULL) ||
        gpa("cuModuleGetFunction", &f[1], 2000, 0, NULL) ||
        gpa("cuLaunchKernel", &f[2], 4000, 0, NULL))
        return 0;
    memcpy(&cu.load, &f[0], sizeof f[0]);
    memcpy(&cu.getfn, &f[1], sizeof f[1]);
    memcpy(&cu.launch, &f[2], sizeof f[2]);
    return cu.load && cu.getfn && cu.launch;
}

/* The name after ".entry" in ptx (the program's own entry). */
static void entry_of(const char *ptx, char *out, size_t size) {
    const char *p = strstr(ptx, ".entry");
    size_t n = 0;
    if (p) {
        p += 6;
        while (*p == ' ') p++;
        while (p[n] && p[n] != '(' && p[n] != ' ' && p[n] != '\n' && n + 1 < size) n++;
        memcpy(out, p, n);
    }
    out[n] = '\0';
}

struct prog {
    const char *name;
    vyre_program *p;
    vyre_cuda_kernel *k;
    vyre_cuda_buffer *buf[2];
    vyre_backend_kernel *bk;
    vyre_backend_buffer *bbuf[2];
    uint32_t nbuf, wg;
    vyre_bits params[1];
    uint32_t nparams;
};

static int REPS = 7;

static void report(const char *what, const char *prog, double best, long long n) {
    printf("%s_%s %.1f ns\n", what, prog, best / (double)n);
}

static void bench_prog(struct prog *pr, vyre_cuda_device *d, vyre_backend *be, long long n,
                       const uint64_t count) {
    struct vyre_error err;
    const char *text = strcmp(pr->name, "inc") == 0 ? INC : SAXPY;
    if (vyre_text_parse(text, strlen(text), &pr->p, &err) != VYRE_OK) die("parse", &err);
    if (vyre_cuda_compile(d, pr->p, &pr->k, &err) != VYRE_OK) die("compile", &err);
    if (vyre_backend_compile(be, pr->p, &pr->bk, &err) != VYRE_OK) die("backend compile", &err);
    for (uint32_t i = 0; i < pr->nbuf; i++) {
        enum vyre_type t = pr->nbuf == 1 ? VYRE_U32 : VYRE_F32;
        if (vyre_cuda_buffer_alloc(d, t, count, &pr->buf[i], &err) != VYRE_OK) die("alloc", &err);
        if (vyre_backend_buffer_alloc(be, t, count, &pr->bbuf[i], &err) != VYRE_OK)
            die("backend alloc", &err);
    }
    struct vyre_cuda_args a = {pr->buf, pr->nbuf, pr->params, pr->nparams,
                               count,   NULL,     0,          VYRE_GRID_AUTO};
    struct vyre_cuda_prepared prep;
    if (vyre_cuda_prepare(pr->k, &a, &prep, &err) != VYRE_OK) die("prepare", &err);
    struct vyre_backend_args ba = {.buffers = pr->bbuf,
                                   .nbuffers = pr->nbuf,
                                   .params = pr->params,
                                   .nparams = pr->nparams,
                                   .n = count,
                                   .grid = NULL};
    vyre_backend_prepared *bp;
    if (vyre_backend_prepare(pr->bk, &ba, &bp, &err) != VYRE_OK) die("backend prepare", &err);

    /* the plain-C loop: the same PTX loaded as a module of our own, arguments packed
     * once as the kernel takes them (pointers, counts, params, the vector count) */
    void *mod = NULL, *fn = NULL;
    char entry[128];
    entry_of(vyre_cuda_kernel_ptx(pr->k), entry, sizeof entry);
    if (cu.load(&mod, vyre_cuda_kernel_ptx(pr->k), 0, NULL, NULL) || cu.getfn(&fn, mod, entry))
        die("cuModuleLoadDataEx / cuModuleGetFunction", NULL);
    uint64_t slot[8] = {0};
    void *argv[8];
    for (uint32_t i = 0; i < pr->nbuf; i++) {
        slot[i] = vyre_cuda_buffer_pointer(pr->buf[i]);
        slot[pr->nbuf + i] = count;
    }
    for (uint32_t i = 0; i < pr->nparams; i++) slot[2 * pr->nbuf + i] = pr->params[i];
    for (int i = 0; i < 8; i++) argv[i] = &slot[i];
    unsigned grid = (unsigned)((count + pr->wg - 1) / pr->wg);

    double best[4] = {1e300, 1e300, 1e300, 1e300};
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (long long i = 0; i < n; i++)
            if (cu.launch(fn, grid, 1, 1, pr->wg, 1, 1, 0, NULL, argv, NULL))
                die("cuLaunchKernel", NULL);
        double t1 = now_ns();
        for (long long i = 0; i < n; i++)
            if (vyre_cuda_launch(pr->k, &a, &err) != VYRE_OK) die("launch", &err);
        double t2 = now_ns();
        for (long long i = 0; i < n; i++)
            if (vyre_cuda_launch_prepared(&prep, &err) != VYRE_OK) die("launch_prepared", &err);
        double t3 = now_ns();
        for (long long i = 0; i < n; i++)
            if (vyre_backend_launch_prepared(bp, &err) != VYRE_OK) die("backend prepared", &err);
        double t4 = now_ns();
        double t[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
        for (int j = 0; j < 4; j++)
            if (t[j] < best[j]) best[j] = t[j];
        if (vyre_cuda_synchronize(d, &err) != VYRE_OK) die("synchronize", &err);
    }
    report("c_raw", pr->name, best[0], n);
    report("c_launch", pr->name, best[1], n);
    report("c_prepared", pr->name, best[2], n);
    report("c_backend", pr->name, best[3], n);
    vyre_backend_prepared_free(bp);
}

int main(int argc, char **argv) {
    long long n = argc > 1 ? atoll(argv[1]) : 100000;
    if (n < 1) n = 1;
    if (argc > 2 && atoi(argv[2]) > 0) REPS = atoi(argv[2]);
    struct vyre_error err;
    vyre_cuda_device *d = NULL;
    if (vyre_cuda_device_open(0, &d, &err) != VYRE_OK) {
        fprintf(stderr, "no CUDA device: %s\n", err.message);
        return 2;
    }
    vyre_backend *be = NULL;
    struct vyre_backend_options bo = {0};
    if (vyre_backend_open("cuda", 0, &bo, &be, &err) != VYRE_OK) die("backend open", &err);
    if (!load_driver()) die("cuGetProcAddress_v2 of the loaded driver", NULL);
    struct prog inc = {.name = "inc", .nbuf = 1, .wg = 64};
    struct prog saxpy = {.name = "saxpy", .nbuf = 2, .wg = 256, .nparams = 1};
    float a = 0.5f;
    uint32_t ab;
    memcpy(&ab, &a, sizeof ab);
    saxpy.params[0] = ab;
    bench_prog(&inc, d, be, n, 1024);
    bench_prog(&saxpy, d, be, n, 1024);
    return 0;
}
