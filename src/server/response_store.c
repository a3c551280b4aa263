/* Bounded LRU of stored responses (response_store.h): a doubly linked list, most
 * recently used first, searched linearly (a few hundred entries at most). Stored JSON is
 * never modified and never handed out: readers get deep copies made under the mutex, so
 * no reference count is shared between threads. */
#include "server/response_store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

typedef struct entry {
    struct entry *prev, *next;
    char *id;
    json_t *response, *conversation;
    size_t bytes;
} entry;

struct hr_response_store {
    pthread_mutex_t mu;
    entry *head, *tail; /* head: most recently used */
    size_t n, bytes, max_entries, max_bytes;
};

hr_response_store *hr_response_store_create(size_t max_entries, size_t max_bytes) {
    hr_response_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->max_entries = max_entries;
    s->max_bytes = max_bytes;
    return s;
}

static void entry_free(entry *e) {
    free(e->id);
    json_decref(e->response);
    json_decref(e->conversation);
    free(e);
}

static void unlink_entry(hr_response_store *s, entry *e) {
    if (e->prev)
        e->prev->next = e->next;
    else
        s->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->tail = e->prev;
    e->prev = e->next = NULL;
    s->n--;
    s->bytes -= e->bytes;
}

static void push_front(hr_response_store *s, entry *e) {
    e->prev = NULL;
    e->next = s->head;
    if (s->head)
        s->head->prev = e;
    else
        s->tail = e;
    s->head = e;
    s->n++;
    s->bytes += e->bytes;
}

static entry *find(hr_response_store *s, const char *id) {
    for (entry *e = s->head; e; e = e->next)
        if (!strcmp(e->id, id)) return e;
    return NULL;
}

void hr_response_store_destroy(hr_response_store *s) {
    if (!s) return;
    while (s->head) {
        entry *e = s->head;
        unlink_entry(s, e);
        entry_free(e);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int hr_response_store_put(hr_response_store *s, const char *id, json_t *response,
                          json_t *conversation) {
    entry *e = calloc(1, sizeof *e);
    if (!e || !(e->id = strdup(id)) || !response || !conversation) {
        if (e) free(e->id);
        free(e);
        json_decref(response);
        json_decref(conversation);
        return -1;
    }
    e->response = response;
    e->conversation = conversation;
    e->bytes = strlen(id) + json_dumpb(response, NULL, 0, JSON_COMPACT) +
               json_dumpb(conversation, NULL, 0, JSON_COMPACT);
    if (e->bytes > s->max_bytes || !s->max_entries) {
        entry_free(e);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    entry *old = find(s, id);
    if (old) unlink_entry(s, old);
    while (s->tail && (s->n + 1 > s->max_entries || s->bytes + e->bytes > s->max_bytes)) {
        entry *lru = s->tail;
        unlink_entry(s, lru);
        entry_free(lru);
    }
    push_front(s, e);
    pthread_mutex_unlock(&s->mu);
    if (old) entry_free(old);
    return 1;
}

json_t *hr_response_store_get(hr_response_store *s, const char *id, json_t **conversation,
                              int *oom) {
    if (conversation) *conversation = NULL;
    if (oom) *oom = 0;
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, id);
    json_t *r = NULL;
    if (e) {
        unlink_entry(s, e);
        push_front(s, e);
        r = hr_json_deep_copy(e->response);
        if (conversation) *conversation = hr_json_deep_copy(e->conversation);
    }
    pthread_mutex_unlock(&s->mu);
    if (e && oom) *oom = !r || (conversation && !*conversation);
    if (r && conversation && !*conversation) json_decref(r), r = NULL;
    if (!r && conversation) json_decref(*conversation), *conversation = NULL;
    return r;
}

int hr_response_store_delete(hr_response_store *s, const char *id) {
    pthread_mutex_lock(&s->mu);
    entry *e = find(s, id);
    if (e) unlink_entry(s, e);
    pthread_mutex_unlock(&s->mu);
    if (e) entry_free(e);
    return e != NULL;
}

void hr_response_store_usage(hr_response_store *s, size_t *entries, size_t *bytes) {
    pthread_mutex_lock(&s->mu);
    *entries = s->n;
    *bytes = s->bytes;
    pthread_mutex_unlock(&s->mu);
}
