/* What a JSON schema costs a decode step, in process (issue #14's >= 0.95x target):
 *   bench_constrained MODEL [threads=2] [streams=1,8] [rounds=3] [tokens=128]
 * MODEL needs its tokenizer (qwen3-tools-20m: the Qwen3 vocabulary). Two parts:
 *   1. the engine: `streams` seeded requests at temperature 1, unconstrained and under the
 *      schema of bench/constrained.py, in alternating rounds: tok/s over the round's wall time
 *      (as bench/constrained.py) and over the steps where all streams were decoding (a
 *      constrained request ends when its JSON closes), and the paired ratios;
 *   2. the pieces of one constrained row, replayed on this thread over the tokens the
 *      constrained run generated: the mask (hr_matcher_mask), the host path the engine
 *      takes without a masked sample op (the mask written into the logits, then the host
 *      sampler), and the sample op (hr_sample_ref) on the row unmasked and with the mask.
 * Per-row costs times the streams, against the forward step, say where the ratio goes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/sample.h"
#include "common.h"
#include "engine/constrain.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "grammar/schema.h"
#include "hearth/hearth.h"
#include "tokenizer/tokenizer.h"

static const char *schema_text = "{\"type\": \"object\", \"properties\": {\"story\": {\"type\": "
                                 "\"string\"}, \"n\": {\"type\": \"integer\"}}, "
                                 "\"required\": [\"story\"]}";

static const int32_t prompt[] = {9707, 1879, 11, 1246, 525, 498, 264, 1293, 3364, 13};

enum { MAX_STREAMS = 64, MAX_TOKENS = 1024 };

static int32_t replay[MAX_TOKENS]; /* the first constrained request's tokens */
static int n_replay;

static int fail(hr_err *err) {
    fprintf(stderr, "bench_constrained: %s\n", hr_err_msg(err));
    hr_err_free(err);
    return 1;
}

static hr_err *schema_grammar(hr_grammar **g) {
    json_error_t je;
    json_t *s = json_loads(schema_text, 0, &je);
    char *text;
    size_t len;
    hr_err *err = hr_schema_to_gbnf(s, NULL, &text, &len);
    json_decref(s);
    if (err) return err;
    err = hr_grammar_compile(text, len, g);
    free(text);
    return err;
}

/* What the engine thread's callbacks record in a round: when each step's tokens came out (the
 * first token j of any request) and how many requests had a token j, so the rate can be taken
 * over the steps where all n requests were decoding (a constrained request may end early). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    long tokens;
    uint64_t t[MAX_TOKENS + 1];
    int alive[MAX_TOKENS + 1];
} round_log;

typedef struct {
    round_log *log;
    int record; /* keep the tokens in replay */
} req_ctx;

static void on_event(void *arg, const hr_event *ev) {
    req_ctx *c = arg;
    round_log *lg = c->log;
    if (ev->kind == HR_EVENT_TOKEN) {
        int j = ev->n_generated;
        if (j <= MAX_TOKENS) {
            if (!lg->alive[j]++) lg->t[j] = hr_now_ns();
        }
        lg->tokens++;
        if (c->record && n_replay < MAX_TOKENS) replay[n_replay++] = ev->token;
        return;
    }
    pthread_mutex_lock(&lg->mu);
    lg->done++;
    pthread_cond_signal(&lg->cv);
    pthread_mutex_unlock(&lg->mu);
}

/* One round: n requests at once to their ends; wall tok/s, and tok/s over the steps where
 * all n decoded. */
