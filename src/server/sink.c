/* Request channel between the engine threads and an HTTP thread (sink.h, server.h). The
 * engine's calls on a choice's sink copy their data into events tagged with the choice and
 * queued on the channel, never blocking on the client; the HTTP thread drains the queue
 * into the request's hr_reply. */
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
    int choice;
    int a, b, c;      /* begin: prompt, cached, in_reasoning; finish: why, completion tokens */
    char *detail;     /* finish */
    hr_gen_token tok; /* token: text, token_text and top[] point into this allocation */
} ev;

struct hr_gen_sink {
    hr_gen_chan *ch;
    int index;
    ev *fin;            /* the finish event, allocated up front so finishing cannot fail */
    hr_api_request req; /* a shallow copy of ch->req with this choice's seed */
    int unsubmitted;
};

struct hr_gen_chan {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ev *head, *tail;
    atomic_int cancelled;
    const char *cut; /* hr_chan_cut's message: cancelled choices finish with this error */
    size_t queued, max_backlog; /* bytes of token events not yet drained (under mu), limit */
    atomic_int overflow;        /* a token found max_backlog queued: the request was cancelled */
    atomic_int lost;            /* an event could not be copied (out of memory): the reply fails */
    int refs;
    hr_api_request *req;
    int awaited, finished; /* finishes to wait for, and applied (HTTP thread only) */
    int n;
    hr_gen_sink sinks[];
};

static void free_events(ev *e) {
    while (e) {
        ev *n = e->next;
        free(e->detail);
        free(e);
        e = n;
    }
}

