/* Request fields shared by the OpenAI and Anthropic parsers: sampling parameters with
 * their ranges, max_tokens, stop strings, a forcing tool_choice's tool, and the /tokenize
 * and /detokenize bodies. */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "grammar/grammar.h"
#include "server/request.h"

#define MAX_STOP 16
#define MAX_STOP_LEN 1024

hr_api_request *hr_api_request_new(hr_api_kind api) {
    hr_api_request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->api = api;
    r->sampling = (hr_sampler_params){
        .temperature = 1.0f, .top_p = 1.0f, .typical_p = 1.0f, .xtc_threshold = 0.1f};
    r->repetition_penalty = 1.0f;
    r->n = 1;
    return r;
}

void hr_api_request_free(hr_api_request *r) {
    if (!r) return;
    free(r->model);
    json_decref(r->chat);
    free(r->prompt);
    free(r->prompt_ids);
    free(r->logit_bias);
    for (int i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    free(r->stop);
    free(r->reasoning_effort);
    free(r->tool_choice_name);
    free(r->prefill);
    json_decref(r->responses);
    hr_output_spec_free(&r->output);
    hr_grammar_free(r->grammar);
    free(r);
}

hr_err *hr_check_conversation_size(const json_t *msgs, const char *field, const char *content_key) {
    size_t n = json_array_size(msgs), blocks = 0, i;
    if (n > HR_MAX_MESSAGES)
        return hr_errf("request: \"%s\" has %zu entries, more than the %d this server takes", field,
                       n, HR_MAX_MESSAGES);
    const json_t *m;
    json_array_foreach(msgs, i, m) blocks += json_array_size(json_object_get(m, content_key));
    if (blocks > HR_MAX_BLOCKS)
        return hr_errf("request: \"%s\" has %zu content blocks in all, more than the %d this "
                       "server takes",
                       field, blocks, HR_MAX_BLOCKS);
    return NULL;
}

static hr_err *num_in(const json_t *body, const char *key, double def, double lo, double hi,
                      int lo_open, float *out) {
    double v;
    HR_TRY(hr_json_num(body, key, def, "request", &v));
    if (v < lo || v > hi || (lo_open && v == lo))
        return hr_errf("request: \"%s\" must be in %s%g, %g], got %g", key, lo_open ? "(" : "[", lo,
                       hi, v);
    *out = (float)v;
    return NULL;
}

/* "(valid ids are 0..N-1)" for messages about an id out of range; "" when unchecked. */
static const char *id_range(const hr_request_limits *lim, char *buf, size_t cap) {
    if (!lim->vocab_size) return "";
    snprintf(buf, cap, " (valid ids are 0..%d)", lim->vocab_size - 1);
    return buf;
}

static int bad_id(const hr_request_limits *lim, long long id) {
    return id < 0 || id > INT32_MAX || (lim->vocab_size && id >= lim->vocab_size);
}

static hr_err *parse_logit_bias(const json_t *body, const hr_request_limits *lim,
                                hr_api_request *r) {
    const json_t *lb = json_object_get(body, "logit_bias");
    if (!lb || json_is_null(lb)) return NULL;
    if (!json_is_object(lb)) return hr_errf("request: \"logit_bias\" must be an object");
    r->logit_bias = calloc(json_object_size(lb) + 1, sizeof *r->logit_bias);
    if (!r->logit_bias) return hr_err_oom();
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)lb, k, v) {
        char *end;
        long id = strtol(k, &end, 10);
        char range[48];
        if (!*k || *end || bad_id(lim, id))
            return hr_errf("request: \"logit_bias\" key \"%s\" is not a token id%s", k,
                           id_range(lim, range, sizeof range));
        if (!json_is_number(v) || json_number_value(v) < -100 || json_number_value(v) > 100)
            return hr_errf("request: \"logit_bias\"[\"%s\"] must be a number in [-100, 100]", k);
        r->logit_bias[r->n_logit_bias++] =
            (hr_logit_bias){(int32_t)id, (float)json_number_value(v)};
    }
    return NULL;
}

