/* test_ptx_random.c — thousands of generated valid programs (barriers and approximate
 * ops allowed) emitted as PTX and assembled with ptxas: program i for one of sm_70,
 * sm_80, sm_90 (i mod 3), and every tenth program for all three; and a slice for every
 * other target of the table (sm_72 ... sm_121: program i where i mod 50 picks the
 * target, 48 each), which keeps the run well under a minute on two cores.
 * ptxas is slow to start, so many kernels go into one module per ptxas call (entry
 * names are unique, shared arrays live inside each entry): the first program keeps its
 * .version/.target/.address_size lines, the others lose theirs. Two ptxas processes run
 * at a time. A failing module is re-assembled program by program to name the seed and
 * quote ptxas. Without ptxas this test FAILS: every emitted PTX must be assembled.
 * A ptxas that no longer knows sm_70/72 (CUDA 13+) assembles their PTX for sm_75, the
 * nearest target that accepts it, and sm_101 PTX for sm_110 (harness_ptxas_arch). */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"
#include "ir.h"

#define N_PROGRAMS 2400u
#define BATCH 100u
#define MAX_JOBS 2
#define SEED_BASE 5000000u

static char ptxas[1024];
static char tmpdir[64];

static bool find_ptxas(void) {
    const char *path = harness_ptxas_path();
    if (path) snprintf(ptxas, sizeof ptxas, "%s", path);
    return path != NULL;
}

static struct vyre_gen_options gen_opts(uint64_t seed) {
    struct vyre_gen_options o;
    memset(&o, 0, sizeof o);
    o.allow_barriers = seed % 4u != 0;
    o.allow_approx = seed % 3u != 0;
    if (seed % 5u == 0) {
        o.max_stmts = 14;
        o.max_depth = 6;
    }
    return o;
}

/* ---- running ptxas ---------------------------------------------------------------- */

static pid_t spawn_ptxas(const char *arch, const char *file, const char *errfile) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    char archarg[32];
    snprintf(archarg, sizeof archarg, "-arch=%s", arch);
    execl(ptxas, ptxas, archarg, file, "-o", "/dev/null", (char *)NULL);
    _exit(127);
}

static int wait_rc(pid_t pid) {
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status)
                             : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static bool write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(8192);
    size_t n = buf ? fread(buf, 1, 8191, f) : 0;
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Assembles one text synchronously; returns ptxas's exit code, message in *msg. */
static int assemble_now(const char *arch, const char *text, size_t n, const char *tag, char **msg) {
    char file[160], errf[160];
    snprintf(file, sizeof file, "%s/%s.ptx", tmpdir, tag);
    snprintf(errf, sizeof errf, "%s/%s.err", tmpdir, tag);
    if (!write_file(file, text, n)) return -1;
    int rc = wait_rc(spawn_ptxas(arch, file, errf));
    if (msg) *msg = read_file(errf);
    unlink(file);
    unlink(errf);
    return rc;
}

/* ---- modules of many kernels -------------------------------------------------------- */

struct text {
    char *s;
    size_t n, cap;
};

static void text_add(struct text *t, const char *s, size_t n) {
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 65536u;
        while (cap < t->n + n + 1) cap *= 2;
        t->s = realloc(t->s, cap);
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

/* Appends ptx, dropping the module header lines unless this is the first kernel. */
static void append_kernel(struct text *t, const char *ptx, bool first) {
    const char *line = ptx;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        bool header = strncmp(line, ".version", 8) == 0 || strncmp(line, ".target", 7) == 0 ||
                      strncmp(line, ".address_size", 13) == 0;
        if (first || !header) text_add(t, line, len);
        line += len;
    }
}

