/* test_grid.c — grid barriers and convergence loops (ARCHITECTURE.md §3) through every
 * layer without a GPU: text format, the validator's grid rules (grid-scope,
 * grid-nonuniform, grid-break, converge-flag), the interpreter's section semantics
 * (the whole grid finishes a section before the next, fresh variables and shared
 * memory per section, return ends a section, converge rounds and the flag), the
 * random generator's grid programs, converge rounds replayed through the round callbacks
 * (the CUDA graph mode's protocol) against the plain protocol, and the cooperative PTX
 * through ptxas. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ir.h"
#include "sections.h"

static struct vyre_error err;

static vyre_program *parse(const char *text) {
    vyre_program *p = NULL;
    vyre_error_clear(&err);
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK) {
        harness_fail(__FILE__, __LINE__, "parse: %s", err.message);
        return NULL;
    }
    return p;
}

/* The problems of an invalid program, or NULL (then it is a failure) when it is valid. */
static bool has_problem(const char *text, const char *code, const char *path) {
    vyre_program *p = parse(text);
    if (!p) return false;
    struct vyre_problems probs = {0};
    enum vyre_status st = vyre_validate(p, &probs);
    bool found = false;
    for (size_t i = 0; i < probs.count; i++)
        if (strcmp(probs.items[i].code, code) == 0 &&
            (!path || strcmp(probs.items[i].path, path) == 0) && probs.items[i].fix[0])
            found = true;
    if (!found) {
        fprintf(stderr, "  want %s at %s; got status %d:\n", code, path ? path : "*", (int)st);
        for (size_t i = 0; i < probs.count; i++)
            fprintf(stderr, "    %s %s: %s\n", probs.items[i].code, probs.items[i].path,
                    probs.items[i].message);
    }
    vyre_problems_free(&probs);
    vyre_program_free(p);
    return found;
}

static bool valid(const char *text) {
    vyre_program *p = parse(text);
    if (!p) return false;
    struct vyre_problems probs = {0};
    enum vyre_status st = vyre_validate(p, &probs);
    for (size_t i = 0; i < probs.count; i++)
        fprintf(stderr, "    %s %s: %s\n", probs.items[i].code, probs.items[i].path,
                probs.items[i].message);
    vyre_problems_free(&probs);
    vyre_program_free(p);
    return st == VYRE_OK;
}

/* Runs text on the interpreter with u32 buffers bufs[i] of n[i] elements. */
static enum vyre_status run(const char *text, uint32_t **bufs, const uint64_t *n, size_t nb,
                            const vyre_bits *params, size_t np, uint32_t groups, uint64_t *rounds) {
    vyre_program *p = parse(text);
    if (!p) return VYRE_ERR_SYNTAX;
    struct vyre_buffer_arg args[8];
    for (size_t i = 0; i < nb; i++) args[i] = (struct vyre_buffer_arg){bufs[i], n[i]};
    struct vyre_run_args a = {args, nb, params, np, {groups, 1, 1}};
    vyre_error_clear(&err);
    enum vyre_status st =
        vyre_ref_run(p, &a, &(struct vyre_ref_run_options){.rounds = rounds}, &err);
    if (st != VYRE_OK) fprintf(stderr, "  run: %s\n", err.message);
    vyre_program_free(p);
    return st;
}

/* ---- text ------------------------------------------------------------------------------ */

static const char EXCHANGE[] = "(program exchange (workgroup 4)\n"
                               "  (buffer a u32 read_write)\n"
                               "  (buffer b u32 read_write)\n"
                               "  (let i (gid x))\n"
                               "  (store a i (mul i 10u32))\n"
                               "  (grid_barrier)\n"
                               "  (let j (gid x))\n"
                               "  (store b j (load a (sub (sub (len a) j) 1u32))))\n";

static const char CONVERGE[] = "(program countdown (workgroup 4)\n"
                               "  (buffer x u32 read_write)\n"
                               "  (buffer flag u32 read_write)\n"
                               "  (param max u32)\n"
                               "  (converge flag max\n"
                               "    (let i (gid x))\n"
                               "    (if (gt (load x i) 0u32)\n"
                               "      (then\n"
                               "        (store x i (sub (load x i) 1u32))\n"
                               "        (store flag 0u32 1u32)))))\n";

