/* hearth convert: validates the source, plans the bits (plain, mixed or target), writes the
 * MLX checkpoint; see convert.h. */
#include "engine/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "engine/quant_sens.h"
#include "model/mlx_write.h"
#include "tensor/mlx_quant.h"
#include "tokenizer/tokenizer.h"

enum { CALIB_MAX = 256, CALIB_RANDOM = 64 };

hr_err *hr_convert_check_opts(const hr_convert_opts *o) {
    const char *recipes[] = {"mixed_2_6", "mixed_3_4", "mixed_3_6", "mixed_4_6"};
    int known = !o->mixed;
    for (int i = 0; i < 4 && !known; i++)
        known = strcmp(o->mixed, recipes[i]) == 0;
    if (!known)
        return hr_errf("--mixed %s: the recipes are mixed_2_6, mixed_3_4, mixed_3_6, mixed_4_6",
                       o->mixed);
    if (hr_mlx_dtype(o->bits) == HR_DTYPE_COUNT)
        return hr_errf("--bits %d: must be 2, 3, 4, 5, 6 or 8", o->bits);
    if (!hr_mlx_group_ok(o->group_size))
        return hr_errf("--group-size %d: must be 32, 64 or 128", o->group_size);
    if (o->mixed && o->target_bpw) return hr_errf("--mixed and --target-bpw exclude each other");
    if (o->target_bpw && (o->target_bpw < 2 || o->target_bpw > 9))
        return hr_errf("--target-bpw %g: must be between 2 and 9", o->target_bpw);
    return NULL;
}

/* Float tensors only (other dtypes are copied as they are), and no quantized checkpoint. */
static hr_err *check_source(const hr_safetensors *st, const json_t *config) {
    if (json_object_get(config, "quantization") || json_object_get(config, "quantization_config"))
        return hr_errf("config.json: the checkpoint is already quantized");
    for (int i = 0; i < hr_st_count(st); i++) {
        const hr_tensor *t = hr_st_get(st, hr_st_name(st, i));
        if (hr_dtype_get(t->dtype)->quantized)
            return hr_errf("tensor \"%s\": %s; convert reads bf16, f16 and f32 checkpoints",
                           hr_st_name(st, i), hr_dtype_name(t->dtype));
    }
    return NULL;
}

/* The calibration tokens: the text file through the model's tokenizer, or fixed
 * pseudo-random ids when there is no file. */
static hr_err *calib_tokens(const hr_convert_opts *o, int vocab, int32_t **tok, int *n) {
    if (!o->calib) {
        *tok = malloc(sizeof(int32_t) * CALIB_RANDOM);
        if (!*tok) return hr_err_oom();
        uint64_t s = 0x9e3779b97f4a7c15u;
        for (int i = 0; i < CALIB_RANDOM; i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            (*tok)[i] = (int32_t)((s >> 33) % (uint64_t)vocab);
        }
        *n = CALIB_RANDOM;
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    hr_tokenizer *tk = NULL;
    HR_TRY(hr_read_file(o->calib, &text, &len));
    hr_err *err = hr_tokenizer_load(o->model, &tk);
    if (!err) err = hr_tokenizer_encode(tk, text, len, 1, tok, n);
    hr_tokenizer_free(tk);
    free(text);
    if (!err && *n < 2) err = hr_errf("--calib %s: fewer than 2 tokens", o->calib);
    if (*n > CALIB_MAX) *n = CALIB_MAX;
    return err;
}

static hr_err *plan_target(const hr_convert_opts *o, hr_qplan *p) {
    hr_backend *be = NULL;
    hr_model *m = NULL;
    int32_t *tok = NULL;
    int n = 0;
    double *sens = malloc(sizeof(double) * (size_t)(p->n + 1) * HR_QPLAN_LEVELS);
    hr_err *err = sens ? hr_backend_cpu_create(&(hr_cpu_options){.n_threads = o->n_threads}, &be)
                       : hr_err_oom();
    if (!err) err = hr_model_load(o->model, be, &m);
    if (!err) err = calib_tokens(o, hr_model_cfg(m)->vocab, &tok, &n);
    if (!err) err = hr_quant_sensitivity(m, p, tok, n, o->progress, sens);
    if (!err) err = hr_qplan_target(p, o->target_bpw, sens);
    hr_model_free(m);
    hr_backend_destroy(be);
    free(tok);
    free(sens);
    return err;
}

static hr_err *plan(const hr_convert_opts *o, const hr_safetensors *st, const hr_model_config *c,
                    hr_qplan *p) {
    HR_TRY(hr_qplan_build(st, o->bits, o->group_size, o->keep, o->n_keep, p));
    if (o->mixed) return hr_qplan_mixed(p, o->mixed, c->n_layers, c->tie_embeddings);
    if (o->target_bpw) return plan_target(o, p);
    return NULL;
}

static hr_err *convert(const hr_convert_opts *o, const hr_safetensors *st, const json_t *config,
                       hr_convert_stats *stats) {
    hr_model_config c;
    HR_TRY(hr_config_load(o->model, &c));
    HR_TRY(check_source(st, config));
    hr_qplan p = {0};
    hr_err *err = plan(o, st, &c, &p);
    hr_mlx_write_opts w = {o->bits, o->group_size, o->progress};
    if (!err) err = hr_mlx_write(o->model, st, config, &p, &w, o->out, &stats->bytes_after);
    stats->bpw = hr_qplan_bpw(&p);
    stats->n_tensors = p.n;
    for (int i = 0; i < p.n; i++)
        stats->n_quantized += p.e[i].bits > 0;
    hr_qplan_free(&p);
    return err;
}

hr_err *hr_convert(const hr_convert_opts *o, hr_convert_stats *stats) {
    *stats = (hr_convert_stats){0};
    HR_TRY(hr_convert_check_opts(o));
    char *cfg_path = hr_path_join(o->model, "config.json");
    if (!cfg_path) return hr_err_oom();
    json_t *config = NULL;
    hr_safetensors *st = NULL;
    hr_err *err = hr_json_load_file(cfg_path, &config);
    free(cfg_path);
    if (!err) err = hr_st_open(o->model, &st);
    if (!err) {
        stats->bytes_before = hr_st_data_bytes(st);
        err = convert(o, st, config, stats);
    }
    hr_st_close(st);
    json_decref(config);
    return err ? hr_err_wrap(err, "%s: ", o->model) : NULL;
}
