// Recovery: re-creating a dead replica (SDR-MPI section 3.4; two replicas;
// docs/replication.md "Recovery" has the whole protocol and its limits).
//
// Roles: rank i has replicas S (alive, index k) and D (dead, index l).
//  1. S (D's substitute) asks mpirun (REPLICA fork); once granted it pushes
//     its queued control messages into ULM, resets its link to D as a new
//     incarnation K and clears D's shared memory (Engine::prepare_fork),
//     forks twice (the grandchild C is the new D; mpirun, a subreaper,
//     adopts it), connects its link to C, stops sending D's stream (the
//     orphans it served as substitute) and sends every live process a
//     notice (FIFO after everything S sent before the fork).
//  2. C takes D's identity (Bootstrap::become_replica, Engine::become):
//     what S had under way is dropped (receives whose message had not all
//     come go back to the front: holes), its links start afresh, and no
//     peer but S is reached until S relays that the peer knows C (ready).
//     It keeps S's unacknowledged messages as its stock, sends nothing
//     straight to its replicas of other ranks (direct_ off: they are served
//     through copies once they asked, in order), and asks the server of
//     each rank's stream for every message from the first it lacks (a
//     request, as an orphan asks a substitute). Its replica of a rank that
//     is dead itself, waiting for its own re-creation (several deaths at
//     once), gets the stock and everything C sends to that rank, kept
//     (parked) until its new process asks.
//  3. Every other process P, on the notice: reads its launcher events (the
//     old D's death came before the fork was granted), fails D if it had
//     not, resets and connects its link to C, tells S (welcome; S relays
//     ready to C), and: if P receives rank i's messages from C's index, it
//     asks C from where it stands; if P sends rank x's messages to C's
//     stream, it keeps them (parked since D died) until C's request, and
//     serves C through copies from then on; else it keeps nothing more.
// C says "back" (log line, REPLICA back to mpirun) once every live process
// is connected; mpirun lets the next recovery start only then.
// If the fork cannot be done, S sends a notice with incarnation 0 and the
// others stop keeping messages for D.
#include "ft/rep/replicator.h"

#include "ft/rep/pool.h"

#include "ft/rep/control_msg.h"

#include "runtime/config.h"
#include "runtime/log.h"
#include "ulm/packer.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace ulmpi::rep {

namespace {

constexpr rt::Nanos kForkRetry = 20'000'000; // mpirun busy with another recovery

const rt::IntParam fork_delay_p{
    "rep_fork_delay_ms", 0,
    "replication (testing): the substitute re-creates a dead replica this many ms after it heard "
    "of the death (tests order a recovery after other traffic with it)"};

} // namespace

rt::Nanos Replicator::fork_delay()
{
    return std::max<std::int64_t>(0, fork_delay_p.get()) * 1'000'000;
}

bool Replicator::recovery_applies(int dead) const
{
    if (!recover_) {
        return false;
    }
    const int x = set_.logical_of(dead);
    const int other = set_.phys(1 - set_.replica_of(dead), x);
    return !set_.dead(other); // the sibling that re-creates it lives
}

std::shared_ptr<HeldCopy> Replicator::copy_of(const ulm::SendMsg& s) const
{
    auto c = std::allocate_shared<HeldCopy>(PoolAlloc<HeldCopy>{});
    c->resize(s.total);
    std::byte* to = c->data();
    ulm::for_each_segment(s.data, 0, s.total, [&](const std::byte* p, std::size_t n) {
        std::memcpy(to, p, n);
        to += n;
    });
    c->tag = s.tag;
    c->ctx = s.ctx;
    return c;
}

void Replicator::queue_ctrl(int to, std::vector<std::byte> bytes)
{
    outbox_.push_back(Out{to, std::move(bytes), nullptr, nullptr});
}

void Replicator::send_request(int rank, int to)
{
    const auto xi = static_cast<std::size_t>(rank);
    std::vector<std::uint64_t> want(recv_holes_[xi].begin(), recv_holes_[xi].end());
    // epoch: the incarnation of my replica of `rank`, whose stream I ask for.
    queue_ctrl(to, request_bytes(Kind::request, recv_next_[xi],
                                 static_cast<std::uint32_t>(
                                     inc_[static_cast<std::size_t>(set_.phys(k_, rank))]),
                                 want, pending_of(rank)));
}

void Replicator::keep_for(int rank, int replica)
{
    keep_[static_cast<std::size_t>(rank)] |= 1u << replica;
    acks_.park(rank, [this](const ulm::SendMsg& m) { return copy_of(m); });
}

