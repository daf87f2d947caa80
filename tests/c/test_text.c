/* test_text.c — the canonical text format and the program hash: exact printer
 * layout, parse/print round trips over every construct, bit-exact float literals,
 * syntax errors with line and column, hash stability, and robustness against
 * mutated input (run under ASan/UBSan in CI). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "harness.h"
#include "ir.h"

/* ---- helpers ------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { /* xorshift64*: deterministic across runs */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static vyre_program *parse_ok(const char *text) {
    vyre_program *p = NULL;
    struct vyre_error err;
    enum vyre_status st = vyre_text_parse(text, strlen(text), &p, &err);
    if (st != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "parse failed: %s\n%s", err.message, text);
        return NULL;
    }
    return p;
}

static char *print_ok(const vyre_program *p) {
    char *out = NULL;
    size_t len = 0;
    CHECK_EQ_U64(vyre_text_print(p, &out, &len), VYRE_OK);
    if (out) CHECK_EQ_U64(len, strlen(out));
    return out;
}

/* parse(print(p)) == p structurally and print is a fixed point; returns the text. */
static char *round_trip(const vyre_program *p) {
    char *t1 = print_ok(p);
    if (!t1) return NULL;
    vyre_program *q = parse_ok(t1);
    CHECK(q && vyre_program_equal(p, q));
    if (q) {
        char *t2 = print_ok(q);
        CHECK(t2 && strcmp(t1, t2) == 0);
        CHECK_EQ_U64(vyre_program_hash(p), vyre_program_hash(q));
        vyre_free(t2);
        vyre_program_free(q);
    }
    return t1;
}

/* A canonical text must parse, print back byte for byte, and round trip. */
static void check_canonical(const char *text) {
    vyre_program *p = parse_ok(text);
    if (!p) return;
    char *t = round_trip(p);
    if (t && strcmp(t, text) != 0)
        harness_fail(__FILE__, __LINE__, "not canonical:\n--- expected\n%s--- printed\n%s", text,
                     t);
    harness_checks++;
    vyre_free(t);
    vyre_program_free(p);
}

static void check_syntax_error(const char *text, size_t len, uint32_t line, uint32_t col,
                               const char *needle) {
    vyre_program *p = (vyre_program *)1;
    struct vyre_error err;
    enum vyre_status st = vyre_text_parse(text, len, &p, &err);
    CHECK_EQ_U64(st, VYRE_ERR_SYNTAX);
    CHECK(p == NULL);
    CHECK_EQ_U64(err.status, VYRE_ERR_SYNTAX);
    if (err.line != line || err.column != col)
        harness_fail(__FILE__, __LINE__, "error at %u:%u, expected %u:%u: %s", err.line, err.column,
                     line, col, err.message);
    harness_checks++;
    CHECK_STR_CONTAINS(err.message, needle);
    CHECK_STR_CONTAINS(err.message, "Fix:");
    char where[48];
    snprintf(where, sizeof where, "line %u, column %u: ", line, col);
    CHECK(strncmp(err.message, where, strlen(where)) == 0);
    if (st == VYRE_OK) vyre_program_free(p);
}

static void syntax_error(const char *text, uint32_t line, uint32_t col, const char *needle) {
    check_syntax_error(text, strlen(text), line, col, needle);
}

/* ---- canonical layout ------------------------------------------------------------ */

static const char SAXPY[] = "(program saxpy (workgroup 256)\n"
                            "  (buffer x f32 read)\n"
                            "  (buffer y f32 read_write)\n"
                            "  (param a f32)\n"
                            "  (let i (gid x))\n"
                            "  (if (lt i (len y))\n"
                            "    (then (store y i (add (mul a (load x i)) (load y i))))))\n";

static const char HISTOGRAM[] = "(program histogram (workgroup 128)\n"
                                "  (buffer data u32 read)\n"
                                "  (buffer counts u32 read_write 256)\n"
                                "  (let i (gid x))\n"
                                "  (if (ge i (len data))\n"
                                "    (then (return)))\n"
                                "  (let bin (and (load data i) 255u32))\n"
                                "  (atomic add counts bin 1u32)\n"
                                "  (let old (atomic max counts 0u32 bin))\n"
                                "  (let prev (atomic cas counts 1u32 old 7u32))\n"
                                "  (set prev (atomic_free prev)))\n";

static const char REDUCE[] =
    "(program reduce (workgroup 64 2 3)\n"
    "  (buffer in f32 read)\n"
    "  (buffer out f32 write)\n"
    "  (shared tile f32 64)\n"
    "  (param n u32)\n"
    "  (let t (lid x))\n"
    "  (store tile t (select (lt (gid x) n) (load in (gid x)) 0x0p+0f32))\n"
    "  (barrier)\n"
    "  (for s 0u32 6u32 1u32\n"
    "    (let half (shr 32u32 s))\n"
    "    (if (lt t half)\n"
    "      (then (store tile t (add (load tile t) (load tile (add t half))))))\n"
    "    (barrier))\n"
    "  (if (eq t 0u32)\n"
    "    (then\n"
    "      (store out (wgid x) (load tile 0u32))\n"
    "      (return))\n"
    "    (else (barrier))))\n";

static const char LOOPS[] =
    "(program loops (workgroup 32 4)\n"
    "  (buffer o i64 write 16)\n"
    "  (param lo i32)\n"
    "  (param hi i32)\n"
    "  (let acc 0i64)\n"
    "  (for j lo hi 2i32\n"
    "    (if (gt j 100i32)\n"
    "      (then (break))\n"
    "      (else\n"
    "        (set acc (add acc (cast i64 j)))\n"
    "        (for k 0u64 3u64 1u64 (set acc (sub acc (bitcast i64 k)))))))\n"
    "  (for e 0u32 0u32 1u32)\n"
    "  (if (lnot (ne acc -9223372036854775808i64))\n"
    "    (then))\n"
    "  (if true\n"
    "    (then\n"
    "      (if false\n"
    "        (then (return)))))\n"
    "  (store o 0u32 acc))\n";

