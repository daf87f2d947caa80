/* test_threads.c — an embedding host with several OS threads, each with its own
 * lua_State running `vyre` at the same time (hosts embed vyre that way): programs parsed,
 * compiled and run, buffers made and freed, sequences and graphs, all concurrently.
 * Backend: the reference interpreter by default; VYRE_TEST_THREADS_BACKEND=cuda uses
 * device 0 from every thread at once (the fake driver in CI, a GPU by hand). Each
 * thread also plans and runs megakernels over a buffer and a view of it, and makes and
 * frees a backend (with its plan cache) every round (the plan cache
 * was once one unlocked global table, and raced). Every result is checked (a megakernel's on the
 * reference only: the fake driver does not compute its host-split sections). Built
 * also with ThreadSanitizer by scripts/tsan.sh. */
#include <dlfcn.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int luaopen_vyre_core(lua_State *L);

/* VYRE_TEST_THREADS=N (1..MAX_THREADS) threads; 4 by default, 8 under scripts/tsan.sh
 * (eight Lua states planning, running and freeing at once). */
enum { THREADS = 4, MAX_THREADS = 16, ROUNDS = 25 };

static int nthreads(void) {
    const char *s = getenv("VYRE_TEST_THREADS");
    int n = s ? atoi(s) : THREADS;
    return n >= 1 && n <= MAX_THREADS ? n : THREADS;
}

static const char *const SCRIPT =
    "local core = require('vyre.core')\n"
    "local id, rounds, kind, text = ...\n"
    "local be\n"
    "if kind == 'cuda' then be = assert(core.cuda_open(0)) else be = core.reference_new() end\n"
    "local p = core.parse(text)\n"
    "local k = be:compile(p)\n"
    "for r = 1, rounds do\n"
    "  local n = 1000 + r\n"
    "  local init = {}\n"
    "  for i = 1, n do init[i] = i end\n"
    "  local v = be:buffer('u32', init)\n"
    "  k:launch({v = v, d = id})\n"
    "  local l = k:bind({v = v, d = 1}); l()\n"
    "  local out = be:sequence({{k, {v = v, d = r}}}, {times = 2, readback = {v}})[1]\n"
    "  for i = 1, n, 97 do\n"
    "    local want = i + id + 1 + 2 * r\n"
    "    if out[i] ~= want then error(('thread %d round %d: v[%d] = %s, want %d'):format(id, r, i, "
    "tostring(out[i]), want)) end\n"
    "  end\n"
    "  local res = be:run(p, {v = {r, r}, d = id})\n"
    "  assert(res.v[2] == r + id)\n"
    /* megakernels: plan (cached per backend), run, and a backend of their own made and
     * freed each round; the view orders the second step after the first (RAW) */
    "  local steps = {{k, {v = v, d = 1}}, {k, {v = v:view(1, 10), d = 2}}}\n"
    "  local plan = be:plan(steps, {times = 2})\n"
    "  assert(#plan.layers == 2 and plan.barriers[1].kind == 'RAW', 'plan')\n"
    "  assert(plan.cached == (r > 1), 'cached')\n"
    "  local before = v:download()\n"
    "  local opts = {times = 2}\n"
    "  if kind == 'cuda' then opts.grid_sync = 'split' end\n"
    "  assert(be:megakernel(steps, opts) == 2)\n"
    "  if kind ~= 'cuda' then\n"
    "    local after = v:download()\n"
    "    assert(after[1] == before[1] + 6 and after[n] == before[n] + 2, 'megakernel')\n"
    "  end\n"
    "  local b2 = kind == 'cuda' and assert(core.cuda_open(0)) or core.reference_new()\n"
    "  local k2 = b2:compile(p)\n"
    "  local w = b2:buffer('u32', 64)\n"
    "  assert(#b2:plan({{k2, {v = w, d = 1}}, {k2, {v = w:view(33, 8), d = 1}}}).layers == 2)\n"
    "  if kind ~= 'cuda' then assert(b2:stats().plan_misses == 1) end\n"
    "  b2:free()\n"
    "  v:free()\n"
    "end\n"
    "local st = be:stats()\n"
    "assert(st.plan_misses == 1 and st.plan_hits == 2 * rounds - 1, 'plan counters')\n"
    "be:free()\n"
    "return 'ok'\n";

/* The program of thread `id`, as the script builds it. */
static void program_text(int id, char *out, size_t size) {
    snprintf(out, size,
             "(program add%d (workgroup 64) (buffer v u32 read_write) (param d u32) (let i (gid "
             "x)) (if (lt i (len v)) (then (store v i (add (load v i) d)))))",
             id);
}

/* Under the fake driver (tests/fakecuda) launches compute only for registered programs:
 * register each thread's program through the driver's control entry point. */
static bool register_with_fake(void) {
    const char *lib = getenv("VYRE_LIBCUDA");
    if (!lib || !strstr(lib, "fakecuda")) return true;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    char *(*control)(const char *, int *) = NULL;
    if (h) *(void **)&control = dlsym(h, "vyre_fakecuda_control");
    if (!control) {
        fprintf(stderr, "cannot reach vyre_fakecuda_control in %s\n", lib);
        return false;
    }
    for (int id = 1; id <= nthreads(); id++) {
        char cmd[512] = "program ";
        program_text(id, cmd + 8, sizeof cmd - 8);
        int ok = 0;
        free(control(cmd, &ok));
        if (!ok) return false;
    }
    return true; /* the handle stays open: the runtime's dlopen shares it */
}

struct worker {
    int id;
    const char *kind;
    char result[512];
};

static void *work(void *arg) {
    struct worker *w = arg;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_vyre_core);
    lua_setfield(L, -2, "vyre.core");
    lua_pop(L, 1);
    if (luaL_loadstring(L, SCRIPT) != LUA_OK) {
        snprintf(w->result, sizeof w->result, "load: %s", lua_tostring(L, -1));
    } else {
        lua_pushinteger(L, w->id);
        lua_pushinteger(L, ROUNDS);
        lua_pushstring(L, w->kind);
        char text[512];
        program_text(w->id, text, sizeof text);
        lua_pushstring(L, text);
        if (lua_pcall(L, 4, 1, 0) != LUA_OK)
            snprintf(w->result, sizeof w->result, "%s", lua_tostring(L, -1));
        else snprintf(w->result, sizeof w->result, "%s", lua_tostring(L, -1));
    }
    lua_close(L);
    return NULL;
}

static void test_threads_share_the_library(void) {
    const char *kind = getenv("VYRE_TEST_THREADS_BACKEND");
    if (!kind || !*kind) kind = "reference";
    if (strcmp(kind, "cuda") == 0) CHECK(register_with_fake());
    int n = nthreads();
    struct worker w[MAX_THREADS];
    pthread_t t[MAX_THREADS];
    fprintf(stderr, "%d threads, %s backend\n", n, kind);
    for (int i = 0; i < n; i++) {
        w[i].id = i + 1;
        w[i].kind = kind;
        w[i].result[0] = 0;
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (strcmp(w[i].result, "ok") != 0) fprintf(stderr, "thread %d: %s\n", i + 1, w[i].result);
        CHECK(strcmp(w[i].result, "ok") == 0);
    }
}

int main(void) {
    RUN_TEST(test_threads_share_the_library);
    return harness_finish();
}
