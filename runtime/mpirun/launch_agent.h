// The launch agent that starts a remote host's daemon (ssh, or a template
// such as `ip netns exec {host}`), and finding the daemon's program.
#pragma once

#include <string>
#include <vector>

namespace ulmpi::rt::mpirun {

// Words of a launch agent template, split at blanks; '...' and "..." group.
std::vector<std::string> split_words(const std::string& text);

// `s` with every `from` replaced by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

// A word a remote shell (ssh) reads back as itself.
std::string shell_quote(const std::string& w);

// ulmpi_daemon: ULMPI_BOOT_DAEMON, else next to mpirun (installed: both in
// bindir), else where the build tree puts it (runtime/daemon/ beside
// runtime/mpirun/). Empty, with `why`, when there is none.
std::string find_daemon(std::string& why);

// "exited with status 3", "was killed by signal 9 (Killed)".
std::string describe_status(int status);

} // namespace ulmpi::rt::mpirun
