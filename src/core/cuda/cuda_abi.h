/* cuda_abi.h — the part of the CUDA driver API's ABI that the runtime uses: handle
 * and scalar types, the enumeration constants it passes or compares, and one
 * function type per driver entry point (vyre_cu_fn_<name>). Written for vyre so
 * that building needs no CUDA toolkit; libcuda itself is loaded at run time.
 *
 * Values are the driver's ABI values (as in the CUDA 13 cuda.h). Types and
 * constants are declared through the lists below so that tests/c/test_cuda_abi.c
 * can walk every one of them next to the toolkit's cuda.h and fail on any drift.
 * That test defines VYRE_CUDA_ABI_LISTS_ONLY after including <cuda.h>: the lists
 * are then defined, the types and constants come from cuda.h, and the function
 * types below are spelled with cuda.h's types.
 *
 * Adding a driver call or constant: add it here (to a list), then rebuild with the
 * toolkit present so test_cuda_abi checks it. */
#ifndef VYRE_CUDA_ABI_H
#define VYRE_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#if defined(__LP64__) || defined(_WIN64)
#define VYRE_CU_DEVICEPTR_BASE unsigned long long
#else
#define VYRE_CU_DEVICEPTR_BASE unsigned int
#endif

/* T(definition, name): plain types and opaque handles. */
#define VYRE_CU_ABI_TYPES(T)                \
    T(uint64_t, cuuint64_t)                 \
    T(int, CUdevice)                        \
    T(VYRE_CU_DEVICEPTR_BASE, CUdeviceptr)  \
    T(struct CUctx_st *, CUcontext)         \
    T(struct CUmod_st *, CUmodule)          \
    T(struct CUfunc_st *, CUfunction)       \
    T(struct CUstream_st *, CUstream)       \
    T(struct CUevent_st *, CUevent)         \
    T(struct CUgraph_st *, CUgraph)         \
    T(struct CUgraphExec_st *, CUgraphExec) \
    T(struct CUlinkState_st *, CUlinkState)

/* X(name, value) per enumeration. */
#define VYRE_CU_RESULT_VALUES(X)                  \
    X(CUDA_SUCCESS, 0)                            \
    X(CUDA_ERROR_INVALID_VALUE, 1)                \
    X(CUDA_ERROR_OUT_OF_MEMORY, 2)                \
    X(CUDA_ERROR_STUB_LIBRARY, 34)                \
    X(CUDA_ERROR_NO_DEVICE, 100)                  \
    X(CUDA_ERROR_INVALID_CONTEXT, 201)            \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)          \
    X(CUDA_ERROR_ECC_UNCORRECTABLE, 214)          \
    X(CUDA_ERROR_INVALID_PTX, 218)                \
    X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221)     \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)    \
    X(CUDA_ERROR_NOT_FOUND, 500)                  \
    X(CUDA_ERROR_NOT_READY, 600)                  \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)            \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)    \
    X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)             \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)       \
    X(CUDA_ERROR_ASSERT, 710)                     \
    X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714)       \
    X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715)        \
    X(CUDA_ERROR_MISALIGNED_ADDRESS, 716)         \
    X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717)      \
    X(CUDA_ERROR_INVALID_PC, 718)                 \
    X(CUDA_ERROR_LAUNCH_FAILED, 719)              \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900) \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901)

#define VYRE_CU_DEVICE_ATTRIBUTE_VALUES(X)                          \
    X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1)                 \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2)                       \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3)                       \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4)                       \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5)                        \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6)                        \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7)                        \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)           \
    X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)                            \
    X(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 12)              \
    X(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13)                           \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                 \
    X(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 31)                   \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 36)                    \
    X(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 37)              \
    X(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 38)                        \
    X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 39)       \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)             \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)             \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 81) \
    X(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 82)     \
    X(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 95)                   \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)    \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 106)

#define VYRE_CU_FUNCTION_ATTRIBUTE_VALUES(X)      \
    X(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) \
    X(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)     \
    X(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, 2)      \
    X(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 3)      \
    X(CU_FUNC_ATTRIBUTE_NUM_REGS, 4)              \
    X(CU_FUNC_ATTRIBUTE_PTX_VERSION, 5)           \
    X(CU_FUNC_ATTRIBUTE_BINARY_VERSION, 6)

#define VYRE_CU_JIT_OPTION_VALUES(X) \
    X(CU_JIT_ERROR_LOG_BUFFER, 5)    \
    X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)

