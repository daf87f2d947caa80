/* text_lex.c — lexer of the text format: parentheses, atoms and `;` comments, with
 * 1-based line/column for every token, plus decoding of typed literals (integers
 * with range checks, hex/decimal floats rounded once, inf and raw-bit NaNs).
 * Input is untrusted bytes with an explicit length: NUL bytes and non-ASCII are
 * tokens of their own (VYRE_TK_BAD) that the parser reports, never a crash. */
#include "text_lex.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest numeric literal handed to strtod; longer ones are surely a mistake. */
#define LIT_MAX 1024

void vyre_lex_init(struct vyre_lex *lx, const char *text, size_t len) {
    lx->p = text;
    lx->end = text + len;
    lx->line_start = text;
    lx->line = 1;
}

static bool is_atom_byte(unsigned char c) {
    return c > 0x20 && c < 0x7f && c != '(' && c != ')' && c != ';';
}

void vyre_lex_next(struct vyre_lex *lx, struct vyre_tok *t) {
    const char *p = lx->p;
    for (;;) {
        if (p == lx->end) break;
        char c = *p;
        if (c == '\n') {
            p++;
            lx->line++;
            lx->line_start = p;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            p++;
        } else if (c == ';') { /* a comment may hold any byte up to the newline */
            while (p < lx->end && *p != '\n') p++;
        } else {
            break;
        }
    }
    t->s = p;
    t->line = lx->line;
    t->col = (size_t)(p - lx->line_start) + 1;
    if (p == lx->end) {
        t->kind = VYRE_TK_EOF;
        t->n = 0;
    } else if (*p == '(' || *p == ')') {
        t->kind = *p == '(' ? VYRE_TK_LP : VYRE_TK_RP;
        t->n = 1;
        p++;
    } else if (is_atom_byte((unsigned char)*p)) {
        t->kind = VYRE_TK_ATOM;
        while (p < lx->end && is_atom_byte((unsigned char)*p)) p++;
        t->n = (size_t)(p - t->s);
    } else {
        t->kind = VYRE_TK_BAD;
        t->n = 1;
        p++;
    }
    lx->p = p;
}

void vyre_tok_describe(const struct vyre_tok *t, char *out, size_t size) {
    switch (t->kind) {
    case VYRE_TK_EOF: snprintf(out, size, "end of input"); return;
    case VYRE_TK_LP: snprintf(out, size, "'('"); return;
    case VYRE_TK_RP: snprintf(out, size, "')'"); return;
    case VYRE_TK_BAD:
        snprintf(out, size, "byte 0x%02x (outside comments only printable ASCII is allowed)",
                 (unsigned)(unsigned char)t->s[0]);
        return;
    case VYRE_TK_ATOM:
        /* atoms are printable ASCII by construction; only the length needs a cap */
        if (t->n > 40) snprintf(out, size, "'%.40s...'", t->s);
        else snprintf(out, size, "'%.*s'", (int)t->n, t->s);
        return;
    }
    snprintf(out, size, "?");
}

bool vyre_tok_is(const struct vyre_tok *t, const char *word) {
    size_t n = strlen(word);
    return t->kind == VYRE_TK_ATOM && t->n == n && memcmp(t->s, word, n) == 0;
}

static bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_xdigit(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static unsigned xval(char c) {
    if (is_digit(c)) return (unsigned)(c - '0');
    if (c >= 'a' && c <= 'f') return (unsigned)(c - 'a' + 10);
    return (unsigned)(c - 'A' + 10);
}

bool vyre_lex_is_ident(const char *s, size_t n) {
    if (n == 0 || !is_alpha(s[0])) return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alpha(s[i]) && !is_digit(s[i])) return false;
    return true;
}

static bool span_is(const char *s, size_t n, const char *word) {
    size_t k = strlen(word);
    return n == k && memcmp(s, word, k) == 0;
}

static bool has_prefix(const char *s, size_t n, const char *word) {
    size_t k = strlen(word);
    return n >= k && memcmp(s, word, k) == 0;
}

