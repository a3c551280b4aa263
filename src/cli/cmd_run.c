/* hearth run: load a model and generate from a prompt, one shot. Sampling defaults come
 * from generation_config.json (greedy unless it says do_sample); flags override. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/generate.h"
#include "engine/open.h"
#include "engine/prompt.h"

typedef struct {
    const char *model, *prompt, *prompt_ids, *chat_template, *compute, *device, *kv_dtype;
    long max_tokens, top_k, seed, threads;
    double temperature, top_p, min_p, typical_p, xtc_probability, xtc_threshold;
    int print_ids, mmap, raw, exact;
    hr_numerics_req num; /* from --compute, --kv-dtype, --exact */
} run_opts;

/* Output of generated tokens: ids on one line, or text through the incremental
 * detokenizer (never half a UTF-8 character). */
typedef struct {
    int print_ids, first;
    hr_detok_stream *detok;
    hr_err *err;
} printer;

static int print_token(void *ctx, int32_t tok) {
    printer *p = ctx;
    if (p->print_ids || !p->detok) {
        printf(p->first ? "%d" : " %d", tok);
    } else {
        const char *text;
        size_t len;
        p->err = hr_detok_stream_push(p->detok, tok, &text, &len);
        if (p->err) return 1;
        fwrite(text, 1, len, stdout);
    }
    p->first = 0;
    fflush(stdout);
    return 0;
}

static void print_flush(printer *p) {
    const char *text;
    size_t len;
    if (p->detok && !p->print_ids && !p->err &&
        !(p->err = hr_detok_stream_flush(p->detok, &text, &len)))
        fwrite(text, 1, len, stdout);
}

/* The prompt as ids: rendered through the engine's prompt path (the model's chat template,
 * else "role: content" lines) as a single user message, unless --raw or the model has no
 * template and no --chat-template. */
static hr_err *encode_prompt(const run_opts *o, const hr_tokenizer *tok, int32_t **ids, int *n) {
    int templated = !o->raw && (o->chat_template || hr_tokenizer_chat_template(tok, NULL));
    if (!templated) return hr_tokenizer_encode(tok, o->prompt, strlen(o->prompt), 1, ids, n);
    hr_prompt pr;
    HR_TRY(hr_prompt_open(o->model, o->chat_template, tok, &pr));
    json_t *req = json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", o->prompt);
    hr_err *err = req ? hr_prompt_render(&pr, req, NULL, ids, n, NULL) : hr_err_oom();
    json_decref(req);
    hr_prompt_close(&pr);
    return err;
}

/* Unset (negative) temperature, top-p, top-k and typical-p stay negative: the engine fills
 * them from generation_config.json, as for HTTP requests. */
static hr_sampler_params sampling(const run_opts *o) {
    return (hr_sampler_params){.temperature = (float)o->temperature,
                               .top_p = (float)o->top_p,
                               .top_k = (int)o->top_k,
                               .min_p = o->min_p >= 0 ? (float)o->min_p : 0,
                               .seed = (uint64_t)o->seed,
                               .typical_p = (float)o->typical_p,
                               .xtc_probability = (float)o->xtc_probability,
                               .xtc_threshold = (float)o->xtc_threshold};
}

static hr_err *prompt_ids(const run_opts *o, const hr_tokenizer *tok, int32_t **ids, int *n) {
    if (o->prompt && !tok) return hr_errf("%s has no tokenizer.json; use --prompt-ids", o->model);
    if (o->prompt) return encode_prompt(o, tok, ids, n);
    return hr_parse_int_list(o->prompt_ids, "--prompt-ids", (int **)ids, n);
}

