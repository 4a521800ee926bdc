#include "paths/udp/udp_addr.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ulmpi::path::udp {
namespace {

constexpr std::uint32_t kRecordMagic = 0x41504455; // "UDPA"
constexpr std::uint16_t kRecordVersion = 1;

struct RecordHead {
    std::uint32_t magic;
    std::uint16_t version;
    std::uint16_t count;
};
struct RecordEntry {
    std::uint32_t ip; // network byte order on the wire
    std::uint32_t mask;
    std::uint16_t port_short;
    std::uint16_t port_long;
    std::uint32_t mtu;
};
static_assert(sizeof(RecordHead) == 8 && sizeof(RecordEntry) == 16);

std::vector<std::string_view> split(std::string_view s)
{
    std::vector<std::string_view> out;
    while (!s.empty()) {
        std::size_t c = s.find(',');
        std::string_view item = s.substr(0, c);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        if (!item.empty()) {
            out.push_back(item);
        }
        if (c == std::string_view::npos) {
            break;
        }
        s.remove_prefix(c + 1);
    }
    return out;
}

bool usable(const Iface& f) { return f.up && f.ip != 0; }

} // namespace

bool parse_ipv4(std::string_view text, std::uint32_t& out)
{
    std::string s(text);
    in_addr a{};
    if (::inet_pton(AF_INET, s.c_str(), &a) != 1) {
        return false;
    }
    out = ntohl(a.s_addr);
    return true;
}

bool parse_cidr(std::string_view text, Cidr& out, std::string& why)
{
    std::size_t slash = text.find('/');
    std::uint32_t ip = 0;
    if (!parse_ipv4(text.substr(0, slash), ip)) {
        why = "'" + std::string(text) + "' is not an IPv4 subnet like 10.0.0.0/24";
        return false;
    }
    int prefix = 32;
    if (slash != std::string_view::npos) {
        std::string_view p = text.substr(slash + 1);
        if (p.empty() || p.size() > 2 ||
            p.find_first_not_of("0123456789") != std::string_view::npos) {
            why = "'" + std::string(text) + "': prefix length must be 0..32";
            return false;
        }
        prefix = std::stoi(std::string(p));
        if (prefix > 32) {
            why = "'" + std::string(text) + "': prefix length must be 0..32";
            return false;
        }
    }
    out.mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
    out.net = ip & out.mask;
    return true;
}

std::string ip_text(std::uint32_t ip)
{
    in_addr a{};
    a.s_addr = htonl(ip);
    char b[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, b, sizeof b);
    return b;
}

bool list_ifaces(std::vector<Iface>& out, std::string& why)
{
    out.clear();
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
        why = std::string("getifaddrs: ") + std::strerror(errno);
        return false;
    }
    int probe = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || a->ifa_name == nullptr) {
            continue;
        }
        bool seen = false;
        for (const Iface& f : out) {
            seen = seen || f.name == a->ifa_name;
        }
        if (seen) {
            continue; // first address of the interface only
        }
        Iface f;
        f.name = a->ifa_name;
        f.ip = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
        if (a->ifa_netmask != nullptr) {
            f.mask = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr);
        }
        f.up = (a->ifa_flags & IFF_UP) != 0 && (a->ifa_flags & IFF_RUNNING) != 0;
        f.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
        f.mtu = 1500;
        if (probe >= 0 && f.name.size() < IFNAMSIZ) {
            ifreq req{};
            std::memcpy(req.ifr_name, f.name.c_str(), f.name.size() + 1);
            if (::ioctl(probe, SIOCGIFMTU, &req) == 0 && req.ifr_mtu > 0) {
                f.mtu = static_cast<std::uint32_t>(req.ifr_mtu);
            }
        }
        out.push_back(std::move(f));
    }
    if (probe >= 0) {
        ::close(probe);
    }
    ::freeifaddrs(list);
    return true;
}

