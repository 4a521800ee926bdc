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
// ReplicaOutput merges the stdout of the R replicas of one rank (mpirun
// --replicas): every replica writes the same bytes, so the rank's output is
// the longest prefix any replica has written; each byte goes out once, when
// the first replica writes it, and the output survives any replica's death.
// OutputSink is where one process's stream goes: its own LineForwarder, or
// its rank's ReplicaOutput.
//
// StdinForwarder copies mpirun's standard input to one rank's stdin pipe,
// reading only while its buffer has room, so a slow reader is not flooded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

class ReplicaOutput {
public:
    ReplicaOutput(int out_fd, std::string prefix, int replicas)
        : lines_(out_fd, std::move(prefix)), seen_(static_cast<std::size_t>(replicas), 0),
          current_(static_cast<std::size_t>(replicas)), open_(replicas)
    {
        for (std::size_t k = 0; k < current_.size(); ++k) {
            current_[k] = static_cast<int>(k);
        }
    }
    // The stream replica `replica`'s present process writes: the one an
    // OutputSink for it is made with. Each process of a replica (the first,
    // and every one restart makes) has its own stream and its own count, so
    // a dead process's pipe drained late adds its bytes at its own offsets,
    // not after the start of the process that replaced it.
    int stream(int replica) const { return current_[static_cast<std::size_t>(replica)]; }
    void feed(int stream, const char* data, std::size_t len);
    // Stream `stream` ended; after the last one, what is left goes out.
    void finish(int stream);
    // Bytes replica `replica`'s present process has written (counted from
    // the start of the rank's output).
    std::uint64_t seen(int replica) const
    {
        return seen_[static_cast<std::size_t>(stream(replica))];
    }
    // A new process for replica `replica` (recovery, forked from another
    // replica that had written `from` bytes): a new stream, starting there.
    void restart(int replica, std::uint64_t from)
    {
        current_[static_cast<std::size_t>(replica)] = static_cast<int>(seen_.size());
        seen_.push_back(from);
        ++open_;
    }

private:
    LineForwarder lines_;
    std::uint64_t written_ = 0;
    std::vector<std::uint64_t> seen_; // a stream's bytes so far
    std::vector<int> current_;        // a replica's present stream
    int open_;
};

class OutputSink {
public:
    OutputSink(int out_fd, std::string prefix)
        : own_(std::make_unique<LineForwarder>(out_fd, std::move(prefix)))
    {
    }
    // `stream`: ReplicaOutput::stream of the process's replica.
    OutputSink(std::shared_ptr<ReplicaOutput> merged, int stream)
        : merged_(std::move(merged)), stream_(stream)
    {
    }
    void feed(const char* data, std::size_t len);
    void finish();

private:
    std::unique_ptr<LineForwarder> own_;
    std::shared_ptr<ReplicaOutput> merged_;
    int stream_ = 0;
    bool finished_ = false;
};

// Reads a rank's stdout or stderr pipe into a LineForwarder.
class OutputStream {
public:
    OutputStream(int fd, int out_fd, std::string prefix)
        : fd_(fd), lines_(out_fd, std::move(prefix))
    {
    }
    OutputStream(int fd, OutputSink sink) : fd_(fd), lines_(std::move(sink)) {}
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
    OutputSink lines_;
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
