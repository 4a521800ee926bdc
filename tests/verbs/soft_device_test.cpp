// The software verbs device against what the verbs specification says a
// device does: the test double must be right before it can judge the path.
// Each test runs in a forked child (pinned pages must not leak into later
// forks: soft_memory.h).
#include "tests/verbs/soft_device.h"

#include "runtime/clock.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ulmpi::soft {
namespace {

using namespace path::verbs;

bool in_child(const std::function<void()>& fn)
{
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::alarm(60);
        fn();
        std::fflush(nullptr);
        _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// Two queue pairs of one process connected to each other.
struct Loop {
    std::string fabric;
    std::unique_ptr<Provider> prov;
    std::unique_ptr<Device> dev;
    Cq* scq = nullptr;
    Cq* rcq = nullptr;
    Srq* srq = nullptr;
    Qp* a = nullptr;
    Qp* b = nullptr;

    explicit Loop(std::uint8_t timeout = 14, std::uint32_t psn_skew = 0)
    {
        FabricOptions o;
        o.name = fabric = "dev" + std::to_string(::getpid());
        o.pool_bytes = std::size_t{1} << 28;
        prov = make_soft_provider(o);
        std::string why;
        dev = prov->open("soft0", why);
        EXPECT_NE(dev, nullptr) << why;
        EXPECT_TRUE(dev->create_cq(64, scq).ok());
        EXPECT_TRUE(dev->create_cq(64, rcq).ok());
        EXPECT_TRUE(dev->create_srq(16, srq).ok());
        QpCaps caps;
        caps.max_send_wr = 16;
        caps.max_inline = 64;
        EXPECT_TRUE(dev->create_qp(scq, rcq, srq, caps, a).ok());
        EXPECT_TRUE(dev->create_qp(scq, rcq, srq, caps, b).ok());
        PortAttr pa;
        EXPECT_TRUE(dev->query_port(1, -1, pa).ok());
        const unsigned acc = access::local_write | access::remote_read | access::remote_write;
        for (Qp* q : {a, b}) {
            Qp* other = q == a ? b : a;
            EXPECT_TRUE(dev->modify_qp_init(q, 1, acc).ok());
            RtrAttr r;
            r.dest_qpn = other->qpn;
            r.rq_psn = 100 + (q == a ? psn_skew : 0);
            r.path_mtu = 4096;
            r.dlid = pa.lid;
            EXPECT_TRUE(dev->modify_qp_rtr(q, r).ok());
            RtsAttr t;
            t.sq_psn = 100;
            t.timeout = timeout;
            t.retry_cnt = 1;
            EXPECT_TRUE(dev->modify_qp_rts(q, t).ok());
        }
    }
    ~Loop()
    {
        dev.reset();
        unlink_fabric(fabric);
    }
    std::vector<Wc> wait(Cq* cq, std::size_t n, rt::Nanos ms = 5000)
    {
        std::vector<Wc> out;
        const rt::Nanos end = rt::monotonic_ns() + ms * 1000000;
        while (out.size() < n && rt::monotonic_ns() < end) {
            Wc w[8];
            int k = dev->poll_cq(cq, w, 8);
            EXPECT_GE(k, 0);
            out.insert(out.end(), w, w + std::max(k, 0));
        }
        return out;
    }
};

TEST(SoftDevice, queue_pairs_move_through_states_in_order_only)
{
    EXPECT_TRUE(in_child([] {
        FabricOptions o;
        o.name = "st" + std::to_string(::getpid());
        o.pool_bytes = std::size_t{1} << 26;
        auto prov = make_soft_provider(o);
        std::string why;
        auto dev = prov->open("soft0", why);
        ASSERT_NE(dev, nullptr);
        Cq* cq = nullptr;
        Srq* srq = nullptr;
        Qp* q = nullptr;
        ASSERT_TRUE(dev->create_cq(8, cq).ok());
        ASSERT_TRUE(dev->create_srq(4, srq).ok());
        QpCaps caps;
        caps.max_send_wr = 4;
        ASSERT_TRUE(dev->create_qp(cq, cq, srq, caps, q).ok());
        EXPECT_EQ(dev->qp_state(q), QpState::reset);
        RtrAttr r;
        r.path_mtu = 4096;
        EXPECT_FALSE(dev->modify_qp_rtr(q, r).ok()); // reset -> rtr skips init
        EXPECT_FALSE(dev->modify_qp_init(q, 2, 0).ok()); // no port 2
        EXPECT_TRUE(dev->modify_qp_init(q, 1, 0).ok());
        EXPECT_FALSE(dev->modify_qp_rts(q, RtsAttr{}).ok()); // init -> rts skips rtr
        r.path_mtu = 8192;
        EXPECT_FALSE(dev->modify_qp_rtr(q, r).ok()); // above the port's MTU
        r.path_mtu = 2048;
        EXPECT_TRUE(dev->modify_qp_rtr(q, r).ok());
        std::uint64_t x = 0;
        Sge s{reinterpret_cast<std::uint64_t>(&x), 8, 0};
        SendWr w;
        w.sg = &s;
        w.nsge = 1;
        w.inline_data = true;
        EXPECT_FALSE(dev->post_send(q, w).ok()); // no sends before rts
        EXPECT_TRUE(dev->modify_qp_rts(q, RtsAttr{}).ok());
        EXPECT_EQ(dev->qp_state(q), QpState::rts);
        dev.reset();
        unlink_fabric(o.name);
    }));
}

TEST(SoftDevice, sends_fill_posted_receives_in_order_and_complete_in_order)
{
    EXPECT_TRUE(in_child([] {
        Loop l;
        std::vector<char> rx(4 * 64, 0);
        Mr* rmr = nullptr;
        ASSERT_TRUE(l.dev->reg_mr(rx.data(), rx.size(), access::local_write, rmr).ok());
        for (int i = 0; i < 4; ++i) {
            Sge s{reinterpret_cast<std::uint64_t>(rx.data() + 64 * i), 64, rmr->lkey};
            ASSERT_TRUE(l.dev->post_srq_recv(l.srq, 10 + i, s).ok());
        }
        char tx[64];
        Mr* tmr = nullptr;
        ASSERT_TRUE(l.dev->reg_mr(tx, sizeof tx, 0, tmr).ok());
        for (int i = 0; i < 4; ++i) {
            std::memset(tx, 'a' + i, sizeof tx);
            Sge s{reinterpret_cast<std::uint64_t>(tx), static_cast<std::uint32_t>(10 + i), tmr->lkey};
            SendWr w;
            w.wr_id = 1000 + i;
            w.sg = &s;
            w.nsge = 1;
            ASSERT_TRUE(l.dev->post_send(l.a, w).ok());
        }
        auto sc = l.wait(l.scq, 4);
        auto rc = l.wait(l.rcq, 4);
        ASSERT_EQ(sc.size(), 4u);
        ASSERT_EQ(rc.size(), 4u);
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(sc[i].wr_id, 1000u + i);
            EXPECT_EQ(sc[i].status, WcStatus::success);
            EXPECT_EQ(rc[i].wr_id, 10u + i); // receives consumed in posting order
            EXPECT_EQ(rc[i].byte_len, 10u + i);
            EXPECT_EQ(rc[i].qp_num, l.b->qpn);
            EXPECT_EQ(rx[64 * i], 'a' + i);
        }
        // A fifth send finds no receive: an RNR NAK, retried (rnr_retry 7)
        // until a receive is posted.
        Sge s{reinterpret_cast<std::uint64_t>(tx), 8, tmr->lkey};
        SendWr w;
        w.wr_id = 5;
        w.sg = &s;
        w.nsge = 1;
        ASSERT_TRUE(l.dev->post_send(l.a, w).ok());
        EXPECT_TRUE(l.wait(l.scq, 1, 200).empty());
        Sge r{reinterpret_cast<std::uint64_t>(rx.data()), 64, rmr->lkey};
        ASSERT_TRUE(l.dev->post_srq_recv(l.srq, 77, r).ok());
        EXPECT_EQ(l.wait(l.scq, 1).size(), 1u);
        FabricCounters c;
        ASSERT_TRUE(counters(l.fabric, c));
        EXPECT_EQ(c.rnr_naks, 1u);
        l.dev->dereg_mr(rmr);
        l.dev->dereg_mr(tmr);
    }));
}

TEST(SoftDevice, rdma_read_checks_keys_and_bounds_then_flushes_the_queue_pair)
{
    EXPECT_TRUE(in_child([] {
        Loop l;
        std::vector<char> src(10000), dst(10000);
        for (std::size_t i = 0; i < src.size(); ++i) {
            src[i] = static_cast<char>(i * 7);
        }
        Mr* smr = nullptr;
        Mr* dmr = nullptr;
        ASSERT_TRUE(l.dev->reg_mr(src.data(), src.size(), access::remote_read, smr).ok());
        ASSERT_TRUE(l.dev->reg_mr(dst.data(), dst.size(), access::local_write, dmr).ok());
        auto read = [&](std::uint64_t wr_id, std::uint32_t rkey, std::uint64_t raddr, std::uint32_t len) {
            Sge s{reinterpret_cast<std::uint64_t>(dst.data()), len, dmr->lkey};
            SendWr w;
            w.wr_id = wr_id;
            w.op = Op::rdma_read;
            w.sg = &s;
            w.nsge = 1;
            w.remote_addr = raddr;
            w.rkey = rkey;
            return l.dev->post_send(l.a, w);
        };
        ASSERT_TRUE(read(1, smr->rkey, reinterpret_cast<std::uint64_t>(src.data()) + 3, 9000).ok());
        auto c = l.wait(l.scq, 1);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].status, WcStatus::success);
        EXPECT_EQ(std::memcmp(dst.data(), src.data() + 3, 9000), 0);
        // Past the end of the registration: remote access error.
        ASSERT_TRUE(read(2, smr->rkey, reinterpret_cast<std::uint64_t>(src.data()) + 9000, 2000).ok());
        ASSERT_TRUE(read(3, smr->rkey, reinterpret_cast<std::uint64_t>(src.data()), 8).ok());
        c = l.wait(l.scq, 2);
        ASSERT_EQ(c.size(), 2u);
        EXPECT_EQ(c[0].status, WcStatus::rem_access_err);
        EXPECT_EQ(c[1].status, WcStatus::wr_flush_err); // everything after it is flushed
        EXPECT_EQ(l.dev->qp_state(l.a), QpState::error);
        EXPECT_EQ(l.dev->qp_state(l.b), QpState::error); // the responder too
        AsyncEvent ev;
        bool seen = false;
        while (l.dev->poll_async(ev)) {
            seen = seen || (ev.kind == AsyncEvent::Kind::qp_access_error && ev.qp_num == l.b->qpn);
        }
        EXPECT_TRUE(seen);
        l.dev->dereg_mr(smr);
        l.dev->dereg_mr(dmr);
    }));
}

