/* module.c — the JIT and modules. PTX is checked by ptxas when
 * ptxas is available (VYRE_FAKECUDA_PTXAS, $PATH, /usr/local/cuda/bin; verdicts are
 * remembered per PTX text; assembled for the PTX's own .target, which must not be
 * newer than the device), else by its structure (.version, .target, .entry). The
 * linker's "cubin" is the fake's own image: a header naming the SM, then the PTX, so
 * a cubin from the disk cache loads for the same SM only (NO_BINARY_FOR_GPU
 * otherwise, as for a real cubin of another architecture). Functions are the
 * `.entry`s of the PTX with their parameter sizes and .maxntid, which is what
 * launches and cuFuncGetAttribute need. */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fake.h"

#define CUBIN_MAGIC "VYREFAKECUBIN sm_"

void fake_log(char *log, size_t logsz, const char *fmt, ...) {
    if (!log || logsz == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log, logsz, fmt, ap);
    va_end(ap);
}

/* ---- PTX checks ------------------------------------------------------------------ */

#define VERDICTS 512
/* cuLinkAddData runs ptxas outside the driver's lock, as a real JIT runs in parallel
 * in threads of one context (vyre_cuda_compile_many): the verdict ring and the probe of
 * ptxas's targets have their own lock. */
static pthread_mutex_t verdict_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t good_ptx[VERDICTS]; /* hashes of PTX ptxas accepted (a ring) */
static unsigned ngood;

static CUresult structural_check(const char *ptx, char *log, size_t logsz) {
    static const char *const need[] = {".version", ".target", ".address_size"};
    for (size_t i = 0; i < 3; i++)
        if (!strstr(ptx, need[i])) {
            fake_log(log, logsz,
                     "ptxas fake, line 1; error   : no %s directive (vyre fakecuda checks the "
                     "structure only: ptxas was not found)",
                     need[i]);
            return CUDA_ERROR_INVALID_PTX;
        }
    return CUDA_SUCCESS;
}

/* N of the PTX's ".target sm_N" (0 if it has none). */
static unsigned ptx_target(const char *ptx) {
    const char *t = strstr(ptx, ".target");
    unsigned sm = 0;
    if (t && sscanf(t + 7, " sm_%u", &sm) != 1) sm = 0;
    return sm;
}

/* The plain sm_NN -arch values this ptxas takes (parsed once from `ptxas --help`), so a
 * device it does not know is assembled for the nearest one it does: CUDA 13's ptxas has
 * no sm_70/72 (their PTX assembles for sm_75), no sm_101 (renamed sm_110 in PTX 9.0)
 * and nothing above sm_121. */
static unsigned ptxas_sms[64], nptxas_sms;

static void ptxas_targets(void) {
    static bool probed;
    if (probed) return;
    probed = true;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' --help 2>&1", fake_cfg.ptxas);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char line[512];
    while (fgets(line, sizeof line, p))
        for (const char *q = strstr(line, "'sm_"); q; q = strstr(q + 4, "'sm_")) {
            char *end = NULL;
            unsigned long sm = strtoul(q + 4, &end, 10);
            if (end && *end == '\'' && nptxas_sms < 64) ptxas_sms[nptxas_sms++] = (unsigned)sm;
        }
    pclose(p);
}

static bool ptxas_knows(unsigned sm) {
    for (unsigned i = 0; i < nptxas_sms; i++)
        if (ptxas_sms[i] == sm) return true;
    return false;
}

/* The -arch for a device: its own SM; sm_110 for sm_101 (the same GPU, which CUDA 13's
 * ptxas knows only by its new name, while it still takes `.target sm_101`); else the
 * highest ptxas knows below it; else the lowest it knows (sm_70/72 on CUDA 13: the same
 * family's sm_75 stands in). */
static unsigned ptxas_arch(unsigned sm) {
    if (nptxas_sms == 0 || ptxas_knows(sm)) return sm < 75 && nptxas_sms == 0 ? 75 : sm;
    if (sm == 101 && ptxas_knows(110)) return 110;
    unsigned best = 0, low = ~0u;
    for (unsigned i = 0; i < nptxas_sms; i++) {
        if (ptxas_sms[i] <= sm && ptxas_sms[i] > best) best = ptxas_sms[i];
        if (ptxas_sms[i] < low) low = ptxas_sms[i];
    }
    return best ? best : low;
}

