#!/usr/bin/env bash
# ulmpi_info: lists every parameter of the registry with type, default,
# current value (from the environment) and help; --param, --params, --all,
# --parsable; the shared-memory single-copy verdict matches what the kernel
# does (forced to fail with an LD_PRELOAD shim, it must say so and why).
source "$(dirname "$0")/lib.sh"
cd "$work"
info=$build/tools/ulmpi_info

step "ulmpi_info (default)"
"$info" >summary
cat summary
expect summary "^ulmpi $ULMPI_TEST_VERSION " "^Paths built" "^  self " "^  shm " \
    "^Shared memory" "^Parameters \\([0-9]+\\)"
grep -qx "ulmpi $ULMPI_TEST_VERSION" <<<"$("$info" --version)" || fail "--version"

step "every parameter appears everywhere"
"$info" --parsable >parsable
grep '^param:' parsable | cut -d: -f2 >names
count=$(wc -l <names)
[ "$count" -ge 10 ] || fail "only $count parameters"
grep -q "^Parameters ($count)" summary || fail "the summary does not count $count parameters"
"$info" --params >params
"$info" --all >all
while read -r name; do
    grep -Eq "^  $name +[a-z/]+ " summary || fail "$name is missing from the summary table"
    grep -Eq "^  $name +" params || fail "$name is missing from --params"
    grep -Eq "^  $name$" all || fail "$name is missing from --all"
    "$info" --param "$name" >one || fail "--param $name"
    expect one "^$name$" "^    type: " "^    default: " "^    value: " "^    set with: +ULMPI_"
done <names
# Groups: every parameter sits under the heading of its prefix (`ft` is a
# prefix of its own).
awk '/^\[/ { group = substr($1, 2, length($1) - 2) } /^  [a-z]/ && group != "" && $1 != "name" {
        if ($1 != group && index($1, group "_") != 1) { print "bad group: " $1 " under " group; bad = 1 } }
     END { exit bad }' summary || fail "parameters are not grouped by prefix"

step "values come from the environment"
ULMPI_SHM_EAGER_LIMIT=8k "$info" --param shm_eager_limit >env1
expect env1 "value: +8K \\(environment\\)" "default: +4K"
grep -Eq "^  shm_eager_limit +size +4K +8K \\*" <<<"$(ULMPI_SHM_EAGER_LIMIT=8k "$info")" ||
    fail "the summary does not mark an environment value"
ULMPI_SHM_EAGER_LIMIT=lots "$info" --param shm_eager_limit >env2
expect env2 "value: +4K \\(ULMPI_SHM_EAGER_LIMIT ignored: 'lots' is not a size"
grep -q "ULMPI_NO_SUCH_THING names no parameter" <<<"$(ULMPI_NO_SUCH_THING=1 "$info" --params)" ||
    fail "a mistyped ULMPI_ variable is not reported"
grep -q "names no parameter" <<<"$(ULMPI_TEST_BUILD_ROOT=x "$info" --params)" &&
    fail "a runtime variable was reported as a typo"
grep -q "^shm_eager_limit$" <<<"$("$info" --param ULMPI_SHM_EAGER_LIMIT)" || fail "--param ENV_NAME"
if "$info" --param no_such_param 2>err; then fail "--param of an unknown name must fail"; fi
"$info" --param eager >/dev/null 2>err || true
grep -q "similar: .*shm_eager_limit" err || fail "no suggestions"
if "$info" --bogus 2>/dev/null; then fail "an unknown option must fail"; fi

step "single copy verdict"
grep '^shm_single_copy:' parsable
verdict=$(sed -n 's/^shm_single_copy:\([a-z]*\):.*/\1/p' parsable)
[ -n "$verdict" ] || fail "no single-copy verdict"
grep -q "^shm_single_copy:no:" <<<"$(ULMPI_SHM_SINGLE_COPY=off "$info" --parsable)" ||
    fail "ULMPI_SHM_SINGLE_COPY=off must give copy-in/copy-out"
# Make process_vm_readv fail the way Yama or a container would, and check
# that ulmpi_info notices and says why.
cat >deny.c <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <sys/types.h>
#include <sys/uio.h>
ssize_t process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl,
                         const struct iovec *r, unsigned long nr, unsigned long flags)
{
    (void)pid; (void)l; (void)nl; (void)r; (void)nr; (void)flags;
    errno = EPERM;
    return -1;
}
C
cc -shared -fPIC -o deny.so deny.c
LD_PRELOAD=$work/deny.so "$info" >denied
sed -n '/^Shared memory/,/^$/p' denied
expect denied "copy-in/copy-out" \
    "process_vm_readv between two sibling processes failed: Operation not permitted"
# And the honest answer here agrees with the kernel: try it between two
# sibling processes ourselves, the way two ranks would.
cat >try.c <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile long word = 42;
int main(void)
{
    int fd[2], res[2];
    pid_t a, b;
    if (pipe(fd) || pipe(res)) return 2;
    if ((a = fork()) == 0) { pause(); _exit(0); }
    if ((b = fork()) == 0) {
        long got = 0;
        struct iovec l = {&got, sizeof got}, r = {(void *)&word, sizeof got};
        char ok = process_vm_readv(a, &l, 1, &r, 1, 0) == sizeof got && got == 42;
        write(res[1], &ok, 1);
        _exit(0);
    }
    char ok = 0;
    read(res[0], &ok, 1);
    kill(a, 9);
    waitpid(a, 0, 0);
    waitpid(b, 0, 0);
    puts(ok ? "yes" : "no");
    return 0;
}
C
cc -o try try.c
kernel=$(./try)
echo "two siblings here: $kernel; ulmpi_info: $verdict"
[ "$kernel" = "$verdict" ] || fail "ulmpi_info says $verdict, the kernel says $kernel"

echo "PASS"