static const char EMPTY[] = "(program e (workgroup 1))\n";

static void test_canonical_texts(void) {
    check_canonical(SAXPY);
    check_canonical(REDUCE);
    check_canonical(LOOPS);
    check_canonical(EMPTY);
    /* (atomic_free prev) is not a form: histogram minus its last line is canonical */
    char hist[sizeof HISTOGRAM];
    memcpy(hist, HISTOGRAM, sizeof HISTOGRAM);
    char *cut = strstr(hist, "\n  (set prev");
    strcpy(cut, ")\n");
    check_canonical(hist);
    syntax_error(HISTOGRAM, 11, 14, "unknown expression form 'atomic_free'");
    check_canonical("(program wz (workgroup 1 1 2)\n  (param p bool))\n");
    check_canonical("(program wy (workgroup 8 8)\n  (buffer b bool read_write 3))\n");
}

/* Worklists (ARCHITECTURE.md §2): the declaration, len/load on one and push. */
static const char WORKLIST[] = "(program bfs (workgroup 64)\n"
                               "  (buffer level u32 read_write)\n"
                               "  (worklist frontier u32)\n"
                               "  (param depth u32)\n"
                               "  (let i (gid x))\n"
                               "  (if (lt i (len frontier))\n"
                               "    (then\n"
                               "      (let v (load frontier i))\n"
                               "      (store level v depth)\n"
                               "      (push frontier (add v 1u32)))))\n";

static void test_worklist_text(void) {
    check_canonical(WORKLIST);
    check_canonical("(program w (workgroup 1)\n  (worklist a f64)\n  (worklist b i32))\n");
    syntax_error("(program w (workgroup 1) (worklist a u32) (push a))", 1, 50,
                 "expected an expression");
    syntax_error("(program w (workgroup 1) (let x 1u32) (worklist a u32))", 1, 40,
                 "declaration 'worklist' after a statement");
}

