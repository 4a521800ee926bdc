// What the ofi path puts on the wire and in the bootstrap.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ulmpi::path::ofi {

inline constexpr std::uint8_t kWireVersion = 1;

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
// strays, not a secret).
struct FragHeader {
    std::uint8_t version;
    std::uint8_t kind; // kFrag
    std::uint16_t reserved;
    std::uint32_t src;
    std::uint32_t job;
    std::uint32_t reserved2;
};
static_assert(sizeof(FragHeader) == 16);
static_assert(std::has_unique_object_representations_v<FragHeader>);
inline constexpr std::uint8_t kFrag = 1;

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
