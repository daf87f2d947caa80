/* test_ptx_targets.c — the PTX target table and the runtime's choice of target
 * (docs/RUNTIME.md "PTX targets"):
 *   - the table is the documented one: every compute capability from 7.0 up that the
 *     PTX ISA names, each with the oldest .version that knows it (PTX ISA "Release
 *     Notes": PTX release history) and the CUDA release that first loads that ISA;
 *   - ptxas agrees: each target assembles at its table version and is refused at the ISA
 *     version before it ("does not support .target"), so no minimum is too low or
 *     higher than needed; and each target's PTX compiles for every higher SM ptxas
 *     knows (the forward rule the runtime's choice relies on);
 *   - vyre_cuda_target_choose: the device's own target, the highest one below an SM
 *     vyre has no target for (between or above the table), the highest one the driver
 *     loads when it is too old for the device's own ISA, the refusal below sm_70 and
 *     when the driver loads no target, each with its reason or Fix; and the CUDA ->
 *     Linux driver map of the Fix lines. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "vyre_cuda.h"

/* The documented minimums (PTX ISA 9.1 release history; LLVM's getMinPTXVersionForSM
 * lists the same), and the CUDA release of each ISA (7.4 = 11.4, 8.6 = 12.7, ...). */
static const struct {
    unsigned sm;
    const char *isa;
    int min_cuda;
} documented[] = {
    {70, "6.0", 9000},   {72, "6.1", 9010},   {75, "6.3", 10000},  {80, "7.0", 11000},
    {86, "7.1", 11010},  {87, "7.4", 11040},  {88, "9.0", 13000},  {89, "7.8", 11080},
    {90, "7.8", 11080},  {100, "8.6", 12070}, {101, "8.6", 12070}, {103, "8.8", 12090},
    {110, "9.0", 13000}, {120, "8.7", 12080}, {121, "8.8", 12090},
};
#define NDOC (sizeof documented / sizeof documented[0])

static void test_table_is_documented(void) {
    CHECK_EQ_U64(vyre_ptx_target_count(), NDOC);
    for (size_t i = 0; i < NDOC; i++) {
        const struct vyre_ptx_target *t = vyre_ptx_target_at(i);
        CHECK(t != NULL);
        if (!t) continue;
        CHECK_EQ_U64(t->sm, documented[i].sm);
        CHECK(strcmp(t->isa, documented[i].isa) == 0);
        CHECK_EQ_U64((uint64_t)t->min_cuda, (uint64_t)documented[i].min_cuda);
        CHECK(t->gpus && t->gpus[0]);
        CHECK(vyre_ptx_target_find(t->sm) == t);
        if (i) CHECK(vyre_ptx_target_at(i - 1)->sm < t->sm); /* ascending */
    }
    CHECK(vyre_ptx_target_at(NDOC) == NULL);
    CHECK(vyre_ptx_target_find(61) == NULL);
    CHECK(vyre_ptx_target_find(95) == NULL);
    CHECK(vyre_ptx_target_find(130) == NULL);
}

