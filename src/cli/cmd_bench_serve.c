/* `hearth bench-serve`: a load generator for any OpenAI-compatible server. N client
 * threads send M streaming /v1/completions requests in total, each a prompt of about P
 * one-token words (the first P2 of them shared by every request, to exercise prefix
 * caching) asking for T tokens, and report time to first token, inter-token latency,
 * request latency (p50/p95/p99), aggregate output tokens/s and errors. With --engine DIR
 * the same load goes to an in-process engine through the library API instead of HTTP, so
 * the two runs side by side give the HTTP layer's cost. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/thread.h"
#include "cli/args.h"
#include "cli/bench_http.h"
#include "cli/verbs.h"
#include "hearth/hearth.h"

typedef struct {
    uint64_t ttft_ns, latency_ns;
    int tokens;        /* output tokens: usage.completion_tokens, else chunks with text */
    int prompt_tokens; /* from usage, 0 when the server does not report it */
    double *gaps_ms;   /* inter-token gaps */
    int n_gaps, cap_gaps;
    int ok;
    char error[256];
} req_result;

typedef struct {
    hr_bench_url url;
    hr_engine *engine; /* --engine: requests go here instead of url */
    const char *api_key, *model;
    long requests, prompt_tokens, max_tokens, shared_prefix;
    atomic_long next;
    req_result *results;
} bench;

/* Per-request SSE state. */
typedef struct {
    req_result *r;
    uint64_t start, last;
    int chunks, done;
} stream_state;

/* Short words that are one token in common BPE vocabularies. */
static const char *WORDS[] = {
    " the",   " of",   " and",  " to",   " in",   " is",    " it",   " you",  " that",  " he",
    " was",   " for",  " on",   " are",  " with", " as",    " his",  " they", " be",    " at",
    " one",   " have", " this", " from", " or",   " had",   " by",   " hot",  " word",  " but",
    " what",  " some", " we",   " can",  " out",  " other", " were", " all",  " there", " when",
    " up",    " use",  " your", " how",  " said", " an",    " each", " she",  " which", " do",
    " their", " time", " if",   " will", " way",  " about", " many", " then", " them",  " write",
    " would", " like", " so",   " these"};

static char *make_prompt(const bench *b, long idx) {
    size_t n_words = sizeof WORDS / sizeof *WORDS;
    char *p = malloc((size_t)b->prompt_tokens * 8 + 1);
    if (!p) return NULL;
    size_t len = 0;
    uint64_t shared = 0x9e3779b97f4a7c15ull,
             own = 0x243f6a8885a308d3ull ^ (uint64_t)(idx + 1) * 0x100000001b3ull;
    for (long i = 0; i < b->prompt_tokens; i++) {
        uint64_t *s = i < b->shared_prefix ? &shared : &own;
        *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
        const char *w = WORDS[*s % n_words];
        memcpy(p + len, w, strlen(w));
        len += strlen(w);
    }
    p[len] = 0;
    return p;
}

/* Records a piece of output text arriving at t (the first one is the time to first token). */
static void on_text(stream_state *s, uint64_t t) {
    req_result *r = s->r;
    if (!s->chunks++)
        r->ttft_ns = t - s->start;
    else if (r->n_gaps < r->cap_gaps)
        r->gaps_ms[r->n_gaps++] = (double)(t - s->last) / 1e6;
    s->last = t;
}

static int on_data(void *ud, const char *data, uint64_t t) {
    stream_state *s = ud;
    if (!strcmp(data, "[DONE]")) return s->done = 1;
    json_t *j = json_loads(data, 0, NULL);
    const json_t *err = json_object_get(j, "error");
    if (!j || err) {
        snprintf(s->r->error, sizeof s->r->error, "stream error: %.200s", data);
        json_decref(j);
        return 1;
    }
    const json_t *usage = json_object_get(j, "usage");
    if (json_is_object(usage)) {
        s->r->tokens = (int)json_integer_value(json_object_get(usage, "completion_tokens"));
        s->r->prompt_tokens = (int)json_integer_value(json_object_get(usage, "prompt_tokens"));
    }
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(j, "choices"), 0), "text"));
    if (text && *text) on_text(s, t);
    json_decref(j);
    return 0;
}

