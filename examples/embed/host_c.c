/* host_c.c — the engine of host_lua.c without Lua: the same frame loop over the same
 * resident buffers, driven through the C API (include/vyre.h for programs and the
 * reference interpreter, include/vyre_cuda.h for the CUDA runtime). The kernels are
 * particles.vyre (read from VYRE_EMBED_DIR) and a float atomic max; each frame hands
 * the raw buffer pointers to the engine code of engine.h, which checks them against
 * its C simulation.
 *
 *   vyre_embed_c [--backend reference|cuda] [--frames N] [--particles N] */
#include <vyre.h>
#include <vyre_cuda.h>

#include "engine.h"

static const char HEIGHT[] = "(program height (workgroup 64)\n"
                             "  (buffer y f32 read)\n"
                             "  (buffer top f32 read_write 1)\n"
                             "  (let i (gid x))\n"
                             "  (if (lt i (len y)) (then (atomic max top 0u32 (load y i)))))\n";

static vyre_bits f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int fail(const char *what, const struct vyre_error *err) {
    fprintf(stderr, "vyre_embed_c: %s: %s\n", what, err->message);
    return 1;
}

/* Parses and validates text into *out. */
static int load(const char *text, size_t len, vyre_program **out, struct vyre_error *err) {
    if (vyre_text_parse(text, len, out, err) != VYRE_OK) return -1;
    return vyre_program_check(*out, err) == VYRE_OK ? 0 : -1;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
            *len = fread(buf, 1, (size_t)n, f);
            buf[*len] = '\0';
        }
    }
    fclose(f);
    return buf;
}

/* The reference backend: host arrays are the buffers, vyre_ref_run the launch. */
static int frames_reference(struct engine *e, vyre_program *step, vyre_program *height) {
    struct vyre_error err;
    float *y = malloc((size_t)e->n * sizeof(float)), *vy = malloc((size_t)e->n * sizeof(float));
    float top = 0.0f;
    int st = 0;
    if (!y || !vy) st = engine_fail(e, "out of memory");
    for (uint32_t i = 0; st == 0 && i < e->n; i++) {
        y[i] = engine_y0(i);
        vy[i] = engine_vy0(i);
    }
    struct vyre_buffer_arg sbufs[2] = {{y, e->n}, {vy, e->n}}, hbufs[2] = {{y, e->n}, {&top, 1}};
    uint64_t counts[2] = {e->n, e->n};
    struct vyre_run_args sargs = {sbufs, 2, NULL, 3, {0, 0, 0}};
    struct vyre_run_args hargs = {hbufs, 2, NULL, 0, {0, 0, 0}};
    struct vyre_grid_options go = {.buffer_counts = counts, .nbuffers = 2};
    if (st == 0 && (vyre_launch_grid(step, &go, sargs.grid, &err) != VYRE_OK ||
                    vyre_launch_grid(height, &go, hargs.grid, &err) != VYRE_OK))
        st = fail("vyre_launch_grid", &err);
    for (int frame = 0; st == 0 && frame < e->frames; frame++) {
        vyre_bits params[3] = {f32_bits(engine_dt(frame)), f32_bits(ENGINE_GRAVITY),
                               f32_bits(ENGINE_BOUNCE)};
        sargs.params = params;
        top = 0.0f;
        if (vyre_ref_run(step, &sargs, NULL, &err) != VYRE_OK)
            st = fail("vyre_ref_run particles", &err);
        else if (vyre_ref_run(height, &hargs, NULL, &err) != VYRE_OK)
            st = fail("vyre_ref_run height", &err);
        else if (engine_present(e, frame, (uint64_t)(uintptr_t)y, (uint64_t)(uintptr_t)&top,
                                e->n) != 0)
            st = 1;
    }
    free(y);
    free(vy);
    return st;
}

