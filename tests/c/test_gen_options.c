/* test_gen_options.c — vyre_gen_random's contract for every mix of its options (issue
 * 26): without allow_invalid every program validates, in all 64 combinations of
 * barriers, approx, subgroup, elementwise, optimiser shapes and grid; and the programs
 * are the same whatever compiler built the library. The second part compares a digest
 * per combination (all 128, allow_invalid included) with the list committed in
 * tests/c/gen_hashes.txt: a build by gcc and one by clang must both match it, which
 * fails when a random draw hides in sibling function arguments (C leaves their order
 * unspecified). VYRE_GEN_HASHES_WRITE=1 rewrites the list (after an intended change to
 * the generator; commit it with the change). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vyre.h"

#define SEEDS_VALID 120u /* per combination */
#define SEEDS_HASH 16u

static struct vyre_gen_options options_of(unsigned mask) {
    struct vyre_gen_options o;
    memset(&o, 0, sizeof o);
    o.allow_barriers = (mask & 1u) != 0;
    o.allow_approx = (mask & 2u) != 0;
    o.allow_subgroup = (mask & 4u) != 0;
    o.elementwise = (mask & 8u) != 0;
    o.allow_opt_shapes = (mask & 16u) != 0;
    o.allow_grid = (mask & 32u) != 0;
    o.allow_invalid = (mask & 64u) != 0;
    return o;
}

static uint64_t seed_of(unsigned s) { return (uint64_t)s * 0x9E3779B97F4A7C15ull + 12345u; }

static void test_every_mix_is_valid(void) {
    unsigned reported = 0;
    for (unsigned mask = 0; mask < 64u; mask++) {
        struct vyre_gen_options o = options_of(mask);
        o.max_stmts = 1u + mask % 12u; /* vary the sizes too */
        unsigned bad = 0;
        for (unsigned s = 0; s < SEEDS_VALID; s++) {
            vyre_program *p = vyre_gen_random(seed_of(s), &o);
            CHECK(p != NULL);
            if (!p) continue;
            struct vyre_problems pr = {NULL, 0, 0};
            if (vyre_validate(p, &pr) != VYRE_OK) {
                bad++;
                if (reported++ < 5 && pr.count)
                    fprintf(stderr, "options 0x%02x seed %u: %s: %s\n", mask, s, pr.items[0].code,
                            pr.items[0].message);
            }
            vyre_problems_free(&pr);
            vyre_program_free(p);
        }
        if (bad) fprintf(stderr, "options 0x%02x: %u of %u programs invalid\n", mask, bad,
                         SEEDS_VALID);
        CHECK(bad == 0);
    }
}

/* One digest per option combination: FNV-1a over the programs' hashes (0 for NULL). */
static uint64_t digest(unsigned mask) {
    struct vyre_gen_options o = options_of(mask);
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned s = 0; s < SEEDS_HASH; s++) {
        vyre_program *p = vyre_gen_random(seed_of(s), &o);
        uint64_t ph = p ? vyre_program_hash(p) : 0;
        vyre_program_free(p);
        for (unsigned b = 0; b < 8; b++) {
            h ^= (ph >> (8 * b)) & 0xffu;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

static void test_same_programs_on_every_compiler(void) {
    const char *path = VYRE_SOURCE_DIR "/tests/c/gen_hashes.txt";
    const char *w = getenv("VYRE_GEN_HASHES_WRITE");
    if (w && strcmp(w, "1") == 0) {
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f) return;
        fprintf(f, "# test_gen_options.c: options mask, digest of %u programs\n", SEEDS_HASH);
        for (unsigned mask = 0; mask < 128u; mask++)
            fprintf(f, "%u %016llx\n", mask, (unsigned long long)digest(mask));
        fclose(f);
        return;
    }
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    char line[128];
    unsigned seen = 0, differ = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned mask;
        unsigned long long want;
        if (line[0] == '#' || sscanf(line, "%u %llx", &mask, &want) != 2 || mask >= 128u) continue;
        seen++;
        uint64_t got = digest(mask);
        if (got != want) {
            if (differ++ < 5)
                fprintf(stderr,
                        "options 0x%02x: digest %016llx, the list says %016llx (built by %s)\n",
                        mask, (unsigned long long)got, want,
#if defined(__clang__)
                        "clang"
#elif defined(__GNUC__)
                        "gcc"
#else
                        "another compiler"
#endif
                );
        }
    }
    fclose(f);
    CHECK(seen == 128u);
    CHECK(differ == 0);
}

int main(void) {
    RUN_TEST(test_every_mix_is_valid);
    RUN_TEST(test_same_programs_on_every_compiler);
    return harness_finish();
}
