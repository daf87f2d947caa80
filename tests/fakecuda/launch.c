/* launch.c — kernel launches. A launch is checked as the driver would (live function,
 * grid and block within the device limits, the function's .maxntid, parameters
 * present), its parameter values are copied (so a capture holds them by value), and
 * it runs at once or goes into the capturing graph.
 *
 * Running: PTX cannot be executed here, so a launch computes only when its module's
 * PTX is exactly what vyre emits for a program a test registered ("program TEXT",
 * the side channel): the fake then decodes the vyre kernel ABI (buffer pointers,
 * u32 element counts, then params; ARCHITECTURE.md §5), checks every buffer against
 * the live allocations (outside one: a sticky ILLEGAL_ADDRESS, as a GPU would fault)
 * and runs the reference interpreter on the device memory with the launch's grid.
 * Any other launch (raw PTX, unregistered programs) does nothing but advance the
 * clock. Cooperative launches are checked against the occupancy the fake reports. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fake.h"

struct fake_prog {
    uint64_t ptx_hash;
    bool debug; /* the debug PTX: one more parameter, the out-of-bounds counters */
    vyre_program *p;
    uint32_t nbuf, npar, nwl; /* nwl: worklists, one header address each after params */
    enum vyre_type btype[VYRE_MAX_BUFFERS];
    enum vyre_type ptype[VYRE_MAX_PARAMS];
    uint32_t wg[3];
};

static struct fake_prog **progs;
static uint32_t nprogs, progs_cap;
static uint64_t computed, skipped;

void fake_prog_counts(uint64_t *c, uint64_t *s) {
    *c = computed;
    *s = skipped;
}

const struct fake_prog *fake_prog_find(const char *ptx, uint32_t *seen) {
    *seen = nprogs;
    if (nprogs == 0) return NULL;
    uint64_t h = XXH3_64bits(ptx, strlen(ptx));
    for (uint32_t i = 0; i < nprogs; i++)
        if (progs[i]->ptx_hash == h) return progs[i];
    return NULL;
}

static char *answer(bool *ok, bool good, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *answer(bool *ok, bool good, const char *fmt, ...) {
    char *out = malloc(4200);
    va_list ap;
    va_start(ap, fmt);
    if (out) vsnprintf(out, 4200, fmt, ap);
    va_end(ap);
    *ok = good;
    return out;
}

/* Registers p's PTX (debug or not) under its hash; p is kept by the entry made (*kept). */
static const char *add_variant(vyre_program *p, bool debug, bool *kept, struct vyre_error *err) {
    char *ptx = NULL;
    size_t len = 0;
    struct vyre_ptx_options opt = {.sm = fake_cfg.sm, .debug = debug};
    if (vyre_ptx_emit(p, &opt, &ptx, &len, err) != VYRE_OK) return err->message;
    uint64_t h = XXH3_64bits(ptx, len);
    vyre_free(ptx);
    for (uint32_t i = 0; i < nprogs; i++)
        if (progs[i]->ptx_hash == h) return NULL; /* registered before */
    struct fake_prog *fp = calloc(1, sizeof *fp);
    if (nprogs == progs_cap) {
        uint32_t cap = progs_cap ? progs_cap * 2 : 16;
        struct fake_prog **n = realloc(progs, cap * sizeof *n);
        if (n) {
            progs = n;
            progs_cap = cap;
        }
    }
    if (!fp || nprogs == progs_cap) {
        free(fp);
        return "out of host memory";
    }
    fp->ptx_hash = h;
    fp->debug = debug;
    fp->p = p;
    *kept = true;
    vyre_program_workgroup(p, fp->wg);
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(p, i, &d); i++) {
        if (d.kind == VYRE_DECL_BUFFER) fp->btype[d.slot] = d.type;
        if (d.kind == VYRE_DECL_PARAM) fp->ptype[d.slot] = d.type;
    }
    fp->nbuf = vyre_program_buffer_count(p);
    fp->npar = vyre_program_param_count(p);
    fp->nwl = vyre_program_worklist_count(p);
    progs[nprogs++] = fp;
    return NULL;
}

