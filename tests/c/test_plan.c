/* test_plan.c — the planners the runtime obeys (include/vyre_plan.h, src/core/plan.c):
 * occupancy on the H100's limits against the driver's answers docs/PLANNERS.md §3.1
 * records, every zero case, the two grid sizings at their edges, and the capability
 * verdict's order, line and message (every failure's reason and Fix, the line in
 * brackets). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vyre_plan.h"

static const struct vyre_device_limits H100 = {.name = "h100",
                                               .sm = 90,
                                               .sms = 132,
                                               .warp_size = 32,
                                               .max_threads_per_block = 1024,
                                               .max_threads_per_sm = 2048,
                                               .max_blocks_per_sm = 32,
                                               .registers_per_sm = 65536,
                                               .registers_per_block = 65536,
                                               .max_registers_per_thread = 255,
                                               .shared_bytes_per_sm = 233472,
                                               .shared_bytes_per_block = 232448,
                                               .max_grid_x = 2147483647u,
                                               .cooperative_launch = true,
                                               .tensor_cores = true};

static struct vyre_occupancy occ(uint32_t wg, uint32_t regs, uint64_t shared) {
    struct vyre_occupancy o;
    struct vyre_error err;
    if (vyre_occupancy_calc(&H100, wg, regs, shared, &o, &err) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "calc: %s", err.message);
    return o;
}

static void test_occupancy(void) {
    harness_current = "occupancy";
    /* PLANNERS.md §3.1: the six kernels the H100's driver agreed with */
    static const struct {
        uint32_t wg, regs, shared, blocks;
        enum vyre_occ_limiter lim;
    } rows[] = {{64, 8, 0, 32, VYRE_OCC_THREADS},     {256, 8, 0, 8, VYRE_OCC_THREADS},
                {1024, 8, 0, 2, VYRE_OCC_THREADS},    {32, 8, 0, 32, VYRE_OCC_BLOCKS},
                {128, 10, 40960, 5, VYRE_OCC_SHARED}, {256, 10, 24576, 8, VYRE_OCC_THREADS}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct vyre_occupancy o = occ(rows[i].wg, rows[i].regs, rows[i].shared);
        CHECK_EQ_U64(o.blocks_per_sm, rows[i].blocks);
        CHECK(o.limiter == rows[i].lim);
        CHECK(o.zero == VYRE_OCC_RUNS);
    }
    /* whole warps: 100 threads take 4 warps, 16 blocks, 100% */
    struct vyre_occupancy o = occ(100, 0, 0);
    CHECK_EQ_U64(o.blocks_per_sm, 16);
    CHECK_EQ_U64(o.occupancy_bps, 10000);
    CHECK(strstr(o.reason, "limited by threads") != NULL);
    /* registers: 128 x 256 = 32768 per block, 2 blocks */
    o = occ(256, 128, 0);
    CHECK_EQ_U64(o.blocks_per_sm, 2);
    CHECK(o.limiter == VYRE_OCC_REGISTERS);
    CHECK_EQ_U64(o.occupancy_bps, 2500);
    CHECK(occ(0, 0, 0).zero == VYRE_OCC_ZERO_WORKGROUP);
    CHECK(occ(2048, 0, 0).zero == VYRE_OCC_ZERO_WORKGROUP);
    CHECK(occ(64, 256, 0).zero == VYRE_OCC_ZERO_REGISTERS_THREAD);
    CHECK(occ(1024, 255, 0).zero == VYRE_OCC_ZERO_REGISTERS_BLOCK);
    CHECK(occ(64, 0, 300000).zero == VYRE_OCC_ZERO_SHARED);
    CHECK_EQ_U64(occ(64, 256, 0).blocks_per_sm, 0);
    CHECK(strcmp(vyre_occ_zero_name(VYRE_OCC_ZERO_SHARED), "shared_per_block") == 0);
    CHECK(vyre_occ_limiter_name(VYRE_OCC_NONE) == NULL);
    struct vyre_error err;
    struct vyre_device_limits bad = H100;
    bad.warp_size = 0;
    CHECK(vyre_occupancy_calc(&bad, 64, 0, 0, &o, &err) == VYRE_ERR_ARG);
    CHECK(strstr(err.message, "Fix:") != NULL);
    CHECK(vyre_occupancy_calc(NULL, 64, 0, 0, &o, &err) == VYRE_ERR_ARG);
}

