/* The global memory budget for request processing: each request reserves its body's size
 * before the body is read, then an estimate of what parsing and preparing it can cost
 * before it is parsed, and gives both back when it completes. A request that does not fit
 * waits a moment for others to finish, then is refused (503 with Retry-After) instead of
 * pushing the process into an OOM kill. Reserving in two steps keeps a client that
 * announces a large body and sends it slowly from holding the parse's share meanwhile. */
#ifndef HR_SERVER_MEM_BUDGET_H
#define HR_SERVER_MEM_BUDGET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of heap that parsing and normalizing a request body can take per body byte, at
 * most: jansson alone takes 75x for a body of empty objects ("[{},{},...]", measured with
 * mallinfo2 on 8 MiB bodies; 43x for empty arrays, 19x for one-character chat messages),
 * and the request's own structures, the chat template's input values and the rendered
 * prompt come on top (docs/server.md has the measurements). */
#define HR_REQUEST_MEMORY_FACTOR 96

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    size_t cap, used; /* bytes */
} hr_mem_budget;

void hr_mem_budget_init(hr_mem_budget *b, size_t cap);
void hr_mem_budget_destroy(hr_mem_budget *b);
/* body_len * factor bytes (saturating), at most the whole budget, so a request that alone
 * fits the body limit can always run alone. */
size_t hr_mem_budget_cost(const hr_mem_budget *b, uint64_t body_len, unsigned factor);
/* Reserves n bytes, waiting up to wait_ms for other requests to give memory back; returns
 * 1 when reserved, 0 when the budget stayed short. */
int hr_mem_budget_reserve(hr_mem_budget *b, size_t n, int wait_ms);
void hr_mem_budget_release(hr_mem_budget *b, size_t n);
/* Bytes reserved now. */
size_t hr_mem_budget_used(hr_mem_budget *b);
/* The default budget: a quarter of the physical memory (1 GiB when it cannot be read). */
size_t hr_mem_budget_default(void);

#endif
