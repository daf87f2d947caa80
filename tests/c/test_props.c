/* test_props.c — property tests over thousands of generated programs (src/core/ir/gen.c):
 * valid programs validate cleanly, round-trip through the text format (equal program,
 * equal hash, identical text) and run on the reference interpreter with random buffer
 * contents and sizes (incl. empty buffers) and edge-value params, deterministically;
 * mutated programs never crash the validator and are almost always rejected; byte
 * mutations of printed text never crash the parser or validator.
 * Seeds are fixed so runs are reproducible; every failure prints its seed.
 * VYRE_PROP_SEED=<n> runs that one seed verbosely (prints the program). */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "ir.h"

#define N_VALID 3000u
#define N_INVALID 3000u
#define N_FUZZ 2500u
/* A hang guard, not a timing, in CPU seconds (harness_cpu_guard): a phase runs in about
 * 5 s of CPU alone, several times that under ASan; load does not count. */
#define PHASE_SECONDS 300u

/* ---- crash and hang reporting ----------------------------------------------------- */

/* Preformatted so the signal handler only needs write(2). */
static char where[160] = "startup\n";

static void set_where(const char *phase, uint64_t seed) {
    snprintf(where, sizeof where, "%s, seed %llu\n", phase, (unsigned long long)seed);
}

static void on_signal(int sig) {
    const char *what =
        sig == SIGXCPU ? "TIMEOUT (hang: CPU budget spent) in " : "CRASH (signal) in ";
    ssize_t r = write(2, what, strlen(what));
    r = write(2, where, strlen(where));
    (void)r;
    _exit(2);
}

static void install_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGXCPU, &sa, NULL);
}

/* ---- helpers -------------------------------------------------------------------------- */

static uint64_t mix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static struct vyre_gen_options opts_for(uint64_t seed, bool invalid) {
    struct vyre_gen_options o;
    memset(&o, 0, sizeof o);
    o.allow_barriers = (seed & 1u) != 0;
    o.allow_approx = (seed & 2u) != 0;
    o.allow_invalid = invalid;
    if (seed % 7u == 3u) {
        o.max_stmts = 14;
        o.max_depth = 6;
    }
    return o;
}

static char *text_of(const vyre_program *p) {
    char *t = NULL;
    size_t n = 0;
    if (vyre_text_print(p, &t, &n) != VYRE_OK) return NULL;
    return t;
}

static void report_problems(uint64_t seed, const vyre_program *p, const struct vyre_problems *pr) {
    char *t = text_of(p);
    fprintf(stderr, "seed %llu: %zu validation problems in a generated program:\n%s",
            (unsigned long long)seed, pr->count, t ? t : "(print failed)\n");
    for (size_t i = 0; i < pr->count && i < 5; i++)
        fprintf(stderr, "  %s at %s: %s Fix: %s\n", pr->items[i].code, pr->items[i].path,
                pr->items[i].message, pr->items[i].fix);
    vyre_free(t);
}

static vyre_bits edge_param(uint64_t *r, enum vyre_type t) {
    static const uint64_t e64[] = {0, 1, 2, 3, ~0ull, 0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull,
                                   5};
    static const uint32_t e32[] = {0, 1, 2, 3, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 5};
    static const uint32_t ef32[] = {0x3F800000u, 0x80000000u, 0x7FC00000u, 0xFF800000u,
                                    0x00000001u, 0x7F7FFFFFu, 0x40400000u, 0};
    static const uint64_t ef64[] = {0x3FF0000000000000ull,
                                    0x8000000000000000ull,
                                    0x7FF8000000000000ull,
                                    0x7FF0000000000000ull,
                                    1,
                                    0x7FEFFFFFFFFFFFFFull,
                                    0xC008000000000000ull,
                                    0};
    uint64_t k = mix(r);
    unsigned i = (unsigned)(k & 7u);
    bool rnd = (k >> 8) % 4 == 0;
    switch (t) {
    case VYRE_BOOL: return (k >> 3) & 1u;
    case VYRE_I32:
    case VYRE_U32: return rnd ? (uint32_t)(k >> 16) : e32[i];
    case VYRE_F32: return rnd ? (uint32_t)(k >> 16) : ef32[i];
    case VYRE_F64: return rnd ? mix(r) : ef64[i];
    default: return rnd ? mix(r) : e64[i];
    }
}

struct run_set {
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    size_t bytes[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS];
    struct vyre_run_args args;
};

