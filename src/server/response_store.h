/* The Responses API's memory: stored responses by id, each with the conversation it
 * ended (input messages in chat-template form, then its output as messages), so a later
 * request can continue it with previous_response_id and clients can GET or DELETE it.
 * Bounded (least recently used entries go first, by count and by bytes), in memory only,
 * and safe to use from every HTTP thread at once (one mutex; callers get deep copies). */
#ifndef HR_SERVER_RESPONSE_STORE_H
#define HR_SERVER_RESPONSE_STORE_H

#include <jansson.h>
#include <stddef.h>

typedef struct hr_response_store hr_response_store;

/* At most max_entries responses and max_bytes of their compact JSON (response and
 * conversation together). NULL when out of memory. */
hr_response_store *hr_response_store_create(size_t max_entries, size_t max_bytes);
void hr_response_store_destroy(hr_response_store *s);

/* Stores (or replaces) id; steals response and conversation. Evicts the least recently
 * used entries until the bounds hold; an entry larger than max_bytes alone is dropped.
 * Returns 1 when stored, 0 when the bounds dropped it, -1 when out of memory (response or
 * conversation NULL: their builder ran out). */
int hr_response_store_put(hr_response_store *s, const char *id, json_t *response,
                          json_t *conversation);
/* Deep copies of id's response and (when conversation is not NULL) its conversation,
 * and marks it recently used; NULL when id is unknown or was evicted, or when the copies
 * ran out of memory (then *oom, when oom is not NULL, is set to 1, else to 0). */
json_t *hr_response_store_get(hr_response_store *s, const char *id, json_t **conversation,
                              int *oom);
/* Removes id; returns 1 when it was there. */
int hr_response_store_delete(hr_response_store *s, const char *id);
/* Entries and bytes held now (for /stats and tests). */
void hr_response_store_usage(hr_response_store *s, size_t *entries, size_t *bytes);

#endif
