#include "runtime/mpirun/kv_server.h"

#include "runtime/log.h"

#include <algorithm>

namespace ulmpi::rt::mpirun {

KvServer::KvServer(const wire::Secret& secret, std::vector<std::int32_t> node_of_rank,
                   std::uint32_t universe_size, Sink& sink)
    : secret_(secret), node_of_rank_(std::move(node_of_rank)), universe_size_(universe_size),
      sink_(sink), ranks_(node_of_rank_.size()), place_(node_of_rank_),
      places_(node_of_rank_.size())
{
    for (std::size_t r = 0; r < node_of_rank_.size(); ++r) {
        places_[r].push_back(node_of_rank_[r]);
    }
}

void KvServer::expect_daemons(std::vector<std::string> host_of_node)
{
    daemon_host_ = std::move(host_of_node);
    daemon_conn_.assign(daemon_host_.size(), -1);
}

ConnId KvServer::daemon_conn(int node) const
{
    if (node < 0 || static_cast<std::size_t>(node) >= daemon_conn_.size()) {
        return -1;
    }
    return daemon_conn_[static_cast<std::size_t>(node)];
}

void KvServer::on_connect(ConnId conn) { conns_[conn] = Conn{}; }

void KvServer::send(ConnId id, std::int32_t rank, wire::Body body)
{
    sink_.send(id, wire::encode(wire::Message{rank, std::move(body)}));
}

void KvServer::on_data(ConnId conn, const void* data, std::size_t len)
{
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    it->second.reader.append(data, len);
    for (;;) {
        // handle() may drop the connection: look it up again every time.
        it = conns_.find(conn);
        if (it == conns_.end()) {
            return;
        }
        wire::Message m;
        std::string why;
        Status st = it->second.reader.next(m, why);
        if (st.code() == Errc::again) {
            return;
        }
        if (!st.ok()) {
            if (it->second.trusted) {
                drop(conn, "bad frame: " + why);
            } else {
                refuse(conn, "bad frame: " + why);
            }
            return;
        }
        handle(conn, it->second, m);
    }
}

void KvServer::refuse(ConnId id, const std::string& why)
{
    ++refused_;
    ULMPI_DEBUG("refused connection %d (%u so far): %s", id, refused_, why.c_str());
    send(id, -1, wire::Refused{why});
    sink_.close(id);
    // A relaying connection may already carry ranks: they are lost with it.
    on_close(id);
}

// A trusted connection broke the protocol: treat it as lost.
void KvServer::drop(ConnId id, const std::string& why)
{
    ULMPI_WARN("closing a rank connection: %s", why.c_str());
    sink_.close(id);
    on_close(id);
}

void KvServer::refuse_hello(ConnId id, Conn& c, std::int32_t rank, const std::string& why)
{
    if (c.daemon_node < 0) {
        refuse(id, why);
        return;
    }
    ++refused_;
    ULMPI_DEBUG("refused rank %d relayed by the daemon of node %d (%u so far): %s", rank,
                c.daemon_node, refused_, why.c_str());
    send(id, rank, wire::Refused{why});
}

void KvServer::on_hello(ConnId id, Conn& c, const wire::Message& m)
{
    const auto& h = std::get<wire::Hello>(m.body);
    if (!wire::secret_equal(h.secret, secret_)) {
        refuse_hello(id, c, m.rank, "wrong job secret");
        return;
    }
    if (h.rank != m.rank || h.rank < 0 || h.rank >= size()) {
        refuse_hello(id, c, m.rank, "rank " + std::to_string(h.rank) + " is not in this job");
        return;
    }
    // A rank of a host with a daemon comes through that daemon, and a daemon
    // relays only the ranks of its own host.
    int node = place_[idx(h.rank)];
    bool via_daemon = static_cast<std::size_t>(node) < daemon_host_.size() &&
                      !daemon_host_[static_cast<std::size_t>(node)].empty() &&
                      !ranks_[idx(h.rank)].moved;
    if (c.daemon_node >= 0 ? node != c.daemon_node : via_daemon) {
        refuse_hello(id, c, m.rank,
                     "rank " + std::to_string(h.rank) + " does not belong to this host");
        return;
    }
    RankState& r = ranks_[idx(h.rank)];
    if (first_slot_ >= 0 && h.rank >= first_slot_ && !r.spawned) {
        refuse_hello(id, c, m.rank, "rank " + std::to_string(h.rank) + " is a free spawn slot");
        return;
    }
    if (r.hello) {
        refuse_hello(id, c, m.rank, "rank " + std::to_string(h.rank) + " has already connected");
        return;
    }
    c.trusted = true;
    c.reader.set_max_frame(wire::kMaxFrame);
    c.ranks.push_back(h.rank);
    r.conn = id;
    r.pid = h.pid;
    r.hello = true;
    wire::Welcome w;
    w.universe_size = universe_size_;
    w.node_of_rank = node_of_rank_;
    send(id, h.rank, std::move(w));
    notes_.push_back(Note{Note::Kind::hello, h.rank, 0, {}});
}

void KvServer::on_daemon_hello(ConnId id, Conn& c, const wire::Message& m)
{
    const auto& h = std::get<wire::DaemonHello>(m.body);
    if (!wire::secret_equal(h.secret, secret_)) {
        refuse(id, "wrong job secret");
        return;
    }
    if (c.trusted) {
        drop(id, "DAEMON_HELLO on a connection that has already said HELLO");
        return;
    }
    auto node = static_cast<std::size_t>(h.node);
    if (h.node < 0 || node >= daemon_host_.size() || daemon_host_[node].empty() ||
        daemon_host_[node] != h.host) {
        refuse(id, "no daemon expected for node " + std::to_string(h.node) + " (host '" + h.host +
                       "')");
        return;
    }
    if (daemon_conn_[node] >= 0) {
        refuse(id, "the daemon of host '" + h.host + "' has already connected");
        return;
    }
    c.trusted = true;
    c.daemon_node = h.node;
    c.reader.set_max_frame(wire::kMaxFrame);
    daemon_conn_[node] = id;
    Note n{Note::Kind::daemon_hello, -1, static_cast<int>(h.pid), h.host};
    n.node = h.node;
    n.conn = id;
    notes_.push_back(std::move(n));
}

bool KvServer::name_service(ConnId id, std::int32_t rank, const wire::Put& p)
{
    const bool publish = p.key.starts_with(wire::kNamePublish);
    if (!publish && !p.key.starts_with(wire::kNameUnpublish)) {
        return false;
    }
    const std::string service = p.key.substr(wire::kNamePublish.size());
    wire::Value v;
    if (publish) {
        std::string port(reinterpret_cast<const char*>(p.value.data()), p.value.size());
        v.found = names_.emplace(service, std::move(port)).second;
    } else {
        v.found = names_.erase(service) != 0;
    }
    send(id, rank, std::move(v));
    return true;
}

void KvServer::rank_closed(Conn& c, int rank)
{
    auto it = std::find(c.ranks.begin(), c.ranks.end(), rank);
    if (it == c.ranks.end()) {
        return;
    }
    c.ranks.erase(it);
    RankState& r = ranks_[idx(rank)];
    r.conn = -1;
    if (!r.finalized) {
        r.gone = true;
        notes_.push_back(Note{Note::Kind::conn_lost, rank, r.incarnation, {}});
    }
    check_fence();
}

void KvServer::handle(ConnId id, Conn& c, wire::Message& m)
{
    wire::MsgType type = wire::type_of(m.body);
    if (type == wire::MsgType::hello) {
        on_hello(id, c, m);
        return;
    }
    if (type == wire::MsgType::daemon_hello) {
        on_daemon_hello(id, c, m);
        return;
    }
    if (!c.trusted) {
        refuse(id, std::string("expected HELLO, got ") + wire::msg_type_name(type));
        return;
    }
    if (c.daemon_node >= 0) {
        switch (type) {
        case wire::MsgType::spawned:
        case wire::MsgType::output:
        case wire::MsgType::exited:
        case wire::MsgType::adopted:
        case wire::MsgType::rank_closed:
            // (A rank's earlier process on another host may still send its
            // last words after a re-created replica moved the rank.)
            if (m.rank < 0 || m.rank >= size() || !ran_on(m.rank, c.daemon_node)) {
                drop(id, std::string(wire::msg_type_name(type)) + " for rank " +
                             std::to_string(m.rank) + ", which is not on this host");
                return;
            }
            if (type == wire::MsgType::rank_closed) {
                rank_closed(c, m.rank);
                return;
            }
            [[fallthrough]];
        case wire::MsgType::bye: {
            Note n{Note::Kind::daemon_msg, m.rank, 0, {}};
            n.node = c.daemon_node;
            n.conn = id;
            n.msg = std::move(m);
            notes_.push_back(std::move(n));
            return;
        }
        default: break;
        }
    }
    if (std::find(c.ranks.begin(), c.ranks.end(), m.rank) == c.ranks.end()) {
        drop(id, "frame for rank " + std::to_string(m.rank) +
                     " that this connection did not introduce");
        return;
    }
    RankState& r = ranks_[idx(m.rank)];
    switch (type) {
    case wire::MsgType::put: {
        auto& p = std::get<wire::Put>(m.body);
        if (name_service(id, m.rank, p)) {
            break;
        }
        auto key = std::make_pair(static_cast<int>(m.rank), std::move(p.key));
        store_[key] = std::move(p.value);
        for (auto& [gid, g] : groups_) {
            if (std::find(g.members.begin(), g.members.end(), key.first) != g.members.end()) {
                g.since.insert(key);
            }
        }
        since_fence_.insert(std::move(key));
        break;
    }
    case wire::MsgType::group_fence:
        group_fence(id, m.rank, std::get<wire::GroupFence>(m.body).group);
        break;
    case wire::MsgType::replica: {
        Note n{Note::Kind::replica, m.rank, 0, {}};
        n.conn = id;
        n.msg = std::move(m);
        notes_.push_back(std::move(n));
        break;
    }
    case wire::MsgType::spawn: {
        Note n{Note::Kind::spawn, m.rank, 0, {}};
        n.conn = id;
        n.msg = std::move(m);
        notes_.push_back(std::move(n));
        break;
    }
    case wire::MsgType::fence:
        if (r.fenced || r.finalized) {
            drop(id, "rank " + std::to_string(m.rank) + " fenced twice in one round");
            return;
        }
        if (r.failed) {
            break; // declared failed (its process is being killed): not waited for
        }
        r.fenced = true;
        ++fenced_;
        check_fence();
        break;
    case wire::MsgType::get: {
        const auto& g = std::get<wire::Get>(m.body);
        wire::Value v;
        if (g.rank == -1 && g.key.starts_with(wire::kNameLookup)) {
            auto it = names_.find(g.key.substr(wire::kNameLookup.size()));
            if (it != names_.end()) {
                v.found = true;
                const auto* b = reinterpret_cast<const std::byte*>(it->second.data());
                v.value.assign(b, b + it->second.size());
            }
            send(id, m.rank, std::move(v));
            break;
        }
        auto it = store_.find(std::make_pair(static_cast<int>(g.rank), g.key));
        if (it != store_.end()) {
            v.found = true;
            v.value = it->second;
        }
        send(id, m.rank, std::move(v));
        break;
    }
    case wire::MsgType::abort: {
        auto& a = std::get<wire::Abort>(m.body);
        notes_.push_back(Note{Note::Kind::abort, m.rank, a.code, std::move(a.message)});
        break;
    }
    case wire::MsgType::respawn: {
        const auto& q = std::get<wire::Respawn>(m.body);
        if (q.rank >= size() || q.rank == m.rank) {
            drop(id, "rank " + std::to_string(m.rank) + " asked to respawn rank " +
                         std::to_string(q.rank));
            return;
        }
        if (q.incarnation > ranks_[idx(q.rank)].incarnation) {
            // At once, not when the monitor reads the note: the FENCE that
            // follows on this connection must wait for the new process.
            rank_respawned(q.rank, q.incarnation);
            notes_.push_back(Note{Note::Kind::respawn, q.rank, q.incarnation, {}});
        }
        break;
    }
    case wire::MsgType::finalize:
        if (!r.finalized) {
            r.finalized = true;
            notes_.push_back(Note{Note::Kind::finalize, m.rank, 0, {}});
            check_fence();
        }
        break;
    default:
        drop(id, std::string("a rank sent ") + wire::msg_type_name(type));
        return;
    }
}

void KvServer::on_close(ConnId conn)
{
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    std::vector<int> ranks = std::move(it->second.ranks);
    int daemon_node = it->second.daemon_node;
    conns_.erase(it);
    if (daemon_node >= 0) {
        daemon_conn_[static_cast<std::size_t>(daemon_node)] = -1;
        Note n{Note::Kind::daemon_lost, -1, 0, {}};
        n.node = daemon_node;
        n.conn = conn;
        notes_.push_back(std::move(n));
    }
    for (int rank : ranks) {
        RankState& r = ranks_[idx(rank)];
        r.conn = -1;
        if (!r.finalized) {
            r.gone = true;
            notes_.push_back(Note{Note::Kind::conn_lost, rank, r.incarnation, {}});
        }
    }
    check_fence();
}

void KvServer::rank_gone(int rank)
{
    if (rank < 0 || rank >= size()) {
        return;
    }
    ranks_[idx(rank)].gone = true;
    check_fence();
}

void KvServer::rank_failed(int rank)
{
    if (rank < 0 || rank >= size() || ranks_[idx(rank)].failed) {
        return;
    }
    RankState& r = ranks_[idx(rank)];
    r.failed = true;
    r.gone = true;
    if (!r.fenced) {
        ++failed_unfenced_;
    }
    check_fence();
}

void KvServer::rank_respawned(int rank, int incarnation)
{
    if (rank < 0 || rank >= size()) {
        return;
    }
    RankState& r = ranks_[idx(rank)];
    if (r.conn >= 0) {
        if (auto it = conns_.find(r.conn); it != conns_.end()) {
            std::erase(it->second.ranks, rank);
        }
    }
    if (r.failed && !r.fenced) {
        --failed_unfenced_; // the current round waits for the new process
    }
    if (r.fenced) {
        r.fenced = false; // the old process's entry does not count for the new one
        --fenced_;
    }
    const int keep = r.incarnation;
    const bool moved = r.moved;
    r = RankState{};
    r.incarnation = std::max(keep, incarnation);
    r.moved = moved;
    // It may hold up a fence now: check_fence() runs when it enters it.
}

void KvServer::rank_moved(int rank)
{
    if (rank >= 0 && rank < size()) {
        ranks_[idx(rank)].moved = true;
    }
}

void KvServer::rank_placed(int rank, int node)
{
    if (rank < 0 || rank >= size() || node < 0) {
        return;
    }
    place_[idx(rank)] = node;
    ranks_[idx(rank)].moved = false;
    auto& been = places_[idx(rank)];
    if (std::find(been.begin(), been.end(), node) == been.end()) {
        been.push_back(node);
    }
}

bool KvServer::ran_on(int rank, int node) const
{
    const auto& been = places_[idx(rank)];
    return std::find(been.begin(), been.end(), node) != been.end();
}

void KvServer::check_fence()
{
    check_groups();
    if (fenced_ == 0) {
        return;
    }
    if (fenced_ + failed_unfenced_ == size()) {
        wire::FenceDone done;
        for (const auto& key : since_fence_) {
            done.entries.push_back(wire::KeyValue{key.first, key.second, store_[key]});
        }
        since_fence_.clear();
        wire::Message msg{-1, std::move(done)};
        wire::Bytes frame = wire::encode(msg);
        for (const auto& [id, c] : conns_) {
            // Spawned ranks do not take part: a connection that carries
            // one (a daemon's) gets the answer per rank of the job's own.
            const bool mixed = first_slot_ >= 0 &&
                               std::any_of(c.ranks.begin(), c.ranks.end(),
                                           [&](int r) { return r >= first_slot_; });
            if (!mixed) {
                if (!c.ranks.empty()) {
                    sink_.send(id, frame);
                }
                continue;
            }
            for (int r : c.ranks) {
                if (r < first_slot_) {
                    msg.rank = r;
                    sink_.send(id, wire::encode(msg));
                }
            }
        }
        failed_unfenced_ = 0;
        for (RankState& r : ranks_) {
            r.fenced = false;
            failed_unfenced_ += r.failed ? 1 : 0;
        }
        fenced_ = 0;
        ++fences_done_;
        return;
    }
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        RankState& r = ranks_[i];
        if (!r.fenced && !r.failed && (r.gone || r.finalized) && !r.stuck_noted) {
            r.stuck_noted = true;
            std::string why = r.finalized ? "called MPI_Finalize"
                              : r.hello   ? "left MPI"
                                          : "ended without calling MPI_Init";
            notes_.push_back(Note{Note::Kind::fence_stuck, static_cast<int>(i), r.incarnation,
                                  why + " while " + std::to_string(fenced_) +
                                      " other rank(s) wait for it in a fence"});
        }
    }
}