/* The ISA version released before v ("8.7" -> "8.6", "9.0" -> "8.8", "7.0" -> "6.5"). */
static const char *previous_isa(const char *v) {
    static const char *const isas[] = {
        "5.0", "6.0", "6.1", "6.2", "6.3", "6.4", "6.5", "7.0", "7.1", "7.2", "7.3", "7.4", "7.5",
        "7.6", "7.7", "7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "9.0"};
    for (size_t i = 1; i < sizeof isas / sizeof isas[0]; i++)
        if (strcmp(isas[i], v) == 0) return isas[i - 1];
    return NULL;
}

static int assemble_tiny(const char *isa, unsigned sm, unsigned arch, char *log, size_t n) {
    char ptx[160];
    snprintf(ptx, sizeof ptx,
             ".version %s\n.target sm_%u\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n",
             isa, sm);
    return harness_ptxas_run(ptx, arch, log, n);
}

static void test_ptxas_agrees(void) {
    if (!harness_ptxas_path()) {
        harness_fail(__FILE__, __LINE__,
                     "ptxas not found: the table cannot be checked (install "
                     "the CUDA toolkit)");
        return;
    }
    unsigned checked = 0;
    for (size_t i = 0; i < vyre_ptx_target_count(); i++) {
        const struct vyre_ptx_target *t = vyre_ptx_target_at(i);
        unsigned arch = harness_ptxas_arch(t->sm);
        if (!arch) {
            /* A ptxas older than the target (CUDA 12.x and sm_110): say so, it is no pass. */
            printf("note: this ptxas does not know sm_%u; its minimum is checked by the table "
                   "test only\n",
                   t->sm);
            continue;
        }
        char log[2048];
        CHECK_EQ_U64(assemble_tiny(t->isa, t->sm, arch, log, sizeof log), 0);
        const char *prev = previous_isa(t->isa);
        CHECK(prev != NULL);
        /* CUDA 13's ptxas takes sm_88 from ISA 7.3 on, but the PTX ISA names it only from
         * 9.0 and drivers before CUDA 13.0 do not know it: the documented minimum rules. */
        if (!prev || t->sm == 88) continue;
        int rc = assemble_tiny(prev, t->sm, arch, log, sizeof log);
        CHECK(rc != 0);
        if (rc != 0) CHECK_STR_CONTAINS(log, "does not support .target");
        checked++;
    }
    CHECK(checked >= 10); /* CUDA 13's ptxas: every target but sm_88 */
}

/* The forward rule the runtime relies on: PTX of each target (at its minimum ISA) is
 * compiled by ptxas for every higher SM it knows, across families (sm_90 PTX for sm_120,
 * sm_103 for sm_110, sm_87 for sm_88, ...), as the driver's JIT does for a newer GPU. */
static void test_forward(void) {
    if (!harness_ptxas_path()) return; /* test_ptxas_agrees already failed for it */
    unsigned pairs = 0;
    for (size_t i = 0; i < vyre_ptx_target_count(); i++) {
        const struct vyre_ptx_target *t = vyre_ptx_target_at(i);
        for (size_t j = i + 1; j < vyre_ptx_target_count(); j++) {
            unsigned dev = vyre_ptx_target_at(j)->sm;
            if (harness_ptxas_arch(dev) != dev) continue; /* no -arch for it here */
            char log[2048];
            int rc = assemble_tiny(t->isa, t->sm, dev, log, sizeof log);
            CHECK_EQ_U64(rc, 0);
            if (rc != 0) fprintf(stderr, "sm_%u PTX for sm_%u: %s\n", t->sm, dev, log);
            pairs++;
        }
    }
    CHECK(pairs >= 60);
}

static void choose(unsigned sm, int driver, unsigned want, const char *reason) {
    struct vyre_cuda_target t;
    struct vyre_error err;
    vyre_error_clear(&err);
    enum vyre_status st = vyre_cuda_target_choose(sm, driver, &t, &err);
    CHECK_EQ_U64(st, VYRE_OK);
    if (st != VYRE_OK) {
        fprintf(stderr, "sm_%u driver %d: %s\n", sm, driver, err.message);
        return;
    }
    CHECK_EQ_U64(t.sm, want);
    CHECK(strcmp(t.isa, vyre_ptx_target_find(want)->isa) == 0);
    CHECK_STR_CONTAINS(t.reason, reason);
}

static void test_choose(void) {
    /* the device's own target, whenever the driver loads its ISA */
    for (size_t i = 0; i < NDOC; i++)
        choose(documented[i].sm, 13000, documented[i].sm, "the device's own SM");
    choose(90, 12000, 90, "the device's own SM");
    /* between targets, and newer than all of them: the highest one below, JIT forward */
    choose(95, 13000, 90,
           "vyre has no sm_95 target; PTX for sm_90, the highest one below it, is compiled "
           "forward by the driver's JIT");
    choose(130, 13000, 121,
           "sm_130 is newer than every target vyre knows; PTX for sm_121 is compiled forward by "
           "the driver's JIT");
    choose(107, 13000, 103, "vyre has no sm_107 target; PTX for sm_103");
    /* a driver too old for the device's own ISA: the highest target it loads, and a Fix */
    choose(121, 12080, 120,
           "the driver supports CUDA 12.8 but sm_121 PTX (ISA 8.8) needs CUDA 12.9; PTX for "
           "sm_120 (ISA 8.7), the highest target it loads, is compiled forward by its JIT. "
           "Fix: install NVIDIA driver >= 575.51.03 (CUDA 12.9) to compile for sm_121");
    choose(120, 12060, 90, "needs CUDA 12.8; PTX for sm_90 (ISA 7.8)");
    choose(120, 12060, 90, "Fix: install NVIDIA driver >= 570.26 (CUDA 12.8)");
    choose(100, 12060, 90, "sm_100 PTX (ISA 8.6) needs CUDA 12.7");
    choose(100, 12060, 90, ">= 570.26 (CUDA 12.8)"); /* there was no CUDA 12.7 release */
    choose(110, 12090, 103, "Fix: install NVIDIA driver >= 580.65.06 (CUDA 13.0)");
    choose(88, 12080, 87, "sm_88 PTX (ISA 9.0) needs CUDA 13.0; PTX for sm_87");
    choose(130, 12080, 120, "sm_130 is newer than every target vyre knows, and the driver");
    /* sm_101 (Jetson Thor as CUDA 12.8/12.9 drivers name it) */
    choose(101, 12080, 101, "the device's own SM");
    choose(102, 12080, 101, "vyre has no sm_102 target; PTX for sm_101");

    struct vyre_cuda_target t;
    struct vyre_error err;
    /* below sm_70: refused with the reason and the oldest supported GPU */
    vyre_error_clear(&err);
    CHECK_EQ_U64(vyre_cuda_target_choose(61, 13000, &t, &err), VYRE_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.message, "sm_61 (compute capability 6.1)");
    CHECK_STR_CONTAINS(err.message, "independent thread scheduling");
    CHECK_STR_CONTAINS(err.message, "Fix: use a Volta (Tesla V100, sm_70) or newer GPU, or the "
                                    "reference backend");
    CHECK_EQ_U64(t.sm, 0);
    /* a driver that loads no target the device can run (below vyre's own CUDA 12.0
     * minimum, so only reachable here): the driver to install */
    vyre_error_clear(&err);
    CHECK_EQ_U64(vyre_cuda_target_choose(75, 9010, &t, &err), VYRE_OK);
    CHECK_EQ_U64(t.sm, 72);
    CHECK_EQ_U64(vyre_cuda_target_choose(70, 8000, &t, &err), VYRE_ERR_UNSUPPORTED);
    CHECK_STR_CONTAINS(err.message, "the driver supports CUDA 8.0 but sm_70 PTX (ISA 6.0) needs "
                                    "CUDA 9.0");
    CHECK_STR_CONTAINS(err.message, "Fix: install NVIDIA driver >= 525.60.13 (CUDA 12.0)");
    CHECK_EQ_U64(vyre_cuda_target_choose(80, 12000, NULL, &err), VYRE_ERR_ARG);
}

static void test_linux_drivers(void) {
    CHECK(strcmp(vyre_cuda_linux_driver_for(12000), "525.60.13") == 0);
    CHECK(strcmp(vyre_cuda_linux_driver_for(12070), "570.26") == 0);
    CHECK(strcmp(vyre_cuda_linux_driver_for(12080), "570.26") == 0);
    CHECK(strcmp(vyre_cuda_linux_driver_for(12090), "575.51.03") == 0);
    CHECK(strcmp(vyre_cuda_linux_driver_for(13000), "580.65.06") == 0);
    CHECK(vyre_cuda_linux_driver_for(13010) == NULL);
    /* every target's ISA maps to a driver to install */
    for (size_t i = 0; i < vyre_ptx_target_count(); i++)
        CHECK(vyre_cuda_linux_driver_for(vyre_ptx_target_at(i)->min_cuda) != NULL);
}

int main(void) {
    RUN_TEST(test_table_is_documented);
    RUN_TEST(test_ptxas_agrees);
    RUN_TEST(test_forward);
    RUN_TEST(test_choose);
    RUN_TEST(test_linux_drivers);
    return harness_finish();
}
