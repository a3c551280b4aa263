# Every global symbol libhearth defines starts with hr_ (docs/STYLE.md): the names are
# listed with nm from the static library beside the binary under test, and any other name
# is a failure (make the function static or give it the prefix).
. "$(dirname "$0")/lib.sh"
LIB=$(dirname "$H")/libhearth.a
# Allowed without the prefix, none of them written by us: what nvcc generates for the CUDA
# backend's .cu files (C++-mangled kernel stubs _Z..., its __cuda / __nv / __fatbin
# registration, the C++ personality routine's reference DW.ref.__gxx_personality_v0), and ASan's per-global ODR indicators (gcc __odr_asan.NAME, clang
# __odr_asan_gen_NAME: checked as NAME).
ALLOW='^(_Z|__cuda|__nv|__fatbin|DW\.ref\.__gxx_personality_v0$)'
expect_rc libhearth_found 0 "" test -f "$LIB"
names=$(nm -g --defined-only "$LIB" 2>/dev/null | awk 'NF == 3 {print $3}' | sed -E 's/^__odr_asan(\.|_gen_)//' | sort -u)
n=$(echo "$names" | grep -c '^hr_')
# the listing itself works: the library's API is there (so an empty offender list means something)
expect_rc symbols_listed 0 "" test "$n" -gt 500
bad=$(echo "$names" | grep -v '^hr_' | grep -vE "$ALLOW")
if [ -z "$bad" ]; then pass hr_prefix_only; else fail hr_prefix_only "$(echo "$bad" | wc -l) without hr_: $(echo $bad | cut -c1-300)"; fi
echo "# $n hr_ symbols"
summary