/* A converge on a worklist (docs/GRID.md): each round halves the items and pushes the
 * non-zero halves; the rounds' end advances the worklist on the device. */
static const char WL_CONVERGE[] = "(program halve (workgroup 4)\n"
                                  "  (worklist w u32)\n"
                                  "  (buffer seen u32 read_write)\n"
                                  "  (param max u32)\n"
                                  "  (converge w max\n"
                                  "    (let i (gid x))\n"
                                  "    (if (lt i (len w))\n"
                                  "      (then\n"
                                  "        (let v (shr (load w i) 1u32))\n"
                                  "        (atomic add seen 0u32 1u32)\n"
                                  "        (if (gt v 0u32) (then (push w v)))))))\n";

static void test_text(void) {
    const char *texts[] = {EXCHANGE, CONVERGE};
    for (size_t k = 0; k < 2; k++) {
        vyre_program *p = parse(texts[k]);
        if (!p) continue;
        char *out = NULL;
        CHECK(vyre_text_print(p, &out, NULL) == VYRE_OK);
        CHECK(out && strcmp(out, texts[k]) == 0);
        if (out && strcmp(out, texts[k]) != 0) fprintf(stderr, "%s\n---\n%s\n", out, texts[k]);
        vyre_free(out);
        vyre_program_free(p);
    }
    vyre_program *p = NULL;
    const char *bad[] = {"(program a (workgroup 1) (buffer f u32 read_write) (converge))",
                         "(program a (workgroup 1) (buffer f u32 read_write) (converge f))",
                         "(program a (workgroup 1) (grid_barrier 1u32))"};
    for (size_t i = 0; i < 3; i++) {
        CHECK(vyre_text_parse(bad[i], strlen(bad[i]), &p, &err) == VYRE_ERR_SYNTAX);
        CHECK_STR_CONTAINS(err.message, "Fix:");
    }
}

/* ---- validation -------------------------------------------------------------------------- */

#define HEAD "(program v (workgroup 4) (buffer a u32 read_write) (buffer f u32 read_write) "

static void test_validate(void) {
    CHECK(valid(EXCHANGE));
    CHECK(valid(CONVERGE));
    /* a variable of an earlier section */
    CHECK(has_problem(HEAD "(let i (gid x)) (grid_barrier) (store a i 1u32))", "grid-scope",
                      "body[2].index"));
    CHECK(has_problem(HEAD "(let i (gid x)) (converge f 3u32 (store a i 1u32)))", "grid-scope",
                      "body[1].body[0].index"));
    CHECK(
        has_problem(HEAD "(let i (gid x)) (grid_barrier) (set i 2u32))", "grid-scope", "body[2]"));
    /* grid-level control flow must be grid-uniform */
    CHECK(has_problem(HEAD "(if (lt (wgid x) 2u32) (then (grid_barrier))))", "grid-nonuniform",
                      "body[0].cond"));
    CHECK(has_problem(HEAD "(for k 0u32 (load a 0u32) 1u32 (grid_barrier)))", "grid-nonuniform",
                      "body[0].to"));
    CHECK(has_problem(HEAD "(let n (len a)) (for k 0u32 n 1u32 (grid_barrier)))", "grid-nonuniform",
                      "body[1].to"));
    CHECK(has_problem(HEAD "(converge f (gid x) (store a 0u32 1u32)))", "grid-nonuniform",
                      "body[0].value"));
    CHECK(has_problem("(program v (workgroup 4) (buffer f u32 read_write) (param x f32) "
                      "(if (lt (exp x) 2.0f32) (then (grid_barrier))))",
                      "grid-nonuniform", "body[0].cond"));
    /* ... and may use params, len, wgsize, ngroups and grid loop variables */
    CHECK(valid("(program v (workgroup 4) (buffer a u32 read_write) (param n u32) "
                "(for k 0u32 (min n (len a)) 1u32 (for m k (mul (ngroups x) (wgsize x)) 1u32 "
                "(if (lt m 3u32) (then (grid_barrier))) (store a (gid x) m))))"));
    /* break cannot leave a grid loop, but may leave a loop of its own section */
    CHECK(has_problem(HEAD "(for k 0u32 3u32 1u32 (grid_barrier) (if (eq (gid x) 0u32) "
                           "(then (break)))))",
                      "grid-break", "body[0].body[1].then[0]"));
    CHECK(valid(HEAD "(for k 0u32 3u32 1u32 (grid_barrier) (for m 0u32 3u32 1u32 (break))))"));
    /* the flag */
    CHECK(has_problem("(program v (workgroup 4) (buffer f f32 read_write) "
                      "(converge f 3u32 (store f 0u32 1.0f32)))",
                      "converge-flag", "body[0]"));
    CHECK(has_problem("(program v (workgroup 4) (buffer f u32 read) (converge f 3u32))",
                      "converge-flag", "body[0]"));
    CHECK(has_problem("(program v (workgroup 4) (shared f u32 4) (converge f 3u32))",
                      "converge-flag", "body[0]"));
    CHECK(has_problem(HEAD "(converge f 3i32))", "type-mismatch", "body[0].value"));
    CHECK(has_problem(HEAD "(converge nope 3u32))", "undeclared-name", "body[0]"));
    /* a divergent return in one section does not constrain the barriers of the next */
    CHECK(valid(HEAD "(if (eq (gid x) 1u32) (then (return))) (grid_barrier) (barrier))"));
    CHECK(has_problem(HEAD "(if (eq (gid x) 1u32) (then (return))) (barrier))", "barrier-divergent",
                      "body[1]"));
    /* uniformity inside a section still holds */
    CHECK(has_problem(HEAD "(grid_barrier) (if (eq (gid x) 1u32) (then (barrier))))",
                      "barrier-divergent", "body[1].then[0]"));
}

