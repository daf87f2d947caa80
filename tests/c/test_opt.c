/* test_opt.c — the optimiser passes one by one (src/core/opt): each rewrite the pass
 * must make, each it must not make under the total semantics (§3: floats, signed
 * division, approximate ops, memory that changes), the option words and $VYRE_OPT,
 * vyre_program_optimize's contract, and PTX that follows the switches. The property
 * test over generated programs is test_opt_props.c. */
#include <stdlib.h>

#include "harness.h"
#include "ir.h"
#include "opt.h"

#define CHECK_LACKS(hay, needle)                                                                 \
    do {                                                                                         \
        const char *h_ = (hay), *n_ = (needle);                                                  \
        harness_checks++;                                                                        \
        if (!h_ || strstr(h_, n_))                                                               \
            harness_fail(__FILE__, __LINE__, "'%s' should not contain '%s'", h_ ? h_ : "(null)", \
                         n_);                                                                    \
    } while (0)

static vyre_program *parse(const char *src) {
    vyre_program *p = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_text_parse(src, strlen(src), &p, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "parse: %s\n%s", err.message, src);
        return NULL;
    }
    return p;
}

/* The optimised text of src with the passes of spec ("none,+cse", ...); caller frees. */
static char *opt_text(const char *src, const char *spec, struct vyre_opt_report *rep) {
    vyre_program *p = parse(src);
    if (!p) return NULL;
    struct vyre_opt_options o;
    struct vyre_error err;
    vyre_error_clear(&err);
    CHECK(vyre_opt_options_parse("all", &o, &err) == VYRE_OK);
    CHECK(vyre_opt_options_parse(spec, &o, &err) == VYRE_OK);
    vyre_program *q = NULL;
    struct vyre_opt_report r;
    if (vyre_program_optimize(p, &o, &q, rep ? rep : &r, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "optimize: %s", err.message);
        vyre_program_free(p);
        return NULL;
    }
    char *t = NULL;
    size_t n = 0;
    CHECK(vyre_text_print(q, &t, &n) == VYRE_OK);
    vyre_program_free(q);
    vyre_program_free(p);
    return t;
}

#define HEAD                        \
    "(program t (workgroup 64)\n"   \
    "  (buffer x u32 read)\n"       \
    "  (buffer f f32 read)\n"       \
    "  (buffer y u32 read_write)\n" \
    "  (buffer g f32 read_write)\n" \
    "  (buffer s i32 read_write)\n" \
    "  (param a u32) (param b f32) (param c i32) (param k bool)\n"

static void test_fold(void) {
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(store y 0u32 (add (mul 3u32 4u32) a))\n"
                            "(store g 0u32 (sin 1.0f32)))",
                       "none,+fold", &r);
    CHECK_STR_CONTAINS(t, "(store y 0u32 (add 12u32 a))");
    CHECK_STR_CONTAINS(t, "(sin 0x1p+0f32)"); /* approximate: never folded */
    CHECK(r.folded == 1);
    vyre_free(t);
    t = opt_text(HEAD "(store y 0u32 (add (mul 3u32 4u32) a)))", "-fold,-simplify", NULL);
    CHECK_STR_CONTAINS(t, "(mul 3u32 4u32)");
    vyre_free(t);
}

