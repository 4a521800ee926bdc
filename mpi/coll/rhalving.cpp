// Recursive halving and doubling over a power-of-two set of virtual ranks,
// shared by the Rabenseifner allreduce and the recursive-halving
// reduce_scatter.
//
// Fold: with p = p2 + rem, team ranks 2i and 2i + 1 (i < rem) pair up: the
// even one sends its vector to the odd one, which combines (even's data on
// the left) and becomes virtual rank i; ranks from 2 rem on become virtual
// rank r - rem. The mapping keeps rank order.
//
// Halving: the p2 virtual blocks (vcount/vdispl, contiguous and in order)
// form a window, at first all of them. In each step (distance d) the
// window is cut in two halves; the rank whose bit d is clear keeps the
// lower half, its partner rank ^ d the upper; each sends the half it gives
// up and combines the half it keeps with what it receives. Both partners
// always have the same window, since they agree on every bit used before.
// After lg p2 steps a rank's window is one block, fully reduced.
//
// Doubling (allgather): the same steps backwards; each rank sends its
// window and receives its partner's, doubling the window.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int halving_vrank(int r, int rem)
{
    if (r < 2 * rem) {
        return r % 2 == 1 ? r / 2 : -1;
    }
    return r - rem;
}

int halving_real(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }

namespace {

struct Window {
    int lo;
    int hi;
};

// The masks in the order used, and the window after each step:
// win[0] = all, win[i + 1] = after step i.
int plan(const Halving& h, int* masks, Window* win)
{
    int steps = 0;
    if (h.ascending) {
        for (int m = 1; m < h.p2; m <<= 1) {
            masks[steps++] = m;
        }
    } else {
        for (int m = h.p2 / 2; m >= 1; m >>= 1) {
            masks[steps++] = m;
        }
    }
    win[0] = Window{0, h.p2};
    for (int i = 0; i < steps; ++i) {
        Window w = win[i];
        int mid = w.lo + (w.hi - w.lo) / 2;
        win[i + 1] = (h.vrank & masks[i]) != 0 ? Window{mid, w.hi} : Window{w.lo, mid};
    }
    return steps;
}

} // namespace

void halving_reduce_scatter(Schedule& s, const Args& a, const Halving& h, void* acc,
                            std::uint64_t count)
{
    const Team& t = a.team;
    const int r = t.rank;
    const Datatype* type = a.rtype;
    const bool commutative = a.op->commutative;
    s.fence();
    void* tmp = s.scratch_for(count, type);
    // What acc holds before the first step, and its copy into acc (h.input).
    const void* first = h.input != nullptr ? h.input : acc;
    bool filled = h.input == nullptr;
    auto fill = [&] {
        if (!filled) {
            s.copy(h.input, count, type, acc, count, type);
            filled = true;
        }
    };
    if (r < 2 * h.rem) {
        if (r % 2 == 0) {
            // acc is not read again here: the result comes back whole.
            s.send(t.w(r + 1), first, count, type);
            s.fence();
            return;
        }
        s.recv(t.w(r - 1), tmp, count, type);
        fill();
        s.fence();
        s.reduce(tmp, acc, count, type, a.op);
        first = acc;
    }
    int masks[32];
    Window win[33];
    int steps = plan(h, masks, win);
    const std::uint64_t* e = h.vdispl;
    for (int i = 0; i < steps; ++i) {
        int partner = h.vrank ^ masks[i];
        int peer = t.w(halving_real(partner, h.rem));
        Window keep = win[i + 1];
        Window give = keep.lo == win[i].lo ? Window{keep.hi, win[i].hi} : Window{win[i].lo, keep.lo};
        std::uint64_t kfirst = e[keep.lo];
        std::uint64_t kcount = e[keep.hi] - kfirst;
        std::uint64_t gfirst = e[give.lo];
        std::uint64_t gcount = e[give.hi] - gfirst;
        if (kcount > 0) {
            s.recv(peer, elem(tmp, kfirst, type), kcount, type);
        }
        if (gcount > 0) {
            s.send(peer, elem(i == 0 ? first : acc, gfirst, type), gcount, type);
        }
        fill();
        s.fence();
        if (kcount > 0) {
            void* mine = elem(acc, kfirst, type);
            void* theirs = elem(tmp, kfirst, type);
            if (commutative || partner < h.vrank) {
                s.reduce(theirs, mine, kcount, type, a.op);
            } else {
                s.reduce(mine, theirs, kcount, type, a.op);
                s.copy(theirs, kcount, type, mine, kcount, type);
            }
        }
    }
    fill(); // no step (one rank)
    s.fence();
}

void halving_allgather(Schedule& s, const Args& a, const Halving& h, void* acc,
                       std::uint64_t count, void* even_dst)
{
    const Team& t = a.team;
    const int r = t.rank;
    const Datatype* type = a.rtype;
    s.fence();
    if (h.vrank >= 0) {
        int masks[32];
        Window win[33];
        int steps = plan(h, masks, win);
        const std::uint64_t* e = h.vdispl;
        for (int i = steps - 1; i >= 0; --i) {
            int partner = h.vrank ^ masks[i];
            int peer = t.w(halving_real(partner, h.rem));
            Window mine = win[i + 1];
            Window theirs = mine.lo == win[i].lo ? Window{mine.hi, win[i].hi} : Window{win[i].lo, mine.lo};
            std::uint64_t tfirst = e[theirs.lo];
            std::uint64_t tcount = e[theirs.hi] - tfirst;
            std::uint64_t mfirst = e[mine.lo];
            std::uint64_t mcount = e[mine.hi] - mfirst;
            if (tcount > 0) {
                s.recv(peer, elem(acc, tfirst, type), tcount, type);
            }
            if (mcount > 0) {
                s.send(peer, elem(acc, mfirst, type), mcount, type);
            }
            s.fence();
        }
    }
    if (r < 2 * h.rem) {
        if (r % 2 == 1) {
            s.send(t.w(r - 1), acc, count, type);
        } else {
            s.recv(t.w(r + 1), even_dst, count, type);
        }
        s.fence();
    }
}

} // namespace ulmpi::mpi::coll
