#!/usr/bin/env bash
# (b) The build-tree wrappers (<build>/tools/mpicc, mpicxx) and launcher
# (<build>/tools/mpirun): programs built with them run without
# LD_LIBRARY_PATH and take libmpi from <build>/mpi. A plain C program links
# although libmpi is C++ inside (libmpi.so depends on libstdc++ itself), also
# with -Wl,--as-needed, and mpi.h compiles as strict C89 and as C++.
source "$(dirname "$0")/lib.sh"
need_mpirun
cd "$work"

tools=$build/tools
libdir=$build/mpi

step "C program with <build>/tools/mpicc"
run "$tools/mpicc" -std=c89 -pedantic -Wall -Wextra -Werror -o hello_c "$here/hello.c"
uses_libmpi_from hello_c "$libdir"
if grep -q ' _Z' <<<"$(nm -D --undefined-only hello_c)"; then
    fail "a C program should not need C++ symbols itself"
fi
run_job out_c "$tools/mpirun" 2 ./hello_c
check_hello_c out_c 2
run_job out_c3 "$tools/mpiexec" 3 ./hello_c
check_hello_c out_c3 3

step "C program linked with -Wl,--as-needed"
run "$tools/mpicc" -Wl,--as-needed -o hello_as_needed "$here/hello.c"
uses_libmpi_from hello_as_needed "$libdir"
run_job out_an "$tools/mpirun" 2 ./hello_as_needed
check_hello_c out_an 2

step "C++ program with <build>/tools/mpicxx"
run "$tools/mpicxx" -std=c++17 -Wall -Wextra -Werror -o hello_cxx "$here/hello.cpp"
uses_libmpi_from hello_cxx "$libdir"
run_job out_cxx "$tools/mpirun" 2 ./hello_cxx
check_hello_cxx out_cxx 2

step "a C file compiled by mpicxx (mpi.h is extern \"C\" for C++)"
cp "$here/hello.c" as_cxx.cpp
run "$tools/mpicxx" -o hello_as_cxx as_cxx.cpp
run_job out_as_cxx "$tools/mpirun" 2 ./hello_as_cxx
check_hello_c out_as_cxx 2

step "ULMPI_CC / ULMPI_CXX choose the compiler; CC / CXX do not"
cat >fake-cc <<'SH'
#!/bin/sh
echo "fake compiler called" >"$(dirname "$0")/fake-called"
exit 0
SH
chmod +x fake-cc
ULMPI_CC=$work/fake-cc "$tools/mpicc" -o nothing "$here/hello.c"
[ -f fake-called ] || fail "ULMPI_CC was not used"
rm -f fake-called
ULMPI_CXX=$work/fake-cc "$tools/mpicxx" -o nothing "$here/hello.cpp"
[ -f fake-called ] || fail "ULMPI_CXX was not used"
rm -f fake-called
CC=$work/fake-cc CXX=$work/fake-cc "$tools/mpicc" -o hello_cc_env "$here/hello.c"
[ ! -f fake-called ] || fail "mpicc used \$CC"
"$tools/mpicc" -cc="$work/fake-cc" -o nothing "$here/hello.c"
[ -f fake-called ] || fail "-cc= was not used"

if command -v pkg-config >/dev/null; then
    step "pkg-config ulmpi from the build tree (<build>/tools/pkgconfig)"
    flags=$(PKG_CONFIG_PATH=$build/tools/pkgconfig pkg-config --cflags --libs ulmpi)
    echo "$flags"
    # shellcheck disable=SC2086
    run cc -o hello_pc "$here/hello.c" $flags
    uses_libmpi_from hello_pc "$libdir"
    run_job out_pc "$tools/mpirun" 2 ./hello_pc
    check_hello_c out_pc 2
fi

step "compiler errors come back as the wrapper's exit status"
echo 'int main(void) { return undeclared; }' >broken.c
if "$tools/mpicc" -o broken broken.c 2>/dev/null; then
    fail "mpicc returned 0 for a program that does not compile"
fi

echo "PASS"
