/* The LRU list of the grammar engine's caches (dfa_cache.c, mask_cache.c, grammar_cache.c),
 * shared by the files of src/grammar/ only: intrusive, an entry's first member its link, so
 * a link is its entry. The caller holds the cache's lock. */
#ifndef HR_GRAMMAR_LRU_H
#define HR_GRAMMAR_LRU_H

#include <stddef.h>

typedef struct hr_glru_link {
    struct hr_glru_link *newer, *older;
} hr_glru_link;

typedef struct {
    hr_glru_link *newest, *oldest;
} hr_glru;

static inline void hr_glru_unlink(hr_glru *l, hr_glru_link *e) {
    if (e->newer)
        e->newer->older = e->older;
    else
        l->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        l->oldest = e->newer;
}

/* e becomes the newest. */
static inline void hr_glru_push(hr_glru *l, hr_glru_link *e) {
    e->newer = NULL;
    e->older = l->newest;
    if (l->newest) l->newest->newer = e;
    l->newest = e;
    if (!l->oldest) l->oldest = e;
}

#endif
