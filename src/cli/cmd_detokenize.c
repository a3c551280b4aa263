/* `hearth detokenize`: prints the text of comma-separated token ids. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/tok_open.h"

int hr_cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *ids_s = NULL;
    int skip = 0, help = 0;
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &model,
         "model or tokenizer directory (tokenizer.json), or a .gguf file"},
        {"ids", HR_OPT_STR, &ids_s, "comma-separated token ids, e.g. 9707,11,1879"},
        {"skip-special", HR_OPT_FLAG, &skip, "leave special tokens out of the text"},
    };
    hr_err *e =
        hr_opts_parse(argc, argv, opts, 3,
                      "usage: hearth detokenize --model DIR --ids 1,2,3 [--skip-special]", &help);
    if (e) return hr_cmd_fail("detokenize", e), 2;
    if (help) return 0;
    if (!model) return hr_cmd_fail("detokenize", hr_errf("--model is required")), 2;
    if (!ids_s) return hr_cmd_fail("detokenize", hr_errf("--ids is required")), 2;
    int *ids, n;
    if ((e = hr_parse_int_list(ids_s, "--ids", &ids, &n))) return hr_cmd_fail("detokenize", e), 2;
    hr_tokenizer *tok;
    if ((e = hr_tokenizer_open(model, &tok))) {
        free(ids);
        return hr_cmd_fail("detokenize", e);
    }
    int32_t *v = malloc(sizeof *v * (size_t)n);
    char *text = NULL;
    if (!v) e = hr_err_oom();
    for (int i = 0; !e && i < n; i++)
        v[i] = ids[i];
    if (!e) e = hr_tokenizer_decode(tok, v, n, skip, &text);
    if (!e) printf("%s\n", text);
    free(text);
    free(v);
    free(ids);
    hr_tokenizer_free(tok);
    return e ? hr_cmd_fail("detokenize", e) : 0;
}