/* One request to the in-process engine, with the HTTP request's parameters. */
static void run_engine(bench *b, req_result *r, const char *prompt) {
    stream_state s = {.r = r, .start = hr_now_ns()};
    hr_request_params p = {.text = prompt, .max_tokens = (int)b->max_tokens, .ignore_eos = 1};
    hr_request *q = NULL;
    hr_err *e = hr_engine_submit(b->engine, &p, &q);
    hr_event ev;
    while (!e && hr_request_next(q, &ev)) {
        if (ev.text_len) on_text(&s, hr_now_ns());
        if (ev.kind != HR_EVENT_DONE) continue;
        s.done = 1;
        r->tokens = ev.n_generated;
        r->prompt_tokens = ev.n_prompt;
        if (ev.finish == HR_FINISH_ERROR)
            snprintf(r->error, sizeof r->error, "engine: %s", ev.error ? ev.error : "error");
    }
    r->latency_ns = hr_now_ns() - s.start;
    if (e) snprintf(r->error, sizeof r->error, "%s", hr_err_msg(e));
    r->ok = !r->error[0] && s.chunks > 0;
    if (!r->ok && !r->error[0]) snprintf(r->error, sizeof r->error, "no tokens in the reply");
    hr_err_free(e);
    hr_request_release(q);
}

static void run_one(bench *b, long idx) {
    req_result *r = &b->results[idx];
    r->cap_gaps = (int)b->max_tokens + 1;
    r->gaps_ms = calloc((size_t)r->cap_gaps, sizeof *r->gaps_ms);
    char *prompt = make_prompt(b, idx);
    if (b->engine) {
        run_engine(b, r, prompt ? prompt : "");
        free(prompt);
        return;
    }
    json_t *body = json_pack("{s:s, s:I, s:b, s:{s:b}, s:f, s:b}", "prompt", prompt ? prompt : "",
                             "max_tokens", (json_int_t)b->max_tokens, "stream", 1, "stream_options",
                             "include_usage", 1, "temperature", 0.0, "ignore_eos", 1);
    if (b->model) json_object_set_new(body, "model", json_string(b->model));
    char *text = json_dumps(body, JSON_COMPACT);
    stream_state s = {.r = r, .start = hr_now_ns()};
    int status;
    hr_err *e = hr_bench_post_sse(&b->url, b->api_key, text, on_data, &s, &status);
    r->latency_ns = hr_now_ns() - s.start;
    if (!r->tokens) r->tokens = s.chunks;
    if (e)
        snprintf(r->error, sizeof r->error, "%s", hr_err_msg(e));
    else if (!s.done && !r->error[0])
        snprintf(r->error, sizeof r->error, "stream ended without [DONE]");
    r->ok = !r->error[0] && s.chunks > 0;
    if (!r->ok && !r->error[0]) snprintf(r->error, sizeof r->error, "no tokens in the reply");
    hr_err_free(e);
    free(text);
    free(prompt);
    json_decref(body);
}