#define VYRE_CU_JIT_INPUT_TYPE_VALUES(X) X(CU_JIT_INPUT_PTX, 1)

#define VYRE_CU_STREAM_FLAGS_VALUES(X) X(CU_STREAM_NON_BLOCKING, 0x1)

#define VYRE_CU_EVENT_FLAGS_VALUES(X) \
    X(CU_EVENT_DEFAULT, 0x0)          \
    X(CU_EVENT_DISABLE_TIMING, 0x2)

#define VYRE_CU_STREAM_CAPTURE_MODE_VALUES(X) X(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 1)

#define VYRE_CU_PROC_ADDRESS_FLAGS_VALUES(X) X(CU_GET_PROC_ADDRESS_LEGACY_STREAM, 0x1)

#define VYRE_CU_PROC_ADDRESS_RESULT_VALUES(X) X(CU_GET_PROC_ADDRESS_SUCCESS, 0)

/* E(type name, value list): every enumeration type. */
#define VYRE_CU_ABI_ENUMS(E)                                        \
    E(CUresult, VYRE_CU_RESULT_VALUES)                              \
    E(CUdevice_attribute, VYRE_CU_DEVICE_ATTRIBUTE_VALUES)          \
    E(CUfunction_attribute, VYRE_CU_FUNCTION_ATTRIBUTE_VALUES)      \
    E(CUjit_option, VYRE_CU_JIT_OPTION_VALUES)                      \
    E(CUjitInputType, VYRE_CU_JIT_INPUT_TYPE_VALUES)                \
    E(CUstream_flags, VYRE_CU_STREAM_FLAGS_VALUES)                  \
    E(CUevent_flags, VYRE_CU_EVENT_FLAGS_VALUES)                    \
    E(CUstreamCaptureMode, VYRE_CU_STREAM_CAPTURE_MODE_VALUES)      \
    E(CUdriverProcAddress_flags, VYRE_CU_PROC_ADDRESS_FLAGS_VALUES) \
    E(CUdriverProcAddressQueryResult, VYRE_CU_PROC_ADDRESS_RESULT_VALUES)

#ifndef VYRE_CUDA_ABI_LISTS_ONLY
#define VYRE_CU_ABI_TYPEDEF(def, name) typedef def name;
VYRE_CU_ABI_TYPES(VYRE_CU_ABI_TYPEDEF)
#undef VYRE_CU_ABI_TYPEDEF

#define VYRE_CU_ABI_ENUMERATOR(name, value) name = value,
#define VYRE_CU_ABI_ENUM(type, list) typedef enum { list(VYRE_CU_ABI_ENUMERATOR) } type;
VYRE_CU_ABI_ENUMS(VYRE_CU_ABI_ENUM)
#undef VYRE_CU_ABI_ENUM
#undef VYRE_CU_ABI_ENUMERATOR
#endif

/* Driver entry points, with the prototype of the ABI version the runtime asks
 * cuGetProcAddress for (the versions are in cuda_int.h's VYRE_CU_ENTRIES). */
typedef CUresult vyre_cu_fn_cuInit(unsigned int flags);
typedef CUresult vyre_cu_fn_cuDriverGetVersion(int *version);
typedef CUresult vyre_cu_fn_cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
                                                cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *status);
typedef CUresult vyre_cu_fn_cuGetErrorName(CUresult error, const char **str);
typedef CUresult vyre_cu_fn_cuGetErrorString(CUresult error, const char **str);
typedef CUresult vyre_cu_fn_cuDeviceGet(CUdevice *device, int ordinal);
typedef CUresult vyre_cu_fn_cuDeviceGetCount(int *count);
typedef CUresult vyre_cu_fn_cuDeviceGetName(char *name, int len, CUdevice dev);
typedef CUresult vyre_cu_fn_cuDeviceGetAttribute(int *value, CUdevice_attribute attrib,
                                                 CUdevice dev);
