// The lossy decorator (paths/lossy/lossy_path.h) over a fake inner path and a
// fake sink: fault rates within statistical tolerance, determinism for a
// seed, where corruption lands, byte-identical duplicates, held fragments
// that all come out, inner `again` without loss, direction restriction, and
// the parameters (unset: no wrapping; malformed: reported by name).
#include "paths/lossy/lossy_path.h"

#include "paths/registry.h"
#include "runtime/clock.h"
#include "runtime/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ulmpi::path {
namespace {

using Bytes = std::vector<std::byte>;

// Test wire: byte 0 is the header length (16..255), bytes 8..15 a fragment
// id; the rest of header and payload is a pattern of the id.
constexpr std::size_t kHeader = 32;

std::size_t test_header_length(const std::byte* data, std::size_t len)
{
    auto h = static_cast<std::size_t>(data[0]);
    return h >= 16 && h <= len ? h : 0;
}

Bytes make_frag(std::uint64_t id, std::size_t plen, std::size_t hlen = kHeader)
{
    Bytes b(hlen + plen);
    for (std::size_t i = 0; i < b.size(); ++i) {
        b[i] = static_cast<std::byte>((id * 131 + i * 7) & 0xff);
    }
    b[0] = static_cast<std::byte>(hlen);
    std::memcpy(b.data() + 8, &id, sizeof id);
    return b;
}

std::uint64_t frag_id(const Bytes& b)
{
    std::uint64_t id;
    std::memcpy(&id, b.data() + 8, sizeof id);
    return id;
}

struct FakeRx final : RxFrag {
    const Bytes* whole = nullptr;
    std::size_t hlen = 0;
    std::size_t read_payload(std::size_t offset, const iovec* iov, int iovcnt) override
    {
        std::size_t plen = whole->size() - hlen;
        std::size_t done = 0;
        for (int i = 0; i < iovcnt && offset + done < plen; ++i) {
            std::size_t n = std::min(iov[i].iov_len, plen - offset - done);
            std::memcpy(iov[i].iov_base, whole->data() + hlen + offset + done, n);
            done += n;
        }
        return done;
    }
};

// An inner path that records what it is asked to send and delivers what the
// test queues for it. `room` fragments are taken before it answers `again`;
// progress() adds `room_per_progress`.
class FakePath final : public Path {
public:
    explicit FakePath(const char* name = "fake")
    {
        info_.name = name;
        info_.max_frag = 65536;
        info_.eager_limit = 4096;
        info_.has_get = true;
    }
    const PathInfo& info() const override { return info_; }
    Status open(rt::Bootstrap&) override { return Errc::ok; }
    Status connect(rt::Bootstrap&) override { return Errc::ok; }
    void close() override { closed = true; }
    bool can_reach(int peer) const override { return peer != 99; }
    bool acquire(int, std::size_t len, TxBuffer& out) override
    {
        if (room == 0) {
            ++agains;
            return false;
        }
        buf_.resize(len);
        out.data = buf_.data();
        out.cap = len;
        out.token = 7;
        return true;
    }
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override
    {
        EXPECT_EQ(buf.token, 7u);
        sent.push_back({peer, Bytes(buf_.begin(), buf_.begin() + static_cast<long>(len))});
        if (room > 0) {
            --room;
        }
        return SendResult::done;
    }
    std::size_t make_rkey(const iovec*, int iovcnt, void* out, std::size_t cap) override
    {
        std::memset(out, 0xab, std::min<std::size_t>(cap, 4));
        return static_cast<std::size_t>(iovcnt) * 4;
    }
    Status get(int, const void*, std::size_t, std::uint64_t, const iovec*, int) override
    {
        ++gets;
        return Errc::ok;
    }
    int progress(Sink& sink) override
    {
        if (room >= 0 && room_per_progress > 0) {
            room += room_per_progress;
        }
        if (path_down_peer >= 0) {
            sink.on_path_down(*this, path_down_peer);
            path_down_peer = -1;
        }
        int n = 0;
        while (!incoming.empty()) {
            In in = std::move(incoming.front());
            incoming.pop_front();
            delivered.push_back(std::move(in));
            In& d = delivered.back();
            FakeRx rx;
            rx.peer = d.peer;
            rx.len = d.bytes.size();
            rx.addressable = d.addressable;
            rx.whole = &d.bytes;
            rx.hlen = d.hlen;
            if (d.addressable) {
                rx.data = d.bytes.data();
            } else {
                d.header.assign(d.bytes.begin(), d.bytes.begin() + static_cast<long>(d.hlen));
                rx.data = d.header.data();
            }
            sink.on_frag(*this, rx);
            ++n;
        }
        return n;
    }
    void queue_in(int peer, Bytes b, bool addressable = true)
    {
        std::size_t h = static_cast<std::size_t>(b[0]);
        incoming.push_back({peer, std::move(b), addressable, h, {}});
    }

