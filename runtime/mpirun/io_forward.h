// Output and input forwarding between mpirun and its ranks.
//
// LineForwarder reassembles one rank's stdout (or stderr) into whole lines
// and writes every batch of complete lines with one write, optionally
// prefixed by "[rank] ". mpirun is the only writer of its own stdout and
// stderr, so lines of different ranks never interleave mid-line, however the
// ranks cut their writes. A partial line is held until its newline, until the
// stream ends (then it is written as it is, plus a newline when tagging), or
// until it reaches kMaxLine (then that much is written on its own).
//
// StdinForwarder copies mpirun's standard input to one rank's stdin pipe,
// reading only while its buffer has room, so a slow reader is not flooded.
#pragma once

#include <cstddef>
#include <poll.h>
#include <string>
#include <vector>

namespace ulmpi::rt::mpirun {

class LineForwarder {
public:
    static constexpr std::size_t kMaxLine = 256 * 1024;

    // Writes to `out_fd` (not owned). `prefix` is put before every line.
    LineForwarder(int out_fd, std::string prefix) : out_fd_(out_fd), prefix_(std::move(prefix)) {}

    void feed(const char* data, std::size_t len);
    // The stream ended: write what is left.
    void finish();
    std::size_t pending() const { return partial_.size(); }

private:
    void write_out(const std::string& buf);

    int out_fd_;
    std::string prefix_;
    std::string partial_;     // bytes after the last newline
    bool mid_line_ = false;   // a piece of the current line was already written
    bool broken_ = false;     // the output is gone (EPIPE): discard
};

// Reads a rank's stdout or stderr pipe into a LineForwarder.
class OutputStream {
public:
    OutputStream(int fd, int out_fd, std::string prefix)
        : fd_(fd), lines_(out_fd, std::move(prefix))
    {
    }
    ~OutputStream();
    OutputStream(const OutputStream&) = delete;
    OutputStream& operator=(const OutputStream&) = delete;

    int fd() const { return fd_; }
    bool open() const { return fd_ >= 0; }
    // Reads what is there; at end of stream flushes and closes.
    void on_ready();
    // Gives up on the stream (writers that never close it): flush and close.
    void close_now();

private:
    int fd_;
    LineForwarder lines_;
};

class StdinForwarder {
public:
    static constexpr std::size_t kBuffer = 64 * 1024;

    StdinForwarder() = default;
    ~StdinForwarder();
    StdinForwarder(const StdinForwarder&) = delete;
    StdinForwarder& operator=(const StdinForwarder&) = delete;

    // `src` is mpirun's stdin (not owned), `dst` the write end of the rank's
    // stdin pipe (owned; made non-blocking here).
    void start(int src, int dst);
    bool active() const { return dst_ >= 0; }
    // The target rank is gone: stop.
    void stop();

    void add_fds(std::vector<pollfd>& fds) const;
    void handle(const pollfd* fds, std::size_t n);

private:
    void pump_out();

    int src_ = -1;
    int dst_ = -1;
    bool src_eof_ = false;
    std::string buf_;
};

} // namespace ulmpi::rt::mpirun
