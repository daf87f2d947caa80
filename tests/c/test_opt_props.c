/* test_opt_props.c — the optimiser's property test: 10^4 generated programs carrying the
 * shapes the passes target (allow_opt_shapes: repeated subexpressions, dead lets,
 * copies, loop invariants, constant branches, algebraic identities), each optimised
 * (all passes, or a subset drawn from the seed; for half the seeds cse and licm take
 * even the cheapest expressions) and run on the reference interpreter
 * next to the original over the same random inputs: every buffer must be bit-identical.
 * The optimised program must validate, round-trip through the text format, and no pass
 * may have been undone by the pipeline's safety net. Every pass must fire somewhere.
 * VYRE_OPT_SEED=<n> runs one seed and prints both programs; VYRE_OPT_FROM=<n> starts the
 * window of seeds at n. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "ir.h"
#include "opt.h"

#define N_PROGRAMS 10000u
/* The hang guard in CPU seconds (harness_cpu_guard: load does not count). */
#if defined(__SANITIZE_ADDRESS__)
#define SECONDS 600u /* several times slower under ASan */
#else
#define SECONDS 120u
#endif

static uint64_t mix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static vyre_bits rand_param(uint64_t *r, enum vyre_type t) {
    static const uint64_t edge[] = {0, 1, 2, 3, ~0ull, 0x8000000000000000ull, 0x7FFFFFFFu, 5};
    uint64_t k = mix(r);
    vyre_bits v = (k >> 8) % 3 == 0 ? mix(r) : edge[k & 7u];
    if (t == VYRE_BOOL) return v & 1u;
    if (t == VYRE_F32)
        return (k >> 8) % 3 == 0 ? (uint32_t)mix(r) : 0x3FC00000u + (uint32_t)(k & 7u);
    if (vyre_type_bits(t) == 32) return v & 0xFFFFFFFFu;
    return v;
}

struct run_set {
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    size_t bytes[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS];
    struct vyre_run_args args;
};

static void make_args(const vyre_program *p, uint64_t *r, struct run_set *rs) {
    memset(rs, 0, sizeof *rs);
    rs->args.grid[0] = mix(r) % 4u == 0 ? 2u : 1u; /* interpreting is most of the time */
    rs->args.grid[1] = 1u;
    rs->args.grid[2] = 1u;
    uint32_t inv = p->workgroup[0] * p->workgroup[1] * p->workgroup[2] * rs->args.grid[0];
    uint32_t nb = 0, np = 0;
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind == VYRE_DECL_PARAM) {
            rs->params[np++] = rand_param(r, d->type);
            continue;
        }
        if (d->kind != VYRE_DECL_BUFFER) continue;
        uint64_t count = d->count;
        if (!count) count = mix(r) % 4u == 0 ? mix(r) % 40u : inv + (uint32_t)(mix(r) % 3u);
        size_t sz = vyre_type_size(d->type);
        rs->bytes[nb] = (size_t)count * sz;
        unsigned char *data = malloc(rs->bytes[nb] ? rs->bytes[nb] : 1u);
        for (size_t b = 0; b < rs->bytes[nb]; b++) data[b] = (unsigned char)(mix(r) >> 24);
        if (d->type == VYRE_BOOL && (mix(r) & 1u)) /* else any word: nonzero loads as true */
            for (size_t b = 0; b < rs->bytes[nb]; b++)
                data[b] = b % 4u == 0 ? (unsigned char)(data[b] & 1u) : 0;
        rs->bufs[nb].data = data;
        rs->bufs[nb].count = count;
        nb++;
    }
    rs->args.buffers = rs->bufs;
    rs->args.nbuffers = nb;
    rs->args.params = rs->params;
    rs->args.nparams = np;
}

static void copy_args(const struct run_set *from, struct run_set *to) {
    *to = *from;
    for (size_t i = 0; i < from->args.nbuffers; i++) {
        to->bufs[i].data = malloc(from->bytes[i] ? from->bytes[i] : 1u);
        memcpy(to->bufs[i].data, from->bufs[i].data, from->bytes[i]);
    }
    to->args.buffers = to->bufs;
    to->args.params = to->params;
}

static void free_args(struct run_set *rs) {
    for (size_t i = 0; i < rs->args.nbuffers; i++) free(rs->bufs[i].data);
}

static char *text_of(const vyre_program *p) {
    char *t = NULL;
    size_t n = 0;
    return vyre_text_print(p, &t, &n) == VYRE_OK ? t : NULL;
}

static struct vyre_opt_report total;
static unsigned n_checked, n_changed;

static struct vyre_opt_options opts_for(uint64_t seed) {
    struct vyre_opt_options o = {true, true, true, true, true, true};
    if (seed % 3u == 2u) {
        /* a subset: every pass must be correct alone and in any company */
        uint64_t x = seed;
        uint64_t m = mix(&x);
        o.fold = m & 1u;
        o.simplify = m & 2u;
        o.copy = m & 4u;
        o.cse = m & 8u;
        o.licm = m & 16u;
        o.dce = m & 32u;
    }
    return o;
}

static void report(uint64_t seed, const char *what, const vyre_program *p, const vyre_program *q) {
    char *a = text_of(p), *b = q ? text_of(q) : NULL;
    harness_fail(__FILE__, __LINE__, "seed %llu: %s\n--- original\n%s--- optimised\n%s",
                 (unsigned long long)seed, what, a ? a : "?", b ? b : "(none)\n");
    vyre_free(a);
    vyre_free(b);
}

