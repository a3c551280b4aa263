/* libFuzzer target: the input is a JSON document taken as a JSON Schema (any bytes). The
 * schema compiler either refuses it with a message or emits GBNF, which the grammar
 * compiler must then accept or refuse with a message (never crash, never leak); a
 * compiled grammar is run over the input's own bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "base/json.h"
#include "grammar/grammar.h"
#include "grammar/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    json_t *s;
    hr_err *e = hr_json_load_buf("fuzz", (const char *)data, size, &s);
    if (e) {
        hr_err_free(e);
        return 0;
    }
    hr_schema_opts o = {.compact = size & 1, .max_ws = (int)(size % 7)};
    char *text;
    size_t len;
    e = hr_schema_to_gbnf(s, &o, &text, &len);
    json_decref(s);
    if (e) {
        if (!hr_err_msg(e)[0]) abort();
        hr_err_free(e);
        return 0;
    }
    hr_grammar *g;
    e = hr_grammar_compile(text, len, &g);
    free(text);
    if (e) {
        if (!hr_err_msg(e)[0]) abort();
        hr_err_free(e);
        return 0;
    }
    hr_matcher *m;
    if (!hr_matcher_create(g, NULL, &m)) {
        size_t ok;
        hr_matcher_accept_bytes(m, (const char *)data, size, &ok);
        if (ok > size) abort();
        hr_matcher_free(m);
    }
    hr_grammar_free(g);
    return 0;
}