    struct Sent {
        int peer;
        Bytes bytes;
    };
    struct In {
        int peer;
        Bytes bytes;
        bool addressable;
        std::size_t hlen;
        Bytes header;
    };
    std::vector<Sent> sent;
    std::deque<In> incoming;
    std::deque<In> delivered; // stable addresses: what the decorator must not write
    long room = LONG_MAX;     // -1: unlimited
    long room_per_progress = 0;
    long agains = 0;
    int gets = 0;
    int path_down_peer = -1;
    bool closed = false;

private:
    PathInfo info_;
    Bytes buf_;
};

struct Got {
    int peer;
    Bytes bytes;
    const std::byte* data;
    bool addressable;
    const Path* path;
};

class FakeSink final : public Sink {
public:
    void on_frag(Path& path, RxFrag& frag) override
    {
        Bytes b(frag.len);
        std::size_t h = std::min<std::size_t>(static_cast<std::size_t>(frag.data[0]), frag.len);
        if (frag.addressable) {
            std::memcpy(b.data(), frag.data, frag.len);
        } else {
            std::memcpy(b.data(), frag.data, h);
            iovec v{b.data() + h, frag.len - h};
            frag.read_payload(0, &v, 1);
        }
        got.push_back({frag.peer, std::move(b), frag.data, frag.addressable, &path});
    }
    void on_path_down(Path& path, int peer) override { down.emplace_back(&path, peer); }
    void on_path_up(Path& path, int peer) override { up.emplace_back(&path, peer); }
    std::vector<Got> got;
    std::vector<std::pair<const Path*, int>> down;
    std::vector<std::pair<const Path*, int>> up;
};

class Lossy : public ::testing::Test {
protected:
    void SetUp() override
    {
        set_lossy_header_length(&test_header_length);
        reset_lossy_counters();
    }
    void TearDown() override { set_lossy_header_length(nullptr); }

    std::unique_ptr<LossyPath> make(LossyConfig cfg, int rank = 0, FakePath** inner = nullptr)
    {
        auto f = std::make_unique<FakePath>();
        if (inner != nullptr) {
            *inner = f.get();
        }
        return std::make_unique<LossyPath>(std::move(f), cfg, rank);
    }
    static FakePath& fake(LossyPath& lp) { return static_cast<FakePath&>(lp.inner()); }

    // Sends like ULM: acquire, fill, commit; on `again` progress and retry.
    static void send(LossyPath& lp, int peer, const Bytes& frag)
    {
        FakeSink none;
        for (int tries = 0; tries < 100000; ++tries) {
            TxBuffer b;
            if (lp.acquire(peer, frag.size(), b)) {
                ASSERT_GE(b.cap, frag.size());
                std::memcpy(b.data, frag.data(), frag.size());
                ASSERT_EQ(lp.commit(peer, b, frag.size()), SendResult::done);
                return;
            }
            lp.progress(none);
        }
        FAIL() << "acquire never succeeded (watchdog)";
    }
    // Lets time pass until nothing is held or queued.
    void flush(LossyPath& lp, FakeSink& sink)
    {
        for (int i = 0; i < 10000 && (lp.held() != 0 || !fake(lp).incoming.empty()); ++i) {
            clock_.advance(std::int64_t{lp.config().hold_us} * 1000 + 1);
            lp.progress(sink);
        }
        ASSERT_EQ(lp.held(), 0u) << "fragments stuck in the decorator (watchdog)";
    }

    // One run of 5000 fragments to one peer; what reached the inner path.
    std::vector<Bytes> run_tx(LossyConfig cfg, int rank)
    {
        FakePath* inner = nullptr;
        auto lp = make(cfg, rank, &inner);
        FakeSink sink;
        for (std::uint64_t i = 0; i < 5000; ++i) {
            send(*lp, 1, make_frag(i, 16));
            if (i % 16 == 0) {
                clock_.advance(100000);
                lp->progress(sink);
            }
        }
        flush(*lp, sink);
        std::vector<Bytes> out;
        for (auto& s : inner->sent) {
            out.push_back(s.bytes);
        }
        return out;
    }

    rt::ManualClock clock_;
};

LossyConfig all_faults()
{
    LossyConfig c;
    c.drop = 0.05;
    c.corrupt = 0.01;
    c.dup = 0.01;
    c.reorder = 0.05;
    c.delay = 0.01;
    c.seed = 7;
    return c;
}

void expect_rate(std::uint64_t count, std::uint64_t n, double p, const char* what)
{
    double mean = static_cast<double>(n) * p;
    double sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(count), mean, 5 * sd + 1) << what;
}

// --- configuration -----------------------------------------------------------

