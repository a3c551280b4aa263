/* The prefix cache's model fingerprint and the tokenizer hash (fingerprint.h). The config
 * struct is hashed as bytes: hr_config_parse zeroes it first, so its padding is zero too. */
#include "engine/fingerprint.h"

#include <string.h>

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t hr_engine_fingerprint(const hr_model *m, hr_dtype kv_dtype, int compute) {
    uint64_t h = fnv(1469598103934665603ull, hr_model_cfg(m), sizeof(hr_model_config));
    uint64_t v[] = {hr_model_weight_hash(m), (uint64_t)hr_model_weight_bytes(m), (uint64_t)kv_dtype,
                    (uint64_t)compute};
    h = fnv(h, v, sizeof v);
    const char *be = hr_model_backend(m)->vt->name;
    return fnv(h, be, strlen(be));
}

uint64_t hr_tokenizer_hash(const hr_tokenizer *tok) {
    if (!tok) return 0;
    int n = hr_tokenizer_vocab_size(tok);
    uint64_t h = fnv(1469598103934665603ull, &n, sizeof n);
    for (int32_t id = 0; id < n; id++) {
        const char *s = hr_tokenizer_token_str(tok, id);
        h = s ? fnv(h, s, strlen(s) + 1) : fnv(h, &id, sizeof id);
    }
    return h;
}
