#include "mpi/comm_ctx.h"

#include "mpi/ft_comm.h"

#include <bit>

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
