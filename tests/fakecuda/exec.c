/* exec.c — what a launch computes. vyre's PTX carries the canonical text of the
 * program it was emitted from and the kind of each entry, as comments
 * (src/codegen/ptx_meta.c):
 *
 *   // vyre.program <lines>        then <lines> lines "// <text line>"
 *   // vyre.entry <name> plain|grid|vector|worklist[ debug]
 *
 * At cuModuleLoadDataEx the fake parses and validates that text (a block that does not
 * parse makes the image invalid: the load fails with the reason in the JIT log) and
 * marks each function with its kind. A launch then decodes the entry's ABI
 * (ARCHITECTURE.md §5: buffer pointers, u32 element counts, params, one worklist
 * header per worklist; `vector` adds the invocation count vyre_vn; `grid` adds the
 * scratch pointer and the virtual grid; ` debug` adds the out-of-bounds counters;
 * `worklist` ends with the header vyre_wn of the worklist sizing it), checks every
 * pointer against the live allocations (outside one: a sticky ILLEGAL_ADDRESS, as a
 * GPU would fault) and runs the reference interpreter on the device memory with the
 * launch's grid:
 *
 *   plain   the program over the launch's grid (host-split section kernels are plain
 *           programs of their own: one section per launch);
 *   vector  the program over ceil(vyre_vn / workgroup) workgroups;
 *   grid    the whole program, grid statements included, over the virtual grid the
 *           runtime passes, whatever physical grid the cooperative launch has; the
 *           converge rounds are stored where the kernel keeps them (scratch + 12);
 *   worklist (NAME_wl) the program over ceil(count / workgroup) workgroups, count the
 *           current count of the vyre_wn header read at launch (the kernel reads it on
 *           the device), whatever bounded grid the runtime launched.
 * Pushes go to the worklists' next items as the device's would; the pushed count and
 * the overflow word are written back into each header afterwards (a grid kernel's whole
 * header: its converge on a worklist advances it between rounds, as the device does).
 *
 * PTX without the block (hand-written, `be:load_ptx`) is foreign: its launches are
 * refused with CUDA_ERROR_NOT_SUPPORTED (cuGetErrorString says why), unless a test
 * opted in with the control command "set foreign 1", which makes them no-ops. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake.h"

#define META_PROGRAM "// vyre.program "
#define META_ENTRY "// vyre.entry "
#define GRID_ROUNDS 12u /* ptx_grid.c GS_ROUNDS: the converge rounds of the last launch */
#define GRID_SCRATCH 32u

struct fake_prog {
    vyre_program *p;
    uint32_t nbuf, npar, ndecl, nwl; /* nwl: worklists, one header address each */
    enum vyre_type btype[VYRE_MAX_BUFFERS];
    enum vyre_type wtype[VYRE_MAX_WORKLISTS];
    uint32_t wg[3];
};

static uint64_t computed, skipped, refused;
/* Nanoseconds spent computing launches (fake_launch_run), wall and this thread's CPU
 * time: host-cost benches (bench/eqsat/host_profile.lua) subtract them to get the
 * host's own time (the CPU time is not inflated when a loaded machine preempts). */
static uint64_t exec_ns, exec_cpu_ns;
static char refusal[512]; /* why the last foreign launch was refused */

void fake_prog_counts(uint64_t *c, uint64_t *s, uint64_t *r) {
    *c = computed;
    *s = skipped;
    *r = refused;
}

uint64_t fake_exec_ns(bool cpu) { return cpu ? exec_cpu_ns : exec_ns; }

static uint64_t clock_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *fake_refusal(void) { return refusal; }
void fake_refusal_clear(void) { refusal[0] = '\0'; }

void fake_prog_free(struct fake_prog *fp) {
    if (!fp) return;
    vyre_program_free(fp->p);
    free(fp);
}

/* ---- loading ----------------------------------------------------------------------- */

