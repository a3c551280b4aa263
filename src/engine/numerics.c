/* The one choice of product mode and KV dtype (see numerics.h); docs/engine.md "Numerics". */
#include "engine/numerics.h"

#include <string.h>

#include "hearth/hearth.h"

static const struct {
    const char *name;
    hr_dtype dtype;
} kv_types[] = {[HR_KV_F32] = {"f32", HR_F32},
                [HR_KV_BF16] = {"bf16", HR_BF16},
                [HR_KV_F16] = {"f16", HR_F16},
                [HR_KV_Q8_0] = {"q8_0", HR_Q8_0},
                [HR_KV_Q4_0] = {"q4_0", HR_Q4_0}};
enum { N_KV_TYPES = sizeof kv_types / sizeof *kv_types };

hr_dtype hr_kv_type_dtype(int kv_type) {
    return kv_type > HR_KV_AUTO && kv_type < N_KV_TYPES ? kv_types[kv_type].dtype : HR_F32;
}

int hr_kv_type_of(hr_dtype dtype) {
    for (int t = 1; t < N_KV_TYPES; t++)
        if (kv_types[t].dtype == dtype) return t;
    return HR_KV_AUTO;
}

const char *hr_kv_dtype_flag(hr_dtype dtype) {
    int t = hr_kv_type_of(dtype);
    return t ? kv_types[t].name : hr_dtype_name(dtype);
}

int hr_kv_type_parse(const char *name) {
    for (int t = 1; name && t < N_KV_TYPES; t++)
        if (!strcmp(name, kv_types[t].name)) return t;
    return HR_KV_AUTO;
}

/* "f32, bf16" etc.: the KV dtypes in caps, for an error message. */
static void caps_list(const hr_backend_caps *caps, char *buf, size_t n) {
    buf[0] = 0;
    for (int t = 1; t < N_KV_TYPES; t++)
        if (caps->kv_dtypes & (1u << kv_types[t].dtype)) {
            if (buf[0]) strncat(buf, ", ", n - strlen(buf) - 1);
            strncat(buf, kv_types[t].name, n - strlen(buf) - 1);
        }
}

hr_err *hr_numerics_choose(const hr_numerics_req *req, hr_dtype weights,
                           const hr_backend_caps *caps, hr_numerics *out) {
    int fast = req->fast &&
               (weights == HR_BF16 || (caps->quantized_fast && hr_dtype_get(weights)->quantized));
    out->compute_bf16 =
        req->compute == HR_COMPUTE_BF16 || (req->compute == HR_COMPUTE_AUTO && fast);
    out->kv = req->kv_dtype != HR_KV_AUTO ? hr_kv_type_dtype(req->kv_dtype)
              : fast                      ? caps->kv_fast
                                          : caps->kv_exact;
    if (caps->kv_dtypes & (1u << out->kv)) return NULL;
    char list[64];
    caps_list(caps, list, sizeof list);
    return hr_errf("this backend stores the KV cache as %s only, not %s", list,
                   hr_kv_dtype_flag(out->kv));
}