/* ---- interpreter ------------------------------------------------------------------------- */

static void test_exchange(void) {
    /* 4 workgroups of 4: section 2 reads what other workgroups wrote in section 1 */
    uint32_t a[16] = {0}, b[16] = {0};
    uint32_t *bufs[] = {a, b};
    uint64_t n[] = {16, 16};
    CHECK(run(EXCHANGE, bufs, n, 2, NULL, 0, 4, NULL) == VYRE_OK);
    for (uint32_t i = 0; i < 16; i++) CHECK_EQ_U64(b[i], (15u - i) * 10u);
}

static void test_converge(void) {
    uint32_t x[8] = {3, 0, 1, 5, 2, 0, 4, 1}, f[1] = {7};
    uint32_t *bufs[] = {x, f};
    uint64_t n[] = {8, 1}, rounds = 0;
    vyre_bits max = 100;
    /* 5 rounds change something, the 6th finds nothing to do */
    CHECK(run(CONVERGE, bufs, n, 2, &max, 1, 2, &rounds) == VYRE_OK);
    CHECK_EQ_U64(rounds, 6);
    CHECK_EQ_U64(f[0], 0);
    for (int i = 0; i < 8; i++) CHECK_EQ_U64(x[i], 0);
    /* stopped by MAX: the flag keeps what the last round left */
    uint32_t y[8] = {3, 0, 1, 5, 2, 0, 4, 1};
    bufs[0] = y;
    f[0] = 0;
    max = 2;
    CHECK(run(CONVERGE, bufs, n, 2, &max, 1, 2, &rounds) == VYRE_OK);
    CHECK_EQ_U64(rounds, 2);
    CHECK_EQ_U64(f[0], 1);
    CHECK_EQ_U64(y[3], 3);
    /* MAX 0: no round, the flag zeroed */
    f[0] = 9;
    max = 0;
    CHECK(run(CONVERGE, bufs, n, 2, &max, 1, 2, &rounds) == VYRE_OK);
    CHECK_EQ_U64(rounds, 0);
    CHECK_EQ_U64(f[0], 0);
    CHECK_EQ_U64(y[3], 3);
    /* an empty flag buffer is refused: the loop reads and writes FLAG[0] */
    n[1] = 0;
    max = 50;
    CHECK(run(CONVERGE, bufs, n, 2, &max, 1, 2, &rounds) == VYRE_ERR_ARG);
    CHECK_EQ_U64(y[3], 3);
}