static CUresult ptxas_check(const char *ptx, char *log, size_t logsz) {
    uint64_t h = XXH3_64bits(ptx, strlen(ptx));
    pthread_mutex_lock(&verdict_lock);
    bool known = false;
    for (unsigned i = 0; i < VERDICTS && i < ngood && !known; i++) known = good_ptx[i] == h;
    ptxas_targets();
    unsigned arch = ptxas_arch(ptx_target(ptx));
    pthread_mutex_unlock(&verdict_lock);
    if (known) return CUDA_SUCCESS;
    char path[] = "/tmp/vyre-fakecuda-XXXXXX.ptx";
    int fd = mkstemps(path, 4);
    if (fd < 0) return structural_check(ptx, log, logsz);
    size_t len = strlen(ptx);
    bool wrote = write(fd, ptx, len) == (ssize_t)len;
    close(fd);
    /* The PTX is assembled for its own .target (mapped to the nearest -arch this ptxas
     * knows), as the driver's JIT takes PTX of any target up to the device's
     * (fake_ptx_check refuses newer ones): so a device newer than this ptxas knows
     * (sm_130) still checks vyre's PTX. */
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%u -o /dev/null '%s' 2>&1", fake_cfg.ptxas, arch,
             path);
    FILE *p = wrote ? popen(cmd, "r") : NULL;
    if (!p) {
        unlink(path);
        return structural_check(ptx, log, logsz);
    }
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    unlink(path);
    if (status == 0) {
        pthread_mutex_lock(&verdict_lock);
        good_ptx[ngood++ % VERDICTS] = h;
        pthread_mutex_unlock(&verdict_lock);
        return CUDA_SUCCESS;
    }
    fake_log(log, logsz, "%s", n ? out : "ptxas failed without a message");
    return CUDA_ERROR_INVALID_PTX;
}

/* The newest PTX ISA (major * 10 + minor) a driver of this CUDA version loads (PTX ISA
 * release history: 8.5 is CUDA 12.5, 8.6 12.7, 8.7 12.8, 8.8 12.9, 9.0 13.0). */
static unsigned driver_isa(int cuda) {
    static const struct {
        int cuda;
        unsigned isa;
    } t[] = {{11000, 70}, {11010, 71}, {11020, 72}, {11030, 73}, {11040, 74},
             {11050, 75}, {11060, 76}, {11070, 77}, {11080, 78}, {12000, 80},
             {12010, 81}, {12020, 82}, {12030, 83}, {12040, 84}, {12050, 85},
             {12070, 86}, {12080, 87}, {12090, 88}, {13000, 90}, {13010, 91}};
    unsigned isa = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (cuda >= t[i].cuda) isa = t[i].isa;
    return isa;
}

