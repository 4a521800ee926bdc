// BootListener: the sockets of a boot service. It listens on one or more
// addresses (mpirun: an abstract Unix socket for its own ranks and a TCP
// port for the daemons of other hosts; a daemon: an abstract socket for the
// ranks of its host), accepts connections, reads their bytes into a
// ConnHandler (mpirun's KvServer, the daemon's relay) and writes out what it
// is given, all non-blocking from the owner's poll loop. Accepted TCP
// connections get keepalive probes (net::set_keepalive), so a peer whose
// host vanished is noticed.
#pragma once

#include "runtime/boot_wire.h"
#include "runtime/mpirun/kv_server.h"
#include "runtime/status.h"

#include <poll.h>
#include <string>
#include <unordered_map>
#include <vector>

namespace ulmpi::rt::mpirun {

class BootListener final : public KvServer::Sink {
public:
    BootListener() = default;
    ~BootListener() override;
    BootListener(const BootListener&) = delete;
    BootListener& operator=(const BootListener&) = delete;

    // Listens on `want` (a tcp port of 0 picks a free one); address() is then
    // the address ranks connect to. May be called again for more addresses:
    // address(i) is the i-th.
    Status listen(const wire::BootAddr& want, std::string& why);
    const wire::BootAddr& address(std::size_t i = 0) const { return listeners_[i].addr; }
    void attach(ConnHandler& handler) { kv_ = &handler; }

    // Poll integration: add_fds() appends this object's descriptors;
    // handle() takes the results of those same entries.
    void add_fds(std::vector<pollfd>& fds) const;
    void handle(const pollfd* fds, std::size_t n);

    // Reads whatever `conn` has buffered (its rank has exited, so everything
    // it wrote is there) before the exit is judged.
    void drain(ConnId conn);
    // Bytes queued for `conn` and not yet written.
    std::size_t pending(ConnId conn) const;

    void send(ConnId conn, wire::Bytes frame) override;
    void close(ConnId conn) override;
    // Closes everything (the abstract name disappears; a socket file is unlinked).
    void shutdown();

private:
    struct Conn {
        int fd = -1;
        wire::Bytes out;
        std::size_t out_pos = 0;
        bool closing = false;
    };
    // false when the connection ended (and has been removed).
    bool read_conn(ConnId id, Conn& c);
    void flush(ConnId id, Conn& c);
    void remove(ConnId id, bool tell_kv);

    struct Listener {
        int fd = -1;
        wire::BootAddr addr;
    };
    void accept_all(const Listener& l);

    std::vector<Listener> listeners_;
    ConnHandler* kv_ = nullptr;
    std::unordered_map<ConnId, Conn> conns_;
    std::vector<ConnId> to_remove_;
    ConnId next_id_ = 1;
};

} // namespace ulmpi::rt::mpirun