/* Random sizes (often 0, 1 or around the launched invocation count) and contents. */
static void make_args(const vyre_program *p, uint64_t *r, struct run_set *rs) {
    memset(rs, 0, sizeof *rs);
    rs->args.grid[0] = 1u + (uint32_t)(mix(r) % 2u);
    rs->args.grid[1] = mix(r) % 6u == 0 ? 2u : 1u;
    rs->args.grid[2] = 1u;
    uint32_t inv =
        p->workgroup[0] * p->workgroup[1] * p->workgroup[2] * rs->args.grid[0] * rs->args.grid[1];
    uint32_t nb = 0, np = 0;
    for (uint32_t i = 0; i < p->ndecls; i++) {
        const struct vyre_decl *d = &p->decls[i];
        if (d->kind == VYRE_DECL_PARAM) {
            rs->params[np++] = edge_param(r, d->type);
            continue;
        }
        if (d->kind != VYRE_DECL_BUFFER) continue;
        uint64_t count = d->count;
        if (!count) {
            uint64_t k = mix(r) % 6u;
            count = k == 0 ? 0 : k == 1 ? 1 : k == 2 ? inv : k == 3 ? inv + 3u : mix(r) % 300u;
        }
        size_t sz = vyre_type_size(d->type);
        rs->bytes[nb] = (size_t)count * sz;
        unsigned char *data = malloc(rs->bytes[nb] ? rs->bytes[nb] : 1u);
        for (size_t b = 0; b < rs->bytes[nb]; b++) data[b] = (unsigned char)(mix(r) >> 24);
        if (d->type == VYRE_BOOL && (mix(r) & 1u))
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

static void free_args(struct run_set *rs) {
    for (size_t i = 0; i < rs->args.nbuffers; i++) free(rs->bufs[i].data);
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

/* ---- valid programs ---------------------------------------------------------------------- */

static unsigned n_barrier_progs, n_ran;

static void check_valid(uint64_t seed, bool verbose) {
    struct vyre_gen_options o = opts_for(seed, false);
    set_where("generate", seed);
    vyre_program *p = vyre_gen_random(seed, &o);
    CHECK(p != NULL);
    if (!p) return;
    /* Determinism: the same seed gives the same program. */
    vyre_program *again = vyre_gen_random(seed, &o);
    CHECK(vyre_program_equal(p, again));
    vyre_program_free(again);
    char *text = text_of(p);
    CHECK(text != NULL);
    if (verbose && text) printf("%s", text);
    char want_name[40];
    snprintf(want_name, sizeof want_name, "prog_%llx", (unsigned long long)seed);
    CHECK(strcmp(vyre_program_name(p), want_name) == 0);

    set_where("validate", seed);
    struct vyre_problems pr = {0};
    enum vyre_status st = vyre_validate(p, &pr);
    harness_checks++;
    if (st != VYRE_OK || pr.count != 0) {
        harness_fail(__FILE__, __LINE__, "seed %llu: generated program is invalid (%s)",
                     (unsigned long long)seed, vyre_status_name(st));
        report_problems(seed, p, &pr);
    }
    vyre_problems_free(&pr);
    if (st != VYRE_OK || !text) {
        vyre_free(text);
        vyre_program_free(p);
        return;
    }

    set_where("parse(print(p))", seed);
    vyre_program *q = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    st = vyre_text_parse(text, strlen(text), &q, &err);
    harness_checks++;
    if (st != VYRE_OK) {
        harness_fail(__FILE__, __LINE__,
                     "seed %llu: printed text does not parse: %s (line %u col %u)\n%s",
                     (unsigned long long)seed, err.message, err.line, err.column, text);
    } else {
        harness_checks++;
        if (!vyre_program_equal(p, q))
            harness_fail(__FILE__, __LINE__, "seed %llu: parse(print(p)) != p\n%s",
                         (unsigned long long)seed, text);
        CHECK_EQ_U64(vyre_program_hash(q), vyre_program_hash(p));
        char *text2 = text_of(q);
        harness_checks++;
        if (!text2 || strcmp(text, text2) != 0)
            harness_fail(__FILE__, __LINE__,
                         "seed %llu: text changed after a round trip:\n%s---\n%s",
                         (unsigned long long)seed, text, text2 ? text2 : "(null)");
        vyre_free(text2);
    }
    vyre_program_free(q);

    if (p->nshared) n_barrier_progs++;
    set_where("interpret", seed);
    uint64_t r = seed * 0x2545F4914F6CDD1Dull + 17u;
    struct run_set rs, rs2;
    make_args(p, &r, &rs);
    bool twice = seed % 4u == 0;
    if (twice) copy_args(&rs, &rs2);
    vyre_error_clear(&err);
    st = vyre_ref_run(p, &rs.args, NULL, &err);
    harness_checks++;
    if (st != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "seed %llu: vyre_ref_run failed: %s: %s\n%s",
                     (unsigned long long)seed, vyre_status_name(st), err.message, text);
    } else {
        n_ran++;
    }
    if (twice) {
        /* Same inputs, same outputs: the interpreter and the program are deterministic. */
        st = vyre_ref_run(p, &rs2.args, NULL, &err);
        bool same = st == VYRE_OK;
        for (size_t i = 0; same && i < rs.args.nbuffers; i++)
            same = memcmp(rs.bufs[i].data, rs2.bufs[i].data, rs.bytes[i]) == 0;
        harness_checks++;
        if (!same)
            harness_fail(__FILE__, __LINE__, "seed %llu: two runs on equal inputs differ\n%s",
                         (unsigned long long)seed, text);
        free_args(&rs2);
    }
    free_args(&rs);
    vyre_free(text);
    vyre_program_free(p);
}

static void test_valid_programs(void) {
    harness_cpu_guard(PHASE_SECONDS);
    for (uint64_t seed = 0; seed < N_VALID; seed++) check_valid(seed, false);
    harness_cpu_guard(0);
    printf("valid: %u programs, %u interpreted, %u with shared memory\n", N_VALID, n_ran,
           n_barrier_progs);
    CHECK(n_ran == N_VALID);
    CHECK(n_barrier_progs > N_VALID / 5u);
}

/* ---- invalid programs ----------------------------------------------------------------------- */

static void test_invalid_programs(void) {
    unsigned rejected = 0, total = 0;
    harness_cpu_guard(PHASE_SECONDS);
    for (uint64_t seed = 1000000; seed < 1000000 + N_INVALID; seed++) {
        struct vyre_gen_options o = opts_for(seed, true);
        set_where("generate invalid", seed);
        vyre_program *p = vyre_gen_random(seed, &o);
        CHECK(p != NULL);
        if (!p) continue;
        total++;
        set_where("validate invalid", seed);
        struct vyre_problems pr = {0};
        enum vyre_status st = vyre_validate(p, &pr);
        CHECK(st == VYRE_OK || st == VYRE_ERR_INVALID);
        CHECK((st == VYRE_OK) == (pr.count == 0));
        if (pr.count) rejected++;
        for (size_t i = 0; i < pr.count; i++) {
            CHECK(pr.items[i].code[0] != '\0');
            CHECK(pr.items[i].message[0] != '\0');
        }
        vyre_problems_free(&pr);
        /* The printer handles any program; the parser handles whatever it prints. */
        set_where("print/parse invalid", seed);
        char *t = text_of(p);
        CHECK(t != NULL);
        if (t) {
            vyre_program *q = NULL;
            struct vyre_error err;
            if (vyre_text_parse(t, strlen(t), &q, &err) == VYRE_OK) {
                struct vyre_problems pq = {0};
                (void)vyre_validate(q, &pq);
                vyre_problems_free(&pq);
                vyre_program_free(q);
            }
        }
        vyre_free(t);
        /* Running a rejected program fails cleanly. */
        if (st != VYRE_OK) {
            set_where("ref_run invalid", seed);
            struct vyre_run_args args;
            memset(&args, 0, sizeof args);
            args.grid[0] = args.grid[1] = args.grid[2] = 1;
            struct vyre_error err;
            CHECK(vyre_ref_run(p, &args, NULL, &err) != VYRE_OK);
        }
        vyre_program_free(p);
    }
    harness_cpu_guard(0);
    printf("invalid: %u of %u mutated programs rejected\n", rejected, total);
    /* Some mutations can land harmlessly (e.g. a literal retyped inside a cast). */
    CHECK(rejected * 100u >= total * 90u);
}

/* ---- text fuzzing ------------------------------------------------------------------------------ */

/* Replaces s[a, b) with rep; returns the new length (unchanged if it would not fit). */
static size_t splice(char *s, size_t n, size_t cap, size_t a, size_t b, const char *rep) {
    size_t len = strlen(rep);
    if (n - (b - a) + len >= cap) return n;
    memmove(s + a + len, s + b, n - b);
    memcpy(s + a, rep, len);
    return n - (b - a) + len;
}

/* Mutations that keep the text close to the grammar, so the validator sees many
 * near-valid programs: another digit, another type suffix, another operator. */
static size_t mutate_token(char *s, size_t n, size_t cap, size_t at, uint64_t *r) {
    static const char *const types[] = {"i32", "u32", "i64", "u64", "f32", "f64"};
    static const char *const words[] = {
        "add",    "sub",  "mul",     "div",   "rem",  "shl", "eq",     "lt",
        "min",    "land", "neg",     "not",   "lnot", "abs", "sqrt",   "clz",
        "select", "cast", "bitcast", "fma",   "load", "len", "gid",    "lid",
        "wgid",   "let",  "set",     "store", "if",   "for", "atomic", "barrier"};
    uint64_t k = mix(r) % 3u;
    for (size_t i = at; i < n; i++) {
        if (k == 0 && s[i] >= '0' && s[i] <= '9') {
            s[i] = (char)('0' + mix(r) % 10u);
            return n;
        }
        if (k == 1 && i + 3 <= n) {
            for (size_t t = 0; t < 6; t++) {
                if (memcmp(s + i, types[t], 3) == 0) {
                    memcpy(s + i, types[mix(r) % 6u], 3);
                    return n;
                }
            }
        }
        if (k == 2 && s[i] == '(' && i + 1 < n && s[i + 1] >= 'a' && s[i + 1] <= 'z') {
            size_t e = i + 1;
            while (e < n && s[e] >= 'a' && s[e] <= 'z') e++;
            return splice(s, n, cap, i + 1, e, words[mix(r) % (sizeof words / sizeof words[0])]);
        }
    }
    return n;
}

static size_t mutate_text(char *s, size_t n, size_t cap, uint64_t *r) {
    static const char *const tokens[] = {"(",
                                         ")",
                                         " ",
                                         "0u32",
                                         "-1i32",
                                         "nan:0x7fc00000f32",
                                         "(barrier)",
                                         "(break)",
                                         "gi",
                                         "(let",
                                         "inff64",
                                         "0x1p-1074f64",
                                         ";",
                                         "\n",
                                         "(for",
                                         "(if",
                                         "99999999999999999999u64",
                                         "\"",
                                         "\x01"};
    uint64_t k = mix(r) % 10u;
    size_t at = n ? (size_t)(mix(r) % n) : 0;
    if (k >= 6) return mutate_token(s, n, cap, at, r);
    switch (k) {
    case 0: /* flip a byte */
        if (n) s[at] = (char)(mix(r) & 0xFFu);
        return n;
    case 1: /* delete a span */
        if (n) {
            size_t len = 1u + (size_t)(mix(r) % 8u);
            if (at + len > n) len = n - at;
            memmove(s + at, s + at + len, n - at - len);
            n -= len;
        }
        return n;
    case 2: { /* insert a token */
        const char *t = tokens[mix(r) % (sizeof tokens / sizeof tokens[0])];
        size_t len = strlen(t);
        if (n + len >= cap) return n;
        memmove(s + at + len, s + at, n - at);
        memcpy(s + at, t, len);
        return n + len;
    }
    case 3: /* truncate */ return at;
    case 4: { /* duplicate a span */
        size_t len = 1u + (size_t)(mix(r) % 40u);
        if (at + len > n) len = n - at;
        if (n + len >= cap) return n;
        memmove(s + at + len, s + at, n - at);
        return n + len;
    }
    default: /* swap two bytes */
        if (n) {
            size_t b = (size_t)(mix(r) % n);
            char c = s[at];
            s[at] = s[b];
            s[b] = c;
        }
        return n;
    }
}

static void test_text_fuzz(void) {
    unsigned parsed = 0, revalid = 0;
    harness_cpu_guard(PHASE_SECONDS);
    for (uint64_t seed = 2000000; seed < 2000000 + N_FUZZ; seed++) {
        struct vyre_gen_options o = opts_for(seed, false);
        set_where("fuzz generate", seed);
        vyre_program *p = vyre_gen_random(seed, &o);
        CHECK(p != NULL);
        char *t = p ? text_of(p) : NULL;
        vyre_program_free(p);
        if (!t) continue;
        size_t n = strlen(t), cap = n + 4096u;
        char *buf = malloc(cap);
        uint64_t r = seed;
        for (int round = 0; round < 4; round++) {
            memcpy(buf, t, n);
            size_t m = n;
            uint64_t nmut = mix(&r) % 2u ? 1u : 1u + mix(&r) % 4u;
            for (uint64_t i = 0; i < nmut; i++) m = mutate_text(buf, m, cap, &r);
            set_where("fuzz parse", seed);
            vyre_program *q = NULL;
            struct vyre_error err;
            vyre_error_clear(&err);
            enum vyre_status st = vyre_text_parse(buf, m, &q, &err);
            if (st != VYRE_OK) {
                CHECK(st == VYRE_ERR_SYNTAX || st == VYRE_ERR_LIMIT);
                CHECK(err.message[0] != '\0');
                vyre_program_free(q);
                continue;
            }
            parsed++;
            set_where("fuzz validate", seed);
            struct vyre_problems pr = {0};
            st = vyre_validate(q, &pr);
            CHECK(st == VYRE_OK || st == VYRE_ERR_INVALID);
            vyre_problems_free(&pr);
            if (st == VYRE_OK) {
                /* Still a valid program: it must round-trip like any other. */
                revalid++;
                set_where("fuzz round trip", seed);
                char *t2 = text_of(q);
                vyre_program *q2 = NULL;
                CHECK(t2 && vyre_text_parse(t2, strlen(t2), &q2, &err) == VYRE_OK);
                CHECK(vyre_program_equal(q, q2));
                vyre_program_free(q2);
                vyre_free(t2);
            }
            vyre_program_free(q);
        }
        free(buf);
        vyre_free(t);
    }
    harness_cpu_guard(0);
    printf("fuzz: %u texts, %u still parsed, %u still valid\n", N_FUZZ * 4u, parsed, revalid);
    CHECK(parsed > 0);
}

/* ---- generator contract -------------------------------------------------------------------------- */

static void test_generator_basics(void) {
    /* NULL options mean the defaults; different seeds give different programs. */
    vyre_program *a = vyre_gen_random(42, NULL);
    vyre_program *b = vyre_gen_random(42, NULL);
    vyre_program *c = vyre_gen_random(43, NULL);
    CHECK(a && b && c);
    if (a && b && c) {
        CHECK(vyre_program_equal(a, b));
        CHECK(!vyre_program_equal(a, c));
        CHECK_EQ_U64(vyre_program_hash(a), vyre_program_hash(b));
        CHECK(strcmp(vyre_program_name(a), "prog_2a") == 0);
        uint32_t wg[3];
        vyre_program_workgroup(a, wg);
        CHECK(wg[0] * wg[1] * wg[2] >= 1 && wg[0] * wg[1] * wg[2] <= 1024);
    }
    vyre_program_free(a);
    vyre_program_free(b);
    vyre_program_free(c);
    /* Shape over many seeds: 1-4 buffers incl. an output, 0-3 params, a legal workgroup. */
    unsigned shared = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        struct vyre_gen_options o = opts_for(seed, false);
        vyre_program *p = vyre_gen_random(seed, &o);
        if (!p) {
            CHECK(p != NULL);
            continue;
        }
        bool has_out = false;
        for (uint32_t i = 0; i < p->ndecls; i++)
            if (p->decls[i].kind == VYRE_DECL_BUFFER && p->decls[i].access != VYRE_ACCESS_READ)
                has_out = true;
        CHECK(has_out);
        CHECK(p->nbuffers >= 1 && p->nbuffers <= 4);
        CHECK(p->nparams <= 3);
        CHECK(o.allow_barriers || p->nshared == 0);
        shared += p->nshared ? 1u : 0u;
        uint32_t wx = p->workgroup[0];
        CHECK(wx == 1 || wx == 2 || wx == 32 || wx == 64 || wx == 128 || wx == 256);
        CHECK(wx * p->workgroup[1] * p->workgroup[2] <= 1024);
        vyre_program_free(p);
    }
    CHECK(shared > 50);
}

int main(void) {
    install_handlers();
    const char *one = getenv("VYRE_PROP_SEED");
    if (one) {
        harness_current = "single seed";
        check_valid(strtoull(one, NULL, 0), true);
        return harness_finish();
    }
    RUN_TEST(test_generator_basics);
    RUN_TEST(test_valid_programs);
    RUN_TEST(test_invalid_programs);
    RUN_TEST(test_text_fuzz);
    return harness_finish();
}
