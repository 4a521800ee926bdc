#!/usr/bin/env bash
# (d) CMake's find_package(MPI) with MPI_C_COMPILER / MPI_CXX_COMPILER set to
# the installed wrappers finds ulmpi (not another MPI installed on the
# machine), builds the C and C++ test programs and runs them with our
# mpiexec. Then the same with only MPI_HOME=<prefix>, which must find the
# wrappers and mpiexec by itself. When ulmpi has mpifort, the Fortran
# component too (MPI_Fortran_COMPILER; mpif.h and the mpi module found; a
# program with each).
source "$(dirname "$0")/lib.sh"
need_mpirun
command -v cmake >/dev/null || { echo "SKIP: cmake is not installed"; exit 77; }

stage_install
cd "$work"

fortran=no
fortran_args=()
if [ -x "$BINDIR/mpifort" ]; then
    fortran=yes
    fortran_args=(-DWITH_FORTRAN=ON)
fi

# check_found DIR: FindMPI's results name our installation.
check_found() {
    local report=$1/mpi-found.txt
    cat "$report"
    expect "$report" "^MPI_C_COMPILER=$BINDIR/mpicc$" "^MPI_CXX_COMPILER=$BINDIR/mpicxx$" \
        "^MPI_C_INCLUDE_DIRS=$INCDIR$" "^MPI_CXX_INCLUDE_DIRS=$INCDIR$" \
        "^MPI_C_LIBRARIES=$LIBDIR/libmpi\\.so$" "^MPI_CXX_LIBRARIES=$LIBDIR/libmpi\\.so$" \
        "^MPI_C_VERSION=3\\.1$" "^MPI_CXX_VERSION=3\\.1$" \
        "^MPIEXEC_EXECUTABLE=$BINDIR/mpiexec$"
    if [ "$fortran" = yes ]; then
        # FindMPI names the wrapper it found (any of mpifort, mpif90, mpif77).
        expect "$report" "^MPI_Fortran_COMPILER=$BINDIR/mpif(ort|90|77)$" \
            "^MPI_Fortran_INCLUDE_DIRS=$INCDIR$" "^MPI_Fortran_LIBRARIES=$LIBDIR/libmpi\\.so$" \
            "^MPI_Fortran_VERSION=3\\.1$" "^MPI_Fortran_HAVE_F77_HEADER=TRUE$" \
            "^MPI_Fortran_HAVE_F90_MODULE=TRUE$"
    fi
}

# build_and_run DIR CMAKE-ARGS...
build_and_run() {
    local dir=$1
    shift
    run cmake -S "$here/cmake" -B "$dir" -DHELLO_DIR="$here" "${fortran_args[@]}" "$@" \
        >"$dir.log" 2>&1 || {
        cat "$dir.log" >&2
        fail "cmake configure"
    }
    grep -E "Found MPI" "$dir.log" || true
    check_found "$dir"
    run cmake --build "$dir" >"$dir.build.log" 2>&1 || {
        cat "$dir.build.log" >&2
        fail "cmake --build"
    }
    uses_libmpi_from "$dir/hello_c" "$LIBDIR"
    uses_libmpi_from "$dir/hello_cxx" "$LIBDIR"
    run_job "$dir.out_c" "$BINDIR/mpiexec" 2 "$dir/hello_c"
    check_hello_c "$dir.out_c" 2
    run_job "$dir.out_cxx" "$BINDIR/mpiexec" 2 "$dir/hello_cxx"
    check_hello_cxx "$dir.out_cxx" 2
    if [ "$fortran" = yes ]; then
        uses_libmpi_from "$dir/hello_f77" "$LIBDIR"
        run_job "$dir.out_f77" "$BINDIR/mpiexec" 2 "$dir/hello_f77"
        check_hello_f77 "$dir.out_f77" 2
        run_job "$dir.out_f90" "$BINDIR/mpiexec" 2 "$dir/hello_f90"
        check_hello_f90 "$dir.out_f90" 2
    fi
    (cd "$dir" && run ctest --output-on-failure --timeout 90) || fail "ctest"
}

step "find_package(MPI) with MPI_C_COMPILER / MPI_CXX_COMPILER / MPI_Fortran_COMPILER / MPIEXEC_EXECUTABLE"
mkdir with_compilers
build_and_run "$work/with_compilers" \
    -DMPI_C_COMPILER="$BINDIR/mpicc" -DMPI_CXX_COMPILER="$BINDIR/mpicxx" \
    -DMPI_Fortran_COMPILER="$BINDIR/mpifort" -DMPIEXEC_EXECUTABLE="$BINDIR/mpiexec"

step "find_package(MPI) with MPI_HOME only"
mkdir with_home
build_and_run "$work/with_home" -DMPI_HOME="$P"

echo "PASS"
