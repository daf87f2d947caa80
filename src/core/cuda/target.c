/* target.c — which PTX target a device runs (docs/RUNTIME.md "PTX targets"), from its
 * compute capability and the driver's CUDA version alone, so the choice is made (and
 * any refusal said) when the device opens, before anything is compiled or JIT-ed.
 *
 * PTX written for sm_XY is compiled by the driver's JIT for every GPU of a higher
 * base SM (the PTX ISA's forward compatibility of base targets). So a device vyre has
 * no target for runs the highest target below its SM, and a driver too old to load
 * the ISA of the device's own target runs the highest one it loads: vyre emits the
 * same instructions for every target from sm_80 up (only redux.sync depends on the
 * target), so nothing is lost but the driver's newer SASS scheduling, and the reason
 * names the driver that would give the device's own target. The caches key by the
 * chosen target (cache_mem.c, cache_disk.c). */
#include <stdio.h>
#include <string.h>

#include "vyre_cuda.h"

/* The oldest Linux x86_64 driver of each CUDA release from 12.0 (CUDA Toolkit release
 * notes, "CUDA Toolkit and Corresponding Driver Versions"; GA releases). There was no
 * CUDA 12.7 toolkit: PTX ISA 8.6 (CUDA 12.7) first shipped with 12.8. */
static const struct {
    int cuda;
    const char *linux_driver;
} drivers[] = {
    {12000, "525.60.13"}, {12010, "530.30.02"}, {12020, "535.54.03"}, {12030, "545.23.06"},
    {12040, "550.54.14"}, {12050, "555.42.02"}, {12060, "560.28.03"}, {12080, "570.26"},
    {12090, "575.51.03"}, {13000, "580.65.06"},
};

const char *vyre_cuda_linux_driver_for(int cuda_version) {
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if (drivers[i].cuda >= cuda_version) return drivers[i].linux_driver;
    return NULL;
}

/* "CUDA 12.8" into buf; the release the driver table maps a version to, for the Fix. */
static const char *cuda_text(int v, char *buf, size_t n) {
    snprintf(buf, n, "CUDA %d.%d", v / 1000, (v % 1000) / 10);
    return buf;
}

static int release_for(int cuda_version) {
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if (drivers[i].cuda >= cuda_version) return drivers[i].cuda;
    return cuda_version;
}

/* "install NVIDIA driver >= 575.51.03 (CUDA 12.9)" for a target's ISA. */
static void fix_text(const struct vyre_ptx_target *t, char *buf, size_t n) {
    char c[32];
    const char *drv = vyre_cuda_linux_driver_for(t->min_cuda);
    if (drv)
        snprintf(buf, n, "install NVIDIA driver >= %s (%s)", drv,
                 cuda_text(release_for(t->min_cuda), c, sizeof c));
    else
        snprintf(buf, n, "install an NVIDIA driver for %s or newer",
                 cuda_text(t->min_cuda, c, sizeof c));
}

static bool driver_loads(const struct vyre_ptx_target *t, int driver_version) {
    return driver_version >= t->min_cuda;
}

enum vyre_status vyre_cuda_target_choose(unsigned device_sm, int driver_version,
                                         struct vyre_cuda_target *out, struct vyre_error *err) {
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_cuda_target_choose: out is NULL. Fix: pass a "
                              "struct vyre_cuda_target to fill.");
    memset(out, 0, sizeof *out);
    const struct vyre_ptx_target *oldest = vyre_ptx_target_at(0);
    if (device_sm < oldest->sm)
        return vyre_error_set(
            err, VYRE_ERR_UNSUPPORTED,
            "the device is sm_%u (compute capability %u.%u), and vyre needs sm_70 or newer: "
            "its kernels rely on Volta's independent thread scheduling, the .sync warp "
            "shuffles and votes and the scoped memory model of PTX 6.0. Fix: use a Volta "
            "(Tesla V100, sm_70) or newer GPU, or the reference backend "
            "(vyre.reference.new()).",
            device_sm, device_sm / 10, device_sm % 10);
    /* Highest target <= device_sm: what the device would run with any driver. */
    size_t n = vyre_ptx_target_count(), top = 0;
    for (size_t i = 0; i < n; i++)
        if (vyre_ptx_target_at(i)->sm <= device_sm) top = i;
    const struct vyre_ptx_target *want = vyre_ptx_target_at(top), *got = NULL;
    for (size_t i = top + 1; i-- > 0 && !got;)
        if (driver_loads(vyre_ptx_target_at(i), driver_version)) got = vyre_ptx_target_at(i);
    char have[32], need[32], fix[96];
    cuda_text(driver_version, have, sizeof have);
    cuda_text(want->min_cuda, need, sizeof need);
    fix_text(want, fix, sizeof fix);
    if (!got)
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "the driver supports %s but sm_%u PTX (ISA %s) needs %s, and it "
                              "loads no older target this sm_%u device could run. Fix: %s.",
                              have, want->sm, want->isa, need, device_sm, fix);
    out->sm = got->sm;
    out->isa = got->isa;
    char *r = out->reason;
    size_t rn = sizeof out->reason;
    if (got == want && want->sm == device_sm) {
        snprintf(r, rn, "the device's own SM");
    } else if (got == want && top + 1 == n) {
        snprintf(r, rn,
                 "sm_%u is newer than every target vyre knows; PTX for sm_%u is compiled "
                 "forward by the driver's JIT",
                 device_sm, got->sm);
    } else if (got == want) {
        snprintf(r, rn,
                 "vyre has no sm_%u target; PTX for sm_%u, the highest one below it, is "
                 "compiled forward by the driver's JIT",
                 device_sm, got->sm);
    } else {
        char lead[96] = "";
        if (want->sm != device_sm)
            snprintf(lead, sizeof lead,
                     top + 1 == n ? "sm_%u is newer than every target vyre knows, and "
                                  : "vyre has no sm_%u target, and ",
                     device_sm);
        /* The reason is advisory text: a long one is cut at the record's size (the return
         * value is read, which also tells GCC the truncation is expected). */
        int w = snprintf(r, rn,
                         "%sthe driver supports %s but sm_%u PTX (ISA %s) needs %s; PTX for "
                         "sm_%u (ISA %s), the highest target it loads, is compiled forward by "
                         "its JIT. Fix: %s to compile for sm_%u",
                         lead, have, want->sm, want->isa, need, got->sm, got->isa, fix, want->sm);
        if (w < 0) r[0] = '\0';
    }
    return VYRE_OK;
}