static void test_sections(void) {
    /* return ends the section only; shared memory is zero again in the next section;
     * a grid loop's variable is visible in its sections; rounds add up over loops */
    const char *text = "(program s (workgroup 4)\n"
                       "  (buffer a u32 read_write)\n"
                       "  (buffer f u32 read_write)\n"
                       "  (shared sh u32 4)\n"
                       "  (store sh (lid x) 5u32)\n"
                       "  (if (eq (lid x) 1u32) (then (return)))\n"
                       "  (store a (gid x) (add (load a (gid x)) 1u32))\n"
                       "  (grid_barrier)\n"
                       "  (store a (gid x) (add (load a (gid x)) (mul 10u32 (load sh (lid x)))))\n"
                       "  (for k 0u32 3u32 1u32\n"
                       "    (converge f 2u32 (store a (gid x) (add (load a (gid x)) k))\n"
                       "      (store f 0u32 1u32))))\n";
    uint32_t a[8] = {0}, f[1] = {0};
    uint32_t *bufs[] = {a, f};
    uint64_t n[] = {8, 1}, rounds = 0;
    CHECK(run(text, bufs, n, 2, NULL, 0, 2, &rounds) == VYRE_OK);
    CHECK_EQ_U64(rounds, 6); /* 2 rounds (the flag is always set) x 3 iterations */
    for (uint32_t i = 0; i < 8; i++) CHECK_EQ_U64(a[i], (i % 4 == 1 ? 0u : 1u) + 2u * (0 + 1 + 2));
}

static void test_sections_listing(void) {
    vyre_program *p = parse("(program s (workgroup 1) (buffer a u32 read_write)\n"
                            "  (store a 0u32 1u32) (grid_barrier) (grid_barrier)\n"
                            "  (for k 0u32 2u32 1u32 (store a 1u32 k) (grid_barrier) "
                            "(store a 2u32 k))\n"
                            "  (store a 3u32 1u32) (store a 4u32 1u32))");
    if (!p) return;
    CHECK(vyre_program_check(p, &err) == VYRE_OK);
    CHECK(p->has_grid);
    struct vyre_section *s = NULL;
    uint32_t n = 0;
    CHECK(vyre_sections(p, &s, &n));
    CHECK_EQ_U64(n, 4);
    if (n == 4) {
        CHECK(s[0].block == &p->body && s[0].first == 0 && s[0].count == 1);
        CHECK(strcmp(s[1].base, "body[3]") == 0 && strcmp(s[1].field, "body") == 0);
        CHECK(s[2].first == 2 && s[2].count == 1);
        CHECK(s[3].first == 4 && s[3].count == 2);
    }
    free(s);
    vyre_program_free(p);
}

/* ---- replayed converge rounds (the CUDA graph mode's protocol) ------------------------------ */

/* A mock executor of REPLAY: section 2 sets the flag to the loop variable k, so the
 * converge runs 1 round for k = 0 and MAX for k = 1, 2. With the round callbacks it
 * records (section, k) lists per (converge, k) and replays them; both ways must run the
 * same sections in the same order and report the same rounds. */
static const char REPLAY[] = "(program r (workgroup 1) (buffer f u32 read_write)\n"
                             "  (store f 0u32 0u32) (grid_barrier)\n"
                             "  (for k 0u32 3u32 1u32 (converge f 10u32\n"
                             "    (store f 0u32 1u32) (grid_barrier) (store f 0u32 k))))";

struct mock {
    uint32_t kslot, flag;
    uint32_t log[128][2], nlog;                 /* sections run: index, k */
    uint32_t rec[4][16][2], nrec[4], key[4], n; /* recorded rounds, keyed by k */
    int cur, opens;
    bool recording;
};

static void mock_exec(struct mock *m, uint32_t index, uint32_t k) {
    if (m->nlog < 128) {
        m->log[m->nlog][0] = index;
        m->log[m->nlog++][1] = k;
    }
    if (index == 2) m->flag = k;
    if (index == 1) m->flag = 1;
}

static enum vyre_status mock_section(void *ud, uint32_t index, const vyre_bits *slots,
                                     struct vyre_error *e) {
    struct mock *m = ud;
    (void)e;
    uint32_t k = (uint32_t)slots[m->kslot];
    if (!m->recording) {
        mock_exec(m, index, k);
    } else if (m->nrec[m->cur] < 16) {
        m->rec[m->cur][m->nrec[m->cur]][0] = index;
        m->rec[m->cur][m->nrec[m->cur]++][1] = k;
    }
    return VYRE_OK;
}

static enum vyre_status mock_zero(void *ud, uint32_t decl, struct vyre_error *e) {
    (void)decl, (void)e;
    ((struct mock *)ud)->flag = 0;
    return VYRE_OK;
}

