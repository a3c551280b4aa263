/* The verb table: one line per verb, in the order `hearth --help` lists them. */
#include "cli/verbs.h"

#include <stdio.h>

const hr_verb hr_verbs[] = {
    {"serve", hr_cmd_serve, "serve a model over HTTP (OpenAI and Anthropic APIs)"},
    {"run", hr_cmd_run, "generate from a prompt (one shot)"},
    {"logits", hr_cmd_logits, "teacher-forced logits of a token sequence to safetensors"},
    {"convert", hr_cmd_convert, "quantize a checkpoint to the MLX affine layout (2..8 bits)"},
    {"mkmodel", hr_cmd_mkmodel, "write a random-weight checkpoint of a real shape"},
    {"tokenize", hr_cmd_tokenize, "print the token ids of a text"},
    {"detokenize", hr_cmd_detokenize, "print the text of token ids"},
    {"grammar", hr_cmd_grammar,
     "check a text against a grammar or regex through token masks (--bench)"},
    {"template", hr_cmd_template, "render a chat request through the model's chat template"},
    {"bench", hr_cmd_bench, "engine throughput: decode, prefill, concurrent decode"},
    {"fit", hr_cmd_fit, "will a model and context fit this machine's RAM"},
    {"bench-serve", hr_cmd_bench_serve, "load-test an OpenAI-compatible server (TTFT, ITL, tok/s)"},
    {NULL, NULL, NULL},
};

int hr_cmd_fail(const char *verb, hr_err *err) {
    fprintf(stderr, "hearth %s: %s\n", verb, hr_err_msg(err));
    hr_err_free(err);
    return 1;
}
