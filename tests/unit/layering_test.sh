#!/usr/bin/env bash
# Checks the one-way layering  runtime < paths < ulm < ft < ft/rep < ft/intra < mpi
# (ft/rep and ft/intra are libraries of their own inside the ft/ layer):
# no file of a layer includes a header of a layer above it, and the C ABI
# headers (include/mpi.h, include/mpi-ext.h) are included only from mpi/ and
# tools/ (tests/ may include anything).
#
#   layering_test.sh [source root]     check the tree (default: ../.. from here)
#   layering_test.sh --self-test       check that violations are caught
set -u

# layer_rank LAYER: sets RANK to the layer's place in the order (-1: none).
# (These helpers set variables instead of printing, so that the scan runs
# no subshell per include line: it stays fast on a loaded machine.)
layer_rank() {
    case "$1" in
        runtime) RANK=0 ;;
        paths) RANK=1 ;;
        ulm) RANK=2 ;;
        ft) RANK=3 ;;
        ft/rep) RANK=4 ;;
        ft/intra) RANK=5 ;;
        mpi) RANK=6 ;;
        *) RANK=-1 ;;
    esac
}

# layer_of PATH (relative to the root): sets LAYER to the layer a file or
# header belongs to.
layer_of() {
    case "$1" in
        ft/rep/*) LAYER=ft/rep ;;
        ft/intra/*) LAYER=ft/intra ;;
        *) LAYER=${1%%/*} ;;
    esac
}

# check_tree ROOT: prints one line per violation; exit status 1 if any.
check_tree() {
    local root=$1
    local rootabs
    rootabs=$(realpath -m "$root")
    local bad=0
    local layer file line inc top target resolved rel own own_layer dir
    # "#  include  <x>" or "x" -> x
    local re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]+)[">]'
    for layer in runtime paths ulm ft mpi; do
        [ -d "$root/$layer" ] || continue
        while IFS= read -r file; do
            layer_of "${file#"$root"/}"
            own_layer=$LAYER
            layer_rank "$own_layer"
            own=$RANK
            dir=${file%/*}
            while IFS= read -r line; do
                [[ $line =~ $re ]] || continue
                inc=${BASH_REMATCH[1]}
                # Relative includes ("../ulm/x.h", "x.h") resolve against the
                # including file's folder when that file exists.
                rel=""
                if [ -e "$dir/$inc" ]; then
                    if [[ $inc == *..* || $inc == ./* ]]; then
                        resolved=$(realpath -m "$dir/$inc")
                        rel=${resolved#"$rootabs/"}
                    else
                        rel=${dir#"$root"/}/$inc
                    fi
                fi
                [ -n "$rel" ] || rel=$inc
                case "$rel" in
                    mpi.h | mpi-ext.h | include/mpi.h | include/mpi-ext.h)
                        if [ "$layer" != mpi ]; then
                            echo "${file#"$root"/}: includes the C ABI header <$inc> (only mpi/ and tools/ may)"
                            bad=1
                        fi
                        continue
                        ;;
                esac
                top=${rel%%/*}
                [ "$top" = "$rel" ] && continue # same folder or a system header
                layer_of "$rel"
                top=$LAYER
                layer_rank "$top"
                target=$RANK
                if [ "$target" -gt "$own" ]; then
                    echo "${file#"$root"/}: $own_layer/ includes $rel from the higher layer $top/"
                    bad=1
                fi
            done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$file")
        done < <(find "$root/$layer" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.c' -o -name '*.cc' -o -name '*.cpp' \) | sort)
    done
    return $bad
}

self_test() {
    local tmp
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp"/{runtime,paths/shm,ulm,ft/rep,ft/intra,mpi,tools,include}
    touch "$tmp/include/mpi.h" "$tmp/ulm/engine.h" "$tmp/runtime/log.h" "$tmp/mpi/comm.h" "$tmp/paths/path.h"
    # Allowed: downward, same layer, same folder, system headers, mpi.h in mpi/.
    printf '#include "runtime/log.h"\n#include <vector>\n#include "path.h"\n' >"$tmp/paths/ok.cpp"
    printf '#include "ulm/engine.h"\n#include "paths/path.h"\n' >"$tmp/ft/ok.cpp"
    printf '#include "mpi.h"\n#include "ulm/engine.h"\n' >"$tmp/mpi/ok.cpp"
    if ! out=$(check_tree "$tmp"); then
        echo "self-test: a clean tree was reported:"
        echo "$out"
        return 1
    fi
    # Each violation alone must be caught.
    local cases=(
        'paths/shm/bad.cpp|#include "ulm/engine.h"'
        'runtime/bad.h|#  include <paths/path.h>'
        'ulm/bad.cpp|#include "mpi/comm.h"'
        'ulm/bad2.cpp|#include "mpi.h"'
        'ft/bad.cpp|#include <mpi.h>'
        'paths/shm/bad2.cpp|#include "../../ulm/engine.h"'
        'ft/bad3.cpp|#include "ft/rep/replicator.h"'
        'ft/rep/bad.cpp|#include "mpi/comm.h"'
        'ft/rep/bad2.cpp|#include "ft/intra/section.h"'
        'ft/intra/bad.cpp|#include "mpi/comm.h"'
        'ft/intra/bad2.cpp|#include <mpi-ext.h>'
        'ft/bad4.cpp|#include "ft/intra/section.h"'
    )
    local c path text
    for c in "${cases[@]}"; do
        path=${c%%|*}
        text=${c#*|}
        printf '%s\n' "$text" >"$tmp/$path"
        if check_tree "$tmp" >/dev/null; then
            echo "self-test: not caught: $path: $text"
            return 1
        fi
        rm "$tmp/$path"
    done
    echo "self-test: ok"
    return 0
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
    exit $?
fi
root=${1:-$(dirname "$0")/../..}
root=$(realpath -m "$root")
if out=$(check_tree "$root"); then
    echo "layering: ok"
    exit 0
fi
echo "layering violations:"
echo "$out"
exit 1
