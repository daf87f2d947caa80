/* engine.h — the "engine" side shared by the two embedding hosts (host_lua.c, host_c.c):
 * the frame schedule, a CPU simulation of the same particles (the check), and the code
 * that takes a buffer's raw pointer from vyre and reads it as an engine's own code would
 * (interop). Header-only: each host is one C file plus this.
 *
 * The pointer a host gets (buf:pointer() in Lua, vyre_cuda_buffer_pointer in C) is
 * a CUdeviceptr on CUDA and a plain host address on the reference backend. On CUDA the
 * engine reads it with cuMemcpyDtoH from libcuda, loaded at run time like vyre does:
 * vyre leaves its (primary) context current on the calling thread, and the host
 * synchronises vyre's stream before it hands the pointer over. */
#ifndef VYRE_EMBED_ENGINE_H
#define VYRE_EMBED_ENGINE_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENGINE_GRAVITY 9.75f /* exact in binary: Lua's 9.75 rounds to the same f32 */
#define ENGINE_BOUNCE 0.75f

/* Variable frame times, all exact in binary so Lua and C agree: 16/1024 .. 18/1024 s. */
static inline float engine_dt(int frame) { return (float)(16 + frame % 3) / 1024.0f; }

/* The starting heights and vertical speeds of particle i (0-based). */
static inline float engine_y0(uint32_t i) { return (float)(i % 97u) * 0.25f; }
static inline float engine_vy0(uint32_t i) { return (float)((int)(i % 13u) - 6) * 0.5f; }

struct engine {
    const char *host;    /* program name for messages */
    bool cuda;           /* the pointers are device pointers */
    uint32_t n;          /* particles */
    int frames;          /* frames to run */
    float *y, *vy, *got; /* the CPU simulation, and a copy of the GPU heights */
    float top;           /* the highest particle, as the kernel computed it */
    long mismatches;     /* frames whose top differs from the simulation's */
    void *cuda_lib;      /* libcuda.so.1, only on CUDA */
    int (*memcpy_dtoh)(void *dst, unsigned long long src, size_t bytes);
};

static int engine_fail(const struct engine *e, const char *what) {
    fprintf(stderr, "%s: %s\n", e->host, what);
    return 1;
}

/* 0 on success. The simulation starts from the same state as the buffers. */
static int engine_init(struct engine *e, const char *host, bool cuda, uint32_t n, int frames) {
    memset(e, 0, sizeof *e);
    e->host = host;
    e->cuda = cuda;
    e->n = n;
    e->frames = frames;
    e->y = malloc((size_t)n * sizeof(float));
    e->vy = malloc((size_t)n * sizeof(float));
    e->got = malloc((size_t)n * sizeof(float));
    if (!e->y || !e->vy || !e->got) return engine_fail(e, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        e->y[i] = engine_y0(i);
        e->vy[i] = engine_vy0(i);
    }
    if (cuda) {
        e->cuda_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        void *sym = e->cuda_lib ? dlsym(e->cuda_lib, "cuMemcpyDtoH_v2") : NULL;
        if (!sym) return engine_fail(e, "cannot load cuMemcpyDtoH_v2 from libcuda.so.1");
        memcpy(&e->memcpy_dtoh, &sym, sizeof sym); /* object -> function pointer, POSIX */
    }
    return 0;
}

static void engine_free(struct engine *e) {
    free(e->y);
    free(e->vy);
    free(e->got);
    if (e->cuda_lib) dlclose(e->cuda_lib);
    e->y = e->vy = e->got = NULL;
    e->cuda_lib = NULL;
}

/* The engine's own read of vyre's memory through the raw pointer. */
static int engine_read(struct engine *e, uint64_t ptr, void *dst, size_t bytes) {
    if (bytes == 0) return 0;
    if (!e->cuda) {
        memcpy(dst, (const void *)(uintptr_t)ptr, bytes);
        return 0;
    }
    return e->memcpy_dtoh(dst, (unsigned long long)ptr, bytes) == 0 ? 0 : -1;
}

/* One frame of the CPU simulation: the kernel of particles.vyre, one rounding per step
 * (separate statements, so no compiler contracts a multiply and an add). */
static void engine_simulate(struct engine *e, int frame) {
    float dt = engine_dt(frame);
    for (uint32_t i = 0; i < e->n; i++) {
        float gdt = ENGINE_GRAVITY * dt;
        float v = e->vy[i] - gdt;
        float vdt = v * dt;
        float h = e->y[i] + vdt;
        if (h < 0.0f) {
            float up = -v;
            e->y[i] = -h;
            e->vy[i] = up * ENGINE_BOUNCE;
        } else {
            e->y[i] = h;
            e->vy[i] = v;
        }
    }
}

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* What the host calls after each frame with the raw pointers of the heights and of the
 * one-element `top` buffer: reads top (and on the last frame every height), steps the
 * simulation and compares. Returns 0, or -1 when a read failed. */
static int engine_present(struct engine *e, int frame, uint64_t y_ptr, uint64_t top_ptr,
                          uint32_t n) {
    if (n != e->n) {
        engine_fail(e, "the height buffer has the wrong length");
        return -1;
    }
    if (engine_read(e, top_ptr, &e->top, sizeof e->top) != 0) return -1;
    engine_simulate(e, frame);
    float want = 0.0f;
    for (uint32_t i = 0; i < e->n; i++)
        if (e->y[i] > want) want = e->y[i];
    if (!same_bits(e->top, want)) e->mismatches++;
    if (frame % 20 == 0 || frame == e->frames - 1)
        printf("frame %2d: dt %.6f s, highest particle %.4f (C simulation %.4f)\n", frame,
               (double)engine_dt(frame), (double)e->top, (double)want);
    if (frame == e->frames - 1 && engine_read(e, y_ptr, e->got, (size_t)n * sizeof(float)) != 0)
        return -1;
    return 0;
}

/* Prints the verdict; returns the exit status. */
static int engine_finish(struct engine *e, const char *backend) {
    long bad = 0;
    for (uint32_t i = 0; i < e->n; i++)
        if (!same_bits(e->got[i], e->y[i])) bad++;
    if (bad || e->mismatches) {
        fprintf(stderr, "%s: %ld heights and %ld frame maxima differ from the C simulation\n",
                e->host, bad, e->mismatches);
        return 1;
    }
    printf("%s: %d frames, %u particles, %s backend: the heights match the C simulation "
           "bit for bit (highest %.4f)\n",
           e->host, e->frames, e->n, backend, (double)e->top);
    return 0;
}

/* Command line shared by both hosts: --backend reference|cuda, --frames N,
 * --particles N. Returns 0, or 2 after printing the usage. */
static int engine_args(int argc, char **argv, const char *host, const char **backend, int *frames,
                       uint32_t *n) {
    *backend = "reference";
    *frames = 60;
    *n = 4096;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--backend") == 0 && v && (!strcmp(v, "reference") || !strcmp(v, "cuda"))) {
            *backend = v;
            i++;
        } else if (strcmp(a, "--frames") == 0 && v && atoi(v) > 0) {
            *frames = atoi(v);
            i++;
        } else if (strcmp(a, "--particles") == 0 && v && atoi(v) > 0) {
            *n = (uint32_t)atoi(v);
            i++;
        } else {
            fprintf(stderr,
                    "usage: %s [--backend reference|cuda] [--frames N] [--particles N]\n"
                    "Runs a particle system for N frames on vyre and checks it against a C "
                    "simulation.\n",
                    host);
            return 2;
        }
    }
    return 0;
}

#endif
