/* test_race.c — the reference interpreter's race check (vyre_ref_run_options.races,
 * src/core/ref/race.c) and, with it, the generator's contract: every
 * program vyre_gen_random makes without allow_invalid is race-free, for every mix of
 * its options. First the check itself on hand-written programs that race (two stores,
 * a store and a read of one element, a store and an atomic, shared memory without a
 * barrier) and ones that do not (own elements, atomics only, a barrier between, a grid
 * barrier between, converge flag stores). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vyre.h"

#define ELEMS 96u
#define SEEDS 60u /* per option mix */

/* Runs p over small buffers (ELEMS elements unless declared) filled from seed, with
 * the race check; returns the number of races (UINT64_MAX when the run failed). */
static uint64_t races_of(vyre_program *p, uint64_t seed, char *first, size_t firstsz) {
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS];
    uint64_t counts[VYRE_MAX_BUFFERS];
    uint32_t nb = 0, np = 0, n = vyre_program_decl_count(p);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1u;
    for (uint32_t i = 0; i < n; i++) {
        struct vyre_decl_info d;
        if (!vyre_program_decl(p, i, &d)) break;
        if (d.kind == VYRE_DECL_BUFFER && nb < VYRE_MAX_BUFFERS) {
            uint64_t count = d.count ? d.count : ELEMS;
            size_t bytes = (size_t)count * vyre_type_size(d.type);
            uint8_t *mem = calloc(1, bytes ? bytes : 1);
            for (size_t b = 0; mem && b < bytes; b++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                mem[b] = (uint8_t)(x % 7u); /* small values: indices stay in range often */
            }
            if (mem && d.type == VYRE_BOOL)
                for (uint64_t e = 0; e < count; e++) ((uint32_t *)(void *)mem)[e] &= 1u;
            bufs[nb].data = mem;
            bufs[nb].count = count;
            counts[nb++] = count;
        } else if (d.kind == VYRE_DECL_PARAM && np < VYRE_MAX_PARAMS) {
            params[np++] = (vyre_bits)(seed % 5u);
        }
    }
    struct vyre_error err;
    vyre_error_clear(&err);
    struct vyre_run_args args = {bufs, nb, params, np, {1, 1, 1}};
    struct vyre_race_report rep;
    memset(&rep, 0, sizeof rep);
    struct vyre_ref_run_options ro = {.max_steps = 2000000u, .races = &rep};
    uint64_t got = UINT64_MAX;
    struct vyre_grid_options go = {.buffer_counts = counts, .nbuffers = nb, .n = ELEMS};
    if (vyre_launch_grid(p, &go, args.grid, &err) == VYRE_OK &&
        vyre_ref_run(p, &args, &ro, &err) == VYRE_OK)
        got = rep.count;
    else if (first)
        snprintf(first, firstsz, "run failed: %.200s", err.message);
    if (first && got != UINT64_MAX) snprintf(first, firstsz, "%s", rep.first);
    for (uint32_t b = 0; b < nb; b++) free(bufs[b].data);
    return got;
}

static vyre_program *parse(const char *src) {
    vyre_program *p = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_text_parse(src, strlen(src), &p, &err) != VYRE_OK)
        harness_fail(__FILE__, __LINE__, "parse: %s\n%s", err.message, src);
    return p;
}

static void expect(const char *src, int racy, const char *needle) {
    vyre_program *p = parse(src);
    if (!p) return;
    char first[256] = "";
    uint64_t n = races_of(p, 1, first, sizeof first);
    if (n == UINT64_MAX) harness_fail(__FILE__, __LINE__, "%s\n%s", first, src);
    if (racy) {
        CHECK(n > 0);
        if (needle) CHECK_STR_CONTAINS(first, needle);
    } else if (n != 0 && n != UINT64_MAX) {
        harness_fail(__FILE__, __LINE__, "a race-free program reported %llu races: %s\n%s",
                     (unsigned long long)n, first, src);
    }
    vyre_program_free(p);
}

