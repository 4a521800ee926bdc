#include "runtime/mpirun/io_forward.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/mman.h>
#include <unistd.h>

using ulmpi::rt::mpirun::LineForwarder;

namespace {

// Captures what a LineForwarder writes, write by write.
class Capture {
public:
    Capture() : fd_(::memfd_create("io_forward_test", 0)) {}
    ~Capture() { ::close(fd_); }
    int fd() const { return fd_; }
    std::string text() const
    {
        std::string out;
        char buf[4096];
        off_t off = 0;
        ssize_t n;
        while ((n = ::pread(fd_, buf, sizeof buf, off)) > 0) {
            out.append(buf, static_cast<std::size_t>(n));
            off += n;
        }
        return out;
    }

private:
    int fd_;
};

void feed(LineForwarder& f, const std::string& s) { f.feed(s.data(), s.size()); }

} // namespace

TEST(LineForwarder, holds_a_line_until_its_newline)
{
    Capture c;
    LineForwarder f(c.fd(), "");
    feed(f, "hel");
    feed(f, "lo");
    EXPECT_EQ(c.text(), "");
    EXPECT_EQ(f.pending(), 5u);
    feed(f, " world\nnext");
    EXPECT_EQ(c.text(), "hello world\n");
    feed(f, "\n");
    EXPECT_EQ(c.text(), "hello world\nnext\n");
}

TEST(LineForwarder, prefixes_every_line)
{
    Capture c;
    LineForwarder f(c.fd(), "[3] ");
    feed(f, "a\nb\n\nc");
    feed(f, "d\n");
    EXPECT_EQ(c.text(), "[3] a\n[3] b\n[3] \n[3] cd\n");
}

TEST(LineForwarder, finish_writes_a_partial_line_as_it_is)
{
    Capture c;
    LineForwarder f(c.fd(), "");
    feed(f, "no newline");
    f.finish();
    EXPECT_EQ(c.text(), "no newline");
    f.finish();
    EXPECT_EQ(c.text(), "no newline");
}

TEST(LineForwarder, finish_ends_a_tagged_partial_line)
{
    Capture c;
    LineForwarder f(c.fd(), "[0] ");
    feed(f, "tail");
    f.finish();
    EXPECT_EQ(c.text(), "[0] tail\n");
}

TEST(LineForwarder, an_endless_line_is_written_in_pieces_with_one_prefix)
{
    Capture c;
    LineForwarder f(c.fd(), "[1] ");
    std::string chunk(LineForwarder::kMaxLine / 2 + 1, 'x');
    feed(f, chunk);
    EXPECT_EQ(c.text(), "");
    feed(f, chunk);
    EXPECT_EQ(c.text().size(), 4 + 2 * chunk.size());
    EXPECT_EQ(f.pending(), 0u);
    feed(f, "end\nnext\n");
    std::string all = c.text();
    EXPECT_EQ(all, "[1] " + chunk + chunk + "end\n[1] next\n");
}

TEST(ReplicaOutput, writes_each_byte_once_whichever_replica_is_ahead)
{
    Capture c;
    ulmpi::rt::mpirun::ReplicaOutput m(c.fd(), "[1] ", 2);
    auto feed2 = [&](int k, const std::string& s) { m.feed(k, s.data(), s.size()); };
    feed2(0, "one\ntw");
    feed2(1, "one\n");
    feed2(1, "two\nthree\n");
    feed2(0, "o\nthr");
    EXPECT_EQ(c.text(), "[1] one\n[1] two\n[1] three\n");
    m.finish(1); // replica 1 died: replica 0 goes on alone
    feed2(0, "ee\nfour");
    EXPECT_EQ(c.text(), "[1] one\n[1] two\n[1] three\n");
    m.finish(0);
    EXPECT_EQ(c.text(), "[1] one\n[1] two\n[1] three\n[1] four\n");
}

TEST(ReplicaOutput, an_unreplicated_sink_forwards_as_it_is)
{
    Capture c;
    ulmpi::rt::mpirun::OutputSink s(c.fd(), "");
    s.feed("a\nb", 3);
    s.finish();
    EXPECT_EQ(c.text(), "a\nb");
}
