#include "runtime/daemon/relay.h"

#include "runtime/log.h"

#include <algorithm>

namespace ulmpi::rt::daemon {

Relay::Relay(const wire::Secret& secret, std::vector<int> my_ranks, mpirun::KvServer::Sink& down,
             Uplink& up)
    : secret_(secret), my_ranks_(std::move(my_ranks)), down_(down), up_(up)
{
}

void Relay::on_connect(ConnId conn) { conns_[conn] = Conn{}; }

ConnId Relay::conn_of(int rank) const
{
    auto it = conn_of_rank_.find(rank);
    return it == conn_of_rank_.end() ? -1 : it->second;
}

void Relay::on_data(ConnId conn, const void* data, std::size_t len)
{
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    it->second.reader.append(data, len);
    for (;;) {
        it = conns_.find(conn); // handle() may drop it
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
            if (it->second.ranks.empty()) {
                refuse(conn, "bad frame: " + why);
            } else {
                drop(conn, "bad frame: " + why);
            }
            return;
        }
        handle(conn, it->second, m);
    }
}

void Relay::refuse(ConnId id, const std::string& why)
{
    ++refused_;
    ULMPI_DEBUG("refused a rank connection (%u so far): %s", refused_, why.c_str());
    down_.send(id, wire::encode(wire::Message{-1, wire::Refused{why}}));
    down_.close(id);
    on_close(id);
}

void Relay::drop(ConnId id, const std::string& why)
{
    ULMPI_WARN("closing a rank connection: %s", why.c_str());
    down_.close(id);
    on_close(id);
}

void Relay::handle(ConnId id, Conn& c, wire::Message& m)
{
    wire::MsgType type = wire::type_of(m.body);
    if (type == wire::MsgType::hello) {
        const auto& h = std::get<wire::Hello>(m.body);
        if (!wire::secret_equal(h.secret, secret_)) {
            refuse(id, "wrong job secret");
            return;
        }
        if (h.rank != m.rank ||
            std::find(my_ranks_.begin(), my_ranks_.end(), h.rank) == my_ranks_.end()) {
            refuse(id, "rank " + std::to_string(h.rank) + " does not run on this host");
            return;
        }
        if (conn_of_rank_.count(h.rank) != 0) {
            refuse(id, "rank " + std::to_string(h.rank) + " has already connected");
            return;
        }
        c.ranks.push_back(h.rank);
        conn_of_rank_[h.rank] = id;
        up_.up(wire::encode(m));
        return;
    }
    if (std::find(c.ranks.begin(), c.ranks.end(), m.rank) == c.ranks.end()) {
        if (c.ranks.empty()) {
            refuse(id, std::string("expected HELLO, got ") + wire::msg_type_name(type));
        } else {
            drop(id, "frame for rank " + std::to_string(m.rank) +
                         " that this connection did not introduce");
        }
        return;
    }
    switch (type) {
    case wire::MsgType::put:
    case wire::MsgType::fence:
    case wire::MsgType::get:
    case wire::MsgType::abort:
    case wire::MsgType::respawn: // mpirun decides (FT-MPI REBUILD)
    case wire::MsgType::spawn:   // and MPI_Comm_spawn
    case wire::MsgType::group_fence:
    case wire::MsgType::finalize: up_.up(wire::encode(m)); return;
    case wire::MsgType::replica: // replica recovery (mpirun decides)
        up_.drain_stdout(m.rank);
        up_.up(wire::encode(m));
        return;
    default: drop(id, std::string("a rank sent ") + wire::msg_type_name(type)); return;
    }
}

void Relay::add_rank(int rank)
{
    if (std::find(my_ranks_.begin(), my_ranks_.end(), rank) == my_ranks_.end()) {
        my_ranks_.push_back(rank);
    }
    if (auto it = conn_of_rank_.find(rank); it != conn_of_rank_.end()) {
        if (auto c = conns_.find(it->second); c != conns_.end()) {
            std::erase(c->second.ranks, rank);
        }
        conn_of_rank_.erase(it);
    }
}

void Relay::on_close(ConnId conn)
{
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    std::vector<int> ranks = std::move(it->second.ranks);
    conns_.erase(it);
    for (int r : ranks) {
        conn_of_rank_.erase(r);
        up_.up(wire::encode(wire::Message{r, wire::RankClosed{}}));
    }
}

void Relay::from_up(const wire::Message& m)
{
    if (m.rank < 0) {
        wire::Bytes frame = wire::encode(m);
        for (const auto& [id, c] : conns_) {
            if (c.trusted) {
                down_.send(id, frame);
            }
        }
        return;
    }
    ConnId id = conn_of(m.rank);
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return; // the rank's connection is gone already
    }
    wire::MsgType type = wire::type_of(m.body);
    if (type == wire::MsgType::welcome) {
        it->second.trusted = true;
        it->second.reader.set_max_frame(wire::kMaxFrame);
    }
    down_.send(id, wire::encode(m));
    if (type == wire::MsgType::refused) {
        // mpirun refused this rank: it has nothing to hear about its closing.
        auto& ranks = it->second.ranks;
        ranks.erase(std::remove(ranks.begin(), ranks.end(), m.rank), ranks.end());
        conn_of_rank_.erase(m.rank);
        down_.close(id);
        on_close(id);
    }
}

} // namespace ulmpi::rt::daemon
