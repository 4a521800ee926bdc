// ULM's engine over two verbs rails (ports 1 and 2 of the software device),
// two ranks in two forked processes: a single-copy read that the port under
// it leaves hanging is given up (VerbsPath::abandon_gets) and the message
// streams over the other rail, long before the transport's own timeout;
// the pieces the device had taken land later in ULM's bounce buffer.
#include "tests/verbs/verbs_pair.h"

#include "paths/self/self_path.h"
#include "runtime/config.h"
#include "ulm/engine.h"

#include <chrono>
#include <thread>

namespace ulmpi::test {
namespace {

using path::verbs::VerbsOptions;
using path::verbs::VerbsPath;

const ulm::Run kRun{0, 1};
const std::uint64_t kPrefix[2] = {0, 1};
const ulm::Layout kByteLayout{1, 1, 1, &kRun, kPrefix, true};

template <class P, class V> void set_param(const char* name, V v)
{
    auto* p = dynamic_cast<P*>(rt::find_param(name));
    ASSERT_NE(p, nullptr) << name;
    p->set(v);
}

std::vector<std::byte> pattern(std::size_t n, int seed)
{
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<std::byte>((i * 7 + static_cast<std::size_t>(seed) * 131 + (i >> 8) * 3 + 1) & 0xff);
    }
    return v;
}

TEST(VerbsEngine, a_read_whose_port_goes_down_is_given_up_and_the_message_streams_over_the_other_rail)
{
    if (real_device() != nullptr) {
        GTEST_SKIP() << "needs the soft device's port control";
    }
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        set_param<rt::ChoiceParam>("ulm_stripe", std::string("off")); // the message on rail 0: read
        set_param<rt::IntParam>("ulm_read_stall_us", std::int64_t{20000});
        auto dev = open_device(f.name, 2);
        if (dev == nullptr) {
            return 1;
        }
        VerbsOptions o;
        o.srq_depth = 64;
        o.send_bufs = 32;
        o.qp_depth = 64;
        o.read_chunk = 256 * 1024;
        o.timeout = 20; // 4.3 s per try, two tries: a hanging read outlives the test's wait
        o.retry_cnt = 1;
        std::vector<std::unique_ptr<path::Path>> paths;
        paths.push_back(std::make_unique<path::SelfPath>(rank));
        paths.push_back(std::make_unique<VerbsPath>(boot.job(), dev, 1, 0, o));
        paths.push_back(std::make_unique<VerbsPath>(boot.job(), dev, 2, 1, o));
        auto* rail0 = static_cast<VerbsPath*>(paths[1].get());
        ulm::Engine e;
        std::string why;
        const rt::Status st = e.init(boot, std::move(paths), why);
        EXPECT_TRUE(st.ok()) << why;
        if (!st.ok()) {
            return 1;
        }
        const std::vector<std::byte> msg = pattern(4u << 20, 11);
        auto wait = [&](auto done, int seconds) {
            const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
            while (!done() && std::chrono::steady_clock::now() < end) {
                e.progress();
            }
            return done();
        };
        if (rank == 0) {
            std::vector<std::byte> out = msg;
            ulm::SendMsg* s = nullptr;
            EXPECT_TRUE(e.isend(ulm::DataRef{out.data(), out.size(), &kByteLayout}, 1, 5, ulm::ContextId(0),
                                ulm::SendMode::standard, &s)
                            .ok());
            for (int i = 0; i < 200; ++i) {
                e.progress(); // the match with the read key leaves over rail 0
            }
            EXPECT_TRUE(boot.fence().ok()); // A
            EXPECT_TRUE(boot.fence().ok()); // B: the port of rail 0 is down
            EXPECT_TRUE(wait([&] { return s != nullptr && s->complete; }, 60));
            EXPECT_TRUE(boot.fence().ok()); // C
            e.release(s);
        } else {
            std::vector<std::byte> in(msg.size());
            EXPECT_TRUE(boot.fence().ok()); // A: the match waits in our receive queue
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, false));
            EXPECT_TRUE(boot.fence().ok()); // B
            const auto t0 = std::chrono::steady_clock::now();
            ulm::RecvMsg* r = nullptr;
            EXPECT_TRUE(e.irecv(ulm::DataRef{in.data(), in.size(), &kByteLayout}, 0, 5, ulm::ContextId(0), &r)
                            .ok());
            EXPECT_TRUE(wait([&] { return r != nullptr && r->complete; }, 60));
            const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            EXPECT_LT(took, 4.0) << "the read was not given up: it waited for the transport's timeout";
            EXPECT_EQ(r->error, rt::Errc::ok);
            EXPECT_TRUE(in == msg);
            const ulm::Link& l = e.link(0);
            EXPECT_EQ(l.rails[0].counters.reads_given_up, 1u);
            EXPECT_GT(l.rails[1].counters.bytes_received, 1000000u) << "the message did not stream over rail 1";
            EXPECT_GT(rail0->orphan_reads(), 0u) << "the device served the read with its port down";
            // The port comes back: the orphans land in ULM's bounce buffer.
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, true));
            EXPECT_TRUE(wait([&] { return rail0->orphan_reads() == 0; }, 20));
            EXPECT_TRUE(in == msg) << "an orphan wrote into the receive buffer";
            EXPECT_TRUE(boot.fence().ok()); // C
            e.release(r);
        }
        EXPECT_TRUE(e.finalize().ok());
        return ::testing::Test::HasFailure() ? 1 : 0;
    }, 120));
}

} // namespace
} // namespace ulmpi::test