TEST(LossySpec, parses_every_key)
{
    LossyConfig c;
    std::string why;
    ASSERT_TRUE(parse_lossy_spec(
        "drop:0.05,corrupt:0.01,dup:0.01,reorder:0.05,delay:0.01,seed:7,hold_us:200,depth:5,"
        "queue:64",
        c, why))
        << why;
    EXPECT_DOUBLE_EQ(c.drop, 0.05);
    EXPECT_DOUBLE_EQ(c.corrupt, 0.01);
    EXPECT_DOUBLE_EQ(c.dup, 0.01);
    EXPECT_DOUBLE_EQ(c.reorder, 0.05);
    EXPECT_DOUBLE_EQ(c.delay, 0.01);
    EXPECT_EQ(c.seed, 7u);
    EXPECT_EQ(c.hold_us, 200u);
    EXPECT_EQ(c.depth, 5u);
    EXPECT_EQ(c.queue, 64u);
    LossyConfig d;
    ASSERT_TRUE(parse_lossy_spec("duplicate:0.5, drop:0.25", d, why)) << why;
    EXPECT_DOUBLE_EQ(d.dup, 0.5);
    EXPECT_DOUBLE_EQ(d.drop, 0.25);
}

TEST(LossySpec, explains_what_is_wrong)
{
    struct Case {
        const char* text;
        const char* mention;
    } cases[] = {
        {"drop:1.5", "drop rate '1.5'"},
        {"drop:abc", "drop rate 'abc'"},
        {"drop:-0.1", "drop rate"},
        {"loss:0.1", "unknown key 'loss'"},
        {"drop0.1", "not key:value"},
        {"seed:x", "seed 'x'"},
        {"hold_us:0", "hold_us"},
        {"depth:0", "depth"},
        {"queue:1", "queue"},
        {"drop:0.6,dup:0.6", "add up to 1.2"},
    };
    for (const Case& c : cases) {
        LossyConfig cfg;
        std::string why;
        EXPECT_FALSE(parse_lossy_spec(c.text, cfg, why)) << c.text;
        EXPECT_NE(why.find(c.mention), std::string::npos) << c.text << " -> " << why;
    }
}

// Sets (or unsets, value nullptr) an environment variable for a scope and
// reloads the lossy parameters.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name)
    {
        if (const char* old = std::getenv(name)) {
            had_ = true;
            old_ = old;
        }
        if (value != nullptr) {
            ::setenv(name, value, 1);
        } else {
            ::unsetenv(name);
        }
        reload();
    }
    ~ScopedEnv()
    {
        if (had_) {
            ::setenv(name_.c_str(), old_.c_str(), 1);
        } else {
            ::unsetenv(name_.c_str());
        }
        reload();
    }
    static void reload()
    {
        for (const char* p : {"path_lossy", "path_lossy_paths", "path_lossy_dir"}) {
            std::string why;
            (void)rt::find_param(p)->reload(why);
        }
    }

private:
    std::string name_;
    std::string old_;
    bool had_ = false;
};

bool has_error(const rt::ConfigReport& r, const std::string& a, const std::string& b)
{
    return std::any_of(r.errors.begin(), r.errors.end(), [&](const std::string& e) {
        return e.find(a) != std::string::npos && e.find(b) != std::string::npos;
    });
}

TEST(LossyParams, registered_with_help)
{
    for (const char* p : {"path_lossy", "path_lossy_paths", "path_lossy_dir"}) {
        rt::ParamBase* param = rt::find_param(p);
        ASSERT_NE(param, nullptr) << p;
        EXPECT_NE(std::string(param->help()), "");
    }
}

TEST(LossyParams, malformed_values_are_reported_by_config_validate)
{
    {
        ScopedEnv e("ULMPI_PATH_LOSSY", "drop:0.1,corupt:0.01");
        EXPECT_TRUE(has_error(rt::config_validate(), "ULMPI_PATH_LOSSY:", "unknown key 'corupt'"));
    }
    {
        ScopedEnv e("ULMPI_PATH_LOSSY_PATHS", "shm,infiniband");
        EXPECT_TRUE(has_error(rt::config_validate(), "ULMPI_PATH_LOSSY_PATHS",
                              "unknown path 'infiniband'"));
    }
    {
        ScopedEnv e("ULMPI_PATH_LOSSY_DIR", "sideways");
        EXPECT_TRUE(has_error(rt::config_validate(), "ULMPI_PATH_LOSSY_DIR", "sideways"));
    }
    ScopedEnv ok1("ULMPI_PATH_LOSSY", "drop:0.1,seed:3");
    ScopedEnv ok2("ULMPI_PATH_LOSSY_PATHS", "all");
    ScopedEnv ok3("ULMPI_PATH_LOSSY_DIR", "rx");
    rt::ConfigReport r = rt::config_validate();
    EXPECT_FALSE(has_error(r, "ULMPI_PATH_LOSSY", ""));
}

TEST(LossyParams, unset_means_no_wrapping)
{
    ScopedEnv e("ULMPI_PATH_LOSSY", nullptr);
    rt::JobInfo job;
    auto inner = std::make_unique<FakePath>();
    Path* raw = inner.get();
    std::unique_ptr<Path> p = lossy_decorate(std::move(inner), job);
    EXPECT_EQ(p.get(), raw);
    ScopedEnv empty("ULMPI_PATH_LOSSY", "");
    p = lossy_decorate(std::move(p), job);
    EXPECT_EQ(p.get(), raw);
}

