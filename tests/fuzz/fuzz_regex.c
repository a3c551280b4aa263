/* libFuzzer target: the input is a regular expression (any bytes). Compiling it either
 * fails with a message or gives a grammar; then the matcher runs over a few strings made
 * from the input (the pattern's own bytes, its halves), rejected runs must leave the state
 * unchanged, and rollback must restore the start state. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

static void run_bytes(const hr_grammar *g, const uint8_t *s, size_t n) {
    hr_matcher *m;
    hr_err *e = hr_matcher_create(g, NULL, &m);
    if (e) {
        hr_err_free(e);
        return;
    }
    int acc0 = hr_matcher_is_accepting(m);
    size_t ok;
    for (size_t i = 0; i < n; i++)
        if (!hr_matcher_accept_bytes(m, (const char *)s + i, 1, &ok) && ok != 0) abort();
    hr_matcher_rollback(m, (int)n);
    if (hr_matcher_is_accepting(m) != acc0) abort();
    if (!hr_matcher_accept_bytes(m, (const char *)s, n, &ok) && ok > n) abort();
    hr_matcher_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    hr_grammar *g;
    hr_err *e = hr_grammar_compile_regex((const char *)data, size, &g);
    if (e) {
        if (!hr_err_msg(e)[0]) abort();
        hr_err_free(e);
        return 0;
    }
    run_bytes(g, data, size);
    run_bytes(g, data, size / 2);
    run_bytes(g, data + size / 2, size - size / 2);
    hr_grammar_free(g);
    return 0;
}