static hr_err *run(const run_opts *o) {
    int32_t *ids = NULL;
    int n = 0;
    hr_opened_model om = {0};
    printer pr = {o->print_ids, 1, NULL, NULL};
    hr_open_options oo = {.device = o->device,
                          .n_threads = (int)o->threads,
                          .weights_in_place = o->mmap,
                          .numerics = o->num};
    hr_err *err = hr_model_open(o->model, &oo, &om);
    if (!err)
        HR_INFO("%s products, %s KV cache", om.numerics.compute_bf16 ? "bf16" : "f32",
                hr_kv_dtype_flag(om.numerics.kv));
    if (!err) err = prompt_ids(o, om.tok, &ids, &n);
    if (!err && om.tok && !o->print_ids) err = hr_detok_stream_create(om.tok, 1, &pr.detok);
    if (!err) {
        const hr_model_config *c = hr_model_cfg(om.model);
        hr_gen_request req = {ids, n, (int)o->max_tokens, sampling(o), c->eos_ids, c->n_eos, 0};
        hr_gen_stats st;
        err = hr_generate(om.model, &req, print_token, &pr, &st);
        print_flush(&pr);
        if (!err) err = pr.err;
        printf("\n");
        fflush(stdout);
        if (!err)
            fprintf(stderr,
                    "prompt %d tokens in %.3f s (%.1f tok/s), generated %d tokens (%.1f tok/s)\n",
                    st.n_prompt, st.prefill_s, st.n_prompt / (st.prefill_s + 1e-12), st.n_generated,
                    st.n_generated > 1 ? (st.n_generated - 1) / (st.decode_s + 1e-12) : 0.0);
    }
    hr_detok_stream_destroy(pr.detok);
    hr_model_close(&om);
    free(ids);
    return err;
}

int hr_cmd_run(int argc, char **argv) {
    run_opts o = {.max_tokens = 64,
                  .top_k = -1,
                  .seed = 0,
                  .temperature = -1,
                  .top_p = -1,
                  .min_p = -1,
                  .typical_p = -1,
                  .xtc_threshold = 0.1};
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &o.model, "model directory"},
        {"prompt", HR_OPT_STR, &o.prompt, "prompt text"},
        {"prompt-ids", HR_OPT_STR, &o.prompt_ids, "prompt as comma-separated token ids"},
        {"max-tokens", HR_OPT_INT, &o.max_tokens, "tokens to generate (default 64)"},
        {"temperature", HR_OPT_FLOAT, &o.temperature, "sampling temperature (0 = greedy)"},
        {"top-p", HR_OPT_FLOAT, &o.top_p, "nucleus sampling mass (1 = off)"},
        {"top-k", HR_OPT_INT, &o.top_k, "keep the k most likely tokens (0 = off)"},
        {"min-p", HR_OPT_FLOAT, &o.min_p, "drop tokens below min-p x the top probability"},
        {"typical-p", HR_OPT_FLOAT, &o.typical_p, "locally typical sampling mass (1 = off)"},
        {"xtc-probability", HR_OPT_FLOAT, &o.xtc_probability,
         "chance per token of excluding the top choices (XTC; 0 = off)"},
        {"xtc-threshold", HR_OPT_FLOAT, &o.xtc_threshold,
         "XTC: probability that makes a token a top choice (default 0.1)"},
        {"seed", HR_OPT_INT, &o.seed, "random seed (default 0)"},
        {"raw", HR_OPT_FLAG, &o.raw, "use --prompt as is, without the chat template"},
        {"chat-template", HR_OPT_STR, &o.chat_template,
         "a Jinja chat template file to use instead of the model's"},
        {"print-ids", HR_OPT_FLAG, &o.print_ids, "print generated token ids on one line"},
        {"device", HR_OPT_STR, &o.device, HR_DEVICE_HELP},
        {"threads", HR_OPT_INT, &o.threads, "CPU threads (default: all online CPUs)"},
        {"compute", HR_OPT_STR, &o.compute, HR_COMPUTE_HELP},
        {"kv-dtype", HR_OPT_STR, &o.kv_dtype, HR_KV_DTYPE_HELP},
        {"exact", HR_OPT_FLAG, &o.exact, HR_EXACT_HELP},
        {"mmap", HR_OPT_FLAG, &o.mmap,
         "compute from the mmapped file (faster load, slower decode)"},
    };
    int help;
    hr_err *err = hr_opts_parse(
        argc, argv, opts, sizeof opts / sizeof *opts,
        "usage: hearth run --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [options]", &help);
    if (err) return hr_cmd_fail("run", err), 2;
    if (help) return 0;
    if (!o.model || (!o.prompt == !o.prompt_ids))
        return hr_cmd_fail("run",
                           hr_errf("--model and one of --prompt / --prompt-ids are required")),
               2;
    if (o.max_tokens < 0 || o.max_tokens > 1000000)
        return hr_cmd_fail("run", hr_errf("--max-tokens out of range")), 2;
    if ((err = hr_parse_device(o.device))) return hr_cmd_fail("run", err), 2;
    if ((err = hr_parse_numerics(o.compute, o.kv_dtype, o.exact, 1, &o.num)))
        return hr_cmd_fail("run", err), 2;
    err = run(&o);
    return err ? hr_cmd_fail("run", err) : 0;
}