hr_err *hr_parse_sampling(const json_t *body, const hr_request_limits *lim, hr_api_request *r) {
    hr_sampler_params *s = &r->sampling;
    HR_TRY(num_in(body, "temperature", 1.0, 0, 2, 0, &s->temperature));
    HR_TRY(num_in(body, "top_p", 1.0, 0, 1, 1, &s->top_p));
    HR_TRY(num_in(body, "min_p", 0.0, 0, 1, 0, &s->min_p));
    HR_TRY(num_in(body, "typical_p", 1.0, 0, 1, 1, &s->typical_p));
    HR_TRY(num_in(body, "xtc_probability", 0.0, 0, 1, 0, &s->xtc_probability));
    HR_TRY(num_in(body, "xtc_threshold", 0.1, 0, 1, 0, &s->xtc_threshold));
    HR_TRY(num_in(body, "presence_penalty", 0.0, -2, 2, 0, &r->presence_penalty));
    HR_TRY(num_in(body, "frequency_penalty", 0.0, -2, 2, 0, &r->frequency_penalty));
    HR_TRY(num_in(body, "repetition_penalty", 1.0, 0, 2, 1, &r->repetition_penalty));
    int64_t k, seed, last_n;
    HR_TRY(hr_json_int(body, "repeat_last_n", -1, "request", &last_n));
    if (last_n < -1 || last_n > INT32_MAX)
        return hr_errf("request: \"repeat_last_n\" must be -1 (all tokens), 0 (no penalties) or a "
                       "window of tokens");
    if (last_n == 0) /* llama.cpp: a window of nothing turns the penalties off */
        r->presence_penalty = r->frequency_penalty = 0, r->repetition_penalty = 1;
    r->penalty_last_n = last_n > 0 ? (int)last_n : 0;
    HR_TRY(hr_json_int(body, "top_k", 0, "request", &k));
    if (k < -1 || k > INT32_MAX) return hr_errf("request: \"top_k\" must be >= 0 (or -1 for off)");
    s->top_k = k < 0 ? 0 : (int)k;
    HR_TRY(hr_json_int(body, "seed", 0, "request", &seed));
    r->seed_set = json_object_get(body, "seed") && !json_is_null(json_object_get(body, "seed"));
    s->seed = (uint64_t)seed;
    return parse_logit_bias(body, lim, r);
}

hr_err *hr_parse_max_tokens(const json_t *body, const char *key, int required,
                            const hr_request_limits *lim, hr_api_request *r) {
    const json_t *v = json_object_get(body, key);
    if ((!v || json_is_null(v)) && required) return hr_errf("request: \"%s\" is required", key);
    int64_t n;
    HR_TRY(hr_json_int(body, key, 0, "request", &n));
    if (!v || json_is_null(v)) return NULL;
    if (n < 1) return hr_errf("request: \"%s\" must be at least 1, got %lld", key, (long long)n);
    /* an upper bound: the engine lowers it to what fits beside the prompt */
    r->max_tokens = n > INT32_MAX ? INT32_MAX : (int)n;
    return NULL;
}

hr_err *hr_context_error(hr_api_kind api, int prompt_tokens, int context) {
    if (api == HR_API_MESSAGES)
        return hr_errc(HR_E_CONTEXT, "prompt is too long: %d tokens > %d maximum", prompt_tokens,
                       context - 1);
    return hr_errc(HR_E_CONTEXT,
                   "This model's maximum context length is %d tokens. However, your request has "
                   "%d input tokens, which leaves no room for output. Please reduce the length "
                   "of the input.",
                   context, prompt_tokens);
}

static hr_err *add_stop(hr_api_request *r, const char *key, const json_t *s) {
    if (!json_is_string(s)) return hr_errf("request: \"%s\" entries must be strings", key);
    size_t len = json_string_length(s);
    if (len == 0 || len > MAX_STOP_LEN)
        return hr_errf("request: \"%s\" strings must be 1..%d bytes", key, MAX_STOP_LEN);
    if (r->n_stop == MAX_STOP)
        return hr_errf("request: \"%s\" has more than %d strings", key, MAX_STOP);
    if (!(r->stop[r->n_stop] = strdup(json_string_value(s)))) return hr_err_oom();
    r->n_stop++;
    return NULL;
}

