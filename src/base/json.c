/* jansson loaders and typed getters; see json.h. */
#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"

hr_err *hr_json_load_file_flags(const char *path, size_t flags, json_t **out) {
    *out = NULL;
    char *buf;
    size_t len;
    HR_TRY(hr_read_file_max(path, HR_JSON_FILE_MAX, &buf, &len));
    json_error_t je;
    *out = json_loadb(buf, len, flags, &je);
    free(buf);
    if (!*out) return hr_errf("%s:%d:%d: invalid JSON: %s", path, je.line, je.column, je.text);
    return NULL;
}

hr_err *hr_json_load_file(const char *path, json_t **out) {
    return hr_json_load_file_flags(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, out);
}

hr_err *hr_json_load_buf(const char *what, const char *buf, size_t len, json_t **out) {
    json_error_t je;
    *out = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!*out && json_error_code(&je) == json_error_out_of_memory) return hr_err_oom();
    if (!*out) return hr_errf("%s:%d:%d: invalid JSON: %s", what, je.line, je.column, je.text);
    return NULL;
}

/* Writes the path of the first string under v holding a NUL byte into path[len..cap) and
 * returns 1, or returns 0 when there is none. Depth is bounded by jansson's parser. */
static int find_nul(const json_t *v, char *path, size_t len, size_t cap) {
    if (json_is_string(v)) return memchr(json_string_value(v), 0, json_string_length(v)) != NULL;
    if (json_is_array(v)) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) {
            snprintf(path + len, cap - len, "[%zu]", i);
            if (find_nul(x, path, strlen(path), cap)) return 1;
        }
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            snprintf(path + len, cap - len, len ? ".%s" : "%s", k);
            if (find_nul(x, path, strlen(path), cap)) return 1;
        }
    }
    path[len] = 0;
    return 0;
}

hr_err *hr_json_reject_nul(const json_t *v) {
    char path[256] = "";
    if (!find_nul(v, path, 0, sizeof path)) return NULL;
    return hr_errf("%s contains a NUL character (\\u0000), which is not supported in text",
                   path[0] ? path : "the value");
}

static const json_t *get(const json_t *obj, const char *key) {
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_null(v) ? NULL : v;
}

/* A real that is a whole number an int64 holds (2.0e56 is whole but not one: converting
 * it would be undefined). */
static int whole_int64(double r) { return r >= -0x1p63 && r < 0x1p63 && r == (double)(int64_t)r; }

hr_err *hr_json_int(const json_t *obj, const char *key, int64_t def, const char *what,
                    int64_t *out) {
    const json_t *v = get(obj, key);
    *out = def;
    if (!v) return NULL;
    if (json_is_integer(v))
        *out = json_integer_value(v);
    else if (json_is_real(v) && whole_int64(json_real_value(v)))
        *out = (int64_t)json_real_value(v);
    else
        return hr_errf("%s: \"%s\" must be an integer", what, key);
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

/* Length of the valid UTF-8 sequence at s[0..n) (RFC 3629: no overlongs, surrogates or
 * code points above U+10FFFF), or 0 when it is invalid or truncated. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80             ? 1
                 : (c & 0xe0) == 0xc0 ? 2
                 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4
                                      : 0;
    if (!len || len > n) return 0;
    uint32_t cp = len == 1 ? c : c & (0xff >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

json_t *hr_json_string_lossy(const char *s, size_t n) {
    json_t *v = json_stringn(s, n);
    if (v) return v;
    char *buf = malloc(n * 3 + 1), *w = buf;
    if (!buf) return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (k) {
            memcpy(w, s + i, k);
            w += k;
            i += k;
        } else {
            memcpy(w, "\xef\xbf\xbd", 3);
            w += 3;
            i++;
        }
    }
    v = json_stringn(buf, (size_t)(w - buf));
    free(buf);
    return v;
}

hr_err *hr_json_set_new(json_t *obj, const char *key, json_t *v) {
    return json_object_set_new(obj, key, v) ? hr_err_oom() : NULL;
}

hr_err *hr_json_append_new(json_t *arr, json_t *v) {
    return json_array_append_new(arr, v) ? hr_err_oom() : NULL;
}

hr_err *hr_json_set_fields(json_t *obj, const hr_json_field *f, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= json_object_set_new(obj, f[i].key, f[i].value);
    return bad ? hr_err_oom() : NULL;
}

char *hr_json_dumps(const json_t *v, size_t flags) {
    /* json_dumpb's own writer cannot fail, so no key is dropped; it still fails (0) when
     * jansson's own allocations do (sorted keys, the cycle check) */
    size_t n = json_dumpb(v, NULL, 0, flags);
    char *s = n ? malloc(n + 1) : NULL;
    if (s && json_dumpb(v, s, n, flags) != n) {
        free(s);
        return NULL;
    }
    if (s) s[n] = 0;
    return s;
}

static json_t *copy(const json_t *v, int deep) {
    if (!v) return NULL;
    if (!json_is_object(v) && !json_is_array(v)) return json_deep_copy(v); /* a scalar */
    json_t *out = json_is_object(v) ? json_object() : json_array(), *x;
    const char *k;
    int bad = !out;
    if (!bad && json_is_object(v)) json_object_foreach((json_t *)v, k, x) {
            if ((bad = json_object_set_new(out, k, deep ? copy(x, 1) : json_incref(x)))) break;
        }
    for (size_t i = 0; !bad && json_is_array(v) && i < json_array_size(v); i++) {
        x = json_array_get(v, i);
        bad = json_array_append_new(out, deep ? copy(x, 1) : json_incref(x));
    }
    if (bad) json_decref(out);
    return bad ? NULL : out;
}

json_t *hr_json_copy(const json_t *v) { return copy(v, 0); }
json_t *hr_json_deep_copy(const json_t *v) { return copy(v, 1); }
