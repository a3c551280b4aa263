/* Constrained decoding in the engine; see constrain.h. */
#include "engine/constrain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sample.h"
#include "base/thread.h"

hr_err *hr_constraint_init(hr_constraint *c, const hr_constraint_params *p,
                           const hr_grammar_vocab *v) {
    memset(c, 0, sizeof *c);
    c->open_id = c->close_id = c->trigger = -1;
    if (!p->grammar) return NULL;
    c->n_vocab = hr_grammar_vocab_size(v);
    c->bits = malloc(sizeof(uint32_t) * (size_t)((c->n_vocab + 31) / 32));
    if (!c->bits) return hr_err_oom();
    HR_TRY(hr_matcher_create(p->grammar, v, &c->m));
    c->g = hr_grammar_ref(p->grammar);
    if (p->after_think && p->open_id >= 0 && p->close_id >= 0) {
        c->open_id = p->open_id;
        c->close_id = p->close_id;
        c->in_think = p->in_reasoning;
        c->first = !p->in_reasoning;
    }
    c->lazy = p->trigger >= 0;
    c->trigger = p->trigger;
    c->stop_ids = p->stop_ids;
    c->n_stop = p->n_stop;
    c->stop_logits = malloc(sizeof(float) * (size_t)(p->n_stop > 0 ? p->n_stop : 1));
    return c->stop_logits ? NULL : hr_err_oom();
}

void hr_constraint_free(hr_constraint *c) {
    hr_matcher_free(c->m);
    hr_grammar_free(c->g);
    free(c->bits);
    free(c->stop_logits);
    memset(c, 0, sizeof *c);
}

int hr_constraint_applies(const hr_constraint *c) {
    return c->m && !c->in_think && (!c->lazy || c->armed) && !hr_matcher_is_ended(c->m);
}

void hr_constraint_mask(hr_constraint *c) { hr_matcher_mask(c->m, c->bits); }

/* The first index of id in the request's stop ids, or n_stop. */
static int first_index(const hr_constraint *c, int32_t id) {
    int i = 0;
    while (i < c->n_stop && c->stop_ids[i] != id)
        i++;
    return i;
}

/* Clears the ids whose bit is off (all of them past the grammar's vocabulary); returns how
 * many stay. */
static int mask_logits(const hr_constraint *c, float *logits, int vocab) {
    int n = c->n_vocab < vocab ? c->n_vocab : vocab, allowed = 0;
    for (int w = 0; w < n / 32; w++)
        allowed += __builtin_popcount(c->bits[w]);
    if (n % 32) allowed += __builtin_popcount(c->bits[n / 32] & ((1u << (n % 32)) - 1));
    hr_sample_mask_logits(logits, n, c->bits);
    for (int i = n; i < vocab; i++)
        logits[i] = -INFINITY;
    return allowed;
}

void hr_constraint_apply(hr_constraint *c, float *logits, int vocab) {
    /* a lazy grammar ends its span when it accepts: the request cannot stop inside one */
    int accepting = hr_matcher_is_accepting(c->m) && !c->lazy;
    for (int i = 0; i < c->n_stop; i++) {
        int32_t id = c->stop_ids[i];
        c->stop_logits[i] = id >= 0 && id < vocab ? logits[id] : -INFINITY;
    }
    float open = c->first ? logits[c->open_id] : -INFINITY;
    int allowed = mask_logits(c, logits, vocab);
    for (int i = 0; i < c->n_stop; i++) { /* stop ids: by acceptance, whatever the mask said */
        int32_t id = c->stop_ids[i];
        if (id < 0 || id >= vocab || first_index(c, id) < i) continue;
        int was = id < c->n_vocab && c->bits[id >> 5] >> (id & 31) & 1;
        allowed += accepting - was;
        logits[id] = accepting ? c->stop_logits[i] : -INFINITY;
    }
    if (c->first && logits[c->open_id] == -INFINITY && open != -INFINITY) {
        logits[c->open_id] = open;
        allowed++;
    }
    c->allowed = allowed;
}

static void set_bit(uint32_t *m, int32_t id, int on) {
    if (on)
        m[id >> 5] |= 1u << (id & 31);
    else
        m[id >> 5] &= ~(1u << (id & 31));
}