TEST(LossyParams, wraps_the_selected_paths_with_the_direction)
{
    rt::JobInfo job;
    job.rank = 3;
    ScopedEnv e("ULMPI_PATH_LOSSY", "drop:0.1,seed:9");
    {
        // default: every path but self, both directions
        ScopedEnv dir("ULMPI_PATH_LOSSY_DIR", "both");
        std::unique_ptr<Path> s = lossy_decorate(std::make_unique<FakePath>("self"), job);
        EXPECT_EQ(dynamic_cast<LossyPath*>(s.get()), nullptr);
        std::unique_ptr<Path> f = lossy_decorate(std::make_unique<FakePath>("shm"), job);
        auto* lp = dynamic_cast<LossyPath*>(f.get());
        ASSERT_NE(lp, nullptr);
        EXPECT_DOUBLE_EQ(lp->config().drop, 0.1);
        EXPECT_EQ(lp->config().seed, 9u);
        EXPECT_TRUE(lp->config().tx && lp->config().rx);
    }
    {
        ScopedEnv only("ULMPI_PATH_LOSSY_PATHS", "self");
        ScopedEnv dir("ULMPI_PATH_LOSSY_DIR", "tx");
        std::unique_ptr<Path> f = lossy_decorate(std::make_unique<FakePath>("shm"), job);
        EXPECT_EQ(dynamic_cast<LossyPath*>(f.get()), nullptr);
        std::unique_ptr<Path> s = lossy_decorate(std::make_unique<FakePath>("self"), job);
        auto* lp = dynamic_cast<LossyPath*>(s.get());
        ASSERT_NE(lp, nullptr);
        EXPECT_TRUE(lp->config().tx);
        EXPECT_FALSE(lp->config().rx);
    }
    {
        ScopedEnv all("ULMPI_PATH_LOSSY_PATHS", "all");
        ScopedEnv dir("ULMPI_PATH_LOSSY_DIR", "rx");
        std::unique_ptr<Path> s = lossy_decorate(std::make_unique<FakePath>("self"), job);
        auto* lp = dynamic_cast<LossyPath*>(s.get());
        ASSERT_NE(lp, nullptr);
        EXPECT_FALSE(lp->config().tx);
        EXPECT_TRUE(lp->config().rx);
    }
}

TEST(LossyParams, make_paths_applies_the_decorator)
{
    rt::JobInfo job;
    std::string why;
    {
        ScopedEnv e("ULMPI_PATH_LOSSY", nullptr);
        auto paths = make_paths(job, why);
        ASSERT_FALSE(paths.empty()) << why;
        EXPECT_EQ(std::string(paths[0]->describe()).rfind("lossy(", 0), std::string::npos);
    }
    ScopedEnv e("ULMPI_PATH_LOSSY", "dup:0.5,seed:1");
    ScopedEnv only("ULMPI_PATH_LOSSY_PATHS", "self");
    auto paths = make_paths(job, why);
    ASSERT_FALSE(paths.empty()) << why;
    std::string d = paths[0]->describe();
    EXPECT_EQ(d.rfind("lossy(self", 0), 0u) << d;
    EXPECT_NE(d.find("dup 0.5"), std::string::npos) << d;
}

// --- send side -----------------------------------------------------------------

TEST_F(Lossy, send_rates_within_tolerance)
{
    LossyConfig cfg = all_faults();
    auto lp = make(cfg);
    FakeSink sink;
    const std::uint64_t n = 200000;
    for (std::uint64_t i = 0; i < n; ++i) {
        send(*lp, static_cast<int>(i % 4), make_frag(i, i % 3 == 0 ? 0 : 40));
    }
    flush(*lp, sink);
    const LossyFaults& f = lp->faults().tx;
    EXPECT_EQ(f.frags, n);
    expect_rate(f.dropped, n, cfg.drop, "dropped");
    expect_rate(f.corrupted_header + f.corrupted_payload, n, cfg.corrupt, "corrupted");
    expect_rate(f.duplicated, n, cfg.dup, "duplicated");
    expect_rate(f.reordered, n, cfg.reorder, "reordered");
    expect_rate(f.delayed, n, cfg.delay, "delayed");
    EXPECT_EQ(lp->faults().rx.injected(), 0u);
    // Everything not dropped reached the inner path, duplicates twice.
    EXPECT_EQ(fake(*lp).sent.size(), n - f.dropped + f.duplicated);
    EXPECT_EQ(lp->counters().frags_sent, n);
}

TEST_F(Lossy, receive_rates_within_tolerance)
{
    LossyConfig cfg = all_faults();
    auto lp = make(cfg);
    FakeSink sink;
    const std::uint64_t n = 200000;
    for (std::uint64_t i = 0; i < n; ++i) {
        fake(*lp).queue_in(static_cast<int>(i % 3), make_frag(i, 24));
        if (i % 64 == 63) {
            lp->progress(sink);
        }
    }
    flush(*lp, sink);
    const LossyFaults& f = lp->faults().rx;
    EXPECT_EQ(f.frags, n);
    expect_rate(f.dropped, n, cfg.drop, "dropped");
    expect_rate(f.corrupted_header + f.corrupted_payload, n, cfg.corrupt, "corrupted");
    expect_rate(f.duplicated, n, cfg.dup, "duplicated");
    expect_rate(f.reordered, n, cfg.reorder, "reordered");
    expect_rate(f.delayed, n, cfg.delay, "delayed");
    EXPECT_EQ(lp->faults().tx.injected(), 0u);
    EXPECT_EQ(sink.got.size(), n - f.dropped + f.duplicated);
    EXPECT_EQ(lp->counters().frags_received, sink.got.size());
}

