#!/usr/bin/env bash
# (g) Fortran: the build tree's mpifort/mpif77/mpif90 print what they do
# (-show, -showme:*, -compile_info, $ULMPI_FC, -fc=); then, installed
# (DESTDIR-staged), mpif.h and mpi.mod sit in the include directory and a
# fixed-form program with include 'mpif.h' and a free-form one with
# `use mpi` build with the installed wrappers (-Wall -Werror) and run with
# the installed mpirun, with no LD_LIBRARY_PATH.
source "$(dirname "$0")/lib.sh"
need_mpirun
need_fortran
cd "$work"

same() {
    [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
    echo "ok: $1: $3"
}

step "the build tree's wrappers"
mpifort=$build/tools/mpifort
fc=$("$mpifort" -showme:command)
command -v "${fc%% *}" >/dev/null || fail "the default Fortran compiler '$fc' is not found"
compile=$("$mpifort" -showme:compile)
case $compile in
    "-I$build/mpi/fortran" | "-I$build/mpi/fortran "*) ;;
    *) fail "mpifort -showme:compile: '$compile' does not start with -I$build/mpi/fortran" ;;
esac
link="-L$build/mpi -Wl,-rpath,$build/mpi -Wl,--enable-new-dtags -lmpi"
if [ -n "${ULMPI_TEST_SANITIZE_ARGS:-}" ]; then
    link="$ULMPI_TEST_SANITIZE_ARGS $link"
fi
same "mpifort -show a.f90" "$fc $compile a.f90 $link" "$("$mpifort" -show a.f90)"
same "mpifort -showme:link" "$link" "$("$mpifort" -showme:link)"
same "mpifort -compile_info -c a.f" "$fc $compile -c a.f" "$("$mpifort" -compile_info -c a.f)"
same "mpifort -show --version" "$fc --version" "$("$mpifort" -show --version)"
same "mpifort -showme:incdirs" "$build/mpi/fortran" "$("$mpifort" -showme:incdirs)"
for name in mpifort mpif77 mpif90; do
    same "$name -showme:version" "$name: ulmpi $ULMPI_TEST_VERSION (Language: Fortran)" \
        "$("$build/tools/$name" -showme:version)"
done
same "ULMPI_FC=gfortran-12 mpif90 -show -c a.f90" "gfortran-12 $compile -c a.f90" \
    "$(ULMPI_FC=gfortran-12 "$build/tools/mpif90" -show -c a.f90)"
same "mpif77 -fc=f95 -show -c a.f" "f95 $compile -c a.f" \
    "$("$build/tools/mpif77" -fc=f95 -show -c a.f)"
for f in mpif.h mpi.mod; do
    [ -f "$build/mpi/fortran/$f" ] || fail "$build/mpi/fortran/$f is missing"
done

step "programs built in the build tree"
run "$build/tools/mpif77" -o hello_f77_build "$here/hello_f77.f"
run_job out_f77_build "$build/tools/mpirun" 3 ./hello_f77_build
check_hello_f77 out_f77_build 3
run "$build/tools/mpifort" -o hello_f90_build "$here/hello_f90.f90"
run_job out_f90_build "$build/tools/mpirun" 3 ./hello_f90_build
check_hello_f90 out_f90_build 3

stage_install
step "installed Fortran files"
for f in mpifort mpif77 mpif90; do
    [ -x "$BINDIR/$f" ] || fail "$BINDIR/$f is missing or not executable"
done
for f in mpif.h mpi.mod; do
    [ -f "$INCDIR/$f" ] || fail "$INCDIR/$f is missing"
done
show=$("$BINDIR/mpifort" -show x.f90)
echo "$show"
case $show in *"$build"*) fail "the installed mpifort refers to the build tree" ;; esac
case $show in *"-I$INCDIR "*) ;; *) fail "installed mpifort -show lacks -I$INCDIR" ;; esac

step "fixed form, include 'mpif.h', with the installed mpif77"
run "$BINDIR/mpif77" -Wall -Werror -o hello_f77 "$here/hello_f77.f"
uses_libmpi_from hello_f77 "$LIBDIR"
run_job out_f77 "$BINDIR/mpirun" 2 ./hello_f77
check_hello_f77 out_f77 2

step "free form, use mpi, with the installed mpif90 (compile and link apart)"
run "$BINDIR/mpif90" -Wall -Werror -c -o hello_f90.o "$here/hello_f90.f90"
run "$BINDIR/mpifort" -o hello_f90 hello_f90.o
uses_libmpi_from hello_f90 "$LIBDIR"
run_job out_f90 "$BINDIR/mpiexec" 2 ./hello_f90
check_hello_f90 out_f90 2

echo "PASS"
