/* backend_registry.c — the backends libvyre knows, by name, with a priority and an
 * availability check (reference: always; cuda: the driver loads and has a device).
 * vyre_backend_list enumerates them; vyre_backend_open(NULL, ...) opens the available
 * one with the highest priority. The table is constant: no registration at run time,
 * no lock, no global state.
 *
 * Adding a backend: a folder src/core/NAME/ with a backend.c that fills a struct
 * vyre_backend_ops, wraps its context with vyre_backend_new and defines
 * vyre_backend_reg_NAME (backend_int.h), and NAME in VYRE_BACKENDS below
 * (docs/ARCHITECTURE.md §8 "Extending"). */
#include <string.h>

#include "backend_int.h"

/* The registered backends, in the order vyre_backend_list reports them. Adding one:
 * a folder with its vyre_backend_reg_NAME, and NAME here. */
#define VYRE_BACKENDS(X) \
    X(cuda)              \
    X(reference)

#define DECLARE(name) \
    VYRE_INTERNAL extern const struct vyre_backend_registration vyre_backend_reg_##name;
VYRE_BACKENDS(DECLARE)
#undef DECLARE

#define ENTRY(name) &vyre_backend_reg_##name,
static const struct vyre_backend_registration *const registry[] = {VYRE_BACKENDS(ENTRY)};
#undef ENTRY
#define NREG (sizeof registry / sizeof registry[0])

static bool reg_available(const struct vyre_backend_registration *r, char *why, size_t whysz) {
    if (whysz) why[0] = '\0';
    return r->available ? r->available(why, whysz) : true;
}

enum vyre_status vyre_backend_list(struct vyre_backend_entry *out, size_t cap, size_t *n,
                                   struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!n || (cap && !out))
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_list: n or out is NULL. Fix: pass room for the "
                              "entries (or out = NULL, cap = 0 to count)");
    *n = NREG;
    for (size_t i = 0; i < NREG && i < cap; i++) {
        out[i].name = registry[i]->name;
        out[i].priority = registry[i]->priority;
        out[i].available = reg_available(registry[i], out[i].reason, sizeof out[i].reason);
    }
    return VYRE_OK;
}

enum vyre_status vyre_backend_open(const char *name, int ordinal,
                                   const struct vyre_backend_options *opts, vyre_backend **out,
                                   struct vyre_error *err) {
    VYRE_ERR_SCRATCH(err);
    if (!out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_open: out is NULL. Fix: pass a vyre_backend **");
    *out = NULL;
    if (ordinal < 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_open: ordinal %d is negative. Fix: devices count "
                              "from 0",
                              ordinal);
    char why[512];
    if (name) {
        for (size_t i = 0; i < NREG; i++) {
            if (strcmp(registry[i]->name, name) != 0) continue;
            if (!reg_available(registry[i], why, sizeof why))
                return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                                      "vyre_backend_open: backend '%s' is not available: %s", name,
                                      why);
            return registry[i]->open(ordinal, opts, out, err);
        }
        char names[256] = "";
        for (size_t i = 0; i < NREG; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s'%s'", i ? ", " : "", registry[i]->name);
        }
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "vyre_backend_open: unknown backend '%s'. Fix: use one of %s, or "
                              "NULL for the best available",
                              name, names);
    }
    const struct vyre_backend_registration *best = NULL;
    for (size_t i = 0; i < NREG; i++)
        if ((!best || registry[i]->priority > best->priority) &&
            reg_available(registry[i], why, sizeof why))
            best = registry[i];
    if (!best) /* the reference is always available: only a broken table gets here */
        return vyre_error_set(err, VYRE_ERR_UNSUPPORTED,
                              "vyre_backend_open: no backend is available. Fix: build with the "
                              "reference backend registered");
    return best->open(ordinal, opts, out, err);
}