/* The CUDA backend: device buffers allocated once, two launches per frame, one sync. */
static int frames_cuda(struct engine *e, vyre_program *step, vyre_program *height) {
    struct vyre_error err;
    vyre_cuda_device *d = NULL;
    vyre_cuda_buffer *y = NULL, *vy = NULL, *top = NULL;
    vyre_cuda_kernel *ks = NULL, *kh = NULL;
    float *init = malloc((size_t)e->n * sizeof(float) * 2);
    int st = 0;
    if (!init) return engine_fail(e, "out of memory");
    for (uint32_t i = 0; i < e->n; i++) {
        init[i] = engine_y0(i);
        init[e->n + i] = engine_vy0(i);
    }
    uint64_t bytes = (uint64_t)e->n * sizeof(float);
    if (!vyre_cuda_available(&err) || vyre_cuda_device_open(0, &d, &err) != VYRE_OK ||
        vyre_cuda_buffer_alloc(d, VYRE_F32, e->n, &y, &err) != VYRE_OK ||
        vyre_cuda_buffer_alloc(d, VYRE_F32, e->n, &vy, &err) != VYRE_OK ||
        vyre_cuda_buffer_alloc(d, VYRE_F32, 1, &top, &err) != VYRE_OK ||
        vyre_cuda_buffer_upload(y, 0, init, bytes, &err) != VYRE_OK ||
        vyre_cuda_buffer_upload(vy, 0, init + e->n, bytes, &err) != VYRE_OK ||
        vyre_cuda_compile(d, step, &ks, &err) != VYRE_OK ||
        vyre_cuda_compile(d, height, &kh, &err) != VYRE_OK)
        st = fail("CUDA setup", &err);
    vyre_cuda_buffer *sb[2] = {y, vy}, *hb[2] = {y, top};
    for (int frame = 0; st == 0 && frame < e->frames; frame++) {
        vyre_bits params[3] = {f32_bits(engine_dt(frame)), f32_bits(ENGINE_GRAVITY),
                               f32_bits(ENGINE_BOUNCE)};
        struct vyre_cuda_args sa = {sb, 2, params, 3, 0, NULL, 0, VYRE_GRID_AUTO},
                              ha = {hb, 2, NULL, 0, 0, NULL, 0, VYRE_GRID_AUTO};
        if (vyre_cuda_launch(ks, &sa, &err) != VYRE_OK ||
            vyre_cuda_buffer_zero(top, &err) != VYRE_OK ||
            vyre_cuda_launch(kh, &ha, &err) != VYRE_OK || vyre_cuda_synchronize(d, &err) != VYRE_OK)
            st = fail("CUDA frame", &err);
        else if (engine_present(e, frame, vyre_cuda_buffer_pointer(y),
                                vyre_cuda_buffer_pointer(top), e->n) != 0)
            st = 1;
    }
    vyre_cuda_kernel_free(ks);
    vyre_cuda_kernel_free(kh);
    vyre_cuda_buffer_free(y);
    vyre_cuda_buffer_free(vy);
    vyre_cuda_buffer_free(top);
    if (d) vyre_cuda_device_release(d);
    free(init);
    return st;
}

int main(int argc, char **argv) {
    const char *backend;
    int frames;
    uint32_t n;
    int st = engine_args(argc, argv, "vyre_embed_c", &backend, &frames, &n);
    if (st != 0) return st;
    const char *dir = getenv("VYRE_EMBED_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/particles.vyre", dir && *dir ? dir : VYRE_EMBED_DIR);
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "vyre_embed_c: cannot read %s\n", path);
        return 1;
    }
    struct vyre_error err;
    vyre_program *step = NULL, *height = NULL;
    struct engine e;
    memset(&e, 0, sizeof e); /* engine_free is safe whatever fails first */
    bool cuda = strcmp(backend, "cuda") == 0;
    if (load(text, len, &step, &err) != 0 || load(HEIGHT, sizeof HEIGHT - 1, &height, &err) != 0)
        st = fail("program", &err);
    else if (engine_init(&e, "vyre_embed_c", cuda, n, frames) != 0) st = 1;
    else {
        printf("vyre_embed_c: %s backend, %u particles, programs %s and %s\n", backend, n,
               vyre_program_name(step), vyre_program_name(height));
        st = cuda ? frames_cuda(&e, step, height) : frames_reference(&e, step, height);
        if (st == 0) st = engine_finish(&e, backend);
    }
    engine_free(&e);
    vyre_program_free(step);
    vyre_program_free(height);
    free(text);
    return st;
}
