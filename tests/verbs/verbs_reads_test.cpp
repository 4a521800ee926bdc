// Reads that do not wait (VerbsPath::start_get, verbs_path.h "Rendezvous")
// on the software device, two ranks in two forked processes: many reads in
// flight at once, each reported once through the sink, every byte in its
// place; reads given up while the port is down (abandon_gets) end at once
// with an error and their posted pieces stay orphans until the device
// serves them; reads from a process that dies end with an error and the
// path reported down to it.
#include "tests/verbs/verbs_pair.h"

#include <algorithm>

namespace ulmpi::test {
namespace {

using path::verbs::VerbsOptions;
using path::verbs::VerbsPath;

VerbsOptions options() { return small_verbs_options(); }

std::vector<std::byte> pattern(std::size_t n, int seed)
{
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<std::byte>((i * 131 + i / 4093 + static_cast<std::size_t>(seed) * 17) & 0xff);
    }
    return v;
}

// Rank 0 describes `a` and sends the key; rank 1 returns it.
std::vector<std::byte> share_key(VerbsPath& p, RecordingSink& s, int rank, std::vector<std::byte>& a)
{
    if (rank == 0) {
        iovec src{a.data(), a.size()};
        std::byte key[256];
        const std::size_t klen = p.make_rkey(&src, 1, key, sizeof key);
        EXPECT_GT(klen, 0u);
        EXPECT_TRUE(send_bytes(p, s, 1, key, klen));
        return {};
    }
    EXPECT_TRUE(wait_frags(p, s, 1));
    return s.frags.empty() ? std::vector<std::byte>{} : s.frags.back();
}

// Progresses until `done` (false after `ms`).
template <class F> bool until(VerbsPath& p, RecordingSink& s, F done, int ms = 20000)
{
    const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{ms} * 1000000;
    while (!done()) {
        p.progress(s);
        if (rt::monotonic_ns() > end) {
            return false;
        }
    }
    return true;
}

TEST(VerbsReads, started_without_waiting_pipeline_up_to_the_depth_and_land_whole)
{
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        VerbsOptions o = options();
        o.read_chunk = 16384; // several pieces per read
        auto p = wire(boot, f.name, o);
        if (p == nullptr) {
            return 1;
        }
        RecordingSink s;
        const std::uint32_t depth = p->info().get_depth;
        EXPECT_EQ(depth, VerbsPath::kGetDepth);
        const std::size_t n = depth + 16, each = 40000;
        std::vector<std::byte> a = pattern(n * each, 5);
        const std::vector<std::byte> key = share_key(*p, s, rank, a);
        if (rank == 0) {
            EXPECT_TRUE(wait_frags(*p, s, 1)); // rank 1's verdict
            EXPECT_TRUE(!s.frags.empty() && s.frags.back().size() == 1 && s.frags.back()[0] == std::byte{1});
            EXPECT_TRUE(boot.fence().ok());
            return ::testing::Test::HasFailure() ? 1 : 0;
        }
        std::vector<std::byte> b(n * each, std::byte{0});
        std::size_t started = 0, agains = 0, most = 0;
        const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{20} * 1000000000;
        while (s.gets_done.size() < n && rt::monotonic_ns() < end) {
            while (started < n) {
                iovec dst[2] = {{b.data() + started * each, each / 3},
                                {b.data() + started * each + each / 3, each - each / 3}};
                const rt::Status st = p->start_get(0, key.data(), key.size(), started * each, dst, 2, started);
                if (st == rt::Errc::again) {
                    ++agains;
                    break;
                }
                EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
                if (!st.ok()) {
                    return 1;
                }
                ++started;
                most = std::max(most, p->pieces_in_flight());
            }
            p->progress(s);
        }
        EXPECT_EQ(s.gets_done.size(), n);
        EXPECT_GT(agains, 0u) << "more reads than the depth were never refused";
        EXPECT_GT(most, 1u) << "the pieces went one at a time";
        EXPECT_LE(most, std::size_t{VerbsPath::kMaxPieces});
        std::vector<int> seen(n, 0);
        for (const auto& [token, code] : s.gets_done) {
            EXPECT_EQ(code, rt::Errc::ok) << "read " << token;
            if (token < n) {
                ++seen[token];
            }
        }
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
        EXPECT_TRUE(b == a);
        EXPECT_EQ(p->counters().gets, n);
        EXPECT_EQ(p->counters().get_bytes, n * each);
        EXPECT_EQ(p->pieces_in_flight(), 0u);
        // Past the key: refused at once, never reported.
        iovec over{b.data(), b.size()};
        EXPECT_EQ(p->start_get(0, key.data(), key.size(), 1, &over, 1, 999).code(), rt::Errc::protocol);
        // A cut key: refused.
        EXPECT_EQ(p->start_get(0, key.data(), key.size() - 3, 0, &over, 1, 998).code(), rt::Errc::protocol);
        for (int i = 0; i < 100; ++i) {
            p->progress(s);
        }
        EXPECT_EQ(s.gets_done.size(), n);
        EXPECT_TRUE(s.downs.empty());
        char verdict = ::testing::Test::HasFailure() ? 0 : 1;
        EXPECT_TRUE(send_bytes(*p, s, 0, &verdict, 1));
        EXPECT_TRUE(boot.fence().ok());
        return ::testing::Test::HasFailure() ? 1 : 0;
    }));
}

