#include "runtime/mpirun/io_forward.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {

void LineForwarder::write_out(const std::string& buf)
{
    // Loop over short writes: mpirun writes one batch completely before the
    // next, which is what keeps lines whole.
    std::size_t off = 0;
    while (!broken_ && off < buf.size()) {
        ssize_t n = ::write(out_fd_, buf.data() + off, buf.size() - off);
        if (n > 0) {
            off += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            // Someone made our output non-blocking: wait for room.
            pollfd p{out_fd_, POLLOUT, 0};
            (void)::poll(&p, 1, 100);
        } else {
            broken_ = true; // EPIPE and friends: keep draining, write nothing
        }
    }
}

void LineForwarder::feed(const char* data, std::size_t len)
{
    std::string out;
    std::size_t start = 0;
    for (std::size_t i = 0; i < len; ++i) {
        if (data[i] != '\n') {
            continue;
        }
        if (!mid_line_) {
            out += prefix_;
        }
        out.append(partial_);
        partial_.clear();
        out.append(data + start, i + 1 - start);
        start = i + 1;
        mid_line_ = false;
    }
    partial_.append(data + start, len - start);
    if (partial_.size() >= kMaxLine) {
        // A "line" this long is written in pieces; the prefix stays at its start.
        if (!mid_line_) {
            out += prefix_;
        }
        out.append(partial_);
        partial_.clear();
        mid_line_ = true;
    }
    if (!out.empty()) {
        write_out(out);
    }
}

void LineForwarder::finish()
{
    if (partial_.empty()) {
        return;
    }
    std::string out;
    if (!mid_line_) {
        out += prefix_;
    }
    out.append(partial_);
    if (!prefix_.empty()) {
        out.push_back('\n'); // the next tagged line must start on its own line
    }
    partial_.clear();
    mid_line_ = false;
    write_out(out);
}

void ReplicaOutput::feed(int stream, const char* data, std::size_t len)
{
    std::uint64_t& seen = seen_[static_cast<std::size_t>(stream)];
    const std::uint64_t end = seen + len;
    if (end > written_) {
        const std::uint64_t skip = written_ > seen ? written_ - seen : 0;
        lines_.feed(data + skip, static_cast<std::size_t>(len - skip));
        written_ = end;
    }
    seen = end;
}

void ReplicaOutput::finish(int stream)
{
    (void)stream;
    if (--open_ == 0) {
        lines_.finish();
    }
}

void OutputSink::feed(const char* data, std::size_t len)
{
    if (own_) {
        own_->feed(data, len);
    } else {
        merged_->feed(stream_, data, len);
    }
}

void OutputSink::finish()
{
    if (own_) {
        own_->finish();
    } else if (!finished_) {
        finished_ = true;
        merged_->finish(stream_);
    }
}

OutputStream::~OutputStream() { close_now(); }

void OutputStream::on_ready()
{
    char buf[65536];
    for (int rounds = 0; fd_ >= 0 && rounds < 16; ++rounds) {
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
            lines_.feed(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        close_now(); // end of stream (or an error, which ends it too)
    }
}

void OutputStream::close_now()
{
    if (fd_ < 0) {
        return;
    }
    // Take what is still in the pipe, then close.
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) {
            lines_.feed(buf, static_cast<std::size_t>(n));
        } else if (!(n < 0 && errno == EINTR)) {
            break;
        }
    }
    lines_.finish();
    ::close(fd_);
    fd_ = -1;
}

StdinForwarder::~StdinForwarder() { stop(); }

void StdinForwarder::start(int src, int dst)
{
    src_ = src;
    dst_ = dst;
    src_eof_ = false;
    int fl = ::fcntl(dst_, F_GETFL);
    if (fl >= 0) {
        (void)::fcntl(dst_, F_SETFL, fl | O_NONBLOCK);
    }
}

void StdinForwarder::stop()
{
    if (dst_ >= 0) {
        ::close(dst_);
        dst_ = -1;
    }
    buf_.clear();
}

void StdinForwarder::add_fds(std::vector<pollfd>& fds) const
{
    if (dst_ < 0) {
        return;
    }
    if (!src_eof_ && buf_.size() < kBuffer) {
        fds.push_back(pollfd{src_, POLLIN, 0});
    }
    if (!buf_.empty()) {
        fds.push_back(pollfd{dst_, POLLOUT, 0});
    }
}

void StdinForwarder::handle(const pollfd* fds, std::size_t n)
{
    for (std::size_t i = 0; i < n && dst_ >= 0; ++i) {
        if (fds[i].revents == 0) {
            continue;
        }
        if (fds[i].fd == src_ && !src_eof_) {
            // poll said readable: one read does not block (mpirun's stdin is
            // shared with its parent, so it is never made non-blocking).
            char buf[16384];
            std::size_t room = kBuffer - buf_.size();
            ssize_t r = ::read(src_, buf, room < sizeof buf ? room : sizeof buf);
            if (r > 0) {
                buf_.append(buf, static_cast<std::size_t>(r));
            } else if (!(r < 0 && (errno == EINTR || errno == EAGAIN))) {
                src_eof_ = true;
            }
        }
        if (fds[i].fd == dst_ || !buf_.empty()) {
            pump_out();
        }
    }
    if (dst_ >= 0 && src_eof_ && buf_.empty()) {
        stop(); // the rank sees end of file
    }
}

void StdinForwarder::pump_out()
{
    while (dst_ >= 0 && !buf_.empty()) {
        ssize_t w = ::write(dst_, buf_.data(), buf_.size());
        if (w > 0) {
            buf_.erase(0, static_cast<std::size_t>(w));
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && errno == EAGAIN) {
            return;
        } else {
            stop(); // the rank closed its stdin or is gone
            src_eof_ = true;
            return;
        }
    }
}

} // namespace ulmpi::rt::mpirun