/* The saxpy of the builder prints exactly the ARCHITECTURE.md §4 example. */
static void test_builder_saxpy(void) {
    vyre_program *p = vyre_program_new("saxpy", 256, 1, 1);
    vyre_ir_buffer(p, "x", VYRE_F32, VYRE_ACCESS_READ, 0);
    vyre_ir_buffer(p, "y", VYRE_F32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_param(p, "a", VYRE_F32);
    vyre_ir_push(p, &p->body, vyre_ir_let(p, "i", vyre_ir_builtin(p, VYRE_GID, 0)));
    struct vyre_stmt *s =
        vyre_ir_if(p, vyre_ir_binary(p, VYRE_OP_LT, vyre_ir_name(p, "i"), vyre_ir_len(p, "y")));
    struct vyre_expr *ax = vyre_ir_binary(p, VYRE_OP_MUL, vyre_ir_name(p, "a"),
                                          vyre_ir_load(p, "x", vyre_ir_name(p, "i")));
    struct vyre_expr *sum =
        vyre_ir_binary(p, VYRE_OP_ADD, ax, vyre_ir_load(p, "y", vyre_ir_name(p, "i")));
    vyre_ir_push(p, &s->then_, vyre_ir_store(p, "y", vyre_ir_name(p, "i"), sum));
    vyre_ir_push(p, &p->body, s);
    char *t = print_ok(p);
    CHECK(t && strcmp(t, SAXPY) == 0);
    vyre_program *q = parse_ok(SAXPY);
    CHECK(vyre_program_equal(p, q));
    char hex[17];
    vyre_program_hash_hex(p, hex);
    CHECK_EQ_U64(strlen(hex), 16);
    char want[17];
    snprintf(want, sizeof want, "%016" PRIx64, (uint64_t)XXH3_64bits(t, strlen(t)));
    CHECK(strcmp(hex, want) == 0);
    CHECK_EQ_U64(vyre_program_hash(p), XXH3_64bits(SAXPY, strlen(SAXPY)));

    char buf[128];
    CHECK(strcmp(vyre_stmt_text(s, buf, sizeof buf), "(if (lt i (len y)) ...)") == 0);
    CHECK(strcmp(vyre_expr_text(sum, buf, sizeof buf), "(add (mul a (load x i)) (load y i))") == 0);
    CHECK(strcmp(vyre_expr_text(sum, buf, 12), "(add (mu...") == 0);
    CHECK(strcmp(vyre_expr_text(sum, buf, 4), "...") == 0);
    CHECK(strcmp(vyre_expr_text(sum, buf, 2), "(") == 0);
    CHECK(strcmp(vyre_stmt_text(s->then_.items[0], buf, sizeof buf),
                 "(store y i (add (mul a (load x i)) (load y i)))") == 0);
    CHECK(strcmp(vyre_stmt_text(p->body.items[0], buf, sizeof buf), "(let i (gid x))") == 0);
    vyre_free(t);
    vyre_program_free(q);
    vyre_program_free(p);
}

/* ---- every construct through the builder ------------------------------------------ */

static struct vyre_expr *nm(vyre_program *p, const char *n) { return vyre_ir_name(p, n); }

static void test_every_op(void) {
    vyre_program *p = vyre_program_new("ops", 64, 1, 1);
    vyre_ir_buffer(p, "b", VYRE_U32, VYRE_ACCESS_READ_WRITE, 0);
    vyre_ir_shared(p, "sh", VYRE_I32, 32);
    vyre_ir_param(p, "u", VYRE_U32);
    char name[32];
    for (int op = 0; op < VYRE_OP_COUNT; op++) {
        struct vyre_expr *e =
            vyre_op_is_unary((enum vyre_op)op)
                ? vyre_ir_unary(p, (enum vyre_op)op, nm(p, "u"))
                : vyre_ir_binary(p, (enum vyre_op)op, nm(p, "u"), vyre_ir_lit(p, VYRE_U32, 3));
        snprintf(name, sizeof name, "v_%s", vyre_op_name((enum vyre_op)op));
        vyre_ir_push(p, &p->body, vyre_ir_let(p, name, e));
    }
    for (int b = 0; b < VYRE_BUILTIN_COUNT; b++)
        for (unsigned ax = 0; ax < 3; ax++) {
            snprintf(name, sizeof name, "b%d%u", b, ax);
            vyre_ir_push(p, &p->body,
                         vyre_ir_let(p, name, vyre_ir_builtin(p, (enum vyre_builtin)b, ax)));
        }
    for (int t = 0; t < VYRE_TYPE_COUNT; t++) {
        snprintf(name, sizeof name, "c%d", t);
        vyre_ir_push(p, &p->body,
                     vyre_ir_let(p, name, vyre_ir_cast(p, (enum vyre_type)t, nm(p, "u"))));
        snprintf(name, sizeof name, "bc%d", t);
        vyre_ir_push(p, &p->body,
                     vyre_ir_let(p, name, vyre_ir_bitcast(p, (enum vyre_type)t, nm(p, "u"))));
    }
    vyre_ir_push(p, &p->body,
                 vyre_ir_let(p, "f", vyre_ir_fma(p, nm(p, "a"), nm(p, "b"), nm(p, "c"))));
    vyre_ir_push(p, &p->body,
                 vyre_ir_let(p, "s", vyre_ir_select(p, nm(p, "a"), nm(p, "b"), nm(p, "c"))));
    for (int a = 0; a < VYRE_ATOMIC_COUNT; a++) {
        bool cas = a == VYRE_ATOMIC_CAS;
        snprintf(name, sizeof name, "at%d", a);
        vyre_ir_push(p, &p->body,
                     vyre_ir_atomic(p, (a & 1) ? name : NULL, (enum vyre_atomic_op)a, "sh",
                                    nm(p, "u"), cas ? nm(p, "u") : NULL, nm(p, "u")));
    }
    vyre_ir_push(p, &p->body,
                 vyre_ir_atomic(p, NULL, VYRE_ATOMIC_CAS, "b", nm(p, "u"), nm(p, "u"), nm(p, "u")));
    struct vyre_stmt *f =
        vyre_ir_for(p, "k", vyre_ir_lit(p, VYRE_I64, (vyre_bits)-5), nm(p, "u"), NULL);
    vyre_ir_push(p, &f->then_, vyre_ir_simple(p, VYRE_ST_BREAK));
    vyre_ir_push(p, &f->then_, vyre_ir_simple(p, VYRE_ST_BARRIER));
    vyre_ir_push(p, &p->body, f);
    char *t = round_trip(p);
    CHECK_STR_CONTAINS(t, "  (let v_popcount (popcount u))\n");
    CHECK_STR_CONTAINS(t, "  (let v_mulhi (mulhi u 3u32))\n");
    CHECK_STR_CONTAINS(t, "  (let b42 (ngroups z))\n");
    CHECK_STR_CONTAINS(t, "  (let bc5 (bitcast f32 u))\n");
    CHECK_STR_CONTAINS(t, "  (let f (fma a b c))\n  (let s (select a b c))\n");
    CHECK_STR_CONTAINS(t, "  (atomic add sh u u)\n  (let at1 (atomic sub sh u u))\n");
    CHECK_STR_CONTAINS(t, "  (let at7 (atomic exchange sh u u))\n  (atomic cas sh u u u)\n");
    CHECK_STR_CONTAINS(t, "  (for k -5i64 u 1i64\n    (break)\n    (barrier)))\n");
    CHECK_STR_CONTAINS(t, "  (shared sh i32 32)\n");
    vyre_free(t);
    vyre_program_free(p);
}

/* ---- literals --------------------------------------------------------------------- */

static char *lit_text(enum vyre_type t, vyre_bits bits, char *buf, size_t size) {
    vyre_program *p = vyre_program_new("l", 1, 1, 1);
    struct vyre_expr *e = vyre_ir_lit(p, t, bits);
    vyre_expr_text(e, buf, size);
    vyre_program_free(p);
    return buf;
}

/* Literal text -> parse -> same type and bits. */
static bool lit_parse(const char *lit, enum vyre_type *t, vyre_bits *bits) {
    char text[1400];
    snprintf(text, sizeof text, "(program l (workgroup 1) (let v %s))", lit);
    vyre_program *p = NULL;
    struct vyre_error err;
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK) return false;
    struct vyre_expr *e = p->body.items[0]->value;
    *t = e->type;
    *bits = e->u.lit.bits;
    vyre_program_free(p);
    return true;
}

static void check_lit(enum vyre_type t, vyre_bits bits, const char *want) {
    char buf[96];
    lit_text(t, bits, buf, sizeof buf);
    if (want && strcmp(buf, want) != 0)
        harness_fail(__FILE__, __LINE__, "literal %s printed as %s, expected %s", vyre_type_name(t),
                     buf, want);
    harness_checks++;
    enum vyre_type t2 = VYRE_VOID;
    vyre_bits b2 = 0;
    CHECK(lit_parse(buf, &t2, &b2));
    if (t2 != t || b2 != bits)
        harness_fail(__FILE__, __LINE__, "%s reparsed to type %d bits 0x%" PRIx64, buf, t2, b2);
    harness_checks++;
}