static char *emit(uint64_t seed, unsigned sm, vyre_program **out_p) {
    struct vyre_gen_options o = gen_opts(seed);
    vyre_program *p = vyre_gen_random(seed, &o);
    *out_p = p;
    if (!p) {
        harness_fail(__FILE__, __LINE__, "seed %llu: generator returned NULL",
                     (unsigned long long)seed);
        return NULL;
    }
    /* A quarter of the programs in debug mode: the counting atomics go through ptxas too. */
    struct vyre_ptx_options po = {.sm = sm, .debug = seed % 4u == 1};
    struct vyre_error err;
    vyre_error_clear(&err);
    char *ptx = NULL;
    size_t n = 0;
    enum vyre_status st = vyre_ptx_emit(p, &po, &ptx, &n, &err);
    harness_checks++;
    if (st != VYRE_OK || !ptx) {
        char *text = NULL;
        size_t tn = 0;
        vyre_text_print(p, &text, &tn);
        harness_fail(__FILE__, __LINE__, "seed %llu sm_%u: vyre_ptx_emit failed: %s: %s\n%s",
                     (unsigned long long)seed, sm, vyre_status_name(st), err.message,
                     text ? text : "");
        vyre_free(text);
        vyre_free(ptx);
        return NULL;
    }
    char target[32];
    snprintf(target, sizeof target, ".target sm_%u", sm);
    CHECK_STR_CONTAINS(ptx, target);
    CHECK_STR_CONTAINS(ptx, vyre_program_name(p));
    if (po.debug) CHECK_STR_CONTAINS(ptx, ".param .u64 vy_oob");
    return ptx;
}

struct job {
    pid_t pid;
    unsigned sm;
    uint64_t seeds[BATCH];
    unsigned nseeds;
    char file[160], errf[160];
};

static unsigned failed_programs, assembled;

/* The PTX line that ptxas's message ("..., line N; ...") points at, or "". */
static void quote_line(const char *ptx, const char *msg, char *out, size_t size) {
    out[0] = '\0';
    const char *at = msg ? strstr(msg, ", line ") : NULL;
    if (!at) return;
    unsigned long want = strtoul(at + 7, NULL, 10), line = 1;
    const char *s = ptx;
    while (*s && line < want) {
        if (*s++ == '\n') line++;
    }
    const char *nl = strchr(s, '\n');
    int n = nl ? (int)(nl - s) : (int)strlen(s);
    snprintf(out, size, "PTX line %lu: %.*s\n", want, n, s);
}

/* A module failed: find the program(s) at fault by assembling them one at a time. */
static void bisect(const struct job *j, const char *arch) {
    char *msg = read_file(j->errf);
    unsigned found = 0;
    for (unsigned i = 0; i < j->nseeds; i++) {
        uint64_t seed = j->seeds[i];
        vyre_program *p = NULL;
        char *ptx = emit(seed, j->sm, &p);
        if (ptx) {
            char *m = NULL;
            int rc = assemble_now(arch, ptx, strlen(ptx), "single", &m);
            if (rc != 0) {
                char *text = NULL, quoted[256];
                size_t tn = 0;
                vyre_text_print(p, &text, &tn);
                quote_line(ptx, m, quoted, sizeof quoted);
                harness_fail(__FILE__, __LINE__,
                             "seed %llu sm_%u: ptxas -arch=%s failed (rc %d):\n%s%s\nprogram:\n%s",
                             (unsigned long long)seed, j->sm, arch, rc, m ? m : "", quoted,
                             text ? text : "");
                vyre_free(text);
                found++;
                failed_programs++;
            }
            free(m);
        }
        vyre_free(ptx);
        vyre_program_free(p);
    }
    if (!found)
        harness_fail(__FILE__, __LINE__,
                     "sm_%u seeds %llu..%llu: the module failed but every kernel assembles "
                     "alone (a module-scope clash?): %s",
                     j->sm, (unsigned long long)j->seeds[0],
                     (unsigned long long)j->seeds[j->nseeds - 1], msg ? msg : "");
    free(msg);
}

/* "sm_NN": the -arch this ptxas assembles PTX for sm_<sm> with (harness.c). */
static const char *arch_for(unsigned sm) {
    static char buf[16];
    snprintf(buf, sizeof buf, "sm_%u", harness_ptxas_arch(sm));
    return buf;
}

static void finish(struct job *j) {
    int rc = wait_rc(j->pid);
    harness_checks++;
    if (rc != 0) bisect(j, arch_for(j->sm));
    else assembled += j->nseeds;
    unlink(j->file);
    unlink(j->errf);
    j->pid = 0;
}

/* Whether program `seed` is assembled for sm: the main three (sm_70, sm_80, sm_90) take
 * seed mod 3 and every tenth seed; every other target its slice of seed mod 50. */