static void test_simplify_ints(void) {
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(let i (gid x))\n"
                            "(store y 0u32 (add (mul a 1u32) 0u32))\n"
                            "(store y 1u32 (mul a 8u32))\n"
                            "(store y 2u32 (div a 16u32))\n"
                            "(store y 3u32 (rem a 32u32))\n"
                            "(store y 4u32 (sub a a))\n"
                            "(store y 5u32 (xor (load y i) (load y i)))\n"
                            "(store y 6u32 (add (add a 3u32) 4294967295u32))\n"
                            "(store y 7u32 (shl a 64u32))\n"
                            "(store s 0u32 (div c 4i32))\n"
                            "(store s 1u32 (rem c 4i32))\n"
                            "(store s 2u32 (mul c 4i32))\n"
                            "(store s 3u32 (neg (neg c)))\n"
                            "(store s 4u32 (select (eq a a) c (abs (neg c)))))",
                       "none,+simplify", &r);
    CHECK_STR_CONTAINS(t, "(store y 0u32 a)");
    CHECK_STR_CONTAINS(t, "(store y 1u32 (mul a 8u32))"); /* ptxas fuses IMAD; kept */
    CHECK_STR_CONTAINS(t, "(store y 2u32 (shr a 4u32))");
    CHECK_STR_CONTAINS(t, "(store y 3u32 (and a 31u32))");
    CHECK_STR_CONTAINS(t, "(store y 4u32 0u32)");
    CHECK_STR_CONTAINS(t, "(store y 5u32 0u32)");         /* x^x of one evaluation: always 0 */
    CHECK_STR_CONTAINS(t, "(store y 6u32 (add a 2u32))"); /* wraps */
    CHECK_STR_CONTAINS(t, "(store y 7u32 a)");            /* amount mod 32 */
    /* signed division rounds toward zero: not a shift; rem neither */
    CHECK_STR_CONTAINS(t, "(store s 0u32 (div c 4i32))");
    CHECK_STR_CONTAINS(t, "(store s 1u32 (rem c 4i32))");
    CHECK_STR_CONTAINS(t, "(store s 2u32 (mul c 4i32))");
    CHECK_STR_CONTAINS(t, "(store s 3u32 c)");
    CHECK_STR_CONTAINS(t, "(store s 4u32 (select true c (abs c)))");
    CHECK(r.simplified >= 11);
    vyre_free(t);
}

static void test_simplify_floats_untouched(void) {
    /* x*1 quiets a signalling NaN, x*0 is NaN for inf, x+(-0)... x/x is NaN at 0 */
    const char *src = HEAD "(store g 0u32 (mul b 0x1p+0f32))\n"
                           "(store g 1u32 (mul b 0x0p+0f32))\n"
                           "(store g 2u32 (div b b))\n"
                           "(store g 3u32 (sub b b))\n"
                           "(store g 4u32 (add b -0x0p+0f32))\n"
                           "(store y 0u32 (cast u32 (eq b b)))\n"
                           "(store g 5u32 (sub (exp b) (exp b))))";
    struct vyre_opt_report r;
    char *t = opt_text(src, "none,+simplify", &r);
    CHECK_STR_CONTAINS(t, "(mul b 0x1p+0f32)");
    CHECK_STR_CONTAINS(t, "(mul b 0x0p+0f32)");
    CHECK_STR_CONTAINS(t, "(div b b)");
    CHECK_STR_CONTAINS(t, "(sub b b)");
    CHECK_STR_CONTAINS(t, "(add b -0x0p+0f32)");
    CHECK_STR_CONTAINS(t, "(eq b b)");
    CHECK_STR_CONTAINS(t, "(sub (exp b) (exp b))");
    CHECK_EQ_U64(r.simplified, 0);
    vyre_free(t);
    /* the bit operations are exact: sign flip and clear keep the payload */
    t = opt_text(HEAD "(store g 0u32 (neg (neg b)))\n(store g 1u32 (min b b)))", "none,+simplify",
                 NULL);
    CHECK_STR_CONTAINS(t, "(store g 0u32 b)");
    CHECK_STR_CONTAINS(t, "(store g 1u32 b)");
    vyre_free(t);
}

static void test_copy(void) {
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(let i (gid x))\n(let j i)\n(let n 4u32)\n(let m a)\n"
                            "(store y j (add (load x j) (mul n m))))",
                       "none,+copy", &r);
    CHECK_STR_CONTAINS(t, "(store y i (add (load x i) (mul 4u32 a)))");
    CHECK(r.copied == 4);
    vyre_free(t);
    /* a variable that is set is not a copy source, nor a copy */
    t = opt_text(HEAD "(let i (gid x))\n(let v a)\n(let w v)\n(set v 3u32)\n(store y i w))",
                 "none,+copy", &r);
    CHECK_STR_CONTAINS(t, "(store y i w)");
    CHECK_EQ_U64(r.copied, 0);
    vyre_free(t);
}

