// The path conformance suite: what paths/path.h promises, checked on every
// path, each also wrapped in the lossy decorator. Adding a path is one line
// in kPaths below (docs/adding_a_path.md).
//
// Every test runs its ranks as forked processes (tests/support/
// test_bootstrap.h: run_ranks), each with an alarm() watchdog; the test
// process itself opens nothing. A path that reaches only its own process
// (self) runs as one rank that sends to itself. Each rank makes its path
// through the registry, as libmpi does, after setting the case's
// parameters, with ULMPI_PATH_INCLUDE naming the path alone.
//
// Variants of every path:
//   plain         the path itself: the whole contract.
//   lossy_clean   lossy(path) with every rate 0: the decorator keeps the
//                 contract of the path it wraps (staging, queueing,
//                 pass-through of get()).
//   lossy         lossy(path) with drops, duplicates, corruption,
//                 reordering and delays: the path no longer promises
//                 delivery (ULM's reliability recovers, tests/unit/ulm); the
//                 suite checks the decorator's own claims instead: what
//                 arrives is what was sent, faulted as counted, never lost
//                 for lack of room.
//
// Test fragments: a 16-byte header (its first byte is its length, which is
// what set_frag_header_length() answers) then payload bytes derived from
// (sender, sequence number, offset); the sequence number counts every
// fragment a rank sends in one test, over both lanes.
#include "tests/support/test_bootstrap.h"

#include "paths/lossy/lossy_path.h"
#include "paths/path.h"
#include "paths/registry.h"
#include "runtime/clock.h"
#include "runtime/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sched.h>
#include <string>
#include <utility>
#include <vector>

namespace ulmpi::test {
namespace {

using path::Lane;
using path::PathInfo;
using path::RxFrag;
using path::SendResult;
using path::TxBuffer;

// ---------------------------------------------------------------------------
// The paths under test. One line per path.

struct PathCase {
    const char* kind; // its name in the registry (paths/<kind>/)
    int ranks;        // 2; 1 when the path reaches only its own process (self)
    // Parameters each rank sets before the registry makes the path.
    // "@SOFT_VERBS@" stands for the software verbs device's library
    // (meson passes it in ULMPI_TEST_SOFT_VERBS; the case skips without it).
    std::vector<std::pair<const char*, const char*>> params;
    // For a path that can fail (PathInfo::can_fail): whether it has evidence
    // of its own when the peer process dies (a connection's retries run
    // out). A datagram path has none: it keeps answering, and ULM's silence
    // timer finds the peer dead.
    bool reports_peer_loss;
    // The test's name when one kind runs in several set-ups (letters,
    // digits, '_'); the kind otherwise.
    const char* label = nullptr;

    const char* name() const { return label != nullptr ? label : kind; }
};

// clang-format off
const std::vector<PathCase> kPaths = {
    {"self", 1, {}, false},
    {"shm", 2, {{"shm_fifo_slots", "16"}, {"shm_small_frags", "16"}, {"shm_large_frags", "8"}},
     false},
    {"udp", 2, {{"udp_if", "lo"}}, false},
    {"verbs", 2, {{"verbs_device", "soft:@SOFT_VERBS@"}, {"verbs_timeout", "4"}}, true},
    // The ofi path over each provider it claims (skipped, naming it, where
    // libfabric does not offer it); a send stuck 500 ms is its evidence of
    // a lost peer.
    {"ofi", 2, {{"ofi_provider", "tcp;ofi_rxm"}, {"ofi_iface", "lo"}, {"ofi_everywhere", "on"},
                {"ofi_send_timeout_ms", "500"}}, true, "ofi_tcp"},
    {"ofi", 2, {{"ofi_provider", "udp;ofi_rxd"}, {"ofi_iface", "lo"}, {"ofi_everywhere", "on"},
                {"ofi_send_timeout_ms", "500"}}, true, "ofi_udp"},
    {"ofi", 2, {{"ofi_provider", "shm"}, {"ofi_everywhere", "on"}}, false, "ofi_shm"},
};
// clang-format on

// ---------------------------------------------------------------------------

enum class Wrap : std::uint8_t { plain, lossy_clean, lossy };

struct Variant {
    const PathCase* path;
    Wrap wrap;
};

void PrintTo(const Variant& v, std::ostream* os)
{
    *os << (v.wrap == Wrap::plain         ? ""
            : v.wrap == Wrap::lossy_clean ? "lossy_clean("
                                          : "lossy(")
        << v.path->name() << (v.wrap == Wrap::plain ? "" : ")");
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info)
{
    const char* prefix = info.param.wrap == Wrap::plain         ? ""
                         : info.param.wrap == Wrap::lossy_clean ? "lossy_clean_"
                                                                : "lossy_";
    return prefix + std::string(info.param.path->name());
}

std::vector<Variant> variants(std::initializer_list<Wrap> wraps)
{
    std::vector<Variant> v;
    for (const PathCase& c : kPaths) {
        for (Wrap w : wraps) {
            v.push_back({&c, w});
        }
    }
    return v;
}

// The faulty lossy configuration (every kind, ~5% each; seeded).
path::LossyConfig faulty_config()
{
    path::LossyConfig c;
    c.drop = 0.05;
    c.dup = 0.05;
    c.corrupt = 0.05;
    c.reorder = 0.05;
    c.delay = 0.05;
    c.seed = 29;
    c.hold_us = 300;
    return c;
}

// --- test fragments --------------------------------------------------------

constexpr std::size_t kHdr = 16;
struct FragHdr {
    std::uint8_t hlen;
    std::uint8_t from;
    std::uint8_t lane;
    std::uint8_t magic;
    std::uint32_t seq;
    std::uint32_t len;
    std::uint32_t pad;
};
static_assert(sizeof(FragHdr) == kHdr);
constexpr std::uint8_t kMagic = 0xc7;

std::size_t test_header_length(const std::byte* data, std::size_t len)
{
    return len >= kHdr && static_cast<std::uint8_t>(data[0]) == kHdr ? kHdr : 0;
}

std::byte body_byte(int from, std::uint32_t seq, std::size_t k)
{
    return static_cast<std::byte>(
        (static_cast<std::size_t>(from) * 131 + seq * 7 + k * 13 + (k >> 8)) & 0xff);
}

// The whole fragment `seq` of `from` (header and payload).
void fill_frag(std::byte* p, int from, std::uint32_t seq, std::size_t len, Lane lane)
{
    FragHdr h{static_cast<std::uint8_t>(kHdr),
              static_cast<std::uint8_t>(from),
              static_cast<std::uint8_t>(lane),
              kMagic,
              seq,
              static_cast<std::uint32_t>(len),
              0};
    std::memcpy(p, &h, kHdr);
    for (std::size_t k = kHdr; k < len; ++k) {
        p[k] = body_byte(from, seq, k);
    }
}

std::vector<std::byte> make_frag(int from, std::uint32_t seq, std::size_t len, Lane lane)
{
    std::vector<std::byte> v(len);
    fill_frag(v.data(), from, seq, len, lane);
    return v;
}

// --- the receiving side ----------------------------------------------------

// Checks every fragment as it arrives: from the peer, intact, and in the
// order info().order promises (total: sequence numbers in sending order;
// per lane: in sending order within each lane; none: any). Keeps copies
// only when asked (the lossy claims).
class Checker final : public path::Sink {
public:
    Checker(int from, PathInfo::Order order) : from_(from), order_(order) {}

