/* safetensors files: a reader over one file or a sharded set (model.safetensors.index.json)
 * that keeps tensors mmapped in their file dtype, with every header field validated
 * against the file, and a streaming writer (atomic) for checkpoints and logits dumps. */
#ifndef HR_MODEL_SAFETENSORS_H
#define HR_MODEL_SAFETENSORS_H

#include "base/err.h"
#include "tensor/tensor.h"

typedef struct hr_safetensors hr_safetensors;

/* path: a .safetensors file, a model.safetensors.index.json, or a directory holding
 * either (model.safetensors, or the index and its shards). */
hr_err *hr_st_open(const char *path, hr_safetensors **out);
void hr_st_close(hr_safetensors *st);

/* The tensor named `name`, or NULL. Its data points into the mapping. */
const hr_tensor *hr_st_get(const hr_safetensors *st, const char *name);
int hr_st_count(const hr_safetensors *st);
const char *hr_st_name(const hr_safetensors *st, int i);
/* Total bytes of tensor data. */
size_t hr_st_data_bytes(const hr_safetensors *st);
/* The dtype holding most of the tensor bytes (a checkpoint's weight dtype). */
hr_dtype hr_st_main_dtype(const hr_safetensors *st);

/* Writer: the header is written from the specs first, then fill() supplies each
 * tensor's bytes in order (it may be called several times per tensor with consecutive
 * chunks). */
typedef struct {
    const char *name;
    hr_dtype dtype;
    int ndim;
    int64_t shape[HR_MAX_DIMS];
} hr_st_spec;

typedef hr_err *(*hr_st_fill_fn)(void *ctx, int index, size_t offset, void *buf, size_t len);

hr_err *hr_st_write(const char *path, const hr_st_spec *specs, int n, hr_st_fill_fn fill,
                    void *ctx);

/* The safetensors dtype name of a plain dtype ("BF16"), or NULL for block formats. */
const char *hr_st_dtype_name(hr_dtype t);

#endif
