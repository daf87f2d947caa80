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

void vyre_free(void *ptr) { free(ptr); }
