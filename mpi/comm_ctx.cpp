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

// Claims (MULTIPLE only; guarded by the MPI lock like everything here).
struct Claims {
    std::vector<std::uint64_t> waiting; // keys of member creations under way
    bool owned = false;       // one of them holds the bitmap now
};

Claims& claims()
{
    static auto* c = new Claims; // never destroyed: exit handlers may still build
    return *c;
}

} // namespace

ContextClaim::ContextClaim(int parent_pair, int tag, bool member)
    : key_((static_cast<std::uint64_t>(parent_pair) << 32) | static_cast<std::uint32_t>(tag)),
      member_(member), multi_(ulm::thread_lock().on())
{
    if (multi_ && member_) {
        claims().waiting.push_back(key_);
    }
}

ContextClaim::~ContextClaim()
{
    end_attempt();
    if (multi_ && member_) {
        auto& w = claims().waiting;
        w.erase(std::find(w.begin(), w.end(), key_));
    }
}

ContextMask ContextClaim::begin_attempt()
{
    if (!member_) {
        return context_all_free();
    }
    if (multi_) {
        Claims& c = claims();
        const bool first = *std::min_element(c.waiting.begin(), c.waiting.end()) == key_;
        if (c.owned || !first) {
            ContextMask none{}; // bit 0 clear: "I deferred"
            return none;
        }
        c.owned = true;
        owner_ = true;
    }
    ContextMask m = context_free_mask();
    m[0] |= 1u;
    return m;
}

void ContextClaim::end_attempt()
{
    if (owner_) {
        claims().owned = false;
        owner_ = false;
    }
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
