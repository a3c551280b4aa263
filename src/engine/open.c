/* hr_model_open: backend, weights and tokenizer of a model directory or GGUF file; see open.h. */
#include "engine/open.h"

#include <string.h>

#include "base/log.h"
#include "engine/tok_open.h"
#include "model/weights.h"

/* The dtype holding most of the weight bytes (opened first, so a path that is not a model
 * says so as hr_model_load would). */
static hr_err *main_dtype(const char *dir, hr_dtype *out) {
    hr_model_config c;
    hr_weights *w;
    HR_TRY(hr_weights_open(dir, &c, &w));
    *out = hr_weights_main_dtype(w);
    hr_weights_close(w);
    return NULL;
}

/* The device for these weights (hr_backend_device_for) and the numerics on it. */
static hr_err *choose(const char *dir, const hr_open_options *o, const char **device,
                      hr_numerics *out) {
    hr_dtype weights;
    HR_TRY(main_dtype(dir, &weights));
    const char *dev = hr_backend_device_for(o->device, weights);
    if (dev != o->device && hr_backend_cuda_built())
        HR_INFO("%s weights run on the CPU backend (--device auto)",
                weights == HR_U32 ? "MLX-quantized" : hr_dtype_name(weights));
    *device = dev;
    hr_backend_caps caps;
    HR_TRY(hr_backend_caps_of(dev, &caps));
    return hr_numerics_choose(&o->numerics, weights, &caps, out);
}

hr_err *hr_model_open(const char *dir, const hr_open_options *o, hr_opened_model *out) {
    *out = (hr_opened_model){0};
    int has_tok = !o->no_tokenizer && hr_tokenizer_available(dir);
    if (o->need_tokenizer && !has_tok)
        return hr_errf("%s has no tokenizer (tokenizer.json, or GGUF tokenizer metadata)", dir);
    const char *device;
    HR_TRY(choose(dir, o, &device, &out->numerics));
    hr_backend_options bo = {.device = device,
                             .cpu = {.n_threads = o->n_threads,
                                     .compute_bf16 = out->numerics.compute_bf16,
                                     .weights_in_place = o->weights_in_place}};
    hr_err *err = hr_backend_create(&bo, &out->be);
    if (!err) err = hr_model_load(dir, out->be, &out->model);
    if (!err) hr_model_set_kv_dtype(out->model, out->numerics.kv);
    if (!err && has_tok) err = hr_tokenizer_open(dir, &out->tok);
    if (err) hr_model_close(out);
    return err;
}

void hr_model_close(hr_opened_model *m) {
    hr_tokenizer_free(m->tok);
    hr_model_free(m->model);
    hr_backend_destroy(m->be);
    *m = (hr_opened_model){0};
}