static void test_literal_edges(void) {
    check_lit(VYRE_BOOL, 1, "true");
    check_lit(VYRE_BOOL, 0, "false");
    check_lit(VYRE_I32, 0x80000000u, "-2147483648i32");
    check_lit(VYRE_I32, 0x7fffffffu, "2147483647i32");
    check_lit(VYRE_U32, 0xffffffffu, "4294967295u32");
    check_lit(VYRE_I64, UINT64_C(1) << 63, "-9223372036854775808i64");
    check_lit(VYRE_U64, UINT64_MAX, "18446744073709551615u64");
    check_lit(VYRE_F32, 0x3fc00000u, "0x1.8p+0f32");
    check_lit(VYRE_F32, 0x00000000u, "0x0p+0f32");
    check_lit(VYRE_F32, 0x80000000u, "-0x0p+0f32");
    check_lit(VYRE_F32, 0x00000001u, "0x1p-149f32");
    check_lit(VYRE_F32, 0x007fffffu, "0x1.fffffcp-127f32");
    check_lit(VYRE_F32, 0x00800000u, "0x1p-126f32");
    check_lit(VYRE_F32, 0x7f7fffffu, "0x1.fffffep+127f32");
    check_lit(VYRE_F32, 0x7f800000u, "inff32");
    check_lit(VYRE_F32, 0xff800000u, "-inff32");
    check_lit(VYRE_F32, 0x7fc00000u, "nan:0x7fc00000f32");
    check_lit(VYRE_F32, 0x7f800001u, "nan:0x7f800001f32");
    check_lit(VYRE_F32, 0xffc00123u, "nan:0xffc00123f32");
    check_lit(VYRE_F64, UINT64_C(0x3ff8000000000000), "0x1.8p+0f64");
    check_lit(VYRE_F64, UINT64_C(0x8000000000000000), "-0x0p+0f64");
    check_lit(VYRE_F64, 1, "0x1p-1074f64");
    check_lit(VYRE_F64, UINT64_C(0x000fffffffffffff), "0x1.ffffffffffffep-1023f64");
    check_lit(VYRE_F64, UINT64_C(0x7fefffffffffffff), "0x1.fffffffffffffp+1023f64");
    check_lit(VYRE_F64, UINT64_C(0xfff0000000000000), "-inff64");
    check_lit(VYRE_F64, UINT64_C(0x7ff0000000000001), "nan:0x7ff0000000000001f64");
    check_lit(VYRE_F64, UINT64_C(0xfff8000000000000), "nan:0xfff8000000000000f64");

    /* random bit patterns: exact round trip; normal values print as glibc's %a */
    for (int i = 0; i < 20000; i++) {
        uint64_t r = rnd();
        char buf[96], ref[96];
        check_lit(VYRE_F32, r & 0xffffffffu, NULL);
        check_lit(VYRE_F64, r, NULL);
        check_lit(VYRE_I32, r >> 32, NULL);
        check_lit(VYRE_I64, r, NULL);
        uint32_t u = (uint32_t)r;
        float f;
        memcpy(&f, &u, 4);
        if (isnormal(f)) {
            snprintf(ref, sizeof ref, "%af32", (double)f);
            lit_text(VYRE_F32, u, buf, sizeof buf);
            if (strcmp(ref, buf) != 0) harness_fail(__FILE__, __LINE__, "%s != %s", buf, ref);
        }
        double d;
        memcpy(&d, &r, 8);
        if (isnormal(d)) {
            snprintf(ref, sizeof ref, "%af64", d);
            lit_text(VYRE_F64, r, buf, sizeof buf);
            if (strcmp(ref, buf) != 0) harness_fail(__FILE__, __LINE__, "%s != %s", buf, ref);
        }
    }

    /* the parser's extra spellings */
    struct {
        const char *text;
        enum vyre_type t;
        vyre_bits bits;
    } extra[] = {
        {"1.5f32", VYRE_F32, 0x3fc00000u},
        {"0.1f32", VYRE_F32, 0x3dcccccdu},
        {"1e-3f64", VYRE_F64, UINT64_C(0x3f50624dd2f1a9fc)},
        {"-2.5E+1f64", VYRE_F64, UINT64_C(0xc039000000000000)},
        {"3f32", VYRE_F32, 0x40400000u},
        {".5f64", VYRE_F64, UINT64_C(0x3fe0000000000000)},
        {"nanf32", VYRE_F32, 0x7fc00000u},
        {"nanf64", VYRE_F64, UINT64_C(0x7ff8000000000000)},
        {"nan:0x1ff80001f32", VYRE_F32, 0},
        {"0xffu32", VYRE_U32, 255},
        {"-0x80000000i32", VYRE_I32, 0x80000000u},
        {"0XFFFFFFFFFFFFFFFFu64", VYRE_U64, UINT64_MAX},
        {"007i64", VYRE_I64, 7},
        {"-0u32", VYRE_U32, 0},
        {"1e-50f32", VYRE_F32, 0},      /* underflow rounds to zero */
        {"0x1p-150f32", VYRE_F32, 0},   /* ties to even: half the smallest subnormal */
        {"0x1.8p-149f32", VYRE_F32, 2}, /* rounds up to even */
        /* needs one rounding from decimal: via double it would round twice */
        {"1.00000005960464477539062500000001f32", VYRE_F32, 0x3f800001u},
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        enum vyre_type t;
        vyre_bits b = 0;
        bool ok = lit_parse(extra[i].text, &t, &b);
        if (extra[i].bits == 0 && strncmp(extra[i].text, "nan:", 4) == 0) {
            CHECK(!ok); /* exponent not all ones: not a NaN */
            continue;
        }
        if (!ok || t != extra[i].t || b != extra[i].bits)
            harness_fail(__FILE__, __LINE__, "%s -> ok=%d type %d bits 0x%" PRIx64, extra[i].text,
                         ok, t, b);
        harness_checks++;
    }
}

