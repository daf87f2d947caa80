/* control.c — what the fake driver exports: cuInit, cuDriverGetVersion and
 * cuGetProcAddress_v2 (the only symbols the runtime looks up with dlsym; every other
 * entry is resolved through the table below), the CUresult names, and
 * vyre_fakecuda_control, the text command interface tests use (C tests directly,
 * Lua specs through fakecuda.so, lcontrol.c). Commands are listed in docs/RUNTIME.md
 * ("Fake driver"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33) /* mallinfo2 */
#include <malloc.h>
#define FAKE_HEAP 1
#endif

#include "fake.h"

void fake_config_load(void);
void fake_find_ptxas(char *out, size_t size);
void fake_lock(void);
void fake_unlock(void);
char *fake_control_state(const char *what, bool *ok);
CUresult fake_result_from_name(const char *s, bool *ok);
const char *fake_result_name(CUresult r);

/* ---- CUresult names ------------------------------------------------------------ */

static const struct {
    int code;
    const char *name, *text;
} results[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error (cuInit was not called)"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for the device"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the PTX ISA version is not supported"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on this address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is "
     "capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error "
     "during capture"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

#define NRESULTS (sizeof results / sizeof results[0])

const char *fake_result_name(CUresult r) {
    for (size_t i = 0; i < NRESULTS; i++)
        if (results[i].code == (int)r) return results[i].name;
    return "CUDA_ERROR_(unnamed)";
}

/* "CUDA_ERROR_OUT_OF_MEMORY", "OUT_OF_MEMORY" or "2". */
CUresult fake_result_from_name(const char *s, bool *ok) {
    *ok = true;
    char *end = NULL;
    long v = strtol(s, &end, 0);
    if (end && end != s && *end == '\0' && v >= 0) return (CUresult)v;
    for (size_t i = 0; i < NRESULTS; i++) {
        const char *n = results[i].name;
        if (strcmp(n, s) == 0 || (strncmp(n, "CUDA_ERROR_", 11) == 0 && strcmp(n + 11, s) == 0))
            return (CUresult)results[i].code;
    }
    *ok = false;
    return CUDA_SUCCESS;
}

static CUresult error_str(CUresult error, const char **str, bool text) {
    if (text && error == FAKE_NOT_SUPPORTED && str && fake_refusal()[0]) {
        *str = fake_refusal(); /* a refused foreign launch: say why */
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < NRESULTS; i++)
        if (results[i].code == (int)error) {
            if (str) *str = text ? results[i].text : results[i].name;
            return CUDA_SUCCESS;
        }
    if (str) *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_cuGetErrorName(CUresult error, const char **str) {
    CUresult r = fake_begin("cuGetErrorName", 0);
    if (r == CUDA_SUCCESS) r = error_str(error, str, false);
    fake_end();
    return r;
}

CUresult fake_cuGetErrorString(CUresult error, const char **str) {
    CUresult r = fake_begin("cuGetErrorString", 0);
    if (r == CUDA_SUCCESS) r = error_str(error, str, true);
    fake_end();
    return r;
}

/* ---- the exported entry points ----------------------------------------------- */

FAKE_API vyre_cu_fn_cuInit cuInit;
FAKE_API vyre_cu_fn_cuDriverGetVersion cuDriverGetVersion;
FAKE_API vyre_cu_fn_cuGetProcAddress_v2 cuGetProcAddress_v2;

CUresult cuInit(unsigned int flags) {
    CUresult r = fake_begin("cuInit", 0);
    if (r == CUDA_SUCCESS && flags != 0) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && fake_cfg.devices == 0) r = CUDA_ERROR_NO_DEVICE;
    if (r == CUDA_SUCCESS) fake_initialized = true;
    fake_end();
    return r;
}

CUresult cuDriverGetVersion(int *version) {
    CUresult r = fake_begin("cuDriverGetVersion", 0);
    if (r == CUDA_SUCCESS && !version) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *version = fake_cfg.version;
    fake_end();
    return r;
}

typedef void (*any_fn)(void);
#define FN(n) \
    { #n, (any_fn)fake_##n }

static const struct {
    const char *name;
    any_fn fn;
} table[] = {
    FN(cuGetErrorName),
    FN(cuGetErrorString),
    FN(cuDeviceGet),
    FN(cuDeviceGetCount),
    FN(cuDeviceGetName),
    FN(cuDeviceGetAttribute),
    FN(cuDeviceTotalMem),
    FN(cuDevicePrimaryCtxRetain),
    FN(cuDevicePrimaryCtxRelease),
    FN(cuDevicePrimaryCtxReset),
    FN(cuCtxSetCurrent),
    FN(cuCtxGetCurrent),
    FN(cuMemAlloc),
    FN(cuMemFree),
    FN(cuMemGetInfo),
    FN(cuMemHostAlloc),
    FN(cuMemFreeHost),
    FN(cuMemcpyHtoDAsync),
    FN(cuMemcpyDtoHAsync),
    FN(cuMemsetD8Async),
    FN(cuStreamCreate),
    FN(cuStreamDestroy),
    FN(cuStreamSynchronize),
    FN(cuEventCreate),
    FN(cuEventDestroy),
    FN(cuEventRecord),
    FN(cuEventElapsedTime),
    FN(cuModuleLoadDataEx),
    FN(cuModuleUnload),
    FN(cuModuleGetFunction),
    FN(cuFuncGetAttribute),
    FN(cuLaunchKernel),
    FN(cuLinkCreate),
    FN(cuLinkAddData),
    FN(cuLinkComplete),
    FN(cuLinkDestroy),
    FN(cuStreamBeginCapture),
    FN(cuStreamEndCapture),
    FN(cuGraphInstantiateWithFlags),
    FN(cuGraphLaunch),
    FN(cuGraphExecDestroy),
    FN(cuGraphDestroy),
    FN(cuLaunchCooperativeKernel),
    FN(cuOccupancyMaxActiveBlocksPerMultiprocessor),
    FN(cuDeviceCanAccessPeer),
    FN(cuCtxEnablePeerAccess),
    FN(cuMemcpyPeerAsync),
    FN(cuStreamWaitEvent),
    FN(cuStreamQuery),
};

#define SYMBOL_NOT_FOUND ((CUdriverProcAddressQueryResult)1)

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    (void)cuda_version;
    (void)flags;
    CUresult r = fake_begin("cuGetProcAddress", 0);
    if (r == CUDA_SUCCESS && (!symbol || !pfn)) r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS) {
        if (status) *status = SYMBOL_NOT_FOUND;
        fake_end();
        return r;
    }
    *pfn = NULL;
    char key[160];
    snprintf(key, sizeof key, ",%s,", symbol);
    bool missing = strstr(fake_cfg.missing, key) != NULL;
    for (size_t i = 0; !missing && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, symbol) == 0) memcpy(pfn, &table[i].fn, sizeof *pfn);
    if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : SYMBOL_NOT_FOUND;
    r = *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    fake_end();
    return r;
}