void KvServer::reserve_slots(int first)
{
    first_slot_ = first;
    for (int r = first; r < size(); ++r) {
        RankState& s = ranks_[idx(r)];
        if (!s.failed) {
            s.failed = true;
            if (!s.fenced) {
                ++failed_unfenced_;
            }
        }
    }
}

void KvServer::rank_spawned(int rank, int incarnation)
{
    if (rank < 0 || rank >= size()) {
        return;
    }
    RankState& r = ranks_[idx(rank)];
    if (r.conn >= 0) {
        if (auto it = conns_.find(r.conn); it != conns_.end()) {
            std::erase(it->second.ranks, rank);
        }
    }
    const int keep = r.incarnation;
    const bool fenced = r.fenced;
    r = RankState{};
    r.failed = true; // the job's own fences never wait for it
    r.fenced = fenced;
    r.incarnation = std::max(keep, incarnation);
    r.spawned = true;
    for (auto& [gid, g] : groups_) {
        std::replace(g.members.begin(), g.members.end(), rank, -1);
    }
    std::erase_if(store_, [rank](const auto& kv) { return kv.first.first == rank; });
    std::erase_if(since_fence_, [rank](const auto& key) { return key.first == rank; });
}

int KvServer::make_group(std::vector<int> members)
{
    const int id = next_group_++;
    Group& g = groups_[id];
    g.in.assign(members.size(), false);
    g.members = std::move(members);
    return id;
}

