# Every C and CUDA source of the repository is formatted by its .clang-format (run
# `clang-format -i FILE`; scripts/setup-deps.sh installs Debian 12's clang-format 14, the
# version CI formats with). A file with a formatting difference fails, named; the check
# itself is checked on a file with a deliberate difference.
. "$(dirname "$0")/lib.sh"
expect_rc clang_format_present 0 "version" clang-format --version
printf 'int  f( void ){return 1;}\n' > "$T/bad.c"
expect_rc clang_format_catches 1 "code should be clang-formatted" clang-format --dry-run -Werror --style=file:.clang-format "$T/bad.c"
files=$(git ls-files '*.c' '*.h' '*.cu')
expect_rc sources_listed 0 "" test "$(echo "$files" | wc -l)" -gt 100
bad=""
for f in $files; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -z "$bad" ]; then pass sources_formatted; else fail sources_formatted "not formatted:$bad"; fi
summary
