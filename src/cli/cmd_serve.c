/* hearth serve: loads a model into the engine and serves it over HTTP (OpenAI and
 * Anthropic APIs) until SIGINT or SIGTERM, then shuts down gracefully (requests in flight
 * get --shutdown-grace seconds to finish; a second signal exits at once). With --isolate
 * the process is a supervisor and proxy, and the engine runs in a child (serve_isolate.c):
 * this same verb with --unix-socket. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread.h"
#include "cli/args.h"
#include "cli/serve_isolate.h"
#include "cli/verbs.h"
#include "engine/tok_open.h"
#include "server/engine_backend.h"

typedef struct {
    const char *model, *host, *api_key, *chat_template, *alias, *compute, *device, *kv_dtype;
    const char *unix_socket; /* the engine child of --isolate serves here, not on host:port */
    const char *ssd_cache;   /* --ssd-cache DIR */
    double gpu_memory, ssd_cache_gb;
    long port, threads, kv_mb, budget_mb, max_seqs, max_batch, max_body_mb, snap_mb, snap_every;
    long timeout_s, max_conns, max_queue, grace_s, request_timeout_s, max_conns_ip, request_mb;
    long grammar_mb;
    long load_timeout_s; /* --isolate: a child not ready this long is killed (0: none) */
    int mmap, no_preempt, no_prefix_cache, exact, isolate, ssd_verify, ssd_always;
    double probe_interval, probe_timeout; /* --isolate's health probe of the child, seconds */
    hr_numerics_req num;                  /* from --compute, --kv-dtype, --exact */
} serve_opts;

typedef struct {
    hr_engine *engine;
    hr_engine_server *es;
    hr_server *http;
} serve_state;

static const char *base_name(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    const char *p = dir + n;
    while (p > dir && p[-1] != '/')
        p--;
    return p;
}

/* The model id every reply carries: --alias, else the directory's name; it must be valid
 * UTF-8 (JSON strings are) and fit name's cap, or every JSON reply would come out empty. */
static hr_err *model_id(const serve_opts *o, char *name, size_t cap) {
    const char *id = o->alias ? o->alias : base_name(o->model);
    const char *what = o->alias ? "--alias" : "the model's directory name (give --alias ID)";
    if (!*id || strlen(id) >= cap) return hr_errf("%s must be 1 to %zu bytes", what, cap - 1);
    json_t *j = json_string(id); /* NULL for invalid UTF-8 */
    if (!j) return hr_errf("%s is not valid UTF-8", what);
    json_decref(j);
    snprintf(name, cap, "%s", id);
    return NULL;
}

/* --ssd-cache's flags: a directory name, a size in (0, 1048576] GiB, and the others only with it.
 */
static hr_err *check_ssd(serve_opts *o) {
    if (!o->ssd_cache && (o->ssd_cache_gb != 0 || o->ssd_verify || o->ssd_always))
        return hr_errf("--ssd-cache-max, --ssd-cache-verify and --ssd-cache-always-restore need "
                       "--ssd-cache DIR");
    if (!o->ssd_cache) return NULL;
    if (!*o->ssd_cache) return hr_errf("--ssd-cache needs a directory");
    if (o->no_prefix_cache)
        return hr_errf(
            "--ssd-cache is a tier of the prefix cache and does not go with --no-prefix-cache");
    if (o->ssd_cache_gb == 0) o->ssd_cache_gb = 32;
    if (!(o->ssd_cache_gb > 0 && o->ssd_cache_gb <= 1 << 20))
        return hr_errf("--ssd-cache-max must be a size in GiB in (0, 1048576], not %g",
                       o->ssd_cache_gb);
    if ((size_t)(o->ssd_cache_gb * (double)(1 << 30)) < 1 << 20)
        return hr_errf("--ssd-cache-max %g GiB is under 1 MiB: too small to hold a block",
                       o->ssd_cache_gb);
    return NULL;
}

/* A test hook (tests/cli/test_isolate.sh), read only by an --isolate engine child:
 * HEARTH_TEST_CHILD_LOAD_DELAY_S=N sleeps N seconds before loading, a child stuck in its
 * load for the parent's --load-timeout to catch. */