static void *worker(void *arg) {
    bench *b = arg;
    for (long i; (i = atomic_fetch_add(&b->next, 1)) < b->requests;)
        run_one(b, i);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints "NAME ms: p50 X  p95 X  p99 X  mean X" over v[n] (sorted in place). */
static void print_dist(const char *name, double *v, size_t n) {
    if (!n) {
        printf("%-14s (no samples)\n", name);
        return;
    }
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    double q[3] = {50, 95, 99};
    printf("%-14s", name);
    for (int k = 0; k < 3; k++) {
        size_t i = (size_t)ceil(q[k] / 100.0 * (double)n);
        printf(" p%.0f %.2f ", q[k], v[i ? i - 1 : 0]);
    }
    printf(" mean %.2f\n", sum / (double)n);
}

static void report(const bench *b, long concurrency, double wall_s) {
    size_t n = (size_t)b->requests, ok = 0, n_gaps = 0;
    long out_tokens = 0, prompt_tokens = 0;
    for (size_t i = 0; i < n; i++)
        n_gaps += (size_t)b->results[i].n_gaps;
    double *ttft = calloc(n + 1, sizeof *ttft), *lat = calloc(n + 1, sizeof *lat);
    double *gaps = calloc(n_gaps + 1, sizeof *gaps);
    size_t g = 0;
    const char *first_error = NULL;
    for (size_t i = 0; i < n; i++) {
        const req_result *r = &b->results[i];
        if (!r->ok) {
            if (!first_error) first_error = r->error;
            continue;
        }
        ttft[ok] = (double)r->ttft_ns / 1e6;
        lat[ok++] = (double)r->latency_ns / 1e6;
        out_tokens += r->tokens;
        prompt_tokens += r->prompt_tokens;
        memcpy(gaps + g, r->gaps_ms, (size_t)r->n_gaps * sizeof *gaps);
        g += (size_t)r->n_gaps;
    }
    printf("requests:      %zu ok, %zu errors, concurrency %ld, %.2f s\n", ok, n - ok, concurrency,
           wall_s);
    if (first_error) printf("first error:   %s\n", first_error);
    printf("tokens:        %ld output (%.1f per request), %.1f prompt per request (server count)\n",
           out_tokens, ok ? (double)out_tokens / (double)ok : 0.0,
           ok ? (double)prompt_tokens / (double)ok : 0.0);
    printf("throughput:    %.1f output tok/s, %.2f req/s\n", (double)out_tokens / wall_s,
           (double)ok / wall_s);
    print_dist("TTFT ms:", ttft, ok);
    print_dist("ITL ms:", gaps, g);
    print_dist("latency ms:", lat, ok);
    free(ttft);
    free(lat);
    free(gaps);
}

static hr_err *check_opts(long conc, long reqs, long prompt, long max, long shared) {
    if (conc < 1 || conc > 4096) return hr_errf("--concurrency must be in [1, 4096]");
    if (reqs < 1) return hr_errf("--requests must be >= 1");
    if (prompt < 1 || prompt > 1000000) return hr_errf("--prompt-tokens must be in [1, 1000000]");
    if (max < 1 || max > 1000000) return hr_errf("--max-tokens must be in [1, 1000000]");
    if (shared < 0 || shared > prompt)
        return hr_errf("--shared-prefix must be in [0, --prompt-tokens]");
    return NULL;
}

typedef struct {
    const char *url, *key, *model, *engine_dir, *compute, *device, *kv_dtype;
    long conc, reqs, prompt, max, shared, threads;
    int exact;
    hr_numerics_req num; /* from --compute, --kv-dtype, --exact */
} bench_serve_opts;

/* Creates the in-process engine of --engine (default engine options, as hearth serve). */
static hr_err *open_engine(const bench_serve_opts *o, hr_engine **out) {
    hr_engine_options eo = {.device = o->device,
                            .n_threads = (int)o->threads,
                            .compute = o->num.compute,
                            .kv_dtype = o->num.kv_dtype,
                            .fast = o->num.fast};
    return hr_engine_create(o->engine_dir, &eo, out);
}

/* Runs the load with o->conc client threads; returns 1 if any request failed. */
static int run_load(bench *b, long conc) {
    b->results = calloc((size_t)b->requests, sizeof *b->results);
    if (conc > b->requests) conc = b->requests;
    pthread_t *th = calloc((size_t)conc, sizeof *th);
    if (!b->results || !th) {
        free(b->results);
        free(th);
        return hr_cmd_fail("bench-serve", hr_err_oom());
    }
    uint64_t t0 = hr_now_ns();
    long started = 0;
    hr_err *e = NULL;
    while (started < conc && !(e = hr_thread_start(&th[started], worker, b, "bench-serve client")))
        started++;
    for (long i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (!e) report(b, conc, (double)(hr_now_ns() - t0) / 1e9);
    int failed = e ? hr_cmd_fail("bench-serve", e) : 0;
    for (long i = 0; i < b->requests; i++) {
        failed |= !b->results[i].ok;
        free(b->results[i].gaps_ms);
    }
    free(b->results);
    free(th);
    return failed;
}

int hr_cmd_bench_serve(int argc, char **argv) {
    bench_serve_opts o = {.conc = 4, .reqs = 32, .prompt = 128, .max = 64};
    int help = 0;
    hr_opt opts[] = {
        {"url", HR_OPT_STR, &o.url, "server base URL, e.g. http://127.0.0.1:8080"},
        {"engine", HR_OPT_STR, &o.engine_dir,
         "instead of --url: load this model directory into an in-process engine"},
        {"compute", HR_OPT_STR, &o.compute, "with --engine: " HR_COMPUTE_HELP},
        {"kv-dtype", HR_OPT_STR, &o.kv_dtype, "with --engine: " HR_KV_DTYPE_HELP},
        {"exact", HR_OPT_FLAG, &o.exact, "with --engine: " HR_EXACT_HELP},
        {"device", HR_OPT_STR, &o.device, "with --engine: " HR_DEVICE_HELP},
        {"threads", HR_OPT_INT, &o.threads, "with --engine: CPU threads (default: all)"},
        {"concurrency", HR_OPT_INT, &o.conc, "requests in flight at once (default 4)"},
        {"requests", HR_OPT_INT, &o.reqs, "requests in total (default 32)"},
        {"prompt-tokens", HR_OPT_INT, &o.prompt, "prompt length in one-token words (default 128)"},
        {"max-tokens", HR_OPT_INT, &o.max, "tokens to generate per request (default 64)"},
        {"shared-prefix", HR_OPT_INT, &o.shared,
         "leading prompt words shared by all requests (default 0)"},
        {"api-key", HR_OPT_STR, &o.key, "sent as Authorization: Bearer KEY"},
        {"model", HR_OPT_STR, &o.model, "model name to send (default: none)"},
    };
    hr_err *e = hr_opts_parse(
        argc, argv, opts, sizeof opts / sizeof *opts,
        "usage: hearth bench-serve (--url URL | --engine DIR) [--concurrency N] [--requests M]\n"
        "       [--prompt-tokens P] [--max-tokens T] [--shared-prefix P2]",
        &help);
    if (e) return hr_cmd_fail("bench-serve", e), 2;
    if (help) return 0;
    if (!o.url == !o.engine_dir)
        return hr_cmd_fail("bench-serve", hr_errf("give exactly one of --url and --engine")), 2;
    if ((o.compute || o.kv_dtype || o.exact || o.threads || o.device) && !o.engine_dir)
        return hr_cmd_fail(
                   "bench-serve",
                   hr_errf("--compute, --kv-dtype, --exact, --threads and --device need --engine")),
               2;
    if ((e = hr_parse_device(o.device))) return hr_cmd_fail("bench-serve", e), 2;
    if ((e = hr_parse_numerics(o.compute, o.kv_dtype, o.exact, 1, &o.num)))
        return hr_cmd_fail("bench-serve", e), 2;
    if ((e = check_opts(o.conc, o.reqs, o.prompt, o.max, o.shared)))
        return hr_cmd_fail("bench-serve", e), 2;
    bench b = {.api_key = o.key,
               .model = o.model,
               .requests = o.reqs,
               .prompt_tokens = o.prompt,
               .max_tokens = o.max,
               .shared_prefix = o.shared};
    if (o.url && (e = hr_bench_url_parse(o.url, &b.url))) return hr_cmd_fail("bench-serve", e), 2;
    if (o.engine_dir && (e = open_engine(&o, &b.engine))) return hr_cmd_fail("bench-serve", e);
    int failed = run_load(&b, o.conc);
    hr_engine_destroy(b.engine);
    return failed ? 1 : 0;
}
