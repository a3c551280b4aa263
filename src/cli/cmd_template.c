/* `hearth template`: renders a chat request through a model's chat template and prints
 * the prompt exactly (no added newline); the template's own errors go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "cli/args.h"
#include "cli/verbs.h"
#include "engine/tok_open.h"
#include "model/gguf.h"
#include "template/template.h"

/* A GGUF file's tokenizer.chat_template (or the file at tpl) with its BOS/EOS tokens. */
static hr_err *gguf_template(const char *model, const char *tpl, hr_chat_template *ct) {
    hr_tokenizer *tok;
    HR_TRY(hr_tokenizer_open(model, &tok));
    char *src = NULL;
    size_t len;
    hr_err *e = tpl ? hr_read_file_max(tpl, HR_TEMPLATE_MAX_SOURCE, &src, &len) : NULL;
    if (!e)
        e = hr_chat_template_from(tpl ? src : hr_tokenizer_chat_template(tok, NULL),
                                  hr_tokenizer_bos(tok), hr_tokenizer_eos(tok), ct);
    free(src);
    hr_tokenizer_free(tok);
    return e;
}

/* The request may come through a pipe (--request /dev/stdin): not a model file. */
static hr_err *load_request(const char *path, json_t **out) {
    char *buf;
    size_t len;
    HR_TRY(hr_read_file(path, &buf, &len));
    hr_err *e = hr_json_load_buf(path, buf, len, out);
    free(buf);
    return e;
}

int hr_cmd_template(int argc, char **argv) {
    const char *model = NULL, *request = NULL, *tpl = NULL;
    const hr_opt opts[] = {
        {"model", HR_OPT_STR, &model,
         "model or tokenizer directory (tokenizer_config.json), or a .gguf file"},
        {"request", HR_OPT_STR, &request,
         "request JSON: {messages, tools, add_generation_prompt, kwargs}"},
        {"template", HR_OPT_STR, &tpl, "use this Jinja template file instead of the model's"},
    };
    int help;
    hr_err *e = hr_opts_parse(argc, argv, opts, 3,
                              "usage: hearth template --model DIR --request FILE.json", &help);
    if (e) return hr_cmd_fail("template", e);
    if (help) return 0;
    if (!request || (!model && !tpl))
        return hr_cmd_fail("template",
                           hr_errf("--request and --model (or --template) are required"));
    json_t *req = NULL;
    hr_chat_template ct;
    char *out = NULL;
    if ((e = load_request(request, &req))) return hr_cmd_fail("template", e);
    e = model && hr_is_gguf(model) ? gguf_template(model, tpl, &ct)
                                   : hr_chat_template_load(model ? model : ".", tpl, &ct);
    if (!e) {
        e = hr_chat_template_apply(&ct, req, &out, NULL);
        hr_chat_template_free(&ct);
    }
    json_decref(req);
    if (e) return hr_cmd_fail("template", e);
    fwrite(out, 1, strlen(out), stdout);
    free(out);
    return 0;
}
