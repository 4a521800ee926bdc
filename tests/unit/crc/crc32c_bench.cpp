// Microbenchmark: memcpy against crc32c_copy and crc32c on every kernel this
// CPU runs (or those named), size by size. "hot" repeats one buffer
// (cache-resident up to the cache size); "cold" walks a pool of buffers much
// larger than the caches, so every byte comes from memory. The operations
// take turns within each round, so load from other processes hits them
// alike; each figure is the best of --rounds runs. Calls are independent
// (the CPU may overlap one with the next: throughput), or with --chain each
// checksum continues from the previous one (latency of a dependent call).
//
//   crc32c_bench [--impl avx512|avx2|sse42|sw|all]... [--hot | --cold] [--chain]
//                [--stream] [--min-ms N] [--rounds N] [--size BYTES]...
//
// --stream times crc32c_copy_stream (non-temporal stores) as copy+crc.
//
// One line per size and kernel: nanoseconds per call of memcpy, copy+crc and
// crc, copy+crc against memcpy (time ratio), and the three in GB/s (1e9
// bytes per second). Without --impl: every kernel but software. Sizes take
// K and M suffixes (KiB, MiB).
#include "runtime/clock.h"
#include "runtime/crc32c.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

using ulmpi::rt::Crc32cImpl;
using ulmpi::rt::monotonic_ns;

volatile std::uint32_t g_sink;
bool g_chain = false;
bool g_stream = false;

inline void clobber(void* p) { asm volatile("" : : "r"(p) : "memory"); }

enum class Op { memcpy_, crc_copy, crc };

struct Kernel {
    Crc32cImpl impl;
    const char* name;
};
constexpr Kernel kKernels[] = {{Crc32cImpl::avx512, "avx512"},
                               {Crc32cImpl::avx2, "avx2"},
                               {Crc32cImpl::sse42, "sse42"},
                               {Crc32cImpl::software, "sw"}};

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
        case Op::crc_copy: {
            const auto copy = g_stream ? &ulmpi::rt::crc32c_copy_stream : &ulmpi::rt::crc32c_copy;
            acc = g_chain ? copy(d, s, len, acc) : acc ^ copy(d, s, len, 0);
            break;
        }
        case Op::crc:
            acc = g_chain ? ulmpi::rt::crc32c(s, len, acc) : acc ^ ulmpi::rt::crc32c(s, len);
            break;
        }
    }
    const std::int64_t t1 = monotonic_ns();
    g_sink = acc;
    return static_cast<double>(t1 - t0);
}

// Repetitions so that one run lasts at least min_ns.
std::size_t calibrate(Op op, Buffers& b, std::size_t len, double min_ns)
{
    std::size_t count = std::max<std::size_t>(b.slots, 64);
    while (run(op, b, len, count) < min_ns) {
        count *= 2;
    }
    return count;
}

bool parse_size(const char* text, std::size_t& out)
{
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 0);
    if (end == text) {
        return false;
    }
    const std::string_view suffix(end);
    if (suffix.empty()) {
        out = v;
    } else if (suffix == "K" || suffix == "k") {
        out = v << 10;
    } else if (suffix == "M" || suffix == "m") {
        out = v << 20;
    } else {
        return false;
    }
    return true;
}

int usage(const char* argv0)
{
    std::fprintf(stderr,
                 "usage: %s [--impl avx512|avx2|sse42|sw|all]... [--hot | --cold] [--chain]\n"
                 "       [--stream] [--min-ms N] [--rounds N] [--size BYTES]...\n",
                 argv0);
    return 2;
}

struct Row {
    std::size_t count[2];
    double best[2];
};

} // namespace