TEST_F(Lossy, a_seed_gives_the_same_faults_and_ranks_differ)
{
    LossyConfig cfg = all_faults();
    cfg.corrupt = 0.05;
    std::vector<Bytes> a = run_tx(cfg, 2);
    std::vector<Bytes> b = run_tx(cfg, 2);
    std::vector<Bytes> c = run_tx(cfg, 3);
    cfg.seed = 8;
    std::vector<Bytes> d = run_tx(cfg, 2);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    EXPECT_NE(a, d);
}

// Bits that differ, as (byte offset * 8 + bit).
std::vector<std::size_t> flipped(const Bytes& orig, const Bytes& now)
{
    std::vector<std::size_t> bits;
    for (std::size_t i = 0; i < orig.size(); ++i) {
        auto x = static_cast<unsigned>(orig[i] ^ now[i]);
        for (unsigned k = 0; k < 8; ++k) {
            if ((x >> k) & 1u) {
                bits.push_back(i * 8 + k);
            }
        }
    }
    return bits;
}

// Checks one corrupted fragment; returns 1 for header, 2 for payload.
int check_corruption(const Bytes& orig, const Bytes& now, std::size_t hlen)
{
    EXPECT_EQ(orig.size(), now.size());
    std::vector<std::size_t> bits = flipped(orig, now);
    EXPECT_GE(bits.size(), 1u);
    EXPECT_LE(bits.size(), 4u);
    if (bits.empty()) {
        return 0;
    }
    bool header = bits.front() < hlen * 8;
    for (std::size_t b : bits) {
        EXPECT_EQ(b < hlen * 8, header) << "bits flipped in both header and payload";
    }
    return header ? 1 : 2;
}

TEST_F(Lossy, send_corruption_flips_bits_only_where_said)
{
    LossyConfig cfg;
    cfg.corrupt = 1;
    cfg.seed = 11;
    auto lp = make(cfg);
    FakeSink sink;
    const int n = 4000;
    std::vector<Bytes> orig;
    for (int i = 0; i < n; ++i) {
        // every third fragment has no payload: the header is all there is
        orig.push_back(make_frag(static_cast<std::uint64_t>(i), i % 3 == 0 ? 0 : 1 + i % 100,
                                 16 + static_cast<std::size_t>(i % 5) * 8));
        send(*lp, 1, orig.back());
    }
    ASSERT_EQ(fake(*lp).sent.size(), static_cast<std::size_t>(n));
    int header = 0;
    int payload = 0;
    int header_with_payload = 0;
    for (int i = 0; i < n; ++i) {
        std::size_t hlen = static_cast<std::size_t>(orig[i][0]);
        int where = check_corruption(orig[i], fake(*lp).sent[i].bytes, hlen);
        if (orig[i].size() == hlen) {
            EXPECT_EQ(where, 1) << "no payload: the header must be hit";
        } else if (where == 1) {
            ++header_with_payload;
        }
        header += where == 1;
        payload += where == 2;
    }
    const LossyFaults& f = lp->faults().tx;
    EXPECT_EQ(f.corrupted_header, static_cast<std::uint64_t>(header));
    EXPECT_EQ(f.corrupted_payload, static_cast<std::uint64_t>(payload));
    // With both present the choice is uniform.
    std::uint64_t both = static_cast<std::uint64_t>(header_with_payload + payload);
    expect_rate(static_cast<std::uint64_t>(header_with_payload), both, 0.5, "header vs payload");
}

TEST_F(Lossy, without_ulm_header_length_the_first_bytes_count_as_header)
{
    set_lossy_header_length(nullptr);
    LossyConfig cfg;
    cfg.corrupt = 1;
    auto lp = make(cfg);
    for (int i = 0; i < 500; ++i) {
        Bytes f = make_frag(static_cast<std::uint64_t>(i), 64, 48);
        send(*lp, 1, f);
        int where = check_corruption(f, fake(*lp).sent.back().bytes, kLossyFallbackHeader);
        EXPECT_NE(where, 0);
    }
    EXPECT_GT(lp->faults().tx.corrupted_header, 0u);
    EXPECT_GT(lp->faults().tx.corrupted_payload, 0u);
}

TEST_F(Lossy, send_duplicates_are_byte_identical)
{
    LossyConfig cfg;
    cfg.dup = 1;
    auto lp = make(cfg);
    for (int i = 0; i < 300; ++i) {
        send(*lp, 2, make_frag(static_cast<std::uint64_t>(i), static_cast<std::size_t>(i)));
    }
    auto& sent = fake(*lp).sent;
    ASSERT_EQ(sent.size(), 600u);
    for (int i = 0; i < 300; ++i) {
        Bytes want = make_frag(static_cast<std::uint64_t>(i), static_cast<std::size_t>(i));
        EXPECT_EQ(sent[2 * i].bytes, want);
        EXPECT_EQ(sent[2 * i + 1].bytes, want);
        EXPECT_EQ(sent[2 * i].peer, 2);
    }
    EXPECT_EQ(lp->faults().tx.duplicated, 300u);
}