char *fake_prog_register(const char *text, bool *ok) {
    struct vyre_error err;
    vyre_program *p = NULL, *q = NULL;
    if (vyre_text_parse(text, strlen(text), &p, &err) != VYRE_OK ||
        vyre_text_parse(text, strlen(text), &q, &err) != VYRE_OK) {
        vyre_program_free(p);
        return answer(ok, false, "program: %s", err.message);
    }
    /* Each variant keeps a program of its own (entries are never freed). */
    bool kept_p = false, kept_q = false;
    const char *why = add_variant(p, false, &kept_p, &err);
    if (!why) why = add_variant(q, true, &kept_q, &err);
    char *out = why ? answer(ok, false, "program: %s", why)
                    : answer(ok, true, "ok %s", vyre_program_name(p));
    if (!kept_p) vyre_program_free(p);
    if (!kept_q) vyre_program_free(q);
    return out;
}

/* ---- running -------------------------------------------------------------------------- */

void fake_launch_clear(struct fake_launch *l) {
    free(l->args);
    memset(l, 0, sizeof *l);
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

/* The vector entry NAME_v4 of an elementwise program (src/codegen/ptx_vec.c) takes the
 * same parameters plus the invocation count vyre_vn, and runs 4 invocations per thread:
 * the same program over ceil(vn / workgroup) workgroups. */
static bool is_vector_entry(const struct fake_func *f, const struct fake_prog *fp) {
    size_t n = strlen(f->name);
    return n > 3 && strcmp(f->name + n - 3, "_v4") == 0 &&
           f->nparams == 2 * fp->nbuf + fp->npar + 1;
}

/* The entry NAME_wl of a program with worklists (src/codegen/ptx_worklist.c): the same
 * parameters (debug: and the counters) plus the header of the worklist sizing it. */
static bool is_worklist_entry(const struct fake_func *f, const struct fake_prog *fp) {
    size_t n = strlen(f->name);
    return n > 3 && strcmp(f->name + n - 3, "_wl") == 0 &&
           f->nparams == 2 * fp->nbuf + fp->npar + fp->nwl + fp->debug + 1;
}

/* A worklist header (ARCHITECTURE.md §5) at ptr: checked against the live allocations
 * with both item arrays, read into w (the current count clamped to the capacity). */
static bool read_worklist(const struct fake_prog *fp, uint32_t slot, uint64_t ptr,
                          struct vyre_worklist_arg *w) {
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
    enum vyre_type t = VYRE_U32;
    struct vyre_decl_info d;
    for (uint32_t i = 0; vyre_program_decl(fp->p, i, &d); i++)
        if (d.kind == VYRE_DECL_WORKLIST && d.slot == slot) t = d.type;
    uint64_t bytes = (uint64_t)w->capacity * vyre_type_size(t);
    if (bytes && (!fake_mem_find(cur, bytes) || !fake_mem_find(next, bytes))) return false;
    w->cur = (void *)(uintptr_t)cur;
    w->next = (void *)(uintptr_t)next;
    return true;
}

static CUresult run_program(const struct fake_launch *l, const struct fake_prog *fp) {
    struct fake_func *f = l->fn;
    bool vec = is_vector_entry(f, fp), wle = is_worklist_entry(f, fp);
    struct vyre_worklist_arg wl[VYRE_MAX_BUFFERS], *wlp[VYRE_MAX_BUFFERS];
    uint32_t nwl = fp->nwl < VYRE_MAX_BUFFERS ? fp->nwl : VYRE_MAX_BUFFERS;
    uint32_t after = 2 * fp->nbuf + fp->npar + nwl; /* the debug counters, then vyre_wn */
    for (uint32_t w = 0; w < nwl && f->nparams >= after; w++) {
        /* one header bound to two declarations is one worklist, as on a device */
        wlp[w] = &wl[w];
        for (uint32_t e = 0; e < w; e++)
            if (arg_u(l, 2 * fp->nbuf + fp->npar + e) == arg_u(l, 2 * fp->nbuf + fp->npar + w))
                wlp[w] = wlp[e];
        if (wlp[w] != &wl[w]) continue;
        if (!read_worklist(fp, w, arg_u(l, 2 * fp->nbuf + fp->npar + w), &wl[w])) {
            fake_poison(fake_current, CUDA_ERROR_ILLEGAL_ADDRESS, "worklist out of range");
            return fake_misuse(CUDA_SUCCESS,
                               "kernel '%s': worklist %u's header or items are not inside a "
                               "live allocation",
                               f->name, w + 1);
        }
    }
    if (!vec && !wle && f->nparams != 2 * fp->nbuf + fp->npar + fp->nwl + fp->debug)
        return fake_misuse(CUDA_ERROR_LAUNCH_FAILED,
                           "kernel '%s': %u parameters, the program "
                           "declares %u buffers and %u params%s",
                           f->name, f->nparams, fp->nbuf, fp->npar,
                           fp->debug ? " (debug: and the counters)" : "");
    struct vyre_buffer_arg bufs[VYRE_MAX_BUFFERS];
    vyre_bits params[VYRE_MAX_PARAMS];
    for (uint32_t i = 0; i < fp->nbuf; i++) {
        uint64_t ptr = arg_u(l, i), count = arg_u(l, fp->nbuf + i) & 0xffffffffu;
        uint64_t bytes = count * vyre_type_size(fp->btype[i]);
        if (bytes && !fake_mem_find(ptr, bytes)) {
            fake_poison(fake_current, CUDA_ERROR_ILLEGAL_ADDRESS, "kernel buffer out of range");
            return fake_misuse(CUDA_SUCCESS,
                               "kernel '%s': buffer %u [0x%llx, +%llu bytes) is not inside a "
                               "live allocation",
                               f->name, i + 1, (unsigned long long)ptr, (unsigned long long)bytes);
        }
        bufs[i].data = (void *)(uintptr_t)ptr;
        bufs[i].count = count;
    }
    for (uint32_t i = 0; i < fp->npar; i++) params[i] = arg_u(l, 2 * fp->nbuf + i);
    struct vyre_run_args a = {
        bufs, fp->nbuf, params, fp->npar, {l->grid[0], l->grid[1], l->grid[2]}, 0};
    if (vec) {
        uint64_t vn = arg_u(l, 2 * fp->nbuf + fp->npar) & 0xffffffffu;
        a.grid[0] = (uint32_t)((vn + fp->wg[0] - 1) / fp->wg[0]);
        if (a.grid[0] == 0) return CUDA_SUCCESS; /* no invocation */
    }
    if (wle) { /* sized by a worklist: its current count, read "on the device" */
        struct vyre_worklist_arg sz;
        if (!read_worklist(fp, 0, arg_u(l, after + fp->debug), &sz)) {
            fake_poison(fake_current, CUDA_ERROR_ILLEGAL_ADDRESS, "worklist out of range");
            return fake_misuse(CUDA_SUCCESS,
                               "kernel '%s': the sizing worklist is not inside a "
                               "live allocation",
                               f->name);
        }
        a.grid[0] = (uint32_t)(((uint64_t)sz.cur_count + fp->wg[0] - 1) / fp->wg[0]);
        a.grid[1] = a.grid[2] = 1;
        if (a.grid[0] == 0) return CUDA_SUCCESS; /* no invocation */
    }
    /* Debug PTX: the counters (2 u64 per declaration) follow the params; the
     * interpreter's counts are added to them as the device's atomics would. */
    uint64_t *counters = NULL;
    struct vyre_oob_count *oob = NULL;
    uint32_t nd = vyre_program_decl_count(fp->p);
    if (fp->debug) {
        uint64_t ptr = arg_u(l, after);
        if (!fake_mem_find(ptr, 16u * (nd ? nd : 1))) {
            fake_poison(fake_current, CUDA_ERROR_ILLEGAL_ADDRESS, "debug counters out of range");
            return fake_misuse(CUDA_SUCCESS,
                               "kernel '%s': the debug counters at 0x%llx are not "
                               "inside a live allocation",
                               f->name, (unsigned long long)ptr);
        }
        counters = (uint64_t *)(uintptr_t)ptr;
        oob = calloc(nd ? nd : 1, sizeof *oob);
        if (!oob) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct vyre_error err;
    enum vyre_status rs = vyre_ref_run_wl(fp->p, &a, wlp, nwl, NULL, oob, &err);
    for (uint32_t w = 0; rs == VYRE_OK && w < nwl; w++) { /* the device's atomics on the header */
        unsigned char *h = (unsigned char *)(uintptr_t)arg_u(l, 2 * fp->nbuf + fp->npar + w);
        memcpy(h + 20, &wlp[w]->next_count, 4);
        memcpy(h + 28, &wlp[w]->overflow_needed, 4);
    }
    for (uint32_t i = 0; rs == VYRE_OK && counters && i < nd; i++) {
        counters[2 * i] += oob[i].loads;
        counters[2 * i + 1] += oob[i].stores;
    }
    free(oob);
    if (rs != VYRE_OK) {
        /* A program the interpreter refuses at run time: the kernel "faulted". */
        fake_poison(fake_current, CUDA_ERROR_LAUNCH_FAILED, err.message);
        return CUDA_SUCCESS;
    }
    computed++;
    return CUDA_SUCCESS;
}

/* The module's registered program, looked up again when programs were registered
 * after it was loaded. */
static const struct fake_prog *module_prog(struct fake_module *m) {
    if (!m->prog && m->prog_seen != nprogs) m->prog = fake_prog_find(m->ptx, &m->prog_seen);
    return m->prog;
}

CUresult fake_launch_run(const struct fake_launch *l) {
    uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
    fake_clock_ns += 2000 + blocks * 20;
    const struct fake_prog *fp = module_prog(l->fn->mod);
    if (!fp) {
        skipped++;
        return CUDA_SUCCESS;
    }
    return run_program(l, fp);
}

/* Resident blocks per multiprocessor for a block size: VYRE_FAKECUDA_OCCUPANCY, else
 * 2048 threads per SM and at most 32 blocks; 0 past the function's limit. */
static int occupancy(const struct fake_func *f, int block_size) {
    int limit = f->maxntid && f->maxntid < 1024 ? (int)f->maxntid : 1024;
    if (block_size <= 0 || block_size > limit) return 0;
    if (fake_cfg.occupancy) return fake_cfg.occupancy;
    int n = 2048 / block_size;
    return n > 32 ? 32 : n;
}

/* ---- the entry points -------------------------------------------------------------------- */

static CUresult launch(const char *call, CUfunction fn, const unsigned grid[3],
                       const unsigned block[3], unsigned shared, CUstream stream, void **params,
                       void **extra, bool cooperative) {
    CUresult r = fake_begin(call, F_CTX);
    struct fake_func *f = (struct fake_func *)(void *)fn;
    struct fake_stream *st = NULL;
    if (r == CUDA_SUCCESS && !fake_func_live(f))
        r = fake_misuse(FAKE_INVALID_HANDLE, "%s: %p is not a function of a live module", call,
                        (void *)fn);
    if (r == CUDA_SUCCESS && f->mod->h.ctx != fake_current)
        r = fake_misuse(CUDA_ERROR_INVALID_CONTEXT, "%s: '%s' belongs to another context", call,
                        f->name);
    if (r == CUDA_SUCCESS) st = fake_stream_get(stream, &r);
    static const unsigned max_block[3] = {1024, 1024, 64},
                          max_grid[3] = {2147483647u, 65535, 65535};
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    for (int a = 0; r == CUDA_SUCCESS && a < 3; a++)
        if (!grid[a] || !block[a] || block[a] > max_block[a] || grid[a] > max_grid[a])
            r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && (threads > 1024 || (f->maxntid && threads > f->maxntid)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && shared > 49152) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && extra) r = FAKE_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS && f->nparams && !params)
        r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "%s of '%s': no parameters for %u", call, f->name,
                        f->nparams);
    const struct fake_prog *fp = r == CUDA_SUCCESS ? module_prog(f->mod) : NULL;
    if (fp) {
        const uint32_t *wg = fp->wg;
        if (block[0] != wg[0] || block[1] != wg[1] || block[2] != wg[2])
            r = fake_misuse(CUDA_ERROR_INVALID_VALUE,
                            "%s of '%s': block %ux%ux%u, the program's "
                            "workgroup is %ux%ux%u",
                            call, f->name, block[0], block[1], block[2], wg[0], wg[1], wg[2]);
    }
    if (r == CUDA_SUCCESS && cooperative) {
        uint64_t fit = (uint64_t)occupancy(f, (int)threads) * (uint64_t)fake_cfg.sm_count;
        if (!fake_cfg.cooperative) r = FAKE_NOT_SUPPORTED;
        else if ((uint64_t)grid[0] * grid[1] * grid[2] > fit) r = FAKE_COOPERATIVE_TOO_LARGE;
    }
    struct fake_launch l = {
        f, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, cooperative, NULL, 0};
    if (r == CUDA_SUCCESS) {
        for (uint32_t i = 0; i < f->nparams; i++) l.args_len += f->param_size[i];
        l.args = malloc(l.args_len ? l.args_len : 1);
        if (!l.args) r = CUDA_ERROR_OUT_OF_MEMORY;
        for (uint32_t i = 0, off = 0; r == CUDA_SUCCESS && i < f->nparams; i++) {
            if (!params[i]) {
                r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "%s of '%s': parameter %u is NULL", call,
                                f->name, i);
                break;
            }
            memcpy(l.args + off, params[i], f->param_size[i]);
            off += f->param_size[i];
        }
    }
    if (r == CUDA_SUCCESS) r = fake_stream_submit(st, &l);
    fake_launch_clear(&l);
    fake_end();
    return r;
}