void hr_constraint_row_mask(const hr_constraint *c, uint32_t *dst, int vocab) {
    int words = (vocab + 31) / 32, n = c->n_vocab < vocab ? c->n_vocab : vocab;
    memcpy(dst, c->bits, sizeof(uint32_t) * (size_t)(n / 32));
    memset(dst + n / 32, 0, sizeof(uint32_t) * (size_t)(words - n / 32));
    if (n % 32) dst[n / 32] = c->bits[n / 32] & ((1u << (n % 32)) - 1);
    int accepting = hr_matcher_is_accepting(c->m) && !c->lazy;
    for (int i = 0; i < c->n_stop; i++)
        if (c->stop_ids[i] >= 0 && c->stop_ids[i] < vocab) set_bit(dst, c->stop_ids[i], accepting);
    if (c->first && c->open_id < vocab) set_bit(dst, c->open_id, 1);
}

/* Rewinds the matcher to the grammar's start (a lazy grammar that accepted). */
static void restart(hr_constraint *c) {
    hr_matcher_rollback(c->m, c->n_accepted);
    c->n_accepted = 0;
}

int hr_constraint_accept(hr_constraint *c, int32_t tok) {
    if (!c->m) return 1;
    int first = c->first;
    c->first = 0;
    if (c->in_think) {
        if (tok == c->close_id) c->in_think = 0;
        return 1;
    }
    if (first && tok == c->open_id) {
        c->in_think = 1;
        return 1;
    }
    if (c->lazy && !c->armed) {
        c->armed = tok == c->trigger;
        return 1;
    }
    if (first_index(c, tok) < c->n_stop) return hr_matcher_is_accepting(c->m) && !c->lazy;
    if (!hr_matcher_accept(c->m, tok)) return 0;
    c->n_accepted++;
    if (c->lazy && hr_matcher_is_accepting(c->m)) {
        c->armed = 0;
        restart(c);
    }
    return 1;
}

/* ---- the mask worker ---- */

static void *masker_main(void *arg) {
    hr_masker *mk = arg;
    pthread_mutex_lock(&mk->mu);
    for (;;) {
        while (!mk->pending && !mk->quit)
            pthread_cond_wait(&mk->cv, &mk->mu);
        if (mk->quit) break;
        int n = mk->n;
        pthread_mutex_unlock(&mk->mu);
        for (int i = 0; i < n; i++)
            hr_constraint_mask(mk->rows[i]);
        pthread_mutex_lock(&mk->mu);
        mk->pending = 0;
        pthread_cond_broadcast(&mk->cv);
    }
    pthread_mutex_unlock(&mk->mu);
    return NULL;
}

hr_err *hr_masker_start(hr_masker *mk, int cap) {
    memset(mk, 0, sizeof *mk);
    mk->rows = malloc(sizeof *mk->rows * (size_t)(cap > 0 ? cap : 1));
    if (!mk->rows) return hr_err_oom();
    mk->cap = cap;
    pthread_mutex_init(&mk->mu, NULL);
    pthread_cond_init(&mk->cv, NULL);
    hr_err *e = hr_thread_start(&mk->thread, masker_main, mk, "grammar mask");
    if (e) {
        hr_masker_stop(mk);
        return e;
    }
    mk->started = 1;
    return NULL;
}

void hr_masker_stop(hr_masker *mk) {
    if (!mk->rows) return;
    if (mk->started) {
        pthread_mutex_lock(&mk->mu);
        mk->quit = 1;
        pthread_cond_broadcast(&mk->cv);
        pthread_mutex_unlock(&mk->mu);
        pthread_join(mk->thread, NULL);
    }
    pthread_mutex_destroy(&mk->mu);
    pthread_cond_destroy(&mk->cv);
    free(mk->rows);
    memset(mk, 0, sizeof *mk);
}

void hr_masker_run(hr_masker *mk, hr_constraint *const *rows, int n) {
    if (n == 0 || !mk->started) return;
    pthread_mutex_lock(&mk->mu);
    memcpy(mk->rows, rows, sizeof *rows * (size_t)n);
    mk->n = n;
    mk->pending = 1;
    pthread_cond_signal(&mk->cv);
    pthread_mutex_unlock(&mk->mu);
}

void hr_masker_compute(hr_masker *mk, hr_constraint *const *rows, int n) {
    int half = mk->started ? n / 2 : 0;
    hr_masker_run(mk, rows, half);
    for (int i = half; i < n; i++)
        hr_constraint_mask(rows[i]);
    hr_masker_wait(mk);
}

void hr_masker_wait(hr_masker *mk) {
    if (!mk->started) return;
    pthread_mutex_lock(&mk->mu);
    while (mk->pending)
        pthread_cond_wait(&mk->cv, &mk->mu);
    pthread_mutex_unlock(&mk->mu);
}
