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
