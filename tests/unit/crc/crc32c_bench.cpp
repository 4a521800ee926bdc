// Microbenchmark: memcpy vs crc32c_copy vs crc32c at 64 B, 4 KiB, 64 KiB and
// 4 MiB. "hot" repeats one buffer (cache-resident up to the cache size);
// "cold" walks a pool of buffers much larger than the caches, so every byte
// comes from memory. Best of 7 (--rounds) interleaved runs, in GB/s (1e9 bytes per second).
//
//   crc32c_bench [--software] [--min-ms N] [--rounds N] [--size BYTES]...
#include "runtime/clock.h"
#include "runtime/crc32c.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using ulmpi::rt::monotonic_ns;

volatile std::uint32_t g_sink;

inline void clobber(void* p) { asm volatile("" : : "r"(p) : "memory"); }

enum class Op { memcpy_, crc_copy, crc };

struct Buffers {
    std::vector<unsigned char> src;
    std::vector<unsigned char> dst;
    std::size_t slots;
    std::size_t stride;
};

// One pass over `count` buffers of `len` bytes; returns nanoseconds.
double run(Op op, Buffers& b, std::size_t len, std::size_t count)
{
    std::uint32_t acc = 0;
    const std::int64_t t0 = monotonic_ns();
    std::size_t slot = 0;
    for (std::size_t i = 0; i < count; ++i) {
        unsigned char* d = b.dst.data() + slot * b.stride;
        const unsigned char* s = b.src.data() + slot * b.stride;
        slot = slot + 1 == b.slots ? 0 : slot + 1;
        switch (op) {
        case Op::memcpy_:
            std::memcpy(d, s, len);
            clobber(d);
            break;
        case Op::crc_copy:
            acc ^= ulmpi::rt::crc32c_copy(d, s, len);
            break;
        case Op::crc:
            acc ^= ulmpi::rt::crc32c(s, len);
            break;
        }
    }
    const std::int64_t t1 = monotonic_ns();
    g_sink = acc;
    return static_cast<double>(t1 - t0);
}

// Repetitions per operation so that one run lasts at least min_ns.
std::size_t calibrate(Op op, Buffers& b, std::size_t len, double min_ns)
{
    std::size_t count = std::max<std::size_t>(b.slots, 1);
    while (run(op, b, len, count) < min_ns) {
        count *= 2;
    }
    return count;
}

} // namespace

int main(int argc, char** argv)
{
    double min_ms = 50;
    int rounds = 7;
    std::vector<std::size_t> sizes;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--software") == 0) {
            ulmpi::rt::crc32c_force_software(true);
        } else if (std::strcmp(argv[i], "--min-ms") == 0 && i + 1 < argc) {
            min_ms = std::atof(argv[++i]);
        } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            sizes.push_back(std::strtoull(argv[++i], nullptr, 0));
        } else {
            std::fprintf(stderr,
                         "usage: %s [--software] [--min-ms N] [--rounds N] [--size BYTES]...\n",
                         argv[0]);
            return 2;
        }
    }
    std::printf("crc32c implementation: %s\n", ulmpi::rt::crc32c_implementation());
    std::printf("%-6s %-9s %12s %12s %12s %12s %12s %10s\n", "cache", "size", "memcpy GB/s",
                "copy+crc GB/s", "crc GB/s", "memcpy ns", "copy+crc ns", "ratio");

    constexpr std::size_t kColdBytes = std::size_t{1} << 30; // per side, beyond any cache
    if (sizes.empty()) {
        sizes = {64, 4096, 65536, 4u << 20};
    }
    for (int cold = 0; cold < 2; ++cold) {
        for (std::size_t len : sizes) {
            Buffers b;
            // 64-byte aligned slots, like fragments in a pool.
            b.stride = (len + 63) / 64 * 64;
            b.slots = cold != 0 ? kColdBytes / b.stride : 1;
            b.src.assign(b.slots * b.stride + 64, 0x5A);
            b.dst.assign(b.slots * b.stride + 64, 0);
            for (std::size_t i = 0; i < b.src.size(); i += 4096) {
                b.src[i] = static_cast<unsigned char>(i >> 12);
            }
            // The three operations take turns, best of `rounds` each, so that
            // load from other processes hits them alike.
            const double min_ns = min_ms * 1e6;
            const Op ops[3] = {Op::memcpy_, Op::crc_copy, Op::crc};
            std::size_t counts[3];
            double best[3];
            for (int k = 0; k < 3; ++k) {
                counts[k] = calibrate(ops[k], b, len, min_ns);
                best[k] = 1e300;
            }
            for (int round = 0; round < rounds; ++round) {
                for (int k = 0; k < 3; ++k) {
                    const double ns = run(ops[k], b, len, counts[k]);
                    best[k] = std::min(best[k], ns / static_cast<double>(counts[k]));
                }
            }
            const double t_memcpy = best[0];
            const double t_copy = best[1];
            const double t_crc = best[2];
            const auto gbs = [len](double ns) { return static_cast<double>(len) / ns; };
            std::printf("%-6s %-9zu %12.2f %12.2f %12.2f %12.1f %12.1f %9.2fx\n",
                        cold != 0 ? "cold" : "hot", len, gbs(t_memcpy), gbs(t_copy), gbs(t_crc),
                        t_memcpy, t_copy, t_copy / t_memcpy);
        }
    }
    return 0;
}
