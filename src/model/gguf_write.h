/* Writing GGUF files (version 3): an in-memory builder of metadata and tensors
 * (gguf_write.c), and a converter of a checkpoint directory to an F16 GGUF file that
 * applies llama.cpp's convert_hf_to_gguf.py conventions (gguf_convert.c). Tests use both:
 * the converter to check the reader undoes those conventions, the builder to craft
 * corrupt files. */
#ifndef HR_MODEL_GGUF_WRITE_H
#define HR_MODEL_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "model/gguf.h"

typedef struct hr_gguf_writer hr_gguf_writer;

hr_err *hr_gguf_writer_new(hr_gguf_writer **out);
void hr_gguf_writer_free(hr_gguf_writer *w);

hr_err *hr_gguf_put_str(hr_gguf_writer *w, const char *key, const char *v);
/* A scalar of type t (not string/array) from the bytes at v. */
hr_err *hr_gguf_put(hr_gguf_writer *w, const char *key, hr_gguf_type t, const void *v);
hr_err *hr_gguf_put_u32(hr_gguf_writer *w, const char *key, uint32_t v);
hr_err *hr_gguf_put_f32(hr_gguf_writer *w, const char *key, float v);
/* An array of n scalars of type t, or (t = HR_GGUF_STRING, elems a const char **) strings. */
hr_err *hr_gguf_put_arr(hr_gguf_writer *w, const char *key, hr_gguf_type t, const void *elems,
                        uint64_t n);
/* A tensor (row-major shape; written as GGUF's reversed ne); data is copied. */
hr_err *hr_gguf_put_tensor(hr_gguf_writer *w, const char *name, hr_dtype dt, int ndim,
                           const int64_t *shape, const void *data);

/* The file's bytes (caller frees). */
hr_err *hr_gguf_writer_bytes(const hr_gguf_writer *w, uint8_t **out, size_t *len);
hr_err *hr_gguf_writer_save(const hr_gguf_writer *w, const char *path);

/* dir (config.json + safetensors) -> path: llama, mistral, qwen2, qwen3, qwen3_moe, gemma3. */
hr_err *hr_gguf_convert(const char *dir, const char *path);
/* The same with 2-D tensors whose rows fill whole blocks quantized to `matrices` (F16: none;
 * a type hr_quant_can_write takes: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1), like llama-quantize of the
 * F16 file without its per-tensor recipes. */
hr_err *hr_gguf_convert_as(const char *dir, const char *path, hr_dtype matrices);

#endif
