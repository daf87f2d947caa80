/* harness.c — failure reporting and the closing summary line for C tests. */
#include "harness.h"

#include "vyre.h"

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

int harness_checks;
int harness_failures;
const char *harness_current = "";

void harness_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    harness_failures++;
    fprintf(stderr, "FAIL %s (%s:%d): ", harness_current, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int harness_finish(void) {
    printf("%d checks, %d failed\n", harness_checks, harness_failures);
    if (harness_checks == 0) {
        fprintf(stderr, "no checks ran: a test that asserts nothing is a defect\n");
        return 1;
    }
    return harness_failures == 0 ? 0 : 1;
}

const char *harness_ptxas_path(void) {
    static char path[1024];
    static int searched;
    if (searched) return path[0] ? path : NULL;
    searched = 1;
    const char *env = getenv("PATH");
    while (env && *env) {
        const char *end = strchr(env, ':');
        size_t n = end ? (size_t)(end - env) : strlen(env);
        if (n > 0 && n < sizeof path - 8) {
            snprintf(path, sizeof path, "%.*s/ptxas", (int)n, env);
            if (access(path, X_OK) == 0) return path;
        }
        env = end ? end + 1 : NULL;
    }
    snprintf(path, sizeof path, "/usr/local/cuda/bin/ptxas");
    if (access(path, X_OK) == 0) return path;
    path[0] = '\0';
    return NULL;
}

int harness_ptxas_run(const char *ptx, unsigned arch, char *log, size_t logsz) {
    const char *ptxas = harness_ptxas_path();
    if (!ptxas) return -1;
    char file[] = "/tmp/vyre_ptx_XXXXXX";
    int fd = mkstemp(file);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(file);
        return -1;
    }
    fputs(ptx, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%u '%s' -o /dev/null 2>&1", ptxas, arch, file);
    FILE *pipe = popen(cmd, "r");
    int st = -1;
    if (pipe) {
        size_t n = fread(log, 1, logsz - 1, pipe);
        log[n] = '\0';
        st = pclose(pipe);
    }
    unlink(file);
    return st;
}

void harness_batch_add(struct harness_batch *b, const char *ptx) {
    const char *body = ptx;
    if (b->len) {
        const char *h = strstr(ptx, ".address_size 64\n");
        if (h) body = h + strlen(".address_size 64\n");
    }
    size_t n = strlen(body);
    char *grown = realloc(b->text, b->len + n + 1);
    if (!grown) return;
    b->text = grown;
    memcpy(b->text + b->len, body, n + 1);
    b->len += n;
    b->n++;
}

unsigned harness_ptxas_arch(unsigned sm) {
    static unsigned probed[256]; /* sm -> arch + 1; 1: none */
    if (sm >= 256) return 0;
    if (probed[sm]) return probed[sm] - 1;
    const struct vyre_ptx_target *t = vyre_ptx_target_find(sm);
    char tiny[160], log[2048];
    snprintf(
        tiny, sizeof tiny,
        ".version %s\n.target sm_%u\n.address_size 64\n.visible .entry probe()\n{\n\tret;\n}\n",
        t ? t->isa : "9.0", sm);
    const unsigned tries[] = {sm, sm == 101 ? 110u : 0u, sm < 75 ? 75u : 0u};
    unsigned arch = 0;
    for (size_t i = 0; i < 3 && !arch; i++)
        if (tries[i] && harness_ptxas_run(tiny, tries[i], log, sizeof log) == 0) arch = tries[i];
    probed[sm] = arch + 1;
    return arch;
}

bool harness_ptxas_ok(const char *ptx, unsigned sm, bool quiet) {
    if (!harness_ptxas_path()) {
        harness_fail(__FILE__, __LINE__,
                     "ptxas not found on $PATH or in /usr/local/cuda/bin: emitted PTX cannot "
                     "be proven (install the CUDA toolkit)");
        return false;
    }
    char log[8192];
    unsigned arch = harness_ptxas_arch(sm);
    if (!arch) {
        if (!quiet)
            fprintf(stderr, "ptxas at %s assembles nothing for sm_%u\n", harness_ptxas_path(), sm);
        return false;
    }
    int st = harness_ptxas_run(ptx, arch, log, sizeof log);
    if (st != 0 && !quiet)
        fprintf(stderr, "ptxas (-arch=sm_%u, .target sm_%u) failed:\n%s\n---- PTX ----\n%s\n", arch,
                sm, log, ptx);
    return st == 0;
}