// Every id comes out exactly once, and intact; returns whether any came out
// of order.
bool all_once(const std::vector<Bytes>& frags, std::uint64_t n)
{
    std::vector<int> seen(n, 0);
    bool reordered = false;
    std::uint64_t last = 0;
    for (std::size_t k = 0; k < frags.size(); ++k) {
        std::uint64_t id = frag_id(frags[k]);
        EXPECT_LT(id, n);
        if (id >= n) {
            continue;
        }
        ++seen[id];
        EXPECT_EQ(frags[k], make_frag(id, id % 50));
        reordered |= k > 0 && id < last;
        last = id;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
        EXPECT_EQ(seen[i], 1) << "fragment " << i;
    }
    return reordered;
}

TEST_F(Lossy, send_reordered_and_delayed_fragments_all_come_out)
{
    LossyConfig cfg;
    cfg.reorder = 0.3;
    cfg.delay = 0.2;
    cfg.seed = 5;
    auto lp = make(cfg);
    FakeSink sink;
    const std::uint64_t n = 20000;
    for (std::uint64_t i = 0; i < n; ++i) {
        send(*lp, 1, make_frag(i, i % 50));
        if (i % 100 == 0) {
            clock_.advance(50000);
            lp->progress(sink);
        }
    }
    flush(*lp, sink);
    std::vector<Bytes> out;
    for (auto& s : fake(*lp).sent) {
        out.push_back(s.bytes);
    }
    ASSERT_EQ(out.size(), n);
    EXPECT_TRUE(all_once(out, n));
    expect_rate(lp->faults().tx.reordered, n, cfg.reorder, "reordered");
    expect_rate(lp->faults().tx.delayed, n, cfg.delay, "delayed");
}

TEST_F(Lossy, a_reordered_fragment_goes_after_later_ones)
{
    LossyConfig cfg;
    cfg.reorder = 1;
    cfg.depth = 1;
    auto lp = make(cfg);
    // Every fragment is held until one later fragment of the pair passes;
    // only released fragments pass, so the first goes when time is up, then
    // each release lets the next one through.
    send(*lp, 1, make_frag(0, 0));
    send(*lp, 1, make_frag(1, 0));
    EXPECT_TRUE(fake(*lp).sent.empty());
    EXPECT_EQ(lp->held(), 2u);
    FakeSink sink;
    flush(*lp, sink);
    ASSERT_EQ(fake(*lp).sent.size(), 2u);

    cfg.reorder = 0.5;
    cfg.seed = 3;
    auto lp2 = make(cfg);
    for (std::uint64_t i = 0; i < 1000; ++i) {
        send(*lp2, 1, make_frag(i, i % 50));
    }
    // Without time passing, a reordered fragment leaves right after the next
    // fragment that is not held.
    std::vector<Bytes> out;
    for (auto& s : fake(*lp2).sent) {
        out.push_back(s.bytes);
    }
    flush(*lp2, sink);
    for (std::size_t k = out.size(); k < fake(*lp2).sent.size(); ++k) {
        out.push_back(fake(*lp2).sent[k].bytes);
    }
    EXPECT_TRUE(all_once(out, 1000));
}

TEST_F(Lossy, inner_again_never_loses_a_fragment_and_keeps_order)
{
    LossyConfig cfg;
    cfg.seed = 1; // no faults: order per peer must be exactly kept
    cfg.queue = 16;
    FakePath* inner = nullptr;
    auto lp = make(cfg, 0, &inner);
    inner->room = 3;
    inner->room_per_progress = 2;
    FakeSink sink;
    const std::uint64_t n = 3000;
    int refused = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        Bytes f = make_frag(i, i % 50);
        int peer = static_cast<int>(i % 3);
        for (;;) {
            TxBuffer b;
            if (lp->acquire(peer, f.size(), b)) {
                std::memcpy(b.data, f.data(), f.size());
                ASSERT_EQ(lp->commit(peer, b, f.size()), SendResult::done);
                break;
            }
            // `again` upward only when the decorator's own queue is full
            EXPECT_GE(lp->held(), cfg.queue);
            ++refused;
            lp->progress(sink);
            ASSERT_LT(refused, 1000000) << "watchdog";
        }
    }
    inner->room = -1; // unlimited
    flush(*lp, sink);
    EXPECT_GT(inner->agains, 0);
    EXPECT_GT(refused, 0);
    ASSERT_EQ(inner->sent.size(), n);
    std::map<int, std::uint64_t> next;
    for (auto& s : inner->sent) {
        std::uint64_t id = frag_id(s.bytes);
        EXPECT_EQ(static_cast<int>(id % 3), s.peer);
        EXPECT_EQ(s.bytes, make_frag(id, id % 50));
        auto it = next.try_emplace(s.peer, static_cast<std::uint64_t>(s.peer)).first;
        EXPECT_EQ(id, it->second) << "order to peer " << s.peer;
        it->second = id + 3;
    }
    EXPECT_EQ(lp->counters().send_again, static_cast<std::uint64_t>(refused));
}