static bool picks(uint64_t seed, unsigned sm, unsigned slice) {
    switch (sm) {
    case 70: return seed % 3u == 0 || seed % 10u == 0;
    case 80: return seed % 3u == 1 || seed % 10u == 0;
    case 90: return seed % 3u == 2 || seed % 10u == 0;
    default: return seed % 50u == slice;
    }
}

static void test_ptx_random(void) {
    harness_checks++;
    if (!find_ptxas()) {
        harness_fail(
            __FILE__, __LINE__,
            "ptxas not found on $PATH nor at /usr/local/cuda/bin/ptxas: every "
            "emitted PTX must be assembled. Fix: install the CUDA toolkit or add ptxas to PATH.");
        return;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vyre_ptx_XXXXXX");
    harness_checks++;
    if (!mkdtemp(tmpdir)) {
        harness_fail(__FILE__, __LINE__, "mkdtemp failed");
        return;
    }
    struct job jobs[MAX_JOBS];
    memset(jobs, 0, sizeof jobs);
    unsigned nmod = 0;
    unsigned nkernels = 0, slice = 0;
    for (size_t ti = 0; ti < vyre_ptx_target_count(); ti++) {
        unsigned sm = vyre_ptx_target_at(ti)->sm;
        harness_checks++;
        if (!harness_ptxas_arch(sm)) {
            harness_fail(__FILE__, __LINE__, "%s assembles nothing for sm_%u", ptxas, sm);
            continue;
        }
        uint64_t next = SEED_BASE;
        while (next < SEED_BASE + N_PROGRAMS) {
            struct text mod = {NULL, 0, 0};
            uint64_t batch[BATCH];
            unsigned nb = 0;
            for (; next < SEED_BASE + N_PROGRAMS && nb < BATCH; next++) {
                uint64_t seed = next;
                if (!picks(seed, sm, slice)) continue;
                vyre_program *p = NULL;
                char *ptx = emit(seed, sm, &p);
                if (ptx) {
                    /* Emission is deterministic. */
                    if (seed % 50u == 0) {
                        char *again = NULL;
                        size_t n2 = 0;
                        struct vyre_ptx_options po = {.sm = sm, .debug = seed % 4u == 1};
                        struct vyre_error err;
                        CHECK(vyre_ptx_emit(p, &po, &again, &n2, &err) == VYRE_OK && again &&
                              strcmp(again, ptx) == 0);
                        vyre_free(again);
                    }
                    append_kernel(&mod, ptx, mod.n == 0);
                    batch[nb++] = seed;
                }
                vyre_free(ptx);
                vyre_program_free(p);
            }
            if (!nb) {
                free(mod.s);
                continue;
            }
            nkernels += nb;
            /* Wait for a free slot, then start this module's ptxas. */
            struct job *j = NULL;
            for (int k = 0; k < MAX_JOBS && !j; k++)
                if (!jobs[k].pid) j = &jobs[k];
            if (!j) {
                j = &jobs[nmod % MAX_JOBS];
                finish(j);
            }
            j->sm = sm;
            memcpy(j->seeds, batch, nb * sizeof batch[0]);
            j->nseeds = nb;
            snprintf(j->file, sizeof j->file, "%s/m%u.ptx", tmpdir, nmod);
            snprintf(j->errf, sizeof j->errf, "%s/m%u.err", tmpdir, nmod);
            nmod++;
            harness_checks++;
            if (!mod.s || !write_file(j->file, mod.s, mod.n)) {
                harness_fail(__FILE__, __LINE__, "cannot write %s", j->file);
                free(mod.s);
                continue;
            }
            free(mod.s);
            j->pid = spawn_ptxas(arch_for(sm), j->file, j->errf);
        }
        if (sm != 70 && sm != 80 && sm != 90) slice++;
    }
    for (int k = 0; k < MAX_JOBS; k++)
        if (jobs[k].pid) finish(&jobs[k]);
    rmdir(tmpdir);
    printf("ptxas: %u programs, %u modules, %u of %u kernels assembled, %u failed\n", N_PROGRAMS,
           nmod, assembled, nkernels, failed_programs);
    CHECK(assembled == nkernels);
    CHECK(assembled >= 1000u);
}

int main(void) {
    RUN_TEST(test_ptx_random);
    return harness_finish();
}
