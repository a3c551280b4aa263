/* `hearth tokenize`: prints the token ids of a text (or a file's contents) as a JSON
 * array, without special tokens unless --special asks for the tokenizer's BOS/EOS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/tok_open.h"

static void print_ids(const int32_t *ids, int n) {
    putchar('[');
    for (int i = 0; i < n; i++)
        printf(i ? ", %d" : "%d", ids[i]);
    printf("]\n");
}

int hr_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL;
    int special = 0, help = 0;
    hr_opt opts[] = {
        {"model", HR_OPT_STR, &model,
         "model or tokenizer directory (tokenizer.json), or a .gguf file"},
        {"text", HR_OPT_STR, &text, "text to tokenize"},
        {"file", HR_OPT_STR, &file, "file whose contents to tokenize"},
        {"special", HR_OPT_FLAG, &special, "add the tokenizer's special tokens (BOS/EOS)"},
    };
    hr_err *e = hr_opts_parse(
        argc, argv, opts, 4, "usage: hearth tokenize --model DIR (--text S | --file F) [--special]",
        &help);
    if (e) return hr_cmd_fail("tokenize", e), 2;
    if (help) return 0;
    if (!model) return hr_cmd_fail("tokenize", hr_errf("--model is required")), 2;
    if (!text == !file)
        return hr_cmd_fail("tokenize", hr_errf("give exactly one of --text and --file")), 2;
    char *buf = NULL;
    size_t len = text ? strlen(text) : 0;
    if (file && (e = hr_read_file(file, &buf, &len))) return hr_cmd_fail("tokenize", e);
    hr_tokenizer *tok;
    if ((e = hr_tokenizer_open(model, &tok))) {
        free(buf);
        return hr_cmd_fail("tokenize", e);
    }
    int32_t *ids;
    int n;
    e = hr_tokenizer_encode(tok, file ? buf : text, len, special, &ids, &n);
    if (!e) print_ids(ids, n);
    if (!e) free(ids);
    free(buf);
    hr_tokenizer_free(tok);
    return e ? hr_cmd_fail("tokenize", e) : 0;
}