static void chan_free(hr_gen_chan *c) {
    free_events(c->head);
    for (int i = 0; i < c->n; i++)
        free(c->sinks[i].fin);
    hr_api_request_free(c->req);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

hr_gen_chan *hr_chan_create(hr_api_request *req, size_t max_backlog) {
    int n = req->n > 0 ? req->n : 1;
    hr_gen_chan *c = calloc(1, sizeof *c + (size_t)n * sizeof(hr_gen_sink));
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->refs = 1 + n;
    c->max_backlog = max_backlog;
    c->awaited = c->n = n;
    int ok = 1;
    for (int i = 0; i < n; i++) {
        hr_gen_sink *s = &c->sinks[i];
        *s = (hr_gen_sink){.ch = c, .index = i, .fin = calloc(1, sizeof(ev)), .req = *req};
        if (req->seed_set) s->req.sampling.seed += (uint64_t)i;
        ok = ok && s->fin;
    }
    if (!ok) {
        chan_free(c); /* req stays the caller's */
        return NULL;
    }
    c->req = req;
    return c;
}

hr_gen_sink *hr_chan_sink(hr_gen_chan *c, int i) { return &c->sinks[i]; }

const hr_api_request *hr_chan_request(const hr_gen_chan *c, int i) { return &c->sinks[i].req; }

static void unref(hr_gen_chan *c) {
    pthread_mutex_lock(&c->mu);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (last) chan_free(c);
}

void hr_chan_release(hr_gen_chan *c) { unref(c); }

void hr_chan_unsubmitted(hr_gen_chan *c, int i) {
    c->sinks[i].unsubmitted = 1;
    c->awaited--;
    unref(c);
}

static void link_event(hr_gen_chan *c, ev *e) {
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    pthread_cond_signal(&c->cv);
}

/* Out of memory on the engine's side: the reply would miss the event, so it fails
 * instead, and the engine stops generating for it. */
static void lose(hr_gen_chan *c) {
    atomic_store(&c->lost, 1);
    atomic_store(&c->cancelled, 1);
}

static void push(hr_gen_chan *c, ev *e) {
    if (!e) {
        lose(c);
        return;
    }
    pthread_mutex_lock(&c->mu);
    link_event(c, e);
    pthread_mutex_unlock(&c->mu);
}

void hr_gen_sink_begin(hr_gen_sink *s, int prompt_tokens, int cached_tokens, int in_reasoning) {
    ev *e = calloc(1, sizeof *e);
    if (e)
        *e = (ev){.kind = EV_BEGIN,
                  .choice = s->index,
                  .a = prompt_tokens,
                  .b = cached_tokens,
                  .c = in_reasoning};
    push(s->ch, e);
}

static size_t token_size(const hr_gen_token *t) {
    size_t size = sizeof(ev) + (size_t)t->n_top * sizeof(hr_token_alt) + t->len + t->token_len + 2;
    for (int i = 0; i < t->n_top; i++)
        size += t->top[i].len + 1;
    return size;
}

/* Copies t with all its strings into one allocation of size bytes. */
static ev *copy_token(const hr_gen_token *t, int choice, size_t size) {
    ev *e = calloc(1, size);
    if (!e) return NULL;
    e->kind = EV_TOKEN;
    e->choice = choice;
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

/* A client that does not read its stream has its output held here: past max_backlog
 * the token is dropped and the request cancelled; it ends with an
 * error saying so. */
void hr_gen_sink_token(hr_gen_sink *s, const hr_gen_token *t) {
    hr_gen_chan *c = s->ch;
    size_t size = token_size(t);
    pthread_mutex_lock(&c->mu);
    int over = atomic_load(&c->overflow) || c->queued + size > c->max_backlog;
    if (!over) c->queued += size;
    pthread_mutex_unlock(&c->mu);
    if (over) {
        atomic_store(&c->overflow, 1);
        atomic_store(&c->cancelled, 1);
        return;
    }
    ev *e = copy_token(t, s->index, size);
    pthread_mutex_lock(&c->mu);
    if (e)
        link_event(c, e);
    else
        c->queued -= size;
    pthread_mutex_unlock(&c->mu);
    if (!e) lose(c);
}

void hr_gen_sink_finish(hr_gen_sink *s, hr_finish why, int completion_tokens, const char *detail) {
    ev *e = s->fin;
    s->fin = NULL;
    *e = (ev){.kind = EV_FINISH, .choice = s->index, .a = (int)why, .b = completion_tokens};
    e->detail = detail ? strdup(detail) : NULL;
    if (detail && !e->detail) lose(s->ch);
    push(s->ch, e);
    unref(s->ch);
}

int hr_gen_sink_cancelled(const hr_gen_sink *s) { return atomic_load(&s->ch->cancelled); }

void hr_chan_cancel(hr_gen_chan *c, void (*cancel)(void *ctx, hr_gen_sink *s), void *ctx) {
    atomic_store(&c->cancelled, 1);
    for (int i = 0; cancel && i < c->n; i++)
        if (!c->sinks[i].unsubmitted) cancel(ctx, &c->sinks[i]);
}

void hr_chan_cut(hr_gen_chan *c, void (*cancel)(void *ctx, hr_gen_sink *s), void *ctx,
                 const char *msg) {
    c->cut = msg;
    hr_chan_cancel(c, cancel, ctx);
}

static int apply(const hr_gen_chan *c, hr_reply *r, ev *e) {
    if (e->kind == EV_BEGIN) hr_reply_begin(r, e->choice, e->a, e->b, e->c);
    if (e->kind == EV_TOKEN) hr_reply_token(r, e->choice, &e->tok);
    if (e->kind != EV_FINISH) return 0;
    const char *cut = c->cut ? c->cut : atomic_load(&c->overflow) ? HR_BACKLOG_MSG : NULL;
    if (cut && e->a == (int)HR_FINISH_CANCELLED)
        hr_reply_finish(r, e->choice, HR_FINISH_ERROR, e->b, cut);
    else
        hr_reply_finish(r, e->choice, (hr_finish)e->a, e->b, e->detail);
    return 1;
}

int hr_chan_drain(hr_gen_chan *c, hr_reply *r, int timeout_ms) {
    if (c->finished >= c->awaited) return 1;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)timeout_ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&c->mu);
    while (!c->head)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT) break;
    ev *list = c->head;
    c->head = c->tail = NULL;
    c->queued = 0;
    pthread_mutex_unlock(&c->mu);
    if (atomic_load(&c->lost)) hr_reply_fail(r);
    for (ev *e = list; e; e = e->next)
        c->finished += apply(c, r, e);
    free_events(list);
    return c->finished >= c->awaited;
}
