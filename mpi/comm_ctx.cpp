#include "mpi/comm_ctx.h"

#include "mpi/ft_comm.h"
#include "ulm/thread_lock.h"

#include <algorithm>
#include <bit>
#include <vector>

namespace ulmpi::mpi {
namespace {

ContextMask& mask()
{
    static ContextMask m = [] {
        ContextMask init;
        init.fill(0xffffffffu);
        return init;
    }();
    return m;
}

} // namespace

ContextMask context_contribution(bool member)
{
    return member ? context_free_mask() : context_all_free();
}

namespace {

// Retries pick among this many of the lowest common free pairs.
constexpr int kSpread = 256;

} // namespace

int context_pick(const ContextMask& m, std::uint64_t key, int attempt)
{
    if (attempt == 0) {
        return context_lowest(m);
    }
    int free_pairs = 0;
    for (int w = 0; w < kContextWords; ++w) {
        std::uint32_t bits = m[static_cast<std::size_t>(w)];
        free_pairs += std::popcount(w == 0 ? bits & ~3u : bits);
    }
    if (free_pairs == 0) {
        return -1;
    }
    std::uint64_t h = key ^ (static_cast<std::uint64_t>(attempt) * 0x9e3779b97f4a7c15ULL);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    int k = static_cast<int>(h % static_cast<std::uint64_t>(std::min(free_pairs, kSpread)));
    for (int pair = 2; pair < kContextPairs; ++pair) {
        if ((m[static_cast<std::size_t>(pair / 32)] & (1u << (pair % 32))) != 0 && k-- == 0) {
            return pair;
        }
    }
    return -1;
}

std::uint32_t g_context_gen_p2p = 0;
std::uint32_t g_context_gen_coll = 0;

void set_context_generations(std::uint32_t p2p, std::uint32_t coll)
{
    g_context_gen_p2p = p2p;
    g_context_gen_coll = coll;
}

void context_reset_predefined()
{
    mask().fill(0xffffffffu);
    context_reserve(kWorldPair);
    context_reserve(kSelfPair);
}

const ContextMask& context_free_mask()
{
    ft_release_quarantined(); // pairs kept back by fault tolerance whose time has come
    return mask();
}

ContextMask context_all_free()
{
    ContextMask m;
    m.fill(0xffffffffu);
    return m;
}

int context_lowest(const ContextMask& m)
{
    for (int w = 0; w < kContextWords; ++w) {
        std::uint32_t bits = m[static_cast<std::size_t>(w)];
        if (w == 0) {
            bits &= ~3u; // world and self: never free (bit 0 is the claim flag)
        }
        if (bits != 0) {
            return w * 32 + std::countr_zero(bits);
        }
    }
    return -1;
}

void context_reserve(int pair)
{
    mask()[static_cast<std::size_t>(pair / 32)] &= ~(1u << (pair % 32));
}

void context_release(int pair)
{
    mask()[static_cast<std::size_t>(pair / 32)] |= 1u << (pair % 32);
}

bool context_in_use(int pair)
{
    return (mask()[static_cast<std::size_t>(pair / 32)] & (1u << (pair % 32))) == 0;
}

int context_used_count()
{
    int n = 0;
    for (std::uint32_t w : mask()) {
        n += std::popcount(~w);
    }
    return n;
}

} // namespace ulmpi::mpi
