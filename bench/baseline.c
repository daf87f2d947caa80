/* baseline.c — plain-C CUDA driver-API baselines for bench/run.sh. Loads libcuda.so.1
 * with dlopen and resolves entry points through cuGetProcAddress_v2, like the runtime,
 * then times one of:
 *   launch   PTX_FILE N      N launches of the `inc` kernel (u64 ptr, u32 count) on a
 *                            resident 1024-element buffer, then one sync: ns per launch
 *   roundtrip PTX_FILE N     N x (4 KiB upload + launch + 4 KiB download + sync): ns each
 *   graph    PTX_FILE N      the launch captured 100 times into a graph, replayed N/100
 *                            times: ns per launch
 *   saxpy    PTX_FILE BYTES  saxpy (x, y, nx, ny, a) over BYTES of f32 per vector vs a
 *                            cuMemcpyDtoD of the same size: GB/s of each
 * Output: one line "name value unit". Exit 2 when CUDA is not usable. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ENTRIES(X)                        \
    X(cuInit, 2000)                       \
    X(cuDeviceGet, 2000)                  \
    X(cuDevicePrimaryCtxRetain, 7000)     \
    X(cuCtxSetCurrent, 4000)              \
    X(cuModuleLoadData, 2000)             \
    X(cuModuleGetFunction, 2000)          \
    X(cuMemAlloc, 3020)                   \
    X(cuMemFree, 3020)                    \
    X(cuMemHostAlloc, 2020)               \
    X(cuMemcpyHtoDAsync, 3020)            \
    X(cuMemcpyDtoHAsync, 3020)            \
    X(cuMemcpyDtoDAsync, 3020)            \
    X(cuMemsetD8Async, 3020)              \
    X(cuStreamCreate, 2000)               \
    X(cuStreamSynchronize, 2000)          \
    X(cuLaunchKernel, 4000)               \
    X(cuEventCreate, 2000)                \
    X(cuEventRecord, 2000)                \
    X(cuEventSynchronize, 2000)           \
    X(cuEventElapsedTime, 12080)          \
    X(cuStreamBeginCapture, 10010)        \
    X(cuStreamEndCapture, 10000)          \
    X(cuGraphInstantiateWithFlags, 11040) \
    X(cuGraphLaunch, 10000)

static struct {
#define MEMBER(n, v) __typeof__(n) *n;
    ENTRIES(MEMBER)
#undef MEMBER
} cu;

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

#define CK(call)                                                \
    do {                                                        \
        CUresult r_ = (call);                                   \
        if (r_ != CUDA_SUCCESS) {                               \
            fprintf(stderr, "%s failed: %d\n", #call, (int)r_); \
            exit(1);                                            \
        }                                                       \
    } while (0)

#define ENQUEUE_BATCH 128 /* launches per timed batch (bench.lua uses the same) */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int load(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    void *sym = dlsym(h, "cuGetProcAddress_v2");
    gpa_fn gpa;
    if (!sym) return 0;
    memcpy(&gpa, &sym, sizeof gpa);
#define RESOLVE(n, v)                                                                        \
    {                                                                                        \
        void *fn = NULL;                                                                     \
        if (gpa(#n, &fn, v, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL) != CUDA_SUCCESS || !fn) \
            return 0;                                                                        \
        memcpy(&cu.n, &fn, sizeof fn);                                                       \
    }
    ENTRIES(RESOLVE)
#undef RESOLVE
    return cu.cuInit(0) == CUDA_SUCCESS;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

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

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s launch|roundtrip|graph|saxpy PTX_FILE N\n", argv[0]);
        return 1;
    }
    if (!load()) {
        fprintf(stderr, "CUDA is not usable (libcuda.so.1 / cuInit)\n");
        return 2;
    }
    const char *mode = argv[1];
    long long n = atoll(argv[3]);
    char *ptx = read_file(argv[2]);
    if (!ptx) {
        fprintf(stderr, "cannot read %s\n", argv[2]);
        return 1;
    }
    char entry[256];
    entry_of(ptx, entry, sizeof entry);
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUmodule mod;
    CUfunction fn;
    CK(cu.cuDeviceGet(&dev, 0));
    CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cu.cuCtxSetCurrent(ctx));
    CK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cu.cuModuleLoadData(&mod, ptx));
    CK(cu.cuModuleGetFunction(&fn, mod, entry));
    if (strcmp(mode, "saxpy") == 0) {
        size_t bytes = (size_t)n, count = bytes / 4;
        CUdeviceptr x, y, z;
        CK(cu.cuMemAlloc(&x, bytes));
        CK(cu.cuMemAlloc(&y, bytes));
        CK(cu.cuMemAlloc(&z, bytes));
        CK(cu.cuMemsetD8Async(x, 0x3f, bytes, s));
        CK(cu.cuMemsetD8Async(y, 0x40, bytes, s));
        unsigned nx = (unsigned)count, ny = (unsigned)count;
        float a = 2.0f;
        void *args[] = {&x, &y, &nx, &ny, &a};
        unsigned grid = (unsigned)((count + 255) / 256);
        CUevent e0, e1;
        CK(cu.cuEventCreate(&e0, 0));
        CK(cu.cuEventCreate(&e1, 0));
        float ms_k = 0, ms_c = 0;
        CK(cu.cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, s, args, NULL)); /* warm-up */
        CK(cu.cuEventRecord(e0, s));
        for (int i = 0; i < 10; i++)
            CK(cu.cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, s, args, NULL));
        CK(cu.cuEventRecord(e1, s));
        CK(cu.cuEventSynchronize(e1));
        CK(cu.cuEventElapsedTime(&ms_k, e0, e1));
        CK(cu.cuEventRecord(e0, s));
        for (int i = 0; i < 10; i++) CK(cu.cuMemcpyDtoDAsync(z, x, bytes, s));
        CK(cu.cuEventRecord(e1, s));
        CK(cu.cuEventSynchronize(e1));
        CK(cu.cuEventElapsedTime(&ms_c, e0, e1));
        /* saxpy moves 3 x bytes (read x, read y, write y); a copy moves 2 x bytes. */
        printf("c_saxpy_gbps %.3f GB/s\n", 3.0 * (double)bytes * 10 / (ms_k * 1e6));
        printf("c_copy_gbps %.3f GB/s\n", 2.0 * (double)bytes * 10 / (ms_c * 1e6));
        return 0;
    }
    unsigned count = 1024;
    CUdeviceptr buf;
    CK(cu.cuMemAlloc(&buf, count * 4));
    CK(cu.cuMemsetD8Async(buf, 0, count * 4, s));
    void *args[] = {&buf, &count};
    unsigned grid = (count + 63) / 64, block = 64;
    CK(cu.cuStreamSynchronize(s));
    if (strcmp(mode, "launch") == 0) {
        double t0 = now_ns();
        for (long long i = 0; i < n; i++)
            CK(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
        CK(cu.cuStreamSynchronize(s));
        printf("c_launch_ns %.1f ns\n", (now_ns() - t0) / (double)n);
    } else if (strcmp(mode, "enqueue") == 0) {
        /* The CPU cost of one launch at the driver's floor: batches of ENQUEUE_BATCH
         * launches, well under the launch queue's depth so the driver never waits for the
         * GPU, each batch timed alone and drained (untimed) before the next; the median
         * batch, per launch. */
        long long batches = n / ENQUEUE_BATCH > 50 ? n / ENQUEUE_BATCH : 50;
        double *per = malloc((size_t)batches * sizeof *per);
        if (!per) return 1;
        for (long long b = 0; b < batches; b++) {
            double t0 = now_ns();
            for (int i = 0; i < ENQUEUE_BATCH; i++)
                CK(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
            per[b] = (now_ns() - t0) / ENQUEUE_BATCH;
            CK(cu.cuStreamSynchronize(s));
        }
        qsort(per, (size_t)batches, sizeof *per, cmp_double);
        printf("c_enqueue_ns %.1f ns\n", per[batches / 2]);
        free(per);
    } else if (strcmp(mode, "roundtrip") == 0) {
        void *host;
        CK(cu.cuMemHostAlloc(&host, 4096, 0));
        memset(host, 0, 4096);
        double t0 = now_ns();
        for (long long i = 0; i < n; i++) {
            CK(cu.cuMemcpyHtoDAsync(buf, host, 4096, s));
            CK(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
            CK(cu.cuMemcpyDtoHAsync(host, buf, 4096, s));
            CK(cu.cuStreamSynchronize(s));
        }
        printf("c_roundtrip_ns %.1f ns\n", (now_ns() - t0) / (double)n);
    } else if (strcmp(mode, "graph") == 0) {
        CUgraph g;
        CUgraphExec ge;
        CK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        for (int i = 0; i < 100; i++)
            CK(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
        CK(cu.cuStreamEndCapture(s, &g));
        CK(cu.cuGraphInstantiateWithFlags(&ge, g, 0));
        long long reps = n / 100 > 0 ? n / 100 : 1;
        double t0 = now_ns();
        for (long long i = 0; i < reps; i++) CK(cu.cuGraphLaunch(ge, s));
        CK(cu.cuStreamSynchronize(s));
        printf("c_graph_ns %.1f ns\n", (now_ns() - t0) / (double)(reps * 100));
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 1;
    }
    return 0;
}
