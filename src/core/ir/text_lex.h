/* text_lex.h — private lexer of the text format (text_lex.c), used by the parser
 * (text_parse.c): tokens with 1-based line/column, atom classification, and
 * literal decoding with range checks. */
#ifndef VYRE_TEXT_LEX_H
#define VYRE_TEXT_LEX_H

#include "ir.h"

enum vyre_tk {
    VYRE_TK_EOF,
    VYRE_TK_LP,   /* ( */
    VYRE_TK_RP,   /* ) */
    VYRE_TK_ATOM, /* a run of printable ASCII other than ( ) ; */
    VYRE_TK_BAD   /* one byte that may not appear outside a comment */
};

struct vyre_tok {
    enum vyre_tk kind;
    const char *s; /* not NUL-terminated */
    size_t n;
    size_t line, col; /* 1-based */
};

struct vyre_lex {
    const char *p, *end, *line_start;
    size_t line;
};

VYRE_INTERNAL void vyre_lex_init(struct vyre_lex *lx, const char *text, size_t len);
/* Skips blanks and comments, then reads one token (EOF at the end, forever). */
VYRE_INTERNAL void vyre_lex_next(struct vyre_lex *lx, struct vyre_tok *t);
/* "'abc'", "')'", "end of input", "byte 0x00 ..." — safe to quote in messages. */
VYRE_INTERNAL void vyre_tok_describe(const struct vyre_tok *t, char *out, size_t size);
VYRE_INTERNAL bool vyre_tok_is(const struct vyre_tok *t, const char *word);
/* [A-Za-z_][A-Za-z0-9_]* (length is checked by the caller). */
VYRE_INTERNAL bool vyre_lex_is_ident(const char *s, size_t n);
/* Whether an atom should be read as a literal (a number, true/false, inf/nan forms)
 * rather than a name. */
VYRE_INTERNAL bool vyre_lex_looks_literal(const char *s, size_t n);
/* Decodes a literal atom. On failure returns false and writes the reason (ending in
 * a "Fix: ..." hint) into msg. */
VYRE_INTERNAL bool vyre_lex_literal(const char *s, size_t n, enum vyre_type *type, vyre_bits *bits,
                                    char *msg, size_t msg_size);

#endif