static void test_load_delay(const serve_opts *o) {
    const char *v = o->unix_socket ? getenv("HEARTH_TEST_CHILD_LOAD_DELAY_S") : NULL;
    unsigned n = v ? (unsigned)strtoul(v, NULL, 10) : 0;
    while (n)
        n = sleep(n);
}

static hr_err *start(const serve_opts *o, serve_state *st) {
    char name[256];
    HR_TRY(model_id(o, name, sizeof name));
    test_load_delay(o);
    if (!hr_tokenizer_available(o->model))
        return hr_errf(
            "%s has no tokenizer.json (nor GGUF tokenizer metadata), which serving needs",
            o->model);
    hr_engine_options eo = {.device = o->device,
                            .n_threads = (int)o->threads,
                            .weights_in_place = o->mmap,
                            .kv_memory = (size_t)o->kv_mb << 20,
                            .gpu_memory = (float)o->gpu_memory,
                            .memory_budget = (size_t)o->budget_mb << 20,
                            .no_preempt = o->no_preempt,
                            .no_prefix_cache = o->no_prefix_cache,
                            .max_seqs = (int)o->max_seqs,
                            .max_queue = (int)o->max_queue,
                            .max_batch_tokens = (int)o->max_batch,
                            .chat_template = o->chat_template,
                            .snapshot_memory = (size_t)o->snap_mb << 20,
                            .snapshot_interval = (int)o->snap_every,
                            .ssd_cache = o->ssd_cache,
                            .ssd_cache_max = (size_t)(o->ssd_cache_gb * (double)(1 << 30)),
                            .ssd_cache_verify = o->ssd_verify,
                            .ssd_cache_always_restore = o->ssd_always};
    eo.compute = o->num.compute;
    eo.kv_dtype = o->num.kv_dtype;
    eo.fast = o->num.fast;
    HR_TRY(hr_engine_create(o->model, &eo, &st->engine));
    HR_TRY(hr_engine_server_create(st->engine, name, &st->es));
    hr_engine_stats es;
    hr_engine_stats_get(st->engine, &es);
    HR_INFO("model %s: context %d positions per sequence, %s products, %s KV cache, %s", name,
            hr_engine_max_context(st->engine), es.compute == HR_COMPUTE_BF16 ? "bf16" : "f32",
            hr_kv_dtype_flag(hr_kv_type_dtype(es.kv_dtype)),
            hr_engine_prompt(st->engine)->fallback ? "no chat template (role: content lines)"
                                                   : "chat template");
    hr_server_config sc = {.host = o->host,
                           .port = (int)o->port,
                           .api_key = o->api_key,
                           .max_body = (size_t)o->max_body_mb << 20,
                           .timeout_s = o->timeout_s ? (int)o->timeout_s : -1,
                           .max_connections = (unsigned)o->max_conns,
                           .request_timeout_s =
                               o->request_timeout_s ? (int)o->request_timeout_s : -1,
                           .max_connections_per_ip = (unsigned)o->max_conns_ip,
                           .request_memory = (size_t)o->request_mb << 20,
                           .grammar_cache_mb = o->grammar_mb ? (int)o->grammar_mb : -1,
                           .unix_socket = o->unix_socket};
    return hr_server_start(&sc, hr_engine_server_backend(st->es), &st->http);
}

/* The engine goes before its server wrapper: stopping it finishes every request still
 * queued or running, and those finishes reach the wrapper. */
static void stop(serve_state *st) {
    hr_server_stop(st->http);
    hr_engine_destroy(st->engine);
    hr_engine_server_destroy(st->es);
}

typedef struct {
    sigset_t *set;
    const char *when;
} signal_watch;

/* While the model loads (minutes for a large one, or blocked on a slow disk), a signal
 * ends the process at once: there is nothing to finish yet. So does a second signal
 * while shutting down. */
static void *exit_on_signal(void *arg) {
    const signal_watch *w = arg;
    int sig;
    if (sigwait(w->set, &sig) != 0) return NULL;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    fprintf(stderr, "hearth serve: signal %d %s, exiting\n", sig, w->when);
    _exit(128 + sig);
}

