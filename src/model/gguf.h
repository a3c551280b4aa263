/* GGUF files (llama.cpp's container, versions 2 and 3): a validated, mmapped reader of the
 * header, the metadata key/values (every value type, arrays of scalars or strings) and the
 * tensor infos, with tensors exposed as hr_tensors in their file dtype pointing into the
 * mapping. Every count, length, offset and size is checked against the file before use,
 * so a corrupt or truncated file is an error that names what is wrong (docs/gguf.md). */
#ifndef HR_MODEL_GGUF_H
#define HR_MODEL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "tensor/tensor.h"

typedef enum {
    HR_GGUF_U8,
    HR_GGUF_I8,
    HR_GGUF_U16,
    HR_GGUF_I16,
    HR_GGUF_U32,
    HR_GGUF_I32,
    HR_GGUF_F32,
    HR_GGUF_BOOL,
    HR_GGUF_STRING,
    HR_GGUF_ARRAY,
    HR_GGUF_U64,
    HR_GGUF_I64,
    HR_GGUF_F64,
    HR_GGUF_TYPE_COUNT
} hr_gguf_type;

/* A string inside the file: not NUL-terminated. */
typedef struct {
    const char *p;
    size_t len;
} hr_gguf_str;

typedef struct {
    const char *key; /* NUL-terminated copy */
    hr_gguf_type type;
    /* scalars: the value widened (integers and bools in i or u, floats in f) */
    int64_t i;
    uint64_t u;
    double f;
    hr_gguf_str s; /* HR_GGUF_STRING */
    /* HR_GGUF_ARRAY: element type, count, the elements in the file (strings: see hr_gguf_arr_str)
     */
    hr_gguf_type arr_type;
    uint64_t arr_n;
    const uint8_t *arr_data;
    const uint64_t *str_off; /* string arrays: offset of element i from arr_data */
} hr_gguf_kv;

typedef struct hr_gguf hr_gguf;

/* Opens and validates path (mmapped; tensors point into the mapping). */
hr_err *hr_gguf_open(const char *path, hr_gguf **out);
/* The same over a buffer the caller keeps alive (fuzzing, tests); `what` names it in errors. */
hr_err *hr_gguf_parse(const void *data, size_t size, const char *what, hr_gguf **out);
void hr_gguf_close(hr_gguf *g);
/* 1 when path is a regular file that starts with the GGUF magic. */
int hr_is_gguf(const char *path);

uint32_t hr_gguf_version(const hr_gguf *g);
int hr_gguf_kv_count(const hr_gguf *g);
const hr_gguf_kv *hr_gguf_kv_at(const hr_gguf *g, int i);
/* The key/value named key, or NULL. */
const hr_gguf_kv *hr_gguf_find(const hr_gguf *g, const char *key);

/* Typed getters: an absent key gives def (get_str: NULL); a present key of the wrong type
 * is an error naming it. get_int accepts any integer or bool type, get_num also floats. */
hr_err *hr_gguf_get_int(const hr_gguf *g, const char *key, int64_t def, int64_t *out);
hr_err *hr_gguf_get_num(const hr_gguf *g, const char *key, double def, double *out);
hr_err *hr_gguf_get_bool(const hr_gguf *g, const char *key, int def, int *out);
/* *out is a NUL-terminated copy owned by g. */
hr_err *hr_gguf_get_str(const hr_gguf *g, const char *key, const char **out);
/* The array named key with elements of type `type` (NULL when absent); an array of another
 * element type is an error. */
hr_err *hr_gguf_get_arr(const hr_gguf *g, const char *key, hr_gguf_type type,
                        const hr_gguf_kv **out);

/* Element i (< arr_n) of an array. */
hr_gguf_str hr_gguf_arr_str(const hr_gguf_kv *kv, uint64_t i);
int64_t hr_gguf_arr_int(const hr_gguf_kv *kv, uint64_t i);
double hr_gguf_arr_num(const hr_gguf_kv *kv, uint64_t i);

int hr_gguf_tensor_count(const hr_gguf *g);
const char *hr_gguf_tensor_name(const hr_gguf *g, int i);
const hr_tensor *hr_gguf_tensor_at(const hr_gguf *g, int i);
/* The tensor named name, or NULL. Shapes are row-major (GGUF's ne reversed). */
const hr_tensor *hr_gguf_tensor(const hr_gguf *g, const char *name);
/* Bytes of tensor data. */
size_t hr_gguf_data_bytes(const hr_gguf *g);

/* ggml type id <-> hr_dtype (-1 / NULL when ggml has no such type or hearth does not read it). */
int hr_gguf_ggml_type(hr_dtype t);
const char *hr_gguf_ggml_type_name(uint32_t ggml_type);

#endif