CUresult fake_ptx_check(const char *ptx, char *log, size_t logsz) {
    /* As a real driver: PTX of a newer ISA than the driver's is refused before the JIT. */
    const char *v = strstr(ptx, ".version");
    unsigned maj = 0, min = 0, have = driver_isa(fake_cfg.version);
    if (v && sscanf(v + 8, " %u.%u", &maj, &min) == 2 && maj * 10 + min > have) {
        fake_log(log, logsz,
                 "ptxas application ptx input, line 1; fatal   : Unsupported .version %u.%u; "
                 "current version is '%u.%u' (vyre fakecuda: driver CUDA %d.%d)",
                 maj, min, have / 10, have % 10, fake_cfg.version / 1000,
                 (fake_cfg.version % 1000) / 10);
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    unsigned target = ptx_target(ptx);
    if (target > fake_cfg.sm) {
        fake_log(log, logsz,
                 "ptxas fake, line 1; error   : the PTX's .target sm_%u is newer than the "
                 "device (sm_%u)",
                 target, fake_cfg.sm);
        return CUDA_ERROR_INVALID_PTX;
    }
    if (fake_cfg.ptxas[0]) return ptxas_check(ptx, log, logsz);
    return structural_check(ptx, log, logsz);
}

/* ---- entries ------------------------------------------------------------------------ */

static uint32_t type_bytes(const char *t) {
    if (t[0] == '.') t++;
    int bits = atoi(t + 1);
    if (!strchr("usbf", t[0]) || bits < 8) return 0;
    return (uint32_t)bits / 8;
}

/* Parses "(.param .u64 b, .param .align 8 .b8 x[16], ...)" starting at '('. */
static const char *parse_params(const char *p, struct fake_func *f) {
    const char *end = strchr(p, ')');
    if (!end) return NULL;
    for (const char *q = strstr(p, ".param"); q && q < end; q = strstr(q, ".param")) {
        q += 6;
        char tok[32];
        uint32_t size = 0;
        while (q < end && sscanf(q, " %31[.a-z0-9]", tok) == 1) {
            q = strstr(q, tok) + strlen(tok);
            if (strcmp(tok, ".align") == 0) continue;
            if (tok[0] == '.' && (size = type_bytes(tok)) != 0) break;
        }
        while (q < end && isspace((unsigned char)*q)) q++;
        while (q < end && (isalnum((unsigned char)*q) || *q == '_' || *q == '%' || *q == '$')) q++;
        if (q < end && *q == '[') size *= (uint32_t)atoi(q + 1);
        if (f->nparams < FAKE_MAX_PARAMS) f->param_size[f->nparams++] = size ? size : 8;
    }
    return end + 1;
}

static void parse_ntid(const char *p, struct fake_func *f) {
    const char *body = strchr(p, '{');
    const char *d = strstr(p, ".maxntid");
    if (!d || (body && d > body)) d = strstr(p, ".reqntid");
    if (!d || (body && d > body)) return;
    unsigned x = 1, y = 1, z = 1;
    if (sscanf(d + 8, " %u , %u , %u", &x, &y, &z) >= 1) f->maxntid = x * y * z;
}

/* Fills m->funcs from the .entry declarations of m->ptx. */
static CUresult parse_entries(struct fake_module *m) {
    const char *v = strstr(m->ptx, ".version");
    unsigned maj = 0, min = 0;
    if (v && sscanf(v + 8, " %u.%u", &maj, &min) == 2) m->ptx_version = (int)(maj * 10 + min);
    uint32_t cap = 0;
    for (const char *p = strstr(m->ptx, ".entry"); p; p = strstr(p + 6, ".entry")) cap++;
    m->funcs = calloc(cap ? cap : 1, sizeof *m->funcs);
    if (!m->funcs) return CUDA_ERROR_OUT_OF_MEMORY;
    for (const char *p = strstr(m->ptx, ".entry"); p; p = strstr(p + 6, ".entry")) {
        struct fake_func *f = &m->funcs[m->nfuncs];
        const char *q = p + 6;
        while (isspace((unsigned char)*q)) q++;
        size_t n = 0;
        while (q[n] && (isalnum((unsigned char)q[n]) || q[n] == '_' || q[n] == '$')) n++;
        if (n == 0 || n >= sizeof f->name) continue;
        memcpy(f->name, q, n);
        f->mod = m;
        const char *after = strchr(q + n, '(');
        if (after) after = parse_params(after, f);
        parse_ntid(after ? after : q + n, f);
        m->nfuncs++;
    }
    return CUDA_SUCCESS;
}

/* ---- linker ----------------------------------------------------------------------------- */

static void jit_options(unsigned n, const CUjit_option *opts, void **vals, char **log,
                        size_t *logsz) {
    *log = NULL;
    *logsz = 0;
    for (unsigned i = 0; opts && vals && i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) *log = vals[i];
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) *logsz = (size_t)(uintptr_t)vals[i];
    }
    if (!*log) *logsz = 0;
}

CUresult fake_cuLinkCreate(unsigned int num_options, CUjit_option *options, void **option_values,
                           CUlinkState *state) {
    CUresult r = fake_begin("cuLinkCreate", F_CTX);
    char *log;
    size_t logsz;
    jit_options(num_options, options, option_values, &log, &logsz);
    if (r != CUDA_SUCCESS) fake_log(log, logsz, "%s", fake_injected());
    if (r == CUDA_SUCCESS && !state) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct fake_link *l = fake_obj_new(FK_LINK, sizeof *l, fake_current);
        if (!l) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            l->log = log;
            l->logsz = logsz;
            *state = (CUlinkState)(void *)l;
        }
    }
    fake_end();
    return r;
}

