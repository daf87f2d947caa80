/* fake_harness.h — what the compile tests on the fake driver (tests/fakecuda) share:
 * loading its control hook, running a control command (a failed one fails the test),
 * and programs that differ only by numbers, so that each has its own PTX. Include after
 * harness.h; static, one copy per test program. */
#ifndef VYRE_TESTS_FAKE_HARNESS_H
#define VYRE_TESTS_FAKE_HARNESS_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vyre.h"
#include "vyre_cuda.h"

typedef char *fake_control_fn(const char *cmd, int *ok);
static fake_control_fn *fake_control;
static void (*fake_control_free)(char *);

/* Points vyre at the fake driver ($VYRE_LIBCUDA), loads its control hook and checks that
 * vyre can use it; false (with the reason on stderr) when it is not there. */
static bool fake_load(void) {
    setenv("VYRE_LIBCUDA", VYRE_FAKECUDA_PATH, 1);
    void *h = dlopen(VYRE_FAKECUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    void *c = h ? dlsym(h, "vyre_fakecuda_control") : NULL;
    void *fr = h ? dlsym(h, "vyre_fakecuda_free") : NULL;
    if (!c || !fr) {
        fprintf(stderr, "cannot load the fake driver %s: %s\n", VYRE_FAKECUDA_PATH, dlerror());
        return false;
    }
    memcpy(&fake_control, &c, sizeof c);
    memcpy(&fake_control_free, &fr, sizeof fr);
    struct vyre_error e;
    CHECK(vyre_cuda_available(&e));
    return true;
}

/* Removes a test's temporary directory tree. */
static void fake_remove_tree(const char *dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* The fake's answer to cmd (valid until the next call); a refused command fails. */
static const char *ctl(const char *cmd) {
    static char buf[8192];
    int ok = 0;
    char *out = fake_control(cmd, &ok);
    snprintf(buf, sizeof buf, "%s", out ? out : "(null)");
    fake_control_free(out);
    if (!ok) harness_fail(__FILE__, __LINE__, "control('%s'): %s", cmd, buf);
    return buf;
}

/* Program name<salt>_<i>: v[j] = v[j] * (i + 2) + salt + i, each its own PTX. */
static vyre_program *salted_program(const char *name, unsigned salt, unsigned i) {
    char text[512];
    snprintf(text, sizeof text,
             "(program %s%u_%u (workgroup 64) (buffer v u32 read_write) (let j (gid x))\n"
             "  (if (lt j (len v)) (then (store v j (add (mul (load v j) %uu32) %uu32)))))",
             name, salt, i, i + 2, salt + i);
    vyre_program *p = NULL;
    struct vyre_error e;
    if (vyre_text_parse(text, strlen(text), &p, &e) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "%s", e.message);
    return p;
}
#endif