    bool keep = false;  // keep a copy of every fragment (lossy claims)
    bool verify = true; // check contents and order (off under faults)
    std::vector<std::vector<std::byte>> kept;
    // Bytes of each kept fragment that could be read (all of them, unless
    // the path could not read the payload of a fragment whose header the
    // header length function does not know: a corrupted one).
    std::vector<std::size_t> kept_valid;
    std::vector<int> downs;
    std::vector<int> ups;
    std::uint64_t got = 0;
    std::uint64_t bytes = 0;
    std::uint64_t bad = 0;

    void on_frag(path::Path&, RxFrag& f) override
    {
        ++got;
        bytes += f.len;
        const std::size_t h = std::min<std::size_t>(f.len, kHdr);
        buf_.assign(f.data, f.data + (f.addressable ? f.len : h));
        std::size_t valid = f.len;
        if (!f.addressable) {
            buf_.resize(f.len);
            iovec v{buf_.data() + h, f.len - h};
            const std::size_t n = f.read_payload(0, &v, 1);
            if (n != f.len - h && verify) {
                fail("read_payload answered " + std::to_string(n) + " of " +
                     std::to_string(f.len - h) + " bytes");
            }
            valid = h + n;
        }
        if (keep) {
            kept.push_back(buf_);
            kept_valid.push_back(valid);
        }
        if (verify) {
            check(f.peer);
        }
    }
    void on_path_down(path::Path&, int peer) override { downs.push_back(peer); }
    void on_path_up(path::Path&, int peer) override { ups.push_back(peer); }
    // start_get() ends, in the order the path reported them.
    std::vector<std::pair<std::uint64_t, rt::Errc>> gets_done;
    void on_get_done(path::Path&, std::uint64_t token, rt::Status st) override
    {
        gets_done.emplace_back(token, st.code());
    }

private:
    void fail(const std::string& what)
    {
        if (bad++ < 3) {
            ADD_FAILURE() << "fragment " << got << " from " << from_ << ": " << what;
        }
    }
    void check(int peer)
    {
        if (peer != from_) {
            return fail("delivered as from rank " + std::to_string(peer));
        }
        if (buf_.size() < kHdr) {
            return fail("only " + std::to_string(buf_.size()) + " bytes");
        }
        FragHdr hd;
        std::memcpy(&hd, buf_.data(), kHdr);
        if (hd.hlen != kHdr || hd.magic != kMagic || hd.from != from_ || hd.len != buf_.size() ||
            hd.lane > 1) {
            return fail("header damaged (length " + std::to_string(hd.len) + ", " +
                        std::to_string(buf_.size()) + " arrived)");
        }
        for (std::size_t k = kHdr; k < buf_.size(); ++k) {
            if (buf_[k] != body_byte(from_, hd.seq, k)) {
                return fail("seq " + std::to_string(hd.seq) + ": payload byte " +
                            std::to_string(k) + " differs");
            }
        }
        std::int64_t& last = order_ == PathInfo::Order::per_lane ? last_[hd.lane] : last_[0];
        if (order_ != PathInfo::Order::none && static_cast<std::int64_t>(hd.seq) <= last) {
            return fail("seq " + std::to_string(hd.seq) + " after seq " + std::to_string(last));
        }
        if (order_ == PathInfo::Order::total && static_cast<std::int64_t>(hd.seq) != last + 1) {
            return fail("seq " + std::to_string(hd.seq) + " after seq " + std::to_string(last) +
                        " (one order for all)");
        }
        last = hd.seq;
    }

    int from_;
    PathInfo::Order order_;
    std::int64_t last_[2] = {-1, -1};
    std::vector<std::byte> buf_;
};

// --- a rank of a test ------------------------------------------------------

class Deadline {
public:
    explicit Deadline(double seconds)
        : end_(rt::monotonic_ns() + static_cast<rt::Nanos>(seconds * 1e9))
    {
    }
    bool passed() const { return rt::monotonic_ns() > end_; }

private:
    rt::Nanos end_;
};

std::string soft_verbs_library()
{
    const char* s = std::getenv("ULMPI_TEST_SOFT_VERBS");
    return s != nullptr ? s : "";
}

struct Rank {
    SocketBootstrap& boot;
    int me;
    int peer;
    std::unique_ptr<path::Path> path;
    path::LossyPath* lossy = nullptr;
    std::unique_ptr<Checker> sink;
    std::uint32_t next_seq = 0;

    const PathInfo& info() const { return path->info(); }

    // One progress call; gives the CPU away when nothing happened (two
    // ranks share the machine's cores with other tests).
    int poll()
    {
        const int n = path->progress(*sink);
        if (n == 0) {
            sched_yield();
        }
        return n;
    }

    // Tries to send fragment `seq` once: buffered or gathered (alternating).
    SendResult try_send(std::uint32_t seq, std::size_t len, Lane lane)
    {
        if (seq % 2 == 0) {
            TxBuffer b;
            b.lane = lane;
            if (!path->acquire(peer, len, b)) {
                return SendResult::again;
            }
            EXPECT_GE(b.cap, len);
            fill_frag(b.data, me, seq, len, lane);
            return path->commit(peer, b, len);
        }
        scratch.resize(len);
        fill_frag(scratch.data(), me, seq, len, lane);
        // Header, then the payload in two pieces.
        const std::size_t half = kHdr + (len - kHdr) / 2;
        iovec iov[3] = {{scratch.data(), kHdr},
                        {scratch.data() + kHdr, half - kHdr},
                        {scratch.data() + half, len - half}};
        return path->send(peer, iov, 3, lane);
    }

    // Sends the next fragment, progressing while the path answers again.
    bool send(std::size_t len, Lane lane, double seconds = 30)
    {
        Deadline d(seconds);
        for (;;) {
            SendResult r = try_send(next_seq, len, lane);
            if (r == SendResult::done) {
                ++next_seq;
                return true;
            }
            if (r == SendResult::failed) {
                ADD_FAILURE() << "rank " << me << ": send of " << len << " bytes failed";
                return false;
            }
            poll();
            if (d.passed()) {
                ADD_FAILURE() << "rank " << me << ": no room to send " << len << " bytes for "
                              << seconds << " s";
                return false;
            }
        }
    }

