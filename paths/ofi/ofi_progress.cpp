// The ofi path's completion queue and progress: receives posted and handed
// up, completions of sends and reads, error completions, and progress()'s
// chores (reposts, backlogs, timers, down and up reports).
#include "paths/ofi/ofi_path.h"
#include "paths/ofi/ofi_util.h"

#include "runtime/log.h"

#include <cstring>
#include <utility>

namespace ulmpi::path::ofi {
namespace {

struct OfiRxFrag final : RxFrag {};

} // namespace

bool OfiPath::post_recv(std::uint32_t i)
{
    ssize_t rc;
    {
        rt::OptGuard g(dom_);
        rc = fi_recv(ep_, rxb(i), opt_.buf_size, rx_desc(), FI_ADDR_UNSPEC, &rx_ops_[i].ctx);
    }
    if (rc == 0) {
        return true;
    }
    if (rc != -FI_EAGAIN) {
        ULMPI_ERROR("ofi: cannot post a receive: %s", lib::strerror(static_cast<int>(-rc)));
    }
    rt::OptGuard g(rxq_);
    repost_.push_back(i);
    repost_hint_.store(true, std::memory_order_release);
    return false;
}

void OfiPath::on_tx(Op& op, int err)
{
    if (op.kind == Op::Kind::send) {
        const int peer = op.peer; // op.busy was cleared under dom_ (poll_cq)
        give_free_tx(op.index);
        if (err != 0) {
            mark_down(peer, lib::strerror(err));
        } else if (peer >= 0 && downs_any_.load(std::memory_order_relaxed)) [[unlikely]] {
            Peer& p = peers_[static_cast<std::size_t>(peer)];
            rt::OptGuard g(misc_);
            if (p.down) {
                p.down = false;
                p.down_due = false;
                p.up_due = true;
                downs_any_.store(--downs_ > 0, std::memory_order_relaxed);
                any_news_.store(true, std::memory_order_release);
            }
        }
    } else if (op.kind == Op::Kind::read) {
        int peer;
        {
            rt::OptGuard g(gets_lock_);
            peer = op.peer;
            on_read_done(op, err);
        }
        if (err != 0 && !key_error(err)) {
            mark_down(peer, lib::strerror(err));
        }
    }
}

void OfiPath::on_recv(std::uint32_t i, std::size_t len, Sink& sink)
{
    FragHeader h;
    std::memcpy(&h, rxb(i), sizeof h);
    const std::uint32_t src = frag_src(h);
    const bool ok = len >= kHdr && h.version == kWireVersion && h.job == job_tag_ &&
                    src < static_cast<std::uint32_t>(job_.size) && peers_[src].reach;
    if (ok) {
        OfiRxFrag rx;
        rx.peer = static_cast<int>(src);
        rx.data = rxb(i) + kHdr;
        rx.len = len - kHdr;
        ++counters_.frags_received; // one thread at a time hands receives up
        counters_.bytes_received += rx.len;
        sink.on_frag(*this, rx);
    } else {
        ++refused_;
    }
    post_recv(i);
}

void OfiPath::on_error_cqe(const fi_cq_err_entry& err)
{
    ++error_cqes_;
    Op* op = static_cast<Op*>(err.op_context);
    if (op == nullptr) {
        ULMPI_DEBUG("ofi: error completion without context: %s", lib::strerror(err.err));
    } else if (op->kind == Op::Kind::recv) {
        if (err.err != FI_ECANCELED) {
            ULMPI_DEBUG("ofi: receive completed with an error: %s", lib::strerror(err.err));
        }
        post_recv(op->index);
    } else {
        on_tx(*op, err.err != 0 ? err.err : FI_EIO);
    }
}

// One loop for both modes. With the locks off every OptGuard below takes
// nothing, `sink` is the progress()'s own and `mine` is null, so the
// single-threaded poll is the same code without the lock calls.
int OfiPath::poll_cq(Sink* sink, std::vector<Arrived>* mine)
{
    const bool fine = rt::fine_locks();
    if (fine) [[unlikely]] {
        if (cq_busy_.exchange(true, std::memory_order_acquire)) {
            return 0; // another thread reads it and completes what it finds
        }
        sink = nullptr; // receives go up from the deliverer ("Threads")
    }
    fi_cq_msg_entry e[16];
    int total = 0;
    for (int round = 0; round < 8; ++round) {
        ssize_t n;
        {
            rt::OptGuard g(dom_);
            n = fi_cq_read(cq_, e, 16);
            // A send's fields are dom_'s (send_now, check_stuck).
            for (ssize_t k = 0; k < n; ++k) {
                Op& op = *static_cast<Op*>(e[k].op_context);
                if (op.kind == Op::Kind::send) {
                    op.busy = false;
                }
            }
        }
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            ssize_t got;
            {
                rt::OptGuard g(dom_);
                got = fi_cq_readerr(cq_, &err, 0);
                auto* op = static_cast<Op*>(err.op_context);
                if (got == 1 && op != nullptr && op->kind == Op::Kind::send) {
                    op->busy = false;
                }
            }
            if (got == 1) {
                on_error_cqe(err); // a send's busy mark was cleared under dom_
                ++total;
            }
            continue;
        }
        if (n <= 0) {
            break;
        }
        for (ssize_t k = 0; k < n; ++k) {
            Op& op = *static_cast<Op*>(e[k].op_context);
            if (op.kind != Op::Kind::recv) {
                on_tx(op, 0);
            } else if (sink != nullptr && arrived_.empty()) {
                on_recv(op.index, e[k].len, *sink);
                ++delivered_;
            } else if (mine != nullptr && !arrived_hint_.load(std::memory_order_relaxed)) {
                // The deliverer's own poll, nothing polled before it waiting
                // (those were queued under cq_busy_, which we hold now).
                mine->push_back({op.index, e[k].len});
            } else {
                // Polled where nothing can take it (acquire, get, close, or
                // any thread with locks on): it goes up, in order, from the
                // next progress() (the hint: in case that one runs with the
                // locks on, after MPI_Init_thread).
                rt::OptGuard g(rxq_);
                arrived_.push_back({op.index, e[k].len});
                arrived_hint_.store(true, std::memory_order_release);
            }
        }
        total += static_cast<int>(n);
        if (n < 16) {
            break;
        }
    }
    if (fine) [[unlikely]] {
        cq_busy_.store(false, std::memory_order_release);
    }
    return total;
}

