#include "mpi/topo.h"

#include "mpi/comm.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

namespace ulmpi::mpi {

int Topology::cart_size() const
{
    int n = 1;
    for (int d : dims) {
        n *= d;
    }
    return n;
}

void Topology::coords_of(int rank, int* coords) const
{
    for (int d = ndims() - 1; d >= 0; --d) {
        const int n = dims[static_cast<std::size_t>(d)];
        coords[d] = rank % n;
        rank /= n;
    }
}

int Topology::rank_of(const int* coords) const
{
    int r = 0;
    for (int d = 0; d < ndims(); ++d) {
        r = r * dims[static_cast<std::size_t>(d)] + coords[d];
    }
    return r;
}

void Topology::shift(int rank, int d, int disp, int* source, int* dest) const
{
    std::vector<int> c(dims.size());
    coords_of(rank, c.data());
    const int n = dims[static_cast<std::size_t>(d)];
    const bool periodic = periods[static_cast<std::size_t>(d)] != 0;
    auto moved = [&](long long by) {
        long long x = static_cast<long long>(c[static_cast<std::size_t>(d)]) + by;
        if (periodic) {
            x = ((x % n) + n) % n;
        } else if (x < 0 || x >= n) {
            return MPI_PROC_NULL;
        }
        std::vector<int> m = c;
        m[static_cast<std::size_t>(d)] = static_cast<int>(x);
        return rank_of(m.data());
    };
    *dest = moved(disp);
    *source = moved(-static_cast<long long>(disp));
}

void Topology::neighbors(int rank, std::vector<int>& src, std::vector<int>& dst) const
{
    src.clear();
    dst.clear();
    switch (kind) {
    case MPI_CART:
        for (int d = 0; d < ndims(); ++d) {
            int s;
            int t;
            shift(rank, d, 1, &s, &t);
            // -1 then +1: the sources are the ranks that shift into me.
            src.push_back(s);
            src.push_back(t);
            dst.push_back(s);
            dst.push_back(t);
        }
        break;
    case MPI_GRAPH: {
        const int first = rank == 0 ? 0 : index[static_cast<std::size_t>(rank - 1)];
        const int last = index[static_cast<std::size_t>(rank)];
        for (int i = first; i < last; ++i) {
            src.push_back(edges[static_cast<std::size_t>(i)]);
        }
        dst = src;
        break;
    }
    case MPI_DIST_GRAPH:
        src = sources;
        dst = destinations;
        break;
    default: break;
    }
}

const Topology* comm_topology(const Comm* c) { return c->topo.get(); }

namespace {

// Factorisations of n into `slots` factors, each at most `cap`, in
// non-increasing order; keeps the one whose largest and smallest factors
// are closest. Among those, the one whose smallest factor is largest, then
// the second smallest, and so on (13 x 9 x 8 x 6 rather than 13 x 12 x 6 x 6
// for 5616 in 4-d: the choice MPICH makes, which its test suite checks).
// Divisors are tried from large to small.
struct Search {
    // cur is better than best (equal spreads): compare from the smallest.
    bool better_tie() const
    {
        for (std::size_t i = cur.size(); i-- > 0;) {
            if (cur[i] != best[i]) {
                return cur[i] > best[i];
            }
        }
        return false;
    }

    std::vector<int> divisors; // of the number being split, descending
    std::vector<int> cur;
    std::vector<int> best;
    int best_spread = INT_MAX;

    // Largest r with r^k <= n.
    static int iroot(int n, int k)
    {
        auto r = static_cast<int>(std::pow(static_cast<double>(n), 1.0 / k));
        auto pw = [k](long long x) {
            long long p = 1;
            for (int i = 0; i < k && p <= INT_MAX; ++i) {
                p *= x;
            }
            return p;
        };
        while (r > 1 && pw(r) > n) {
            --r;
        }
        while (pw(r + 1) <= n) {
            ++r;
        }
        return r;
    }

    void run(int n, int slots, int cap)
    {
        // The smallest factor still to come is at most n^(1/slots): no
        // better spread down here than cur.front() minus that.
        if (slots > 0 && !cur.empty() && cur.front() - iroot(n, slots) > best_spread) {
            return;
        }
        if (slots == 0) {
            if (n == 1) {
                int spread = cur.front() - cur.back();
                if (spread < best_spread || (spread == best_spread && better_tie())) {
                    best_spread = spread;
                    best = cur;
                }
            }
            return;
        }
        if (slots == 1) {
            if (n <= cap) {
                cur.push_back(n);
                run(1, 0, n);
                cur.pop_back();
            }
            return;
        }
        for (int d : divisors) {
            if (d > cap || n % d != 0) {
                continue;
            }
            // d is the largest of the remaining factors: d^slots >= n.
            long long p = 1;
            for (int i = 0; i < slots && p < n; ++i) {
                p *= d;
            }
            if (p < n) {
                break; // smaller divisors cannot reach n either
            }
            cur.push_back(d);
            run(n / d, slots - 1, d);
            cur.pop_back();
        }
    }
};

} // namespace

bool dims_create(int nnodes, int ndims, int* dims)
{
    long long fixed = 1;
    int free_slots = 0;
    for (int i = 0; i < ndims; ++i) {
        if (dims[i] > 0) {
            fixed *= dims[i];
        } else {
            ++free_slots;
        }
    }
    if (fixed == 0 || nnodes % fixed != 0) {
        return false;
    }
    const int n = static_cast<int>(nnodes / fixed);
    if (free_slots == 0) {
        return n == 1;
    }
    Search s;
    std::vector<int> small;
    for (int d = 1; static_cast<long long>(d) * d <= n; ++d) {
        if (n % d == 0) {
            small.push_back(d);
            if (d != n / d) {
                s.divisors.push_back(n / d);
            }
        }
    }
    s.divisors.insert(s.divisors.end(), small.rbegin(), small.rend());
    s.run(n, free_slots, n);
    int j = 0;
    for (int i = 0; i < ndims; ++i) {
        if (dims[i] == 0) {
            dims[i] = s.best[static_cast<std::size_t>(j++)];
        }
    }
    return true;
}

} // namespace ulmpi::mpi