typedef CUresult vyre_cu_fn_cuDeviceTotalMem(size_t *bytes, CUdevice dev);
typedef CUresult vyre_cu_fn_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
typedef CUresult vyre_cu_fn_cuDevicePrimaryCtxRelease(CUdevice dev);
typedef CUresult vyre_cu_fn_cuDevicePrimaryCtxReset(CUdevice dev);
typedef CUresult vyre_cu_fn_cuCtxSetCurrent(CUcontext ctx);
typedef CUresult vyre_cu_fn_cuCtxGetCurrent(CUcontext *ctx);
typedef CUresult vyre_cu_fn_cuMemAlloc(CUdeviceptr *dptr, size_t bytes);
typedef CUresult vyre_cu_fn_cuMemFree(CUdeviceptr dptr);
typedef CUresult vyre_cu_fn_cuMemGetInfo(size_t *free_bytes, size_t *total_bytes);
typedef CUresult vyre_cu_fn_cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags);
typedef CUresult vyre_cu_fn_cuMemFreeHost(void *p);
typedef CUresult vyre_cu_fn_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                                              CUstream stream);
typedef CUresult vyre_cu_fn_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                              CUstream stream);
typedef CUresult vyre_cu_fn_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                                            CUstream stream);
typedef CUresult vyre_cu_fn_cuStreamCreate(CUstream *stream, unsigned int flags);
typedef CUresult vyre_cu_fn_cuStreamDestroy(CUstream stream);
typedef CUresult vyre_cu_fn_cuStreamSynchronize(CUstream stream);
typedef CUresult vyre_cu_fn_cuEventCreate(CUevent *event, unsigned int flags);
typedef CUresult vyre_cu_fn_cuEventDestroy(CUevent event);
typedef CUresult vyre_cu_fn_cuEventRecord(CUevent event, CUstream stream);
typedef CUresult vyre_cu_fn_cuEventElapsedTime(float *ms, CUevent start, CUevent end);
typedef CUresult vyre_cu_fn_cuModuleLoadDataEx(CUmodule *module, const void *image,
                                               unsigned int num_options, CUjit_option *options,
                                               void **option_values);
typedef CUresult vyre_cu_fn_cuModuleUnload(CUmodule module);
typedef CUresult vyre_cu_fn_cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name);
typedef CUresult vyre_cu_fn_cuFuncGetAttribute(int *value, CUfunction_attribute attrib,
                                               CUfunction fn);
typedef CUresult vyre_cu_fn_cuLaunchKernel(CUfunction fn, unsigned int grid_x, unsigned int grid_y,
                                           unsigned int grid_z, unsigned int block_x,
                                           unsigned int block_y, unsigned int block_z,
                                           unsigned int shared_bytes, CUstream stream,
                                           void **params, void **extra);
typedef CUresult vyre_cu_fn_cuLinkCreate(unsigned int num_options, CUjit_option *options,
                                         void **option_values, CUlinkState *state);
typedef CUresult vyre_cu_fn_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data,
                                          size_t size, const char *name, unsigned int num_options,
                                          CUjit_option *options, void **option_values);
typedef CUresult vyre_cu_fn_cuLinkComplete(CUlinkState state, void **cubin, size_t *size);
typedef CUresult vyre_cu_fn_cuLinkDestroy(CUlinkState state);
typedef CUresult vyre_cu_fn_cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode);
typedef CUresult vyre_cu_fn_cuStreamEndCapture(CUstream stream, CUgraph *graph);
typedef CUresult vyre_cu_fn_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                                        unsigned long long flags);
typedef CUresult vyre_cu_fn_cuGraphLaunch(CUgraphExec exec, CUstream stream);
typedef CUresult vyre_cu_fn_cuGraphExecDestroy(CUgraphExec exec);
typedef CUresult vyre_cu_fn_cuGraphDestroy(CUgraph graph);
typedef CUresult vyre_cu_fn_cuLaunchCooperativeKernel(CUfunction fn, unsigned int grid_x,
                                                      unsigned int grid_y, unsigned int grid_z,
                                                      unsigned int block_x, unsigned int block_y,
                                                      unsigned int block_z,
                                                      unsigned int shared_bytes, CUstream stream,
                                                      void **params);
typedef CUresult vyre_cu_fn_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn,
                                                                        int block_size,
                                                                        size_t dynamic_shared);

/* Several devices (peer.c, nccl_group.c). */
typedef CUresult vyre_cu_fn_cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer);
typedef CUresult vyre_cu_fn_cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags);
typedef CUresult vyre_cu_fn_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                              CUcontext src_ctx, size_t bytes, CUstream stream);
typedef CUresult vyre_cu_fn_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags);
typedef CUresult vyre_cu_fn_cuStreamQuery(CUstream stream);

#endif
