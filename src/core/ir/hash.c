/* hash.c — the program hash: XXH3-64 of the canonical text (ARCHITECTURE.md §4), the
 * key of the PTX and module caches. The text is streamed through a small chunk
 * buffer into the hash state, so hashing allocates nothing and cannot fail. */
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "text.h"

static void hash_sink(void *ctx, const char *s, size_t n) {
    (void)XXH3_64bits_update((XXH3_state_t *)ctx, s, n);
}

uint64_t vyre_program_hash(const vyre_program *p) {
    XXH3_state_t state;
    char chunk[4096];
    struct vyre_tw w = {
        .mode = VYRE_TW_SINK, .buf = chunk, .cap = sizeof chunk, .sink = hash_sink, .ctx = &state};
    (void)XXH3_64bits_reset(&state);
    if (p) vyre_tw_program(&w, p);
    vyre_tw_flush(&w);
    return (uint64_t)XXH3_64bits_digest(&state);
}

void vyre_program_hash_hex(const vyre_program *p, char out[17]) {
    static const char hex[] = "0123456789abcdef";
    uint64_t h = vyre_program_hash(p);
    for (int i = 15; i >= 0; i--) {
        out[i] = hex[h & 15];
        h >>= 4;
    }
    out[16] = '\0';
}