/* The text of the block at `at` (just past "// vyre.program "), or NULL with *why. */
static char *block_text(const char *at, const char **why) {
    char *end = NULL;
    unsigned long lines = strtoul(at, &end, 10);
    const char *s = end ? strchr(end, '\n') : NULL;
    if (!end || end == at || !s) {
        *why = "the line count after 'vyre.program' is missing";
        return NULL;
    }
    s++;
    size_t cap = strlen(s) + 1, len = 0;
    char *text = malloc(cap);
    if (!text) {
        *why = "out of host memory";
        return NULL;
    }
    for (unsigned long i = 0; i < lines; i++) {
        if (strncmp(s, "//", 2) != 0) {
            free(text);
            *why = "the block ends before its line count (a line without '//')";
            return NULL;
        }
        s += s[2] == ' ' ? 3 : 2;
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        memcpy(text + len, s, n);
        len += n;
        text[len++] = '\n';
        s += n + (nl != NULL);
    }
    text[len] = '\0';
    return text;
}

/* Sets the kind of the entry named in one "// vyre.entry NAME KIND[ debug]" line. */
static void entry_kind(struct fake_module *m, const char *at) {
    char line[200], name[128], kind[16], dbg[16] = "";
    size_t n = strcspn(at, "\n"); /* this line only */
    if (n >= sizeof line) return;
    memcpy(line, at, n);
    line[n] = '\0';
    if (sscanf(line, "%127s %15s %15s", name, kind, dbg) < 2) return;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        struct fake_func *f = &m->funcs[i];
        if (strcmp(f->name, name) != 0) continue;
        f->vkind = strcmp(kind, "grid") == 0       ? FV_GRID
                   : strcmp(kind, "vector") == 0   ? FV_VECTOR
                   : strcmp(kind, "worklist") == 0 ? FV_WORKLIST
                                                   : FV_PLAIN;
        f->vdebug = strcmp(dbg, "debug") == 0;
    }
}

CUresult fake_prog_load(struct fake_module *m, char *log, size_t logsz) {
    const char *at = strstr(m->ptx, META_PROGRAM);
    if (!at) return CUDA_SUCCESS; /* foreign PTX: refused at launch */
    const char *why = NULL;
    char *text = block_text(at + strlen(META_PROGRAM), &why);
    struct vyre_error err;
    vyre_program *p = NULL;
    if (text && (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK ||
                 vyre_program_check(p, &err) != VYRE_OK))
        why = err.message;
    free(text);
    struct fake_prog *fp = why ? NULL : calloc(1, sizeof *fp);
    if (!fp) {
        vyre_program_free(p);
        fake_log(log, logsz,
                 "vyre fakecuda: the PTX's vyre.program block cannot be read: %s. Fix: load PTX "
                 "exactly as vyre emitted it",
                 why ? why : "out of host memory");
        return why ? FAKE_INVALID_IMAGE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    fp->p = p;
    vyre_program_workgroup(p, fp->wg);
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(p, i, &d); i++) {
        if (d.kind == VYRE_DECL_BUFFER) fp->btype[d.slot] = d.type;
        if (d.kind == VYRE_DECL_WORKLIST) fp->wtype[d.slot] = d.type;
    }
    fp->nbuf = vyre_program_buffer_count(p);
    fp->npar = vyre_program_param_count(p);
    fp->nwl = vyre_program_worklist_count(p); /* the validator keeps it <= the maximum */
    fp->ndecl = vyre_program_decl_count(p);
    m->prog = fp;
    for (const char *e = strstr(m->ptx, META_ENTRY); e; e = strstr(e + 1, META_ENTRY))
        entry_kind(m, e + strlen(META_ENTRY));
    return CUDA_SUCCESS;
}

/* The "program TEXT" control command of earlier versions, when launches computed only
 * registered programs: now every vyre kernel computes, so it only checks the text. */
char *fake_prog_register(const char *text, bool *ok) {
    struct vyre_error err;
    vyre_program *p = NULL;
    char *out = malloc(4200);
    if (!out) return NULL;
    *ok = vyre_text_parse(text, strlen(text), &p, &err) == VYRE_OK &&
          vyre_program_check(p, &err) == VYRE_OK;
    if (*ok) snprintf(out, 4200, "ok %s", vyre_program_name(p));
    else snprintf(out, 4200, "program: %s", err.message);
    vyre_program_free(p);
    return out;
}

/* ---- launching ---------------------------------------------------------------------- */

