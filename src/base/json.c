/* jansson loaders and typed getters; see json.h. */
#include "base/json.h"

hr_err *hr_json_load_file(const char *path, json_t **out) {
    json_error_t je;
    *out = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!*out) {
        if (je.line <= 0) return hr_errf("%s: %s", path, je.text);
        return hr_errf("%s:%d:%d: invalid JSON: %s", path, je.line, je.column, je.text);
    }
    return NULL;
}

hr_err *hr_json_load_buf(const char *what, const char *buf, size_t len, json_t **out) {
    json_error_t je;
    *out = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!*out) return hr_errf("%s:%d:%d: invalid JSON: %s", what, je.line, je.column, je.text);
    return NULL;
}

static const json_t *get(const json_t *obj, const char *key) {
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_null(v) ? NULL : v;
}

hr_err *hr_json_int(const json_t *obj, const char *key, int64_t def, const char *what, int64_t *out) {
    const json_t *v = get(obj, key);
    *out = def;
    if (!v) return NULL;
    if (json_is_integer(v)) *out = json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v))
        *out = (int64_t)json_real_value(v);
    else return hr_errf("%s: \"%s\" must be an integer", what, key);
    return NULL;
}

hr_err *hr_json_num(const json_t *obj, const char *key, double def, const char *what, double *out) {
    const json_t *v = get(obj, key);
    *out = def;
    if (!v) return NULL;
    if (!json_is_number(v)) return hr_errf("%s: \"%s\" must be a number", what, key);
    *out = json_number_value(v);
    return NULL;
}

hr_err *hr_json_bool(const json_t *obj, const char *key, int def, const char *what, int *out) {
    const json_t *v = get(obj, key);
    *out = def;
    if (!v) return NULL;
    if (!json_is_boolean(v)) return hr_errf("%s: \"%s\" must be true or false", what, key);
    *out = json_is_true(v);
    return NULL;
}

hr_err *hr_json_str(const json_t *obj, const char *key, const char *def, const char *what,
                    const char **out) {
    const json_t *v = get(obj, key);
    *out = def;
    if (!v) return NULL;
    if (!json_is_string(v)) return hr_errf("%s: \"%s\" must be a string", what, key);
    *out = json_string_value(v);
    return NULL;
}