static void test_literal_errors(void) {
    struct {
        const char *lit;
        const char *needle;
    } bad[] = {
        {"5", "type suffix"},
        {"5u16", "type suffix"},
        {"4294967296u32", "out of range"},
        {"-1u32", "out of range"},
        {"2147483648i32", "out of range"},
        {"-2147483649i32", "out of range"},
        {"18446744073709551616u64", "out of range"},
        {"99999999999999999999999999i64", "out of range"},
        {"9223372036854775808i64", "out of range"},
        {"1.5u32", "malformed u32"},
        {"0xu32", "malformed"},
        {"1e39f32", "out of range"},
        {"-1e400f64", "out of range"},
        {"0x1.8f32", "malformed f32"},
        {"1.5.5f32", "malformed f32"},
        {"1e+f64", "malformed f64"},
        {"-nanf32", "malformed f32"},
        {"nan:0x7f800000f32", "not a NaN"},
        {"nan:0x123456789f32", "malformed NaN"},
        {"nan:0xzzf64", "not a hex digit"},
        {"--1i32", "malformed i32"},
        {"+1i32", "malformed i32"},
        {"1_000u32", "malformed u32"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "(program l (workgroup 1)\n  (let v %s))", bad[i].lit);
        check_syntax_error(text, strlen(text), 2, 10, bad[i].needle);
    }
}

/* ---- syntax errors ------------------------------------------------------------------- */

static void test_syntax_errors(void) {
    syntax_error("", 1, 1, "empty input");
    syntax_error("  ; only a comment\n\n", 3, 1, "empty input");
    syntax_error("(prgram p (workgroup 1))", 1, 1, "expected (program ...)");
    syntax_error("(program p (workgroup 1))\n(program q (workgroup 1))", 2, 1, "end of input");
    syntax_error("(program p (workgroup 1)", 1, 25, "found end of input");
    syntax_error("(program p (workgroup 1)\n  (let i (add 1u32 (neg 2u32))", 2, 31,
                 "')' closing (let NAME VALUE), found end of input");
    syntax_error("(program p (workgroup 1)))", 1, 26, "end of input after the program");
    syntax_error("(program 9p (workgroup 1))", 1, 10, "a program name");
    syntax_error("(program p)", 1, 11, "(workgroup X [Y [Z]])");
    syntax_error("(program p (workgroup))", 1, 22, "a workgroup size");
    syntax_error("(program p (workgroup 1 2 3 4))", 1, 29, "')' closing (workgroup");
    syntax_error("(program p (workgroup 99999999999))", 1, 23, "plain decimal");
    syntax_error("(program p (workgroup 1)\n  (buffer x f33 read))", 2, 13,
                 "expected a type name (bool i32 u32 i64 u64 f32 f64), found 'f33'");
    syntax_error("(program p (workgroup 1)\n  (buffer x f32 readonly))", 2, 17, "access mode");
    syntax_error("(program p (workgroup 1)\n  (buffer x f32 read -1))", 2, 22, "element count");
    syntax_error("(program p (workgroup 1)\n  (shared s f32))", 2, 16, "element count");
    syntax_error("(program p (workgroup 1)\n  (param a f32 read))", 2, 16, "')' closing (param");
    syntax_error("(program p (workgroup 1)\n  (let i 0u32)\n  (param a f32))", 3, 4,
                 "declarations at the top");
    syntax_error("(program p (workgroup 1)\n  (let i (gid w)))", 2, 15, "axis (x y z)");
    syntax_error("(program p (workgroup 1)\n  (let i (add 1u32)))", 2, 19,
                 "expected an expression, found ')'");
    syntax_error("(program p (workgroup 1)\n  (let i (neg 1u32 2u32)))", 2, 20,
                 "')' closing (neg A)");
    syntax_error("(program p (workgroup 1)\n  (let i (frob 1u32)))", 2, 11,
                 "unknown expression form 'frob'");
    syntax_error("(program p (workgroup 1)\n  (frob 1u32))", 2, 4, "expected a statement");
    syntax_error("(program p (workgroup 1)\n  (let i (store b 1u32 2u32)))", 2, 11,
                 "statement 'store'");
    syntax_error("(program p (workgroup 1)\n  (store b 0u32 (atomic add b 0u32 1u32)))", 2, 18,
                 "an atomic is a statement");
    syntax_error("(program p (workgroup 1)\n  (atomic mul b 0u32 1u32))", 2, 11,
                 "atomic operation");
    syntax_error("(program p (workgroup 1)\n  (atomic cas b 0u32 1u32))", 2, 26,
                 "expected an expression");
    syntax_error("(program p (workgroup 1)\n  (if true (store b 0u32 1u32)))", 2, 12,
                 "expected (then ...)");
    syntax_error("(program p (workgroup 1)\n  (if true (then) (else) (else)))", 2, 26,
                 "')' closing (if");
    syntax_error("(program p (workgroup 1)\n  (then (return)))", 2, 4, "only allowed inside");
    syntax_error("(program p (workgroup 1)\n  (for i n 10u32 (break)))", 2, 18, "literal FROM");
    syntax_error("(program p (workgroup 1)\n  (for i 0u32))", 2, 14, "expected an expression");
    syntax_error("(program p (workgroup 1)\n  (break 1))", 2, 10, "')' closing (break)");
    syntax_error("(program p (workgroup 1)\n  (let 1x 0u32))", 2, 8, "a variable name");
    syntax_error("(program p (workgroup 1)\n  (let i @))", 2, 10, "expected an expression");
    syntax_error("(program p (workgroup 1)\n  (let i (cast f16 1u32)))", 2, 16, "type name");
    syntax_error("(program p (workgroup 1)\n  (let i (load)))", 2, 15, "a buffer name");
    syntax_error("(program p (workgroup 1)\n  (let i ((add) 1u32)))", 2, 11,
                 "operator name after '('");
    syntax_error("(program p (workgroup 1)\n  (let i (len b c)))", 2, 17, "')' closing (len BUF)");
    syntax_error("(program p (workgroup 1)\n  (if true (then (return) 5u32)))", 2, 27,
                 "a statement or ')'");
    syntax_error("(program p (workgroup 1)\r\n\t(let i 0u32) x)", 2, 15, "a declaration");
    char longname[200];
    snprintf(longname, sizeof longname, "(program p (workgroup 1)\n  (let %065d 0u32))", 0);
    longname[32] = 'a'; /* make it an identifier of 65 characters */
    syntax_error(longname, 2, 8, "longer than 64");
    /* 64 characters is fine */
    check_canonical("(program p (workgroup 1)\n  (let "
                    "a123456789012345678901234567890123456789012345678901234567890123 0u32))\n");

    /* bytes that may not appear: NUL inside len, invalid UTF-8, control characters */
    static const char nul[] = "(program p (workgroup 1)\n  (let i\0 0u32))";
    check_syntax_error(nul, sizeof nul - 1, 2, 9, "byte 0x00");
    syntax_error("(program p (workgroup 1)\n  (let \xc3\xa9 0u32))", 2, 8, "byte 0xc3");
    syntax_error("(program p (workgroup 1)\n  (let i\x01 0u32))", 2, 9, "byte 0x01");
    /* but anything goes inside a comment */
    static const char cmt[] = "; caf\xc3\xa9 \xff\0\x01\n(program p (workgroup 1)) ; end \x80";
    vyre_program *p = NULL;
    CHECK_EQ_U64(vyre_text_parse(cmt, sizeof cmt - 1, &p, NULL), VYRE_OK);
    vyre_program_free(p);

    /* argument errors */
    struct vyre_error err;
    CHECK_EQ_U64(vyre_text_parse("x", 1, NULL, &err), VYRE_ERR_ARG);
    CHECK_EQ_U64(vyre_text_parse(NULL, 3, &p, &err), VYRE_ERR_ARG);
    CHECK_EQ_U64(vyre_text_parse(NULL, 0, &p, &err), VYRE_ERR_SYNTAX);
    CHECK_STR_CONTAINS(err.message, "empty input");
    /* the length bounds the text: nothing past it is read */
    CHECK_EQ_U64(vyre_text_parse("(program p (workgroup 1))garbage", 25, &p, NULL), VYRE_OK);
    vyre_program_free(p);
}

