/* test_nccl_abi.c — the NCCL ABI vyre declares itself (src/core/cuda/nccl_abi.h, so
 * that building needs no NCCL) against a real nccl.h: every constant's value, the
 * size of the unique id, the offset and size of every config field vyre declares, and
 * every entry point's prototype. Compile-time _Static_asserts, counted again at run
 * time. CMake builds it with nccl.h only where it finds one (VYRE_NCCL_INCLUDE, e.g.
 * the include directory of pip's nvidia-nccl-cu13 wheel, plus the toolkit's headers
 * nccl.h includes); without it the test exits 77, which ctest reports as skipped. */
#include "harness.h"

#ifndef VYRE_HAVE_NCCL_H

int main(void) {
    printf("SKIPPED: no nccl.h was found when this build was configured, so the vendored NCCL "
           "ABI (src/core/cuda/nccl_abi.h) cannot be cross-checked. Fix: unpack a NCCL (e.g. "
           "pip download nvidia-nccl-cu13) and re-run cmake with -DVYRE_NCCL_INCLUDE=DIR.\n");
    return 77;
}

#else

#include <nccl.h>
#include <stddef.h>

#define VYRE_NCCL_ABI_LISTS_ONLY
#include "nccl_abi.h"

#define ASSERT_CONST(name, value) \
    _Static_assert((long long)(name) == (long long)(value), #name " differs from nccl.h");
#define ASSERT_ENUM(type, list) list(ASSERT_CONST)
VYRE_NCCL_ABI_ENUMS(ASSERT_ENUM)
_Static_assert(VYRE_NCCL_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "unique id size");
#ifdef NCCL_API_MAGIC /* named since NCCL 2.29; the initializer below checks it always */
_Static_assert(VYRE_NCCL_API_MAGIC == NCCL_API_MAGIC, "config magic");
#endif
_Static_assert(VYRE_NCCL_UNDEF_INT == NCCL_CONFIG_UNDEF_INT, "undefined int");

/* vyre's config prefix, laid out again from the list, must match nccl.h's fields. */
#define VYRE_FIELD(type, name) type name;
typedef struct {
    VYRE_NCCL_CONFIG_FIELDS(VYRE_FIELD)
} vyre_config;
#define ASSERT_FIELD(type, name)                                                          \
    _Static_assert(offsetof(vyre_config, name) == offsetof(ncclConfig_t, name),           \
                   "config field " #name ": offset differs from nccl.h");                 \
    _Static_assert(sizeof(((vyre_config *)0)->name) == sizeof(((ncclConfig_t *)0)->name), \
                   "config field " #name ": size differs from nccl.h");
VYRE_NCCL_CONFIG_FIELDS(ASSERT_FIELD)

/* The prototypes (nccl_abi.h spells them with nccl.h's types here). */
#define SAME(n) __builtin_types_compatible_p(__typeof__(n), vyre_nccl_fn_##n)

static void test_constants(void) {
    int before = harness_checks;
#define CHECK_CONST(name, value) CHECK_EQ_U64((long long)(name), (long long)(value));
#define CHECK_ENUM(type, list) list(CHECK_CONST)
    VYRE_NCCL_ABI_ENUMS(CHECK_ENUM)
    CHECK_EQ_U64(VYRE_NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
    CHECK_EQ_U64(sizeof(ncclUniqueId), VYRE_NCCL_UNIQUE_ID_BYTES);
    printf("  %d constants match nccl.h (NCCL %d)\n", harness_checks - before, NCCL_VERSION_CODE);
}

static void test_config(void) {
    int before = harness_checks;
#define CHECK_FIELD(type, name) \
    CHECK_EQ_U64(offsetof(vyre_config, name), offsetof(ncclConfig_t, name));
    VYRE_NCCL_CONFIG_FIELDS(CHECK_FIELD)
    CHECK(sizeof(vyre_config) <= sizeof(ncclConfig_t));
    ncclConfig_t init = NCCL_CONFIG_INITIALIZER; /* nccl.h's own magic and "unset" value */
    CHECK_EQ_U64(init.magic, VYRE_NCCL_API_MAGIC);
    CHECK_EQ_U64((unsigned)init.blocking, (unsigned)VYRE_NCCL_UNDEF_INT);
    printf("  %d config field offsets match nccl.h\n", harness_checks - before);
}

#define ASSERT_ENTRY(n, req) \
    _Static_assert(SAME(n), "vyre_nccl_fn_" #n " is not nccl.h's prototype");
VYRE_NCCL_ENTRIES(ASSERT_ENTRY)
_Static_assert(__builtin_types_compatible_p(vyre_nccl_stream, cudaStream_t), "stream type");

static void test_entry_points(void) {
    int before = harness_checks;
#define CHECK_ENTRY(n, req) CHECK(SAME(n));
    VYRE_NCCL_ENTRIES(CHECK_ENTRY)
    CHECK(__builtin_types_compatible_p(vyre_nccl_stream, cudaStream_t));
    printf("  %d entry-point prototypes match nccl.h\n", harness_checks - before);
}

int main(void) {
    RUN_TEST(test_constants);
    RUN_TEST(test_config);
    RUN_TEST(test_entry_points);
    return harness_finish();
}

#endif