/* 0 (and a warning) when the watcher could not start: a signal then waits for the phase
 * w->when names to end. */
static int watch_start(pthread_t *t, signal_watch *w) {
    hr_err *e = hr_thread_start(t, exit_on_signal, w, "signal watch");
    if (!e) return 1;
    HR_WARN("%s; a signal %s is handled once that is over", hr_err_msg(e), w->when);
    hr_err_free(e);
    return 0;
}

static void watch_end(pthread_t t) {
    pthread_cancel(t);
    pthread_join(t, NULL);
}

static hr_err *serve(const serve_opts *o) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread started from here inherits it */
    signal(SIGPIPE, SIG_IGN);
    uint64_t t0 = hr_now_ns();
    serve_state st = {0};
    pthread_t watch;
    signal_watch loading = {&set, "while loading"}, stopping = {&set, "while stopping"};
    int watching = watch_start(&watch, &loading);
    hr_err *err = start(o, &st);
    if (watching) watch_end(watch); /* signals from here on stay pending for sigwait */
    watching = 0;
    if (!err) {
        if (o->unix_socket)
            fprintf(stderr, "hearth serve: engine loaded %s in %.2f s, serving on unix:%s\n",
                    o->model, (double)(hr_now_ns() - t0) * 1e-9, o->unix_socket);
        else
            fprintf(stderr, "hearth serve: %s ready on http://%s:%d in %.2f s\n", o->model, o->host,
                    hr_server_port(st.http), (double)(hr_now_ns() - t0) * 1e-9);
        int sig;
        sigwait(&set, &sig);
        watching = watch_start(&watch, &stopping);
        hr_server_quiesce(st.http);
        fprintf(stderr,
                "hearth serve: signal %d, stopping: no new connections, up to %ld s for "
                "requests in flight\n",
                sig, o->grace_s);
        hr_server_drain(st.http, (double)o->grace_s);
    }
    stop(&st);
    if (watching) watch_end(watch);
    return err;
}

/* A MiB count that a size_t of bytes holds (no wrap to a small or zero size, which would
 * pick a default). */
static hr_err *mib_fit(const char *flag, long mib) {
    if ((uint64_t)mib > (SIZE_MAX >> 20))
        return hr_errf("--%s %ld MiB is more bytes than this machine can address", flag, mib);
    return NULL;
}

/* The options of the parent only: the child does not get them. */
static int parent_only(const char *name) {
    return !strcmp(name, "isolate") || !strcmp(name, "probe-interval") ||
           !strcmp(name, "probe-timeout") || !strcmp(name, "load-timeout") ||
           !strcmp(name, "unix-socket");
}

/* Connections the child takes beyond the parent's --max-connections: every proxied
 * request has its own upstream connection, and the health probe must still get in when
 * the public listener is full (a refused probe would get a busy child killed). */
#define CHILD_EXTRA_CONNECTIONS 8

/* The engine child's command line: the log settings, then serve and argv's options less
 * the parent's own (argv parsed with opts already, so every option is known), then its
 * connection limit (the last value given wins). max_conns_arg: room for that option. */
static char **child_argv(int argc, char **argv, const hr_opt *opts, int n_opts, long max_conns,
                         char *max_conns_arg, size_t cap) {
    char **out = calloc((size_t)argc + 8, sizeof *out);
    if (!out) return NULL;
    int w = 0;
    out[w++] = "hearth";
    out[w++] = "--log-level";
    out[w++] = (char *)hr_log_level_name();
    out[w++] = "--log-format";
    out[w++] = (char *)hr_log_format_name();
    out[w++] = "serve";
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i] + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const hr_opt *o = NULL;
        for (int k = 0; k < n_opts; k++)
            if (strlen(opts[k].name) == len && !strncmp(opts[k].name, name, len)) o = &opts[k];
        int takes_next = o && o->kind != HR_OPT_FLAG && !eq;
        int keep = !o || !parent_only(o->name);
        if (keep) out[w++] = argv[i];
        if (takes_next && ++i < argc && keep) out[w++] = argv[i];
    }
    long child_conns = max_conns + CHILD_EXTRA_CONNECTIONS;
    snprintf(max_conns_arg, cap, "--max-connections=%ld",
             child_conns > 65536 ? 65536 : child_conns);
    out[w++] = max_conns_arg;
    return out;
}