/* ---- accepted extras and structure ------------------------------------------------------ */

static void test_extras(void) {
    /* step omitted == step 1 of FROM's type; comments and free layout are fine */
    vyre_program *a = parse_ok("(program f (workgroup 4 1 1) ; size\n"
                               "(buffer b u32 read_write 0)(for i 0u32 (len b) (store b i i)"
                               "(barrier)) (for j -3i64 9i64))");
    vyre_program *b = parse_ok("(program f (workgroup 4)\n  (buffer b u32 read_write)\n"
                               "  (for i 0u32 (len b) 1u32\n    (store b i i)\n    (barrier))\n"
                               "  (for j -3i64 9i64 1i64))\n");
    CHECK(a && b && vyre_program_equal(a, b));
    CHECK_EQ_U64(vyre_program_hash(a), vyre_program_hash(b));
    CHECK(a && a->body.items[1]->step->kind == VYRE_EX_LIT &&
          a->body.items[1]->step->type == VYRE_I64 && a->body.items[1]->step->u.lit.bits == 1);
    vyre_program_free(a);
    vyre_program_free(b);
    /* a let-bound atomic is one ATOMIC statement carrying the name */
    a = parse_ok("(program h (workgroup 1) (buffer c u32 write) (let o (atomic xor c 0u32 1u32)))");
    CHECK(a && a->body.count == 1 && a->body.items[0]->kind == VYRE_ST_ATOMIC &&
          strcmp(a->body.items[0]->name, "o") == 0 && a->body.items[0]->atomic == VYRE_ATOMIC_XOR);
    vyre_program_free(a);
    /* an empty else is dropped by the printer, still equal */
    a = parse_ok("(program h (workgroup 1) (if true (then (return)) (else)))");
    char *t = round_trip(a);
    CHECK(t && strcmp(t, "(program h (workgroup 1)\n  (if true\n    (then (return))))\n") == 0);
    vyre_free(t);
    vyre_program_free(a);
}

/* ---- hash ---------------------------------------------------------------------------------- */