CUresult fake_launch_check(const struct fake_func *f, const unsigned block[3], bool cooperative,
                           const char *call) {
    const struct fake_prog *fp = f->mod->prog;
    if (!fp) {
        if (fake_cfg.foreign) return CUDA_SUCCESS;
        refused++;
        snprintf(refusal, sizeof refusal,
                 "operation not supported: vyre fakecuda cannot run kernel '%.100s': its PTX has "
                 "no '// vyre.program' block (foreign PTX, not emitted by vyre), and the fake "
                 "driver computes only the kernels vyre emits. Fix: run it on a GPU; a test of "
                 "plumbing only sends the fake the control command 'set foreign 1' (foreign "
                 "kernels then do nothing)",
                 f->name);
        return FAKE_NOT_SUPPORTED;
    }
    const uint32_t *wg = fp->wg;
    if (block[0] != wg[0] || block[1] != wg[1] || block[2] != wg[2])
        return fake_misuse(CUDA_ERROR_INVALID_VALUE,
                           "%s of '%s': block %ux%ux%u, the program's workgroup is %ux%ux%u", call,
                           f->name, block[0], block[1], block[2], wg[0], wg[1], wg[2]);
    uint32_t want = 2 * fp->nbuf + fp->npar + fp->nwl + (f->vkind == FV_VECTOR) +
                    (f->vkind == FV_GRID ? 4u : 0u) + (f->vkind == FV_WORKLIST) + f->vdebug;
    if (f->nparams != want)
        return fake_misuse(CUDA_ERROR_INVALID_VALUE,
                           "%s of '%s': %u parameters, but a %s entry of a program with %u "
                           "buffers, %u params and %u worklists takes %u",
                           call, f->name, f->nparams,
                           f->vkind == FV_GRID       ? "grid"
                           : f->vkind == FV_VECTOR   ? "vector"
                           : f->vkind == FV_WORKLIST ? "worklist"
                                                     : "plain",
                           fp->nbuf, fp->npar, fp->nwl, want);
    /* A GPU would hang in the grid barrier once the blocks are not all resident: the
     * runtime must launch this kernel cooperatively. Counted, not refused (a driver
     * would not know). */
    if (f->vkind == FV_GRID && !cooperative)
        return fake_misuse(CUDA_SUCCESS,
                           "%s of '%s': the grid kernel needs cuLaunchCooperativeKernel "
                           "(its grid barrier waits for every block)",
                           call, f->name);
    return CUDA_SUCCESS;
}

/* The bytes of argument i of l. */
static const unsigned char *arg_at(const struct fake_launch *l, uint32_t i) {
    size_t off = 0;
    for (uint32_t k = 0; k < i; k++) off += l->fn->param_size[k];
    return l->args + off;
}

static uint64_t arg_u(const struct fake_launch *l, uint32_t i) {
    uint64_t v = 0;
    uint32_t n = l->fn->param_size[i];
    memcpy(&v, arg_at(l, i), n < 8 ? n : 8); /* little-endian: zero-extended */
    return v;
}

/* A pointer argument outside every live allocation: the kernel "faults" (sticky). */
static CUresult bad_pointer(const struct fake_launch *l, const char *what, uint64_t ptr,
                            uint64_t bytes) {
    fake_poison(fake_current, CUDA_ERROR_ILLEGAL_ADDRESS, "kernel pointer out of range");
    return fake_misuse(CUDA_SUCCESS,
                       "kernel '%s': %s [0x%llx, +%llu bytes) is not inside a live allocation",
                       l->fn->name, what, (unsigned long long)ptr, (unsigned long long)bytes);
}

/* A worklist header (ARCHITECTURE.md §5) at ptr, of items of type t: checked against
 * the live allocations with both item arrays, read into w (the current count clamped
 * to the capacity, as the kernel's min(cur_count, capacity)). */
