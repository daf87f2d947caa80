/* worklist.c — device worklists (ARCHITECTURE.md §2, §5 "Worklists"): the object, its
 * host operations, the advance step, and launches sized by a worklist.
 *
 * A worklist is three device buffers: a 40-byte header (the 32 bytes the kernels read,
 * ptx_worklist.c, and one spare word) and two item arrays of `capacity` elements, one
 * holding the current items and one receiving the next round's. Which is which lives
 * only in the header, so kernel arguments (the header's address) never change between
 * rounds: a captured graph or a prepared launch stays valid across advances.
 *
 * advance is a small vyre program launched on the stream (no host synchronisation,
 * capturable like any step): swap the two item pointers, make the pushed count current
 * and zero the next count. overflow_needed stays set until the host reads it, so an
 * overflow in any round is reported at the next read (size, items, push). */
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

/* Header words (u64): cur, next, {cur_count, next_count}, {capacity, overflow}, spare. */
#define WL_WORDS 5u

/* (len/2 words of the header): cur_count is the low half of word 2, next_count its
 * high half; advance makes word 2 = next_count (cur_count = next_count, next = 0). */
static const char ADVANCE_TEXT[] = "(program vyre_worklist_advance (workgroup 1)\n"
                                   "  (buffer h u64 read_write 5)\n"
                                   "  (if (eq (gid x) 0u32)\n"
                                   "    (then\n"
                                   "      (let c (load h 0u32))\n"
                                   "      (store h 0u32 (load h 1u32))\n"
                                   "      (store h 1u32 c)\n"
                                   "      (store h 2u32 (shr (load h 2u32) 32u64)))))\n";

struct vyre_cuda_worklist {
    struct vyre_cuda_device *dev;
    enum vyre_type type;
    uint32_t capacity;
    vyre_cuda_buffer *hdr, *items[2];
    vyre_cuda_kernel *advance;
};

const char *vyre_cuda_worklist_advance_text(void) { return ADVANCE_TEXT; }

void vyre_cuda_worklist_free(vyre_cuda_worklist *w) {
    if (!w) return;
    vyre_cuda_kernel_free(w->advance);
    vyre_cuda_buffer_free(w->hdr);
    vyre_cuda_buffer_free(w->items[0]);
    vyre_cuda_buffer_free(w->items[1]);
    free(w);
}

enum vyre_status vyre_cuda_worklist_alloc(vyre_cuda_device *d, enum vyre_type t, uint32_t capacity,
                                          vyre_cuda_worklist **out, struct vyre_error *err) {
    if (!d || !out)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "worklist: device or out is NULL. Fix: pass both.");
    *out = NULL;
    if ((unsigned)t >= VYRE_TYPE_COUNT || t == VYRE_BOOL || capacity == 0)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "worklist: item type %s, capacity %u. Fix: use a numeric item "
                              "type (i32 u32 i64 u64 f32 f64) and a capacity of at least 1.",
                              (unsigned)t < VYRE_TYPE_COUNT ? vyre_type_name(t) : "?", capacity);
    vyre_cuda_worklist *w = calloc(1, sizeof *w);
    if (!w)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "worklist: out of host memory. Fix: free memory.");
    w->dev = d;
    w->type = t;
    w->capacity = capacity;
    enum vyre_status st = vyre_cuda_buffer_alloc(d, VYRE_U64, WL_WORDS, &w->hdr, err);
    for (int i = 0; i < 2 && st == VYRE_OK; i++)
        st = vyre_cuda_buffer_alloc(d, t, capacity, &w->items[i], err);
    vyre_program *p = NULL;
    if (st == VYRE_OK) st = vyre_text_parse(ADVANCE_TEXT, strlen(ADVANCE_TEXT), &p, err);
    if (st == VYRE_OK) st = vyre_cuda_compile(d, p, &w->advance, err);
    vyre_program_free(p);
    if (st == VYRE_OK) {
        uint64_t h[WL_WORDS] = {vyre_cuda_buffer_pointer(w->items[0]),
                                vyre_cuda_buffer_pointer(w->items[1]), 0, capacity, 0};
        st = vyre_cuda_buffer_upload(w->hdr, 0, h, sizeof h, err);
    }
    if (st != VYRE_OK) {
        vyre_cuda_worklist_free(w);
        return st;
    }
    *out = w;
    return VYRE_OK;
}

uint64_t vyre_cuda_worklist_header(const vyre_cuda_worklist *w) {
    return w ? vyre_cuda_buffer_pointer(w->hdr) : 0;
}
enum vyre_type vyre_cuda_worklist_type(const vyre_cuda_worklist *w) { return w->type; }
uint32_t vyre_cuda_worklist_capacity(const vyre_cuda_worklist *w) { return w->capacity; }
vyre_cuda_device *vyre_cuda_worklist_device(const vyre_cuda_worklist *w) { return w->dev; }