TEST_F(Lossy, inner_again_with_every_fault)
{
    LossyConfig cfg = all_faults();
    cfg.dup = 0.1;
    cfg.queue = 8;
    FakePath* inner = nullptr;
    auto lp = make(cfg, 0, &inner);
    inner->room = 1;
    inner->room_per_progress = 1;
    FakeSink sink;
    const std::uint64_t n = 5000;
    for (std::uint64_t i = 0; i < n; ++i) {
        send(*lp, static_cast<int>(i % 2), make_frag(i, 10));
    }
    inner->room = -1;
    flush(*lp, sink);
    const LossyFaults& f = lp->faults().tx;
    EXPECT_EQ(inner->sent.size(), n - f.dropped + f.duplicated);
}

// --- receive side ----------------------------------------------------------------

TEST_F(Lossy, passes_untouched_fragments_without_copying)
{
    LossyConfig cfg;
    cfg.seed = 1;
    auto lp = make(cfg);
    FakeSink sink;
    fake(*lp).queue_in(4, make_frag(1, 10));
    EXPECT_EQ(lp->progress(sink), 1);
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(sink.got[0].data, fake(*lp).delivered[0].bytes.data());
    EXPECT_EQ(sink.got[0].path, lp.get()) << "the sink must see the decorator, not the inner path";
    EXPECT_EQ(sink.got[0].peer, 4);
    fake(*lp).path_down_peer = 6;
    (void)lp->progress(sink);
    ASSERT_EQ(sink.down.size(), 1u);
    EXPECT_EQ(sink.down[0].first, lp.get());
    EXPECT_EQ(sink.down[0].second, 6);
}

TEST_F(Lossy, receive_corruption_works_on_a_private_copy)
{
    LossyConfig cfg;
    cfg.corrupt = 1;
    cfg.seed = 21;
    auto lp = make(cfg);
    FakeSink sink;
    const int n = 2000;
    for (int i = 0; i < n; ++i) {
        fake(*lp).queue_in(1, make_frag(static_cast<std::uint64_t>(i), i % 2 == 0 ? 0 : 30),
                           /*addressable=*/i % 4 < 2);
    }
    lp->progress(sink);
    ASSERT_EQ(sink.got.size(), static_cast<std::size_t>(n));
    int header = 0;
    int payload = 0;
    for (int i = 0; i < n; ++i) {
        Bytes want = make_frag(static_cast<std::uint64_t>(i), i % 2 == 0 ? 0 : 30);
        // the inner path's buffer is never written
        EXPECT_EQ(fake(*lp).delivered[static_cast<std::size_t>(i)].bytes, want);
        EXPECT_NE(sink.got[i].data, fake(*lp).delivered[static_cast<std::size_t>(i)].bytes.data());
        EXPECT_TRUE(sink.got[i].addressable);
        int where = check_corruption(want, sink.got[i].bytes, kHeader);
        if (want.size() == kHeader) {
            EXPECT_EQ(where, 1);
        }
        header += where == 1;
        payload += where == 2;
    }
    EXPECT_EQ(lp->faults().rx.corrupted_header, static_cast<std::uint64_t>(header));
    EXPECT_EQ(lp->faults().rx.corrupted_payload, static_cast<std::uint64_t>(payload));
    EXPECT_GT(payload, n / 8);
}

TEST_F(Lossy, receive_duplicates_are_byte_identical)
{
    LossyConfig cfg;
    cfg.dup = 1;
    auto lp = make(cfg);
    FakeSink sink;
    for (int i = 0; i < 200; ++i) {
        fake(*lp).queue_in(2, make_frag(static_cast<std::uint64_t>(i), 17), i % 2 == 0);
    }
    lp->progress(sink);
    ASSERT_EQ(sink.got.size(), 400u);
    for (int i = 0; i < 200; ++i) {
        Bytes want = make_frag(static_cast<std::uint64_t>(i), 17);
        EXPECT_EQ(sink.got[2 * i].bytes, want);
        EXPECT_EQ(sink.got[2 * i + 1].bytes, want);
    }
    EXPECT_EQ(lp->faults().rx.duplicated, 200u);
}

TEST_F(Lossy, received_reordered_and_delayed_fragments_all_come_out)
{
    LossyConfig cfg;
    cfg.reorder = 0.3;
    cfg.delay = 0.2;
    cfg.seed = 13;
    auto lp = make(cfg);
    FakeSink sink;
    const std::uint64_t n = 20000;
    for (std::uint64_t i = 0; i < n; ++i) {
        fake(*lp).queue_in(0, make_frag(i, i % 50), i % 3 != 0);
        if (i % 10 == 0) {
            clock_.advance(30000);
            lp->progress(sink);
        }
    }
    flush(*lp, sink);
    std::vector<Bytes> out;
    for (auto& g : sink.got) {
        out.push_back(g.bytes);
    }
    ASSERT_EQ(out.size(), n);
    EXPECT_TRUE(all_once(out, n));
}