hr_err *hr_parse_stop(const json_t *body, const char *key, hr_api_request *r) {
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return NULL;
    if (!json_is_string(v) && !json_is_array(v))
        return hr_errf("request: \"%s\" must be a string or an array of strings", key);
    if (!(r->stop = calloc(MAX_STOP, sizeof *r->stop))) return hr_err_oom();
    if (json_is_string(v)) return add_stop(r, key, v);
    size_t i;
    const json_t *s;
    json_array_foreach(v, i, s) HR_TRY(add_stop(r, key, s));
    return NULL;
}

hr_err *hr_set_tool_choice(hr_api_request *r, const json_t *tools, const char *name) {
    if (!json_array_size(tools))
        return hr_errf("request: a \"tool_choice\" that forces a tool call needs a non-empty "
                       "\"tools\" array");
    r->tool_choice = name ? HR_TOOL_CHOICE_NAMED : HR_TOOL_CHOICE_REQUIRED;
    if (!name) return NULL;
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (n && !strcmp(n, name)) {
            r->tool_choice_name = strdup(name);
            return r->tool_choice_name ? NULL : hr_err_oom();
        }
    }
    return hr_errf("request: \"tool_choice\" names the tool \"%s\", which is not in \"tools\"",
                   name);
}

hr_err *hr_set_chat(hr_api_request *r, hr_err *err, json_t *messages, json_t *tools,
                    json_t *kwargs) {
    if (err) {
        json_decref(messages);
        json_decref(tools);
        json_decref(kwargs);
        return err;
    }
    r->chat = json_pack("{s:o, s:o, s:b, s:o}", "messages", messages, "tools",
                        tools ? tools : json_null(), "add_generation_prompt", 1, "kwargs",
                        kwargs ? kwargs : json_object());
    return r->chat ? NULL : hr_err_oom();
}

hr_err *hr_parse_request(hr_api_kind api,
                         hr_err *(*parse)(const json_t *body, const hr_request_limits *lim,
                                          hr_api_request *r),
                         const json_t *body, const hr_request_limits *lim, hr_api_request **out) {
    *out = NULL;
    hr_api_request *r = hr_api_request_new(api);
    if (!r) return hr_err_oom();
    hr_err *e = parse(body, lim, r);
    if (e)
        hr_api_request_free(r);
    else
        *out = r;
    return e;
}

hr_err *hr_parse_tokenize_request(const json_t *body, const char **text, int *add_special) {
    if (!json_is_object(body)) return hr_errf("request body must be a JSON object");
    HR_TRY(hr_json_str(body, "content", NULL, "request", text));
    if (!*text) HR_TRY(hr_json_str(body, "prompt", NULL, "request", text));
    if (!*text) return hr_errf("request: \"content\" (the text to tokenize) is required");
    return hr_json_bool(body, "add_special_tokens", 1, "request", add_special);
}

hr_err *hr_parse_detokenize_request(const json_t *body, const hr_request_limits *lim, int32_t **ids,
                                    int *n) {
    if (!json_is_object(body)) return hr_errf("request body must be a JSON object");
    const json_t *t = json_object_get(body, "tokens");
    if (!json_is_array(t)) return hr_errf("request: \"tokens\" must be an array of token ids");
    *n = 0;
    if (!(*ids = malloc((json_array_size(t) + 1) * sizeof **ids))) return hr_err_oom();
    size_t i;
    const json_t *v;
    json_array_foreach(t, i, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (bad_id(lim, id)) {
            free(*ids);
            *ids = NULL;
            char range[48];
            return hr_errf("request: \"tokens\"[%zu] is not a token id%s", i,
                           id_range(lim, range, sizeof range));
        }
        (*ids)[(*n)++] = (int32_t)id;
    }
    return NULL;
}
