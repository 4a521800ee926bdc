// Addresses of the udp path: which interfaces a rank uses, what it publishes
// through the bootstrap, and which (local, remote) interface pairs carry the
// traffic to each peer. Pure functions over plain data (list_ifaces() aside),
// so the rules are unit-tested without a network. IPv4 only.
//
// Choosing interfaces (ULMPI_UDP_IF, ULMPI_UDP_SUBNET):
//   names given     exactly those interfaces, in that order (each must be up
//                   and have an IPv4 address)
//   subnets given   every up interface with an address in one of them (with
//                   names too: those of the named ones that are inside)
//   neither         a job on one host: loopback; otherwise the first up
//                   interface that is not loopback (loopback if none is up)
//
// Pairs: each local interface is paired with a peer interface on the same
// subnet that no other local interface feeds yet (so two local NICs never
// share one remote link); when no interface of the two ranks shares a
// subnet, the first of each is paired and the kernel routes. Control
// fragments use the first pair, bulk fragments go round-robin over all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ulmpi::path::udp {

inline constexpr std::size_t kMaxIfaces = 8;

// All addresses in host byte order.
struct Iface {
    std::string name;
    std::uint32_t ip = 0;
    std::uint32_t mask = 0;
    std::uint32_t mtu = 0;
    bool up = false;
    bool loopback = false;
};

struct Cidr {
    std::uint32_t net = 0;
    std::uint32_t mask = 0;
    bool contains(std::uint32_t ip) const { return (ip & mask) == net; }
};

bool parse_ipv4(std::string_view text, std::uint32_t& out);
// "10.0.0.0/24" (a bare address means /32). False with a reason.
bool parse_cidr(std::string_view text, Cidr& out, std::string& why);
std::string ip_text(std::uint32_t ip);

// The IPv4 interfaces of this host (getifaddrs, MTU by SIOCGIFMTU); the
// first address of an interface that has several.
bool list_ifaces(std::vector<Iface>& out, std::string& why);

// Applies the rules above. `names` and `subnets` are comma-separated lists
// (empty: not given). False with a one-line reason when nothing fits.
bool select_ifaces(const std::vector<Iface>& all, std::string_view names, std::string_view subnets,
                   bool single_host, std::vector<Iface>& out, std::string& why);

// One bound interface of a rank, as published: its address and the ports
// of its short (control) and long (bulk) sockets.
struct Endpoint {
    std::uint32_t ip = 0;
    std::uint32_t mask = 0;
    std::uint16_t port[2] = {0, 0}; // by Lane: control, bulk
    std::uint32_t mtu = 0;
};

// The bootstrap value "udp.addr": a small versioned record.
std::vector<std::byte> encode_endpoints(const std::vector<Endpoint>& eps);
bool decode_endpoints(const std::byte* data, std::size_t len, std::vector<Endpoint>& out);

struct Pair {
    std::uint8_t local = 0;  // index into my endpoints
    std::uint8_t remote = 0; // index into the peer's endpoints
};
std::vector<Pair> make_pairs(const std::vector<Endpoint>& mine,
                             const std::vector<Endpoint>& theirs);

// Largest datagram payload (UDP, without IP fragmentation) over an MTU.
inline std::uint32_t udp_room(std::uint32_t mtu)
{
    constexpr std::uint32_t kIpUdp = 20 + 8;
    constexpr std::uint32_t kMaxUdp = 65507;
    return mtu <= kIpUdp ? 0 : (mtu - kIpUdp > kMaxUdp ? kMaxUdp : mtu - kIpUdp);
}

} // namespace ulmpi::path::udp