static enum vyre_status mock_read(void *ud, uint32_t decl, bool *set, struct vyre_error *e) {
    (void)decl, (void)e;
    *set = ((struct mock *)ud)->flag != 0;
    return VYRE_OK;
}

static enum vyre_status mock_open(void *ud, const struct vyre_stmt *s, const vyre_bits *slots,
                                  bool *recorded, struct vyre_error *e) {
    struct mock *m = ud;
    (void)s, (void)e;
    m->opens++;
    uint32_t k = (uint32_t)slots[m->kslot];
    for (uint32_t i = 0; i < m->n; i++) {
        if (m->key[i] == k) {
            m->cur = (int)i;
            *recorded = true;
            return VYRE_OK;
        }
    }
    if (m->n == 4) return VYRE_ERR_LIMIT;
    m->key[m->n] = k;
    m->nrec[m->n] = 0;
    m->cur = (int)m->n++;
    m->recording = true;
    *recorded = false;
    return VYRE_OK;
}

static enum vyre_status mock_close(void *ud, enum vyre_status st, struct vyre_error *e) {
    (void)e;
    ((struct mock *)ud)->recording = false;
    return st;
}

static enum vyre_status mock_run(void *ud, bool *set, struct vyre_error *e) {
    struct mock *m = ud;
    (void)e;
    m->flag = 0;
    for (uint32_t i = 0; i < m->nrec[m->cur]; i++)
        mock_exec(m, m->rec[m->cur][i][0], m->rec[m->cur][i][1]);
    *set = m->flag != 0;
    return VYRE_OK;
}

static void test_replay(void) {
    vyre_program *p = parse(REPLAY);
    if (!p) return;
    CHECK(vyre_program_check(p, &err) == VYRE_OK);
    struct vyre_section *secs = NULL;
    uint32_t n = 0;
    CHECK(vyre_sections(p, &secs, &n));
    CHECK_EQ_U64(n, 3);
    vyre_bits params[1] = {0};
    uint64_t counts[1] = {1};
    struct vyre_grid_env env = {p, params, counts, {1, 1, 1}, {1, 1, 1}};
    static struct mock plain, replay;
    memset(&plain, 0, sizeof plain);
    memset(&replay, 0, sizeof replay);
    plain.kslot = replay.kslot = p->body.items[2]->slot;
    struct vyre_grid_ops ops = {&plain, mock_section, mock_zero, mock_read, NULL,
                                NULL,   NULL,         NULL,      NULL};
    uint64_t r1 = 0, r2 = 0, r3 = 0;
    CHECK(vyre_grid_run(&env, secs, n, &ops, &r1, &err) == VYRE_OK);
    CHECK_EQ_U64(r1, 21);
    struct vyre_grid_ops rops = {&replay,   mock_section, mock_zero, mock_read,
                                 mock_open, mock_close,   mock_run,  NULL, NULL};
    CHECK(vyre_grid_run(&env, secs, n, &rops, &r2, &err) == VYRE_OK);
    CHECK_EQ_U64(r2, 21);
    CHECK_EQ_U64(replay.n, 3);     /* one recording per value of k */
    CHECK_EQ_U64(replay.opens, 3); /* one open per converge entry */
    CHECK_EQ_U64(plain.nlog, replay.nlog);
    CHECK(memcmp(plain.log, replay.log, sizeof plain.log[0] * plain.nlog) == 0);
    CHECK_EQ_U64(plain.flag, replay.flag); /* the last round's flag */
    /* again: every round is found recorded, nothing is recorded anew */
    replay.nlog = 0;
    CHECK(vyre_grid_run(&env, secs, n, &rops, &r3, &err) == VYRE_OK);
    CHECK_EQ_U64(r3, 21);
    CHECK_EQ_U64(replay.n, 3);
    CHECK_EQ_U64(replay.opens, 6);
    CHECK_EQ_U64(replay.nlog, plain.nlog);
    free(secs);
    vyre_program_free(p);
}

/* ---- generator and PTX --------------------------------------------------------------------- */