int OfiPath::deliver_arrived(Sink& sink)
{
    int n = 0;
    while (arrived_hint_.load(std::memory_order_acquire)) {
        {
            rt::OptGuard g(rxq_);
            held_.swap(arrived_);
            arrived_hint_.store(false, std::memory_order_relaxed);
        }
        for (const Arrived& a : held_) {
            on_recv(a.buf, a.len, sink);
            ++n;
        }
        held_.clear();
    }
    return n;
}

int OfiPath::progress(Sink& sink)
{
    if (!open_) {
        return 0;
    }
    if (rt::fine_locks()) [[unlikely]] {
        // Any thread reads the completion queue (its sends and reads
        // complete); one at a time hands the receives up and does the chores.
        if (delivering_.exchange(true, std::memory_order_acquire)) {
            return poll_cq(nullptr);
        }
        reported_ = 0;
        int delivered = deliver_arrived(sink);
        const int polled = poll_cq(nullptr, &mine_);
        // What this poll found, after what others polled before it (those
        // went to arrived_, and so did ours from then on); then what others
        // polled since.
        for (const Arrived& a : mine_) {
            on_recv(a.buf, a.len, sink);
            ++delivered;
        }
        mine_.clear();
        delivered += deliver_arrived(sink);
        chores(sink);
        delivered += reported_; // (the next deliverer resets it: read before the release)
        delivering_.store(false, std::memory_order_release);
        return delivered > 0 ? delivered : polled;
    }
    delivered_ = 0;
    reported_ = 0;
    if (!arrived_.empty()) [[unlikely]] {
        held_.swap(arrived_);
        for (const Arrived& a : held_) {
            on_recv(a.buf, a.len, sink);
            ++delivered_;
        }
        held_.clear();
    }
    poll_cq(&sink);
    const int delivered = delivered_;
    chores_plain(sink);
    return delivered + reported_;
}

void OfiPath::chores_plain(Sink& sink)
{
    if (!repost_.empty()) [[unlikely]] {
        std::vector<std::uint32_t> again;
        again.swap(repost_);
        for (std::uint32_t i : again) {
            post_recv(i);
        }
    }
    if (!backlogged_.empty()) [[unlikely]] {
        flush_backlogs();
    }
    pump_gets();
    report_gets(sink);
    if ((++tick_ & 255) == 0) {
        const rt::Nanos now = rt::now_ns();
        check_stuck(now);
        check_reads(now);
        if ((tick_ & 1023) == 0 && !mrs_.empty()) {
            expire_mrs(now);
        }
    }
    if (any_news_.load(std::memory_order_relaxed)) [[unlikely]] {
        chores(sink); // the reports (their code is shared)
    }
}

void OfiPath::chores(Sink& sink)
{
    if (repost_hint_.load(std::memory_order_acquire)) [[unlikely]] {
        std::vector<std::uint32_t> again;
        {
            rt::OptGuard g(rxq_);
            again.swap(repost_);
            repost_hint_.store(false, std::memory_order_relaxed);
        }
        for (std::uint32_t i : again) {
            post_recv(i);
        }
    }
    if (backlogged_n_.load(std::memory_order_relaxed) != 0) {
        flush_backlogs();
    }
    pump_gets();
    report_gets(sink);
    if ((++tick_ & 255) == 0) {
        const rt::Nanos now = rt::now_ns();
        check_stuck(now);
        check_reads(now);
        if ((tick_ & 1023) == 0) {
            expire_mrs(now);
        }
    }
    if (any_news_.load(std::memory_order_acquire)) {
        any_news_.store(false, std::memory_order_relaxed);
        std::vector<std::pair<int, bool>> news; // (peer, up)
        {
            rt::OptGuard g(misc_);
            for (int r = 0; r < job_.size; ++r) {
                Peer& p = peers_[static_cast<std::size_t>(r)];
                if (p.down_due) {
                    p.down_due = false;
                    news.emplace_back(r, false);
                }
                if (p.up_due) {
                    p.up_due = false;
                    news.emplace_back(r, true);
                }
            }
        }
        for (const auto& [r, up] : news) {
            if (up) {
                sink.on_path_up(*this, r);
            } else {
                sink.on_path_down(*this, r);
            }
        }
    }
}

} // namespace ulmpi::path::ofi
