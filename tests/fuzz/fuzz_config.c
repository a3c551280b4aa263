/* libFuzzer target: parses the input as a config.json (every family: the model_type picks
 * it) and, when it is accepted, walks what the loader derives from it: for every layer
 * each tensor of the layout that the layer has, and its shape in config dimensions (rows
 * times columns must not overflow). Must never crash, leak or hit undefined behaviour.
 * Seeds: seed_config.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/layout.h"

static volatile int64_t sink;

static void walk_layout(const hr_model_config *c) {
    for (int l = 0; l < c->n_layers && l < HR_MAX_LAYERS; l++)
        for (int i = 0; i < hr_layout_count(); i++) {
            const hr_layer_tensor *t = hr_layout_tensor(i);
            if (!hr_layer_has(c, t, l)) continue;
            int64_t rows = hr_layer_dim_value(c, l, t->rows);
            int64_t cols = t->cols == HR_DIM_NONE ? 1 : hr_layer_dim_value(c, l, t->cols);
            sink += rows + cols;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1); /* NUL-terminated; an embedded NUL ends the text early */
    hr_model_config *c = malloc(sizeof *c);
    if (text && c) {
        memcpy(text, data, size);
        text[size] = 0;
        memset(c, 0, sizeof *c);
        hr_err *e = hr_config_parse("config.json", text, c);
        if (!e) walk_layout(c);
        hr_err_free(e);
    }
    free(c);
    free(text);
    return 0;
}