/* ---- control ------------------------------------------------------------------ */

/* Runs one command; returns a malloc'd answer (free with vyre_fakecuda_free) and sets
 * *ok. Thread-safe: it takes the driver's lock. */
FAKE_API char *vyre_fakecuda_control(const char *cmd, int *ok);
FAKE_API void vyre_fakecuda_free(char *s);

static char *set_option(const char *kv, bool *ok) {
    char key[32] = "";
    unsigned long long v = 0;
    char *out = malloc(256);
    if (!out) return NULL;
    *ok = sscanf(kv, "%31s %llu", key, &v) == 2;
    if (*ok && strcmp(key, "memory") == 0) fake_cfg.memory = v;
    else if (*ok && strcmp(key, "persist") == 0) fake_cfg.persist = v != 0;
    else if (*ok && strcmp(key, "cooperative") == 0) fake_cfg.cooperative = v != 0;
    else if (*ok && strcmp(key, "foreign") == 0) fake_cfg.foreign = v != 0;
    else if (*ok && strcmp(key, "occupancy") == 0) fake_cfg.occupancy = (int)v;
    else if (*ok && strcmp(key, "jit_us") == 0 && v <= 10000000) fake_cfg.jit_us = (long)v;
    else if (*ok && strcmp(key, "ptxas") == 0 && v == 0) fake_cfg.ptxas[0] = '\0';
    else if (*ok && strcmp(key, "ptxas") == 0)
        fake_find_ptxas(fake_cfg.ptxas, sizeof fake_cfg.ptxas);
    else *ok = false;
    snprintf(out, 256,
             *ok ? "ok"
                 : "set: unknown option or value '%.100s' (memory, persist, "
                   "cooperative, foreign, occupancy, jit_us, ptxas 0|1)",
             kv);
    return out;
}