static void test_random(void) {
    struct harness_batch batch[3] = {{0}};
    static const unsigned sms[3] = {70, 80, 90};
    uint32_t with_grid = 0, with_converge = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        struct vyre_gen_options o = {.max_stmts = 6,
                                     .allow_grid = true,
                                     .allow_barriers = seed % 2 == 0,
                                     .allow_subgroup = seed % 5 == 0};
        vyre_program *p = vyre_gen_random(seed, &o), *q = vyre_gen_random(seed, &o);
        CHECK(p && q && vyre_program_equal(p, q));
        if (p && vyre_program_check(p, &err) != VYRE_OK) {
            harness_fail(__FILE__, __LINE__, "seed %llu: %s", (unsigned long long)seed,
                         err.message);
        } else if (p) {
            with_grid += p->has_grid;
            char *text = NULL;
            vyre_text_print(p, &text, NULL);
            with_converge += text && strstr(text, "(converge") != NULL;
            vyre_free(text);
            if (seed % 3 == 0) {
                /* every other one in debug mode (its counters follow the grid params) */
                struct vyre_ptx_options po = {.sm = sms[seed % 9 / 3], .debug = seed % 2 == 0};
                char *ptx = NULL;
                CHECK(vyre_ptx_emit(p, &po, &ptx, NULL, &err) == VYRE_OK);
                if (ptx) harness_batch_add(&batch[seed % 9 / 3], ptx);
                vyre_free(ptx);
            }
        }
        vyre_program_free(p);
        vyre_program_free(q);
    }
    CHECK(with_grid == 300);
    CHECK(with_converge > 30);
    for (int i = 0; i < 3; i++) {
        CHECK(batch[i].n > 10);
        CHECK(harness_ptxas_ok(batch[i].text, sms[i], false));
        free(batch[i].text);
    }
}

static void test_ptx(void) {
    const char *texts[] = {EXCHANGE, CONVERGE, WL_CONVERGE};
    for (size_t k = 0; k < 3; k++) {
        vyre_program *p = parse(texts[k]);
        if (!p) continue;
        for (int t = 0; t < 3; t++) {
            static const unsigned sms[3] = {70, 80, 90};
            struct vyre_ptx_options po = {.sm = sms[t]};
            char *ptx = NULL;
            CHECK(vyre_ptx_emit(p, &po, &ptx, NULL, &err) == VYRE_OK);
            CHECK_STR_CONTAINS(ptx, ".param .u64 vy_scratch");
            CHECK_STR_CONTAINS(ptx, "ld.acquire.gpu.global.u32");
            /* the barrier: one release atomic per block, a relaxed spin, one acquire;
             * a plain barrier has no separate fence (the atomic releases) */
            CHECK_STR_CONTAINS(ptx, "atom.release.gpu.global.add.u32");
            CHECK_STR_CONTAINS(ptx, "ld.relaxed.gpu.global.u32");
            if (k == 0) CHECK(ptx && !strstr(ptx, "fence."));
            if (k >= 1) CHECK_STR_CONTAINS(ptx, "st.release.gpu.global.u32"); /* converge */
            /* the worklist's advance, by the last block to arrive: the item pointers
             * swap and the pushed count becomes current, unless the round overflowed */
            if (k == 2) CHECK_STR_CONTAINS(ptx, "st.relaxed.gpu.global.u64");
            CHECK(ptx && !strstr(ptx, "%ctaid.y")); /* the physical grid is 1-D */
            CHECK(harness_ptxas_ok(ptx, sms[t], false));
            vyre_free(ptx);
        }
        vyre_program_free(p);
    }
    /* an elementwise-shaped grid program gets no vector entry (ptx_vec.c): the grid
     * registers exist only in the cooperative kernel's prologue */
    vyre_program *g = parse("(program ew (workgroup 16) (buffer x u32 read_write) "
                            "(buffer f u32 read_write) (store x (gid x) 1u32) (grid_barrier) "
                            "(for k 0u32 3u32 1u32 (converge f 50u32 (store x (gid x) k) "
                            "(grid_barrier) (store f 0u32 1u32))))");
    struct vyre_ptx_options go = {.sm = 80};
    char *gptx = NULL;
    if (g) CHECK(vyre_ptx_emit(g, &go, &gptx, NULL, &err) == VYRE_OK);
    CHECK(gptx && !strstr(gptx, "ew_v4") && !strstr(gptx, "@! "));
    if (gptx) CHECK(harness_ptxas_ok(gptx, 80, false));
    vyre_free(gptx);
    vyre_program_free(g);
    /* a program without grid statements keeps the plain ABI */
    vyre_program *p = parse("(program plain (workgroup 4) (buffer a u32 read_write) "
                            "(store a (gid x) 1u32))");
    struct vyre_ptx_options po = {.sm = 80};
    char *ptx = NULL;
    if (p) CHECK(vyre_ptx_emit(p, &po, &ptx, NULL, &err) == VYRE_OK);
    CHECK(ptx && !strstr(ptx, "vy_"));
    vyre_free(ptx);
    vyre_program_free(p);
}