TEST(SoftDevice, a_wrong_psn_or_a_dead_port_ends_in_retry_exceeded)
{
    EXPECT_TRUE(in_child([] {
        Loop l(/*timeout=*/4, /*psn_skew=*/5); // a expects PSN 105, b sends 100
        std::uint64_t x = 42;
        Sge s{reinterpret_cast<std::uint64_t>(&x), 8, 0};
        SendWr w;
        w.wr_id = 9;
        w.sg = &s;
        w.nsge = 1;
        w.inline_data = true;
        ASSERT_TRUE(l.dev->post_send(l.b, w).ok());
        auto c = l.wait(l.scq, 1);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].status, WcStatus::retry_exc_err);
    }));
    EXPECT_TRUE(in_child([] {
        Loop l(/*timeout=*/4);
        ASSERT_TRUE(set_port_state(l.fabric, 0, 1, false));
        AsyncEvent ev;
        ASSERT_TRUE(l.dev->poll_async(ev));
        EXPECT_EQ(ev.kind, AsyncEvent::Kind::port_error);
        std::uint64_t x = 42;
        Sge s{reinterpret_cast<std::uint64_t>(&x), 8, 0};
        SendWr w;
        w.sg = &s;
        w.nsge = 1;
        w.inline_data = true;
        ASSERT_TRUE(l.dev->post_send(l.a, w).ok());
        auto c = l.wait(l.scq, 1);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].status, WcStatus::retry_exc_err);
        ASSERT_TRUE(set_port_state(l.fabric, 0, 1, true));
        ASSERT_TRUE(l.dev->poll_async(ev));
        EXPECT_EQ(ev.kind, AsyncEvent::Kind::port_active);
    }));
}

