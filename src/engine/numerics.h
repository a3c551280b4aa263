/* The numerics of a run, chosen in one place: the model's weight dtype x what the backend
 * can store (hr_backend_caps) x the request (--compute, --kv-dtype, --exact / fast) give
 * the product mode and the KV cache's dtype. */
#ifndef HR_ENGINE_NUMERICS_H
#define HR_ENGINE_NUMERICS_H

#include "backend/backend.h"

typedef struct {
    int compute;  /* hr_compute (hearth.h) */
    int kv_dtype; /* hr_kv_type */
    int fast;     /* 1: AUTO picks bf16 products and KV for bf16 weights */
} hr_numerics_req;

typedef struct {
    int compute_bf16; /* bf16 products (the CPU backend's compute_bf16) */
    hr_dtype kv;      /* KV cache dtype */
} hr_numerics;

/* Explicit choices are kept (a KV dtype the backend cannot store is an error that says
 * which it can); AUTO: with fast and bf16 weights, bf16 products and the backend's fast KV
 * (bf16), else f32 products and its exact KV (f32 on the CPU, bf16 on CUDA). */
hr_err *hr_numerics_choose(const hr_numerics_req *req, hr_dtype weights,
                           const hr_backend_caps *caps, hr_numerics *out);

/* hr_kv_type <-> hr_dtype and the flag spelling ("f32", "bf16", "f16", "q8_0"). */
hr_dtype hr_kv_type_dtype(int kv_type);
int hr_kv_type_of(hr_dtype dtype);
const char *hr_kv_dtype_flag(hr_dtype dtype);
/* The hr_kv_type named by a --kv-dtype value; HR_KV_AUTO for an unknown name. */
int hr_kv_type_parse(const char *name);

#endif