bool vyre_lex_looks_literal(const char *s, size_t n) {
    if (n == 0) return false;
    if (span_is(s, n, "true") || span_is(s, n, "false")) return true;
    if (is_digit(s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.') return true;
    /* inff32 / nanf64 / nan:0x...: names can never look like this */
    return span_is(s, n, "inff32") || span_is(s, n, "inff64") || span_is(s, n, "nanf32") ||
           span_is(s, n, "nanf64") || has_prefix(s, n, "nan:");
}

static bool lit_fail(char *msg, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static bool lit_fail(char *msg, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- integers ---------------------------------------------------------------- */

static bool parse_int(const char *s, size_t n, enum vyre_type t, vyre_bits *bits, char *msg,
                      size_t msz) {
    static const char fix[] =
        "Fix: write a decimal or 0x-hex integer with an optional leading '-', "
        "e.g. 5u32, -3i32, 0xffu32";
    bool neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    uint64_t v = 0;
    bool hex = n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X');
    if (hex) i += 2;
    if (i == n)
        return lit_fail(msg, msz, "malformed %s literal: no digits. %s", vyre_type_name(t), fix);
    bool overflow = false;
    for (; i < n; i++) {
        char c = s[i];
        if (hex ? !is_xdigit(c) : !is_digit(c))
            return lit_fail(msg, msz, "malformed %s literal: unexpected character '%c'. %s",
                            vyre_type_name(t), c, fix);
        unsigned d = hex ? xval(c) : (unsigned)(c - '0');
        if (hex ? v > (UINT64_MAX >> 4) : v > (UINT64_MAX - d) / 10) overflow = true;
        v = hex ? (v << 4) | d : v * 10 + d;
    }
    uint64_t maxpos, maxneg; /* largest magnitude allowed for + and - */
    switch (t) {
    case VYRE_I32:
        maxpos = INT32_MAX;
        maxneg = UINT64_C(1) << 31;
        break;
    case VYRE_U32:
        maxpos = UINT32_MAX;
        maxneg = 0;
        break;
    case VYRE_I64:
        maxpos = INT64_MAX;
        maxneg = UINT64_C(1) << 63;
        break;
    default:
        maxpos = UINT64_MAX;
        maxneg = 0;
        break;
    }
    if (overflow || v > (neg ? maxneg : maxpos)) {
        if (maxneg == 0)
            return lit_fail(msg, msz,
                            "%s literal out of range (0 to %llu). Fix: use a value in "
                            "range or a wider type (u64)",
                            vyre_type_name(t), (unsigned long long)maxpos);
        return lit_fail(msg, msz,
                        "%s literal out of range (-%llu to %llu). Fix: use a value in "
                        "range or a wider type (i64)",
                        vyre_type_name(t), (unsigned long long)maxneg, (unsigned long long)maxpos);
    }
    uint64_t u = neg ? 0 - v : v;
    *bits = vyre_type_bits(t) == 32 ? (u & 0xffffffffu) : u;
    return true;
}

/* ---- floats --------------------------------------------------------------------- */

/* Checks the C99 float syntax we accept before strtod sees it, so that strtod's own
 * extras (leading blanks, "infinity", "nan(...)", a hex float without exponent) are
 * rejected with a clear message. */
static bool float_syntax_ok(const char *s, size_t n) {
    size_t i = 0, digits = 0;
    if (i < n && s[i] == '-') i++;
    if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        while (i < n && is_xdigit(s[i])) i++, digits++;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && is_xdigit(s[i])) i++, digits++;
        }
        if (digits == 0 || i == n || (s[i] != 'p' && s[i] != 'P')) return false;
        i++;
    } else {
        while (i < n && is_digit(s[i])) i++, digits++;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && is_digit(s[i])) i++, digits++;
        }
        if (digits == 0) return false;
        if (i == n) return true;
        if (s[i] != 'e' && s[i] != 'E') return false;
        i++;
    }
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i == n) return false;
    while (i < n && is_digit(s[i])) i++;
    return i == n;
}

/* strtof/strtod in the "C" locale whatever the host set (a Lua host may have
 * called os.setlocale), so '.' is always the decimal point. */
static bool c_strtod(const char *buf, bool f32, vyre_bits *bits, bool *overflow) {
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    locale_t old = c ? uselocale(c) : (locale_t)0;
    char *end = NULL;
    errno = 0;
    if (f32) {
        float f = strtof(buf, &end);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        *bits = u;
        *overflow = errno == ERANGE && isinf(f);
    } else {
        double d = strtod(buf, &end);
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        *bits = u;
        *overflow = errno == ERANGE && isinf(d);
    }
    if (c) {
        uselocale(old);
        freelocale(c);
    }
    return end && *end == '\0';
}