static struct fake_link *link_get(CUlinkState s, const char *call, CUresult *r) {
    struct fake_link *l = fake_obj_find(FK_LINK, s);
    if (!l)
        *r = fake_misuse(FAKE_INVALID_HANDLE, "%s: %p is not a live link state", call, (void *)s);
    return l;
}

CUresult fake_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                            const char *name, unsigned int num_options, CUjit_option *options,
                            void **option_values) {
    (void)name, (void)num_options, (void)options, (void)option_values;
    CUresult r = fake_begin("cuLinkAddData", F_CTX);
    CUresult rl = CUDA_SUCCESS;
    struct fake_link *l = link_get(state, "cuLinkAddData", &rl);
    if (r != CUDA_SUCCESS && l) fake_log(l->log, l->logsz, "%s", fake_injected());
    if (r == CUDA_SUCCESS) r = rl;
    if (r == CUDA_SUCCESS && (type != CU_JIT_INPUT_PTX || !data || size == 0 || l->ptx))
        r = fake_misuse(CUDA_ERROR_INVALID_VALUE, "cuLinkAddData: only one PTX input is supported");
    /* The size counts the terminating NUL: PTX is read as a C string. */
    if (r == CUDA_SUCCESS && ((const char *)data)[size - 1] != '\0')
        r = fake_misuse(CUDA_ERROR_INVALID_PTX, "cuLinkAddData: PTX of %zu bytes not NUL-ended",
                        size);
    char *copy = NULL;
    char *log = NULL;
    size_t logsz = 0;
    if (r == CUDA_SUCCESS && !(copy = strdup(data))) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) log = l->log, logsz = l->logsz;
    fake_end();
    if (r != CUDA_SUCCESS) return r;
    /* The check (ptxas: the JIT's cost) runs unlocked, so threads JIT at once; the log
     * buffer is the link's caller's. */
    r = fake_ptx_check(copy, log, logsz);
    if (fake_cfg.jit_us > 0) usleep((useconds_t)fake_cfg.jit_us);
    fake_lock();
    l = fake_obj_find(FK_LINK, state);
    if (r == CUDA_SUCCESS && (!l || l->ptx))
        r = fake_misuse(FAKE_INVALID_HANDLE,
                        "cuLinkAddData: link state %p destroyed or fed during the call",
                        (void *)state);
    if (r == CUDA_SUCCESS) l->ptx = copy;
    else free(copy);
    fake_unlock();
    return r;
}

CUresult fake_cuLinkComplete(CUlinkState state, void **cubin, size_t *size) {
    CUresult r = fake_begin("cuLinkComplete", F_CTX);
    CUresult rl = CUDA_SUCCESS;
    struct fake_link *l = link_get(state, "cuLinkComplete", &rl);
    if (r != CUDA_SUCCESS && l) fake_log(l->log, l->logsz, "%s", fake_injected());
    if (r == CUDA_SUCCESS) r = rl;
    if (r == CUDA_SUCCESS && (!cubin || !size)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !l->ptx) {
        fake_log(l->log, l->logsz, "vyre fakecuda: cuLinkComplete with no input");
        r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r == CUDA_SUCCESS) {
        free(l->image);
        size_t n = strlen(l->ptx);
        l->image = malloc(n + 64);
        if (!l->image) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            int h = snprintf(l->image, 64, CUBIN_MAGIC "%u\n", fake_cfg.sm);
            memcpy(l->image + h, l->ptx, n + 1);
            l->image_len = (size_t)h + n + 1;
            *cubin = l->image;
            *size = l->image_len;
        }
    }
    fake_end();
    return r;
}

CUresult fake_cuLinkDestroy(CUlinkState state) {
    CUresult r = fake_begin("cuLinkDestroy", F_CTX);
    struct fake_link *l = NULL;
    if (r == CUDA_SUCCESS) l = link_get(state, "cuLinkDestroy", &r);
    if (r == CUDA_SUCCESS) fake_destroy(&l->h);
    fake_end();
    return r;
}

/* ---- modules ------------------------------------------------------------------------------ */

