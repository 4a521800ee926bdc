// A peer of the verbs path replaced by a new process (FT-MPI REBUILD:
// VerbsPath::reset_peer / connect_peer, path.h) and a process joining a slot
// that held none (MPI_Comm_spawn: connect_peer alone), reads in flight to a
// peer when it is replaced, on the software
// device. Every rank's path lives in one forked process, each on a device
// of its own (a process slot of the fabric each), sharing one bootstrap
// board (LocalBootstrap without fences): the steps run in the order the
// job's fences would put them in.
#include "tests/verbs/verbs_pair.h"

#include <algorithm>

namespace ulmpi::test {
namespace {

using path::verbs::VerbsOptions;
using path::verbs::VerbsPath;

VerbsOptions small_options() { return small_verbs_options(16, 8); }

// One rank: its bootstrap (on the shared board) and its path.
struct Rank {
    Rank(LocalJob& job, int rank, const std::string& fabric, const VerbsOptions& opt,
         int incarnation = 0)
        : boot(job, rank)
    {
        boot.mutable_job().incarnation = incarnation;
        if (auto dev = open_device(fabric); dev != nullptr) {
            path = std::make_unique<VerbsPath>(boot.job(), dev, 1, 0, opt);
        }
    }
    LocalBootstrap boot;
    std::unique_ptr<VerbsPath> path;
    RecordingSink sink;
};

std::vector<std::byte> frag(int tag, std::size_t len)
{
    std::vector<std::byte> d(len, static_cast<std::byte>(tag));
    std::memcpy(d.data(), &tag, std::min(sizeof tag, len));
    return d;
}

int tag_of(const std::vector<std::byte>& f)
{
    int t = -1;
    std::memcpy(&t, f.data(), std::min(sizeof t, f.size()));
    return t;
}

// Progresses `ranks` until `r` holds n fragments (false after 10 s).
bool wait_all(std::initializer_list<Rank*> ranks, Rank& r, std::size_t n)
{
    const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{10} * 1000000000;
    while (r.sink.frags.size() < n && rt::monotonic_ns() < end) {
        for (Rank* x : ranks) {
            x->path->progress(x->sink);
        }
    }
    return r.sink.frags.size() >= n;
}

// Sends from `a` to rank `to` and waits for room, progressing every rank.
bool send_all(std::initializer_list<Rank*> ranks, Rank& a, int to, const std::vector<std::byte>& d)
{
    path::TxBuffer b;
    const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{10} * 1000000000;
    while (!a.path->acquire(to, d.size(), b)) {
        for (Rank* x : ranks) {
            x->path->progress(x->sink);
        }
        if (rt::monotonic_ns() > end) {
            ADD_FAILURE() << "no room to send to rank " << to << " for 10 s";
            return false;
        }
    }
    std::memcpy(b.data, d.data(), d.size());
    return a.path->commit(to, b, d.size()) == path::SendResult::done;
}

// The wire-up of two ranks on the shared board (no fences: in order).
void wire_pair(Rank& a, Rank& b)
{
    EXPECT_TRUE(a.path->open(a.boot).ok());
    EXPECT_TRUE(b.path->open(b.boot).ok());
    EXPECT_TRUE(a.path->connect(a.boot).ok());
    EXPECT_TRUE(b.path->connect(b.boot).ok());
}

int replace_case(const std::string& fabric)
{
    LocalJob job(2, LocalJob::Fences::none);
    VerbsOptions o0 = small_options();
    o0.timeout = 18; // 1 s per try: sends to the dead process stay in flight
    Rank r0(job, 0, fabric, o0);
    auto r1 = std::make_unique<Rank>(job, 1, fabric, small_options());
    if (r0.path == nullptr || r1->path == nullptr) {
        return 1;
    }
    wire_pair(r0, *r1);
    const std::size_t big = r0.path->info().inline_max + 100; // from a bounce buffer
    const std::uint32_t share = r0.path->share();

    // The first process takes credit returns from rank 0 (its grant slot at
    // rank 0 gets a count above a new process's), and leaves fragments that
    // rank 0 has not read yet.
    for (int i = 0; i < static_cast<int>(3 * share); ++i) {
        EXPECT_TRUE(send_all({&r0, r1.get()}, r0, 1, frag(1000 + i, big)));
    }
    EXPECT_TRUE(wait_all({&r0, r1.get()}, *r1, 3 * share));
    for (int i = 0; i < 50; ++i) {
        r0.path->progress(r0.sink); // its credit writes land
    }
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(send_all({r1.get()}, *r1, 0, frag(2000 + i, 64)));
    }
    for (int i = 0; i < 200; ++i) {
        r1->path->progress(r1->sink); // the device carries them; rank 0 reads nothing
    }
    // It dies: its queue pairs go (the kernel destroys them). Rank 0 has
    // sends to it in flight, every bounce buffer taken.
    r1.reset();
    std::size_t inflight = 0;
    path::TxBuffer b;
    while (r0.path->acquire(1, big, b)) {
        std::vector<std::byte> d = frag(3000, big);
        std::memcpy(b.data, d.data(), big);
        EXPECT_EQ(r0.path->commit(1, b, big), path::SendResult::done);
        ++inflight;
    }
    EXPECT_EQ(inflight, small_options().send_bufs);

