/* lrefguard.c — Ctrl-C for reference runs. While a run of a backend whose runs execute
 * on the calling thread (vyre_backend_info.runs_on_caller: the interpreter) is in
 * progress, the binding routes SIGINT to vyre_ref_interrupt, so a runaway loop stops
 * with a Lua error instead of ignoring the key (the C interpreter never reaches a Lua
 * hook). The previous handler is put back when the last concurrent run ends: a count
 * under a mutex keeps threads that run at the same time from restoring out of order.
 * A Ctrl-C that no run turned into an error (it came after the interpreter's last
 * check, so the run completed) is not swallowed: once the previous handler is back, the
 * signal is raised again for it (lua.c's "interrupted!", or the default: exit).
 * VYRE_NO_SIGINT=1 leaves SIGINT alone (hosts with handlers of their own). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lbackend.h"

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned guard_depth;
static struct sigaction guard_saved;
static volatile sig_atomic_t guard_pending; /* a SIGINT arrived, not yet reported */

static void on_sigint(int sig) {
    (void)sig;
    guard_pending = 1;
    vyre_ref_interrupt();
}

static int guard_disabled(void) {
    const char *e = getenv("VYRE_NO_SIGINT");
    return e && *e && strcmp(e, "0") != 0;
}

bool lvyre_refguard_begin(struct vyre_error *err) {
    if (guard_disabled()) return false;
    vyre_error_clear(err); /* err.call tells an interrupt */
    pthread_mutex_lock(&guard_lock);
    if (guard_depth++ == 0) {
        guard_pending = 0;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &guard_saved);
    }
    pthread_mutex_unlock(&guard_lock);
    return true;
}

void lvyre_refguard_leave(bool guarded, enum vyre_status st, const struct vyre_error *err) {
    if (!guarded) return;
    bool reported = st != VYRE_OK && strcmp(err->call, "vyre_ref_interrupt") == 0;
    pthread_mutex_lock(&guard_lock);
    if (reported) guard_pending = 0; /* this run's error already says "interrupted" */
    bool resend = false;
    if (guard_depth > 0 && --guard_depth == 0) {
        sigaction(SIGINT, &guard_saved, NULL);
        resend = guard_pending != 0;
        guard_pending = 0;
    }
    pthread_mutex_unlock(&guard_lock);
    if (resend) raise(SIGINT); /* to the handler that was there before the run */
}
