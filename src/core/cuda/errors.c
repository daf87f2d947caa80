/* errors.c — turns CUresults into vyre errors: the failing call, the CUresult name
 * and text (cuGetErrorName/String), the program, and a Fix. Also decides which
 * results are sticky (the context is poisoned: the device is marked lost) and keeps
 * errors raised in destructors for the next call to report. */
#include <stdio.h>
#include <string.h>

#include "cuda_int.h"

bool vyre_cu_sticky(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return true;
    default: return false;
    }
}

void vyre_cu_result_names(CUresult r, const char **name, const char **text) {
    *name = NULL;
    *text = NULL;
    if (vyre_cu.cuGetErrorName) vyre_cu.cuGetErrorName(r, name);
    if (vyre_cu.cuGetErrorString) vyre_cu.cuGetErrorString(r, text);
    if (!*name) *name = "CUDA_ERROR_UNKNOWN_CODE";
    if (!*text) *text = "no description from the driver";
}

const char *vyre_cu_fix(CUresult r) {
    switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
        return "free device buffers you no longer need (buf:free()), call trim() on the "
               "device, or process the data in smaller pieces.";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        return "a kernel accessed memory it does not own (a raw PTX kernel or a bad "
               "pointer). The device is lost: open a new device object (vyre.cuda.device(i)) "
               "to reset it, and check the kernel's indexing.";
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
        return "the kernel faulted while running. The device is lost: open a new device "
               "object to reset it; report the program if it came from vyre's code generator.";
    case CUDA_ERROR_LAUNCH_TIMEOUT:
        return "the kernel ran longer than the display watchdog allows; split the work into "
               "several launches or run on a GPU without a display. Open a new device object "
               "to continue.";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
        return "the kernel needs more registers or shared memory per block than the device "
               "has; use a smaller workgroup.";
    case CUDA_ERROR_INVALID_VALUE:
        return "an argument was out of range for the driver (grid, block or size); check the "
               "launch geometry and buffer sizes.";
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        return "the PTX was rejected by the driver's JIT; see the log above, and update the "
               "NVIDIA driver if the PTX ISA version is newer than it supports.";
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
        return "the driver's PTX JIT compiler (libnvidia-ptxjitcompiler) is missing; reinstall "
               "the complete NVIDIA driver package.";
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
        return "the code was built for another GPU architecture; clear the cubin cache "
               "(VYRE_CACHE_DIR) and recompile.";
    case CUDA_ERROR_NOT_FOUND:
        return "the kernel entry point was not found in the module; check the entry name.";
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
        return "the device context is gone (reset by a newer device object?); open a new "
               "device object.";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
        return "only kernel launches may be captured into a graph; do not synchronize or copy "
               "while capturing.";
    default: return "check the driver installation (nvidia-smi) and the arguments of the call.";
    }
}

enum vyre_status vyre_cu_fail(struct vyre_cuda_device *d, CUresult r, const char *call,
                              const char *program, struct vyre_error *err) {
    const char *name, *text;
    vyre_cu_result_names(r, &name, &text);
    bool sticky = vyre_cu_sticky(r);
    struct vyre_error local;
    struct vyre_error *e = err ? err : &local;
    vyre_error_set(
        e, sticky ? VYRE_ERR_DEVICE_LOST : VYRE_ERR_CUDA, "%s failed%s%s%s: %s (%s)%s. Fix: %s",
        call, program ? " for program '" : "", program ? program : "", program ? "'" : "", name,
        text, sticky ? "; the device is lost and every later call on it reports this error" : "",
        vyre_cu_fix(r));
    snprintf(e->call, sizeof e->call, "%s", call);
    snprintf(e->result, sizeof e->result, "%s", name);
    if (sticky && d) vyre_cu_mark_lost(d, e);
    return e->status;
}

void vyre_cu_defer(struct vyre_cuda_device *d, const struct vyre_error *err) {
    if (!d || !err || err->status == VYRE_OK) return;
    d->st.deferred_errors++;
    if (d->pending) return; /* the first error is the one worth reporting */
    d->pending = true;
    d->pending_err = *err;
    vyre_error_set(&d->pending_err, err->status,
                   "error during an earlier release (e.g. a garbage-collected buffer or "
                   "kernel): %.3900s",
                   err->message);
}

void vyre_cuda_defer_error(vyre_cuda_device *d, const struct vyre_error *err) {
    vyre_cu_defer(d, err);
}