static void test_cse(void) {
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(let i (gid x))\n"
                            "(let u (mul (load x i) a))\n"
                            "(store y i (add (mul (load x i) a) (mul (load x i) a)))\n"
                            "(if (lt i (len g)) (then (store g i (mul (load f i) (load f i))))))",
                       "none,+cse", &r);
    /* the let's value is reused; the repeated load of f becomes one variable */
    CHECK_STR_CONTAINS(t, "(store y i (add u u))");
    CHECK_STR_CONTAINS(t, "(load f i))");
    CHECK_STR_CONTAINS(t, "(if (lt i (len g))");
    CHECK(r.cse >= 3);
    vyre_free(t);
    /* loads of memory the program writes, subgroup ops and values of variables that
     * are set are not common subexpressions */
    t = opt_text(HEAD "(let i (gid x))\n(let v (add a 1u32))\n"
                      "(store y i (add (load y i) (load y i)))\n"
                      "(set v (add v 1u32))\n"
                      "(store y i (add (mul v 3u32) (mul v 3u32))))",
                 "none,+cse", &r);
    CHECK_STR_CONTAINS(t, "(add (load y i) (load y i))");
    CHECK_STR_CONTAINS(t, "(add (mul v 3u32) (mul v 3u32))");
    CHECK_EQ_U64(r.cse, 0);
    vyre_free(t);
}

static void test_licm(void) {
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(let i (gid x))\n"
                            "(for j 0u32 a 1u32\n"
                            "  (let w (mul (load x 0u32) a))\n"
                            "  (atomic add y i (add w j)))\n"
                            "(for j2 0u32 a 1u32\n"
                            "  (atomic add y i (load y j2))))",
                       "none,+licm", &r);
    CHECK_STR_CONTAINS(t, "(let licm");
    CHECK_STR_CONTAINS(t, " (mul (load x 0u32) a))\n  (for j 0u32 a 1u32");
    CHECK_STR_CONTAINS(t, "(atomic add y i (load y j2))"); /* not invariant, and y changes */
    CHECK(r.hoisted == 1);
    vyre_free(t);
}

static void test_dce(void) {
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(let i (gid x))\n"
                            "(let dead (mul a a))\n"
                            "(let acc 0u32)\n"
                            "(set acc (add acc 1u32))\n"
                            "(let old (atomic add y 0u32 1u32))\n"
                            "(if true (then (store y 1u32 a)) (else (store y 2u32 a)))\n"
                            "(if false (then (store y 3u32 a)))\n"
                            "(if k (then) (else))\n"
                            "(for j 0u32 a 1u32 (let z (add j 1u32)))\n"
                            "(for j3 5u32 1u32 1u32 (store y j3 a))\n"
                            "(for j4 0u32 4u32 1u32 (store y j4 a) (break) (store y 9u32 a))\n"
                            "(return)\n"
                            "(store y i a))",
                       "none,+dce", &r);
    CHECK_LACKS(t, "dead");
    CHECK_LACKS(t, "acc");
    CHECK_STR_CONTAINS(t, "(atomic add y 0u32 1u32)");
    CHECK_LACKS(t, "old");
    CHECK_STR_CONTAINS(t, "  (store y 1u32 a)\n");
    CHECK_LACKS(t, "2u32 a");
    CHECK_LACKS(t, "3u32 a");
    CHECK_LACKS(t, "(if k");
    CHECK_LACKS(t, "(for j ");
    CHECK_LACKS(t, "j3");
    CHECK_STR_CONTAINS(t, "(for j4 0u32 4u32 1u32\n    (store y j4 a)\n    (break))");
    CHECK_STR_CONTAINS(t, "(return))");
    CHECK_LACKS(t, "(store y i a)");
    CHECK(r.removed >= 10);
    vyre_free(t);
    /* a loop whose body sets an outer variable that is read has an effect */
    t = opt_text(HEAD "(let acc 0u32)\n(for j 0u32 a 1u32 (set acc (add acc j)))\n"
                      "(store y 0u32 acc))",
                 "none,+dce", &r);
    CHECK_STR_CONTAINS(t, "(for j 0u32 a 1u32 (set acc (add acc j)))");
    vyre_free(t);
}

static void test_pipeline_together(void) {
    /* copy propagation feeds a literal to folding, which decides a branch for dce */
    struct vyre_opt_report r;
    char *t = opt_text(HEAD "(let i (gid x))\n(let on 1u32)\n(let same on)\n"
                            "(if (eq same 1u32) (then (store y i (mul (add a 0u32) 2u32)))\n"
                            "  (else (store y i 7u32))))",
                       "all", &r);
    CHECK_STR_CONTAINS(t, "(let i (gid x))\n  (store y i (mul a 2u32)))");
    vyre_free(t);
}

