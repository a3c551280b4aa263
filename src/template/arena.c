/* The template arena: bump allocation in chunks, freed all at once. Every AST node and
 * every value of a render lives in one, so values need no reference counts and cyclic
 * structures (a namespace holding itself) cannot leak. A byte cap bounds a render. */
#include <stdlib.h>
#include <string.h>

#include "template/internal.h"

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
} chunk;

struct tpl_arena {
    chunk *head;
    size_t total, cap;
    int exhausted;
};

tpl_arena *hr_ta_create(size_t cap) {
    tpl_arena *a = calloc(1, sizeof *a);
    if (a) a->cap = cap;
    return a;
}

void hr_ta_destroy(tpl_arena *a) {
    if (!a) return;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

static chunk *new_chunk(tpl_arena *a, size_t size) {
    if (a->total + size > a->cap) {
        a->exhausted = 1;
        return NULL;
    }
    chunk *c = malloc(sizeof *c + size);
    if (!c) return NULL;
    c->used = 0;
    c->size = size;
    a->total += size;
    return c;
}

void *hr_ta_alloc(tpl_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        if (n > 16384) { /* big blocks get their own chunk behind the current one */
            chunk *big = new_chunk(a, n);
            if (!big) return NULL;
            big->used = n;
            if (c) {
                big->next = c->next;
                c->next = big;
            } else {
                big->next = NULL;
                a->head = big;
            }
            memset(big->data, 0, n);
            return big->data;
        }
        c = new_chunk(a, 65536);
        if (!c) return NULL;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

int hr_tpl_arena_exhausted(const tpl_arena *a) { return a->exhausted; }

char *hr_ta_strndup(tpl_arena *a, const char *s, size_t n) {
    char *p = hr_ta_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}