// The port goes down (the reader has not heard yet) and the reads posted
// wait for it; the reader gives them up: each is reported once with
// io_error, their posted pieces are orphans. The port comes back before the
// transport's timeout: the device serves the orphans, which still write
// into the reader's memory (why ULM reads into a bounce buffer where it
// may give reads up), and then there are none. A read after that is whole.
TEST(VerbsReads, given_up_while_the_port_is_down_end_once_with_an_error_and_stay_orphans_until_served)
{
    if (real_device() != nullptr) {
        GTEST_SKIP() << "needs the soft device's port control";
    }
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        VerbsOptions o = options();
        o.read_chunk = 65536;
        o.timeout = 20; // 4.3 s per try: the port is back long before
        auto p = wire(boot, f.name, o);
        if (p == nullptr) {
            return 1;
        }
        RecordingSink s;
        const std::size_t n = 6, each = 1 << 20;
        std::vector<std::byte> a = pattern(n * each, 9);
        const std::vector<std::byte> key = share_key(*p, s, rank, a);
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0) {
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, false));
        }
        EXPECT_TRUE(boot.fence().ok()); // the port is down
        std::vector<std::byte> b(n * each, std::byte{0});
        std::size_t posted = 0;
        if (rank == 1) {
            // No progress since: the reader has not seen the port go.
            for (std::size_t i = 0; i < n; ++i) {
                iovec dst{b.data() + i * each, each};
                const rt::Status st = p->start_get(0, key.data(), key.size(), i * each, &dst, 1, i);
                EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
            }
            posted = p->pieces_in_flight();
            EXPECT_GT(posted, 0u);
            EXPECT_TRUE(p->abandon_gets(0));
            EXPECT_EQ(p->orphan_reads(), posted);
            EXPECT_TRUE(until(*p, s, [&] { return s.gets_done.size() >= n; }));
            std::vector<int> seen(n, 0);
            for (const auto& [token, code] : s.gets_done) {
                EXPECT_EQ(code, rt::Errc::io_error) << "read " << token;
                if (token < n) {
                    ++seen[token];
                }
            }
            EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
            EXPECT_EQ(p->orphan_reads(), posted) << "the port is down: nothing was served";
            EXPECT_EQ(p->counters().gets, 0u);
        }
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0) {
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, true));
        }
        EXPECT_TRUE(boot.fence().ok()); // the port is up
        if (rank == 1) {
            EXPECT_TRUE(until(*p, s, [&] { return p->orphan_reads() == 0; }))
                << p->orphan_reads() << " orphan pieces never completed";
            EXPECT_EQ(s.gets_done.size(), n) << "an orphan was reported again";
            // The first piece was posted first: it landed after its read ended.
            EXPECT_TRUE(std::equal(b.begin(), b.begin() + 65536, a.begin()));
            EXPECT_TRUE(until(*p, s, [&] { return p->port_up(); }));
            std::fill(b.begin(), b.end(), std::byte{0});
            s.gets_done.clear();
            iovec dst{b.data(), 3 * 65536 + 5};
            EXPECT_TRUE(p->start_get(0, key.data(), key.size(), 7, &dst, 1, 77).ok());
            EXPECT_TRUE(until(*p, s, [&] { return !s.gets_done.empty(); }));
            EXPECT_EQ(s.gets_done.size(), 1u);
            EXPECT_EQ(s.gets_done.empty() ? rt::Errc::io_error : s.gets_done[0].second, rt::Errc::ok);
            EXPECT_TRUE(std::equal(b.begin(), b.begin() + 3 * 65536 + 5, a.begin() + 7));
            EXPECT_TRUE(p->can_reach(0));
            char verdict = ::testing::Test::HasFailure() ? 0 : 1;
            EXPECT_TRUE(send_bytes(*p, s, 0, &verdict, 1));
        } else {
            EXPECT_TRUE(until(*p, s, [&] { return s.frags.size() >= 1; }));
            EXPECT_TRUE(!s.frags.empty() && s.frags.back().size() == 1 && s.frags.back()[0] == std::byte{1});
        }
        EXPECT_TRUE(boot.fence().ok());
        return ::testing::Test::HasFailure() ? 1 : 0;
    }));
}

