/* launch.c — kernel launches. A launch is checked as the driver would (live function,
 * grid and block within the device limits, the function's .maxntid, parameters
 * present), its parameter values are copied (so a capture holds them by value), and
 * it runs at once or goes into the capturing graph.
 *
 * What a launch computes is exec.c's: every kernel vyre emits runs on the reference
 * interpreter; foreign PTX is refused. Cooperative launches are checked against the
 * occupancy the fake reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"
#include "vyre_cuda.h"

void fake_launch_clear(struct fake_launch *l) {
    free(l->args);
    memset(l, 0, sizeof *l);
}

/* Resident blocks per multiprocessor for a block size: VYRE_FAKECUDA_OCCUPANCY, else
 * 2048 threads per SM and at most 32 blocks; 0 past the function's limit. */
static int occupancy(const struct fake_func *f, int block_size) {
    int limit = f->maxntid && f->maxntid < 1024 ? (int)f->maxntid : 1024;
    if (block_size <= 0 || block_size > limit) return 0;
    if (fake_cfg.occupancy) return fake_cfg.occupancy;
    int n = 2048 / block_size;
    return n > 32 ? 32 : n;
}

/* ---- the launch log: what specs compare a plan's grid with -------------------------------- */

#define LOG_LINES 64u
static char launch_log[LOG_LINES][192];
static unsigned log_next, log_count;

static void log_launch(const struct fake_func *f, const unsigned g[3], const unsigned b[3],
                       bool cooperative) {
    snprintf(launch_log[log_next], sizeof launch_log[0], "%s %s grid=%u,%u,%u block=%u,%u,%u",
             f->name, cooperative ? "cooperative" : "plain", g[0], g[1], g[2], b[0], b[1], b[2]);
    log_next = (log_next + 1) % LOG_LINES;
    if (log_count < LOG_LINES) log_count++;
}

char *fake_launch_log(bool clear) {
    char *out = malloc((size_t)LOG_LINES * sizeof launch_log[0] + 1);
    if (!out) return NULL;
    size_t off = 0;
    out[0] = '\0';
    for (unsigned i = 0; !clear && i < log_count; i++) {
        unsigned at = (log_next + LOG_LINES - log_count + i) % LOG_LINES;
        off += (size_t)snprintf(out + off, sizeof launch_log[0] + 1, "%s\n", launch_log[at]);
    }
    if (clear) log_count = 0;
    return out;
}

/* ---- the entry points -------------------------------------------------------------------- */

static CUresult launch(const char *call, CUfunction fn, const unsigned grid[3],
                       const unsigned block[3], unsigned shared, CUstream stream, void **params,
                       void **extra, bool cooperative) {
    CUresult r = fake_begin(call, F_CTX);
    fake_refusal_clear();
    struct fake_func *f = (struct fake_func *)(void *)fn;
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS && !fake_func_live(f))
        r = fake_misuse(FAKE_INVALID_HANDLE, "%s: %p is not a function of a live module", call,
                        (void *)fn);
    if (r == CUDA_SUCCESS && f->mod->h.ctx != fake_current)
        r = fake_misuse(CUDA_ERROR_INVALID_CONTEXT, "%s: '%s' belongs to another context", call,
                        f->name);
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    static const unsigned max_block[3] = {1024, 1024, 64},
                          max_grid[3] = {2147483647u, 65535, 65535};
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    for (int a = 0; r == CUDA_SUCCESS && a < 3; a++)
        if (!grid[a] || !block[a] || block[a] > max_block[a] || grid[a] > max_grid[a])
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && (threads > 1024 || (f->maxntid && threads > f->maxntid)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && shared > 49152) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && extra) r = FAKE_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS && f->nparams && !params)
        r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "%s of '%s': no parameters for %u", call, f->name,
                        f->nparams);
    if (r == CUDA_SUCCESS) r = fake_launch_check(f, block, cooperative, call);
    if (r == CUDA_SUCCESS && cooperative) {
        uint64_t fit = (uint64_t)occupancy(f, (int)threads) * (uint64_t)fake_cfg.sm_count;
        if (!fake_cfg.cooperative) r = FAKE_NOT_SUPPORTED;
        else if ((uint64_t)grid[0] * grid[1] * grid[2] > fit) r = FAKE_COOPERATIVE_TOO_LARGE;
    }
    struct fake_launch l = {f,
                            {grid[0], grid[1], grid[2]},
                            {block[0], block[1], block[2]},
                            cooperative,
                            NULL,
                            0,
                            NULL,
                            NULL};
    if (r == CUDA_SUCCESS) {
        for (uint32_t i = 0; i < f->nparams; i++) l.args_len += f->param_size[i];
        l.args = malloc(l.args_len ? l.args_len : 1);
        if (!l.args) r = CUDA_ERROR_OUT_OF_MEMORY;
        for (uint32_t i = 0, off = 0; r == CUDA_SUCCESS && i < f->nparams; i++) {
            if (!params[i]) {
                r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "%s of '%s': parameter %u is NULL", call,
                                f->name, i);
                break;
            }
            memcpy(l.args + off, params[i], f->param_size[i]);
            off += f->param_size[i];
        }
    }
    if (r == CUDA_SUCCESS) r = fake_stream_submit(st, &l);
    if (r == CUDA_SUCCESS) log_launch(f, grid, block, cooperative);
    fake_launch_clear(&l);
    fake_end();
    return r;
}

CUresult fake_cuLaunchKernel(CUfunction fn, unsigned int grid_x, unsigned int grid_y,
                             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                             unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                             void **params, void **extra) {
    const unsigned g[3] = {grid_x, grid_y, grid_z}, b[3] = {block_x, block_y, block_z};
    return launch("cuLaunchKernel", fn, g, b, shared_bytes, stream, params, extra, false);
}

CUresult fake_cuLaunchCooperativeKernel(CUfunction fn, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shared, CUstream stream,
                                        void **params) {
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return launch("cuLaunchCooperativeKernel", fn, g, b, shared, stream, params, NULL, true);
}

CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn,
                                                          int block_size, size_t dynamic_smem) {
    CUresult r = fake_begin("cuOccupancyMaxActiveBlocksPerMultiprocessor", F_CTX);
    const struct fake_func *f = (const struct fake_func *)(void *)fn;
    if (r == CUDA_SUCCESS && !blocks) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !fake_func_live(f))
        r = fake_misuse(FAKE_INVALID_HANDLE,
                        "cuOccupancyMaxActiveBlocksPerMultiprocessor: %p "
                        "is not a function of a live module",
                        (void *)fn);
    if (r == CUDA_SUCCESS) *blocks = dynamic_smem > 49152 ? 0 : occupancy(f, block_size);
    fake_end();
    return r;
}
