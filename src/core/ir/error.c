/* error.c — the error record every libvyre call fills, and status names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

void vyre_error_clear(struct vyre_error *err) {
    if (!err) return;
    err->status = VYRE_OK;
    err->message[0] = '\0';
    err->call[0] = '\0';
    err->result[0] = '\0';
    err->line = 0;
    err->column = 0;
}

enum vyre_status vyre_error_set(struct vyre_error *err, enum vyre_status status, const char *fmt,
                                ...) {
    if (!err) return status;
    va_list ap;
    err->status = status;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return status;
}

const char *vyre_status_name(enum vyre_status status) {
    switch (status) {
    case VYRE_OK: return "ok";
    case VYRE_ERR_NOMEM: return "out of memory";
    case VYRE_ERR_ARG: return "bad argument";
    case VYRE_ERR_SYNTAX: return "syntax error";
    case VYRE_ERR_INVALID: return "invalid program";
    case VYRE_ERR_RUNTIME: return "run-time error";
    case VYRE_ERR_UNSUPPORTED: return "unsupported";
    case VYRE_ERR_LIMIT: return "limit exceeded";
    case VYRE_ERR_CUDA: return "CUDA error";
    case VYRE_ERR_NO_CUDA: return "CUDA unavailable";
    case VYRE_ERR_DEVICE_LOST: return "device lost";
    case VYRE_ERR_IO: return "I/O error";
    }
    return "unknown status";
}

const char *vyre_status_code(enum vyre_status status) {
    switch (status) {
    case VYRE_OK: return "ok";
    case VYRE_ERR_NOMEM: return "oom";
    case VYRE_ERR_ARG: return "arg";
    case VYRE_ERR_SYNTAX: return "parse";
    case VYRE_ERR_INVALID: return "validate";
    case VYRE_ERR_RUNTIME: return "runtime";
    case VYRE_ERR_UNSUPPORTED: return "unsupported";
    case VYRE_ERR_LIMIT: return "limit";
    case VYRE_ERR_CUDA: return "driver";
    case VYRE_ERR_NO_CUDA: return "no_cuda";
    case VYRE_ERR_DEVICE_LOST: return "lost";
    case VYRE_ERR_IO: return "io";
    }
    return "internal";
}

/* The house wording is "what. Fix: how": the fix is the text after the last "Fix: " that
 * starts the message or follows a space or newline. Kept here, beside the record every
 * message is written into, so no layer above reads another's wording. */
const char *vyre_error_fix(const char *message, size_t *what_len) {
    const char *fix = NULL;
    for (const char *s = message ? strstr(message, "Fix: ") : NULL; s; s = strstr(s + 1, "Fix: "))
        if (s == message || s[-1] == ' ' || s[-1] == '\n') fix = s;
    if (what_len) {
        size_t n = fix ? (size_t)(fix - message) : (message ? strlen(message) : 0);
        while (fix && n > 0 && (message[n - 1] == ' ' || message[n - 1] == '\n')) n--;
        *what_len = n;
    }
    return fix ? fix + 5 : NULL;
}

void vyre_free(void *ptr) { free(ptr); }
