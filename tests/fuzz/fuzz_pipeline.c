/* fuzz_pipeline.c — one input through the whole CPU pipeline (any text must be safe):
 * parse -> print -> parse again (the round trip must give an equal program) ->
 * validate -> for a valid program: PTX for three targets (each optimises a copy:
 * constant folding, bounds) and a reference run on small buffers under a step
 * budget. Any crash, sanitizer report, hang or broken round trip is a finding.
 *
 * Built two ways (CMake option VYRE_FUZZ): with libFuzzer (clang -fsanitize=fuzzer)
 * as vyre_fuzz, and as vyre_fuzz_replay, a plain driver that runs the function over
 * files and directories given on the command line (CI slice without libFuzzer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vyre.h"

#define FUZZ_ELEMS 96u     /* elements per unsized buffer */
#define FUZZ_STEPS 200000u /* loop iterations one run may take */
#define FUZZ_MAX_INVOCATIONS 4096u
#define FUZZ_WL_CAP 24u    /* items a fuzzed worklist holds per round */

static void fuzz_fail(const char *what, const char *text) {
    fprintf(stderr, "vyre_fuzz: %s\n--- input ---\n%s\n", what, text);
    abort();
}

static void round_trip(const vyre_program *p, const char *text) {
    char *printed = NULL;
    size_t len = 0;
    if (vyre_text_print(p, &printed, &len) != VYRE_OK) fuzz_fail("print failed", text);
    vyre_program *q = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_text_parse(printed, len, &q, &err) != VYRE_OK)
        fuzz_fail("printed text does not parse", printed);
    if (!vyre_program_equal(p, q)) fuzz_fail("parse(print(p)) differs from p", printed);
    vyre_program_free(q);
    vyre_free(printed);
}

/* Small buffers (declared COUNT or FUZZ_ELEMS elements, filled from the input's
 * bytes) and params from the input too, so runs see varied values. */
static void run_reference(vyre_program *p, const uint8_t *data, size_t size) {
    struct vyre_buffer_arg bufs[64];
    vyre_bits params[64];
    uint64_t counts[64];
    /* Worklists: a few current items from the input and a small next
     * array, so pushes past the capacity (overflow_needed) are exercised too. */
    struct vyre_worklist_arg wls[VYRE_MAX_WORKLISTS];
    struct vyre_worklist_arg *wlp[VYRE_MAX_WORKLISTS];
    uint32_t nw = 0;
    uint32_t nb = 0, np = 0, n = vyre_program_decl_count(p);
    for (uint32_t i = 0; i < n; i++) {
        struct vyre_decl_info d;
        if (!vyre_program_decl(p, i, &d)) break;
        if (d.kind == VYRE_DECL_BUFFER && nb < 64) {
            uint64_t count = d.count ? d.count : FUZZ_ELEMS;
            if (count > 1u << 16) count = 1u << 16;
            size_t bytes = (size_t)count * vyre_type_size(d.type);
            uint8_t *mem = calloc(1, bytes ? bytes : 1);
            if (!mem) return;
            for (size_t b = 0; b < bytes && size; b++) mem[b] = data[(b * 7 + i) % size];
            if (d.type == VYRE_BOOL)
                for (uint64_t e = 0; e < count; e++) ((uint32_t *)mem)[e] &= 1u;
            bufs[nb].data = mem;
            bufs[nb].count = count;
            counts[nb++] = count;
        } else if (d.kind == VYRE_DECL_PARAM && np < 64) {
            vyre_bits v = 0;
            for (size_t b = 0; b < 8 && size; b++) v = v << 8 | data[(np * 8 + b) % size];
            if (vyre_type_size(d.type) == 4) v &= 0xffffffffu;
            if (d.type == VYRE_BOOL) v &= 1u;
            params[np++] = v;
        } else if (d.kind == VYRE_DECL_WORKLIST && nw < VYRE_MAX_WORKLISTS) {
            size_t esz = vyre_type_size(d.type);
            struct vyre_worklist_arg *w = &wls[nw];
            memset(w, 0, sizeof *w);
            w->capacity = FUZZ_WL_CAP;
            w->cur_count = size ? (uint32_t)(data[i % size] % (FUZZ_WL_CAP + 1)) : 0;
            w->cur = calloc(FUZZ_WL_CAP, esz ? esz : 1);
            w->next = calloc(FUZZ_WL_CAP, esz ? esz : 1);
            wlp[nw++] = w;
            if (!w->cur || !w->next) goto out;
            for (size_t b = 0; b < w->cur_count * esz && size; b++)
                ((uint8_t *)w->cur)[b] = data[(b * 5 + i) % size];
            if (d.type == VYRE_BOOL)
                for (uint32_t e = 0; e < w->cur_count; e++) ((uint32_t *)w->cur)[e] &= 1u;
        }
    }
    struct vyre_error err;
    vyre_error_clear(&err);
    struct vyre_run_args args = {bufs, nb, params, np, {1, 1, 1}};
    struct vyre_ref_run_options ro = {.max_steps = FUZZ_STEPS, .worklists = wlp,
                                      .nworklists = nw};
    struct vyre_grid_options go = {.buffer_counts = counts, .nbuffers = nb, .n = FUZZ_ELEMS};
    if (vyre_launch_grid(p, &go, args.grid, &err) == VYRE_OK) {
        uint32_t wg[3];
        vyre_program_workgroup(p, wg);
        uint64_t inv = (uint64_t)args.grid[0] * args.grid[1] * args.grid[2] * wg[0] * wg[1] * wg[2];
        enum vyre_status st = VYRE_ERR_RUNTIME;
        if (inv <= FUZZ_MAX_INVOCATIONS) st = vyre_ref_run(p, &args, &ro, &err);
        for (uint32_t w = 0; st == VYRE_OK && w < nw; w++)
            if (wls[w].next_count > wls[w].capacity && wls[w].overflow_needed < wls[w].next_count)
                fuzz_fail("a worklist overflow was not reported (overflow_needed)", "(run)");
    }
out:
    for (uint32_t w = 0; w < nw; w++) {
        free(wls[w].cur);
        free(wls[w].next);
    }
    for (uint32_t b = 0; b < nb; b++) free(bufs[b].data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size); /* libFuzzer's entry */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    vyre_program *p = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    if (vyre_text_parse(text, size, &p, &err) == VYRE_OK) {
        round_trip(p, text);
        struct vyre_problems probs = {NULL, 0, 0};
        enum vyre_status valid = vyre_validate(p, &probs);
        vyre_problems_free(&probs);
        if (valid == VYRE_OK) {
            static const unsigned sms[] = {70, 80, 90};
            for (unsigned s = 0; s < 3; s++) {
                struct vyre_ptx_options o = {.sm = sms[s]};
                char *ptx = NULL;
                size_t len = 0;
                if (vyre_ptx_emit(p, &o, &ptx, &len, &err) != VYRE_OK)
                    fuzz_fail("a valid program failed PTX emission", text);
                vyre_free(ptx);
            }
            run_reference(p, data, size);
        }
        vyre_program_free(p);
    }
    free(text);
    return 0;
}
