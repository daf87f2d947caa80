/* nccl_abi.h — the part of NCCL's ABI that vyre uses: the opaque communicator, the
 * unique id, ncclResult_t / ncclRedOp_t / ncclDataType_t values, the (prefix of the)
 * communicator config, and one function type per entry point (vyre_nccl_fn_<name>).
 * Written for vyre, like cuda_abi.h, so that building needs no NCCL; libnccl.so.2 is
 * loaded at run time (nccl.c). tests/c/test_nccl_abi.c checks every constant, the
 * config's field offsets and every prototype against the real nccl.h where the build
 * finds one (VYRE_NCCL_INCLUDE).
 *
 * The config: NCCL reads `size` and `version` of the struct it is given and ignores
 * fields past `size`, so vyre declares only the prefix up to splitShare (NCCL 2.18)
 * and says version 2.18 in it. */
#ifndef VYRE_NCCL_ABI_H
#define VYRE_NCCL_ABI_H

#include <limits.h>
#include <stddef.h>

#define VYRE_NCCL_UNIQUE_ID_BYTES 128
#define VYRE_NCCL_API_MAGIC 0xcafebeefu
#define VYRE_NCCL_CONFIG_VERSION 21800 /* NCCL_VERSION(2, 18, 0): the fields below */
#define VYRE_NCCL_UNDEF_INT INT_MIN

/* Values, checked against nccl.h. X(name, value). */
#define VYRE_NCCL_RESULT_VALUES(X) \
    X(ncclSuccess, 0)              \
    X(ncclUnhandledCudaError, 1)   \
    X(ncclSystemError, 2)          \
    X(ncclInternalError, 3)        \
    X(ncclInvalidArgument, 4)      \
    X(ncclInvalidUsage, 5)         \
    X(ncclRemoteError, 6)          \
    X(ncclInProgress, 7)
#define VYRE_NCCL_REDOP_VALUES(X) \
    X(ncclSum, 0)                 \
    X(ncclProd, 1)                \
    X(ncclMax, 2)                 \
    X(ncclMin, 3)
#define VYRE_NCCL_TYPE_VALUES(X) \
    X(ncclInt32, 2)              \
    X(ncclUint32, 3)             \
    X(ncclInt64, 4)              \
    X(ncclUint64, 5)             \
    X(ncclFloat32, 7)            \
    X(ncclFloat64, 8)

#define VYRE_NCCL_ABI_ENUMS(E)               \
    E(ncclResult_t, VYRE_NCCL_RESULT_VALUES) \
    E(ncclRedOp_t, VYRE_NCCL_REDOP_VALUES)   \
    E(ncclDataType_t, VYRE_NCCL_TYPE_VALUES)

/* The config fields vyre declares, in order: F(type, name). */
#define VYRE_NCCL_CONFIG_FIELDS(F) \
    F(size_t, size)                \
    F(unsigned int, magic)         \
    F(unsigned int, version)       \
    F(int, blocking)               \
    F(int, cgaClusterSize)         \
    F(int, minCTAs)                \
    F(int, maxCTAs)                \
    F(const char *, netName)       \
    F(int, splitShare)

#ifndef VYRE_NCCL_ABI_LISTS_ONLY
typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[VYRE_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
#define VYRE_NCCL_ENUMERATOR(name, value) name = value,
#define VYRE_NCCL_ENUM(type, list) typedef enum { list(VYRE_NCCL_ENUMERATOR) } type;
VYRE_NCCL_ABI_ENUMS(VYRE_NCCL_ENUM)
#undef VYRE_NCCL_ENUM
#undef VYRE_NCCL_ENUMERATOR
#define VYRE_NCCL_FIELD(type, name) type name;
typedef struct {
    VYRE_NCCL_CONFIG_FIELDS(VYRE_NCCL_FIELD)
} ncclConfig_t;
#undef VYRE_NCCL_FIELD
#endif

/* The stream argument: cudaStream_t is the driver's CUstream (one opaque pointer). */
typedef struct CUstream_st *vyre_nccl_stream;

/* Entry points: X(name, required). Optional ones may be NULL (older NCCL). */
#define VYRE_NCCL_ENTRIES(X)     \
    X(ncclGetVersion, 1)         \
    X(ncclGetUniqueId, 1)        \
    X(ncclGetErrorString, 1)     \
    X(ncclCommInitAll, 1)        \
    X(ncclCommInitRank, 1)       \
    X(ncclCommInitRankConfig, 0) \
    X(ncclCommGetAsyncError, 1)  \
    X(ncclCommFinalize, 0)       \
    X(ncclCommDestroy, 1)        \
    X(ncclCommAbort, 1)          \
    X(ncclGroupStart, 1)         \
    X(ncclGroupEnd, 1)           \
    X(ncclAllReduce, 1)          \
    X(ncclBroadcast, 1)          \
    X(ncclReduce, 1)             \
    X(ncclAllGather, 1)          \
    X(ncclReduceScatter, 1)      \
    X(ncclSend, 1)               \
    X(ncclRecv, 1)

typedef ncclResult_t vyre_nccl_fn_ncclGetVersion(int *version);
typedef ncclResult_t vyre_nccl_fn_ncclGetUniqueId(ncclUniqueId *id);
typedef const char *vyre_nccl_fn_ncclGetErrorString(ncclResult_t result);
typedef ncclResult_t vyre_nccl_fn_ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
typedef ncclResult_t vyre_nccl_fn_ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                                   int rank);
typedef ncclResult_t vyre_nccl_fn_ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                                         ncclUniqueId id, int rank,
                                                         ncclConfig_t *config);
typedef ncclResult_t vyre_nccl_fn_ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *error);
typedef ncclResult_t vyre_nccl_fn_ncclCommFinalize(ncclComm_t comm);
typedef ncclResult_t vyre_nccl_fn_ncclCommDestroy(ncclComm_t comm);
typedef ncclResult_t vyre_nccl_fn_ncclCommAbort(ncclComm_t comm);
typedef ncclResult_t vyre_nccl_fn_ncclGroupStart(void);
typedef ncclResult_t vyre_nccl_fn_ncclGroupEnd(void);
typedef ncclResult_t vyre_nccl_fn_ncclAllReduce(const void *send, void *recv, size_t count,
                                                ncclDataType_t type, ncclRedOp_t op,
                                                ncclComm_t comm, vyre_nccl_stream stream);
typedef ncclResult_t vyre_nccl_fn_ncclBroadcast(const void *send, void *recv, size_t count,
                                                ncclDataType_t type, int root, ncclComm_t comm,
                                                vyre_nccl_stream stream);
typedef ncclResult_t vyre_nccl_fn_ncclReduce(const void *send, void *recv, size_t count,
                                             ncclDataType_t type, ncclRedOp_t op, int root,
                                             ncclComm_t comm, vyre_nccl_stream stream);
typedef ncclResult_t vyre_nccl_fn_ncclAllGather(const void *send, void *recv, size_t sendcount,
                                                ncclDataType_t type, ncclComm_t comm,
                                                vyre_nccl_stream stream);
typedef ncclResult_t vyre_nccl_fn_ncclReduceScatter(const void *send, void *recv, size_t recvcount,
                                                    ncclDataType_t type, ncclRedOp_t op,
                                                    ncclComm_t comm, vyre_nccl_stream stream);
typedef ncclResult_t vyre_nccl_fn_ncclSend(const void *send, size_t count, ncclDataType_t type,
                                           int peer, ncclComm_t comm, vyre_nccl_stream stream);
typedef ncclResult_t vyre_nccl_fn_ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer,
                                           ncclComm_t comm, vyre_nccl_stream stream);

#endif