static bool parse_float(const char *s, size_t n, enum vyre_type t, vyre_bits *bits, char *msg,
                        size_t msz) {
    bool f32 = t == VYRE_F32;
    const char *tn = vyre_type_name(t);
    uint64_t sign = f32 ? UINT64_C(1) << 31 : UINT64_C(1) << 63;
    uint64_t inf = f32 ? 0x7f800000u : UINT64_C(0x7ff0000000000000);
    uint64_t mant = f32 ? 0x007fffffu : UINT64_C(0x000fffffffffffff);
    if (span_is(s, n, "inf") || span_is(s, n, "-inf")) {
        *bits = inf | (s[0] == '-' ? sign : 0);
        return true;
    }
    if (span_is(s, n, "nan")) { /* the canonical quiet NaN */
        *bits = f32 ? 0x7fc00000u : UINT64_C(0x7ff8000000000000);
        return true;
    }
    if (has_prefix(s, n, "nan:")) {
        size_t width = f32 ? 8 : 16, i = 4;
        uint64_t v = 0;
        if (!has_prefix(s + 4, n - 4, "0x") || n - 6 == 0 || n - 6 > width)
            return lit_fail(msg, msz,
                            "malformed NaN literal. Fix: write the raw bits as nan:0x "
                            "followed by 1 to %zu hex digits, e.g. %s",
                            width, f32 ? "nan:0x7fc00000f32" : "nan:0x7ff8000000000000f64");
        for (i = 6; i < n; i++) {
            if (!is_xdigit(s[i]))
                return lit_fail(msg, msz,
                                "malformed NaN literal: '%c' is not a hex digit. Fix: "
                                "write the raw bits in hex after nan:0x",
                                s[i]);
            v = (v << 4) | xval(s[i]);
        }
        if ((v & inf) != inf || (v & mant) == 0)
            return lit_fail(msg, msz,
                            "nan:0x%llx is not a NaN bit pattern of %s (exponent all "
                            "ones, mantissa nonzero). Fix: use inf%s for infinity or a NaN "
                            "pattern such as %s",
                            (unsigned long long)v, tn, tn,
                            f32 ? "nan:0x7fc00000" : "nan:0x7ff8000000000000");
        *bits = v;
        return true;
    }
    if (!float_syntax_ok(s, n))
        return lit_fail(msg, msz,
                        "malformed %s literal. Fix: write a decimal (1.5%s, -2e-3%s) "
                        "or a hex float with exponent (0x1.8p+0%s), or inf%s / nan%s",
                        tn, tn, tn, tn, tn, tn);
    if (n >= LIT_MAX)
        return lit_fail(msg, msz,
                        "%s literal longer than %d characters. Fix: write it as an exact "
                        "hex float (0x1.8p+0%s)",
                        tn, LIT_MAX, tn);
    char buf[LIT_MAX];
    memcpy(buf, s, n);
    buf[n] = '\0';
    bool overflow = false;
    if (!c_strtod(buf, f32, bits, &overflow))
        return lit_fail(msg, msz,
                        "malformed %s literal. Fix: write a decimal (1.5%s) or a hex "
                        "float (0x1.8p+0%s)",
                        tn, tn, tn);
    if (overflow)
        return lit_fail(msg, msz,
                        "%s literal out of range (it overflows to infinity). Fix: use a "
                        "smaller value, f64, or write %sinf%s for infinity",
                        tn, s[0] == '-' ? "-" : "", tn);
    return true;
}

bool vyre_lex_literal(const char *s, size_t n, enum vyre_type *type, vyre_bits *bits, char *msg,
                      size_t msg_size) {
    static const char *const suffix[] = {"i32", "u32", "i64", "u64", "f32", "f64"};
    static const enum vyre_type stype[] = {VYRE_I32, VYRE_U32, VYRE_I64,
                                           VYRE_U64, VYRE_F32, VYRE_F64};
    if (span_is(s, n, "true") || span_is(s, n, "false")) {
        *type = VYRE_BOOL;
        *bits = s[0] == 't';
        return true;
    }
    int k = -1;
    if (n > 3)
        for (int i = 0; i < 6; i++)
            if (memcmp(s + n - 3, suffix[i], 3) == 0) k = i;
    if (k < 0)
        return lit_fail(msg, msg_size,
                        "a literal needs a type suffix (i32 u32 i64 u64 f32 f64). "
                        "Fix: write e.g. 5u32, -3i32, 1.5f32, true");
    *type = stype[k];
    if (vyre_type_is_float(*type)) return parse_float(s, n - 3, *type, bits, msg, msg_size);
    return parse_int(s, n - 3, *type, bits, msg, msg_size);
}
