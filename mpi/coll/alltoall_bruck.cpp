// Alltoall, Bruck's algorithm. Blocks go into a packed scratch buffer
// rotated so that slot i holds my block for rank r + i. In the step of
// distance 2^k every rank sends the slots whose index has bit k set to
// rank r + 2^k and gets the same slots from r - 2^k. Afterwards slot i
// holds the block from rank r - i.
//
// Cost: lg * alpha + lg * (p/2) n * beta, plus local packing. Fewest
// messages: for short blocks on many ranks.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int alltoall_bruck(Schedule& s, const Args& a)
{
    const Team& t = a.team;
    const int p = t.size;
    const int r = t.rank;
    const Datatype* bt = byte_type();
    s.fence();
    Block* out;
    Block* in;
    a2a_blocks(s, a, &out, &in);
    const std::uint64_t nb = out[0].bytes();
    if (nb == 0) {
        return MPI_SUCCESS;
    }
    auto* tmp = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(p) * nb));
    auto slot = [&](int i) { return tmp + static_cast<std::uint64_t>(i) * nb; };
    for (int i = 0; i < p; ++i) {
        const Block& b = out[(r + i) % p];
        s.copy(b.buf, b.count, b.type, slot(i), nb, bt);
    }
    int most = 0;
    for (int k = 1; k < p; k <<= 1) {
        int m = 0;
        for (int i = 0; i < p; ++i) {
            m += (i & k) != 0 ? 1 : 0;
        }
        most = m > most ? m : most;
    }
    auto* pack = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(most) * nb));
    auto* unpack = static_cast<std::byte*>(s.scratch(static_cast<std::uint64_t>(most) * nb));
    int prev = 0; // distance of the previous step, whose slots are in `unpack`
    for (int k = 1; k < p; k <<= 1) {
        // Put the previous step's slots in place, pack this step's.
        if (prev != 0) {
            std::uint64_t j = 0;
            for (int i = 0; i < p; ++i) {
                if ((i & prev) != 0) {
                    s.copy(unpack + j * nb, nb, bt, slot(i), nb, bt);
                    ++j;
                }
            }
        }
        std::uint64_t m = 0;
        for (int i = 0; i < p; ++i) {
            if ((i & k) != 0) {
                s.copy(slot(i), nb, bt, pack + m * nb, nb, bt);
                ++m;
            }
        }
        s.recv(t.w(mod(r - k, p)), unpack, m * nb, bt);
        s.send(t.w((r + k) % p), pack, m * nb, bt);
        s.fence();
        prev = k;
    }
    // Slot i (after the last step's slots are in) comes from rank r - i.
    for (int i = 0; i < p; ++i) {
        if (prev != 0 && (i & prev) != 0) {
            std::uint64_t j = 0;
            for (int q = 0; q < i; ++q) {
                j += (q & prev) != 0 ? 1 : 0;
            }
            const Block& b = in[mod(r - i, p)];
            s.copy(unpack + j * nb, nb, bt, b.mut(), b.count, b.type);
        } else {
            const Block& b = in[mod(r - i, p)];
            s.copy(slot(i), nb, bt, b.mut(), b.count, b.type);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
