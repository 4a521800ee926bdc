#!/usr/bin/env bash
# (a) `meson install` (DESTDIR-staged), then build a C and a C++ MPI program
# with the installed mpicc/mpicxx and run them with the installed mpirun, with
# no LD_LIBRARY_PATH. Also: the installed file list, the soname links, the
# pkg-config file, ulmpi_info and mpiexec from the installation.
source "$(dirname "$0")/lib.sh"
need_mpirun

stage_install
cd "$work"

step "installed files"
for f in mpicc mpicxx mpirun mpiexec ulmpi_info; do
    f=$BINDIR/$f
    [ -x "$f" ] || fail "$f is missing or not executable"
done
[ -f "$INCDIR/mpi.h" ] || fail "$INCDIR/mpi.h is missing"
[ -L "$LIBDIR/libmpi.so" ] || fail "no libmpi.so link in $LIBDIR"
real=$(readlink -f "$LIBDIR/libmpi.so")
[ -f "$real" ] && [ "$(dirname "$real")" = "$(readlink -f "$LIBDIR")" ] ||
    fail "libmpi.so points to $real"
soname=$(readelf -d "$real" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ -n "$soname" ] || fail "libmpi has no SONAME"
[ "$(readlink -f "$LIBDIR/$soname")" = "$real" ] || fail "no $soname link to $(basename "$real")"
[ -f "$LIBDIR/pkgconfig/ulmpi.pc" ] || fail "no pkgconfig/ulmpi.pc"
echo "ok: bin/{mpicc,mpicxx,mpirun,mpiexec,ulmpi_info}, mpi.h, libmpi.so -> $soname ->" \
    "$(basename "$real"), ulmpi.pc"

step "installed tools run"
grep -qx "ulmpi $ULMPI_TEST_VERSION" <<<"$("$BINDIR/ulmpi_info" --version)" ||
    fail "ulmpi_info --version"
grep -q "ulmpi" <<<"$("$BINDIR/mpirun" --version)" || fail "mpirun --version"
grep -q "ulmpi $ULMPI_TEST_VERSION" <<<"$("$BINDIR/mpicc" -showme:version)" ||
    fail "mpicc -showme:version"
# The staged wrapper must point into the staging area, not at the build tree.
show=$("$BINDIR/mpicc" -show x.c)
echo "$show"
case $show in *"$build"*) fail "the installed mpicc refers to the build tree" ;; esac
case $show in *"-I$INCDIR "*) ;; *) fail "installed mpicc -show lacks -I$INCDIR" ;; esac

step "C program with the installed mpicc"
run "$BINDIR/mpicc" -Wall -Wextra -Werror -o hello_c "$here/hello.c"
uses_libmpi_from hello_c "$LIBDIR"
run_job out_c "$BINDIR/mpirun" 2 ./hello_c
check_hello_c out_c 2

step "C++ program with the installed mpicxx"
run "$BINDIR/mpicxx" -Wall -Wextra -Werror -o hello_cxx "$here/hello.cpp"
uses_libmpi_from hello_cxx "$LIBDIR"
run_job out_cxx "$BINDIR/mpiexec" 2 ./hello_cxx
check_hello_cxx out_cxx 2

step "separate compile and link steps"
run "$BINDIR/mpicc" -c -o hello.o "$here/hello.c"
run "$BINDIR/mpicc" -o hello_2step hello.o
uses_libmpi_from hello_2step "$LIBDIR"
run_job out_2step "$BINDIR/mpirun" 2 ./hello_2step
check_hello_c out_2step 2

step "a moved installation (ULMPI_PREFIX) and a wrapper reached through a symlink"
moved() { echo "$work/moved${1#"$work/stage"}"; }
mv "$work/stage" "$work/moved"
ln -s "$(moved "$BINDIR")/mpicc" "$work/mpicc-link"
grep -qx "$(moved "$INCDIR")" <<<"$("$work/mpicc-link" -showme:incdirs)" ||
    fail "a symlinked mpicc does not find its prefix"
elsewhere=$(ULMPI_PREFIX=/opt/elsewhere "$work/mpicc-link" -showme:compile)
grep -q -- "-I/opt/elsewhere/" <<<"$elsewhere" ||
    fail "ULMPI_PREFIX is not honoured"
run "$work/mpicc-link" -o hello_moved "$here/hello.c"
uses_libmpi_from hello_moved "$(moved "$LIBDIR")"
mv "$work/moved" "$work/stage"

if command -v pkg-config >/dev/null; then
    step "pkg-config ulmpi"
    export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
    pc() { pkg-config --define-variable=prefix="$P" "$@" ulmpi; }
    echo "cflags: $(pc --cflags)  libs: $(pc --libs)  version: $(pc --modversion)"
    [ "$(pc --modversion)" = "$ULMPI_TEST_VERSION" ] || fail "pkg-config --modversion"
    # shellcheck disable=SC2046
    run cc -o hello_pc "$here/hello.c" $(pc --cflags) $(pc --libs) -Wl,-rpath,"$LIBDIR"
    uses_libmpi_from hello_pc "$LIBDIR"
    run_job out_pc "$BINDIR/mpirun" 2 ./hello_pc
    check_hello_c out_pc 2
    unset PKG_CONFIG_PATH
fi

echo "PASS"
