/* test_parse_stack.c — the deepest input the parser accepts (320 nested forms, the
 * program form included) parses on a 128 KiB thread stack, as embedding hosts that
 * run scripts on small stacks need; validation, printing and
 * PTX of it too, in every build type (Debug, RelWithDebInfo, Release, ASan: frame sizes
 * differ). The validator's node limit holds while parsing: a huge text stops at the limit
 * (so it cannot exhaust memory). Also the NULL arguments of the C API's small accessors. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vyre.h"

/* 128 KiB in an optimised build. AddressSanitizer's redzones and an -O0 build make
 * every frame several times larger, so the sanitizer build checks for no crash on 8x. */
#if defined(__SANITIZE_ADDRESS__) || defined(__OPTIMIZE__) == 0
enum { SMALL_STACK = 8 * 128 * 1024 };
#else
enum { SMALL_STACK = 128 * 1024 };
#endif

static char *deep_text(int exprs, int stmts) {
    size_t cap = 256 + (size_t)(exprs + stmts) * 64;
    char *s = malloc(cap), *w = s;
    w += sprintf(w, "(program deep (workgroup 1) (buffer o u32 read_write)\n");
    for (int i = 0; i < stmts; i++) w += sprintf(w, "(if (lt (gid x) 5u32) (then\n");
    w += sprintf(w, "(store o 0u32 ");
    for (int i = 0; i < exprs; i++) w += sprintf(w, "(add 1u32 ");
    w += sprintf(w, "0u32");
    for (int i = 0; i < exprs; i++) w += sprintf(w, ")");
    w += sprintf(w, ")");
    for (int i = 0; i < stmts; i++) w += sprintf(w, "))");
    sprintf(w, ")\n");
    return s;
}

struct job {
    const char *text;
    enum vyre_status parsed;
    bool printed;
};

static void *parse_job(void *arg) {
    struct job *j = arg;
    vyre_program *p = NULL;
    struct vyre_error err;
    vyre_error_clear(&err);
    j->parsed = vyre_text_parse(j->text, strlen(j->text), &p, &err);
    if (p) {
        char *out = NULL;
        size_t len = 0;
        j->printed = vyre_text_print(p, &out, &len) == VYRE_OK;
        vyre_free(out);
        struct vyre_problems probs = {NULL, 0, 0};
        (void)vyre_validate(p, &probs);
        vyre_problems_free(&probs);
        vyre_program_free(p);
    }
    return NULL;
}

static void on_small_stack(struct job *j) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SMALL_STACK);
    pthread_t t;
    CHECK(pthread_create(&t, &attr, parse_job, j) == 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);
}

static void test_deepest_expression(void) {
    /* program (1) + store (1) + 318 nested adds = 320 levels, the parser's limit */
    char *text = deep_text(318, 0);
    struct job j = {text, VYRE_ERR_ARG, false};
    on_small_stack(&j);
    CHECK(j.parsed == VYRE_OK);
    CHECK(j.printed);
    free(text);
    text = deep_text(319, 0); /* one past: a clear syntax error, still no crash */
    struct job k = {text, VYRE_OK, false};
    on_small_stack(&k);
    CHECK(k.parsed == VYRE_ERR_SYNTAX);
    free(text);
}

static void test_deepest_statements(void) {
    /* each if nests 2 levels, (if C (then ...)): program + 159 x 2 + store = 320 */
    char *text = deep_text(0, 159);
    struct job j = {text, VYRE_ERR_ARG, false};
    on_small_stack(&j);
    CHECK(j.parsed == VYRE_OK);
    CHECK(j.printed);
    free(text);
}

static void test_deepest_mixed(void) {
    /* 64 ifs (128 levels, the validator's statement nesting) around a store whose
     * value nests 190 adds: 1 + 128 + 1 + 190 = 320 */
    char *text = deep_text(190, 64);
    struct job j = {text, VYRE_ERR_ARG, false};
    on_small_stack(&j);
    CHECK(j.parsed == VYRE_OK);
    CHECK(j.printed);
    free(text);
}

/* (program ...) with `stores` statements (store o 0u32 0u32), 3 nodes each, one per
 * line, and `barriers` (barrier) statements of 1 node. */
static char *many_text(size_t stores, size_t barriers) {
    size_t cap = 128 + stores * 24 + barriers * 12;
    char *s = malloc(cap), *w = s;
    w += sprintf(w, "(program many (workgroup 1) (buffer o u32 read_write)\n");
    for (size_t i = 0; i < stores; i++) w += sprintf(w, "(store o 0u32 0u32)\n");
    for (size_t i = 0; i < barriers; i++) w += sprintf(w, "(barrier)\n");
    sprintf(w, ")\n");
    return s;
}

static enum vyre_status parse_text(const char *text, vyre_program **p, struct vyre_error *err) {
    *p = NULL;
    return vyre_text_parse(text, strlen(text), p, err);
}

static void test_node_limit_at_parse(void) {
    struct vyre_error err;
    vyre_program *p = NULL;
    /* exactly the limit: 33 333 stores + 1 barrier = 100 000 nodes, parsed and valid */
    char *text = many_text(33333, 1);
    CHECK(parse_text(text, &p, &err) == VYRE_OK);
    if (p) {
        struct vyre_problems probs = {NULL, 0, 0};
        CHECK(vyre_validate(p, &probs) == VYRE_OK);
        vyre_problems_free(&probs);
        vyre_program_free(p);
    }
    free(text);
    /* one node more: refused by the parser with the limit and a Fix */
    text = many_text(33333, 2);
    CHECK(parse_text(text, &p, &err) == VYRE_ERR_SYNTAX);
    CHECK(p == NULL);
    CHECK(strstr(err.message, "100000 nodes") != NULL);
    CHECK(strstr(err.message, "Fix:") != NULL);
    free(text);
    /* 2 M statements: the parse stops where the limit is crossed (line 33 335), not at
     * the end of the text, so memory and time stay bounded by the limit */
    text = many_text(2000000, 0);
    CHECK(parse_text(text, &p, &err) == VYRE_ERR_SYNTAX);
    CHECK(p == NULL);
    CHECK(err.line > 0 && err.line < 40000);
    CHECK(strstr(err.message, "nodes") != NULL);
    free(text);
}

static void test_null_accessors(void) {
    uint32_t wg[3] = {7, 7, 7};
    vyre_program_workgroup(NULL, wg);
    CHECK(wg[0] == 0 && wg[1] == 0 && wg[2] == 0);
    CHECK(vyre_program_name(NULL) == NULL);
    enum vyre_type t = VYRE_U32;
    CHECK(!vyre_type_from_name(NULL, &t));
    CHECK(!vyre_type_from_name("u32", NULL));
}

int main(void) {
    RUN_TEST(test_deepest_expression);
    RUN_TEST(test_deepest_statements);
    RUN_TEST(test_deepest_mixed);
    RUN_TEST(test_node_limit_at_parse);
    RUN_TEST(test_null_accessors);
    return harness_finish();
}