static void check_seed(uint64_t seed, bool verbose) {
    struct vyre_gen_options go;
    memset(&go, 0, sizeof go);
    go.allow_opt_shapes = true;
    go.allow_barriers = seed & 1u;
    go.allow_approx = (seed & 2u) != 0;
    go.allow_subgroup = seed % 5u == 1u;
    go.max_stmts = seed % 7u == 3u ? 12u : 6u;
    vyre_program *p = vyre_gen_random(seed, &go);
    CHECK(p != NULL);
    if (!p) return;
    struct vyre_error err;
    vyre_error_clear(&err);
    harness_checks++;
    if (vyre_program_check(p, &err) != VYRE_OK) {
        report(seed, err.message, p, NULL);
        vyre_program_free(p);
        return;
    }
    /* the copy the pipeline works on, as vyre_program_optimize makes it */
    char *text = text_of(p);
    vyre_program *q = NULL;
    CHECK(text && vyre_text_parse(text, strlen(text), &q, &err) == VYRE_OK);
    vyre_free(text);
    struct vyre_opt_options o = opts_for(seed);
    /* every other seed: cse and licm take every expression, however cheap */
    struct vyre_opt_min_cost saved = vyre_opt_min_cost;
    if (seed & 4u) vyre_opt_min_cost = (struct vyre_opt_min_cost){0, 0};
    struct vyre_opt_report rep;
    struct vyre_opt_stats stats;
    enum vyre_status st = q ? vyre_opt_run(&q, &o, &rep, &stats, &err) : VYRE_ERR_NOMEM;
    vyre_opt_min_cost = saved;
    harness_checks++;
    if (st != VYRE_OK || stats.undone) {
        report(seed, st != VYRE_OK ? err.message : "a pass was undone (invalid result)", p, q);
        vyre_program_free(p);
        vyre_program_free(q);
        return;
    }
    total.folded += rep.folded;
    total.simplified += rep.simplified;
    total.copied += rep.copied;
    total.cse += rep.cse;
    total.hoisted += rep.hoisted;
    total.removed += rep.removed;
    if (!vyre_program_equal(p, q)) n_changed++;
    if (verbose) {
        char *a = text_of(p), *b = text_of(q);
        printf("--- original\n%s--- optimised\n%s", a, b);
        vyre_free(a);
        vyre_free(b);
    }
    /* round trip of the optimised program */
    char *qt = text_of(q);
    vyre_program *q2 = NULL;
    harness_checks++;
    if (!qt || vyre_text_parse(qt, strlen(qt), &q2, &err) != VYRE_OK || !vyre_program_equal(q, q2))
        report(seed, "optimised program does not round-trip", p, q);
    vyre_free(qt);
    vyre_program_free(q2);

    uint64_t r = seed * 0x2545F4914F6CDD1Dull + 99u;
    for (int trial = 0; trial < (seed % 8u == 0 ? 2 : 1); trial++) {
        struct run_set a, b;
        make_args(p, &r, &a);
        copy_args(&a, &b);
        enum vyre_status sa = vyre_ref_run(p, &a.args, NULL, &err);
        enum vyre_status sb = vyre_ref_run(q, &b.args, NULL, &err);
        bool same = sa == sb;
        for (size_t i = 0; same && i < a.args.nbuffers; i++)
            same = memcmp(a.bufs[i].data, b.bufs[i].data, a.bytes[i]) == 0;
        harness_checks++;
        if (!same) report(seed, "optimised results differ from the original's", p, q);
        free_args(&a);
        free_args(&b);
        if (!same) break;
    }
    n_checked++;
    vyre_program_free(q);
    vyre_program_free(p);
}

static void test_random_programs(void) {
    harness_cpu_guard(SECONDS);
    /* VYRE_OPT_FROM=<first seed> moves the window for longer local runs */
    const char *from = getenv("VYRE_OPT_FROM");
    uint64_t first = from ? strtoull(from, NULL, 0) : 0;
    for (uint64_t seed = first; seed < first + N_PROGRAMS; seed++) check_seed(seed, false);
    harness_cpu_guard(0);
    printf("%u programs, %u changed; folded %u simplified %u copied %u cse %u hoisted %u "
           "removed %u\n",
           n_checked, n_changed, total.folded, total.simplified, total.copied, total.cse,
           total.hoisted, total.removed);
    CHECK(n_checked == N_PROGRAMS);
    /* the shapes reach every pass, often */
    CHECK(total.folded > N_PROGRAMS / 10u);
    CHECK(total.simplified > N_PROGRAMS / 10u);
    CHECK(total.copied > N_PROGRAMS / 10u);
    CHECK(total.cse > N_PROGRAMS / 10u);
    CHECK(total.hoisted > N_PROGRAMS / 20u);
    CHECK(total.removed > N_PROGRAMS / 10u);
}

int main(void) {
    const char *one = getenv("VYRE_OPT_SEED");
    if (one) {
        harness_current = "single seed";
        check_seed(strtoull(one, NULL, 0), true);
        return harness_finish();
    }
    RUN_TEST(test_random_programs);
    return harness_finish();
}
