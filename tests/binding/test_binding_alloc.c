/* test_binding_alloc.c — the Lua binding under memory errors. A Lua state whose
 * allocator fails at its Nth allocation runs scripts that make backends, buffers,
 * kernels, launches, sequences and graphs, for every N until the script succeeds.
 * Each failure must surface as a Lua error (never a crash), and closing the state
 * must release everything: every object is created as a userdata before it acquires
 * anything (regression: a buffer's memory was allocated before its userdata, so a
 * memory error in between leaked it). Built against the binding's sources and
 * liblua; run under AddressSanitizer/LeakSanitizer in the test script, where any leak
 * fails the run. Uses the reference backend, which needs no GPU; the CUDA backend
 * creates its objects through the same functions. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdlib.h>

#include "harness.h"

int luaopen_vyre_core(lua_State *L);

struct budget {
    long left;   /* allocations before the one that fails; < 0: none fails */
    long failed; /* allocations refused */
};

static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    struct budget *b = ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    /* One memory error: the allocation and Lua's retry after its emergency collection
     * both fail; then memory is there again, so finalizers can run. */
    if (b->left == 0) {
        if (++b->failed == 2) b->left = -1;
        return NULL;
    }
    if (b->left > 0) b->left--;
    return realloc(ptr, nsize);
}

static const char *const SCRIPT =
    /* No collection steps during the script: a memory error inside the collector's own
     * call of a finalizer makes Lua skip that finalizer, which would read as a leak of
     * ours. Finalizers then run at lua_close, with memory available again. */
    "collectgarbage('stop')\n"
    "local core = require('vyre.core')\n"
    "local p = core.parse('(program inc (workgroup 4) (buffer v u32 read_write) (param d u32) "
    "(let i (gid x)) (if (lt i (len v)) (then (store v i (add (load v i) d)))))')\n"
    "local be = core.reference_new()\n"
    "local v = be:buffer('u32', {1, 2, 3, 4, 5})\n"
    "local w = be:buffer('u32', 64)\n"
    "local k = be:compile(p)\n"
    "k:launch({v = v, d = 1})\n"
    "local l = k:bind({v = w, d = 2}); l(); l:launch()\n"
    "local out = be:run(p, {v = {7, 8}, d = 3})\n"
    "assert(out.v[2] == 11)\n"
    "local r = be:sequence({{k, {v = v, d = 1}}}, {times = 2, readback = {v}})\n"
    "assert(r[1][5] == 8)\n"
    "local g = be:graph({{k, {v = w, d = 1}}}); g:launch(3)\n"
    "assert(w:download()[1] == 7)\n"
    "local _, t = be:run_timed(p, {v = {1}, d = 1})\n"
    "return 'done'\n";

/* Runs SCRIPT with its `limit`-th allocation after the libraries are open failing
 * (< 0: none). Returns 1 when it completed, 0 when it raised (a memory error); never
 * crashes. The state is closed either way, which releases everything it made. */
static int run_with_limit(long limit, long *failed) {
    struct budget b = {-1, 0};
    lua_State *L = lua_newstate(limited_alloc, &b);
    CHECK(L != NULL);
    if (!L) return 0;
    luaL_openlibs(L);
    luaL_requiref(L, "vyre.core", luaopen_vyre_core, 0);
    lua_pop(L, 1);
    b.left = limit;
    int ok = luaL_loadstring(L, SCRIPT) == LUA_OK && lua_pcall(L, 0, 1, 0) == LUA_OK;
    if (ok) CHECK_STR_CONTAINS(lua_tostring(L, -1), "done");
    if (!ok && b.failed == 0) /* an error that was not a memory error is a bug */
        harness_fail(__FILE__, __LINE__, "limit %ld: %s", limit, lua_tostring(L, -1));
    lua_close(L);
    *failed = b.failed;
    return ok;
}

static void memory_error_at_every_allocation(void) {
    long failed = 0;
    CHECK(run_with_limit(-1, &failed) == 1); /* the script itself works */
    long n = 0;
    for (; n < 100000; n++)
        if (run_with_limit(n, &failed)) break;
    CHECK(n > 10);     /* the script allocates: some limits must have failed it */
    CHECK(n < 100000); /* and it completes once enough memory is there */
}

int main(void) {
    RUN_TEST(memory_error_at_every_allocation);
    return harness_finish();
}
