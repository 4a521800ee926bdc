#include "runtime/mpirun/boot_listener.h"

#include "runtime/log.h"
#include "runtime/mpirun/net.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {

BootListener::~BootListener() { shutdown(); }

Status BootListener::listen(const wire::BootAddr& want, std::string& why)
{
    sockaddr_storage ss{};
    unsigned len = wire::to_sockaddr(want, ss);
    if (len == 0) {
        why = "cannot express boot address " + wire::format_boot_addr(want);
        return Errc::invalid_arg;
    }
    bool tcp = want.kind == wire::BootAddr::Kind::tcp;
    Listener l;
    l.fd = ::socket(tcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l.fd < 0) {
        why = std::string("socket: ") + std::strerror(errno);
        return Errc::io_error;
    }
    if (tcp) {
        int one = 1;
        (void)::setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    if (::bind(l.fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
        ::listen(l.fd, SOMAXCONN) != 0) {
        why = "cannot listen on " + wire::format_boot_addr(want) + ": " + std::strerror(errno);
        ::close(l.fd);
        return Errc::io_error;
    }
    l.addr = want;
    if (tcp) {
        sockaddr_in bound{};
        socklen_t blen = sizeof bound;
        if (::getsockname(l.fd, reinterpret_cast<sockaddr*>(&bound), &blen) == 0) {
            l.addr.port = ntohs(bound.sin_port);
        }
    }
    ULMPI_DEBUG("boot service listening on %s", wire::format_boot_addr(l.addr).c_str());
    listeners_.push_back(std::move(l));
    return Errc::ok;
}

void BootListener::add_fds(std::vector<pollfd>& fds) const
{
    for (const Listener& l : listeners_) {
        fds.push_back(pollfd{l.fd, POLLIN, 0});
    }
    for (const auto& [id, c] : conns_) {
        if (c.fd < 0) {
            continue;
        }
        short events = c.closing ? 0 : POLLIN;
        if (c.out_pos < c.out.size()) {
            events = static_cast<short>(events | POLLOUT);
        }
        fds.push_back(pollfd{c.fd, events, 0});
    }
}

void BootListener::accept_all(const Listener& l)
{
    for (;;) {
        int fd = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                ULMPI_WARN("accept on the key-value socket: %s", std::strerror(errno));
            }
            return;
        }
        if (l.addr.kind == wire::BootAddr::Kind::tcp) {
            net::set_keepalive(fd);
        }
        ConnId id = next_id_++;
        conns_[id].fd = fd;
        if (kv_ != nullptr) {
            kv_->on_connect(id);
        }
    }
}

bool BootListener::read_conn(ConnId id, Conn& c)
{
    char buf[65536];
    for (;;) {
        if (c.fd < 0) {
            return false;
        }
        ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            if (!c.closing && kv_ != nullptr) {
                kv_->on_data(id, buf, static_cast<std::size_t>(n));
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        // End of stream or a broken connection.
        remove(id, !c.closing);
        return false;
    }
}

void BootListener::flush(ConnId id, Conn& c)
{
    while (c.fd >= 0 && c.out_pos < c.out.size()) {
        ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos,
                           MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            c.out_pos += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        // The peer is gone; reading will tell the KvServer (never from here:
        // we may be inside one of its calls).
        ULMPI_DEBUG("send to connection %d: %s", id, std::strerror(errno));
        c.out.clear();
        c.out_pos = 0;
        to_remove_.push_back(id);
        return;
    }
    if (c.out_pos == c.out.size()) {
        c.out.clear();
        c.out_pos = 0;
        if (c.closing) {
            to_remove_.push_back(id);
        }
    }
}

void BootListener::send(ConnId conn, wire::Bytes frame)
{
    auto it = conns_.find(conn);
    if (it == conns_.end() || it->second.fd < 0) {
        return;
    }
    Conn& c = it->second;
    if (c.out.empty()) {
        c.out = std::move(frame);
        c.out_pos = 0;
    } else {
        c.out.insert(c.out.end(), frame.begin(), frame.end());
    }
    flush(conn, c);
}

void BootListener::close(ConnId conn)
{
    auto it = conns_.find(conn);
    if (it == conns_.end()) {
        return;
    }
    it->second.closing = true;
    flush(conn, it->second);
}

void BootListener::remove(ConnId id, bool tell_kv)
{
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return;
    }
    if (it->second.fd >= 0) {
        ::close(it->second.fd);
    }
    conns_.erase(it);
    if (tell_kv && kv_ != nullptr) {
        kv_->on_close(id);
    }
}

void BootListener::handle(const pollfd* fds, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) {
        const pollfd& p = fds[i];
        if (p.revents == 0) {
            continue;
        }
        bool listening = false;
        for (const Listener& l : listeners_) {
            if (p.fd == l.fd) {
                accept_all(l);
                listening = true;
            }
        }
        if (listening) {
            continue;
        }
        // Descriptors are closed only below, after the loop, so a number
        // seen here still names the same connection.
        for (auto& [id, c] : conns_) {
            if (c.fd != p.fd) {
                continue;
            }
            ConnId cid = id;
            if ((p.revents & POLLOUT) != 0) {
                flush(cid, c);
            }
            if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
                read_conn(cid, c);
            }
            break;
        }
    }
    for (ConnId id : std::exchange(to_remove_, {})) {
        auto it = conns_.find(id);
        // A connection that was not closing broke on send: the KvServer
        // has to hear about it.
        if (it != conns_.end()) {
            remove(id, !it->second.closing);
        }
    }
}

std::size_t BootListener::pending(ConnId conn) const
{
    auto it = conns_.find(conn);
    return it == conns_.end() ? 0 : it->second.out.size() - it->second.out_pos;
}

void BootListener::drain(ConnId id)
{
    auto it = conns_.find(id);
    if (it != conns_.end()) {
        read_conn(id, it->second);
    }
    pollfd none{};
    handle(&none, 0); // carry out removals
}

void BootListener::shutdown()
{
    for (auto& [id, c] : conns_) {
        if (c.fd >= 0) {
            ::close(c.fd);
        }
    }
    conns_.clear();
    for (Listener& l : listeners_) {
        ::close(l.fd);
        if (l.addr.kind == wire::BootAddr::Kind::unix_path) {
            ::unlink(l.addr.name.c_str());
        }
    }
    listeners_.clear();
}

} // namespace ulmpi::rt::mpirun