static void test_grid(void) {
    harness_current = "grid";
    CHECK_EQ_U64(vyre_occupancy_grid(&H100, VYRE_SIZE_COOPERATIVE, 8, 100000), 1056);
    CHECK_EQ_U64(vyre_occupancy_grid(&H100, VYRE_SIZE_COOPERATIVE, 8, 40), 40);
    CHECK_EQ_U64(vyre_occupancy_grid(&H100, VYRE_SIZE_COOPERATIVE, 0, 40), 0);
    struct vyre_device_limits small = H100;
    small.max_grid_x = 100;
    CHECK_EQ_U64(vyre_occupancy_grid(&small, VYRE_SIZE_COOPERATIVE, 8, 100000), 100);
    CHECK_EQ_U64(vyre_occupancy_grid(&H100, VYRE_SIZE_BOUNDED, 8, 0), 1056);
    CHECK_EQ_U64(vyre_occupancy_grid(&H100, VYRE_SIZE_BOUNDED, 0, 0), 132);
    CHECK_EQ_U64(vyre_occupancy_grid(&small, VYRE_SIZE_BOUNDED, 8, 0), 100);
    CHECK_EQ_U64(vyre_occupancy_grid(NULL, VYRE_SIZE_BOUNDED, 8, 0), 0);
}

static void test_capability(void) {
    harness_current = "capability";
    struct vyre_cap_verdict *v = calloc(1, sizeof *v);
    struct vyre_error err;
    if (!v) return;
    struct vyre_cap_request r = {
        .kernel = "k", .min_sm = 70, .threads_per_block = 256, .blocks_per_sm = -1};
    CHECK(vyre_capability_check(&H100, &r, v, &err) == VYRE_OK);
    CHECK(v->ok && v->nfailures == 0 && v->message[0] == '\0');
    CHECK(strcmp(v->line, "cuda-kernel-capability-v1|kernel=k|status=ok") == 0);
    struct vyre_device_limits old = H100;
    old.sm = 75;
    old.cooperative_launch = false;
    old.tensor_cores = false;
    r = (struct vyre_cap_request){.kernel = "k",
                                  .min_sm = 80,
                                  .threads_per_block = 1024,
                                  .kernel_max_threads = 640,
                                  .shared_bytes = 300000,
                                  .cooperative = true,
                                  .tensor_cores = true,
                                  .blocks_per_sm = 0};
    CHECK(vyre_capability_check(&old, &r, v, &err) == VYRE_OK);
    CHECK(!v->ok);
    CHECK_EQ_U64(v->nfailures, 5); /* co_residency is not asked without cooperative launch */
    static const enum vyre_cap_code order[] = {VYRE_CAP_SM_VERSION, VYRE_CAP_THREADS_PER_BLOCK,
                                               VYRE_CAP_SHARED_MEMORY, VYRE_CAP_COOPERATIVE_LAUNCH,
                                               VYRE_CAP_TENSOR_CORES};
    for (uint32_t i = 0; i < 5 && i < v->nfailures; i++) CHECK(v->failures[i].code == order[i]);
    CHECK(strcmp(v->line,
                 "cuda-kernel-capability-v1|kernel=k|status=blocked|fix=sm_version("
                 "required=8.0,actual=7.5),threads_per_block(requested=1024,max=640),"
                 "shared_memory(requested=300000,max=232448),cooperative_launch("
                 "required=true,actual=false),tensor_cores(required=true,actual=false)") == 0);
    CHECK(strncmp(v->message, "kernel 'k' cannot run on h100: ", 31) == 0);
    char why[256], fix[256], want[600];
    for (uint32_t i = 0; i < v->nfailures; i++) {
        vyre_cap_failure_text(&old, &v->failures[i], why, sizeof why, fix, sizeof fix);
        CHECK(strstr(v->message, why) != NULL);
        CHECK(strstr(v->message, fix) != NULL);
    }
    snprintf(want, sizeof want, "[%s]", v->line);
    CHECK(strstr(v->message, want) != NULL);
    CHECK(strstr(v->message, ". Fix: ") != NULL);
    CHECK(strstr(v->message, "the function's own") != NULL);
    /* co-residency: cooperative launch present, nothing resident */
    r = (struct vyre_cap_request){
        .kernel = "m", .threads_per_block = 64, .cooperative = true, .blocks_per_sm = 0};
    CHECK(vyre_capability_check(&H100, &r, v, &err) == VYRE_OK);
    CHECK(v->nfailures == 1 && v->failures[0].code == VYRE_CAP_CO_RESIDENCY);
    CHECK(strstr(v->line, "co_residency(required=1,actual=0)") != NULL);
    r.blocks_per_sm = -1; /* unknown: not a failure */
    CHECK(vyre_capability_check(&H100, &r, v, &err) == VYRE_OK && v->ok);
    CHECK(vyre_capability_check(&H100, NULL, v, &err) == VYRE_ERR_ARG);
    CHECK(strcmp(vyre_cap_code_name(VYRE_CAP_TENSOR_CORES), "tensor_cores") == 0);
    CHECK(vyre_cap_code_name(VYRE_CAP_NCODES) == NULL);
    free(v);
}

int main(void) {
    test_occupancy();
    test_grid();
    test_capability();
    return harness_finish();
}
