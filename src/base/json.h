/* JSON through jansson, with loaders that turn parse errors into hr_err (file, line,
 * column) and typed getters that say which key had the wrong type. */
#ifndef HR_BASE_JSON_H
#define HR_BASE_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"

/* A model's JSON files (config.json, tokenizer.json, tokenizer_config.json, ...) must be
 * regular files of at most this many bytes (the largest real tokenizer.json is ~35 MB). */
#define HR_JSON_FILE_MAX ((size_t)256 << 20)

hr_err *hr_json_load_file(const char *path, json_t **out);
/* With jansson decoding flags (e.g. JSON_DECODE_INT_AS_REAL for tokenizer_config.json). */
hr_err *hr_json_load_file_flags(const char *path, size_t flags, json_t **out);
hr_err *hr_json_load_buf(const char *what, const char *buf, size_t len, json_t **out);

/* An error naming the first string under v that holds a NUL byte ("messages[0].content
 * contains a NUL character ..."), or NULL. Prompts and templates are C strings, so a NUL
 * would silently cut them short. */
hr_err *hr_json_reject_nul(const json_t *v);

/* Getters: a missing key (or JSON null) leaves *out at `def` and succeeds; a present key
 * of the wrong type is an error naming `what` and the key. */
hr_err *hr_json_int(const json_t *obj, const char *key, int64_t def, const char *what,
                    int64_t *out);
hr_err *hr_json_num(const json_t *obj, const char *key, double def, const char *what, double *out);
hr_err *hr_json_bool(const json_t *obj, const char *key, int def, const char *what, int *out);
/* *out points into obj (valid while obj lives). */
hr_err *hr_json_str(const json_t *obj, const char *key, const char *def, const char *what,
                    const char **out);

/* A JSON string of n bytes of text that may not be valid UTF-8 (model output, byte
 * tokens): each invalid or truncated sequence becomes U+FFFD. Never NULL but on OOM. */
json_t *hr_json_string_lossy(const char *s, size_t n);
/* json_object_set_new and json_array_append_new that say when they fail: v is NULL (making
 * it ran out of memory) or jansson could not grow the container. v is consumed either way,
 * so a chain of builders needs no cleanup of its own but the container's. */
hr_err *hr_json_set_new(json_t *obj, const char *key, json_t *v);
hr_err *hr_json_append_new(json_t *arr, json_t *v);
/* Sets every field of f[0..n) on obj (each value consumed, as hr_json_set_new); out of
 * memory when any of them failed (the others are set). */
typedef struct {
    const char *key;
    json_t *value;
} hr_json_field;
hr_err *hr_json_set_fields(json_t *obj, const hr_json_field *f, size_t n);
/* json_dumps that returns NULL when memory runs out anywhere in the dump: jansson 2.14's
 * json_dumps ignores a failed write of an object key and returns the text without it
 * (found by tests/unit/test_alloc_fail.c), so this one measures with json_dumpb, then
 * writes into a buffer of that size. The result is malloc'd. */
char *hr_json_dumps(const json_t *v, size_t flags);
/* json_copy and json_deep_copy that return NULL when memory runs out: jansson 2.14's copies
 * ignore a failed set or append and return the value without it (found by
 * tests/unit/test_alloc_fail.c). The shallow one shares the members, as json_copy. */
json_t *hr_json_copy(const json_t *v);
json_t *hr_json_deep_copy(const json_t *v);

#endif