CUresult fake_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int num_options,
                                 CUjit_option *options, void **option_values) {
    CUresult r = fake_begin("cuModuleLoadDataEx", F_CTX);
    char *log;
    size_t logsz;
    jit_options(num_options, options, option_values, &log, &logsz);
    if (r != CUDA_SUCCESS) fake_log(log, logsz, "%s", fake_injected());
    if (r == CUDA_SUCCESS && (!module || !image)) r = CUDA_ERROR_INVALID_VALUE;
    const char *ptx = image;
    if (r == CUDA_SUCCESS && strncmp(ptx, CUBIN_MAGIC, strlen(CUBIN_MAGIC)) == 0) {
        unsigned sm = (unsigned)atoi(ptx + strlen(CUBIN_MAGIC));
        ptx = strchr(ptx, '\n');
        if (sm != fake_cfg.sm || !ptx) {
            fake_log(log, logsz, "vyre fakecuda: the cubin is for sm_%u, the device is sm_%u", sm,
                     fake_cfg.sm);
            r = CUDA_ERROR_NO_BINARY_FOR_GPU;
        } else {
            ptx++;
        }
    } else if (r == CUDA_SUCCESS && memcmp(ptx, "\177ELF", 4) == 0) {
        fake_log(log, logsz, "vyre fakecuda: a real cubin cannot run on the fake device");
        r = CUDA_ERROR_NO_BINARY_FOR_GPU;
    } else if (r == CUDA_SUCCESS) {
        r = fake_ptx_check(ptx, log, logsz);
    }
    struct fake_module *m = NULL;
    if (r == CUDA_SUCCESS) {
        m = fake_obj_new(FK_MODULE, sizeof *m, fake_current);
        if (!m || !(m->ptx = strdup(ptx))) r = CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS) r = parse_entries(m);
        if (r == CUDA_SUCCESS) r = fake_prog_load(m, log, logsz);
        if (r != CUDA_SUCCESS && m) fake_destroy(&m->h);
    }
    if (r == CUDA_SUCCESS) *module = (CUmodule)(void *)m;
    fake_end();
    return r;
}

static struct fake_module *module_get(CUmodule h, const char *call, CUresult *r) {
    struct fake_module *m = fake_obj_find(FK_MODULE, h);
    if (!m) *r = fake_misuse(FAKE_INVALID_HANDLE, "%s: %p is not a live module", call, (void *)h);
    else if (m->h.ctx != fake_current)
        *r = fake_misuse(CUDA_ERROR_INVALID_CONTEXT, "%s: module %p of another context", call,
                         (void *)h);
    return m;
}

CUresult fake_cuModuleUnload(CUmodule module) {
    CUresult r = fake_begin("cuModuleUnload", F_CTX);
    struct fake_module *m = NULL;
    if (r == CUDA_SUCCESS) m = module_get(module, "cuModuleUnload", &r);
    if (r == CUDA_SUCCESS) fake_destroy(&m->h);
    fake_end();
    return r;
}

CUresult fake_cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name) {
    CUresult r = fake_begin("cuModuleGetFunction", F_CTX);
    struct fake_module *m = NULL;
    if (r == CUDA_SUCCESS && (!fn || !name)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) m = module_get(module, "cuModuleGetFunction", &r);
    if (r == CUDA_SUCCESS) {
        r = CUDA_ERROR_NOT_FOUND;
        for (uint32_t i = 0; i < m->nfuncs; i++)
            if (strcmp(m->funcs[i].name, name) == 0) {
                *fn = (CUfunction)(void *)&m->funcs[i];
                r = CUDA_SUCCESS;
            }
    }
    fake_end();
    return r;
}

CUresult fake_cuFuncGetAttribute(int *value, CUfunction_attribute attrib, CUfunction fn) {
    CUresult r = fake_begin("cuFuncGetAttribute", F_CTX);
    const struct fake_func *f = (const struct fake_func *)(void *)fn;
    if (r == CUDA_SUCCESS && !value) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !fake_func_live(f))
        r = fake_misuse(FAKE_INVALID_HANDLE, "cuFuncGetAttribute: function of an unloaded module");
    if (r == CUDA_SUCCESS) {
        switch (attrib) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
            *value = f->maxntid && f->maxntid < 1024 ? (int)f->maxntid : 1024;
            break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
        case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = f->mod->ptx_version; break;
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = (int)fake_cfg.sm; break;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
        default: r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    fake_end();
    return r;
}
