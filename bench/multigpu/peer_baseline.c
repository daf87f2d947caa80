/* peer_baseline.c — the plain-C baseline of vyre's peer copies (docs/MULTIGPU.md §7):
 * libcuda loaded with dlopen and resolved through cuGetProcAddress_v2 like the runtime,
 * peer access enabled from device 0 to device 1 when cuDeviceCanAccessPeer allows, then
 * REPS x cuMemcpyPeerAsync of BYTES from device 0 to device 1 on one stream, one sync.
 *   vyre_bench_peer BYTES REPS   ->  "peer_copy GBPS GB/s (path)"
 * Exit 2 when CUDA or a second device is not usable. Not a test. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ENTRIES(X)                    \
    X(cuInit, 2000)                   \
    X(cuDeviceGet, 2000)              \
    X(cuDeviceGetCount, 2000)         \
    X(cuDevicePrimaryCtxRetain, 7000) \
    X(cuCtxSetCurrent, 4000)          \
    X(cuDeviceCanAccessPeer, 4000)    \
    X(cuCtxEnablePeerAccess, 4000)    \
    X(cuMemAlloc, 3020)               \
    X(cuMemcpyPeerAsync, 4000)        \
    X(cuStreamCreate, 2000)           \
    X(cuStreamSynchronize, 2000)

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

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int load(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!sym) return 0;
    gpa_fn gpa;
    memcpy(&gpa, &sym, sizeof gpa);
#define RESOLVE(n, v)                                                                 \
    do {                                                                              \
        void *p_ = NULL;                                                              \
        CUdriverProcAddressQueryResult q_;                                            \
        if (gpa(#n, &p_, v, CU_GET_PROC_ADDRESS_DEFAULT, &q_) != CUDA_SUCCESS || !p_) \
            return 0;                                                                 \
        memcpy(&cu.n, &p_, sizeof p_);                                                \
    } while (0);
    ENTRIES(RESOLVE)
#undef RESOLVE
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: vyre_bench_peer BYTES REPS\n");
        return 2;
    }
    size_t bytes = (size_t)strtoull(argv[1], NULL, 10);
    int reps = atoi(argv[2]);
    int count = 0;
    if (!load() || cu.cuInit(0) != CUDA_SUCCESS || cu.cuDeviceGetCount(&count) != CUDA_SUCCESS ||
        count < 2) {
        fprintf(stderr, "vyre_bench_peer: needs CUDA and 2 devices\n");
        return 2;
    }
    CUdevice d0, d1;
    CUcontext c0, c1;
    CK(cu.cuDeviceGet(&d0, 0));
    CK(cu.cuDeviceGet(&d1, 1));
    CK(cu.cuDevicePrimaryCtxRetain(&c0, d0));
    CK(cu.cuDevicePrimaryCtxRetain(&c1, d1));
    CUdeviceptr dst = 0, src = 0;
    CK(cu.cuCtxSetCurrent(c1));
    CK(cu.cuMemAlloc(&dst, bytes));
    CK(cu.cuCtxSetCurrent(c0));
    CK(cu.cuMemAlloc(&src, bytes));
    int can = 0;
    CK(cu.cuDeviceCanAccessPeer(&can, d0, d1));
    if (can) {
        CUresult r = cu.cuCtxEnablePeerAccess(c1, 0);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) can = 0;
    }
    CUstream s;
    CK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cu.cuMemcpyPeerAsync(dst, c1, src, c0, bytes, s)); /* warm-up */
    CK(cu.cuStreamSynchronize(s));
    double t0 = now_s();
    for (int i = 0; i < reps; i++) CK(cu.cuMemcpyPeerAsync(dst, c1, src, c0, bytes, s));
    CK(cu.cuStreamSynchronize(s));
    double t = now_s() - t0;
    printf("peer_copy %.2f GB/s (%s)\n", (double)bytes * reps / t / 1e9, can ? "peer" : "staged");
    return 0;
}
