/* Seed corpus for fuzz_gbnf: writes one file per grammar into the folder argv[1] (run by
 * tests/fuzz/run.sh before the fuzzer): llama.cpp-style grammars with recursion, nullable
 * rules, classes, repetitions, comments, /regex/ terminals, `&` and `~`. */
#include "seed.h"

static const char *const SEEDS[] = {
    ("root ::= object\nvalue ::= object | array | string | \"null\"\nobject ::= \"{\" ws (string "
     "\":\" ws value (\",\" ws string \":\" ws value)*)? \"}\" ws\n"
     "array ::= \"[\" ws (value (\",\" ws value)*)? \"]\" ws\nstring ::= \"\\\"\" ([^\"\\\\] | "
     "\"\\\\\" [\"\\\\nt])* \"\\\"\" ws\nws ::= [ \\t\\n]{0,4}\n"),
    "root ::= e\ne ::= e \"+\" t | t\nt ::= t \"*\" f | f\nf ::= [0-9]+ | \"(\" e \")\"\n",
    "# comment\nroot ::= (item \"\\n\")+\nitem ::= \"- \" [^\\r\\n\\x0b\\u2028]+\n",
    "root ::= \"id=\" /[a-z][a-z0-9_]*/ (\",\" root)?\n",
    "root ::= a a\na ::= \"x\"? | a \"y\"{1,3}\n",
    "root ::= (\n  \"a\" |\n  \"b\" root\n) .\n",
    "root ::= w (\",\" w)*\nw ::= [a-z0-9]+ & /.{1,4}/ & /[^5]*/ | \"(\" root \")\"\n",
    "root ::= \"<\" (/[a-z]*/ & ~/.*bad.*/ & ~~\"x\"?) \">\"\n",
};

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    return seed_strings(argv[1], SEEDS, sizeof SEEDS / sizeof SEEDS[0]);
}