static bool read_worklist(enum vyre_type t, uint64_t ptr, struct vyre_worklist_arg *w) {
    if (!fake_mem_find(ptr, 32)) return false;
    const unsigned char *h = (const unsigned char *)(uintptr_t)ptr;
    uint64_t cur, next;
    memcpy(&cur, h, 8);
    memcpy(&next, h + 8, 8);
    memcpy(&w->cur_count, h + 16, 4);
    memcpy(&w->next_count, h + 20, 4);
    memcpy(&w->capacity, h + 24, 4);
    memcpy(&w->overflow_needed, h + 28, 4);
    if (w->cur_count > w->capacity) w->cur_count = w->capacity;
    uint64_t bytes = (uint64_t)w->capacity * vyre_type_size(t);
    if (bytes && (!fake_mem_find(cur, bytes) || !fake_mem_find(next, bytes))) return false;
    w->cur = (void *)(uintptr_t)cur;
    w->next = (void *)(uintptr_t)next;
    return true;
}

/* The worklist headers from argument `at` on, into wl/wlp; false after poisoning the
 * context when one is outside the live allocations. One header bound to two
 * declarations is one worklist (both point at the same state), as on a device. */
static bool read_worklists(const struct fake_launch *l, const struct fake_prog *fp, uint32_t at,
                           struct vyre_worklist_arg *wl, struct vyre_worklist_arg **wlp) {
    for (uint32_t w = 0; w < fp->nwl; w++) {
        wlp[w] = &wl[w];
        for (uint32_t e = 0; e < w; e++)
            if (arg_u(l, at + e) == arg_u(l, at + w)) wlp[w] = wlp[e];
        if (wlp[w] != &wl[w]) continue;
        if (!read_worklist(fp->wtype[w], arg_u(l, at + w), &wl[w])) {
            fake_poison(fake_current, CUDA_ERROR_ILLEGAL_ADDRESS, "worklist out of range");
            fake_misuse(CUDA_SUCCESS,
                        "kernel '%s': worklist %u's header or items are not inside a live "
                        "allocation",
                        l->fn->name, w + 1);
            return false;
        }
    }
    return true;
}

static CUresult launch_run(const struct fake_launch *l);

CUresult fake_launch_run(const struct fake_launch *l) {
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    CUresult r = launch_run(l);
    exec_ns += clock_ns(CLOCK_MONOTONIC) - t0;
    exec_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    return r;
}