void Replicator::stop_keeping(int rank, int replica)
{
    auto& keep = keep_[static_cast<std::size_t>(rank)];
    keep &= ~(1u << replica);
    if (keep == 0) {
        // Nobody is to ask me from where it stands any more: what I hold is
        // what the live replicas have not acknowledged.
        stock_[static_cast<std::size_t>(rank)].clear();
        if (acks_.parked(rank)) {
            acks_.unpark(rank);
        }
    }
}

void Replicator::give_up_fork(const std::string& why)
{
    const int d = fork_for_;
    fork_for_ = -1;
    rt::log(rt::LogLevel::warn,
            "replication: replica %d of rank %d (process %d) is not re-created: %s; the job goes "
            "on with one replica of the rank",
            set_.replica_of(d), me_, d, why.c_str());
    for (int p = 0; p < eng_.phys_size(); ++p) {
        if (p != eng_.phys_rank() && !set_.dead(p)) {
            queue_ctrl(p, bytes_of(NoticeMsg{Kind::notice, {}, static_cast<std::uint32_t>(d), 0, 0}));
        }
    }
}

void Replicator::try_fork()
{
    const int d = fork_for_;
    if (!set_.dead(d)) {
        fork_for_ = -1;
        return;
    }
    if (forks_held_ > 0) {
        // (An intra-parallel section is open. No new retry time: a later
        // time, pushed on by every poll inside the section, would pass the
        // section's end and starve the re-creation of a program that is
        // mostly in sections; the first poll after it forks.)
        return;
    }
    if (!eng_.can_fork()) {
        give_up_fork("a path in use cannot be handed to a forked process (recovery works over "
                     "shm, self and udp; not verbs or ofi)");
        return;
    }
    const int incarnation = inc_[static_cast<std::size_t>(d)] + 1;
    std::string why;
    rt::Status st = boot_.replica_fork(d, incarnation, why);
    if (st.code() == rt::Errc::again) {
        fork_retry_at_ = rt::now_ns() + kForkRetry;
        return;
    }
    if (!st.ok()) {
        give_up_fork(why);
        return;
    }
    // Everything queued so far leaves before the notice (FIFO per pair),
    // deferred acknowledgements too (the new process must not send them).
    release_deferred(true);
    flush();
    if (rt::Status p = eng_.prepare_fork(d, incarnation); !p.ok()) {
        // mpirun waits for a process that never comes, and announces the
        // failure again after its wait: then the others stop keeping.
        give_up_fork(std::string("cannot reset the link to it (") + rt::errc_name(p.code()) + ")");
        return;
    }
    // The new process runs here: the paths to it are chosen from here.
    boot_.moved(d, boot_.job().node_id);
    const rt::Nanos t0 = rt::now_ns();
    // The new process makes addresses of its own (udp sockets) and puts
    // them as d's: I read them only once it says they are stored.
    int told[2] = {-1, -1};
    if (eng_.fork_publishes() && ::pipe2(told, O_CLOEXEC) != 0) {
        rt::fatal("replication: pipe: %s", std::strerror(errno));
    }
    std::fflush(nullptr);
    const pid_t mid = ::fork();
    if (mid == 0) {
        const pid_t c = ::fork();
        if (c != 0) {
            ::_exit(c > 0 ? 0 : 1); // the grandchild is mpirun's to reap (a subreaper)
        }
        if (told[0] >= 0) {
            ::close(told[0]);
        }
        become_new(d, incarnation, told[1]);
        return;
    }
    if (told[1] >= 0) {
        ::close(told[1]);
    }
    if (mid > 0) {
        int status = 0;
        while (::waitpid(mid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    fork_for_ = -1;
    if (told[0] >= 0) {
        const bool ok = mid > 0 && wait_told(told[0]);
        ::close(told[0]);
        if (!ok) {
            // It died (mpirun announces it) or hangs (mpirun gives up on
            // it): d stays dead, and nobody keeps messages for it any more.
            fork_for_ = d;
            give_up_fork("the new process did not publish its addresses");
            return;
        }
    }
    if (!eng_.connect_replaced(d).ok()) {
        rt::fatal("replication: cannot connect to the re-created replica");
    }
    set_.revive(d);
    inc_[static_cast<std::size_t>(d)] = incarnation;
    boot_.revived(d, incarnation);
    const int l = set_.replica_of(d);
    for (auto& orphans : serve_) {
        // Its stream is the new process's from now on (it sends from where
        // my fork left it).
        std::erase_if(orphans, [&](const Orphan& o) { return o.replica == l; });
    }
    child_ = d;
    ++recoveries_;
    for (int p = 0; p < eng_.phys_size(); ++p) {
        if (p != eng_.phys_rank() && p != d && !set_.dead(p)) {
            queue_ctrl(p, bytes_of(NoticeMsg{Kind::notice, {}, static_cast<std::uint32_t>(d),
                                             static_cast<std::uint32_t>(incarnation), 0}));
        }
    }
    ULMPI_DEBUG("replication: re-created replica %d of rank %d as process %d (incarnation %d) in "
                "%lld us",
                l, me_, d, incarnation, static_cast<long long>((rt::now_ns() - t0) / 1000));
}

bool Replicator::wait_told(int told)
{
    // As long as mpirun waits for the new process to connect (kAdoptWait).
    constexpr int kWaitMs = 10000;
    const rt::Nanos until = rt::now_ns() + rt::Nanos{kWaitMs} * 1'000'000;
    for (;;) {
        const rt::Nanos left = until - rt::now_ns();
        if (left <= 0) {
            return false;
        }
        pollfd p{told, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left / 1'000'000) + 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        char b = 0;
        const ssize_t r = ::read(told, &b, 1);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        return r == 1; // 0: it closed the pipe (died) before saying so
    }
}

void Replicator::become_new(int d, int incarnation, int told)
{
    const int s = eng_.phys_rank();
    const int s_incarnation = boot_.job().incarnation;
    std::string why;
    if (!boot_.become_replica(d, incarnation, why).ok()) {
        rt::log(rt::LogLevel::error, "replication: the re-created replica %d of rank %d: %s",
                set_.replica_of(d), me_, why.c_str());
        ::_exit(1);
    }
    // Outstanding work is the substitute's: control messages, held sends.
    for (Out& o : outbox_) {
        if (o.parent != nullptr) {
            eng_.release_hold(o.parent);
        }
    }
    outbox_.clear();
    pending_acks_.clear();
    while (!deferred_procs_.empty()) {
        drop_deferred(deferred_procs_.back());
    }
    piggy_in_.clear();
    // The substitute's messages that replicas of their destination had not
    // acknowledged yet: still held for those replicas (they may ask me for
    // them as their server, also after I was forked, when the substitute
    // dies); each tells me what it has (ack_upto or request, on the notice).
    std::vector<std::vector<std::pair<std::uint64_t, std::uint32_t>>> unacked(
        static_cast<std::size_t>(set_.logical_size()));
    for (int j = 0; j < set_.logical_size(); ++j) {
        auto& stock = stock_[static_cast<std::size_t>(j)];
        stock.clear();
        for (auto&& [m, e] : acks_.take(j)) {
            unacked[static_cast<std::size_t>(j)].emplace_back(m, e.waiting);
            stock[m] = e.copy ? e.copy : copy_of(*e.send);
            if (e.send != nullptr) {
                for (int b = std::popcount(e.waiting); b > 0; --b) {
                    eng_.release_hold(e.send);
                }
            }
        }
        serve_[static_cast<std::size_t>(j)].clear();
        if (check_) {
            digests_[static_cast<std::size_t>(j)].clear();
        }
    }
    for (auto& h : new_holes_) {
        h.clear();
    }
    // What the substitute had asked its servers for again: asked afresh, as
    // holes of my requests.
    for (int p = 0; p < eng_.phys_size(); ++p) {
        auto& again = reasked_[static_cast<std::size_t>(p)];
        auto& holes = recv_holes_[static_cast<std::size_t>(set_.logical_of(p))];
        holes.insert(holes.end(), again.begin(), again.end());
        again.clear();
        marks_[static_cast<std::size_t>(p)] = 0;
    }
    failing_ = true;
    const rt::Status st = eng_.become(d, incarnation, s, s_incarnation);
    failing_ = false;
    if (!st.ok()) {
        rt::log(rt::LogLevel::error, "replication: the re-created replica %d of rank %d cannot "
                "take over its paths (%s)", set_.replica_of(d), me_, rt::errc_name(st.code()));
        ::_exit(1);
    }
    if (told >= 0) {
        // My addresses are stored at mpirun before the substitute (and,
        // after its notice, every other process) reads them.
        const char b = 1;
        if (!boot_.sync().ok() || ::write(told, &b, 1) != 1) {
            rt::log(rt::LogLevel::error, "replication: the re-created replica %d of rank %d "
                    "cannot tell its substitute its addresses", set_.replica_of(d), me_);
            ::_exit(1);
        }
        ::close(told);
    }
    std::sort(orphans_.begin(), orphans_.end(),
              [](const ulm::RecvMsg* a, const ulm::RecvMsg* b) { return a->rep_seq > b->rep_seq; });
    for (ulm::RecvMsg* r : orphans_) {
        eng_.repost(r);
    }
    orphans_.clear();
    // The links started afresh: the processes the substitute knew dead stay so.
    for (int p = 0; p < eng_.phys_size(); ++p) {
        if (p != d && set_.dead(p)) {
            eng_.mark_peer_failed(p);
        }
    }
    k_ = set_.replica_of(d);
    char ident[64];
    std::snprintf(ident, sizeof ident, "ulmpi: rank %d replica %d", me_, k_);
    rt::set_log_identity(ident);
    set_.revive(d);
    inc_[static_cast<std::size_t>(d)] = incarnation;
    const int n = set_.logical_size();
    for (int x = 0; x < n; ++x) {
        const auto xi = static_cast<std::size_t>(x);
        auto& holes = new_holes_[xi];
        std::vector<std::uint64_t> want(recv_holes_[xi].begin(), recv_holes_[xi].end());
        for (std::uint64_t h : holes) {
            if (h != 0) { // 0: not a numbered message (the control receive)
                want.push_back(h);
            }
        }
        std::sort(want.begin(), want.end());
        want.erase(std::unique(want.begin(), want.end()), want.end());
        recv_holes_[xi].assign(want.begin(), want.end());
        holes.clear();
        server_[xi] = set_.server(x, k_);
        // My replica of rank x gets my messages through copies, once it
        // asked (it may lack some of the substitute's); kept meanwhile.
        // A replica of rank x that is dead while its sibling lives is being
        // re-created (one recovery at a time: after mine): its new process
        // asks its server for everything since its death, and I may be that
        // server (mine), or become it (the other one's, if its server dies
        // first): kept as the substitute kept it (the stock), and from now
        // on, as fail() keeps it on a death.
        const bool mine_lives = x != me_ && set_.alive(k_, x);
        direct_[xi] = !mine_lives;
        keep_[xi] = 0; // (the substitute's keeping went with its table, take())
        for (int j = 0; j < set_.replicas() && x != me_; ++j) {
            const bool comes = !set_.alive(j, x) && recovery_applies(set_.phys(j, x));
            if ((j == k_ && mine_lives) || comes) {
                keep_for(x, j);
            }
        }
        for (const auto& [m, waiting] : unacked[xi]) {
            const std::uint32_t want = waiting & set_.live_mask(x, -1);
            if (want != 0 && x != me_) {
                (void)acks_.post(x, m, nullptr, want, stock_[xi].at(m));
            }
        }
        if (keep_[xi] == 0) {
            stock_[xi].clear();
        }
    }
    for (int p = 0; p < eng_.phys_size(); ++p) {
        unready_[static_cast<std::size_t>(p)] = p != d && p != s && !set_.dead(p);
    }
    unready_count_ = static_cast<int>(std::count(unready_.begin(), unready_.end(), true));
    for (int x = 0; x < n; ++x) {
        if (x != me_ && server_[static_cast<std::size_t>(x)] >= 0) {
            ULMPI_DEBUG("replication: new process asks %d for rank %d's messages from %llu (%zu "
                        "holes), direct %d",
                        server_[static_cast<std::size_t>(x)], x,
                        static_cast<unsigned long long>(recv_next_[static_cast<std::size_t>(x)]),
                        recv_holes_[static_cast<std::size_t>(x)].size(),
                        static_cast<int>(direct_[static_cast<std::size_t>(x)]));
            send_request(x, server_[static_cast<std::size_t>(x)]);
        }
    }
    // Tell the other replicas of every rank which of their messages I have
    // (they hold the rest for me, on_notice).
    for (int x = 0; x < n; ++x) {
        const auto xi = static_cast<std::size_t>(x);
        for (int r = 0; r < set_.replicas(); ++r) {
            if (x == me_ || r == k_ || !set_.alive(r, x)) {
                continue;
            }
            const std::vector<std::uint64_t> missing(recv_holes_[xi].begin(),
                                                     recv_holes_[xi].end());
            queue_ctrl(set_.phys(r, x), request_bytes(Kind::ack_upto, recv_next_[xi] - 1, 0,
                                                      missing, pending_of(x)));
        }
    }
    born_at_ = rt::now_ns();
    parent_ = s;
    child_ = -1;
    fork_for_ = -1;
    // Deaths the substitute had not read yet went to its connection: the
    // notice board has them (the bootstrap reads it afresh).
    eng_.check_events();
    if (unready_count_ == 0) {
        on_ready(-1, 0);
    }
}

void Replicator::on_notice(int from, int d, int incarnation)
{
    const int x = set_.logical_of(d);
    const int l = set_.replica_of(d);
    ULMPI_DEBUG("replication: notice from %d: process %d re-created as incarnation %d", from, d,
                incarnation);
    if (incarnation == 0) {
        stop_keeping(x, l); // it is not re-created: nobody will ask
        return;
    }
    if (incarnation <= inc_[static_cast<std::size_t>(d)]) {
        return;
    }
    // The launcher announced the old process's death before it let the
    // substitute fork: read it first.
    eng_.check_events();
    fail(d, "re-created");
    // The new process is a fork of the substitute (`from`): it runs on its
    // host, and the paths to it are chosen from there (connect_replaced).
    const std::vector<int>& nodes = boot_.job().node_of_rank;
    if (static_cast<std::size_t>(from) < nodes.size()) {
        boot_.moved(d, nodes[static_cast<std::size_t>(from)]);
    }
    if (!eng_.replace_peer(d, incarnation).ok() || !eng_.connect_replaced(d).ok()) {
        boot_.abort(1, "replication: process " + std::to_string(eng_.phys_rank()) +
                           " cannot connect to the re-created process " + std::to_string(d));
    }
    set_.revive(d);
    inc_[static_cast<std::size_t>(d)] = incarnation;
    boot_.revived(d, incarnation);
    const auto xi = static_cast<std::size_t>(x);
    if (l == k_) {
        // Rank x's messages to me come from the new process now; it sends
        // from where I stand. Mine to rank x go to it through copies, once
        // it asked.
        server_[xi] = d;
        send_request(x, d);
        direct_[xi] = false;
    } else {
        // What I sent to rank x and still hold waits for the new process too
        // (it says which it has, ack_upto): a later re-creation of its
        // sibling may ask me for them, and so may the new process if its
        // server dies before it answered. The stock (what my substitute
        // held when it forked me) joins them, as copies.
        if (acks_.parked(x)) {
            for (const auto& [m, c] : stock_[xi]) {
                if (acks_.held(x).count(m) == 0) {
                    (void)acks_.post(x, m, nullptr, 0, c);
                }
            }
        }
        for (ulm::SendMsg* s : acks_.wait_for_new(x, l)) {
            ++s->holds;
        }
        // And the new process learns which of its rank's messages I have (it
        // may be behind the dead one, whose acknowledgements are lost).
        const std::vector<std::uint64_t> missing(recv_holes_[xi].begin(), recv_holes_[xi].end());
        queue_ctrl(d, request_bytes(Kind::ack_upto, recv_next_[xi] - 1, 0, missing,
                                    pending_of(x)));
        if (set_.server(me_, l) != eng_.phys_rank()) {
            stop_keeping(x, l); // it asks someone else for my rank's messages
        }
    }
    queue_ctrl(from, bytes_of(NoticeMsg{Kind::welcome, {}, static_cast<std::uint32_t>(d),
                                        static_cast<std::uint32_t>(incarnation), 0}));
}

void Replicator::on_welcome(int from, int d, int incarnation)
{
    if (d != child_ || incarnation != inc_[static_cast<std::size_t>(d)] || set_.dead(d)) {
        return;
    }
    queue_ctrl(d, bytes_of(NoticeMsg{Kind::ready, {}, static_cast<std::uint32_t>(from),
                                     static_cast<std::uint32_t>(inc_[static_cast<std::size_t>(from)]),
                                     0}));
}

void Replicator::on_ready(int p, int incarnation)
{
    (void)incarnation;
    ULMPI_DEBUG("replication: process %d knows me (%d not yet)", p, unready_count_ - 1);
    if (p >= 0) {
        if (!unready_[static_cast<std::size_t>(p)]) {
            return;
        }
        unready_[static_cast<std::size_t>(p)] = false;
        --unready_count_;
        if (!eng_.connect_replaced(p).ok()) {
            rt::fatal("replication: the re-created replica cannot connect to process %d", p);
        }
    }
    if (unready_count_ == 0 && born_at_ != 0) {
        rt::log(rt::LogLevel::warn,
                "replication: replica %d of rank %d is back (process %d, incarnation %d, %lld us "
                "after the fork)",
                k_, me_, eng_.phys_rank(), inc_[static_cast<std::size_t>(eng_.phys_rank())],
                static_cast<long long>((rt::now_ns() - born_at_) / 1000));
        born_at_ = 0;
        boot_.replica_back().ignore();
    }
}

} // namespace ulmpi::rep