int main(int argc, char** argv)
{
    double min_ms = 20;
    int rounds = 7;
    bool hot = true;
    bool cold = true;
    std::vector<std::size_t> sizes;
    std::vector<Kernel> kernels;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--impl" && i + 1 < argc) {
            const std::string_view name = argv[++i];
            bool known = false;
            for (const Kernel& k : kKernels) {
                if (name == "all" || name == k.name) {
                    kernels.push_back(k);
                    known = true;
                }
            }
            if (!known) {
                return usage(argv[0]);
            }
        } else if (arg == "--software") { // the old spelling
            kernels.push_back(kKernels[3]);
        } else if (arg == "--chain") {
            g_chain = true;
        } else if (arg == "--stream") {
            g_stream = true;
        } else if (arg == "--hot") {
            cold = false;
        } else if (arg == "--cold") {
            hot = false;
        } else if (arg == "--min-ms" && i + 1 < argc) {
            min_ms = std::atof(argv[++i]);
        } else if (arg == "--rounds" && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (arg == "--size" && i + 1 < argc) {
            std::size_t s = 0;
            if (!parse_size(argv[++i], s)) {
                return usage(argv[0]);
            }
            sizes.push_back(s);
        } else {
            return usage(argv[0]);
        }
    }
    if (kernels.empty()) {
        kernels.assign(std::begin(kKernels), std::end(kKernels) - 1);
    }
    std::erase_if(kernels, [](const Kernel& k) {
        if (!ulmpi::rt::crc32c_available(k.impl)) {
            std::printf("# %s: this CPU cannot run it, skipped\n", k.name);
            return true;
        }
        return false;
    });
    if (sizes.empty()) {
        sizes = {0, 8, 64, 256, 1024, 4096, 16384, 65536, 1u << 20, 4u << 20, 16u << 20};
    }
    (void)ulmpi::rt::crc32c_force(Crc32cImpl::best);
    std::printf("# best kernel here: %s; best of %d rounds; %s calls; copy+crc is %s\n",
                ulmpi::rt::crc32c_implementation(), rounds,
                g_chain ? "dependent (latency)" : "independent (throughput)",
                g_stream ? "crc32c_copy_stream" : "crc32c_copy");
    std::printf("%-5s %9s %-7s %10s %12s %10s %8s %11s %13s %9s\n", "cache", "size", "kernel",
                "memcpy ns", "copy+crc ns", "crc ns", "ratio", "memcpy GB/s", "copy+crc GB/s",
                "crc GB/s");

    constexpr std::size_t kColdBytes = std::size_t{1} << 30; // per side, beyond any cache
    for (int is_cold = 0; is_cold < 2; ++is_cold) {
        if ((is_cold != 0 && !cold) || (is_cold == 0 && !hot)) {
            continue;
        }
        for (std::size_t len : sizes) {
            Buffers b;
            // 64-byte aligned slots, like fragments in a pool.
            b.stride = std::max<std::size_t>((len + 63) / 64 * 64, 64);
            b.slots = is_cold != 0 ? kColdBytes / b.stride : 1;
            b.src.assign(b.slots * b.stride + 64, 0x5A);
            b.dst.assign(b.slots * b.stride + 64, 0);
            for (std::size_t i = 0; i < b.src.size(); i += 4096) {
                b.src[i] = static_cast<unsigned char>(i >> 12);
            }
            const double min_ns = min_ms * 1e6;
            const std::size_t memcpy_count = calibrate(Op::memcpy_, b, len, min_ns);
            double memcpy_best = 1e300;
            std::vector<Row> rows(kernels.size());
            for (std::size_t k = 0; k < kernels.size(); ++k) {
                (void)ulmpi::rt::crc32c_force(kernels[k].impl);
                rows[k].count[0] = calibrate(Op::crc_copy, b, len, min_ns);
                rows[k].count[1] = calibrate(Op::crc, b, len, min_ns);
                rows[k].best[0] = rows[k].best[1] = 1e300;
            }
            for (int round = 0; round < rounds; ++round) {
                const double ns = run(Op::memcpy_, b, len, memcpy_count);
                memcpy_best = std::min(memcpy_best, ns / static_cast<double>(memcpy_count));
                for (std::size_t k = 0; k < kernels.size(); ++k) {
                    (void)ulmpi::rt::crc32c_force(kernels[k].impl);
                    for (int o = 0; o < 2; ++o) {
                        const Op op = o == 0 ? Op::crc_copy : Op::crc;
                        const double t = run(op, b, len, rows[k].count[o]);
                        rows[k].best[o] =
                            std::min(rows[k].best[o], t / static_cast<double>(rows[k].count[o]));
                    }
                }
            }
            const auto gbs = [len](double ns) { return static_cast<double>(len) / ns; };
            for (std::size_t k = 0; k < kernels.size(); ++k) {
                const double t_copy = rows[k].best[0];
                const double t_crc = rows[k].best[1];
                std::printf("%-5s %9zu %-7s %10.1f %12.1f %10.1f %7.2fx %11.2f %13.2f %9.2f\n",
                            is_cold != 0 ? "cold" : "hot", len, kernels[k].name, memcpy_best,
                            t_copy, t_crc, t_copy / memcpy_best, gbs(memcpy_best), gbs(t_copy),
                            gbs(t_crc));
            }
            std::fflush(stdout);
        }
    }
    (void)ulmpi::rt::crc32c_force(Crc32cImpl::best);
    return 0;
}
