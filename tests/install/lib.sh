# Helpers shared by the installation and wrapper tests (sourced, bash).
#
# Every test gets a private temporary directory ($work) that is removed on
# exit, also when meson's timeout stops it. Nothing from the caller's
# environment may help a program find libmpi or mpi.h: the point is to show
# that the wrappers' flags (run path included) are enough.
set -euo pipefail

unset LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH \
    ULMPI_CC ULMPI_CXX ULMPI_FC ULMPI_PREFIX PKG_CONFIG_PATH MPI_HOME

: "${ULMPI_TEST_BUILD_ROOT:?run this test through meson test}"
: "${ULMPI_TEST_SOURCE_ROOT:?}"

here=$ULMPI_TEST_SOURCE_ROOT/tests/install
build=$ULMPI_TEST_BUILD_ROOT

work=$(mktemp -d "${TMPDIR:-/tmp}/ulmpi-install-test.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

step() { echo "== $*"; }

# Runs a command, echoing it first.
run() {
    echo "+ $*"
    "$@"
}

# Seconds any one MPI job may take (mpirun ends the job itself after that).
job_timeout=60

# run_job OUT MPIRUN NP PROGRAM [ARGS...]: runs an MPI job, output in OUT.
run_job() {
    local out=$1 mpirun=$2 np=$3
    shift 3
    echo "+ $mpirun -n $np $*"
    if ! timeout -k 5 $((job_timeout + 10)) "$mpirun" --timeout "$job_timeout" -n "$np" "$@" \
        >"$out" 2>&1 </dev/null; then
        cat "$out" >&2
        fail "the job '$*' failed"
    fi
    cat "$out"
}

# expect FILE PATTERN...: every extended regular expression matches a line.
expect() {
    local file=$1
    shift
    for pattern in "$@"; do
        grep -Eq -- "$pattern" "$file" || fail "no line matches '$pattern' in $(basename "$file")"
    done
}

# check_ring OUT NP WHO: the output of a ring job (hello.c: WHO c,
# hello_f77.f: f77): the library's name, and every rank got its left
# neighbour's rank.
check_ring() {
    local out=$1 np=$2 who=$3 r
    expect "$out" '^library: ulmpi '
    for ((r = 0; r < np; r++)); do
        expect "$out" "^$who rank $r of $np: got $(((r + np - 1) % np)) ok$"
    done
}
# check_sum OUT NP WHO SUM: the output of a sum job (hello.cpp, hello_f90.f90):
# every rank's line with the sum (both WHO and SUM are regular expressions).
check_sum() {
    local out=$1 np=$2 who=$3 sum=$4 r
    for ((r = 0; r < np; r++)); do
        expect "$out" "^$who rank $r of $np: sum $sum ok$"
    done
}
# check_hello_X OUT NP: the output of the hello programs.
check_hello_c() { check_ring "$1" "$2" c; }
check_hello_f77() { check_ring "$1" "$2" f77; }
check_hello_cxx() { check_sum "$1" "$2" 'c\+\+' '[0-9]+'; }
check_hello_f90() { check_sum "$1" "$2" f90 "$(($2 * ($2 + 1) / 2))"; }

# need_fortran: skip (exit 77) when this build has no Fortran wrappers.
need_fortran() {
    if [ ! -x "$build/tools/mpifort" ]; then
        echo "SKIP: no mpifort in this build (no Fortran compiler: -Dfortran)"
        exit 77
    fi
}

# uses_libmpi_from PROGRAM DIR: the dynamic loader takes libmpi from DIR
# (not from the build tree, not from another MPI) with no help from the
# environment.
uses_libmpi_from() {
    local prog=$1 dir=$2 resolved
    resolved=$(ldd "$prog" | awk '$1 ~ /^libmpi\.so/ { print $3 }')
    [ -n "$resolved" ] || fail "$prog does not link libmpi"
    [ "$(readlink -f "$(dirname "$resolved")")" = "$(readlink -f "$dir")" ] ||
        fail "$prog loads $resolved, expected it from $dir"
    grep -Eq '(RUNPATH|RPATH).*'"$dir" <<<"$(readelf -d "$prog")" ||
        fail "$prog has no run path to $dir"
}

# stage_install: `meson install` of this build into $work/stage (DESTDIR);
# sets P (the staged prefix) and BINDIR, LIBDIR, INCDIR inside it.
stage_install() {
    step "meson install --destdir $work/stage"
    if ! "$ULMPI_TEST_MESON" install -C "$build" --no-rebuild --quiet \
        --destdir "$work/stage" >"$work/install.log" 2>&1; then
        cat "$work/install.log" >&2
        fail "meson install (if a file is missing: meson test builds only what tests" \
            "depend on; build everything with 'meson compile -C $build' first)"
    fi
    P=$work/stage$ULMPI_TEST_PREFIX
    case $ULMPI_TEST_LIBDIR in
        /*) LIBDIR=$work/stage$ULMPI_TEST_LIBDIR ;;
        *) LIBDIR=$P/$ULMPI_TEST_LIBDIR ;;
    esac
    case $ULMPI_TEST_BINDIR in
        /*) BINDIR=$work/stage$ULMPI_TEST_BINDIR ;;
        *) BINDIR=$P/$ULMPI_TEST_BINDIR ;;
    esac
    case $ULMPI_TEST_INCLUDEDIR in
        /*) INCDIR=$work/stage$ULMPI_TEST_INCLUDEDIR ;;
        *) INCDIR=$P/$ULMPI_TEST_INCLUDEDIR ;;
    esac
}

# need_mpirun: skip (exit 77) when this build has no launcher yet.
need_mpirun() {
    if [ ! -x "$build/tools/mpirun" ]; then
        echo "SKIP: mpirun is not built in this tree (runtime/mpirun)"
        exit 77
    fi
}