static CUresult launch_run(const struct fake_launch *l) {
    if (l->host) { /* a host operation in stream order (the fake NCCL's collectives) */
        l->host(l->host_ud);
        return CUDA_SUCCESS;
    }
    uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
    fake_clock_ns += 2000 + blocks * 20;
    if (fake_cfg.noexec) return CUDA_SUCCESS; /* host-overhead benches: checked, not run */
    const struct fake_func *f = l->fn;
    const struct fake_prog *fp = f->mod->prog;
    if (!fp) { /* foreign PTX, allowed by "set foreign 1" */
        skipped++;
        return CUDA_SUCCESS;
    }
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS];
    char what[32];
    for (uint32_t i = 0; i < fp->nbuf; i++) {
        uint64_t ptr = arg_u(l, i), count = arg_u(l, fp->nbuf + i) & 0xffffffffu;
        uint64_t bytes = count * vyre_type_size(fp->btype[i]);
        snprintf(what, sizeof what, "buffer %u", i + 1);
        if (bytes && !fake_mem_find(ptr, bytes)) return bad_pointer(l, what, ptr, bytes);
        bufs[i].data = (void *)(uintptr_t)ptr;
        bufs[i].count = count;
    }
    uint32_t at = 2 * fp->nbuf;
    for (uint32_t i = 0; i < fp->npar; i++) params[i] = arg_u(l, at++);
    struct vyre_run_args a = {
        bufs, fp->nbuf, params, fp->npar, {l->grid[0], l->grid[1], l->grid[2]}};
    struct vyre_worklist_arg wl[VYRE_MAX_WORKLISTS], *wlp[VYRE_MAX_WORKLISTS];
    uint32_t wl_at = at; /* the headers, written back after the run */
    if (!read_worklists(l, fp, wl_at, wl, wlp)) return CUDA_SUCCESS;
    at += fp->nwl;
    uint32_t *rounds_word = NULL;
    if (f->vkind == FV_VECTOR) {
        uint64_t vn = arg_u(l, at++) & 0xffffffffu;
        a.grid[0] = (uint32_t)((vn + fp->wg[0] - 1) / fp->wg[0]);
        a.grid[1] = a.grid[2] = 1;
    } else if (f->vkind == FV_GRID) {
        uint64_t scratch = arg_u(l, at++);
        if (!fake_mem_find(scratch, GRID_SCRATCH))
            return bad_pointer(l, "the grid scratch", scratch, GRID_SCRATCH);
        rounds_word = (uint32_t *)(uintptr_t)(scratch + GRID_ROUNDS);
        for (int k = 0; k < 3; k++) a.grid[k] = (uint32_t)arg_u(l, at++);
    }
    if (f->vkind == FV_WORKLIST) { /* sized by a worklist: vyre_wn, after the counters */
        uint64_t hp = arg_u(l, at + f->vdebug);
        if (!fake_mem_find(hp, 32)) return bad_pointer(l, "the sizing worklist's header", hp, 32);
        uint32_t cnt, cap;
        memcpy(&cnt, (const unsigned char *)(uintptr_t)hp + 16, 4);
        memcpy(&cap, (const unsigned char *)(uintptr_t)hp + 24, 4);
        if (cnt > cap) cnt = cap; /* the kernel's min(cur_count, capacity) */
        a.grid[0] = (uint32_t)(((uint64_t)cnt + fp->wg[0] - 1) / fp->wg[0]);
        a.grid[1] = a.grid[2] = 1;
    }
    /* Debug PTX: the counters (2 u64 per declaration) come last (but for NAME_wl's
     * vyre_wn); the interpreter's counts are added to them as the device's atomics would. */
    uint64_t *counters = NULL;
    struct vyre_oob_count *oob = NULL;
    uint32_t nd = fp->ndecl;
    if (f->vdebug) {
        uint64_t ptr = arg_u(l, at++);
        if (!fake_mem_find(ptr, 16u * (nd ? nd : 1)))
            return bad_pointer(l, "the debug counters", ptr, 16u * (nd ? nd : 1));
        counters = (uint64_t *)(uintptr_t)ptr;
        oob = calloc(nd ? nd : 1, sizeof *oob);
        if (!oob) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (a.grid[0] == 0 || a.grid[1] == 0 || a.grid[2] == 0) { /* no invocation */
        free(oob);
        computed++;
        return CUDA_SUCCESS;
    }
    struct vyre_error err;
    uint64_t rounds = 0;
    struct vyre_ref_run_options ro = {
        .rounds = &rounds, .oob = oob, .worklists = wlp, .nworklists = fp->nwl};
    enum vyre_status rs = vyre_ref_run(fp->p, &a, &ro, &err);
    for (uint32_t w = 0; rs == VYRE_OK && w < fp->nwl; w++) { /* the device's atomics */
        unsigned char *h = (unsigned char *)(uintptr_t)arg_u(l, wl_at + w);
        memcpy(h + 20, &wlp[w]->next_count, 4);
        memcpy(h + 28, &wlp[w]->overflow_needed, 4);
        if (f->vkind == FV_GRID) { /* a converge on it advanced it on the device */
            uint64_t cur = (uint64_t)(uintptr_t)wlp[w]->cur, next = (uint64_t)(uintptr_t)wlp[w]->next;
            memcpy(h, &cur, 8);
            memcpy(h + 8, &next, 8);
            memcpy(h + 16, &wlp[w]->cur_count, 4);
        }
    }
    for (uint32_t i = 0; rs == VYRE_OK && counters && i < nd; i++) {
        counters[2 * i] += oob[i].loads;
        counters[2 * i + 1] += oob[i].stores;
    }
    free(oob);
    if (rs != VYRE_OK) {
        /* A program the interpreter refuses at run time: the kernel "faulted". */
        if (fake_cfg.verbose)
            fprintf(stderr, "vyre fakecuda: kernel '%s': %s\n", f->name, err.message);
        fake_poison(fake_current, CUDA_ERROR_LAUNCH_FAILED, err.message);
        return CUDA_SUCCESS;
    }
    if (rounds_word) *rounds_word = (uint32_t)rounds;
    computed++;
    return CUDA_SUCCESS;
}
