#include "runtime/mpirun/net.h"

#include "runtime/boot_wire.h"
#include "runtime/mpirun/job_map.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cmath>
#include <fstream>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sstream>
#include <sys/socket.h>

namespace ulmpi::rt::mpirun::net {

std::vector<Interface> interfaces()
{
    std::vector<Interface> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
        return out;
    }
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) {
            continue;
        }
        Interface i;
        i.name = a->ifa_name;
        i.addr = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
        if (a->ifa_netmask != nullptr) {
            i.mask = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr);
        }
        i.up = (a->ifa_flags & IFF_UP) != 0 && (a->ifa_flags & IFF_RUNNING) != 0;
        i.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
        out.push_back(std::move(i));
    }
    ::freeifaddrs(list);
    return out;
}

std::string ip_text(std::uint32_t addr)
{
    in_addr a{htonl(addr)};
    char buf[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, buf, sizeof buf);
    return buf;
}

bool parse_ipv4(const std::string& text, std::uint32_t& out)
{
    in_addr a{};
    if (::inet_pton(AF_INET, text.c_str(), &a) != 1) {
        return false;
    }
    out = ntohl(a.s_addr);
    return true;
}

std::vector<std::uint32_t> hosts_file_addresses(const std::string& name, const std::string& path)
{
    std::vector<std::uint32_t> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::string addr;
        std::string alias;
        std::uint32_t ip = 0;
        if (!(words >> addr) || !parse_ipv4(addr, ip)) {
            continue;
        }
        while (words >> alias) {
            if (alias == name) {
                out.push_back(ip);
                break;
            }
        }
    }
    return out;
}

namespace {

std::vector<std::uint32_t> addresses_of(const std::string& name)
{
    std::uint32_t ip = 0;
    if (parse_ipv4(name, ip)) {
        return {ip};
    }
    return hosts_file_addresses(name);
}

} // namespace

bool is_this_machine(const std::string& name, const std::string& hostname)
{
    if (is_local_host(name, hostname)) {
        return true;
    }
    std::vector<std::uint32_t> addrs = addresses_of(name);
    if (addrs.empty()) {
        return false;
    }
    for (const Interface& i : interfaces()) {
        for (std::uint32_t a : addrs) {
            if (a == i.addr) {
                return true;
            }
        }
    }
    return false;
}

bool choose_boot_ip(const std::string& spec, const std::vector<std::string>& remote_hosts,
                    std::string& ip, std::string& why)
{
    std::vector<Interface> ifs = interfaces();
    if (!spec.empty()) {
        std::uint32_t want = 0;
        std::uint32_t mask = 0xffffffffu;
        std::size_t slash = spec.find('/');
        bool numeric = parse_ipv4(spec.substr(0, slash), want);
        if (numeric && slash != std::string::npos) {
            int bits = -1;
            try {
                bits = std::stoi(spec.substr(slash + 1));
            } catch (...) {
                bits = -1;
            }
            if (bits < 0 || bits > 32) {
                why = "--boot-if " + spec + ": bad prefix length";
                return false;
            }
            mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
        }
        for (const Interface& i : ifs) {
            bool match = numeric ? (i.addr & mask) == (want & mask) : i.name == spec;
            if (match) {
                ip = ip_text(i.addr);
                return true;
            }
        }
        why = "--boot-if " + spec + ": no IPv4 address of this machine " +
              (numeric ? "is in it" : "is on that interface") + " (interfaces:";
        for (const Interface& i : ifs) {
            why += " " + i.name + "=" + ip_text(i.addr);
        }
        why += ")";
        return false;
    }
    // The interface on the subnet of a remote host.
    for (const std::string& h : remote_hosts) {
        for (std::uint32_t a : addresses_of(h)) {
            for (const Interface& i : ifs) {
                if (!i.loopback && i.up && (i.addr & i.mask) == (a & i.mask)) {
                    ip = ip_text(i.addr);
                    return true;
                }
            }
        }
    }
    for (const Interface& i : ifs) {
        if (!i.loopback && i.up) {
            ip = ip_text(i.addr);
            return true;
        }
    }
    // Nothing but loopback: the "other hosts" can only be on this machine.
    for (const Interface& i : ifs) {
        if (i.loopback && i.up) {
            ip = ip_text(i.addr);
            return true;
        }
    }
    why = "no network interface is up to reach the other hosts (see --boot-if)";
    return false;
}

void set_keepalive(int fd)
{
    double t = boot::keepalive_param();
    if (!(t > 0)) {
        return;
    }
    int total = std::max(2, static_cast<int>(std::lround(t)));
    int one = 1;
    int idle = std::max(1, total / 2);
    int interval = 1;
    int count = std::max(1, total - idle);
    unsigned user_timeout = static_cast<unsigned>(total) * 1000u;
    (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

} // namespace ulmpi::rt::mpirun::net
