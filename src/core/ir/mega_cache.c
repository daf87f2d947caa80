/* mega_cache.c — the megakernel plan cache (vyre_mega.h): a bounded LRU table of
 * reference-counted plans with its own lock, owned by a backend (or a device) and freed
 * with it. Planning a composition costs a print, a parse and a validation per step; the
 * cache lets be:plan and be:megakernel in a loop pay that once. It used to be one
 * process-wide table in the binding with no lock: two threads raced on it, an eviction
 * freed a plan another caller still used, and one backend's plans showed in another's
 * counters. The lock is held only for table operations, never while a plan is built or
 * run, so a policy callback that plans other compositions cannot deadlock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vyre_mega.h"

#define DEFAULT_CAPACITY 64u

struct entry {
    uint64_t key, last_use;
    struct vyre_mega *m; /* the cache's reference; NULL: a free slot */
};

struct vyre_mega_cache {
    pthread_mutex_t lock;
    uint32_t capacity;
    uint64_t tick, hits, misses, evictions;
    struct entry e[];
};

static enum vyre_status null_arg(struct vyre_error *err, const char *fn) {
    return vyre_error_set(err, VYRE_ERR_ARG,
                          "%s: NULL argument. Fix: pass a cache made by vyre_mega_cache_new and "
                          "every out pointer",
                          fn);
}

enum vyre_status vyre_mega_cache_new(uint32_t capacity, vyre_mega_cache **out,
                                     struct vyre_error *err) {
    if (!out) return null_arg(err, "vyre_mega_cache_new");
    *out = NULL;
    if (!capacity) capacity = DEFAULT_CAPACITY;
    vyre_mega_cache *c = calloc(1, sizeof *c + (size_t)capacity * sizeof c->e[0]);
    if (!c)
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "megakernel plan cache: out of memory. Fix: free memory");
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return vyre_error_set(err, VYRE_ERR_NOMEM,
                              "megakernel plan cache: cannot create its lock. Fix: free "
                              "system resources");
    }
    c->capacity = capacity;
    *out = c;
    return VYRE_OK;
}

/* Under the lock. */
static void drop_all(vyre_mega_cache *c) {
    for (uint32_t i = 0; i < c->capacity; i++) {
        vyre_mega_free(c->e[i].m);
        c->e[i].m = NULL;
    }
}

void vyre_mega_cache_free(vyre_mega_cache *c) {
    if (!c) return;
    drop_all(c); /* the owner frees it: no other thread may use it any more */
    pthread_mutex_destroy(&c->lock);
    free(c);
}

enum vyre_status vyre_mega_cache_get(vyre_mega_cache *c, uint64_t key, struct vyre_mega **out,
                                     struct vyre_error *err) {
    if (!c || !out) return null_arg(err, "vyre_mega_cache_get");
    *out = NULL;
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < c->capacity; i++)
        if (c->e[i].m && c->e[i].key == key) {
            c->e[i].last_use = ++c->tick;
            *out = vyre_mega_retain(c->e[i].m);
            break;
        }
    if (*out) c->hits++;
    else c->misses++;
    pthread_mutex_unlock(&c->lock);
    return VYRE_OK;
}

enum vyre_status vyre_mega_cache_put(vyre_mega_cache *c, uint64_t key, struct vyre_mega *m,
                                     struct vyre_error *err) {
    if (!c || !m) return null_arg(err, "vyre_mega_cache_put");
    struct vyre_mega *evicted = NULL;
    pthread_mutex_lock(&c->lock);
    struct entry *slot = NULL;
    for (uint32_t i = 0; i < c->capacity && !slot; i++)
        if (c->e[i].m && c->e[i].key == key) slot = &c->e[i];
    if (slot) { /* planned meanwhile by another caller: keep theirs */
        pthread_mutex_unlock(&c->lock);
        return VYRE_OK;
    }
    slot = &c->e[0];
    for (uint32_t i = 0; i < c->capacity; i++) {
        if (!c->e[i].m) {
            slot = &c->e[i];
            break;
        }
        if (c->e[i].last_use < slot->last_use) slot = &c->e[i];
    }
    if (slot->m) {
        evicted = slot->m;
        c->evictions++;
    }
    slot->key = key;
    slot->m = vyre_mega_retain(m);
    slot->last_use = ++c->tick;
    pthread_mutex_unlock(&c->lock);
    vyre_mega_free(evicted); /* outside the lock: freeing a program takes a while */
    return VYRE_OK;
}

enum vyre_status vyre_mega_cache_clear(vyre_mega_cache *c, struct vyre_error *err) {
    if (!c) return null_arg(err, "vyre_mega_cache_clear");
    pthread_mutex_lock(&c->lock);
    drop_all(c);
    pthread_mutex_unlock(&c->lock);
    return VYRE_OK;
}

enum vyre_status vyre_mega_cache_stats(vyre_mega_cache *c, struct vyre_mega_cache_stats *out,
                                       struct vyre_error *err) {
    if (!c || !out) return null_arg(err, "vyre_mega_cache_stats");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->lock);
    out->hits = c->hits;
    out->misses = c->misses;
    out->evictions = c->evictions;
    for (uint32_t i = 0; i < c->capacity; i++) out->entries += c->e[i].m != NULL;
    pthread_mutex_unlock(&c->lock);
    return VYRE_OK;
}