char *vyre_fakecuda_control(const char *cmd, int *ok) {
    bool good = false;
    char *out = NULL;
    if (!cmd) cmd = "";
    fake_lock();
    if (strcmp(cmd, "ping") == 0) {
        out = strdup("vyre fakecuda");
        good = true;
    } else if (strncmp(cmd, "set ", 4) == 0) {
        out = set_option(cmd + 4, &good);
    } else if (strncmp(cmd, "program ", 8) == 0) {
        out = fake_prog_register(cmd + 8, &good);
    } else if (strcmp(cmd, "heap") == 0 || strcmp(cmd, "heap trim") == 0) {
        /* The process's malloc heap (glibc): bytes in use and bytes free but held, so
         * the soak tells a leak (in use grows) from the allocator keeping freed pages
         * (held grows; "heap trim" gives them back with malloc_trim). */
#ifdef FAKE_HEAP
        if (cmd[4]) malloc_trim(0);
        struct mallinfo2 mi = mallinfo2();
        out = malloc(96);
        if (out)
            snprintf(out, 96, "in_use=%zu held=%zu", mi.uordblks + mi.hblkhd, mi.fordblks);
#else
        out = strdup("in_use=0 held=0");
#endif
        good = true;
    } else if (strcmp(cmd, "launches") == 0) {
        uint64_t computed = 0, skipped = 0, refused = 0;
        fake_prog_counts(&computed, &skipped, &refused);
        out = malloc(160);
        if (out)
            snprintf(out, 160,
                     "computed=%llu skipped=%llu refused=%llu exec_ns=%llu exec_cpu_ns=%llu",
                     (unsigned long long)computed, (unsigned long long)skipped,
                     (unsigned long long)refused, (unsigned long long)fake_exec_ns(false),
                     (unsigned long long)fake_exec_ns(true));
        good = true;
    } else if (strcmp(cmd, "launch log") == 0 || strcmp(cmd, "launch log clear") == 0) {
        out = fake_launch_log(cmd[10] != '\0');
        good = true;
    } else if (strcmp(cmd, "config") == 0) {
        out = malloc(1024);
        if (out)
            snprintf(out, 1024,
                     "devices=%d memory=%llu sm=%u sm_count=%d cooperative=%d version=%d "
                     "persist=%d foreign=%d ptxas=%s",
                     fake_cfg.devices, (unsigned long long)fake_cfg.memory, fake_cfg.sm,
                     fake_cfg.sm_count, fake_cfg.cooperative, fake_cfg.version, fake_cfg.persist,
                     fake_cfg.foreign, fake_cfg.ptxas[0] ? fake_cfg.ptxas : "(none)");
        good = true;
    } else {
        out = fake_control_state(cmd, &good);
    }
    fake_unlock();
    if (ok) *ok = good && out;
    return out;
}

void vyre_fakecuda_free(char *s) { free(s); }