/* ---- shared memory of programs with grid statements (shared_layout.c) ---------------- */

/* The PTX of vyre_ptx_emit for text at sm_90 contains needle and assembles. */
static void ptx_has(const char *text, const char *needle) {
    vyre_program *p = parse(text);
    if (!p) return;
    struct vyre_ptx_options po = {.sm = 90};
    char *ptx = NULL;
    CHECK(vyre_ptx_emit(p, &po, &ptx, NULL, &err) == VYRE_OK);
    CHECK_STR_CONTAINS(ptx, needle);
    if (ptx) CHECK(harness_ptxas_ok(ptx, 90, false));
    vyre_free(ptx);
    vyre_program_free(p);
}

/* The validator's shared-memory rule for a program with grid statements is the PTX's
 * window: the largest section (arrays of exclusive branches overlapped, as a
 * megakernel's steps are) plus the grid barrier's 4-byte word, not the sum of every
 * array; a program without grid statements still adds up its arrays. */
static void test_shared_window(void) {
#define SW_HEAD "(program w (workgroup 32) (buffer o u32 read_write) (shared a u32 10000) " \
                "(shared b u32 10000) "
    /* two sections of 40000 bytes each: one window of 40000 */
    const char *two = SW_HEAD "(store a (lid x) 1u32) (store o (gid x) (load a 0u32)) "
                              "(grid_barrier) (store b (lid x) 2u32) "
                              "(store o (gid x) (load b 1u32)))";
    CHECK(valid(two));
    ptx_has(two, ".shared .align 8 .b8 vy_smem[40000];");
    /* both in one section: 80000 */
    CHECK(has_problem(SW_HEAD "(store a (lid x) 1u32) (store b (lid x) 1u32) (grid_barrier))",
                      "shared-size", "decls"));
    /* the branches of an if on wgid (a megakernel's step dispatch) overlap */
    const char *excl = SW_HEAD "(grid_barrier) (if (lt (wgid x) 2u32) "
                               "(then (store a (lid x) 1u32) (store o (gid x) (load a 3u32))) "
                               "(else (store b (lid x) 1u32) (store o (gid x) (load b 3u32)))))";
    CHECK(valid(excl));
    ptx_has(excl, ".shared .align 8 .b8 vy_smem[40000];");
    /* ... the branches of an if on lid do not (a workgroup may run both) */
    CHECK(has_problem(SW_HEAD "(grid_barrier) (if (lt (lid x) 2u32) "
                              "(then (store a (lid x) 1u32)) (else (store b (lid x) 1u32))))",
                      "shared-size", "decls"));
    /* the limit counts the window's 8-byte alignment and the barrier's word: 49144 + 4
     * fits (and assembles), 49148 (49152 aligned) + 4 does not */
    const char *edge = "(program w (workgroup 32) (buffer o u32 read_write) (shared a u32 12286) "
                       "(store a (lid x) 1u32) (grid_barrier))";
    CHECK(valid(edge));
    ptx_has(edge, "vy_smem[49144];");
    CHECK(has_problem("(program w (workgroup 32) (buffer o u32 read_write) "
                      "(shared a u32 12287) (store a (lid x) 1u32) (grid_barrier))",
                      "shared-size", "decls"));
    /* without grid statements the arrays still add up */
    CHECK(has_problem(SW_HEAD "(store a (lid x) 1u32))", "shared-size", "decls[2]"));
#undef SW_HEAD
}

int main(void) {
    RUN_TEST(test_text);
    RUN_TEST(test_validate);
    RUN_TEST(test_exchange);
    RUN_TEST(test_converge);
    RUN_TEST(test_sections);
    RUN_TEST(test_sections_listing);
    RUN_TEST(test_replay);
    RUN_TEST(test_random);
    RUN_TEST(test_ptx);
    RUN_TEST(test_shared_window);
    return harness_finish();
}