static void test_hash(void) {
    vyre_program *a = parse_ok(SAXPY), *b = parse_ok(REDUCE), *c = parse_ok(LOOPS);
    uint64_t ha = vyre_program_hash(a);
    CHECK_EQ_U64(vyre_program_hash(a), ha);
    CHECK(ha != vyre_program_hash(b) && ha != vyre_program_hash(c) &&
          vyre_program_hash(b) != vyre_program_hash(c));
    /* a one-bit literal difference changes the hash */
    vyre_program *d = parse_ok("(program p (workgroup 1) (let v 0x0p+0f32))");
    vyre_program *e = parse_ok("(program p (workgroup 1) (let v -0x0p+0f32))");
    CHECK(vyre_program_hash(d) != vyre_program_hash(e));
    CHECK(!vyre_program_equal(d, e));
    char hex[17];
    vyre_program_hash_hex(a, hex);
    char want[17];
    snprintf(want, sizeof want, "%016" PRIx64, ha);
    CHECK(strcmp(hex, want) == 0);
    /* long program: streamed hashing (several chunks) matches the one-shot hash */
    vyre_program *big = vyre_program_new("big", 1, 1, 1);
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "v%d", i);
        vyre_ir_push(big, &big->body, vyre_ir_let(big, name, vyre_ir_lit(big, VYRE_F64, rnd())));
    }
    char *t = round_trip(big);
    CHECK(t && strlen(t) > 60000);
    CHECK_EQ_U64(vyre_program_hash(big), XXH3_64bits(t, strlen(t)));
    vyre_free(t);
    vyre_program_free(big);
    vyre_program_free(a);
    vyre_program_free(b);
    vyre_program_free(c);
    vyre_program_free(d);
    vyre_program_free(e);
}

/* ---- depth and robustness ------------------------------------------------------------------ */

static void test_depth(void) {
    size_t n = 100000, cap = n * 6 + 100;
    char *text = malloc(cap);
    static const int depths[] = {200, 600, 100000};
    for (size_t di = 0; di < 3; di++) {
        int levels = depths[di];
        size_t k = (size_t)sprintf(text, "(program d (workgroup 1) (let v ");
        for (int i = 0; i < levels; i++) k += (size_t)sprintf(text + k, "(neg ");
        k += (size_t)sprintf(text + k, "1i32");
        for (int i = 0; i < levels; i++) text[k++] = ')';
        k += (size_t)sprintf(text + k, "))");
        vyre_program *p = NULL;
        struct vyre_error err;
        enum vyre_status st = vyre_text_parse(text, k, &p, &err);
        if (levels == 200) {
            CHECK_EQ_U64(st, VYRE_OK);
            char *t = round_trip(p);
            vyre_free(t);
        } else {
            CHECK_EQ_U64(st, VYRE_ERR_SYNTAX);
            CHECK_STR_CONTAINS(err.message, "nesting deeper than 320");
            CHECK_EQ_U64(err.line, 1);
        }
        vyre_program_free(p);
    }
    /* deep statement nesting, and a flood of '(' */
    size_t k = (size_t)sprintf(text, "(program d (workgroup 1) ");
    for (int i = 0; i < 5000; i++) k += (size_t)sprintf(text + k, "(if true (then ");
    vyre_program *p = NULL;
    CHECK_EQ_U64(vyre_text_parse(text, k, &p, NULL), VYRE_ERR_SYNTAX);
    memset(text, '(', cap);
    CHECK_EQ_U64(vyre_text_parse(text, cap, &p, NULL), VYRE_ERR_SYNTAX);
    free(text);
}

static void mutate_and_parse(const char *seed, int rounds) {
    static const char pool[] = "()() ;\n\0\xff"
                               "0123456789abcxyz-._:pe"
                               "u32i64f32f64";
    size_t slen = strlen(seed);
    char *buf = malloc(slen * 2 + 64);
    int ok = 0, syntax = 0;
    for (int r = 0; r < rounds; r++) {
        memcpy(buf, seed, slen);
        size_t len = slen;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t pos = len ? (size_t)(rnd() % len) : 0;
            switch (rnd() % 5) {
            case 0: /* replace a byte */
                if (len) buf[pos] = (rnd() & 1) ? (char)rnd() : pool[rnd() % (sizeof pool - 1)];
                break;
            case 1: /* insert */
                if (len < slen * 2 + 32) {
                    memmove(buf + pos + 1, buf + pos, len - pos);
                    buf[pos] = pool[rnd() % (sizeof pool - 1)];
                    len++;
                }
                break;
            case 2: /* delete */
                if (len) {
                    memmove(buf + pos, buf + pos + 1, len - pos - 1);
                    len--;
                }
                break;
            case 3: /* truncate */ len = pos; break;
            default: /* duplicate a span */
                if (len && len < slen) {
                    size_t span = (size_t)(rnd() % 16);
                    if (span > len - pos) span = len - pos;
                    memmove(buf + pos + span, buf + pos, len - pos);
                    len += span;
                }
                break;
            }
        }
        vyre_program *p = NULL;
        struct vyre_error err;
        enum vyre_status st = vyre_text_parse(buf, len, &p, &err);
        if (st == VYRE_OK) {
            ok++;
            char *t = round_trip(p);
            vyre_free(t);
            vyre_program_free(p);
        } else {
            syntax++;
            if (st != VYRE_ERR_SYNTAX || err.line == 0 || err.column == 0 ||
                !strstr(err.message, "Fix:"))
                harness_fail(__FILE__, __LINE__, "status %d at %u:%u: %s", st, err.line, err.column,
                             err.message);
            if (p) harness_fail(__FILE__, __LINE__, "program returned with an error");
        }
    }
    CHECK(ok + syntax == rounds);
    CHECK(syntax > 0);
    free(buf);
}

