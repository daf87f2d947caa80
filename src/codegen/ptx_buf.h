/* ptx_buf.h — a growable NUL-terminated string buffer for the PTX emitter. An
 * allocation failure is sticky (oom = true) so callers check once at the end. */
#ifndef VYRE_PTX_BUF_H
#define VYRE_PTX_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "ir.h"

struct vyre_pbuf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    bool oom;
};

VYRE_INTERNAL void vyre_pbuf_free(struct vyre_pbuf *b);
VYRE_INTERNAL void vyre_pbuf_put(struct vyre_pbuf *b, const char *s, size_t n);
VYRE_INTERNAL void vyre_pbuf_puts(struct vyre_pbuf *b, const char *s);
VYRE_INTERNAL void vyre_pbuf_printf(struct vyre_pbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
VYRE_INTERNAL void vyre_pbuf_vprintf(struct vyre_pbuf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#endif