void KvServer::send_to(int rank, wire::Body body)
{
    if (rank >= 0 && rank < size() && ranks_[idx(rank)].conn >= 0) {
        send(ranks_[idx(rank)].conn, rank, std::move(body));
    }
}

void KvServer::group_fence(ConnId id, int rank, int group)
{
    auto it = groups_.find(group);
    const auto pos = it == groups_.end() ? std::vector<int>::const_iterator{}
                                         : std::find(it->second.members.begin(),
                                                     it->second.members.end(), rank);
    if (it == groups_.end() || pos == it->second.members.end()) {
        drop(id, "rank " + std::to_string(rank) + " fenced in group " + std::to_string(group) +
                     ", which it is not a member of");
        return;
    }
    Group& g = it->second;
    const auto i = static_cast<std::size_t>(pos - g.members.begin());
    if (g.in[i]) {
        drop(id, "rank " + std::to_string(rank) + " fenced twice in one round of group " +
                     std::to_string(group));
        return;
    }
    g.in[i] = true;
    check_groups();
}

void KvServer::check_groups()
{
    for (auto& [gid, g] : groups_) {
        bool any = false;
        bool all = true;
        for (std::size_t i = 0; i < g.members.size(); ++i) {
            const bool gone = g.members[i] < 0 || ranks_[idx(g.members[i])].gone;
            any = any || g.in[i];
            all = all && (g.in[i] || gone);
        }
        if (!any || !all) {
            continue;
        }
        wire::FenceDone done;
        for (const auto& key : g.since) {
            if (auto v = store_.find(key); v != store_.end()) {
                done.entries.push_back(wire::KeyValue{key.first, key.second, v->second});
            }
        }
        g.since.clear();
        for (std::size_t i = 0; i < g.members.size(); ++i) {
            if (g.in[i]) {
                g.in[i] = false;
                send_to(g.members[i], done);
            }
        }
    }
}

void KvServer::broadcast(const wire::Event& ev)
{
    wire::Bytes frame = wire::encode(wire::Message{-1, ev});
    for (const auto& [id, c] : conns_) {
        // A daemon gets it even before its ranks connect: it keeps the
        // notices on its host's board for them.
        if (!c.ranks.empty() || c.daemon_node >= 0) {
            sink_.send(id, frame);
        }
    }
}

} // namespace ulmpi::rt::mpirun
