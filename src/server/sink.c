/* Request channel between the engine thread and an HTTP thread (sink.h, server.h). The
 * engine's calls copy their data into queued events and never block on the client; the
 * HTTP thread drains the queue into the request's hr_reply. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/sink.h"

typedef enum { EV_BEGIN, EV_TOKEN, EV_FINISH } ev_kind;

typedef struct ev {
    struct ev *next;
    ev_kind kind;
    int a, b, c;      /* begin: prompt, cached, in_reasoning; finish: why, completion tokens */
    char *detail;     /* finish */
    hr_gen_token tok; /* token: text, token_text and top[] point into this allocation */
} ev;

struct hr_gen_sink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ev *head, *tail;
    atomic_int cancelled;
    int refs;
    hr_api_request *req;
    ev *fin; /* the finish event, allocated up front so finishing cannot fail */
};

hr_gen_sink *hr_sink_create(hr_api_request *req) {
    hr_gen_sink *s = calloc(1, sizeof *s);
    if (!s || !(s->fin = calloc(1, sizeof *s->fin))) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->refs = 2;
    s->req = req;
    return s;
}

static void free_events(ev *e) {
    while (e) {
        ev *n = e->next;
        free(e->detail);
        free(e);
        e = n;
    }
}

void hr_sink_release(hr_gen_sink *s) {
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last) return;
    free_events(s->head);
    free(s->fin);
    hr_api_request_free(s->req);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

static void push(hr_gen_sink *s, ev *e) {
    if (!e) return; /* out of memory: the event is lost, finish still ends the request */
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = e;
    else
        s->head = e;
    s->tail = e;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void hr_gen_sink_begin(hr_gen_sink *s, int prompt_tokens, int cached_tokens, int in_reasoning) {
    ev *e = calloc(1, sizeof *e);
    if (e) *e = (ev){.kind = EV_BEGIN, .a = prompt_tokens, .b = cached_tokens, .c = in_reasoning};
    push(s, e);
}

/* Copies t with all its strings into one allocation. */
static ev *copy_token(const hr_gen_token *t) {
    size_t size = sizeof(ev) + (size_t)t->n_top * sizeof(hr_token_alt) + t->len + t->token_len + 2;
    for (int i = 0; i < t->n_top; i++)
        size += t->top[i].len + 1;
    ev *e = calloc(1, size);
    if (!e) return NULL;
    e->kind = EV_TOKEN;
    e->tok = *t;
    hr_token_alt *alts = (hr_token_alt *)(e + 1);
    char *p = (char *)(alts + t->n_top);
    e->tok.top = alts;
    e->tok.text = memcpy(p, t->text ? t->text : "", t->len), p += t->len + 1;
    e->tok.token_text = memcpy(p, t->token_text ? t->token_text : "", t->token_len);
    p += t->token_len + 1;
    for (int i = 0; i < t->n_top; i++) {
        alts[i] = t->top[i];
        alts[i].text = memcpy(p, t->top[i].text, t->top[i].len);
        p += t->top[i].len + 1;
    }
    return e;
}

void hr_gen_sink_token(hr_gen_sink *s, const hr_gen_token *t) {
    push(s, copy_token(t));
}

void hr_gen_sink_finish(hr_gen_sink *s, hr_finish why, int completion_tokens,
                        const char *detail) {
    ev *e = s->fin;
    s->fin = NULL;
    *e = (ev){.kind = EV_FINISH, .a = (int)why, .b = completion_tokens};
    e->detail = detail ? strdup(detail) : NULL;
    push(s, e);
    hr_sink_release(s);
}

int hr_gen_sink_cancelled(const hr_gen_sink *s) {
    return atomic_load(&s->cancelled);
}

void hr_sink_cancel(hr_gen_sink *s) {
    atomic_store(&s->cancelled, 1);
}

static int apply(hr_reply *r, ev *e) {
    if (e->kind == EV_BEGIN) hr_reply_begin(r, e->a, e->b, e->c);
    if (e->kind == EV_TOKEN) hr_reply_token(r, &e->tok);
    if (e->kind == EV_FINISH) hr_reply_finish(r, (hr_finish)e->a, e->b, e->detail);
    return e->kind == EV_FINISH;
}

int hr_sink_drain(hr_gen_sink *s, hr_reply *r, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)timeout_ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&s->mu);
    while (!s->head)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT) break;
    ev *list = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    int done = 0;
    for (ev *e = list; e; e = e->next)
        done |= apply(r, e);
    free_events(list);
    return done;
}
