#!/usr/bin/env bash
# scripts/setup: valid bash, --help works, and --check (which installs
# nothing) finds every package present on a machine that was set up with it.
# A machine that was not set up skips rather than fails.
source "$(dirname "$0")/lib.sh"
setup=$ULMPI_TEST_SOURCE_ROOT/scripts/setup
cd "$work"

run bash -n "$setup"
grep -q "Usage: scripts/setup" <<<"$("$setup" --help)" || fail "--help"
if "$setup" --bogus >/dev/null 2>&1; then fail "an unknown option must fail"; fi
set +e
"$setup" --check >check.out 2>&1
rc=$?
set -e
cat check.out
case $rc in
    0) [ ! -s check.out ] || fail "--check must be quiet when everything is present" ;;
    1)
        grep -q "^missing:" check.out || fail "--check exit 1 without naming what is missing"
        echo "SKIP: this machine lacks packages (run scripts/setup)"
        exit 77
        ;;
    *) fail "--check exited $rc" ;;
esac
echo "PASS"
