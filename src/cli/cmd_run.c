/* hearth run: load a model and generate from a prompt, one shot. Sampling defaults come
 * from generation_config.json (greedy unless it says do_sample); flags override. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/generate.h"

typedef struct {
    const char *model, *prompt, *prompt_ids;
    long max_tokens, top_k, seed, threads;
    double temperature, top_p, min_p;
    int print_ids, mmap;
} run_opts;

static int print_token(void *ctx, int32_t tok) {
    int *first = ctx;
    printf(*first ? "%d" : " %d", tok);
    *first = 0;
    fflush(stdout);
    return 0;
}

static hr_sampler_params sampling(const run_opts *o, const hr_model_config *c) {
    hr_sampler_params p = {0, 1, 0, 0, (uint64_t)o->seed};
    if (c->gen.do_sample) {
        p.temperature = (float)c->gen.temperature;
        p.top_p = (float)c->gen.top_p;
        p.top_k = c->gen.top_k;
    }
    if (o->temperature >= 0) p.temperature = (float)o->temperature;
    if (o->top_p >= 0) p.top_p = (float)o->top_p;
    if (o->top_k >= 0) p.top_k = (int)o->top_k;
    if (o->min_p >= 0) p.min_p = (float)o->min_p;
    return p;
}

static hr_err *run(const run_opts *o) {
    int *ids = NULL, n = 0;
    if (o->prompt) return hr_errf("--prompt needs the tokenizer, which this build does not have yet; use --prompt-ids");
    HR_TRY(hr_parse_int_list(o->prompt_ids, "--prompt-ids", &ids, &n));
    hr_backend *be = NULL;
    hr_model *m = NULL;
    hr_err *err = hr_backend_cpu_create(&(hr_cpu_options){(int)o->threads, o->mmap}, &be);
    if (!err) err = hr_model_load(o->model, be, &m);
    if (!err) {
        const hr_model_config *c = hr_model_cfg(m);
        hr_gen_request req = {(const int32_t *)ids, n, (int)o->max_tokens, sampling(o, c), c->eos_ids, c->n_eos, 0};
        hr_gen_stats st;
        int first = 1;
        err = hr_generate(m, &req, print_token, &first, &st);
        printf("\n");
        fflush(stdout);
        if (!err)
            fprintf(stderr, "prompt %d tokens in %.3f s (%.1f tok/s), generated %d tokens (%.1f tok/s)\n",
                    st.n_prompt, st.prefill_s, st.n_prompt / (st.prefill_s + 1e-12), st.n_generated,
                    st.n_generated > 1 ? (st.n_generated - 1) / (st.decode_s + 1e-12) : 0.0);
    }
    hr_model_free(m);
    hr_backend_destroy(be);
    free(ids);
    return err;
}

int hr_cmd_run(int argc, char **argv) {
    run_opts o = {.max_tokens = 64, .top_k = -1, .seed = 0, .temperature = -1, .top_p = -1, .min_p = -1};
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &o.model, "model directory"},
        {"prompt", HR_OPT_STR, &o.prompt, "prompt text"},
        {"prompt-ids", HR_OPT_STR, &o.prompt_ids, "prompt as comma-separated token ids"},
        {"max-tokens", HR_OPT_INT, &o.max_tokens, "tokens to generate (default 64)"},
        {"temperature", HR_OPT_FLOAT, &o.temperature, "sampling temperature (0 = greedy)"},
        {"top-p", HR_OPT_FLOAT, &o.top_p, "nucleus sampling mass (1 = off)"},
        {"top-k", HR_OPT_INT, &o.top_k, "keep the k most likely tokens (0 = off)"},
        {"min-p", HR_OPT_FLOAT, &o.min_p, "drop tokens below min-p x the top probability"},
        {"seed", HR_OPT_INT, &o.seed, "random seed (default 0)"},
        {"print-ids", HR_OPT_FLAG, &o.print_ids, "print generated token ids on one line"},
        {"threads", HR_OPT_INT, &o.threads, "CPU threads (default: all online CPUs)"},
        {"mmap", HR_OPT_FLAG, &o.mmap, "compute from the mmapped file (faster load, slower decode)"},
    };
    int help;
    hr_err *err = hr_opts_parse(argc, argv, opts, sizeof opts / sizeof *opts,
                                "usage: hearth run --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [options]", &help);
    if (err) return hr_cmd_fail("run", err), 2;
    if (help) return 0;
    if (!o.model || (!o.prompt == !o.prompt_ids))
        return hr_cmd_fail("run", hr_errf("--model and one of --prompt / --prompt-ids are required")), 2;
    if (o.max_tokens < 0 || o.max_tokens > 1000000) return hr_cmd_fail("run", hr_errf("--max-tokens out of range")), 2;
    err = run(&o);
    return err ? hr_cmd_fail("run", err) : 0;
}