    const std::uint32_t old_qpn = r0.path->qpn(1);
    EXPECT_TRUE(r0.path->reset_peer(1, r0.boot).ok());
    EXPECT_FALSE(r0.path->can_reach(1));
    EXPECT_NE(r0.path->qpn(1), old_qpn);
    for (int i = 0; i < 200; ++i) {
        r0.path->progress(r0.sink);
    }
    EXPECT_TRUE(r0.sink.frags.empty()) << "a fragment of the dead process was delivered";
    EXPECT_TRUE(r0.sink.downs.empty())
        << "the old queue pair's flushed sends spoke for the new one";

    // The new process: the usual wire-up, then rank 0 connects to it.
    Rank r1n(job, 1, fabric, small_options(), 1);
    if (r1n.path == nullptr) {
        return 1;
    }
    EXPECT_TRUE(r1n.path->open(r1n.boot).ok()); // [fence]
    EXPECT_TRUE(r1n.path->connect(r1n.boot).ok());
    EXPECT_TRUE(r0.path->connect_peer(1, r0.boot).ok());
    EXPECT_TRUE(r0.path->can_reach(1));
    EXPECT_TRUE(r1n.path->can_reach(0));
    EXPECT_EQ(r0.path->credits(1), r1n.path->share()) << "credit of the old process counted";
    EXPECT_EQ(r1n.path->credits(0), r0.path->share());

