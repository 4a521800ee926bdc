// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, initial value ~0,
// final xor ~0): the checksum of iSCSI, ext4 and SCTP, and of every ULM
// fragment header and payload. crc32c("123456789") == 0xE3069283.
//
// Values chain: crc32c(B, lenB, crc32c(A, lenA)) == crc32c(A‖B), so a
// fragment is checksummed piece by piece (header, then payload pieces) by
// passing the previous result as `crc`; 0 starts a new checksum.
//
// crc32c_copy() copies and checksums in one pass over the source: ULM packs
// user data into a fragment (or unpacks it) and gets the payload CRC for the
// price of the copy.
//
// The implementation is chosen once, at the first call, from the fastest
// this CPU runs: AVX-512F + VPCLMULQDQ folds 256 bytes per step in zmm
// registers, AVX2 + VPCLMULQDQ (Zen 3, recent Intel client parts) the same
// in ymm registers, both from 256 bytes on and finishing with the SSE4.2
// crc32 instruction; shorter buffers take the SSE4.2 crc32 instruction on
// three interleaved streams when the CPU has it; else table-driven
// slicing-by-8. ULMPI_CRC32C_IMPL=auto|avx512|avx2|sse42|sw overrides the
// choice (a kernel this CPU cannot run falls back to auto, with a warning).
// The fast paths are compiled with function target attributes, so the
// library still runs on CPUs without them. All give identical results. All
// functions are thread-safe and allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ulmpi::rt {

// CRC32C of `len` bytes at `data`, continuing from `crc` (0 to start).
std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc = 0) noexcept;

// CRC32C (from 0) of `nwords` whole 8-byte words at `data` (any
// alignment) in which the 4 bytes at offset `hole` (a multiple of 4, inside
// the words) count as zero: the checksum of a header that holds its own
// checksum field, without copying the header. No set-up of the long-buffer
// kernels: one crc32 instruction per word when the CPU has it.
std::uint32_t crc32c_words_hole(const void* data, std::size_t nwords, std::size_t hole) noexcept;

// Copies `len` bytes from `src` to `dst` (they must not overlap) and returns
// the CRC32C of those bytes, continuing from `crc`. Reads the source once.
std::uint32_t crc32c_copy(void* dst, const void* src, std::size_t len,
                          std::uint32_t crc = 0) noexcept;

// crc32c_copy() for a destination that another core reads next (a
// shared-memory fragment the receiver will copy out): the destination's
// whole 64-byte lines are written with non-temporal stores, past this
// core's caches, and a store fence ends the call, so every byte is in memory
// before any later store of the caller (the one that hands the fragment
// over, say). The reader then gets the lines from memory instead of from
// this core's cache, which on the Zen 5 VM we measure on raised the shm
// bandwidth with checksums 1.6-2.1 times (64 KiB - 1 MiB, the sender's pack
// through it). Buffers under 2 KiB, and CPUs
// without the AVX2 or AVX-512 kernel, take crc32c_copy(). Same result.
std::uint32_t crc32c_copy_stream(void* dst, const void* src, std::size_t len,
                                 std::uint32_t crc = 0) noexcept;

// crc32c_copy() in two passes over pieces of 16 KiB: the C library's
// memcpy (`rep movsb` at these sizes, which writes whole destination lines
// without first reading them for ownership), then the CRC over the
// destination while this core still holds it. Where the destination's lines
// sit in another core's cache (a shared-memory fragment buffer the receiver
// read last time round, in a long stream through a few such buffers), the
// fused copy waits for each of them; this does not. Same result.
std::uint32_t crc32c_copy_cached(void* dst, const void* src, std::size_t len,
                                 std::uint32_t crc = 0) noexcept;

// Given crc_a = crc32c(A) and crc_b = crc32c(B) where B is len_b bytes long,
// returns crc32c(A‖B) without touching the data. O(log len_b).
std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b) noexcept;

// What crc32c() runs on: "avx512 vpclmulqdq fold + sse4.2",
// "avx2 vpclmulqdq fold + sse4.2", "sse4.2 (3-way)" or
// "software (slicing-by-8)".
const char* crc32c_implementation() noexcept;

// True when the CPU offers the SSE4.2 crc32 instruction.
bool crc32c_hardware_available() noexcept;

// The kernels, for tests and benchmarks (best: the fastest this CPU runs).
enum class Crc32cImpl { best, avx512, avx2, sse42, software };

// True when this CPU can run `which`.
bool crc32c_available(Crc32cImpl which) noexcept;

// Tests and benchmarks: runs everything on one implementation from now on.
// Returns false and changes nothing when this CPU cannot run it. Not meant
// to race with checksums in flight (each call still sees one consistent
// implementation).
bool crc32c_force(Crc32cImpl which) noexcept;

// Tests and benchmarks: `true` forces the software path, `false` returns to
// the configured one (ULMPI_CRC32C_IMPL, by default the fastest). Same
// caveat as crc32c_force.
void crc32c_force_software(bool on) noexcept;

} // namespace ulmpi::rt
