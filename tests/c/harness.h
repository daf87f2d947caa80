/* harness.h — a minimal C test harness: CHECK macros count failures, each test
 * executable ends with harness_finish(), whose exit code ctest reads. */
#ifndef VYRE_HARNESS_H
#define VYRE_HARNESS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

extern int harness_checks;
extern int harness_failures;
extern const char *harness_current;

void harness_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int harness_finish(void);

/* ptxas from $PATH or /usr/local/cuda/bin, or NULL when the toolkit is missing. */
const char *harness_ptxas_path(void);
/* Assembles ptx for sm_<arch>; returns ptxas's exit status (-1 if it could not run)
 * and its output in log. */
int harness_ptxas_run(const char *ptx, unsigned arch, char *log, size_t logsz);

/* The -arch this ptxas assembles PTX of `.target sm_<sm>` for: sm itself where ptxas
 * takes it; else sm_110 for sm_101 (CUDA 13's ptxas knows Jetson Thor only by its PTX
 * 9.0 name, and still takes `.target sm_101`); else sm_75 below it (CUDA 13's ptxas has
 * no sm_70/72: Volta PTX assembles for Turing, ARCHITECTURE.md §10); 0 when none
 * assembles a one-line kernel of the target at its minimum ISA. Probed once per sm. */
unsigned harness_ptxas_arch(unsigned sm);

/* true when ptxas assembles ptx for .target sm_<sm> (for harness_ptxas_arch(sm)). A
 * missing ptxas is a failure (the PTX cannot be proven); unless quiet, a failure
 * prints ptxas's log and the PTX. */
bool harness_ptxas_ok(const char *ptx, unsigned sm, bool quiet);

/* Many PTX programs assembled as one module (one ptxas run instead of hundreds): the
 * .version/.target/.address_size header of every program after the first is dropped;
 * shared arrays are declared inside entry bodies, so entries do not clash. n counts the
 * programs added; free text with free(). */
struct harness_batch {
    char *text;
    size_t len;
    size_t n;
};
void harness_batch_add(struct harness_batch *b, const char *ptx);

#define CHECK(cond)                                                        \
    do {                                                                   \
        harness_checks++;                                                  \
        if (!(cond)) harness_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                         \
        harness_checks++;                                                                          \
        if (va_ != vb_)                                                                            \
            harness_fail(__FILE__, __LINE__, "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, #b, va_, \
                         vb_);                                                                     \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                        \
    do {                                                                                       \
        const char *h_ = (hay), *n_ = (needle);                                                \
        harness_checks++;                                                                      \
        if (!h_ || !strstr(h_, n_))                                                            \
            harness_fail(__FILE__, __LINE__, "'%s' does not contain '%s'", h_ ? h_ : "(null)", \
                         n_);                                                                  \
    } while (0)

/* For calls of the vyre API (the test includes vyre.h): the call passes &e_ as its
 * error. OK(call) expects VYRE_OK; FAILS(st, call) expects status st and a message
 * with a Fix. */
/* A hang guard that measures work, not wall time: from now the process may use `seconds`
 * more of CPU time, then the kernel stops it with SIGXCPU (a machine loaded by other jobs
 * slows the wall clock, not this count; a loop that never ends still uses CPU). 0 lifts
 * the guard. Install a SIGXCPU handler to say which phase hung. */
static inline void harness_cpu_guard(unsigned seconds) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_CPU, &rl) != 0) return;
    struct rusage ru;
    rlim_t used = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        used = (rlim_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1);
    rlim_t want = seconds ? used + seconds : RLIM_INFINITY;
    if (rl.rlim_max != RLIM_INFINITY && (want == RLIM_INFINITY || want > rl.rlim_max))
        want = rl.rlim_max;
    rl.rlim_cur = want;
    setrlimit(RLIMIT_CPU, &rl);
}

/* A launch's arguments without worklists (struct vyre_backend_args in argument order). */
#define BARGS(b, nb, p, np, n_, g) \
    ((struct vyre_backend_args){   \
        .buffers = (b), .nbuffers = (nb), .params = (p), .nparams = (np), .n = (n_), .grid = (g)})
#define OK(call)                                                                          \
    do {                                                                                  \
        struct vyre_error e_;                                                             \
        vyre_error_clear(&e_);                                                            \
        enum vyre_status s_ = (call);                                                     \
        harness_checks++;                                                                 \
        if (s_ != VYRE_OK) harness_fail(__FILE__, __LINE__, "%s: %s", #call, e_.message); \
    } while (0)

#define FAILS(st, call)                         \
    do {                                        \
        struct vyre_error e_;                   \
        vyre_error_clear(&e_);                  \
        enum vyre_status s_ = (call);           \
        CHECK_EQ_U64(s_, st);                   \
        CHECK_STR_CONTAINS(e_.message, "Fix:"); \
    } while (0)

#define RUN_TEST(fn)           \
    do {                       \
        harness_current = #fn; \
        fn();                  \
    } while (0)

#endif
