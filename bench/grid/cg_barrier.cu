// bench/grid/cg_barrier.cu — the cost of cooperative_groups::this_grid().sync() at one
// block per SM and at full occupancy (the baseline of bench/grid/barrier.lua), measured
// as (time of K syncs - time of 0 syncs) / K with cudaEvents, best of 5.
// Build on the device: nvcc -O3 -arch=native -o cg_barrier cg_barrier.cu
// Prints `cg_barrier,cooperative,<blocks>,<threads>,<ns>`.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void loop(unsigned *x, unsigned k) {
    cg::grid_group g = cg::this_grid();
    for (unsigned r = 0; r < k; r++) {
        g.sync();
        x[g.thread_rank()] = r;
    }
}

static float run(unsigned *x, unsigned k, int blocks, int threads) {
    void *args[] = {&x, &k};
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int rep = 0; rep < 5; rep++) {
        cudaEventRecord(a);
        cudaLaunchCooperativeKernel((void *)loop, blocks, threads, args, 0, 0);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        if (ms < best) best = ms;
    }
    return best;
}

int main(int argc, char **argv) {
    unsigned K = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
    int threads = 256, sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, loop, threads, 0);
    unsigned *x;
    cudaMalloc(&x, (size_t)sms * per_sm * threads * 4);
    int grids[2] = {sms, sms * per_sm};
    for (int i = 0; i < 2; i++) {
        run(x, 1, grids[i], threads);
        float full = run(x, K, grids[i], threads), none = run(x, 0, grids[i], threads);
        printf("cg_barrier,cooperative,%d,%d,%.1f\n", grids[i], threads,
               (full - none) * 1e6 / K);
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) printf("# error %s\n", cudaGetErrorString(e));
    return 0;
}