static hr_err *round_of(hr_engine *e, hr_grammar *g, int n, int max_tokens, uint64_t seed,
                        double *tok_s, double *full_tok_s) {
    static round_log lg;
    memset(&lg, 0, sizeof lg);
    pthread_mutex_init(&lg.mu, NULL);
    pthread_cond_init(&lg.cv, NULL);
    req_ctx ctx[MAX_STREAMS];
    hr_request *r[MAX_STREAMS];
    int submitted = 0;
    hr_err *err = NULL;
    uint64_t t0 = hr_now_ns();
    pthread_mutex_lock(&lg.mu); /* callbacks finish only after every submit */
    for (int i = 0; i < n && !err; i++, submitted++) {
        ctx[i] = (req_ctx){&lg, g && i == 0 && !n_replay};
        hr_request_params p = {.tokens = prompt,
                               .n_tokens = (int)(sizeof prompt / sizeof *prompt),
                               .max_tokens = max_tokens,
                               .temperature = 1,
                               .seed = seed + (uint64_t)i,
                               .ignore_eos = !g,
                               .grammar = g,
                               .cb = on_event,
                               .cb_ctx = &ctx[i]};
        err = hr_engine_submit(e, &p, &r[i]);
    }
    if (err) submitted--;
    while (lg.done < submitted)
        pthread_cond_wait(&lg.cv, &lg.mu);
    pthread_mutex_unlock(&lg.mu);
    for (int i = 0; i < submitted; i++)
        hr_request_release(r[i]);
    if (err) return err;
    *tok_s = (double)lg.tokens / ((double)(hr_now_ns() - t0) * 1e-9);
    double span = 0;
    long steps = 0;
    for (int j = 1; j < max_tokens && lg.alive[j + 1] == n; j++, steps++)
        span += (double)(lg.t[j + 1] - lg.t[j]) * 1e-9;
    *full_tok_s = steps ? (double)(n * steps) / span : 0;
    return NULL;
}

static hr_err *engine_part(hr_engine *e, hr_grammar *g, const int *streams, int n_streams,
                           int rounds, int max_tokens) {
    for (int si = 0; si < n_streams; si++) {
        int n = streams[si];
        double fr[16], cr[16], fs[16], cs[16], ratio[16], full[16];
        for (int k = 0; k < rounds; k++) {
            HR_TRY(round_of(e, NULL, n, max_tokens, 100 * (uint64_t)k, &fr[k], &fs[k]));
            HR_TRY(round_of(e, g, n, max_tokens, 100 * (uint64_t)k, &cr[k], &cs[k]));
            ratio[k] = cr[k] / fr[k];
            full[k] = cs[k] / fs[k];
        }
        qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
        qsort(full, (size_t)rounds, sizeof *full, cmp_double);
        printf("engine, %d stream(s), tok/s wall (all %d decoding):", n, n);
        for (int k = 0; k < rounds; k++)
            printf(" free %.1f (%.1f), schema %.1f (%.1f);", fr[k], fs[k], cr[k], cs[k]);
        printf("\n  paired ratio median %.3f (%.3f..%.3f); all decoding: %.3f (%.3f..%.3f)\n",
               ratio[rounds / 2], ratio[0], ratio[rounds - 1], full[rounds / 2], full[0],
               full[rounds - 1]);
    }
    return NULL;
}