// A process killed without closing the device: its queue pairs must not
// answer for the process that takes its place in the fabric (the kernel
// destroys a dead process's queue pairs). X connects to Y's queue pair, Y
// is killed, Z opens the fabric: X's next send finds nobody (retry
// exceeded), not Z's memory under Y's registrations.
TEST(SoftDevice, a_killed_process_queue_pairs_go_before_its_slot_is_taken_again)
{
    EXPECT_TRUE(in_child([] {
        FabricOptions o;
        o.name = "rp" + std::to_string(::getpid());
        o.pool_bytes = std::size_t{1} << 26;
        int up[2], down[2];
        ASSERT_EQ(::pipe(up), 0);
        ASSERT_EQ(::pipe(down), 0);
        // Y: a queue pair with receives posted, connected back to X's.
        std::fflush(nullptr);
        pid_t y = ::fork();
        if (y == 0) {
            ::alarm(30); // never outlives a test that failed before it killed it
            auto prov = make_soft_provider(o);
            std::string why;
            auto dev = prov->open("soft0", why);
            Cq* cq = nullptr;
            Srq* srq = nullptr;
            Qp* b = nullptr;
            QpCaps caps;
            caps.max_send_wr = 4;
            static char rx[4096];
            Mr* mr = nullptr;
            PortAttr pa;
            if (dev == nullptr || !dev->create_cq(16, cq).ok() || !dev->create_srq(8, srq).ok() ||
                !dev->create_qp(cq, cq, srq, caps, b).ok() || !dev->query_port(1, -1, pa).ok() ||
                !dev->reg_mr(rx, sizeof rx, access::local_write, mr).ok() ||
                !dev->modify_qp_init(b, 1, access::local_write).ok()) {
                _exit(2);
            }
            for (int i = 0; i < 4; ++i) {
                Sge sg{reinterpret_cast<std::uint64_t>(rx + 1024 * i), 1024, mr->lkey};
                (void)dev->post_srq_recv(srq, static_cast<std::uint64_t>(i), sg);
            }
            std::uint32_t qpn = b->qpn;
            std::uint32_t theirs = 0;
            if (::write(up[1], &qpn, sizeof qpn) != sizeof qpn ||
                ::read(down[0], &theirs, sizeof theirs) != sizeof theirs) {
                _exit(3);
            }
            RtrAttr r;
            r.dest_qpn = theirs;
            r.rq_psn = 100;
            r.path_mtu = 4096;
            r.dlid = pa.lid;
            RtsAttr t;
            t.sq_psn = 100;
            if (!dev->modify_qp_rtr(b, r).ok() || !dev->modify_qp_rts(b, t).ok() ||
                ::write(up[1], &qpn, sizeof qpn) != sizeof qpn) {
                _exit(4);
            }
            for (;;) {
                ::pause();
            }
        }
        ASSERT_GT(y, 0);
        auto prov = make_soft_provider(o);
        std::string why;
        auto dev = prov->open("soft0", why);
        ASSERT_NE(dev, nullptr) << why;
        Cq* cq = nullptr;
        Srq* srq = nullptr;
        Qp* a = nullptr;
        QpCaps caps;
        caps.max_send_wr = 4;
        caps.max_inline = 64;
        PortAttr pa;
        ASSERT_TRUE(dev->create_cq(16, cq).ok());
        ASSERT_TRUE(dev->create_srq(8, srq).ok());
        ASSERT_TRUE(dev->create_qp(cq, cq, srq, caps, a).ok());
        ASSERT_TRUE(dev->query_port(1, -1, pa).ok());
        ASSERT_TRUE(dev->modify_qp_init(a, 1, access::local_write).ok());
        std::uint32_t theirs = 0;
        ASSERT_EQ(::read(up[0], &theirs, sizeof theirs), static_cast<ssize_t>(sizeof theirs));
        ASSERT_EQ(::write(down[1], &a->qpn, sizeof a->qpn), static_cast<ssize_t>(sizeof a->qpn));
        // Y is in RTS.
        ASSERT_EQ(::read(up[0], &theirs, sizeof theirs), static_cast<ssize_t>(sizeof theirs));
        RtrAttr r;
        r.dest_qpn = theirs;
        r.rq_psn = 100;
        r.path_mtu = 4096;
        r.dlid = pa.lid;
        ASSERT_TRUE(dev->modify_qp_rtr(a, r).ok());
        RtsAttr t;
        t.sq_psn = 100;
        t.timeout = 4; // 131 us per try
        t.retry_cnt = 1;
        ASSERT_TRUE(dev->modify_qp_rts(a, t).ok());
        std::uint64_t x = 42;
        Sge sg{reinterpret_cast<std::uint64_t>(&x), 8, 0};
        SendWr w;
        w.sg = &sg;
        w.nsge = 1;
        w.inline_data = true;
        auto one = [&] {
            Wc c;
            const rt::Nanos end = rt::monotonic_ns() + 5000000000;
            while (dev->poll_cq(cq, &c, 1) != 1) {
                if (rt::monotonic_ns() > end) {
                    ADD_FAILURE() << "no completion in 5 s";
                    return WcStatus::general_err;
                }
            }
            return c.status;
        };
        ASSERT_TRUE(dev->post_send(a, w).ok());
        EXPECT_EQ(one(), WcStatus::success); // Y took it
        ::kill(y, SIGKILL);
        ::waitpid(y, nullptr, 0);
        // Z takes the dead one's place in the fabric.
        std::fflush(nullptr);
        pid_t z = ::fork();
        if (z == 0) {
            ::alarm(30);
            auto zp = make_soft_provider(o);
            std::string zwhy;
            auto zd = zp->open("soft0", zwhy);
            std::uint32_t ok = zd != nullptr ? 1 : 0;
            (void)!::write(up[1], &ok, sizeof ok);
            for (;;) {
                ::pause();
            }
        }
        std::uint32_t ok = 0;
        ASSERT_EQ(::read(up[0], &ok, sizeof ok), static_cast<ssize_t>(sizeof ok));
        EXPECT_EQ(ok, 1u);
        ASSERT_TRUE(dev->post_send(a, w).ok());
        EXPECT_EQ(one(), WcStatus::retry_exc_err);
        ::kill(z, SIGKILL);
        ::waitpid(z, nullptr, 0);
        dev.reset();
        unlink_fabric(o.name);
    }));
}

