// What the ofi path puts on the wire and in the bootstrap.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ulmpi::path::ofi {

inline constexpr std::uint8_t kWireVersion = 2;

// Published under "ofi.addr": the provider and endpoint name of this rank's
// endpoint, then `addr_len` bytes of address (what fi_getname answered).
// A peer that published another provider (or none) is not reached by ofi.
struct AddrRecord {
    std::uint8_t version;
    std::uint8_t reserved;
    std::uint16_t addr_len;
    std::uint32_t provider_hash; // job_hash() of the provider's name
};
static_assert(sizeof(AddrRecord) == 8);
static_assert(std::has_unique_object_representations_v<AddrRecord>);

// In front of every fragment: who sent it (an RDM endpoint that lacks
// FI_SOURCE does not say), and which job it belongs to (a check against
// strays, not a secret). Eight bytes, so that a 0-byte eager message with
// its piggybacked ACK (48 + 8 bytes of ULM) still fits rxm's 64-byte inject
// size over tcp: sent by fi_inject, with no buffer held and no completion.
struct FragHeader {
    std::uint8_t version;
    std::uint8_t src[3]; // sender's rank, 24 bits little-endian (the path refuses larger jobs)
    std::uint32_t job;
};
static_assert(sizeof(FragHeader) == 8);
static_assert(std::has_unique_object_representations_v<FragHeader>);
inline constexpr std::uint32_t kMaxRanks = 1u << 24;

inline FragHeader frag_header(std::uint32_t src, std::uint32_t job)
{
    return FragHeader{kWireVersion,
                      {static_cast<std::uint8_t>(src), static_cast<std::uint8_t>(src >> 8),
                       static_cast<std::uint8_t>(src >> 16)},
                      job};
}

inline std::uint32_t frag_src(const FragHeader& h)
{
    return h.src[0] | (std::uint32_t{h.src[1]} << 8) | (std::uint32_t{h.src[2]} << 16);
}

// A remote key made by make_rkey(): a head, then one entry per segment,
// each registered on its own.
struct RkeyHead {
    std::uint32_t n;
    std::uint32_t version;
};
struct RkeyEntry {
    std::uint64_t addr; // the segment's virtual address
    std::uint64_t len;
    std::uint64_t key;  // fi_mr_key()
};
static_assert(sizeof(RkeyHead) == 8 && sizeof(RkeyEntry) == 24);
static_assert(std::has_unique_object_representations_v<RkeyEntry>);

// FNV-1a, 32 bits.
inline std::uint32_t job_hash(std::string_view s)
{
    std::uint32_t h = 2166136261u;
    for (char c : s) {
        h = (h ^ static_cast<std::uint8_t>(c)) * 16777619u;
    }
    return h;
}

} // namespace ulmpi::path::ofi
