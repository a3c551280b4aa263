# The hearth binary's top level: help, unknown verbs, log levels.
. "$(dirname "$0")/lib.sh"
expect_rc help 0 "usage: hearth" "$H" --help
expect_rc no_verb 2 "usage: hearth" "$H"
expect_rc unknown_verb 2 "unknown verb" "$H" frobnicate
expect_rc bad_log_level 2 "unknown --log-level" "$H" --log-level loud --help
summary
