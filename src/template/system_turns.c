/* Mid-conversation system messages: the probe that tells whether a chat template renders
 * them as turns, and the fold into the leading system message for templates that do not
 * (see system_turns.h). */
#include "template/system_turns.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static const char PROBE[] =
    "{\"messages\": [{\"role\": \"user\", \"content\": \"hr-probe-user-1\"},"
    " {\"role\": \"assistant\", \"content\": \"hr-probe-assistant\"},"
    " {\"role\": \"system\", \"content\": \"hr-probe-system\"},"
    " {\"role\": \"user\", \"content\": \"hr-probe-user-2\"}],"
    " \"tools\": null, \"add_generation_prompt\": true, \"kwargs\": {}}";

int hr_chat_template_system_turns(const hr_chat_template *ct) {
    json_t *probe = json_loads(PROBE, 0, NULL);
    char *out = NULL;
    hr_err *e = probe ? hr_chat_template_apply(ct, probe, &out, NULL) : hr_err_oom();
    json_decref(probe);
    if (e) {
        hr_err_free(e);
        return 0;
    }
    const char *a = strstr(out, "hr-probe-assistant"), *s = strstr(out, "hr-probe-system");
    const char *u = strstr(out, "hr-probe-user-2");
    int ok = a && s && u && a < s && s < u;
    free(out);
    return ok;
}

static int is_system(const json_t *m) {
    const char *role = json_string_value(json_object_get(m, "role"));
    return role && !strcmp(role, "system");
}

/* The folded system text being joined; the buffer doubles, so many system messages cost
 * linear time. */
typedef struct {
    char *s;
    size_t len, cap;
} sys_text;

/* Appends the message's text (a string, or the text parts of an array) to b. */
static hr_err *add_text(sys_text *b, const json_t *m) {
    const json_t *c = json_object_get(m, "content");
    size_t i, n = json_is_array(c) ? json_array_size(c) : 1;
    for (i = 0; i < n; i++) {
        const json_t *part = json_is_array(c) ? json_array_get(c, i) : NULL;
        const char *t =
            part ? json_string_value(json_object_get(part, "text")) : json_string_value(c);
        if (!t) continue;
        size_t k = strlen(t), sep = b->len && i == 0 ? 2 : 0;
        if (b->len + sep + k + 1 > b->cap) {
            size_t cap = (b->len + sep + k + 1) * 2;
            char *p = realloc(b->s, cap);
            if (!p) return hr_err_oom();
            b->s = p;
            b->cap = cap;
        }
        memcpy(b->s + b->len, "\n\n", sep);
        memcpy(b->s + b->len + sep, t, k + 1);
        b->len += sep + k;
    }
    return NULL;
}

/* The text of every system message of msgs into *sys (in order), the others into rest. */
static hr_err *split(const json_t *msgs, sys_text *sys, json_t *rest) {
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) {
        if (is_system(m))
            HR_TRY(add_text(sys, m));
        else if (json_array_append(rest, (json_t *)m))
            return hr_err_oom();
    }
    return NULL;
}

hr_err *hr_chat_fold_system(const json_t *chat, json_t **out) {
    *out = NULL;
    const json_t *msgs = json_object_get(chat, "messages");
    size_t i, later = 0;
    const json_t *m;
    json_array_foreach(msgs, i, m) later += i > 0 && is_system(m);
    if (!later) return NULL;
    sys_text sys = {0};
    json_t *rest = json_array();
    hr_err *e = rest ? split(msgs, &sys, rest) : hr_err_oom();
    json_t *folded = e ? NULL : hr_json_copy((json_t *)chat); /* shallow */
    if (!e && folded) {
        json_array_insert_new(
            rest, 0, json_pack("{s:s, s:s}", "role", "system", "content", sys.s ? sys.s : ""));
        json_object_set(folded, "messages", rest);
    }
    if (!e && !folded) e = hr_err_oom();
    free(sys.s);
    json_decref(rest);
    if (!e) *out = folded;
    return e;
}