static void test_the_check(void) {
    /* racy */
    expect("(program a (workgroup 32) (buffer x u32 read_write) (store x 0u32 (gid x)))", 1,
           "buffer 'x' element 0");
    expect("(program b (workgroup 32) (buffer x u32 read_write) (let i (gid x))"
           " (if (lt (add i 1u32) (len x)) (then (store x i (load x (add i 1u32))))))",
           1, "read it");
    expect("(program c (workgroup 32) (buffer x u32 read_write) (let i (gid x))"
           " (if (eq i 3u32) (then (store x 0u32 5u32)))"
           " (if (eq i 9u32) (then (atomic add x 0u32 1u32))))",
           1, "atomically updated");
    expect("(program d (workgroup 32) (buffer y u32 read_write) (shared t u32 32)"
           " (store t (lid x) (gid x)) (store y (gid x) (load t (rem (add (lid x) 1u32) 32u32))))",
           1, "shared 't'");
    expect("(program h2 (workgroup 32) (buffer x u32 read_write) (buffer y u32 read_write)"
           " (let i (gid x)) (if (lt i (len x)) (then (store x i i)))"
           " (if (lt i (len y)) (then (store y i (load x (rem (add i 1u32) (len x)))))))",
           1, "buffer 'x'");
    /* race-free */
    expect("(program e (workgroup 32) (buffer x u32 read_write) (let i (gid x))"
           " (if (lt i (len x)) (then (store x i (add (load x i) 1u32)))))",
           0, NULL);
    expect("(program f (workgroup 32) (buffer x u32 read_write) (atomic add x 0u32 (gid x))"
           " (atomic max x 1u32 (gid x)))",
           0, NULL);
    expect("(program g (workgroup 32) (buffer y u32 read_write) (shared t u32 32)"
           " (store t (lid x) (gid x)) (barrier)"
           " (store y (gid x) (load t (rem (add (lid x) 1u32) 32u32))))",
           0, NULL);
    expect("(program h (workgroup 32) (buffer x u32 read_write) (buffer y u32 read_write)"
           " (let i (gid x)) (if (lt i (len x)) (then (store x i i))) (grid_barrier)"
           " (let j (gid x)) (if (lt j (len y)) (then (store y j (load x (rem (add j 1u32) (len x)))))))",
           0, NULL);
    expect("(program k (workgroup 32) (buffer x u32 read_write) (buffer flag u32 read_write)"
           " (param max u32) (converge flag max (let i (gid x))"
           " (if (lt i (len x)) (then (if (gt (load x i) 0u32)"
           " (then (store x i (sub (load x i) 1u32)) (store flag 0u32 1u32)))))))",
           0, NULL);
}

/* Every option mix of the generator (allow_invalid off): no program races. */
static void test_generated_programs_are_race_free(void) {
    unsigned reported = 0, total = 0, ran = 0;
    for (unsigned mask = 0; mask < 64u; mask++) {
        struct vyre_gen_options o;
        memset(&o, 0, sizeof o);
        o.allow_barriers = (mask & 1u) != 0;
        o.allow_approx = (mask & 2u) != 0;
        o.allow_subgroup = (mask & 4u) != 0;
        o.elementwise = (mask & 8u) != 0;
        o.allow_opt_shapes = (mask & 16u) != 0;
        o.allow_grid = (mask & 32u) != 0;
        o.max_stmts = 2u + mask % 10u;
        unsigned racy = 0;
        for (unsigned s = 0; s < SEEDS; s++) {
            vyre_program *p = vyre_gen_random((uint64_t)s * 0x9E3779B97F4A7C15ull + mask, &o);
            if (!p) continue;
            char first[256] = "";
            uint64_t n = races_of(p, s, first, sizeof first);
            if (n != UINT64_MAX) ran++;
            if (n != UINT64_MAX && n > 0) {
                racy++;
                if (reported++ < 6) {
                    char *t = NULL;
                    size_t len = 0;
                    (void)vyre_text_print(p, &t, &len);
                    fprintf(stderr, "options 0x%02x seed %u: %s\n%s\n", mask, s, first,
                            t ? t : "");
                    vyre_free(t);
                }
            }
            vyre_program_free(p);
        }
        if (racy) fprintf(stderr, "options 0x%02x: %u of %u programs race\n", mask, racy, SEEDS);
        total += racy;
    }
    fprintf(stderr, "race check: %u generated programs ran, %u raced\n", ran, total);
    CHECK(ran > 64u * SEEDS / 2u);
    CHECK(total == 0);
}

int main(void) {
    RUN_TEST(test_the_check);
    RUN_TEST(test_generated_programs_are_race_free);
    return harness_finish();
}
