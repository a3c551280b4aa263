/* hr_weights over a checkpoint directory (config.json + safetensors), and the dispatch
 * between that and a GGUF file. */
#include "model/weights.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "base/file.h"
#include "model/gguf.h"
#include "model/safetensors.h"

static const hr_tensor *st_get(const void *impl, const char *name) { return hr_st_get(impl, name); }
static size_t st_bytes(const void *impl) { return hr_st_data_bytes(impl); }
static hr_dtype st_main(const void *impl) { return hr_st_main_dtype(impl); }
static void st_close(void *impl) { hr_st_close(impl); }

static const hr_weights_vt st_vt = {st_get, st_bytes, st_main, st_close};

static int is_dir(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 && S_ISDIR(s.st_mode);
}

static hr_err *open_dir(const char *dir, hr_model_config *cfg, hr_weights **out) {
    HR_TRY(hr_config_load(dir, cfg));
    hr_safetensors *st;
    HR_TRY(hr_st_open(dir, &st));
    hr_weights *w = malloc(sizeof *w);
    if (!w) {
        hr_st_close(st);
        return hr_err_oom();
    }
    *w = (hr_weights){&st_vt, st};
    *out = w;
    return NULL;
}

hr_err *hr_weights_open(const char *path, hr_model_config *cfg, hr_weights **out) {
    *out = NULL;
    if (hr_is_gguf(path)) return hr_gguf_weights_open(path, cfg, out);
    if (is_dir(path)) return open_dir(path, cfg, out);
    if (!hr_file_exists(path))
        return hr_errf("%s: no such file or directory (want a model directory with config.json, or "
                       "a .gguf file)",
                       path);
    return hr_errf("%s is neither a model directory (config.json + safetensors) nor a GGUF file",
                   path);
}

void hr_weights_close(hr_weights *w) {
    if (!w) return;
    w->vt->close(w->impl);
    free(w);
}

const hr_tensor *hr_weights_get(const hr_weights *w, const char *name) {
    return w->vt->get(w->impl, name);
}
size_t hr_weights_data_bytes(const hr_weights *w) { return w->vt->data_bytes(w->impl); }
hr_dtype hr_weights_main_dtype(const hr_weights *w) { return w->vt->main_dtype(w->impl); }