CUresult fake_cuLaunchKernel(CUfunction fn, unsigned int grid_x, unsigned int grid_y,
                             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                             unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                             void **params, void **extra) {
    const unsigned g[3] = {grid_x, grid_y, grid_z}, b[3] = {block_x, block_y, block_z};
    return launch("cuLaunchKernel", fn, g, b, shared_bytes, stream, params, extra, false);
}

CUresult fake_cuLaunchCooperativeKernel(CUfunction fn, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shared, CUstream stream,
                                        void **params) {
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return launch("cuLaunchCooperativeKernel", fn, g, b, shared, stream, params, NULL, true);
}

CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn,
                                                          int block_size, size_t dynamic_smem) {
    CUresult r = fake_begin("cuOccupancyMaxActiveBlocksPerMultiprocessor", F_CTX);
    const struct fake_func *f = (const struct fake_func *)(void *)fn;
    if (r == CUDA_SUCCESS && !blocks) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !fake_func_live(f))
        r = fake_misuse(FAKE_INVALID_HANDLE,
                        "cuOccupancyMaxActiveBlocksPerMultiprocessor: %p "
                        "is not a function of a live module",
                        (void *)fn);
    if (r == CUDA_SUCCESS) *blocks = dynamic_smem > 49152 ? 0 : occupancy(f, block_size);
    fake_end();
    return r;
}