static void test_mutations(void) {
    mutate_and_parse(SAXPY, 1500);
    mutate_and_parse(REDUCE, 1500);
    mutate_and_parse(LOOPS, 1500);
    /* purely random bytes */
    char junk[256];
    for (int r = 0; r < 1000; r++) {
        size_t len = (size_t)(rnd() % sizeof junk);
        for (size_t i = 0; i < len; i++) junk[i] = (char)rnd();
        vyre_program *p = NULL;
        CHECK_EQ_U64(vyre_text_parse(junk, len, &p, NULL), VYRE_ERR_SYNTAX);
    }
}

/* A program that was never finished prints no canonical text, but still hashes. */
static void test_broken_program(void) {
    vyre_program *p = vyre_program_new("broken", 1, 1, 1);
    vyre_ir_push(p, &p->body, vyre_ir_let(p, "x", NULL));
    char *out = (char *)1;
    CHECK_EQ_U64(vyre_text_print(p, &out, NULL), VYRE_ERR_ARG);
    CHECK(out == NULL);
    CHECK(vyre_program_hash(p) != 0);
    char buf[64];
    CHECK(strcmp(vyre_stmt_text(p->body.items[0], buf, sizeof buf), "(let x <null>)") == 0);
    CHECK(strcmp(vyre_expr_text(NULL, buf, sizeof buf), "<null>") == 0);
    CHECK_EQ_U64(vyre_text_print(NULL, &out, NULL), VYRE_ERR_ARG);
    vyre_program_free(p);
}

/* Programs of the random generator round trip exactly (valid ones always; the
 * deliberately invalid ones whenever they still print). */
static void test_generated(void) {
    int tried = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        struct vyre_gen_options opt = {.max_stmts = 10,
                                       .max_depth = 5,
                                       .allow_barriers = seed % 2 == 0,
                                       .allow_approx = seed % 3 == 0,
                                       .allow_invalid = seed % 5 == 0};
        vyre_program *p = vyre_gen_random(seed, &opt);
        CHECK(p != NULL);
        if (!p) continue;
        char *t = NULL;
        if (vyre_text_print(p, &t, NULL) == VYRE_OK) {
            vyre_program *q = NULL;
            struct vyre_error err;
            enum vyre_status st = vyre_text_parse(t, strlen(t), &q, &err);
            if (!opt.allow_invalid || st == VYRE_OK) {
                tried++;
                if (st != VYRE_OK)
                    harness_fail(__FILE__, __LINE__, "seed %" PRIu64 ": %s\n%s", seed, err.message,
                                 t);
                CHECK(q && vyre_program_equal(p, q));
                vyre_free(round_trip(p));
            }
            vyre_program_free(q);
        } else {
            CHECK(opt.allow_invalid);
        }
        vyre_free(t);
        vyre_program_free(p);
    }
    CHECK(tried >= 240);
}

/* vyre_program_copy gives the program the text parses to: equal, the same text and
 * hash, unvalidated, and valid exactly when the original is; for grid and optimiser
 * shapes too (it replaced print-and-parse copies in backend.c, mega.c, grid_launch.c,
 * the optimiser and lmega.c). */
static void test_copy(void) {
    for (uint64_t seed = 1; seed <= 300; seed++) {
        struct vyre_gen_options opt = {.max_stmts = 10,
                                       .max_depth = 5,
                                       .allow_barriers = seed % 2 == 0,
                                       .allow_approx = seed % 3 == 0,
                                       .allow_grid = seed % 4 == 0,
                                       .allow_opt_shapes = seed % 7 == 0,
                                       .allow_subgroup = seed % 11 == 0,
                                       .allow_invalid = seed % 5 == 0};
        vyre_program *p = vyre_gen_random(seed, &opt);
        CHECK(p != NULL);
        if (!p) continue;
        struct vyre_error err;
        bool valid = vyre_program_check(p, &err) == VYRE_OK;
        vyre_program *q = NULL;
        CHECK(vyre_program_copy(p, &q, &err) == VYRE_OK);
        CHECK(q && vyre_program_equal(p, q));
        CHECK(q && vyre_program_hash(p) == vyre_program_hash(q));
        char *tp = NULL, *tq = NULL;
        if (q && vyre_text_print(p, &tp, NULL) == VYRE_OK &&
            vyre_text_print(q, &tq, NULL) == VYRE_OK)
            CHECK(strcmp(tp, tq) == 0);
        CHECK(q && (vyre_program_check(q, &err) == VYRE_OK) == valid);
        vyre_free(tp);
        vyre_free(tq);
        vyre_program_free(q);
        vyre_program_free(p);
    }
    /* worklists stay worklists (the random generator declares none) */
    vyre_program *w = NULL, *c = NULL;
    struct vyre_error err;
    CHECK(vyre_text_parse(WORKLIST, strlen(WORKLIST), &w, &err) == VYRE_OK);
    CHECK(w && vyre_program_copy(w, &c, &err) == VYRE_OK);
    CHECK(c && vyre_program_equal(w, c));
    CHECK(c && vyre_program_check(c, &err) == VYRE_OK);
    vyre_program_free(c);
    vyre_program_free(w);
}

int main(void) {
    RUN_TEST(test_canonical_texts);
    RUN_TEST(test_worklist_text);
    RUN_TEST(test_builder_saxpy);
    RUN_TEST(test_every_op);
    RUN_TEST(test_literal_edges);
    RUN_TEST(test_literal_errors);
    RUN_TEST(test_syntax_errors);
    RUN_TEST(test_extras);
    RUN_TEST(test_hash);
    RUN_TEST(test_depth);
    RUN_TEST(test_mutations);
    RUN_TEST(test_broken_program);
    RUN_TEST(test_generated);
    RUN_TEST(test_copy);
    return harness_finish();
}
