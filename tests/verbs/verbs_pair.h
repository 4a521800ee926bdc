// Two ranks of a verbs test, each a forked child of the test process, wired
// by the tests' SocketBootstrap (tests/support/test_bootstrap.h), on a soft
// fabric of their own. The test process itself never opens the device (its
// pinned pages would be shared with every later fork: soft_memory.h).
#pragma once

#include "paths/verbs/verbs_path.h"
#include "tests/support/test_bootstrap.h"
#include "tests/verbs/soft_device.h"

#include <gtest/gtest.h>

#include <csignal>
#include <functional>
#include <sys/wait.h>
#include <vector>

namespace ulmpi::test {

// A sink that keeps copies of what arrives and the evidence it is given.
struct RecordingSink final : path::Sink {
    std::vector<std::vector<std::byte>> frags;
    std::vector<int> downs;
    std::vector<int> ups;
    std::vector<std::pair<std::uint64_t, rt::Errc>> gets_done; // start_get() ends, in order
    void on_frag(path::Path&, path::RxFrag& f) override { frags.emplace_back(f.data, f.data + f.len); }
    void on_path_down(path::Path&, int peer) override { downs.push_back(peer); }
    void on_path_up(path::Path&, int peer) override { ups.push_back(peer); }
    void on_get_done(path::Path&, std::uint64_t token, rt::Status st) override
    {
        gets_done.emplace_back(token, st.code());
    }
};

inline std::string fresh_fabric()
{
    static int n = 0;
    return "t" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

// A soft fabric of a fresh name, unlinked when the test ends.
struct Fabric {
    std::string name = fresh_fabric();
    ~Fabric() { soft::unlink_fabric(name); }
};

// Small queues and a short transport timeout (131 us per try, one retry):
// failure tests end fast.
inline path::verbs::VerbsOptions small_verbs_options(std::uint32_t srq_depth = 64, std::uint32_t send_bufs = 16)
{
    path::verbs::VerbsOptions o;
    o.buf_size = 4096;
    o.srq_depth = srq_depth;
    o.send_bufs = send_bufs;
    o.qp_depth = 32;
    o.timeout = 4;
    o.retry_cnt = 1;
    return o;
}

// Runs body(rank, boot) in two forked ranks; returns true when both exited 0.
inline bool run_two(const std::function<int(int, SocketBootstrap&)>& body, unsigned watchdog_s = 60)
{
    std::vector<int> codes = run_ranks(
        2, [&](SocketBootstrap& boot) { return body(boot.job().rank, boot); }, watchdog_s, {},
        fresh_jobid("verbs"));
    bool ok = true;
    for (std::size_t r = 0; r < codes.size(); ++r) {
        if (codes[r] != 0) {
            ok = false;
            if (codes[r] > 0) {
                ADD_FAILURE() << "rank " << r << " exited " << codes[r];
            }
        }
    }
    return ok;
}

// ULMPI_VERBS_TEST_DEVICE=<name> runs these tests on that real device
// (scripts/verbs-check); tests that need the soft device's controls skip.
inline const char* real_device()
{
    const char* d = std::getenv("ULMPI_VERBS_TEST_DEVICE");
    return d != nullptr && *d != '\0' ? d : nullptr;
}

// Opens soft device soft0 of `fabric` (or the real device).
inline std::shared_ptr<path::verbs::Device> open_device(const std::string& fabric, int ports = 1)
{
    soft::FabricOptions fo;
    fo.name = fabric;
    fo.ports = ports;
    fo.pool_bytes = std::size_t{1} << 30;
    std::string why;
    auto prov = real_device() != nullptr ? path::verbs::make_ibv_provider(why) : soft::make_soft_provider(fo);
    EXPECT_NE(prov, nullptr) << why;
    if (prov == nullptr) {
        return nullptr;
    }
    std::shared_ptr<path::verbs::Device> dev = prov->open(real_device() != nullptr ? real_device() : "soft0", why);
    EXPECT_NE(dev, nullptr) << why;
    return dev;
}

// Opens the device and wires one VerbsPath over `port`.
inline std::unique_ptr<path::verbs::VerbsPath> wire(SocketBootstrap& boot, const std::string& fabric,
                                                    const path::verbs::VerbsOptions& opt,
                                                    int ports = 1, int port = 1)
{
    std::shared_ptr<path::verbs::Device> dev = open_device(fabric, ports);
    if (dev == nullptr) {
        return nullptr;
    }
    auto p = std::make_unique<path::verbs::VerbsPath>(boot.job(), dev, port, 0, opt);
    EXPECT_TRUE(p->open(boot).ok());
    EXPECT_TRUE(boot.fence().ok());
    EXPECT_TRUE(p->connect(boot).ok());
    EXPECT_TRUE(boot.fence().ok());
    EXPECT_TRUE(p->connected(boot).ok());
    return p;
}

// Sends `len` bytes (`fill`) as one fragment; waits for room while polling.
inline bool send_bytes(path::verbs::VerbsPath& p, path::Sink& sink, int peer, const void* data,
                       std::size_t len)
{
    path::TxBuffer b;
    const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{30} * 1000000000;
    while (!p.acquire(peer, len, b)) {
        p.progress(sink);
        if (rt::monotonic_ns() > end) {
            ADD_FAILURE() << "no room to send for 30 s (credits " << p.credits(peer) << ")";
            return false;
        }
    }
    std::memcpy(b.data, data, len);
    return p.commit(peer, b, len) == path::SendResult::done;
}

// Progresses until the sink holds `n` fragments (false after `ms`).
inline bool wait_frags(path::verbs::VerbsPath& p, RecordingSink& s, std::size_t n, int ms = 20000)
{
    const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{ms} * 1000000;
    while (s.frags.size() < n) {
        p.progress(s);
        if (rt::monotonic_ns() > end) {
            return false;
        }
    }
    return true;
}

} // namespace ulmpi::test
