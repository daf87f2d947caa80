/* ptx_buf.c — the growable string buffer the PTX emitter writes into. Growth is
 * geometric; the first failed allocation marks the buffer and later writes are
 * ignored, so emission code needs no error check per line. */
#include "ptx_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vyre_pbuf_free(struct vyre_pbuf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Makes room for `extra` more bytes plus the terminating NUL. */
static bool reserve(struct vyre_pbuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *nd = realloc(b->data, cap);
    if (!nd) {
        b->oom = true;
        return false;
    }
    b->data = nd;
    b->cap = cap;
    return true;
}

void vyre_pbuf_put(struct vyre_pbuf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void vyre_pbuf_puts(struct vyre_pbuf *b, const char *s) { vyre_pbuf_put(b, s, strlen(s)); }

void vyre_pbuf_vprintf(struct vyre_pbuf *b, const char *fmt, va_list ap) {
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        vyre_pbuf_put(b, small, (size_t)n);
    } else if (reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void vyre_pbuf_printf(struct vyre_pbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vyre_pbuf_vprintf(b, fmt, ap);
    va_end(ap);
}