/* A row of logits shaped like a model's: a few large values over a gaussian-ish floor. */
static void fake_logits(float *x, int V, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < V; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = (double)(s >> 11) * 0x1.0p-53;
        x[i] = (float)(4 * (u - 0.5) + (s % 997 == 0 ? 8 : 0));
    }
}

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* The pieces of one row per step over the replayed tokens (medians, microseconds). */
static hr_err *pieces_part(hr_engine *e, hr_grammar *g, int V) {
    hr_grammar_vocab *gv;
    HR_TRY(hr_grammar_vocab_create(hr_engine_tokenizer(e), &gv));
    hr_constraint c;
    hr_constraint_params cp = {.grammar = g, .trigger = -1, .open_id = -1, .close_id = -1};
    hr_err *err = hr_constraint_init(&c, &cp, gv);
    hr_sampler smp;
    if (!err) err = hr_sampler_init(&smp, &(hr_sampler_params){.temperature = 1, .top_p = 1}, V);
    float *base = malloc(sizeof(float) * (size_t)V), *x = malloc(sizeof(float) * (size_t)V);
    float *probs = malloc(sizeof(float) * (size_t)V);
    uint32_t *mask = malloc(sizeof(uint32_t) * (size_t)((V + 31) / 32));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)V);
    double *t[4];
    for (int k = 0; k < 4; k++)
        t[k] = malloc(sizeof(double) * (size_t)(n_replay + 1));
    int n = 0;
    for (int i = 0; !err && i < n_replay && hr_constraint_applies(&c); i++, n++) {
        fake_logits(base, V, (uint64_t)i);
        uint64_t t0 = hr_now_ns();
        hr_constraint_mask(&c);
        uint64_t t1 = hr_now_ns();
        memcpy(x, base, sizeof(float) * (size_t)V);
        uint64_t t2 = hr_now_ns();
        hr_constraint_apply(&c, x, V);
        hr_sampler_sample(&smp, x);
        uint64_t t3 = hr_now_ns();
        memcpy(x, base, sizeof(float) * (size_t)V);
        hr_sample_row row = {.u = 0.5, .mode = HR_SAMPLE_DRAW, .temperature = 1, .top_p = 1};
        hr_sample_out out;
        uint64_t t4 = hr_now_ns();
        hr_sample_ref(&out, x, V, &row, NULL, NULL, probs, idx);
        uint64_t t5 = hr_now_ns();
        memcpy(x, base, sizeof(float) * (size_t)V);
        uint64_t t6 = hr_now_ns();
        hr_constraint_row_mask(&c, mask, V);
        hr_sample_ref(&out, x, V, &row, NULL, mask, probs, idx);
        uint64_t t7 = hr_now_ns();
        t[3][n] = (double)(t7 - t6) * 1e-3;
        t[0][n] = (double)(t1 - t0) * 1e-3;
        t[1][n] = (double)(t3 - t2) * 1e-3;
        t[2][n] = (double)(t5 - t4) * 1e-3;
        if (!hr_constraint_accept(&c, replay[i])) err = hr_errf("replay token %d rejected", i);
    }
    if (!err && n > 0) {
        double p99 = 0;
        for (int i = 0; i < n; i++)
            p99 = t[0][i] > p99 ? t[0][i] : p99;
        printf("pieces of one row over %d steps (median us): mask %.1f (max %.0f) | host path "
               "(mask into the logits + host sampler) %.0f | sample op, unmasked %.0f | sample op "
               "with the "
               "mask %.0f\n",
               n, median_of(t[0], n), p99, median_of(t[1], n), median_of(t[2], n),
               median_of(t[3], n));
    }
    for (int k = 0; k < 4; k++)
        free(t[k]);
    free(base), free(x), free(probs), free(idx), free(mask);
    hr_sampler_free(&smp);
    hr_constraint_free(&c);
    hr_grammar_vocab_free(gv);
    return err;
}

static int parse_list(const char *s, int *v, int cap) {
    int n = 0;
    while (*s && n < cap) {
        v[n] = atoi(s);
        if (v[n] < 1 || v[n] > MAX_STREAMS) return 0;
        n++;
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_constrained MODEL [threads=2] [streams=1,8] [rounds=3] [tokens]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, streams[8];
    int n_streams = parse_list(argc > 3 ? argv[3] : "1,8", streams, 8);
    int rounds = argc > 4 ? atoi(argv[4]) : 3, tokens = argc > 5 ? atoi(argv[5]) : 128;
    if (n_streams < 1 || rounds < 1 || rounds > 16 || tokens < 1 || tokens > MAX_TOKENS) {
        fprintf(stderr, "bench_constrained: streams 1..%d, rounds 1..16, tokens 1..%d\n",
                MAX_STREAMS, MAX_TOKENS);
        return 2;
    }
    int max_seqs = 1;
    for (int i = 0; i < n_streams; i++)
        max_seqs = streams[i] > max_seqs ? streams[i] : max_seqs;
    hr_engine *e;
    hr_err *err = hr_engine_create(
        argv[1], &(hr_engine_options){.n_threads = threads, .max_seqs = max_seqs, .fast = 1}, &e);
    if (err) return fail(err);
    hr_grammar *g = NULL;
    err = schema_grammar(&g);
    if (!err) err = engine_part(e, g, streams, n_streams, rounds, tokens);
    if (!err) err = pieces_part(e, g, hr_model_cfg(e->model)->vocab);
    hr_grammar_free(g);
    hr_engine_destroy(e);
    return err ? fail(err) : 0;
}