TEST_F(Lossy, non_addressable_fragments_are_only_dropped_without_header_length)
{
    set_lossy_header_length(nullptr);
    LossyConfig cfg;
    cfg.dup = 1;
    auto lp = make(cfg);
    FakeSink sink;
    fake(*lp).queue_in(0, make_frag(1, 40), false);
    lp->progress(sink);
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(sink.got[0].bytes, make_frag(1, 40));
    EXPECT_EQ(lp->faults().rx.duplicated, 0u);
}

TEST_F(Lossy, direction_restriction)
{
    LossyConfig cfg;
    cfg.drop = 0.5;
    cfg.tx = true;
    cfg.rx = false;
    auto tx_only = make(cfg);
    cfg.tx = false;
    cfg.rx = true;
    auto rx_only = make(cfg);
    FakeSink s1;
    FakeSink s2;
    for (std::uint64_t i = 0; i < 2000; ++i) {
        send(*tx_only, 1, make_frag(i, 8));
        send(*rx_only, 1, make_frag(i, 8));
        fake(*tx_only).queue_in(1, make_frag(i, 8));
        fake(*rx_only).queue_in(1, make_frag(i, 8));
    }
    tx_only->progress(s1);
    rx_only->progress(s2);
    EXPECT_EQ(s1.got.size(), 2000u);
    EXPECT_LT(fake(*tx_only).sent.size(), 1200u);
    EXPECT_EQ(tx_only->faults().rx.injected(), 0u);
    EXPECT_EQ(tx_only->faults().rx.frags, 2000u);
    EXPECT_EQ(fake(*rx_only).sent.size(), 2000u);
    EXPECT_LT(s2.got.size(), 1200u);
    EXPECT_EQ(rx_only->faults().tx.injected(), 0u);
}

// --- pass-through, counters, describe -----------------------------------------------

TEST_F(Lossy, info_get_and_rkey_pass_through)
{
    LossyConfig cfg = all_faults();
    FakePath* inner = nullptr;
    auto lp = make(cfg, 0, &inner);
    // info() is the inner path's, except that a decorator that reorders
    // says it keeps no order (ULM then resends nothing early on overtaking).
    EXPECT_STREQ(lp->info().name, inner->info().name);
    EXPECT_EQ(lp->info().max_frag, inner->info().max_frag);
    EXPECT_EQ(lp->info().eager_limit, inner->info().eager_limit);
    EXPECT_EQ(lp->info().has_get, inner->info().has_get);
    EXPECT_EQ(inner->info().order, PathInfo::Order::total);
    EXPECT_EQ(lp->info().order, PathInfo::Order::none);
    LossyConfig drop_only;
    drop_only.drop = 0.1;
    FakePath* inner2 = nullptr;
    auto lp2 = make(drop_only, 0, &inner2);
    EXPECT_EQ(lp2->info().order, PathInfo::Order::total) << "dropping keeps the order";
    EXPECT_TRUE(lp->can_reach(1));
    EXPECT_FALSE(lp->can_reach(99));
    char key[16];
    iovec v{key, 4};
    EXPECT_EQ(lp->make_rkey(&v, 1, key, sizeof key), 4u);
    char local[8];
    iovec l{local, sizeof local};
    EXPECT_TRUE(lp->get(1, key, 4, 0, &l, 1).ok());
    EXPECT_EQ(inner->gets, 1);
    EXPECT_EQ(lp->counters().gets, 1u);
    EXPECT_EQ(lp->counters().get_bytes, 8u);
    lp->close();
    EXPECT_TRUE(inner->closed);
}

TEST_F(Lossy, counters_cover_every_decorator_and_describe_sums_them_up)
{
    LossyConfig cfg;
    cfg.drop = 1;
    cfg.seed = 7;
    {
        auto a = make(cfg, 0);
        auto b = make(cfg, 1);
        for (int i = 0; i < 10; ++i) {
            send(*a, 1, make_frag(static_cast<std::uint64_t>(i), 4));
        }
        for (int i = 0; i < 5; ++i) {
            send(*b, 0, make_frag(static_cast<std::uint64_t>(i), 4));
        }
        std::string d = a->describe();
        EXPECT_EQ(d.rfind("lossy(fake) drop 1 ", 0), 0u) << d;
        EXPECT_NE(d.find("seed 7"), std::string::npos) << d;
        EXPECT_NE(d.find("10 dropped"), std::string::npos) << d;
    }
    LossyCounters c = lossy_counters();
    EXPECT_EQ(c.tx.dropped, 15u);
    EXPECT_EQ(c.tx.frags, 15u);
    EXPECT_EQ(c.total().dropped, 15u);
    reset_lossy_counters();
    EXPECT_EQ(lossy_counters().total().frags, 0u);
}

} // namespace
} // namespace ulmpi::path
