/* libFuzzer target: parses the input as template source and renders it with a small
 * fixed chat context. Must never crash, leak or hang: the engine's limits (steps,
 * memory, output size, macro depth, nesting) turn runaway templates into errors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/template.h"

static const char *const context_json =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", "
    "\"content\": \"Hi \\u00e9\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>x</think>ok\", \"tool_calls\": "
    "[{\"function\": {\"name\": \"f\","
    " \"arguments\": {\"a\": [1, 2.5, null, true]}}}]}], \"tools\": [{\"type\": \"function\"}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    json_t *ctx = json_loads(context_json, 0, NULL);
    hr_template *t = NULL;
    hr_err *e = hr_template_parse(src, &t);
    if (!e) {
        char *out = NULL;
        e = hr_template_render(t, ctx, &out, NULL);
        free(out);
        hr_template_free(t);
    }
    hr_err_free(e);
    json_decref(ctx);
    free(src);
    return 0;
}
