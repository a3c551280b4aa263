/* The byte sizes of a paged KV store (see backend.h): one head vector, one position over all
 * layers, one recurrent-state slot, and the whole store. The one formula every KV count in
 * hearth uses; test_backend checks kv_create allocates exactly hr_kv_store_bytes. */
#include "backend/backend.h"

static int layer_hd(const hr_kv_store *kv, int l) {
    return kv->layer_head_dim ? kv->layer_head_dim[l] : kv->head_dim;
}

size_t hr_kv_row_bytes(hr_dtype dtype, int hd) { return hr_dtype_bytes(dtype, hd); }

size_t hr_kv_token_bytes(const hr_kv_store *kv) {
    size_t n = 0;
    for (int l = 0; l < kv->n_layers; l++)
        n += 2 * (size_t)kv->n_kv_heads * hr_kv_row_bytes(kv->dtype, layer_hd(kv, l));
    return n;
}

size_t hr_kv_state_bytes(const hr_kv_store *kv) {
    return (size_t)kv->n_state_layers * (size_t)(kv->conv_floats + kv->delta_floats) *
           sizeof(float);
}

size_t hr_kv_store_bytes(const hr_kv_store *kv) {
    size_t positions = (size_t)kv->n_blocks * (size_t)kv->block_size;
    size_t states = (size_t)kv->n_state_slots + (size_t)kv->n_snapshots;
    return positions * hr_kv_token_bytes(kv) +
           (kv->n_state_layers ? states : 0) * hr_kv_state_bytes(kv);
}

hr_err *hr_kv_dtype_check(const hr_kv_store *kv) {
    int block = hr_dtype_get(kv->dtype)->block;
    for (int l = 0; l < kv->n_layers; l++)
        if (layer_hd(kv, l) % block)
            return hr_errf("KV dtype %s stores head vectors in blocks of %d, and KV layer %d has "
                           "head_dim %d; choose --kv-dtype f32, bf16 or f16 for this model",
                           hr_dtype_name(kv->dtype), block, l, layer_hd(kv, l));
    return NULL;
}