    template <class Pred> bool pump(Pred done, double seconds = 30)
    {
        Deadline d(seconds);
        while (!done()) {
            poll();
            if (d.passed()) {
                return false;
            }
        }
        return true;
    }

    // A fence that keeps progressing meanwhile: the peer may still need us
    // (credits, buffers to hand back, held fragments to release).
    bool fence()
    {
        rt::Status st = boot.fence_begin();
        Deadline d(30);
        while (st.ok()) {
            st = boot.fence_test();
            if (st.code() != rt::Errc::again) {
                break;
            }
            st = rt::Errc::ok;
            poll();
            if (d.passed()) {
                ADD_FAILURE() << "rank " << me << ": fence not done in 30 s";
                return false;
            }
        }
        EXPECT_TRUE(st.ok()) << "rank " << me << ": fence: " << rt::errc_name(st.code());
        return st.ok();
    }

    std::vector<std::byte> scratch; // a gathered send's fragment
};

// Sets the case's parameters and makes the path through the registry.
// Returns kRankSkipped (with the reason on stderr) when the path cannot run
// here, 1 on failure, 0 with `out` wired up.
int make_rank(SocketBootstrap& boot, const Variant& v, const path::LossyConfig& lossy_cfg,
              std::unique_ptr<Rank>& out)
{
    const PathCase& c = *v.path;
    std::vector<std::pair<std::string, std::string>> params = {{"path_include", c.kind}};
    for (const auto& [name, value] : c.params) {
        std::string val = value;
        if (const std::size_t at = val.find("@SOFT_VERBS@"); at != std::string::npos) {
            val.replace(at, 12, soft_verbs_library());
        }
        params.emplace_back(name, val);
    }
    for (const auto& [name, value] : params) {
        rt::ParamBase* p = rt::find_param(name);
        if (p == nullptr) {
            ADD_FAILURE() << c.kind << ": no parameter " << name;
            return 1;
        }
        ::setenv(p->env_name().c_str(), value.c_str(), 1);
        std::string why;
        if (!p->reload(why)) {
            ADD_FAILURE() << p->env_name() << "=" << value << ": " << why;
            return 1;
        }
    }
    path::set_frag_header_length(&test_header_length);
    path::set_lossy_header_length(&test_header_length);

    const int me = boot.job().rank;
    std::unique_ptr<path::Path> made;
    for (const path::RegisteredPath& r : path::registered_paths()) {
        if (std::strcmp(r.name, c.kind) == 0) {
            auto paths = r.factory(boot.job());
            if (!paths.empty()) {
                made = std::move(paths.front()); // the first rail
            }
        }
    }
    // Both ranks must agree before either wires up.
    const char usable = made != nullptr ? 1 : 0;
    if (!boot.put("usable", &usable, 1).ok() || !boot.fence().ok()) {
        ADD_FAILURE() << "rank " << me << ": bootstrap fence failed";
        return 1;
    }
    for (int r = 0; r < boot.job().size; ++r) {
        std::vector<std::byte> u;
        if (!boot.get(r, "usable", u).ok() || u.size() != 1 || u[0] != std::byte{1}) {
            if (me == 0) {
                std::fprintf(stderr, "%s made no path for rank %d here\n", c.kind, r);
            }
            return kRankSkipped;
        }
    }
    path::LossyPath* lossy = nullptr;
    if (v.wrap != Wrap::plain) {
        auto l = std::make_unique<path::LossyPath>(
            std::move(made), v.wrap == Wrap::lossy ? lossy_cfg : path::LossyConfig{}, me);
        lossy = l.get();
        made = std::move(l);
    }
    rt::Status st = made->open(boot);
    if (st.ok() && !boot.fence().ok()) {
        st = rt::Errc::io_error;
    }
    if (st.ok()) {
        st = made->connect(boot);
    }
    if (st.ok() && !boot.fence().ok()) {
        st = rt::Errc::io_error;
    }
    if (st.ok()) {
        st = made->connected(boot);
    }
    if (!st.ok()) {
        ADD_FAILURE() << "rank " << me << ": " << c.kind
                      << " wire-up: " << rt::errc_name(st.code());
        return 1;
    }
    const int peer = c.ranks == 1 ? me : 1 - me;
    out = std::make_unique<Rank>(Rank{boot, me, peer, std::move(made), lossy, nullptr});
    out->sink = std::make_unique<Checker>(peer, out->info().order);
    return 0;
}

// Removes what a test left in /dev/shm under its job id (a software verbs
// fabric outlives its ranks by design).
void remove_job_files(const std::string& jobid)
{
    DIR* d = ::opendir("/dev/shm");
    if (d == nullptr) {
        return;
    }
    while (dirent* e = ::readdir(d)) {
        if (std::strstr(e->d_name, jobid.c_str()) != nullptr) {
            ::unlink(("/dev/shm/" + std::string(e->d_name)).c_str());
        }
    }
    ::closedir(d);
}

class PathTest : public ::testing::TestWithParam<Variant> {
protected:
    void SetUp() override
    {
        const PathCase& c = *GetParam().path;
        const auto reg = path::registered_paths();
        if (std::none_of(reg.begin(), reg.end(), [&](const path::RegisteredPath& r) {
                return std::strcmp(r.name, c.kind) == 0;
            })) {
            GTEST_SKIP() << c.kind << " is not built";
        }
        for (const auto& p : c.params) {
            if (std::strstr(p.second, "@SOFT_VERBS@") != nullptr && soft_verbs_library().empty()) {
                GTEST_SKIP() << "ULMPI_TEST_SOFT_VERBS does not name the software verbs device";
            }
        }
    }