// The owner of the memory closes its path and exits while the reads wait
// for the port: once it is back nobody answers, the transport gives up
// (retry exceeded), every read ends once with io_error, the path is
// reported down to that peer, and no piece is left behind.
TEST(VerbsReads, reads_from_a_process_that_dies_end_with_an_error_and_the_path_down)
{
    if (real_device() != nullptr) {
        GTEST_SKIP() << "needs the soft device's port control";
    }
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        VerbsOptions o = options();
        o.read_chunk = 65536;
        o.timeout = 16; // 268 ms per try, two tries
        auto p = wire(boot, f.name, o);
        if (p == nullptr) {
            return 1;
        }
        RecordingSink s;
        const std::size_t n = 4, each = 1 << 20;
        std::vector<std::byte> a = pattern(n * each, 3);
        const std::vector<std::byte> key = share_key(*p, s, rank, a);
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0) {
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, false));
        }
        EXPECT_TRUE(boot.fence().ok()); // the port is down
        std::vector<std::byte> b(n * each, std::byte{0});
        if (rank == 1) {
            for (std::size_t i = 0; i < n; ++i) {
                iovec dst{b.data() + i * each, each};
                const rt::Status st = p->start_get(0, key.data(), key.size(), i * each, &dst, 1, i);
                EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
            }
            EXPECT_GT(p->pieces_in_flight(), 0u);
        }
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0) {
            p.reset(); // its queue pairs and registrations are gone
            EXPECT_TRUE(boot.fence().ok());
            return ::testing::Test::HasFailure() ? 1 : 0; // and so is the process
        }
        EXPECT_TRUE(boot.fence().ok());
        EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, true));
        EXPECT_TRUE(until(*p, s, [&] { return s.gets_done.size() >= n && !s.downs.empty(); }));
        std::vector<int> seen(n, 0);
        for (const auto& [token, code] : s.gets_done) {
            EXPECT_EQ(code, rt::Errc::io_error) << "read " << token;
            if (token < n) {
                ++seen[token];
            }
        }
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
        EXPECT_EQ(s.downs, std::vector<int>{0});
        EXPECT_FALSE(p->can_reach(0));
        EXPECT_EQ(p->counters().gets, 0u);
        EXPECT_TRUE(until(*p, s, [&] { return p->pieces_in_flight() == 0; }));
        EXPECT_EQ(p->orphan_reads(), 0u);
        // A read now: refused at once.
        iovec dst{b.data(), 100};
        EXPECT_EQ(p->start_get(0, key.data(), key.size(), 0, &dst, 1, 9).code(), rt::Errc::unreachable);
        return ::testing::Test::HasFailure() ? 1 : 0;
    }));
}

} // namespace
} // namespace ulmpi::test
