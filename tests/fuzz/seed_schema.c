/* Seed corpus for fuzz_schema: writes one JSON Schema per file into the folder argv[1]
 * (run by tests/fuzz/run.sh before the fuzzer): objects, arrays, refs with recursion,
 * combinators, numbers with bounds, patterns and formats. */
#include "seed.h"

static const char *const SEEDS[] = {
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":"
    "120},"
    "\"b\":{\"type\":\"string\",\"maxLength\":4}},\"required\":[\"a\"],\"additionalProperties\":"
    "false}",
    "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"k\":{\"$ref\":\"#/$defs/"
    "n\"}}}},\"$ref\":\"#/$defs/n\"}",
    "{\"type\":\"array\",\"prefixItems\":[{\"const\":1},{\"enum\":[\"x\",null]}],\"items\":{"
    "\"type\":\"number\","
    "\"exclusiveMaximum\":3},\"minItems\":1,\"maxItems\":4}",
    "{\"anyOf\":[{\"type\":\"string\",\"pattern\":\"^[a-f0-9]+$\"},{\"type\":\"string\",\"format\":"
    "\"date-time\"}],"
    "\"oneOf\":[{\"minLength\":1}]}",
    "{\"allOf\":[{\"properties\":{\"x\":{\"type\":\"boolean\"}}},{\"required\":[\"x\"]}],\"not\":{"
    "\"required\":[\"y\"]}}",
    "{\"type\":\"object\",\"patternProperties\":{\"^x-\":{}},\"additionalProperties\":false,"
    "\"minProperties\":1}",
};

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    return seed_strings(argv[1], SEEDS, sizeof SEEDS / sizeof SEEDS[0]);
}
