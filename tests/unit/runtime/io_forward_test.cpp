#include "runtime/mpirun/io_forward.h"

#include <gtest/gtest.h>

#include <memory>
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

// mpirun drains a dead process's pipe after it has adopted the process that
// replaces it (Monitor::replica_taken retires the old streams, the poll loop
// reads them later). The dead process's last words must stay at their own
// offsets and must not move where the new process's stream starts: with one
// count per replica they did, and the new process's last bytes came out a
// second time (seen once as a stray "rrors" line after " No Errors").
TEST(ReplicaOutput, a_dead_process_drained_after_its_replacement_starts_does_not_shift_it)
{
    using ulmpi::rt::mpirun::OutputSink;
    using ulmpi::rt::mpirun::ReplicaOutput;
    Capture c;
    auto m = std::make_shared<ReplicaOutput>(c.fd(), "", 2);
    OutputSink r0(m, m->stream(0));
    OutputSink old1(m, m->stream(1));
    auto put = [](OutputSink& s, const std::string& t) { s.feed(t.data(), t.size()); };
    // Replica 1 ran ahead and printed everything, but mpirun has read only
    // its first line when it is killed.
    put(old1, "result=1\n");
    // Replica 0, behind, has printed its first line and forks replica 1 anew.
    put(r0, "result=1\n");
    m->restart(1, m->seen(0));
    OutputSink new1(m, m->stream(1));
    EXPECT_EQ(m->seen(1), 9u);
    // Now the dead process's pipe is drained.
    put(old1, " No Errors\n");
    old1.finish();
    EXPECT_EQ(m->seen(1), 9u); // the new process's stream is where it started
    put(new1, " No E");
    put(new1, "rrors\n");
    put(r0, " No Errors\n");
    new1.finish();
    r0.finish();
    EXPECT_EQ(c.text(), "result=1\n No Errors\n");
}

// A new process forked from a replica that is behind what the dead one had
// printed: its bytes already out are not written again, the rest once.
TEST(ReplicaOutput, a_new_process_behind_what_was_printed_writes_only_what_is_new)
{
    using ulmpi::rt::mpirun::OutputSink;
    using ulmpi::rt::mpirun::ReplicaOutput;
    Capture c;
    auto m = std::make_shared<ReplicaOutput>(c.fd(), "[0] ", 2);
    OutputSink r0(m, m->stream(0));
    OutputSink r1(m, m->stream(1));
    auto put = [](OutputSink& s, const std::string& t) { s.feed(t.data(), t.size()); };
    put(r0, "a\nb\n");
    put(r1, "a\n");
    r0.finish(); // replica 0 dies; replica 1 forks it anew
    m->restart(0, m->seen(1));
    OutputSink new0(m, m->stream(0));
    put(new0, "b\nc\n");
    put(r1, "b\n");
    r1.finish();
    put(new0, "d");
    new0.finish();
    EXPECT_EQ(c.text(), "[0] a\n[0] b\n[0] c\n[0] d\n");
}