/* Downloads the header (waits for queued work); cur is 0 or 1: the current array. */
static enum vyre_status read_header(vyre_cuda_worklist *w, uint64_t h[WL_WORDS], int *cur,
                                    struct vyre_error *err) {
    enum vyre_status st = vyre_cuda_buffer_download(w->hdr, 0, h, WL_WORDS * 8u, err);
    if (st != VYRE_OK) return st;
    *cur = h[0] == vyre_cuda_buffer_pointer(w->items[0]) ? 0 : 1;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_worklist_state(vyre_cuda_worklist *w, struct vyre_worklist_arg *out,
                                          struct vyre_error *err) {
    uint64_t h[WL_WORDS];
    int cur;
    enum vyre_status st = read_header(w, h, &cur, err);
    if (st != VYRE_OK) return st;
    memset(out, 0, sizeof *out);
    out->cur_count = (uint32_t)h[2];
    out->next_count = (uint32_t)(h[2] >> 32);
    out->capacity = (uint32_t)h[3];
    out->overflow_needed = (uint32_t)(h[3] >> 32);
    return VYRE_OK;
}

enum vyre_status vyre_cuda_worklist_items(vyre_cuda_worklist *w, void *dst, uint32_t n,
                                          struct vyre_error *err) {
    uint64_t h[WL_WORDS];
    int cur;
    enum vyre_status st = read_header(w, h, &cur, err);
    if (st != VYRE_OK || n == 0) return st;
    return vyre_cuda_buffer_download(w->items[cur], 0, dst, (uint64_t)n * vyre_type_size(w->type),
                                     err);
}

enum vyre_status vyre_cuda_worklist_push(vyre_cuda_worklist *w, const void *src, uint32_t n,
                                         struct vyre_error *err) {
    uint64_t h[WL_WORDS];
    int cur;
    enum vyre_status st = read_header(w, h, &cur, err);
    if (st != VYRE_OK || n == 0) return st;
    uint32_t have = (uint32_t)h[2];
    if (have > w->capacity) have = w->capacity;
    if ((uint64_t)have + n > w->capacity)
        return vyre_error_set(err, VYRE_ERR_LIMIT,
                              "worklist push: %u items after %u current ones need capacity "
                              "%llu, the worklist has %u. Fix: create it with a capacity of at "
                              "least %llu.",
                              n, have, (unsigned long long)have + n, w->capacity,
                              (unsigned long long)have + n);
    size_t size = vyre_type_size(w->type);
    st =
        vyre_cuda_buffer_upload(w->items[cur], (uint64_t)have * size, src, (uint64_t)n * size, err);
    uint32_t count = have + n;
    if (st == VYRE_OK) st = vyre_cuda_buffer_upload(w->hdr, 16, &count, sizeof count, err);
    return st;
}

enum vyre_status vyre_cuda_worklist_clear(vyre_cuda_worklist *w, struct vyre_error *err) {
    uint64_t words[2] = {0, w->capacity}; /* counts 0, overflow 0 */
    return vyre_cuda_buffer_upload(w->hdr, 16, words, sizeof words, err);
}

enum vyre_status vyre_cuda_worklist_advance_step(vyre_cuda_worklist *w,
                                                 struct vyre_cuda_step *out) {
    static const uint32_t one[3] = {1, 1, 1};
    memset(out, 0, sizeof *out);
    out->kernel = w->advance;
    out->args.buffers = &w->hdr;
    out->args.nbuffers = 1;
    out->args.grid = one;
    return VYRE_OK;
}

enum vyre_status vyre_cuda_worklist_advance(vyre_cuda_worklist *w, struct vyre_error *err) {
    struct vyre_cuda_step s;
    vyre_cuda_worklist_advance_step(w, &s);
    return vyre_cuda_launch(s.kernel, &s.args, err);
}

/* ---- launches sized by a worklist ------------------------------------------------ */

enum vyre_status vyre_cu_wl_sized(vyre_cuda_kernel *k, uint64_t wn, uint64_t *slot, uint32_t g[3],
                                  struct vyre_error *err) {
    if (!k->wfn)
        return vyre_error_set(err, VYRE_ERR_ARG,
                              "launch of '%s' sized by a worklist ({n = wl}): the program "
                              "declares no worklist. Fix: declare (worklist NAME TYPE) in the "
                              "program, or size the launch with a number.",
                              k->name);
    slot[k->wn_at] = wn;
    /* a bounded grid: as many workgroups as the device keeps resident at once (the
     * driver's occupancy of the NAME_wl entry, asked once), at least one per SM; sized
     * by vyre_occupancy_grid, the rule vyre.planners.occupancy.grid reports */
    if (!k->wl_grid) {
        int per = 0;
        enum vyre_status st = vyre_cu_resident(k, k->wfn, &per, err);
        if (st != VYRE_OK) return st;
        struct vyre_device_limits lim;
        vyre_cu_limits(k->dev, &lim);
        k->wl_grid = vyre_occupancy_grid(&lim, VYRE_SIZE_BOUNDED, per > 0 ? (uint32_t)per : 0, 0);
    }
    g[0] = k->wl_grid;
    g[1] = g[2] = 1;
    return VYRE_OK;
}
