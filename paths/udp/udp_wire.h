// What the udp path puts in front of every datagram, and the job token.
//
// Every datagram is [udp::Header][ULM fragment], or the header alone (a
// credit, see udp_path.h). The header says who sent it to whom and proves
// that the sender belongs to the job: `token` is a 64-bit SipHash-2-4 of a
// fixed text keyed with the job secret (the 128 random bits mpirun hands
// every rank in ULMPI_JOB_SECRET), so a process outside the job cannot
// produce it without the secret, and the secret itself never travels. The
// token is the same in every datagram: it keeps strays (other jobs, port
// scanners, leftovers of an earlier job on a reused port) away from ULM; it
// is not a defence against someone who can read the job's packets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace ulmpi::path::udp {

inline constexpr std::uint32_t kMagic = 0x554d4c55; // "ULMU" in memory order
inline constexpr std::uint8_t kVersion = 1;

struct Header {
    std::uint32_t magic;
    std::uint8_t version;
    std::uint8_t lane;   // socket it was sent to: 0 short (control), 1 long (bulk)
    std::uint16_t pad;   // zero
    std::uint32_t src;   // sender's world rank
    std::uint32_t dst;   // receiver's world rank
    std::uint64_t token; // job_token() of the sender's job
    // Flow control (udp_path.h), per lane, in cost units modulo 2^32:
    std::uint32_t stream;    // sender's cost sent to dst on this lane, this datagram included
    std::uint32_t credit[2]; // by lane: the highest `stream` the sender has seen from dst
    std::uint32_t pad2;      // zero
};
static_assert(sizeof(Header) == 40);
static_assert(std::has_unique_object_representations_v<Header>);

// a > b in serial-number arithmetic (RFC 1982) on 32-bit stream positions.
inline bool serial_after(std::uint32_t a, std::uint32_t b)
{
    return static_cast<std::int32_t>(a - b) > 0;
}

// Why a datagram was refused (see Refusals).
enum class Verdict : std::uint8_t { ok, malformed, token, rank, address, oversize };

// Checks what the header alone can tell: length, magic, version, lane, token,
// receiver and sender ranks. On ok, *src is the sender's rank. `n` is the
// datagram length (at least sizeof(Header) bytes are readable at `d` when
// n >= sizeof(Header)).
Verdict check_header(const std::byte* d, std::size_t n, std::uint8_t lane, std::uint64_t token,
                     int my_rank, int size, int* src);

// Refused datagrams, by reason. They are consumed and never reach ULM.
struct Refusals {
    std::uint64_t malformed = 0; // too short, wrong magic/version/lane
    std::uint64_t token = 0;     // not this job's token
    std::uint64_t rank = 0;      // sender or receiver rank out of range / not us
    std::uint64_t address = 0;   // sender rank does not own the source address
    std::uint64_t oversize = 0;  // longer than any fragment of the job
    std::uint64_t total() const { return malformed + token + rank + address + oversize; }
    void count(Verdict v);
};

// Splitting what one GRO read returned: the kernel (UDP_GRO) coalesces
// datagrams of one flow into a buffer of `len` bytes and says their size
// `seg` (0: no GRO cmsg, one datagram); all are `seg` bytes but the last,
// which may be shorter. Returns the length of the datagram that starts at
// `off`, 0 past the end. Each datagram carries its own header and is checked
// on its own.
inline std::size_t gro_segment(std::size_t len, std::size_t seg, std::size_t off)
{
    if (off >= len) {
        return 0;
    }
    const std::size_t rest = len - off;
    return seg == 0 || seg > rest ? rest : seg;
}

// SipHash-2-4 (Aumasson & Bernstein) of `data` under a 128-bit key.
std::uint64_t siphash24(const std::uint8_t key[16], const void* data, std::size_t len);

// The job token from the job secret (32 hex digits = the 128-bit key; any
// other text is first hashed into a key) and the job id.
std::uint64_t job_token(std::string_view secret, std::string_view jobid);

} // namespace ulmpi::path::udp