bool select_ifaces(const std::vector<Iface>& all, std::string_view names, std::string_view subnets,
                   bool single_host, std::vector<Iface>& out, std::string& why)
{
    out.clear();
    std::vector<Cidr> nets;
    for (std::string_view s : split(subnets)) {
        Cidr c;
        if (!parse_cidr(s, c, why)) {
            why = "ULMPI_UDP_SUBNET: " + why;
            return false;
        }
        nets.push_back(c);
    }
    auto in_nets = [&](const Iface& f) {
        if (nets.empty()) {
            return true;
        }
        for (const Cidr& c : nets) {
            if (c.contains(f.ip)) {
                return true;
            }
        }
        return false;
    };
    std::vector<std::string_view> wanted = split(names);
    if (!wanted.empty()) {
        for (std::string_view n : wanted) {
            const Iface* hit = nullptr;
            for (const Iface& f : all) {
                hit = hit != nullptr ? hit : (f.name == n ? &f : nullptr);
            }
            if (hit == nullptr) {
                why =
                    "ULMPI_UDP_IF: no interface '" + std::string(n) + "' with an IPv4 address here";
                return false;
            }
            if (!hit->up) {
                why = "ULMPI_UDP_IF: interface '" + std::string(n) + "' is down";
                return false;
            }
            bool dup = false;
            for (const Iface& f : out) {
                dup = dup || f.name == hit->name;
            }
            if (!dup && in_nets(*hit)) {
                out.push_back(*hit);
            }
        }
        if (out.empty()) {
            why =
                "ULMPI_UDP_IF and ULMPI_UDP_SUBNET: none of the named interfaces is in the subnets";
            return false;
        }
    } else if (!nets.empty()) {
        for (const Iface& f : all) {
            if (usable(f) && in_nets(f)) {
                out.push_back(f);
            }
        }
        if (out.empty()) {
            why = "ULMPI_UDP_SUBNET: no interface that is up has an address in '" +
                  std::string(subnets) + "'";
            return false;
        }
    } else {
        const Iface* lo = nullptr;
        const Iface* first = nullptr;
        for (const Iface& f : all) {
            if (!usable(f)) {
                continue;
            }
            if (f.loopback) {
                lo = lo != nullptr ? lo : &f;
            } else {
                first = first != nullptr ? first : &f;
            }
        }
        const Iface* pick = single_host && lo != nullptr ? lo : (first != nullptr ? first : lo);
        if (pick == nullptr) {
            why = "no network interface with an IPv4 address is up (not even loopback)";
            return false;
        }
        out.push_back(*pick);
    }
    if (out.size() > kMaxIfaces) {
        out.resize(kMaxIfaces);
    }
    return true;
}

std::vector<std::byte> encode_endpoints(const std::vector<Endpoint>& eps)
{
    std::size_t n = eps.size() > kMaxIfaces ? kMaxIfaces : eps.size();
    std::vector<std::byte> out(sizeof(RecordHead) + n * sizeof(RecordEntry));
    RecordHead h{kRecordMagic, kRecordVersion, static_cast<std::uint16_t>(n)};
    std::memcpy(out.data(), &h, sizeof h);
    for (std::size_t i = 0; i < n; ++i) {
        RecordEntry e{htonl(eps[i].ip), htonl(eps[i].mask), htons(eps[i].port[0]),
                      htons(eps[i].port[1]), eps[i].mtu};
        std::memcpy(out.data() + sizeof h + i * sizeof e, &e, sizeof e);
    }
    return out;
}

bool decode_endpoints(const std::byte* data, std::size_t len, std::vector<Endpoint>& out)
{
    out.clear();
    RecordHead h{};
    if (len < sizeof h) {
        return false;
    }
    std::memcpy(&h, data, sizeof h);
    if (h.magic != kRecordMagic || h.version != kRecordVersion || h.count == 0 ||
        h.count > kMaxIfaces || len != sizeof h + std::size_t{h.count} * sizeof(RecordEntry)) {
        return false;
    }
    for (std::size_t i = 0; i < h.count; ++i) {
        RecordEntry e{};
        std::memcpy(&e, data + sizeof h + i * sizeof e, sizeof e);
        Endpoint ep;
        ep.ip = ntohl(e.ip);
        ep.mask = ntohl(e.mask);
        ep.port[0] = ntohs(e.port_short);
        ep.port[1] = ntohs(e.port_long);
        ep.mtu = e.mtu;
        if (ep.ip == 0 || ep.port[0] == 0 || ep.port[1] == 0) {
            out.clear();
            return false;
        }
        out.push_back(ep);
    }
    return true;
}

std::vector<Pair> make_pairs(const std::vector<Endpoint>& mine, const std::vector<Endpoint>& theirs)
{
    std::vector<Pair> pairs;
    if (mine.empty() || theirs.empty()) {
        return pairs;
    }
    // Each peer interface is fed by one of mine: a second local interface on
    // a subnet where the peer has only one would just share that link.
    std::vector<bool> used(theirs.size(), false);
    for (std::size_t i = 0; i < mine.size(); ++i) {
        const std::uint32_t mask = mine[i].mask;
        for (std::size_t j = 0; j < theirs.size(); ++j) {
            if (!used[j] && (theirs[j].ip & mask) == (mine[i].ip & mask)) {
                used[j] = true;
                pairs.push_back({static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(j)});
                break;
            }
        }
    }
    if (pairs.empty()) {
        pairs.push_back({0, 0}); // no shared subnet: let the kernel route
    }
    return pairs;
}

} // namespace ulmpi::path::udp