    // Both ways, more than every credit and every bounce buffer over.
    const int n = static_cast<int>(4 * share);
    for (int i = 0; i < n; ++i) {
        EXPECT_TRUE(send_all({&r0, &r1n}, r0, 1, frag(4000 + i, big)));
        EXPECT_TRUE(send_all({&r0, &r1n}, r1n, 0, frag(5000 + i, big)));
    }
    EXPECT_TRUE(wait_all({&r0, &r1n}, r1n, static_cast<std::size_t>(n)));
    EXPECT_TRUE(wait_all({&r0, &r1n}, r0, static_cast<std::size_t>(n)));
    EXPECT_EQ(r0.sink.frags.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(r1n.sink.frags.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n && i < static_cast<int>(r0.sink.frags.size()); ++i) {
        EXPECT_EQ(tag_of(r0.sink.frags[static_cast<std::size_t>(i)]), 5000 + i);
        if (i < static_cast<int>(r1n.sink.frags.size())) {
            EXPECT_EQ(tag_of(r1n.sink.frags[static_cast<std::size_t>(i)]), 4000 + i);
        }
    }
    EXPECT_TRUE(r0.sink.downs.empty());
    EXPECT_TRUE(r1n.sink.downs.empty());
    if (real_device() == nullptr) {
        soft::FabricCounters c;
        EXPECT_TRUE(soft::counters(fabric, c));
        EXPECT_EQ(c.rnr_naks, 0u) << "the new process was sent more than it granted";
    }
    return 0;
}

TEST(VerbsReplace, a_new_process_for_a_peer_is_reached_and_nothing_of_the_old_one_arrives)
{
    Fabric f;
    EXPECT_EQ(run_ranks(1, [&](SocketBootstrap&) { return replace_case(f.name); }, 60),
              std::vector<int>{0});
}

// Progresses `ranks` until `done` (false after 10 s).
template <class F> bool until_all(std::initializer_list<Rank*> ranks, F done)
{
    const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{10} * 1000000000;
    while (!done() && rt::monotonic_ns() < end) {
        for (Rank* x : ranks) {
            x->path->progress(x->sink);
        }
    }
    return done();
}

std::vector<std::byte> pattern(std::size_t n, int seed)
{
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<std::byte>((i * 131 + i / 4093 + static_cast<std::size_t>(seed) * 17) & 0xff);
    }
    return v;
}

// Rank 0 reads rank 1's memory (start_get) while the port is down, so the
// reads' pieces stay posted; rank 1 dies and rank 0 resets the peer: every
// read ends once with io_error, its posted pieces are orphans until the old
// queue pair is destroyed (connect_peer of the new process), then no piece
// is left and nothing was reported twice; the new process's memory is read
// whole.
int reads_under_reset_case(const std::string& fabric)
{
    LocalJob job(2, LocalJob::Fences::none);
    VerbsOptions o = small_options();
    o.read_chunk = 65536;
    o.timeout = 18; // 1 s per try: the reads wait for the port long enough
    Rank r0(job, 0, fabric, o);
    auto r1 = std::make_unique<Rank>(job, 1, fabric, o);
    if (r0.path == nullptr || r1->path == nullptr) {
        return 1;
    }
    wire_pair(r0, *r1);

    const std::size_t n = 5, each = 256 * 1024;
    std::vector<std::byte> a = pattern(n * each, 4);
    std::byte key[256];
    iovec src{a.data(), a.size()};
    const std::size_t klen = r1->path->make_rkey(&src, 1, key, sizeof key);
    EXPECT_GT(klen, 0u);
    EXPECT_TRUE(soft::set_port_state(fabric, 0, 1, false));
    std::vector<std::byte> b(n * each, std::byte{0});
    for (std::size_t i = 0; i < n; ++i) {
        iovec dst{b.data() + i * each, each};
        const rt::Status st = r0.path->start_get(1, key, klen, i * each, &dst, 1, i);
        EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
    }
    const std::size_t posted = r0.path->pieces_in_flight();
    EXPECT_GT(posted, 0u);
    r1.reset(); // the owner of the memory dies, its reads posted

    EXPECT_TRUE(r0.path->reset_peer(1, r0.boot).ok());
    EXPECT_EQ(r0.path->orphan_reads(), posted) << "the pieces of the old process's reads";
    EXPECT_TRUE(until_all({&r0}, [&] { return r0.sink.gets_done.size() >= n; }));
    std::vector<int> seen(n, 0);
    for (const auto& [token, code] : r0.sink.gets_done) {
        EXPECT_EQ(code, rt::Errc::io_error) << "read " << token;
        if (token < n) {
            ++seen[token];
        }
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
    EXPECT_TRUE(soft::set_port_state(fabric, 0, 1, true));
    EXPECT_TRUE(until_all({&r0}, [&] { return r0.path->port_up(); }));
    for (int i = 0; i < 200; ++i) {
        r0.path->progress(r0.sink); // the old queue pair's flushed pieces: recognised, ignored
    }
    EXPECT_EQ(r0.sink.gets_done.size(), n) << "a read ended twice";
    EXPECT_EQ(r0.path->counters().gets, 0u);

    // The new process: its wire-up; connect_peer destroys the old queue pair.
    Rank r1n(job, 1, fabric, o, 1);
    if (r1n.path == nullptr) {
        return 1;
    }
    EXPECT_TRUE(r1n.path->open(r1n.boot).ok()); // [fence]
    EXPECT_TRUE(r1n.path->connect(r1n.boot).ok());
    EXPECT_TRUE(r0.path->connect_peer(1, r0.boot).ok());
    EXPECT_EQ(r0.path->orphan_reads(), 0u) << "a piece of the old process's reads is left";
    EXPECT_EQ(r0.path->pieces_in_flight(), 0u);
    EXPECT_EQ(r0.sink.gets_done.size(), n) << "an orphan was reported";

    // Its memory, read whole: more pieces than the path posts at once.
    std::vector<std::byte> a2 = pattern(n * each, 5);
    iovec src2{a2.data(), a2.size()};
    const std::size_t klen2 = r1n.path->make_rkey(&src2, 1, key, sizeof key);
    EXPECT_GT(klen2, 0u);
    std::fill(b.begin(), b.end(), std::byte{0});
    r0.sink.gets_done.clear();
    for (std::size_t i = 0; i < n; ++i) {
        iovec dst{b.data() + i * each, each};
        const rt::Status st = r0.path->start_get(1, key, klen2, i * each, &dst, 1, 100 + i);
        EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
    }
    EXPECT_TRUE(until_all({&r0, &r1n}, [&] { return r0.sink.gets_done.size() >= n; }));
    EXPECT_EQ(r0.sink.gets_done.size(), n);
    for (const auto& [token, code] : r0.sink.gets_done) {
        EXPECT_EQ(code, rt::Errc::ok) << "read " << token;
    }
    EXPECT_TRUE(b == a2);
    EXPECT_EQ(r0.path->counters().gets, n);
    EXPECT_EQ(r0.path->orphan_reads(), 0u);
    EXPECT_EQ(r0.path->pieces_in_flight(), 0u);
    EXPECT_TRUE(r0.sink.downs.empty());
    return ::testing::Test::HasFailure() ? 1 : 0;
}

TEST(VerbsReplace, reads_in_flight_when_the_peer_is_reset_end_once_and_leave_no_piece)
{
    if (real_device() != nullptr) {
        GTEST_SKIP() << "needs the soft device's port control";
    }
    Fabric f;
    EXPECT_EQ(run_ranks(1, [&](SocketBootstrap&) { return reads_under_reset_case(f.name); }, 60),
              std::vector<int>{0});
}

// Rank 2 is a slot no process held at the wire-up; a process spawned into
// it later is connected by connect_peer() alone.
int spawn_case(const std::string& fabric)
{
    LocalJob job(3, LocalJob::Fences::none);
    Rank r0(job, 0, fabric, small_options());
    Rank r1(job, 1, fabric, small_options());
    if (r0.path == nullptr || r1.path == nullptr) {
        return 1;
    }
    wire_pair(r0, r1);
    EXPECT_FALSE(r0.path->can_reach(2));
    EXPECT_EQ(r0.path->connect_peer(2, r0.boot).code(), rt::Errc::unreachable); // nobody there yet

    Rank r2(job, 2, fabric, small_options());
    if (r2.path == nullptr) {
        return 1;
    }
    EXPECT_TRUE(r2.path->open(r2.boot).ok()); // [fence]
    EXPECT_TRUE(r2.path->connect(r2.boot).ok());
    EXPECT_TRUE(r0.path->connect_peer(2, r0.boot).ok());
    EXPECT_TRUE(r0.path->connect_peer(1, r0.boot).ok()); // known since the wire-up
    EXPECT_TRUE(r0.path->can_reach(2));
    EXPECT_TRUE(send_all({&r0, &r2}, r0, 2, frag(7, 100)));
    EXPECT_TRUE(send_all({&r0, &r2}, r2, 0, frag(8, 100)));
    EXPECT_TRUE(wait_all({&r0, &r2}, r2, 1));
    EXPECT_TRUE(wait_all({&r0, &r2}, r0, 1));
    EXPECT_EQ(r2.sink.frags.size(), 1u);
    EXPECT_EQ(r0.sink.frags.size(), 1u);
    EXPECT_TRUE(r0.sink.downs.empty());
    return 0;
}

TEST(VerbsReplace, a_process_spawned_into_an_empty_slot_is_connected_by_connect_peer)
{
    Fabric f;
    EXPECT_EQ(run_ranks(1, [&](SocketBootstrap&) { return spawn_case(f.name); }, 60),
              std::vector<int>{0});
}

} // namespace
} // namespace ulmpi::test
