/* text.h — private pieces shared by the canonical printer (text_print.c) and the
 * program hash (hash.c): one text writer that can grow a heap string, fill a
 * fixed caller buffer (truncating with "..."), or stream into a sink (the hash),
 * so the hash never needs the whole text in memory. */
#ifndef VYRE_TEXT_H
#define VYRE_TEXT_H

#include "ir.h"

enum vyre_tw_mode {
    VYRE_TW_GROW,  /* heap buffer grown with realloc */
    VYRE_TW_FIXED, /* caller buffer; overflow sets `truncated` */
    VYRE_TW_SINK   /* chunk buffer flushed to `sink` when full and at the end */
};

struct vyre_tw {
    enum vyre_tw_mode mode;
    char *buf;
    size_t len, cap;
    bool truncated; /* FIXED: text did not fit */
    bool oom;       /* GROW: realloc failed */
    bool bad;       /* a NULL node or an out-of-range enum was printed as a placeholder */
    void (*sink)(void *ctx, const char *s, size_t n);
    void *ctx;
};

/* Writes the canonical text of the whole program (ending in one newline). Never
 * fails on a malformed program: missing pieces print as "<null>"/"<bad>" and set
 * w->bad, so the hash of a half-built program is still defined. */
VYRE_INTERNAL void vyre_tw_program(struct vyre_tw *w, const vyre_program *p);
/* SINK mode: hands the buffered tail to the sink. */
VYRE_INTERNAL void vyre_tw_flush(struct vyre_tw *w);

#endif
