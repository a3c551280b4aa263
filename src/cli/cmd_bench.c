/* hearth bench: engine throughput through the public API (prefix cache off): batch-1
 * decode, prefill speed at a few prompt lengths, and aggregate decode with 1..64
 * concurrent sequences, measured over the window where every sequence is decoding (greedy, or
 * sampled with --temperature: the sample op's path, or the host's on a backend without it).
 * Numbers, never pass/fail; on a shared machine run it twice. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/membw.h"
#include "cli/args.h"
#include "cli/verbs.h"
#include "hearth/hearth.h"
#include "model/config.h"
#include "model/weights.h"

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_req, n_started, n_done;
    long tokens, tok_all_started, tok_first_done;
    uint64_t t_submit, t_all_started, t_first_done;
    char *error;
} bench_run;

typedef struct {
    bench_run *b;
    int started;
} bench_req;

/* Engine thread. */
static void on_event(void *ctx, const hr_event *ev) {
    bench_req *q = ctx;
    bench_run *b = q->b;
    pthread_mutex_lock(&b->mu);
    uint64_t now = hr_now_ns();
    if (ev->kind == HR_EVENT_TOKEN) {
        b->tokens++;
        if (!q->started && (q->started = 1) && ++b->n_started == b->n_req) {
            b->t_all_started = now;
            b->tok_all_started = b->tokens;
        }
    } else {
        if (ev->finish == HR_FINISH_ERROR && !b->error)
            b->error = strdup(ev->error ? ev->error : "error");
        if (++b->n_done == 1) {
            b->t_first_done = now;
            b->tok_first_done = b->tokens;
        }
        if (b->n_done == b->n_req) pthread_cond_signal(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

/* Runs n requests of prompt_len tokens generating gen tokens each, all submitted at once,
 * greedy (temperature 0) or sampled at temperature (seeded by the request's index). */
static hr_err *run_batch(hr_engine *e, int n, int prompt_len, int gen, int vocab, float temperature,
                         bench_run *b) {
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->n_req = n;
    bench_req *q = calloc((size_t)n, sizeof *q);
    hr_request **r = calloc((size_t)n, sizeof *r);
    int32_t *prompt = malloc(sizeof(int32_t) * (size_t)prompt_len);
    hr_err *err = q && r && prompt ? NULL : hr_err_oom();
    pthread_mutex_lock(&b->mu);
    b->t_submit = hr_now_ns();
    for (int i = 0; !err && i < n; i++) {
        for (int j = 0; j < prompt_len; j++)
            prompt[j] = (int32_t)((j * 7919 + i * 104729 + 13) % vocab);
        q[i].b = b;
        err = hr_engine_submit(e,
                               &(hr_request_params){.tokens = prompt,
                                                    .n_tokens = prompt_len,
                                                    .max_tokens = gen,
                                                    .ignore_eos = 1,
                                                    .temperature = temperature,
                                                    .top_p = 1,
                                                    .seed = (uint64_t)i + 1,
                                                    .cb = on_event,
                                                    .cb_ctx = &q[i]},
                               &r[i]);
        if (err) b->n_req = i; /* wait only for those submitted */
    }
    while (b->n_done < b->n_req)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < n; i++)
        hr_request_release(r[i]);
    if (!err && b->error) err = hr_errf("%s", b->error);
    free(b->error);
    free(q);
    free(r);
    free(prompt);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    return err;
}

typedef struct {
    const char *model, *prefill, *compute, *device, *kv_dtype, *streams;
    long threads, max_seqs, gen, context;
    int *conc, n_conc; /* the concurrencies measured (--streams) */
    double temperature;
    int exact;
    hr_numerics_req num; /* from --compute, --kv-dtype, --exact */
} bench_opts;

/* weight_bytes / step time is the weight-read rate a step achieves; over the machine's
 * read bandwidth (bw, GB/s) it is the step's fraction of the decode roofline (every step
 * must read the weights once; KV reads are on top, so short contexts are shown). */
static hr_err *bench_decode(hr_engine *e, const bench_opts *o, int vocab, size_t weight_bytes,
                            double bw) {
    bench_run b;
    for (int i = 0; i < o->n_conc; i++) {
        int c = o->conc[i];
        hr_engine_stats before, after;
        hr_engine_stats_get(e, &before);
        HR_TRY(run_batch(e, c, (int)o->context, (int)o->gen, vocab, (float)o->temperature, &b));
        hr_engine_stats_get(e, &after);
        long n_steps = after.steps - before.steps;
        /* the forward's share of a step (the rest is sampling and scheduling), over the whole
         * run including its prefill steps */
        double fwd_ms = n_steps > 0 ? 1e3 * (after.busy_s - before.busy_s) / (double)n_steps : 0.0;
        double s = (double)(b.t_first_done - b.t_all_started) * 1e-9;
        long toks = b.tok_first_done - b.tok_all_started;
        double steps = (double)toks / c;
        double step_s = steps > 0 ? s / steps : 0.0;
        double gbs = step_s > 0 ? (double)weight_bytes / step_s / 1e9 : 0.0;
        printf("decode %3d seqs | %8.1f tok/s aggregate | %7.1f tok/s per seq | %7.2f ms/step | "
               "weights %6.1f GB/s",
               c, toks / (s + 1e-12), toks / (s + 1e-12) / c, 1e3 * step_s, gbs);
        if (bw > 0) printf(" = %3.0f%% of roofline", 100 * gbs / bw);
        /* all submitted at once: when the last of them got its first token */
        printf(" | forward (prefill included) %.2f ms/step | first token of all %.1f ms\n", fwd_ms,
               (double)(b.t_all_started - b.t_submit) * 1e-6);
        fflush(stdout);
    }
    return NULL;
}

static hr_err *bench_prefill(hr_engine *e, const int *lens, int n, int vocab, int max_ctx) {
    bench_run b;
    for (int i = 0; i < n; i++) {
        if (lens[i] + 1 > max_ctx) {
            printf("prefill %5d    | skipped: beyond the context (%d)\n", lens[i], max_ctx);
            continue;
        }
        HR_TRY(run_batch(e, 1, lens[i], 1, vocab, 0, &b));
        double s = (double)(b.t_first_done - b.t_submit) * 1e-9;
        printf("prefill %5d    | %8.1f tok/s | %8.2f ms to first token\n", lens[i],
               lens[i] / (s + 1e-12), 1e3 * s);
        fflush(stdout);
    }
    return NULL;
}

static hr_err *bench(const bench_opts *o) {
    hr_model_config c;
    hr_weights *w;
    HR_TRY(hr_weights_open(o->model, &c, &w));
    size_t weight_bytes = hr_weights_data_bytes(w);
    hr_weights_close(w);
    int *lens = NULL, n_lens = 0;
    HR_TRY(hr_parse_int_list(o->prefill, "--prefill", &lens, &n_lens));
    int max_len = 0;
    for (int i = 0; i < n_lens; i++)
        max_len = lens[i] > max_len ? lens[i] : max_len;
    long positions = o->max_seqs * (o->context + o->gen + 16);
    if (positions < max_len + 32) positions = max_len + 32;
    hr_engine_options eo = {.device = o->device,
                            .n_threads = (int)o->threads,
                            .kv_positions = positions,
                            .compute = o->num.compute,
                            .kv_dtype = o->num.kv_dtype,
                            .fast = o->num.fast,
                            .max_seqs = (int)o->max_seqs,
                            .no_prefix_cache = 1};
    hr_engine *e = NULL;
    hr_err *err = hr_engine_create(o->model, &eo, &e);
    if (!err) {
        hr_engine_stats st;
        hr_engine_stats_get(e, &st);
        int threads = o->threads > 0 ? (int)o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
        printf("model %s (%s), %d threads, %s products, %s KV pool %d blocks of %d, %ld tokens "
               "per decode request, temperature %g\n",
               o->model, c.model_type, threads, st.compute == HR_COMPUTE_BF16 ? "bf16" : "f32",
               hr_kv_dtype_flag(hr_kv_type_dtype(st.kv_dtype)), st.kv_blocks_total, st.block_size,
               o->gen, o->temperature);
        int max_ctx = c.max_pos > 0 && c.max_pos < st.kv_blocks_total * st.block_size
                          ? c.max_pos
                          : st.kv_blocks_total * st.block_size;
        err = bench_prefill(e, lens, n_lens, c.vocab, max_ctx);
        /* the host's read bandwidth is the CPU's roofline; a GPU's is its own (bench/gpu.sh) */
        double bw = 0;
        if (!strcmp(st.device, "cpu")) {
            bw = hr_read_bandwidth(threads, (size_t)512 << 20, NULL, NULL);
            printf("read bandwidth %.1f GB/s: decode roofline %.1f tok/s per sequence\n", bw,
                   bw * 1e9 / (double)weight_bytes);
        }
        if (!err) err = bench_decode(e, o, c.vocab, weight_bytes, bw);
    }
    hr_engine_destroy(e);
    free(lens);
    return err;
}

/* o->conc from --streams (each in [1, max-seqs]; without --max-seqs the largest sets it), or
 * 1, 2, 4, ... up to --max-seqs (default 64). */
static hr_err *concurrencies(bench_opts *o) {
    if (!o->streams) {
        if (o->max_seqs < 0) o->max_seqs = 64;
        if (o->max_seqs < 1 || o->max_seqs > 4096)
            return hr_errf("--max-seqs must be in [1, 4096]");
        o->conc = malloc(sizeof(int) * 13);
        if (!o->conc) return hr_err_oom();
        for (int c = 1; c <= o->max_seqs; c *= 2)
            o->conc[o->n_conc++] = c;
        return NULL;
    }
    HR_TRY(hr_parse_int_list(o->streams, "--streams", &o->conc, &o->n_conc));
    int top = 0;
    for (int i = 0; i < o->n_conc; i++)
        top = o->conc[i] > top ? o->conc[i] : top;
    if (o->max_seqs < 0) o->max_seqs = top;
    if (o->max_seqs < 1 || o->max_seqs > 4096) return hr_errf("--max-seqs must be in [1, 4096]");
    for (int i = 0; i < o->n_conc; i++)
        if (o->conc[i] < 1 || o->conc[i] > o->max_seqs)
            return hr_errf("--streams: %d is outside [1, --max-seqs %ld]", o->conc[i], o->max_seqs);
    return NULL;
}

int hr_cmd_bench(int argc, char **argv) {
    bench_opts o = {
        .prefill = "128,512,2048", .threads = 0, .max_seqs = -1, .gen = 32, .context = 16};
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &o.model, "model directory"},
        {"device", HR_OPT_STR, &o.device, HR_DEVICE_HELP},
        {"threads", HR_OPT_INT, &o.threads, "CPU threads (default: all online CPUs)"},
        {"max-seqs", HR_OPT_INT, &o.max_seqs,
         "the engine's concurrency limit, and the largest measured (default 64)"},
        {"streams", HR_OPT_STR, &o.streams,
         "concurrencies to measure, e.g. 1,8,64 (default 1, 2, 4, ... up to --max-seqs)"},
        {"gen", HR_OPT_INT, &o.gen, "tokens generated per decode request (default 32)"},
        {"context", HR_OPT_INT, &o.context, "prompt tokens of each decode request (default 16)"},
        {"temperature", HR_OPT_FLOAT, &o.temperature,
         "decode requests sample at this temperature, seeded (default 0: greedy)"},
        {"compute", HR_OPT_STR, &o.compute, HR_COMPUTE_HELP},
        {"kv-dtype", HR_OPT_STR, &o.kv_dtype, HR_KV_DTYPE_HELP},
        {"exact", HR_OPT_FLAG, &o.exact, HR_EXACT_HELP},
        {"prefill", HR_OPT_STR, &o.prefill, "prompt lengths for prefill (default 128,512,2048)"},
    };
    int help;
    hr_err *err = hr_opts_parse(
        argc, argv, opts, sizeof opts / sizeof *opts,
        "usage: hearth bench --model DIR [--threads N] [--max-seqs S] [--streams LIST]", &help);
    if (err) return hr_cmd_fail("bench", err), 2;
    if (help) return 0;
    if (!o.model) return hr_cmd_fail("bench", hr_errf("--model is required")), 2;
    if ((err = hr_parse_device(o.device))) return hr_cmd_fail("bench", err), 2;
    if ((err = hr_parse_numerics(o.compute, o.kv_dtype, o.exact, 1, &o.num)))
        return hr_cmd_fail("bench", err), 2;
    if (o.gen < 2 || o.gen > 100000)
        return hr_cmd_fail("bench", hr_errf("--gen must be in [2, 100000]")), 2;
    if (o.context < 1 || o.context > 1000000)
        return hr_cmd_fail("bench", hr_errf("--context must be in [1, 1000000]")), 2;
    if (!(o.temperature >= 0 && o.temperature <= 100))
        return hr_cmd_fail("bench", hr_errf("--temperature must be in [0, 100]")), 2;
    if ((err = concurrencies(&o))) {
        free(o.conc);
        return hr_cmd_fail("bench", err), 2;
    }
    err = bench(&o);
    free(o.conc);
    return err ? hr_cmd_fail("bench", err) : 0;
}