static hr_err *serve_isolated(const serve_opts *o, char **child) {
    hr_isolate_opts io = {.child_argv = child,
                          .model = o->model,
                          .host = o->host,
                          .port = (int)o->port,
                          .timeout_s = o->timeout_s ? (int)o->timeout_s : -1,
                          .max_connections = (unsigned)o->max_conns,
                          .max_connections_per_ip = (unsigned)o->max_conns_ip,
                          .request_timeout_s =
                              o->request_timeout_s ? (int)o->request_timeout_s : -1,
                          .api_key = o->api_key,
                          .max_body = (size_t)o->max_body_mb << 20,
                          .grace_s = (double)o->grace_s,
                          .probe_interval_s = o->probe_interval,
                          .probe_timeout_s = o->probe_timeout,
                          .load_timeout_s = (double)o->load_timeout_s};
    return hr_serve_isolated(&io);
}

int hr_cmd_serve(int argc, char **argv) {
    serve_opts o = {.host = "127.0.0.1",
                    .port = 8080,
                    .max_body_mb = 8,
                    .timeout_s = 60,
                    .max_conns = 512,
                    .grace_s = 10,
                    .request_timeout_s = 30,
                    .max_conns_ip = 0,
                    .grammar_mb = 256,
                    .probe_interval = 1,
                    .probe_timeout = 5,
                    .load_timeout_s = 600};
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &o.model,
         "model directory (config.json, safetensors, tokenizer.json) or .gguf file"},
        {"host", HR_OPT_STR, &o.host, "address to bind (default 127.0.0.1)"},
        {"port", HR_OPT_INT, &o.port, "port (default 8080; 0 = any free port)"},
        {"api-key", HR_OPT_STR, &o.api_key, "require Authorization: Bearer KEY (or x-api-key)"},
        {"alias", HR_OPT_STR, &o.alias, "model id shown to clients (default: the directory name)"},
        {"chat-template", HR_OPT_STR, &o.chat_template,
         "a Jinja chat template file to use instead of the model's"},
        {"device", HR_OPT_STR, &o.device, HR_DEVICE_HELP},
        {"threads", HR_OPT_INT, &o.threads, "CPU threads (default: all online CPUs)"},
        {"kv-memory", HR_OPT_INT, &o.kv_mb, "MiB of KV cache (default: derived from free memory)"},
        {"gpu-memory", HR_OPT_FLOAT, &o.gpu_memory, HR_GPU_MEMORY_HELP},
        {"memory-budget", HR_OPT_INT, &o.budget_mb,
         "MiB for weights + KV cache; the KV cache gets what the weights leave (without "
         "--kv-memory)"},
        {"no-preempt", HR_OPT_FLAG, &o.no_preempt,
         "when the KV cache is full, new work waits instead of preempting the youngest sequence"},
        {"no-prefix-cache", HR_OPT_FLAG, &o.no_prefix_cache, "do not reuse cached prompt prefixes"},
        {"max-seqs", HR_OPT_INT, &o.max_seqs, "sequences decoding at once (default 64)"},
        {"max-batch-tokens", HR_OPT_INT, &o.max_batch, "tokens per forward step (default 2048)"},
        {"max-queue", HR_OPT_INT, &o.max_queue,
         "requests waiting for a slot before more are refused (503; Anthropic 529) (default 1024)"},
        {"max-body-mb", HR_OPT_INT, &o.max_body_mb, "largest request body in MiB (default 8)"},
        {"timeout", HR_OPT_INT, &o.timeout_s,
         "seconds a client may send nothing (or take no reply bytes) before its connection is "
         "closed; waiting on the engine does not count (default 60; 0 = never)"},
        {"max-connections", HR_OPT_INT, &o.max_conns,
         "connections open at once; more are refused (default 512; lowered to fit ulimit -n)"},
        {"max-connections-per-ip", HR_OPT_INT, &o.max_conns_ip,
         "connections open at once from one client address; more are closed (default 0: no limit "
         "beyond --max-connections)"},
        {"request-timeout", HR_OPT_INT, &o.request_timeout_s,
         "seconds a request's headers and body may take to arrive, however slowly the bytes "
         "come; the connection is closed past it (default 30; 0 = no deadline)"},
        {"request-memory-mb", HR_OPT_INT, &o.request_mb,
         "MiB for parsing requests, all together: each reserves 96x its body size before it is "
         "parsed, waiting up to 2 s, else 503 with Retry-After (default: a quarter of the RAM)"},
        {"grammar-cache-mb", HR_OPT_INT, &o.grammar_mb,
         "MiB of compiled grammars (JSON schemas, GBNF, tool-call grammars) kept for requests "
         "that send the same one again (default 256; 0 = none)"},
        {"shutdown-grace", HR_OPT_INT, &o.grace_s,
         "seconds requests in flight get to finish after SIGINT/SIGTERM before they are ended "
         "with an error (default 10; a second signal exits at once)"},
        {"snapshot-memory", HR_OPT_INT, &o.snap_mb,
         "hybrid models: MiB of recurrent-state snapshots for prefix reuse (default: as much as "
         "the state slots)"},
        {"snapshot-interval", HR_OPT_INT, &o.snap_every,
         "hybrid models: KV blocks between state snapshots (default: 256 positions' worth)"},
        {"ssd-cache", HR_OPT_STR, &o.ssd_cache,
         "directory for the prefix cache's SSD tier: evicted and idle cached blocks are written "
         "there and restored by later prompts, also after a restart (default: off; "
         "docs/ssd-cache.md)"},
        {"ssd-cache-max", HR_OPT_FLOAT, &o.ssd_cache_gb,
         "GiB of block files the --ssd-cache directory may hold (default 32; least recently "
         "used go first)"},
        {"ssd-cache-verify", HR_OPT_FLAG, &o.ssd_verify,
         "check every tensor's checksum when a block is restored (default: the header's only)"},
        {"ssd-cache-always-restore", HR_OPT_FLAG, &o.ssd_always,
         "restore disk blocks even where prefilling them again is measured to be faster (default: "
         "the cheaper of the two, e.g. prefill on a fast GPU)"},
        {"compute", HR_OPT_STR, &o.compute, HR_COMPUTE_HELP},
        {"kv-dtype", HR_OPT_STR, &o.kv_dtype, HR_KV_DTYPE_HELP},
        {"exact", HR_OPT_FLAG, &o.exact, HR_EXACT_HELP},
        {"mmap", HR_OPT_FLAG, &o.mmap,
         "compute from the mmapped weights (faster load, slower decode)"},
        {"isolate", HR_OPT_FLAG, &o.isolate,
         "run the engine in a supervised child process behind this one (a proxy that answers "
         "/health itself and restarts a child that dies or hangs; docs/server.md)"},
        {"probe-interval", HR_OPT_FLOAT, &o.probe_interval,
         "with --isolate: seconds between health probes of the engine child (default 1)"},
        {"probe-timeout", HR_OPT_FLOAT, &o.probe_timeout,
         "with --isolate: seconds without an answer to a health probe after which the "
         "engine child is killed and restarted (default 5)"},
        {"load-timeout", HR_OPT_INT, &o.load_timeout_s,
         "with --isolate: seconds an engine child may take to load and answer its first "
         "health probe before it is killed and restarted (default 600; 0 = no limit)"},
        {"unix-socket", HR_OPT_STR, &o.unix_socket, NULL},
    };
    int help;
    hr_err *err = hr_opts_parse(
        argc, argv, opts, sizeof opts / sizeof *opts,
        "usage: hearth serve --model DIR [--host H] [--port P] [--api-key K] [options]", &help);
    if (err) return hr_cmd_fail("serve", err), 2;
    if (help) return 0;
    if (!o.model) return hr_cmd_fail("serve", hr_errf("--model is required")), 2;
    if ((err = hr_parse_device(o.device))) return hr_cmd_fail("serve", err), 2;
    if ((err = hr_parse_gpu_memory(o.gpu_memory))) return hr_cmd_fail("serve", err), 2;
    if ((err = hr_parse_numerics(o.compute, o.kv_dtype, o.exact, 1, &o.num)))
        return hr_cmd_fail("serve", err), 2;
    if (o.port < 0 || o.port > 65535)
        return hr_cmd_fail("serve", hr_errf("--port must be 0..65535")), 2;
    if (o.kv_mb < 0 || o.budget_mb < 0 || o.max_seqs < 0 || o.max_batch < 0 || o.max_queue < 0 ||
        o.max_body_mb <= 0 || o.snap_mb < 0 || o.snap_every < 0 || o.request_mb < 0 ||
        o.grammar_mb < 0 || o.grammar_mb > 1 << 20)
        return hr_cmd_fail("serve", hr_errf("sizes must be positive")), 2;
    if ((err = mib_fit("kv-memory", o.kv_mb)) || (err = mib_fit("memory-budget", o.budget_mb)) ||
        (err = mib_fit("snapshot-memory", o.snap_mb)) ||
        (err = mib_fit("request-memory-mb", o.request_mb)))
        return hr_cmd_fail("serve", err), 2;
    if (o.max_body_mb > 4096)
        return hr_cmd_fail("serve", hr_errf("--max-body-mb must be 1..4096")), 2;
    if (o.max_seqs > 4096 || o.threads < 0 || o.threads > 4096 || o.max_batch > 1 << 20 ||
        o.max_queue > 1 << 20 || o.snap_every > 1 << 20)
        return hr_cmd_fail("serve", hr_errf("--max-seqs and --threads must be 0..4096, and "
                                            "--max-batch-tokens, --max-queue and "
                                            "--snapshot-interval at most 1048576")),
               2;
    if (o.request_timeout_s < 0 || o.request_timeout_s > 86400)
        return hr_cmd_fail("serve",
                           hr_errf("--request-timeout must be 0..86400 seconds (0 = none)")),
               2;
    if (o.max_conns_ip < 0 || o.max_conns_ip > 65536)
        return hr_cmd_fail("serve",
                           hr_errf("--max-connections-per-ip must be 0..65536 (0: no limit)")),
               2;
    if (o.timeout_s < 0 || o.timeout_s > 86400)
        return hr_cmd_fail("serve", hr_errf("--timeout must be 0..86400 seconds (0 = never)")), 2;
    if (o.grace_s < 0 || o.grace_s > 86400)
        return hr_cmd_fail("serve", hr_errf("--shutdown-grace must be 0..86400 seconds")), 2;
    if (o.max_conns < 1 || o.max_conns > 65536)
        return hr_cmd_fail("serve", hr_errf("--max-connections must be 1..65536")), 2;
    if (!(o.probe_interval > 0 && o.probe_interval <= 3600) ||
        !(o.probe_timeout > 0 && o.probe_timeout <= 3600))
        return hr_cmd_fail("serve", hr_errf("--probe-interval and --probe-timeout must be in "
                                            "(0, 3600] seconds")),
               2;
    if ((err = check_ssd(&o))) return hr_cmd_fail("serve", err), 2;
    if (o.load_timeout_s < 0 || o.load_timeout_s > 86400)
        return hr_cmd_fail("serve", hr_errf("--load-timeout must be 0..86400 seconds (0 = none)")),
               2;
    if (o.isolate && o.unix_socket)
        return hr_cmd_fail("serve", hr_errf("--isolate and --unix-socket do not go together")), 2;
    if (o.isolate) {
        char conns[48];
        char **child = child_argv(argc, argv, opts, (int)(sizeof opts / sizeof *opts), o.max_conns,
                                  conns, sizeof conns);
        err = child ? serve_isolated(&o, child) : hr_err_oom();
        free(child);
    } else {
        err = serve(&o);
    }
    return err ? hr_cmd_fail("serve", err) : 0;
}
