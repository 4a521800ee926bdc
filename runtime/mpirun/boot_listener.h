// BootListener: the sockets of mpirun's key-value service. It listens on the
// job's boot address, accepts rank (or, later, daemon) connections, reads
// their bytes into the KvServer and writes out what the KvServer sends, all
// non-blocking from mpirun's poll loop.
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
    // the address ranks connect to.
    Status listen(const wire::BootAddr& want, std::string& why);
    const wire::BootAddr& address() const { return addr_; }
    void attach(KvServer& kv) { kv_ = &kv; }

    // Poll integration: add_fds() appends this object's descriptors;
    // handle() takes the results of those same entries.
    void add_fds(std::vector<pollfd>& fds) const;
    void handle(const pollfd* fds, std::size_t n);

    // Reads whatever the connection of `rank` has buffered (the rank has
    // exited, so everything it wrote is there) before its exit is judged.
    void drain_rank(int rank);

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
    void accept_all();
    // false when the connection ended (and has been removed).
    bool read_conn(ConnId id, Conn& c);
    void flush(ConnId id, Conn& c);
    void remove(ConnId id, bool tell_kv);

    int listen_fd_ = -1;
    wire::BootAddr addr_;
    KvServer* kv_ = nullptr;
    std::unordered_map<ConnId, Conn> conns_;
    std::vector<ConnId> to_remove_;
    ConnId next_id_ = 1;
};

} // namespace ulmpi::rt::mpirun
