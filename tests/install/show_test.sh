#!/usr/bin/env bash
# (c) What the wrappers print about themselves: -show/-showme, Open MPI's
# -showme:compile/-showme:link/..., MPICH's -compile_info/-link_info (also
# -compile-info/-link-info, which CMake uses), and the quoting of arguments.
# Each query must print the flags that a real compile uses and run nothing.
source "$(dirname "$0")/lib.sh"
need_mpirun
cd "$work"

mpicc=$build/tools/mpicc
mpicxx=$build/tools/mpicxx
inc=-I$ULMPI_TEST_SOURCE_ROOT/include
link="-L$build/mpi -Wl,-rpath,$build/mpi -Wl,--enable-new-dtags -lmpi"
# A sanitized build (-Db_sanitize=...) compiles and links with the sanitizer.
if [ -n "${ULMPI_TEST_SANITIZE_ARGS:-}" ]; then
    inc="$inc $ULMPI_TEST_SANITIZE_ARGS"
    link="$ULMPI_TEST_SANITIZE_ARGS $link"
fi

# same WHAT EXPECTED ACTUAL
same() {
    [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
    echo "ok: $1: $3"
}

cc_words=$("$mpicc" -showme:command)
cxx_words=$("$mpicxx" -showme:command)
[ -n "$cc_words" ] && [ -n "$cxx_words" ] || fail "-showme:command printed nothing"
command -v "${cc_words%% *}" >/dev/null || fail "the default C compiler '$cc_words' is not found"

same "mpicc -show a.c -o a" "$cc_words $inc a.c -o a $link" "$("$mpicc" -show a.c -o a)"
same "mpicc -showme a.c" "$cc_words $inc a.c $link" "$("$mpicc" -showme a.c)"
same "mpicc --showme" "$cc_words $inc $link" "$("$mpicc" --showme)"
same "mpicc -show -c a.c" "$cc_words $inc -c a.c" "$("$mpicc" -show -c a.c)"
same "mpicc -show -E a.c" "$cc_words $inc -E a.c" "$("$mpicc" -show -E a.c)"
same "mpicc -show -v" "$cc_words -v" "$("$mpicc" -show -v)"
same "mpicxx -show --version" "$cxx_words --version" "$("$mpicxx" -show --version)"
same "mpicc -show -v a.c" "$cc_words $inc -v a.c $link" "$("$mpicc" -show -v a.c)"
"$mpicc" --version >/dev/null || fail "mpicc --version"
"$mpicc" -v >/dev/null 2>&1 || fail "mpicc -v"
same "mpicxx -show b.cpp" "$cxx_words $inc b.cpp $link" "$("$mpicxx" -show b.cpp)"
same "mpicc -showme:compile" "$inc" "$("$mpicc" -showme:compile)"
same "mpicc --showme:compile" "$inc" "$("$mpicc" --showme:compile)"
same "mpicc -showme:link" "$link" "$("$mpicc" -showme:link)"
same "mpicxx --showme:link" "$link" "$("$mpicxx" --showme:link)"
same "mpicc -showme:incdirs" "$ULMPI_TEST_SOURCE_ROOT/include" "$("$mpicc" -showme:incdirs)"
same "mpicc -showme:libdirs" "$build/mpi" "$("$mpicc" -showme:libdirs)"
same "mpicc -showme:libs" "mpi" "$("$mpicc" -showme:libs)"
same "mpicc -showme:version" "mpicc: ulmpi $ULMPI_TEST_VERSION (Language: C)" \
    "$("$mpicc" -showme:version)"
same "mpicxx --showme:version" "mpicxx: ulmpi $ULMPI_TEST_VERSION (Language: C++)" \
    "$("$mpicxx" --showme:version)"
same "mpicc -compile_info" "$cc_words $inc" "$("$mpicc" -compile_info)"
same "mpicc -compile-info a.c" "$cc_words $inc a.c" "$("$mpicc" -compile-info a.c)"
same "mpicc -link_info" "$cc_words $inc $link" "$("$mpicc" -link_info)"
same "mpicc -link-info a.o" "$cc_words $inc a.o $link" "$("$mpicc" -link-info a.o)"
same "ULMPI_CC=clang mpicc -show -c a.c" "clang $inc -c a.c" \
    "$(ULMPI_CC=clang "$mpicc" -show -c a.c)"
same "ULMPI_CXX='ccache g++' mpicxx -show -c b.cpp" "ccache g++ $inc -c b.cpp" \
    "$(ULMPI_CXX='ccache g++' "$mpicxx" -show -c b.cpp)"
same "mpicc -cc=gcc-12 -show -c a.c" "gcc-12 $inc -c a.c" "$("$mpicc" -cc=gcc-12 -show -c a.c)"
same "quoting" "$cc_words $inc -c 'my file.c' '-DMSG=\"a b\"' 'it'\\''s.c'" \
    "$("$mpicc" -show -c 'my file.c' '-DMSG="a b"' "it's.c")"

step "-show runs nothing"
"$mpicc" -show -o should_not_exist "$here/hello.c" >/dev/null
[ ! -e should_not_exist ] || fail "-show compiled"

step "-showme:help and unknown queries"
grep -q -- "-showme:compile" <<<"$("$mpicc" -showme:help)" || fail "-showme:help"
if "$mpicc" -showme:nonsense 2>err; then
    fail "an unknown -showme: query must fail"
fi
grep -q "unknown option" err || fail "no message for an unknown -showme: query"

step "the printed command is the one that runs"
# shellcheck disable=SC2046
eval "$("$mpicc" -show -o hello_from_show "$here/hello.c")"
uses_libmpi_from hello_from_show "$build/mpi"
eval "$("$mpicc" -showme:command) $("$mpicc" -showme:compile) -c -o hello.o '$here/hello.c'"
eval "$("$mpicc" -showme:command) hello.o -o hello_from_parts $("$mpicc" -showme:link)"
uses_libmpi_from hello_from_parts "$build/mpi"
run_job out "$build/tools/mpirun" 2 ./hello_from_parts
check_hello_c out 2

echo "PASS"