    // Runs body(rank) in every rank of the path; `watch` in the test process.
    void run(const std::function<int(Rank&)>& body, unsigned watchdog_s = 60,
             const std::function<void(const RanksRun&)>& watch = {},
             path::LossyConfig cfg = faulty_config())
    {
        const Variant v = GetParam();
        const std::string jobid = fresh_jobid("conform");
        std::vector<int> codes = run_ranks(
            v.path->ranks,
            [&](SocketBootstrap& boot) {
                std::unique_ptr<Rank> rank;
                int code = make_rank(boot, v, cfg, rank);
                if (code != 0) {
                    return code;
                }
                code = body(*rank);
                return code;
            },
            watchdog_s, watch, jobid);
        remove_job_files(jobid);
        int skipped = 0;
        for (std::size_t r = 0; r < codes.size(); ++r) {
            if (codes[r] == kRankSkipped) {
                ++skipped;
            }
            else if (codes[r] != 0) {
                ADD_FAILURE() << "rank " << r << " exited " << codes[r];
            }
        }
        if (skipped > 0) {
            std::string with;
            for (const auto& [name, value] : GetParam().path->params) {
                with += std::string(with.empty() ? "" : ", ") + name + "=" + value;
            }
            GTEST_SKIP() << GetParam().path->name() << ": the factory of path '"
                         << GetParam().path->kind << "' made no path"
                         << (with.empty() ? "" : " with " + with)
                         << " (the rank's warning above names the cause, such as a libfabric "
                            "provider not offered here)";
        }
    }
};

// Sizes worth sending: the smallest, around inline_max and the eager limit,
// the largest.
std::vector<std::size_t> interesting_sizes(const PathInfo& in)
{
    const std::size_t max = in.max_frag;
    std::vector<std::size_t> s = {kHdr, kHdr + 1, 64, 100, 1000, 4096, max - 1, max};
    for (std::uint64_t x : {std::uint64_t{in.inline_max}, in.eager_limit}) {
        for (std::int64_t d : {-1, 0, 1}) {
            s.push_back(static_cast<std::size_t>(static_cast<std::int64_t>(x) + d));
        }
    }
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    s.erase(std::remove_if(s.begin(), s.end(), [&](std::size_t n) { return n < kHdr || n > max; }),
            s.end());
    return s;
}

// ===========================================================================
// The contract (plain and lossy_clean).

class PathContract : public PathTest {};

TEST_P(PathContract, info_is_sane_and_the_peer_is_reachable)
{
    run([&](Rank& r) {
        const PathInfo& in = r.info();
        EXPECT_NE(in.name, nullptr);
        EXPECT_GT(std::strlen(in.name), 0u);
        EXPECT_NE(std::string(in.name).find(GetParam().path->kind), std::string::npos)
            << "name '" << in.name << "' for kind " << GetParam().path->kind;
        EXPECT_GT(in.bandwidth_mbs, 0);
        EXPECT_GT(in.latency_us, 0);
        EXPECT_GE(in.max_frag, path::kMaxFragHeader + 64)
            << "room for ULM's header and some payload";
        EXPECT_LE(in.inline_max, in.max_frag);
        EXPECT_GT(in.eager_limit, 0u);
        if (GetParam().path->ranks == 1) {
            EXPECT_FALSE(in.can_fail) << "a path to oneself cannot fail";
        }
        if (!in.has_get) {
            EXPECT_EQ(in.get_max, 0u);
        }
        if (GetParam().wrap == Wrap::lossy_clean) {
            EXPECT_EQ(std::string(r.path->describe()).rfind("lossy(", 0), 0u) << r.path->describe();
        }
        EXPECT_GT(std::strlen(r.path->describe()), 0u);
        EXPECT_TRUE(r.path->can_reach(r.peer));
        EXPECT_FALSE(r.path->can_reach(-1));
        EXPECT_FALSE(r.path->can_reach(r.boot.job().size));
        if (r.peer != r.me) {
            // A path between two processes may reach itself too (udp when it
            // runs alone), but it must say the same as the peer about it.
            (void)r.path->can_reach(r.me);
        }
        const path::PathCounters& k = r.path->counters();
        EXPECT_EQ(k.frags_sent + k.frags_received + k.gets, 0u) << "counters start at zero";
        return r.fence() ? 0 : 1;
    });
}

TEST_P(PathContract, wires_up_in_both_directions)
{
    run([&](Rank& r) {
        // Each rank sends one small fragment on each lane and hears its peer's.
        EXPECT_TRUE(r.send(40, Lane::control));
        EXPECT_TRUE(r.send(41, Lane::bulk));
        EXPECT_TRUE(r.pump([&] { return r.sink->got >= 2; }))
            << "rank " << r.me << " heard " << r.sink->got;
        EXPECT_TRUE(r.fence());
        EXPECT_EQ(r.sink->got, 2u);
        EXPECT_TRUE(r.sink->downs.empty());
        EXPECT_EQ(r.path->counters().frags_sent, 2u);
        EXPECT_EQ(r.path->counters().frags_received, 2u);
        EXPECT_EQ(r.path->counters().bytes_sent, 81u);
        return 0;
    });
}

TEST_P(PathContract, fragments_of_every_size_arrive_intact_on_both_lanes)
{
    run([&](Rank& r) {
        const std::vector<std::size_t> sizes = interesting_sizes(r.info());
        std::uint64_t sent_bytes = 0;
        for (Lane lane : {Lane::control, Lane::bulk}) {
            for (std::size_t n : sizes) {
                EXPECT_TRUE(r.send(n, lane)) << n << " bytes";
                sent_bytes += n;
                r.poll();
            }
        }
        const std::uint64_t want = 2 * sizes.size();
        EXPECT_TRUE(r.pump([&] { return r.sink->got >= want; }))
            << "heard " << r.sink->got << " of " << want;
        EXPECT_TRUE(r.fence());
        EXPECT_EQ(r.sink->got, want);
        EXPECT_EQ(r.sink->bad, 0u);
        EXPECT_EQ(r.path->counters().bytes_sent, sent_bytes);
        EXPECT_EQ(r.path->counters().bytes_received, sent_bytes); // both send the same
        return 0;
    });
}

TEST_P(PathContract, many_fragments_in_flight_both_ways_keep_the_promised_order)
{
    constexpr std::uint32_t kFrags = 3000;
    run([&](Rank& r) {
        const std::size_t max = r.info().max_frag;
        std::mt19937 rng(11 + static_cast<unsigned>(r.me));
        std::uint64_t sent_bytes = 0;
        Deadline d(40); // before the 60 s watchdog: a stall says where it stands
        while (r.next_seq < kFrags || r.sink->got < kFrags) {
            // Send until the path says again, then progress.
            while (r.next_seq < kFrags) {
                const Lane lane = rng() % 3 == 0 ? Lane::bulk : Lane::control;
                std::size_t n = kHdr + rng() % 200;
                if (rng() % 8 == 0) {
                    n = kHdr + rng() % (max - kHdr + 1);
                }
                const SendResult res = r.try_send(r.next_seq, n, lane);
                if (res != SendResult::done) {
                    EXPECT_NE(res, SendResult::failed);
                    break;
                }
                ++r.next_seq;
                sent_bytes += n;
            }
            r.poll();
            if (d.passed()) {
                ADD_FAILURE() << "rank " << r.me << ": sent " << r.next_seq << ", heard "
                              << r.sink->got << " frags_sent " << r.path->counters().frags_sent
                              << " frags_received " << r.path->counters().frags_received
                              << " again " << r.path->counters().send_again << " "
                              << r.path->describe();
                return 1;
            }
        }
        EXPECT_TRUE(r.fence());
        EXPECT_EQ(r.sink->bad, 0u);
        EXPECT_EQ(r.path->counters().frags_sent, kFrags);
        EXPECT_EQ(r.path->counters().frags_received, kFrags);
        EXPECT_EQ(r.path->counters().bytes_sent, sent_bytes);
        return 0;
    });
}

// The receiver does not progress; the sender sends until the path answers
// again (a path with room without end, self, never does: a cap ends it). The
// answer consumed nothing; once the receiver progresses, everything arrives.
// Sends until `again`; returns how many bytes went.
std::uint64_t fill_until_again(Rank& r, std::uint32_t cap, bool& saw_again)
{
    constexpr std::uint64_t kByteCap = 32u << 20;
    std::uint64_t bytes = 0;
    saw_again = false;
    Deadline d(30);
    while (r.next_seq < cap && bytes < kByteCap && !d.passed()) {
        const std::size_t n = r.next_seq % 16 == 15 ? r.info().max_frag : kHdr + r.next_seq % 300;
        const SendResult res =
            r.try_send(r.next_seq, n, r.next_seq % 2 == 0 ? Lane::control : Lane::bulk);
        if (res == SendResult::again) {
            saw_again = true;
            break;
        }
        EXPECT_EQ(res, SendResult::done);
        ++r.next_seq;
        bytes += n;
    }
    return bytes;
}

// After the sender put how many it sent and a fence, the receiver waits for
// all of them; a last fence keeps the sender progressing meanwhile.
bool receive_all_sent(Rank& r)
{
    const bool receiver = r.peer == 0;
    if (receiver) {
        std::vector<std::byte> v;
        std::uint32_t sent = 0;
        if (!r.boot.get(0, "sent", v).ok() || v.size() != sizeof sent) {
            ADD_FAILURE() << "the sender did not say how many it sent";
            return false;
        }
        std::memcpy(&sent, v.data(), sizeof sent);
        EXPECT_TRUE(r.pump([&] { return r.sink->got >= sent; }))
            << "heard " << r.sink->got << " of " << sent;
        EXPECT_EQ(r.sink->got, sent);
        EXPECT_EQ(r.sink->bad, 0u);
    }
    return r.fence();
}

TEST_P(PathContract, a_full_path_answers_again_and_then_delivers_everything)
{
    run([&](Rank& r) {
        const bool sender = r.me == 0;
        if (sender) {
            bool saw_again = false;
            (void)fill_until_again(r, 20000, saw_again);
            EXPECT_EQ(r.path->counters().frags_sent, r.next_seq)
                << "an answer of again sent nothing";
            if (saw_again) {
                EXPECT_GT(r.path->counters().send_again, 0u) << "again answered but not counted";
                TxBuffer b;
                b.lane = Lane::control;
                // Still full while nobody reads (a path may let one through
                // to probe a window, so this is no hard rule; the count is).
                (void)r.path->acquire(r.peer, kHdr, b);
            }
        }
        // The receiver has not progressed so far; now it does (in the fence).
        if (!r.boot.fence().ok()) {
            return 1;
        }
        if (sender) {
            const std::uint32_t total = r.next_seq + 2000;
            while (r.next_seq < total) {
                if (!r.send(kHdr + r.next_seq % 500,
                            r.next_seq % 3 == 0 ? Lane::bulk : Lane::control)) {
                    return 1;
                }
            }
            EXPECT_TRUE(r.boot.put("sent", &r.next_seq, sizeof r.next_seq).ok());
        }
        if (!r.fence()) {
            return 1;
        }
        return receive_all_sent(r) ? 0 : 1;
    });
}

// Remote memory of the single-copy test: three pieces of one buffer.
constexpr std::size_t kGetBuf = 1000000;
struct Piece {
    std::size_t off;
    std::size_t len;
};
constexpr Piece kPieces[] = {{0, 1000}, {5000, 300000}, {400000, 200000}};
constexpr std::size_t kDescribed = 501000;
std::byte get_byte(std::size_t i)
{
    return static_cast<std::byte>((i * 7 + (i >> 9)) & 0xff);
}
std::byte packed_byte(std::size_t pos)
{
    for (const Piece& p : kPieces) {
        if (pos < p.len) {
            return get_byte(p.off + pos);
        }
        pos -= p.len;
    }
    return std::byte{0};
}

// Fragments carrying a test message (a key, a verdict) after the header.
bool send_message(Rank& r, const void* data, std::size_t len)
{
    const std::uint32_t seq = r.next_seq;
    std::vector<std::byte> f = make_frag(r.me, seq, kHdr + len, Lane::control);
    std::memcpy(f.data() + kHdr, data, len);
    iovec iov{f.data(), f.size()};
    Deadline d(30);
    for (;;) {
        const SendResult res = r.path->send(r.peer, &iov, 1, Lane::control);
        if (res == SendResult::done) {
            ++r.next_seq;
            return true;
        }
        if (res == SendResult::failed || d.passed()) {
            ADD_FAILURE() << "rank " << r.me << ": message not sent";
            return false;
        }
        r.poll();
    }
}

std::vector<std::byte> wait_message(Rank& r, std::size_t index)
{
    if (!r.pump([&] { return r.sink->kept.size() > index; })) {
        ADD_FAILURE() << "rank " << r.me << ": no message " << index;
        return {};
    }
    const auto& f = r.sink->kept[index];
    return std::vector<std::byte>(f.begin() + kHdr, f.end());
}

TEST_P(PathContract, get_reads_the_peers_memory_and_refuses_wrong_keys)
{
    enum : std::uint8_t { kOk = 0, kFailed = 1 };
    run([&](Rank& r) {
        r.sink->verify = false; // messages carry keys, not the pattern
        r.sink->keep = true;
        std::vector<std::byte> mem(kGetBuf);
        for (std::size_t i = 0; i < kGetBuf; ++i) {
            mem[i] = get_byte(i);
        }
        iovec iov[3];
        for (int i = 0; i < 3; ++i) {
            iov[i] = {mem.data() + kPieces[i].off, kPieces[i].len};
        }
        std::byte key[512];
        if (!r.info().has_get) {
            EXPECT_EQ(r.path->make_rkey(iov, 3, key, sizeof key), 0u);
            std::vector<std::byte> local(100);
            iovec l{local.data(), local.size()};
            EXPECT_EQ(r.path->get(r.peer, key, 16, 0, &l, 1), rt::Errc::not_supported);
            return r.fence() ? 0 : 1;
        }
        const bool owner = r.me == 0;    // describes its memory
        const bool reader = r.peer == 0; // reads it
        std::size_t keylen = 0;
        if (owner) {
            EXPECT_EQ(r.path->make_rkey(iov, 3, key, 4), 0u)
                << "a key that does not fit must not be made";
            keylen = r.path->make_rkey(iov, 3, key, sizeof key);
            EXPECT_GT(keylen, 0u) << "has_get, but no key for three pieces in " << sizeof key
                                  << " bytes";
            if (!send_message(r, key, std::max<std::size_t>(keylen, 1))) {
                return 1;
            }
        }
        if (reader) {
            std::vector<std::byte> k = wait_message(r, 0);
            std::uint8_t verdict = kOk;
            const std::uint64_t get_max = r.info().get_max;
            struct Read {
                std::uint64_t offset;
                std::size_t len;
            };
            std::uint64_t ok_gets = 0;
            for (Read rd : {Read{0, kDescribed}, Read{999, 5000}, Read{300900, 200},
                            Read{500000, 1000}, Read{1, 1}}) {
                if (get_max != 0 && rd.len > get_max) {
                    continue;
                }
                std::vector<std::byte> local(rd.len, std::byte{0});
                iovec liov[2] = {{local.data(), rd.len / 2},
                                 {local.data() + rd.len / 2, rd.len - rd.len / 2}};
                const rt::Status st = r.path->get(r.peer, k.data(), k.size(), rd.offset, liov, 2);
                EXPECT_TRUE(st.ok()) << "get of " << rd.len << " at " << rd.offset << ": "
                                     << rt::errc_name(st.code());
                ok_gets += st.ok() ? 1 : 0;
                for (std::size_t i = 0; i < rd.len; ++i) {
                    if (local[i] != packed_byte(rd.offset + i)) {
                        ADD_FAILURE() << "get at " << rd.offset << ": byte " << i << " differs";
                        break;
                    }
                }
            }
            EXPECT_EQ(r.path->counters().gets, ok_gets);
            // Wrong keys: refused, and the path goes on working.
            std::vector<std::byte> local(1000);
            iovec liov{local.data(), local.size()};
            EXPECT_FALSE(r.path->get(r.peer, k.data(), k.size(), kDescribed - 999, &liov, 1).ok())
                << "reading past the described memory must fail";
            if (k.size() > 3) {
                std::vector<std::byte> whole(kDescribed);
                iovec wiov{whole.data(), whole.size()};
                EXPECT_FALSE(r.path->get(r.peer, k.data(), k.size() - 3, 0, &wiov, 1).ok())
                    << "a cut key must be refused";
            }
            EXPECT_FALSE(r.path->get(r.peer, k.data(), 0, 0, &liov, 1).ok())
                << "an empty key must be refused";
            EXPECT_EQ(r.path->counters().gets, ok_gets) << "a refused get is not counted";
            if (r.info().get_depth == 0) {
                EXPECT_EQ(r.path->start_get(r.peer, k.data(), k.size(), 0, &liov, 1, 1),
                          rt::Errc::not_supported);
            } else {
                // The same reads started at once, each ended once through
                // the sink, every byte where it belongs.
                const Read reads[] = {{0, kDescribed}, {999, 5000}, {300900, 200}, {500000, 1000},
                                      {1, 1}};
                std::vector<std::vector<std::byte>> locals;
                for (const Read& rd : reads) {
                    locals.emplace_back(rd.len, std::byte{0});
                }
                std::size_t started = 0;
                for (std::size_t i = 0; i < std::size(reads); ++i) {
                    const Read rd = reads[i];
                    std::byte* l = locals[i].data();
                    iovec two[2] = {{l, rd.len / 2}, {l + rd.len / 2, rd.len - rd.len / 2}};
                    rt::Status st = r.path->start_get(r.peer, k.data(), k.size(), rd.offset, two, 2,
                                                      100 + i);
                    while (st == rt::Errc::again) { // the path's depth is full: wait for an end
                        const std::size_t ended = r.sink->gets_done.size();
                        EXPECT_TRUE(r.pump([&] { return r.sink->gets_done.size() > ended; }));
                        st = r.path->start_get(r.peer, k.data(), k.size(), rd.offset, two, 2, 100 + i);
                    }
                    EXPECT_TRUE(st.ok()) << "start_get of " << rd.len << " at " << rd.offset << ": "
                                         << rt::errc_name(st.code());
                    started += st.ok() ? 1 : 0;
                }
                EXPECT_TRUE(r.pump([&] { return r.sink->gets_done.size() >= started; }))
                    << r.sink->gets_done.size() << " of " << started << " reads ended";
                std::vector<int> seen(std::size(reads), 0);
                for (const auto& [token, code] : r.sink->gets_done) {
                    EXPECT_EQ(code, rt::Errc::ok) << "read " << token;
                    if (token >= 100 && token < 100 + std::size(reads)) {
                        ++seen[token - 100];
                    } else {
                        ADD_FAILURE() << "a read ended that was never started: " << token;
                    }
                }
                for (std::size_t i = 0; i < std::size(reads); ++i) {
                    EXPECT_EQ(seen[i], 1) << "read " << i << " ended " << seen[i] << " times";
                    for (std::size_t b = 0; b < reads[i].len; ++b) {
                        if (locals[i][b] != packed_byte(reads[i].offset + b)) {
                            ADD_FAILURE() << "start_get at " << reads[i].offset << ": byte " << b
                                          << " differs";
                            break;
                        }
                    }
                }
                // Past the described memory: refused at once, never reported.
                const std::size_t ended = r.sink->gets_done.size();
                EXPECT_FALSE(r.path->start_get(r.peer, k.data(), k.size(), kDescribed - 999, &liov, 1, 7)
                                 .ok());
                for (int i = 0; i < 20; ++i) {
                    r.path->progress(*r.sink);
                }
                EXPECT_EQ(r.sink->gets_done.size(), ended) << "a refused read was reported";
            }
            if (::testing::Test::HasFailure()) {
                verdict = kFailed;
            }
            if (!send_message(r, &verdict, 1)) {
                return 1;
            }
        }
        if (owner) {
            // The reader's verdict (self: the message after our key).
            std::vector<std::byte> v = wait_message(r, reader ? 1 : 0);
            EXPECT_EQ(v.size(), 1u);
            EXPECT_EQ(v.empty() ? std::uint8_t{kFailed} : static_cast<std::uint8_t>(v[0]),
                      std::uint8_t{kOk})
                << "the reader failed";
        }
        return r.fence() ? 0 : 1;
    });
}

// Both ranks fill the path towards each other, nobody reads, and both close
// with fragments in flight: no crash, no hang (the watchdog), and the
// bootstrap still works afterwards.
TEST_P(PathContract, closes_with_fragments_in_flight)
{
    run(
        [&](Rank& r) {
            bool saw_again = false;
            (void)fill_until_again(r, 500, saw_again);
            if (!r.boot.fence().ok()) {
                return 1;
            }
            r.path->close();
            r.path.reset();
            return r.boot.fence().ok() ? 0 : 1;
        },
        30);
}

// A peer process that dies (exits with nothing closed: its path's resources
// go as the kernel reclaims them) while its partner sends. A path that can
// fail must never hang: every call returns, sends answer done, again or
// failed; a path that keeps connections (PathCase::reports_peer_loss)
// reports the peer down (on_path_down, or a send that answers failed)
// before long. A path that shares its processes' fate (shm) is not asked:
// the launcher tells ULM of the death.
TEST_P(PathContract, a_peer_that_dies_is_reported_down_or_answered_never_hung)
{
    const PathCase& c = *GetParam().path;
    if (c.ranks == 1) {
        GTEST_SKIP() << c.kind << " has no peer to lose";
    }
    run([&](Rank& r) {
        if (!r.info().can_fail) {
            return r.fence() ? 0 : 1;
        }
        EXPECT_TRUE(r.send(100, Lane::control));
        EXPECT_TRUE(r.pump([&] { return r.sink->got >= 1; }));
        if (!r.fence()) {
            return 1;
        }
        if (r.me == 1) {
            exit_rank(0); // nothing closed, nothing destroyed
        }
        // The bootstrap's socket closes when rank 1 is gone.
        Deadline gone(30);
        rt::Status st = r.boot.fence_begin();
        while (st.ok() && !gone.passed()) {
            st = r.boot.fence_test();
            st = st.code() == rt::Errc::again ? rt::Status(rt::Errc::ok) : st;
            ::usleep(1000);
        }
        EXPECT_FALSE(st.ok()) << "rank 1 did not go";
        bool failed = false;
        std::uint64_t calls = 0;
        Deadline d(c.reports_peer_loss ? 20 : 2);
        rt::Nanos longest = 0;
        while (!d.passed() && (!c.reports_peer_loss || (!failed && r.sink->downs.empty()))) {
            const rt::Nanos t0 = rt::monotonic_ns();
            const SendResult res = r.try_send(r.next_seq, kHdr + 100, Lane::control);
            r.next_seq += res == SendResult::done ? 1 : 0;
            failed = failed || res == SendResult::failed;
            r.poll();
            longest = std::max(longest, rt::monotonic_ns() - t0);
            ++calls;
        }
        EXPECT_LT(longest, rt::Nanos{1000000000})
            << "a send and progress took " << longest / 1000000 << " ms";
        for (int p : r.sink->downs) {
            EXPECT_TRUE(p == 1 || p == -1) << "down reported for rank " << p;
        }
        if (c.reports_peer_loss) {
            EXPECT_TRUE(failed || !r.sink->downs.empty())
                << c.kind
                << ": rank 1 is gone, yet no send failed and no down was reported in 20 s ("
                << calls << " calls)";
        }
        return 0;
    });
}

INSTANTIATE_TEST_SUITE_P(Paths, PathContract,
                         ::testing::ValuesIn(variants({Wrap::plain, Wrap::lossy_clean})),
                         variant_name);

// ===========================================================================
// The lossy decorator's claims over every path.

class LossyClaims : public PathTest {};

// Rank 0 sends fragments of distinct lengths (so that a corrupted one is
// still known by its length); the receiver keeps everything. What arrived
// must be what the decorators said they did: as many as sent, minus the
// drops, plus the duplicates of both directions; each within the bits flipped
// of a fragment that was sent; every kind of fault injected; the order
// stirred where info() says there is none.
TEST_P(LossyClaims, what_arrives_is_what_was_sent_faulted_as_counted)
{
    constexpr std::uint32_t kFrags = 600;
    run([&](Rank& r) {
        const bool sender = r.me == 0;
        const bool receiver = r.peer == 0;
        r.sink->verify = false;
        r.sink->keep = true;
        EXPECT_EQ(r.info().order, PathInfo::Order::none)
            << "lossy reorders: it must not promise an order";
        if (sender) {
            while (r.next_seq < kFrags) {
                if (!r.send(kHdr + r.next_seq, r.next_seq % 2 == 0 ? Lane::control : Lane::bulk)) {
                    return 1;
                }
            }
            // Held fragments leave only while we progress.
            EXPECT_TRUE(r.pump([&] { return r.lossy->held() == 0 || receiver; }));
            const path::LossyFaults tx = r.lossy->faults().tx;
            EXPECT_EQ(tx.frags, kFrags);
            EXPECT_TRUE(r.boot.put("tx", &tx, sizeof tx).ok());
        }
        if (!r.fence()) {
            return 1;
        }
        if (receiver) {
            std::vector<std::byte> v;
            path::LossyFaults tx;
            if (!r.boot.get(0, "tx", v).ok() || v.size() != sizeof tx) {
                ADD_FAILURE() << "no tx counts";
                return 1;
            }
            std::memcpy(&tx, v.data(), sizeof tx);
            const std::uint64_t reach = kFrags - tx.dropped + tx.duplicated;
            // Everything that left is received and released (nothing held).
            EXPECT_TRUE(r.pump([&] {
                return r.lossy->faults().rx.frags >= reach && r.lossy->held() == 0;
            })) << "the receiving decorator saw "
                << r.lossy->faults().rx.frags << " of " << reach;
            r.pump([] { return false; }, 0.05); // nothing more comes
            const path::LossyFaults rx = r.lossy->faults().rx;
            EXPECT_EQ(rx.frags, reach) << "the inner path lost or made fragments";
            EXPECT_EQ(r.sink->got, reach - rx.dropped + rx.duplicated);
            path::LossyFaults all = tx;
            all += rx;
            EXPECT_GT(all.dropped, 0u);
            EXPECT_GT(all.duplicated, 0u);
            EXPECT_GT(all.reordered, 0u);
            EXPECT_GT(all.delayed, 0u);
            EXPECT_GT(all.corrupted_header + all.corrupted_payload, 0u);
            // Each fragment by its length; bits that differ from the one sent.
            std::vector<int> copies(kFrags, 0);
            std::uint64_t modified = 0;
            std::uint64_t inversions = 0;
            std::int64_t last = -1;
            for (std::size_t n = 0; n < r.sink->kept.size(); ++n) {
                const auto& f = r.sink->kept[n];
                if (f.size() < kHdr || f.size() >= kHdr + kFrags) {
                    ADD_FAILURE() << "a fragment of " << f.size() << " bytes was never sent";
                    continue;
                }
                const auto seq = static_cast<std::uint32_t>(f.size() - kHdr);
                ++copies[seq];
                const std::vector<std::byte> want =
                    make_frag(r.peer, seq, f.size(), seq % 2 == 0 ? Lane::control : Lane::bulk);
                // A payload the path could not read (its header unknown to
                // the header length function) is compared as far as it was.
                const std::size_t valid = r.sink->kept_valid[n];
                int bits = 0;
                int header_bits = 0;
                for (std::size_t i = 0; i < valid; ++i) {
                    const int b = std::popcount(static_cast<unsigned>(f[i] ^ want[i]));
                    bits += b;
                    header_bits += i < kHdr ? b : 0;
                }
                EXPECT_LE(bits, 8)
                    << "fragment " << seq << ": more bits differ than two corruptions flip";
                if (valid < f.size()) {
                    EXPECT_GT(header_bits, 0)
                        << "fragment " << seq << ": payload unreadable, header intact";
                }
                modified += bits > 0 ? 1 : 0;
                inversions += static_cast<std::int64_t>(seq) < last ? 1 : 0;
                last = seq;
            }
            EXPECT_LE(modified, 2 * (tx.corrupted_header + tx.corrupted_payload) +
                                    rx.corrupted_header + rx.corrupted_payload);
            if (rx.corrupted_header + rx.corrupted_payload > 0) {
                EXPECT_GT(modified, 0u);
            }
            if (tx.corrupted_header + tx.corrupted_payload + rx.corrupted_header +
                    rx.corrupted_payload ==
                0) {
                EXPECT_EQ(modified, 0u);
            }
            EXPECT_GT(inversions, 0u)
                << "reordered " << all.reordered << ", delayed " << all.delayed << ", yet in order";
            const auto lost =
                static_cast<std::uint64_t>(std::count(copies.begin(), copies.end(), 0));
            EXPECT_LE(lost, tx.dropped + rx.dropped);
            EXPECT_LE(*std::max_element(copies.begin(), copies.end()), 4);
        }
        return r.fence() ? 0 : 1;
    });
}

// Without drops or corruption, every fragment arrives at least once and
// intact, also when the inner path (or the decorator's queue) is full and
// answers again: the decorator never loses a fragment for lack of room.
TEST_P(LossyClaims, nothing_is_lost_for_lack_of_room)
{
    path::LossyConfig cfg = faulty_config();
    cfg.drop = 0;
    cfg.corrupt = 0;
    cfg.queue = 16;
    run(
        [&](Rank& r) {
            const bool sender = r.me == 0;
            const bool receiver = r.peer == 0;
            r.sink->verify = false;
            r.sink->keep = true;
            if (sender) {
                bool saw_again = false;
                // The queue fills when the inner path answers again (self
                // never does: the decorator then releases held fragments
                // early rather than answer again itself).
                (void)fill_until_again(r, 3000, saw_again);
            }
            if (!r.boot.fence().ok()) {
                return 1;
            }
            if (sender) {
                const std::uint32_t total = r.next_seq + 500;
                while (r.next_seq < total) {
                    if (!r.send(kHdr + r.next_seq % 700, Lane::bulk)) {
                        return 1;
                    }
                }
                EXPECT_TRUE(r.pump([&] { return r.lossy->held() == 0 || receiver; }));
                EXPECT_TRUE(r.boot.put("sent", &r.next_seq, sizeof r.next_seq).ok());
            }
            if (!r.fence()) {
                return 1;
            }
            if (receiver) {
                std::vector<std::byte> v;
                std::uint32_t sent = 0;
                if (!r.boot.get(0, "sent", v).ok() || v.size() != sizeof sent) {
                    return 1;
                }
                std::memcpy(&sent, v.data(), sizeof sent);
                std::vector<int> copies(sent, 0);
                std::size_t seen = 0;
                auto count_new = [&] {
                    for (; seen < r.sink->kept.size(); ++seen) {
                        const auto& f = r.sink->kept[seen];
                        if (f.size() < kHdr) {
                            ADD_FAILURE() << "a fragment of " << f.size() << " bytes";
                            continue;
                        }
                        FragHdr h;
                        std::memcpy(&h, f.data(), kHdr);
                        if (h.seq >= sent ||
                            f != make_frag(r.peer, h.seq, f.size(), static_cast<Lane>(h.lane))) {
                            ADD_FAILURE() << "a fragment arrived damaged without corruption";
                            continue;
                        }
                        ++copies[h.seq];
                    }
                    return std::count(copies.begin(), copies.end(), 0) == 0;
                };
                EXPECT_TRUE(r.pump(count_new)) << std::count(copies.begin(), copies.end(), 0)
                                               << " of " << sent << " never arrived";
            }
            return r.fence() ? 0 : 1;
        },
        60, {}, cfg);
}

// lossy(path) says what the inner path says, but for the order when it
// reorders; describe() names both; closing with held fragments is safe.
TEST_P(LossyClaims, info_passes_through_and_close_drops_what_is_held)
{
    path::LossyConfig cfg = faulty_config();
    cfg.delay = 1.0; // hold everything
    cfg.drop = cfg.dup = cfg.corrupt = cfg.reorder = 0;
    cfg.hold_us = 1000000;
    run(
        [&](Rank& r) {
            const PathInfo& in = r.info();
            const PathInfo& inner = r.lossy->inner().info();
            EXPECT_STREQ(in.name, inner.name);
            EXPECT_EQ(in.max_frag, inner.max_frag);
            EXPECT_EQ(in.inline_max, inner.inline_max);
            EXPECT_EQ(in.eager_limit, inner.eager_limit);
            EXPECT_EQ(in.has_get, inner.has_get);
            EXPECT_EQ(in.can_fail, inner.can_fail);
            EXPECT_EQ(in.reliable_default, inner.reliable_default);
            EXPECT_EQ(in.order, PathInfo::Order::none);
            const std::string d = r.path->describe();
            EXPECT_EQ(d.rfind("lossy(", 0), 0u) << d;
            for (int i = 0; i < 20; ++i) {
                EXPECT_TRUE(r.send(kHdr + 10, Lane::control));
            }
            r.poll();
            EXPECT_GT(r.lossy->held(), 0u) << "delay 1.0 with a 1 s hold held nothing";
            if (!r.boot.fence().ok()) {
                return 1;
            }
            r.path->close();
            r.path.reset();
            return r.boot.fence().ok() ? 0 : 1;
        },
        30, {}, cfg);
}

INSTANTIATE_TEST_SUITE_P(Paths, LossyClaims, ::testing::ValuesIn(variants({Wrap::lossy})),
                         variant_name);

} // namespace
} // namespace ulmpi::test
