/* Chat request -> rendered template (+ prefill) -> token ids; see prompt.h. */
#include "engine/prompt.h"

#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/json.h"
#include "model/gguf.h"
#include "template/system_turns.h"

const char hr_fallback_chat_template[] =
    "{% for m in messages %}{{ m.role }}: {% if m.content is string %}{{ m.content }}"
    "{% else %}{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}";

static const char THINK_OPEN[] = "<think>", THINK_CLOSE[] = "</think>";

/* p->ct from dir's files, or from p->source and the tokenizer's BOS/EOS for a GGUF file (the
 * file's metadata carries both) or without a directory (an engine on a loaded model). */
static hr_err *load_ct(const char *dir, const char *template_path, hr_prompt *p) {
    if (!dir || hr_is_gguf(dir))
        return hr_chat_template_from(p->source, hr_tokenizer_bos(p->tok), hr_tokenizer_eos(p->tok),
                                     &p->ct);
    return hr_chat_template_load(dir, template_path, &p->ct);
}

hr_err *hr_prompt_open(const char *dir, const char *template_path, const hr_tokenizer *tok,
                       hr_prompt *p) {
    *p = (hr_prompt){.tok = tok};
    const char *own = hr_tokenizer_chat_template(tok, NULL);
    hr_err *err = NULL;
    if (template_path) {
        size_t len;
        err = hr_read_file_max(template_path, HR_TEMPLATE_MAX_SOURCE, &p->source, &len);
        if (!err) err = load_ct(dir, template_path, p);
    } else if (own) {
        p->source = strdup(own);
        err = p->source ? load_ct(dir, NULL, p) : hr_err_oom();
    } else {
        p->fallback = 1;
        p->source = strdup("");
        err = p->source ? hr_template_parse(hr_fallback_chat_template, &p->ct.tpl) : hr_err_oom();
    }
    if (err)
        hr_prompt_close(p);
    else
        p->system_turns = hr_chat_template_system_turns(&p->ct);
    return err;
}

void hr_prompt_close(hr_prompt *p) {
    hr_chat_template_free(&p->ct);
    free(p->source);
    *p = (hr_prompt){0};
}

/* Last occurrence of needle in s, or NULL. */
static const char *find_last(const char *s, const char *needle) {
    const char *last = NULL;
    for (const char *q = strstr(s, needle); q; q = strstr(q + 1, needle))
        last = q;
    return last;
}

int hr_prompt_in_reasoning(const char *text) {
    const char *open = find_last(text, THINK_OPEN), *close = find_last(text, THINK_CLOSE);
    return open && (!close || close < open);
}

/* text + (a close of an open <think>) + prefill, reallocated; *in_reasoning updated. */
static hr_err *append_prefill(char **text, const char *prefill, int *in_reasoning) {
    const char *close = *in_reasoning ? "</think>\n\n" : "";
    size_t a = strlen(*text), b = strlen(close), c = strlen(prefill);
    char *t = realloc(*text, a + b + c + 1);
    if (!t) return hr_err_oom();
    memcpy(t + a, close, b);
    memcpy(t + a + b, prefill, c + 1);
    *text = t;
    *in_reasoning = 0;
    return NULL;
}

hr_err *hr_prompt_render(const hr_prompt *p, const json_t *chat, const char *prefill, int32_t **ids,
                         int *n, int *in_reasoning) {
    if (!json_is_object(chat)) return hr_errf("chat request: must be a JSON object");
    json_t *req = NULL;
    if (!p->system_turns) HR_TRY(hr_chat_fold_system(chat, &req));
    if (!req && !(req = hr_json_copy((json_t *)chat))) return hr_err_oom();
    if (!json_object_get(req, "add_generation_prompt"))
        json_object_set_new(req, "add_generation_prompt", json_true());
    char *text = NULL;
    hr_err *err = hr_chat_template_apply(&p->ct, req, &text, NULL);
    json_decref(req);
    if (err) return hr_err_wrap(err, "chat template: ");
    int inr = hr_prompt_in_reasoning(text);
    if (prefill) err = append_prefill(&text, prefill, &inr);
    if (!err) err = hr_tokenizer_encode(p->tok, text, strlen(text), p->fallback, ids, n);
    free(text);
    if (in_reasoning) *in_reasoning = inr;
    return err;
}
