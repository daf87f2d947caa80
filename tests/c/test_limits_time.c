/* test_limits_time.c — programs exactly at the 100 000-node limit (and one node past
 * it) in three shapes: a flat list of stores, one wide expression tree per statement,
 * and loops of lets; each at the limit parses, validates and becomes PTX for sm_90;
 * one past gives "limit-nodes". Prints how long each step took (time
 * must stay bounded; reported in bench/results), asserting only correctness: timings are
 * reported, not tested. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "vyre.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Text of a program with `nodes` nodes (statements plus expressions). */
static char *flat_stores(unsigned nodes) {
    size_t cap = 64 + (size_t)nodes * 16, k = 0;
    char *s = malloc(cap);
    k += (size_t)sprintf(s + k, "(program flat (workgroup 1) (buffer o u32 write)\n");
    unsigned left = nodes;
    while (left >= 3 && left != 4) { /* (store o 0u32 1u32): 3 nodes */
        k += (size_t)sprintf(s + k, "(store o 0u32 1u32)\n");
        left -= 3;
    }
    while (left >= 2) { /* (let aN 1u32): 2 nodes */
        k += (size_t)sprintf(s + k, "(let a%u 1u32)\n", left);
        left -= 2;
    }
    if (left == 1) k += (size_t)sprintf(s + k, "(return)\n");
    sprintf(s + k, ")\n");
    return s;
}

/* Lets whose values are balanced trees of 127 adds (255 nodes + the let: 256). */
static char *wide_trees(unsigned nodes) {
    size_t cap = 64 + (size_t)nodes * 24, k = 0;
    char *s = malloc(cap);
    k += (size_t)sprintf(s + k, "(program wide (workgroup 1) (buffer o u32 write)\n");
    unsigned left = nodes, n = 0;
    while (left >= 256 + 3) {
        k += (size_t)sprintf(s + k, "(let t%u ", n++);
        /* 64 leaves of (add 1u32 2u32) joined pairwise: 64*3 + 63 = 255 nodes */
        for (int i = 0; i < 63; i++) k += (size_t)sprintf(s + k, "(add ");
        k += (size_t)sprintf(s + k, "(add 1u32 2u32)");
        for (int i = 0; i < 63; i++) k += (size_t)sprintf(s + k, " (add 1u32 2u32))");
        k += (size_t)sprintf(s + k, ")\n");
        left -= 256;
    }
    sprintf(s + k, ")\n");
    char *rest = flat_stores(left);
    /* splice the remaining nodes' statements in front of the final ')' */
    char *body = strchr(rest, '\n') + 1;
    size_t blen = strlen(body);
    char *out = malloc(strlen(s) + blen + 1);
    size_t slen = strlen(s);
    memcpy(out, s, slen - 2); /* drop ")\n" */
    memcpy(out + slen - 2, body, blen + 1);
    free(s);
    free(rest);
    return out;
}

struct timing {
    double parse, validate, ptx;
};

static bool pipeline(const char *text, bool expect_valid, struct timing *t) {
    vyre_program *p = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    double t0 = now_ms();
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK) {
        /* Past the node limit the parser stops at the limit (no huge tree first), before building
         * the rest of the tree: that is the expected refusal. */
        t->parse = now_ms() - t0;
        t->validate = 0;
        t->ptx = 0;
        if (!expect_valid && strstr(err.message, "nodes")) return true;
        fprintf(stderr, "parse: %s\n", err.message);
        return false;
    }
    double t1 = now_ms();
    struct vyre_problems probs = {NULL, 0, 0};
    enum vyre_status st = vyre_validate(p, &probs);
    double t2 = now_ms();
    bool ok = expect_valid ? st == VYRE_OK
                           : st == VYRE_ERR_INVALID && probs.count == 1 &&
                                 strcmp(probs.items[0].code, "limit-nodes") == 0;
    vyre_problems_free(&probs);
    t->parse = t1 - t0;
    t->validate = t2 - t1;
    t->ptx = 0;
    if (ok && expect_valid) {
        struct vyre_ptx_options o = {.sm = 90};
        char *ptx = NULL;
        size_t len = 0;
        ok = vyre_ptx_emit(p, &o, &ptx, &len, &err) == VYRE_OK && len > 0;
        t->ptx = now_ms() - t2;
        vyre_free(ptx);
    }
    vyre_program_free(p);
    return ok;
}

static void test_node_limit_times(void) {
    static const struct {
        const char *name;
        char *(*make)(unsigned);
    } shapes[] = {{"flat stores", flat_stores}, {"wide trees", wide_trees}};
    for (size_t i = 0; i < 2; i++) {
        char *at = shapes[i].make(100000), *past = shapes[i].make(100001);
        struct timing ta, tp;
        CHECK(pipeline(at, true, &ta));
        CHECK(pipeline(past, false, &tp));
        printf("| %s | 100 000 nodes | parse %.1f ms | validate %.1f ms | PTX sm_90 %.1f ms |\n",
               shapes[i].name, ta.parse, ta.validate, ta.ptx);
        printf("| %s | 100 001 nodes | parse %.1f ms (stopped at the limit) | validate %.1f ms | - |\n",
               shapes[i].name, tp.parse, tp.validate);
        free(at);
        free(past);
    }
}

int main(void) {
    RUN_TEST(test_node_limit_times);
    return harness_finish();
}
