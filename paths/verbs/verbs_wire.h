// What the verbs path puts on the wire and in the bootstrap.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ulmpi::path::verbs {

inline constexpr std::uint8_t kWireVersion = 1;

// Published once per rail under "verbs.<rail>", followed by `size` queue
// pair numbers: qpn[r] is the queue pair this rank made for rank r (0: none).
struct PortAddr {
    std::uint8_t version;
    std::uint8_t link;       // LinkLayer
    std::uint16_t lid;
    std::uint32_t mtu;       // active MTU of the port, bytes
    std::uint8_t gid[16];
    std::uint32_t psn_base;  // PSNs of this rank's queue pairs (psn_of)
    std::uint32_t credits;   // receive buffers granted to each peer at the start
    std::uint64_t grant_addr; // Grant[size], one per peer, written by RDMA
    std::uint32_t grant_rkey;
    std::uint32_t size;      // number of qpn that follow
};
static_assert(sizeof(PortAddr) == 48);
static_assert(std::has_unique_object_representations_v<PortAddr>);

// The starting PSN of the queue pair `from` made for `to` (24 bits).
inline std::uint32_t psn_of(std::uint32_t psn_base, int to)
{
    return (psn_base + static_cast<std::uint32_t>(to) * 0x9e37u) & 0xffffffu;
}

// In front of every fragment sent: the receive buffers the sender has
// granted the receiver so far (cumulative, modulo 2^32): a piggy-backed
// credit return.
struct FragHeader {
    std::uint8_t version;
    std::uint8_t kind; // kFrag
    std::uint16_t reserved;
    std::uint32_t grant;
};
static_assert(sizeof(FragHeader) == 8);
static_assert(std::has_unique_object_representations_v<FragHeader>);
inline constexpr std::uint8_t kFrag = 1;

// The explicit credit return: RDMA-written into the receiver of the grant
// (Grant[writer's rank]). `check` is ~value, so a torn read of a write in
// progress is recognised and read again later.
struct Grant {
    std::uint64_t value;
    std::uint64_t check;
};
static_assert(sizeof(Grant) == 16);

} // namespace ulmpi::path::verbs
