// The udp path's datagram header and job token: SipHash-2-4 against the
// published test vectors, tokens that depend on the secret and the job id
// only, and the header check that keeps strays away from ULM.
#include "paths/udp/udp_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ulmpi::path::udp {
namespace {

TEST(SipHash, matches_the_reference_vectors)
{
    std::uint8_t key[16];
    for (int i = 0; i < 16; ++i) {
        key[i] = static_cast<std::uint8_t>(i);
    }
    std::uint8_t msg[64];
    for (int i = 0; i < 64; ++i) {
        msg[i] = static_cast<std::uint8_t>(i);
    }
    // Aumasson & Bernstein, "SipHash: a fast short-input PRF", appendix A,
    // and vectors.h of the reference implementation (entries 0 and 15).
    EXPECT_EQ(siphash24(key, msg, 0), 0x726fdb47dd0e0e31ULL);
    EXPECT_EQ(siphash24(key, msg, 15), 0xa129ca6149be45e5ULL);
}

TEST(SipHash, every_length_and_every_key_byte_matters)
{
    std::uint8_t key[16] = {};
    std::uint8_t msg[40] = {};
    std::vector<std::uint64_t> seen;
    for (std::size_t n = 0; n <= sizeof msg; ++n) {
        seen.push_back(siphash24(key, msg, n));
    }
    for (int b = 0; b < 16; ++b) {
        std::uint8_t k2[16] = {};
        k2[b] = 1;
        seen.push_back(siphash24(k2, msg, 8));
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
        for (std::size_t j = i + 1; j < seen.size(); ++j) {
            EXPECT_NE(seen[i], seen[j]) << i << " " << j;
        }
    }
}

TEST(JobToken, depends_on_secret_and_job_only)
{
    const char* s1 = "00112233445566778899aabbccddeeff";
    const char* s2 = "00112233445566778899aabbccddeefe";
    EXPECT_EQ(job_token(s1, "job1"), job_token(s1, "job1"));
    EXPECT_NE(job_token(s1, "job1"), job_token(s2, "job1"));
    EXPECT_NE(job_token(s1, "job1"), job_token(s1, "job2"));
    // Hex digits in either case are the same key.
    EXPECT_EQ(job_token(s1, "j"), job_token("00112233445566778899AABBCCDDEEFF", "j"));
    // A secret in another format still gives distinct tokens.
    EXPECT_NE(job_token("not hex at all", "j"), job_token("", "j"));
    EXPECT_NE(job_token("not hex at all", "j"), job_token("not hex at alm", "j"));
    EXPECT_NE(job_token("0011223344556677", "j"), job_token("0011223344556678", "j"));
}

Header good_header(std::uint64_t token)
{
    Header h{};
    h.magic = kMagic;
    h.version = kVersion;
    h.lane = 1;
    h.src = 3;
    h.dst = 5;
    h.token = token;
    return h;
}

Verdict check(const Header& h, std::size_t n = sizeof(Header), int* src = nullptr)
{
    int s = -1;
    std::vector<std::byte> b(std::max(n, sizeof h));
    std::memcpy(b.data(), &h, sizeof h);
    return check_header(b.data(), n, 1, 42, 5, 8, src != nullptr ? src : &s);
}

TEST(UdpHeader, accepts_this_jobs_datagram_and_names_the_sender)
{
    int src = -1;
    EXPECT_EQ(check(good_header(42), 100, &src), Verdict::ok);
    EXPECT_EQ(src, 3);
}

TEST(UdpHeader, refuses_what_is_not_this_jobs)
{
    EXPECT_EQ(check(good_header(42), sizeof(Header) - 1), Verdict::malformed);
    Header h = good_header(42);
    h.magic ^= 1;
    EXPECT_EQ(check(h), Verdict::malformed);
    h = good_header(42);
    h.version = 2;
    EXPECT_EQ(check(h), Verdict::malformed);
    h = good_header(42);
    h.lane = 0; // sent to the long socket with a short-socket header
    EXPECT_EQ(check(h), Verdict::malformed);
    h = good_header(42);
    h.pad = 1;
    EXPECT_EQ(check(h), Verdict::malformed);
    EXPECT_EQ(check(good_header(43)), Verdict::token);
    h = good_header(42);
    h.dst = 4; // another rank's datagram
    EXPECT_EQ(check(h), Verdict::rank);
    h = good_header(42);
    h.src = 8; // no such rank
    EXPECT_EQ(check(h), Verdict::rank);
    h.src = 0xffffffffu;
    EXPECT_EQ(check(h), Verdict::rank);
}

TEST(UdpHeader, refusals_are_counted_by_reason)
{
    Refusals r;
    for (Verdict v : {Verdict::ok, Verdict::malformed, Verdict::token, Verdict::token,
                      Verdict::rank, Verdict::address, Verdict::oversize}) {
        r.count(v);
    }
    EXPECT_EQ(r.malformed, 1u);
    EXPECT_EQ(r.token, 2u);
    EXPECT_EQ(r.rank, 1u);
    EXPECT_EQ(r.address, 1u);
    EXPECT_EQ(r.oversize, 1u);
    EXPECT_EQ(r.total(), 6u);
}

std::vector<std::size_t> split(std::size_t len, std::size_t seg)
{
    std::vector<std::size_t> out;
    std::size_t n = 0;
    for (std::size_t off = 0; (n = gro_segment(len, seg, off)) != 0; off += n) {
        out.push_back(n);
    }
    return out;
}

TEST(GroSplit, equal_datagrams_and_a_short_last_one)
{
    EXPECT_EQ(split(3 * 1472, 1472), (std::vector<std::size_t>{1472, 1472, 1472}));
    EXPECT_EQ(split(2 * 1472 + 41, 1472), (std::vector<std::size_t>{1472, 1472, 41}));
    EXPECT_EQ(split(1, 1472), (std::vector<std::size_t>{1}));
}

TEST(GroSplit, no_segment_size_is_one_datagram)
{
    EXPECT_EQ(split(1472, 0), (std::vector<std::size_t>{1472}));
    EXPECT_EQ(split(100, 1472), (std::vector<std::size_t>{100}));
    EXPECT_TRUE(split(0, 1472).empty());
    EXPECT_TRUE(split(0, 0).empty());
}

} // namespace
} // namespace ulmpi::path::udp