static void test_options(void) {
    struct vyre_opt_options o;
    struct vyre_error err;
    vyre_error_clear(&err);
    CHECK(vyre_opt_options_parse("all", &o, &err) == VYRE_OK);
    CHECK(o.fold && o.simplify && o.copy && o.cse && o.licm && o.dce);
    CHECK(vyre_opt_options_parse("-cse,-licm", &o, &err) == VYRE_OK);
    CHECK(o.fold && !o.cse && !o.licm && o.dce);
    CHECK(vyre_opt_options_parse("none, +cse", &o, &err) == VYRE_OK);
    CHECK(!o.fold && o.cse && !o.dce);
    CHECK(vyre_opt_options_parse("dce", &o, &err) == VYRE_OK && o.dce);
    CHECK_EQ_U64(vyre_opt_options_parse("-cse,bogus", &o, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "unknown pass 'bogus'");
    CHECK_STR_CONTAINS(err.message, "Fix: ");
    CHECK(vyre_opt_options_parse(NULL, &o, &err) == VYRE_OK);
    CHECK_EQ_U64(vyre_opt_options_parse("all", NULL, &err), VYRE_ERR_ARG);

    setenv("VYRE_OPT", "-cse,-dce", 1);
    CHECK(vyre_opt_options_default(&o, &err) == VYRE_OK);
    CHECK(o.fold && !o.cse && !o.dce && o.licm);
    setenv("VYRE_OPT", "-nope", 1);
    CHECK_EQ_U64(vyre_opt_options_default(&o, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "VYRE_OPT: ");
    /* the runtime's emitter reports the bad variable rather than ignoring it */
    vyre_program *p = parse(HEAD "(store y 0u32 a))");
    struct vyre_ptx_options po = {.sm = 80};
    char *ptx = NULL;
    CHECK_EQ_U64(vyre_ptx_emit(p, &po, &ptx, NULL, &err), VYRE_ERR_ARG);
    CHECK_STR_CONTAINS(err.message, "VYRE_OPT");
    unsetenv("VYRE_OPT");
    CHECK(vyre_ptx_emit(p, &po, &ptx, NULL, &err) == VYRE_OK);
    vyre_free(ptx);
    vyre_program_free(p);
}

static void test_optimize_api(void) {
    struct vyre_error err;
    vyre_error_clear(&err);
    vyre_program *q = NULL;
    CHECK_EQ_U64(vyre_program_optimize(NULL, NULL, &q, NULL, &err), VYRE_ERR_ARG);
    vyre_program *p = parse(HEAD "(store y 0u32 (mul 2u32 3u32)))");
    CHECK_EQ_U64(vyre_program_optimize(p, NULL, NULL, NULL, &err), VYRE_ERR_ARG);
    uint64_t h = vyre_program_hash(p);
    CHECK(vyre_program_optimize(p, NULL, &q, NULL, &err) == VYRE_OK && q);
    CHECK_EQ_U64(vyre_program_hash(p), h); /* p is not changed */
    CHECK(vyre_program_hash(q) != h);
    vyre_program_free(q);
    vyre_program_free(p);
    /* an invalid program is reported, not optimised */
    p = parse("(program t (workgroup 64) (buffer y u32 read_write) (store y 0u32 nope))");
    CHECK_EQ_U64(vyre_program_optimize(p, NULL, &q, NULL, &err), VYRE_ERR_INVALID);
    CHECK(q == NULL);
    vyre_program_free(p);
}

static void test_ptx_follows_switches(void) {
    vyre_program *p = parse(HEAD "(let i (gid x))\n"
                                 "(store y i (add (mul (load x i) a) (mul (load x i) a))))");
    struct vyre_ptx_options po = {.sm = 80};
    struct vyre_opt_options all, nocse;
    struct vyre_error err;
    CHECK(vyre_opt_options_parse("all", &all, &err) == VYRE_OK);
    nocse = all;
    nocse.cse = false;
    char *a = NULL, *b = NULL, *d = NULL;
    struct vyre_ptx_options pall = {.sm = 80, .passes = &all},
                            pnocse = {.sm = 80, .passes = &nocse};
    CHECK(vyre_ptx_emit(p, &pall, &a, NULL, &err) == VYRE_OK);
    CHECK(vyre_ptx_emit(p, &pnocse, &b, NULL, &err) == VYRE_OK);
    CHECK(vyre_ptx_emit(p, &po, &d, NULL, &err) == VYRE_OK);
    CHECK(a && b && d && strcmp(a, b) != 0);
    CHECK(a && d && strcmp(a, d) == 0); /* no options: all passes */
    if (a && b) CHECK(strlen(a) < strlen(b));
    CHECK(a && harness_ptxas_ok(a, 80, false));
    CHECK(b && harness_ptxas_ok(b, 80, false));
    CHECK(vyre_opt_mask(&all) != vyre_opt_mask(&nocse)); /* the runtime's cache key */
    vyre_free(a);
    vyre_free(b);
    vyre_free(d);
    vyre_program_free(p);
}

/* The emitter takes whatever the passes leave (new lets before loops, spliced branches,
 * unbound atomics): optimised shaped programs assemble, all in one ptxas run. */
static void test_ptx_of_optimised_programs_assembles(void) {
    struct harness_batch batch = {0};
    for (uint64_t seed = 0; seed < 300; seed++) {
        struct vyre_gen_options go;
        memset(&go, 0, sizeof go);
        go.allow_opt_shapes = true;
        go.allow_barriers = seed & 1u;
        go.allow_subgroup = seed % 3u == 0;
        vyre_program *p = vyre_gen_random(seed, &go);
        struct vyre_ptx_options po = {.sm = 90};
        char *ptx = NULL;
        struct vyre_error err;
        CHECK(p && vyre_ptx_emit(p, &po, &ptx, NULL, &err) == VYRE_OK);
        if (ptx) harness_batch_add(&batch, ptx);
        vyre_free(ptx);
        vyre_program_free(p);
    }
    CHECK_EQ_U64(batch.n, 300);
    CHECK(batch.text && harness_ptxas_ok(batch.text, 90, false));
    free(batch.text);
}

/* Found by spec 99's properties: vyre_program_copy turned a worklist into a param, so the
 * optimiser (which works on a copy) and every other copy made worklist programs invalid. */
static void test_worklist_program_copies(void) {
    static const char src[] = "(program w (workgroup 32)\n"
                              "  (buffer out u32 read_write)\n"
                              "  (worklist q u32)\n"
                              "  (param k u32)\n"
                              "  (let i (gid x))\n"
                              "  (if (lt i (len q))\n"
                              "    (then (store out (rem i (len out)) (add (load q i) k))\n"
                              "          (push q (add (load q i) 1u32)))))";
    vyre_program *p = parse(src);
    if (!p) return;
    struct vyre_error err;
    vyre_error_clear(&err);
    vyre_program *c = NULL;
    CHECK(vyre_program_copy(p, &c, &err) == VYRE_OK);
    CHECK(c && vyre_program_equal(p, c));
    CHECK(c && vyre_program_worklist_count(c) == 1 && vyre_program_param_count(c) == 1);
    CHECK(c && vyre_program_check(c, &err) == VYRE_OK);
    vyre_program_free(c);
    vyre_program_free(p);
    char *t = opt_text(src, "all", NULL);
    CHECK_STR_CONTAINS(t, "(worklist q u32)");
    CHECK_STR_CONTAINS(t, "(push q");
    free(t);
}

int main(void) {
    RUN_TEST(test_worklist_program_copies);
    RUN_TEST(test_fold);
    RUN_TEST(test_simplify_ints);
    RUN_TEST(test_simplify_floats_untouched);
    RUN_TEST(test_copy);
    RUN_TEST(test_cse);
    RUN_TEST(test_licm);
    RUN_TEST(test_dce);
    RUN_TEST(test_pipeline_together);
    RUN_TEST(test_options);
    RUN_TEST(test_optimize_api);
    RUN_TEST(test_ptx_follows_switches);
    RUN_TEST(test_ptx_of_optimised_programs_assembles);
    return harness_finish();
}
