/* harness.c — failure reporting and the closing summary line for C tests. */
#include "harness.h"

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
