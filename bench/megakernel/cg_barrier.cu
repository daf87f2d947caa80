// bench/megakernel/cg_barrier.cu — the baseline grid barrier: CUDA C cooperative
// groups, cg::this_grid().sync(), in a cooperative launch, at two grids: one block per
// SM, and every block that can be co-resident (full occupancy, from the occupancy API).
// Prints one line per grid:
//   cg_barrier grid=<blocks> block=<threads> per_sm=<n> barriers=<N> ns_per_barrier=<x>
// ns per barrier = (time of a launch running N barriers - time of one running none) / N,
// the median of 5 runs, so the launch itself is not counted. Built with nvcc on the GPU
// machine by bench/megakernel/run.sh: nvcc -O3 -arch=native cg_barrier.cu.
// Usage: cg_barrier [N = 20000] [threads per block = 256]
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

// Each round: one grid barrier, plus a store so the loop is not optimised away and every
// block's writes are ordered by the barrier as a real round's would be.
__global__ void barrier_loop(int n, unsigned *sink) {
    cg::grid_group grid = cg::this_grid();
    for (int i = 0; i < n; i++) {
        if (threadIdx.x == 0) sink[blockIdx.x] = (unsigned)i;
        grid.sync();
    }
}

static void check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        fprintf(stderr, "cg_barrier: %s failed: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

// Median time in ns of a cooperative launch of barrier_loop(n) on grid x block.
static double launch_ns(int grid, int block, int n, unsigned *sink) {
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
    std::vector<double> t;
    for (int rep = 0; rep < 6; rep++) {
        void *args[] = {&n, &sink};
        check(cudaEventRecord(a), "cudaEventRecord");
        check(cudaLaunchCooperativeKernel((void *)barrier_loop, grid, block, args, 0, 0),
              "cudaLaunchCooperativeKernel");
        check(cudaEventRecord(b), "cudaEventRecord");
        check(cudaEventSynchronize(b), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
        if (rep > 0) t.push_back(ms * 1e6); // the first run warms up
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int block = argc > 2 ? atoi(argv[2]) : 256;
    int dev = 0, sms = 0, coop = 0, per_sm = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "attribute");
    check(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev), "attribute");
    if (!coop) {
        printf("cg_barrier: the device has no cooperative launch\n");
        return 0;
    }
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, barrier_loop, block, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    printf("# %s, %d SMs, %d blocks of %d threads per SM at full occupancy\n", prop.name, sms,
           per_sm, block);
    unsigned *sink = nullptr;
    check(cudaMalloc(&sink, sizeof(unsigned) * (size_t)sms * (size_t)per_sm), "cudaMalloc");
    const int grids[2] = {1, per_sm};
    for (int g = 0; g < 2; g++) {
        int grid = sms * grids[g];
        double base = launch_ns(grid, block, 0, sink);
        double full = launch_ns(grid, block, n, sink);
        printf("cg_barrier grid=%d block=%d per_sm=%d barriers=%d ns_per_barrier=%.1f\n", grid,
               block, grids[g], n, (full - base) / n);
    }
    cudaFree(sink);
    return 0;
}
