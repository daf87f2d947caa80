/* harness.c — failure reporting and the closing summary line for C tests. */
#include "harness.h"

#include <stdarg.h>

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