TEST(SoftDevice, a_registration_keeps_its_pages_after_the_memory_is_unmapped)
{
    // What a pinned registration does on hardware, and what the registration
    // cache must never let the path run into.
    EXPECT_TRUE(in_child([] {
        Loop l;
        const std::size_t len = 3 * 4096;
        void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        std::memset(p, 'A', len);
        Mr* old = nullptr;
        ASSERT_TRUE(l.dev->reg_mr(p, len, access::remote_read, old).ok());
        ASSERT_EQ(::munmap(p, len), 0);
        void* q = ::mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        ASSERT_EQ(q, p);
        std::memset(q, 'B', len);
        std::vector<char> dst(len);
        Mr* dmr = nullptr;
        ASSERT_TRUE(l.dev->reg_mr(dst.data(), len, access::local_write, dmr).ok());
        Sge s{reinterpret_cast<std::uint64_t>(dst.data()), static_cast<std::uint32_t>(len), dmr->lkey};
        SendWr w;
        w.op = Op::rdma_read;
        w.sg = &s;
        w.nsge = 1;
        w.remote_addr = reinterpret_cast<std::uint64_t>(p);
        w.rkey = old->rkey;
        ASSERT_TRUE(l.dev->post_send(l.a, w).ok());
        ASSERT_EQ(l.wait(l.scq, 1).size(), 1u);
        EXPECT_EQ(dst[0], 'A'); // the old pages, not the new mapping
        EXPECT_EQ(dst[len - 1], 'A');
        Mr* fresh = nullptr;
        ASSERT_TRUE(l.dev->reg_mr(q, len, access::remote_read, fresh).ok());
        w.rkey = fresh->rkey;
        ASSERT_TRUE(l.dev->post_send(l.a, w).ok());
        ASSERT_EQ(l.wait(l.scq, 1).size(), 1u);
        EXPECT_EQ(dst[0], 'B');
        l.dev->dereg_mr(old);
        l.dev->dereg_mr(fresh);
        l.dev->dereg_mr(dmr);
    }));
}

} // namespace
} // namespace ulmpi::soft
