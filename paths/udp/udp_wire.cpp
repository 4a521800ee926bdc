#include "paths/udp/udp_wire.h"

#include <algorithm>
#include <cstring>

namespace ulmpi::path::udp {
namespace {

std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

std::uint64_t load64(const std::uint8_t* p)
{
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v); // little-endian hosts only, like the rest of the wire
    return v;
}

struct SipState {
    std::uint64_t v0, v1, v2, v3;
    void round()
    {
        v0 += v1;
        v1 = rotl(v1, 13);
        v1 ^= v0;
        v0 = rotl(v0, 32);
        v2 += v3;
        v3 = rotl(v3, 16);
        v3 ^= v2;
        v0 += v3;
        v3 = rotl(v3, 21);
        v3 ^= v0;
        v2 += v1;
        v1 = rotl(v1, 17);
        v1 ^= v2;
        v2 = rotl(v2, 32);
    }
};

int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

} // namespace

void Refusals::count(Verdict v)
{
    switch (v) {
    case Verdict::ok:
        break;
    case Verdict::malformed:
        ++malformed;
        break;
    case Verdict::token:
        ++token;
        break;
    case Verdict::rank:
        ++rank;
        break;
    case Verdict::address:
        ++address;
        break;
    case Verdict::oversize:
        ++oversize;
        break;
    }
}

std::uint64_t siphash24(const std::uint8_t key[16], const void* data, std::size_t len)
{
    const std::uint64_t k0 = load64(key);
    const std::uint64_t k1 = load64(key + 8);
    SipState s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
               k1 ^ 0x7465646279746573ULL};
    const auto* p = static_cast<const std::uint8_t*>(data);
    const std::size_t whole = len & ~std::size_t{7};
    for (std::size_t i = 0; i < whole; i += 8) {
        std::uint64_t m = load64(p + i);
        s.v3 ^= m;
        s.round();
        s.round();
        s.v0 ^= m;
    }
    std::uint64_t last = static_cast<std::uint64_t>(len & 0xff) << 56;
    for (std::size_t i = 0; i < (len & 7); ++i) {
        last |= static_cast<std::uint64_t>(p[whole + i]) << (8 * i);
    }
    s.v3 ^= last;
    s.round();
    s.round();
    s.v0 ^= last;
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; ++i) {
        s.round();
    }
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

std::uint64_t job_token(std::string_view secret, std::string_view jobid)
{
    std::uint8_t key[16] = {};
    bool hex = secret.size() == 32;
    for (std::size_t i = 0; hex && i < 16; ++i) {
        int hi = hex_digit(secret[2 * i]);
        int lo = hex_digit(secret[2 * i + 1]);
        hex = hi >= 0 && lo >= 0;
        key[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    if (!hex) {
        // Not the launcher's format (a test, another launcher): derive a key.
        static constexpr std::uint8_t k0[16] = {'u', 'l', 'm', 'p', 'i', '-', 'u', 'd',
                                                'p', '-', 'k', 'e', 'y', '-', '0', '1'};
        std::uint64_t a = siphash24(k0, secret.data(), secret.size());
        std::uint64_t b = siphash24(k0, &a, sizeof a);
        std::memcpy(key, &a, 8);
        std::memcpy(key + 8, &b, 8);
    }
    static constexpr std::string_view label = "ulmpi udp token v1 ";
    char msg[256];
    std::size_t n = label.size();
    std::memcpy(msg, label.data(), n);
    std::size_t take = std::min(jobid.size(), sizeof msg - n);
    std::memcpy(msg + n, jobid.data(), take);
    return siphash24(key, msg, n + take);
}

Verdict check_header(const std::byte* d, std::size_t n, std::uint8_t lane, std::uint64_t token,
                     int my_rank, int size, int* src)
{
    if (n < sizeof(Header)) {
        return Verdict::malformed;
    }
    Header h;
    std::memcpy(&h, d, sizeof h);
    if (h.magic != kMagic || h.version != kVersion || h.lane != lane || h.pad != 0 || h.pad2 != 0) {
        return Verdict::malformed;
    }
    if (h.token != token) {
        return Verdict::token;
    }
    if (h.dst != static_cast<std::uint32_t>(my_rank) || h.src >= static_cast<std::uint32_t>(size)) {
        return Verdict::rank;
    }
    *src = static_cast<int>(h.src);
    return Verdict::ok;
}

} // namespace ulmpi::path::udp
