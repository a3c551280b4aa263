/* Seed corpus for fuzz_regex: writes one file per pattern into the folder argv[1] (run by
 * tests/fuzz/run.sh before the fuzzer): JSON Schema style patterns covering classes,
 * escapes, groups, quantifiers, anchors and UTF-8. */
#include "seed.h"

static const char *const SEEDS[] = {
    "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$",
    "\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2})?Z)?",
    "(?:a|bc)*?d+",
    "[^\\s\"\\\\]{1,8}",
    "\\u00e9|\\u{1F600}|\\x41",
    "(ab|a)(c|bcd)(d*)",
    ".*[€-₿]\\.\\/",
    "-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?",
    "[\\w\\-]{0,3}\\W\\D\\S",
    "a{2,}b{0,1}c{3}",
};

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    return seed_strings(argv[1], SEEDS, sizeof SEEDS / sizeof SEEDS[0]);
}
