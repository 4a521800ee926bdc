// The dispatch tables: which algorithm runs a collective call.
//
// Every collective has a parameter ULMPI_COLL_<NAME> (auto or one of its
// algorithms, listed by ulmpi_info); a forced algorithm that cannot do a
// given call (a commutative-only one with a non-commutative op) gives way to
// the automatic choice. The automatic choice ("chooser") looks at the team
// size p, the message size n in bytes (per rank, or per pair for the
// alltoalls) and the op; its thresholds are parameters too. The defaults
// were measured on one shared-memory host (docs/collectives.md).
//
// A communicator points at one table (CommColl::table), picked on its first
// collective: the flat table for intracommunicators, the inter table for
// intercommunicators (whose algorithms call the flat table for their local
// phases). A host-aware table would be picked here when the communicator
// spans several hosts (JobInfo::node_of_rank).
#include "mpi/coll/algos.h"
#include "mpi/coll/shm_coll.h"
#include "mpi/coll/util.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <cstring>

namespace ulmpi::mpi::coll {

CommColl::~CommColl() = default;

void CommCollDeleter::operator()(CommColl* p) const noexcept { delete p; }

namespace {

// ---------------------------------------------------------------- algorithms

bool commutative(const Args& a) { return a.op != nullptr && a.op->commutative; }

const Algo barrier_algos[] = {
    {"dissemination", barrier_dissemination, nullptr},
    {"tree", barrier_tree, nullptr},
};
const Algo bcast_algos[] = {
    {"binomial", bcast_binomial, nullptr},
    {"scatter_allgather", bcast_scatter_allgather, nullptr},
    {"pipeline", bcast_pipeline, nullptr},
    {"linear", bcast_linear, nullptr},
};
const Algo gather_algos[] = {
    {"binomial", gather_binomial, nullptr},
    {"linear", gather_linear, nullptr},
};
const Algo gatherv_algos[] = {
    {"linear", gather_linear, nullptr},
};
const Algo scatter_algos[] = {
    {"binomial", scatter_binomial, nullptr},
    {"linear", scatter_linear, nullptr},
};
const Algo scatterv_algos[] = {
    {"linear", scatter_linear, nullptr},
};
const Algo allgather_algos[] = {
    {"recursive_doubling", allgather_recursive_doubling, nullptr},
    {"bruck", allgather_bruck, nullptr},
    {"ring", allgather_ring, nullptr},
    {"linear", allgather_linear, nullptr},
};
const Algo allgatherv_algos[] = {
    {"ring", allgather_ring, nullptr},
    {"linear", allgather_linear, nullptr},
};
const Algo alltoall_algos[] = {
    {"bruck", alltoall_bruck, nullptr},
    {"linear", alltoall_linear, nullptr},
    {"pairwise", alltoall_pairwise, nullptr},
};
const Algo alltoallv_algos[] = {
    {"linear", alltoall_linear, nullptr},
    {"pairwise", alltoall_pairwise, nullptr},
};
const Algo reduce_algos[] = {
    {"binomial", reduce_binomial, nullptr},
    {"linear", reduce_linear, nullptr},
};
const Algo allreduce_algos[] = {
    {"recursive_doubling", allreduce_recursive_doubling, nullptr},
    {"rabenseifner", allreduce_rabenseifner, nullptr},
    {"ring", allreduce_ring, commutative},
    {"reduce_bcast", allreduce_reduce_bcast, nullptr},
};
const Algo reduce_scatter_algos[] = {
    {"recursive_halving", reduce_scatter_recursive_halving, commutative},
    {"ring", reduce_scatter_ring, commutative},
    {"reduce_scatterv", reduce_scatter_reduce_scatterv, nullptr},
};
const Algo scan_algos[] = {
    {"recursive_doubling", scan_recursive_doubling, nullptr},
    {"linear", scan_linear, nullptr},
};
const Algo exscan_algos[] = {
    {"recursive_doubling", exscan_recursive_doubling, nullptr},
    {"linear", exscan_linear, nullptr},
};
// One algorithm serves the five neighbourhood collectives.
const Algo neighbor_algos[] = {
    {"linear", neighbor_linear, nullptr},
};

template <std::size_t N> AlgoList list(const Algo (&a)[N]) { return AlgoList{a, static_cast<int>(N)}; }

// Intercommunicator algorithms: one per collective (scan and exscan have no
// intercommunicator form).
const Algo inter_barrier_algo[] = {{"inter", inter_barrier, nullptr}};
const Algo inter_bcast_algo[] = {{"inter", inter_bcast, nullptr}};
const Algo inter_gather_algo[] = {{"inter", inter_gather, nullptr}};
const Algo inter_scatter_algo[] = {{"inter", inter_scatter, nullptr}};
const Algo inter_allgather_algo[] = {{"inter", inter_allgather, nullptr}};
const Algo inter_alltoall_algo[] = {{"inter", inter_alltoall, nullptr}};
const Algo inter_reduce_algo[] = {{"inter", inter_reduce, nullptr}};
const Algo inter_allreduce_algo[] = {{"inter", inter_allreduce, nullptr}};
const Algo inter_reduce_scatter_algo[] = {{"inter", inter_reduce_scatter, nullptr}};

// ---------------------------------------------------------------- parameters

const rt::ChoiceParam barrier_param{"coll_barrier", "auto",
                                    "barrier algorithm: auto|dissemination|tree",
                                    "auto|dissemination|tree"};
const rt::ChoiceParam bcast_param{"coll_bcast", "auto",
                                  "bcast algorithm: auto|binomial|scatter_allgather|pipeline|linear",
                                  "auto|binomial|scatter_allgather|pipeline|linear"};
const rt::ChoiceParam gather_param{"coll_gather", "auto", "gather algorithm: auto|binomial|linear",
                                   "auto|binomial|linear"};
const rt::ChoiceParam gatherv_param{"coll_gatherv", "auto", "gatherv algorithm: auto|linear",
                                    "auto|linear"};
const rt::ChoiceParam scatter_param{"coll_scatter", "auto", "scatter algorithm: auto|binomial|linear",
                                    "auto|binomial|linear"};
const rt::ChoiceParam scatterv_param{"coll_scatterv", "auto", "scatterv algorithm: auto|linear",
                                     "auto|linear"};
const rt::ChoiceParam allgather_param{
    "coll_allgather", "auto", "allgather algorithm: auto|recursive_doubling|bruck|ring|linear",
    "auto|recursive_doubling|bruck|ring|linear"};
const rt::ChoiceParam allgatherv_param{"coll_allgatherv", "auto",
                                       "allgatherv algorithm: auto|ring|linear", "auto|ring|linear"};
const rt::ChoiceParam alltoall_param{"coll_alltoall", "auto",
                                     "alltoall algorithm: auto|bruck|linear|pairwise",
                                     "auto|bruck|linear|pairwise"};
const rt::ChoiceParam alltoallv_param{"coll_alltoallv", "auto",
                                      "alltoallv algorithm: auto|linear|pairwise",
                                      "auto|linear|pairwise"};
const rt::ChoiceParam alltoallw_param{"coll_alltoallw", "auto",
                                      "alltoallw algorithm: auto|linear|pairwise",
                                      "auto|linear|pairwise"};
const rt::ChoiceParam reduce_param{"coll_reduce", "auto", "reduce algorithm: auto|binomial|linear",
                                   "auto|binomial|linear"};
const rt::ChoiceParam allreduce_param{
    "coll_allreduce", "auto",
    "allreduce algorithm: auto|recursive_doubling|rabenseifner|ring|reduce_bcast",
    "auto|recursive_doubling|rabenseifner|ring|reduce_bcast"};
const rt::ChoiceParam reduce_scatter_param{
    "coll_reduce_scatter", "auto",
    "reduce_scatter algorithm: auto|recursive_halving|ring|reduce_scatterv",
    "auto|recursive_halving|ring|reduce_scatterv"};
const rt::ChoiceParam reduce_scatter_block_param{
    "coll_reduce_scatter_block", "auto",
    "reduce_scatter_block algorithm: auto|recursive_halving|ring|reduce_scatterv",
    "auto|recursive_halving|ring|reduce_scatterv"};
const rt::ChoiceParam scan_param{"coll_scan", "auto", "scan algorithm: auto|recursive_doubling|linear",
                                 "auto|recursive_doubling|linear"};
const rt::ChoiceParam exscan_param{"coll_exscan", "auto",
                                   "exscan algorithm: auto|recursive_doubling|linear",
                                   "auto|recursive_doubling|linear"};
const rt::ChoiceParam neighbor_allgather_param{"coll_neighbor_allgather", "auto",
                                               "neighbor_allgather algorithm: auto|linear",
                                               "auto|linear"};
const rt::ChoiceParam neighbor_allgatherv_param{"coll_neighbor_allgatherv", "auto",
                                                "neighbor_allgatherv algorithm: auto|linear",
                                                "auto|linear"};
const rt::ChoiceParam neighbor_alltoall_param{"coll_neighbor_alltoall", "auto",
                                              "neighbor_alltoall algorithm: auto|linear",
                                              "auto|linear"};
const rt::ChoiceParam neighbor_alltoallv_param{"coll_neighbor_alltoallv", "auto",
                                               "neighbor_alltoallv algorithm: auto|linear",
                                               "auto|linear"};
const rt::ChoiceParam neighbor_alltoallw_param{"coll_neighbor_alltoallw", "auto",
                                               "neighbor_alltoallw algorithm: auto|linear",
                                               "auto|linear"};

// On one shared-memory host the binomial tree moves the fewest bytes
// (p - 1 copies) in the fewest rounds; the pipeline only pays off with more
// cores or links than ranks (measured: docs/collectives.md).
const rt::SizeParam bcast_long{"coll_bcast_long", 8 * 1024 * 1024,
                               "bcast: messages from this size on use the pipelined chain"};
const rt::SizeParam allreduce_short{
    "coll_allreduce_short", 16 * 1024,
    "allreduce: vectors up to this size use recursive doubling, longer ones Rabenseifner or ring"};
const rt::SizeParam allgather_short{
    "coll_allgather_short", 64 * 1024,
    "allgather: total sizes up to this use recursive doubling (Bruck when p is not a power of two)"};
const rt::SizeParam alltoall_short{"coll_alltoall_short", 256,
                                   "alltoall: blocks up to this size use Bruck (from 8 ranks on)"};
const rt::SizeParam alltoall_long{"coll_alltoall_long", 32 * 1024,
                                  "alltoall: blocks from this size on use pairwise exchange"};
const rt::SizeParam gather_short{"coll_gather_short", 64 * 1024,
                                 "gather/scatter: total sizes up to this use the binomial tree"};
const rt::BoolParam trace_param{"coll_trace", false,
                                "print the algorithm of every collective call (rank 0 of the team)"};

const rt::ChoiceParam* const params[kColls] = {
    &barrier_param,   &bcast_param,          &gather_param,         &gatherv_param,
    &scatter_param,   &scatterv_param,       &allgather_param,      &allgatherv_param,
    &alltoall_param,  &alltoallv_param,      &alltoallw_param,      &reduce_param,
    &allreduce_param, &reduce_scatter_param, &reduce_scatter_block_param, &scan_param,
    &exscan_param,    &neighbor_allgather_param, &neighbor_allgatherv_param,
    &neighbor_alltoall_param, &neighbor_alltoallv_param, &neighbor_alltoallw_param,
};

const char* const names[kColls] = {
    "barrier",   "bcast",     "gather",    "gatherv", "scatter",        "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",    "reduce",
    "allreduce", "reduce_scatter", "reduce_scatter_block", "scan",      "exscan",
    "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
    "neighbor_alltoallw",
};

// ---------------------------------------------------------------- choosers
// Return an index into the collective's algorithm list.

int choose_first(const Args&) { return 0; }

int choose_bcast(const Args& a)
{
    if (a.team.size <= 2 || a.bytes < bcast_long.get()) {
        return 0; // binomial
    }
    return 2; // pipeline
}

int choose_gather(const Args& a)
{
    return a.bytes * static_cast<std::uint64_t>(a.team.size) <= gather_short.get() ? 0 : 1;
}

int choose_allgather(const Args& a)
{
    std::uint64_t total = a.bytes * static_cast<std::uint64_t>(a.team.size);
    if (total <= allgather_short.get()) {
        return is_pow2(a.team.size) ? 0 : 1; // recursive doubling, Bruck
    }
    return 2; // ring
}

int choose_alltoall(const Args& a)
{
    if (a.bytes <= alltoall_short.get() && a.team.size >= 8) {
        return 0; // Bruck
    }
    return a.bytes >= alltoall_long.get() ? 2 : 1; // pairwise, linear
}

int choose_alltoallv(const Args& a) { return a.team.size <= 64 ? 0 : 1; }

int choose_allreduce(const Args& a)
{
    std::uint64_t count = a.rcount;
    if (a.bytes <= allreduce_short.get() || count < static_cast<std::uint64_t>(pow2_floor(a.team.size))) {
        return 0; // recursive doubling
    }
    return 1; // Rabenseifner
}

int choose_reduce_scatter(const Args& a)
{
    if (!commutative(a)) {
        return 2; // reduce + scatterv
    }
    return a.team.size <= 8 || a.bytes <= allreduce_short.get() ? 0 : 1;
}

struct Lists {
    AlgoList flat[kColls];
    int (*choose[kColls])(const Args&);
};

const Lists& lists()
{
    static const Lists l = {
        {list(barrier_algos), list(bcast_algos), list(gather_algos), list(gatherv_algos),
         list(scatter_algos), list(scatterv_algos), list(allgather_algos), list(allgatherv_algos),
         list(alltoall_algos), list(alltoallv_algos), list(alltoallv_algos), list(reduce_algos),
         list(allreduce_algos), list(reduce_scatter_algos), list(reduce_scatter_algos),
         list(scan_algos), list(exscan_algos), list(neighbor_algos), list(neighbor_algos),
         list(neighbor_algos), list(neighbor_algos), list(neighbor_algos)},
        {choose_first, choose_bcast, choose_gather, choose_first, choose_gather, choose_first,
         choose_allgather, choose_first, choose_alltoall, choose_alltoallv, choose_alltoallv,
         choose_first, choose_allreduce, choose_reduce_scatter, choose_reduce_scatter, choose_first,
         choose_first, choose_first, choose_first, choose_first, choose_first, choose_first},
    };
    return l;
}

// The index of the algorithm a parameter names, -1 for auto.
int forced_index(Coll c)
{
    const std::string& v = params[static_cast<int>(c)]->get();
    AlgoList l = lists().flat[static_cast<int>(c)];
    for (int i = 0; i < l.count; ++i) {
        if (v == l.algos[i].name) {
            return i;
        }
    }
    return -1;
}

struct Tables {
    Table flat;
    Table inter;
    AlgoList inter_lists[kColls];

    Tables()
    {
        flat.name = "flat";
        inter.name = "inter";
        for (int c = 0; c < kColls; ++c) {
            flat.entry[c].algos = lists().flat[c].algos;
            flat.entry[c].count = lists().flat[c].count;
            flat.entry[c].forced = forced_index(static_cast<Coll>(c));
            flat.entry[c].choose = lists().choose[c];
        }
        const AlgoList none{nullptr, 0};
        const AlgoList inter_l[kColls] = {
            list(inter_barrier_algo),   list(inter_bcast_algo),   list(inter_gather_algo),
            list(inter_gather_algo),    list(inter_scatter_algo), list(inter_scatter_algo),
            list(inter_allgather_algo), list(inter_allgather_algo), list(inter_alltoall_algo),
            list(inter_alltoall_algo),  list(inter_alltoall_algo), list(inter_reduce_algo),
            list(inter_allreduce_algo), list(inter_reduce_scatter_algo),
            list(inter_reduce_scatter_algo), none, none,
            // no topology on an intercommunicator: no neighbourhood collectives
            none, none, none, none, none,
        };
        for (int c = 0; c < kColls; ++c) {
            inter.entry[c].algos = inter_l[c].algos;
            inter.entry[c].count = inter_l[c].count;
            inter.entry[c].forced = -1;
            inter.entry[c].choose = choose_first;
        }
    }
};

const Tables& tables()
{
    static const Tables t;
    return t;
}

} // namespace

const char* coll_name(Coll c) { return names[static_cast<int>(c)]; }

AlgoList algorithms(Coll c) { return lists().flat[static_cast<int>(c)]; }

const Table& flat_table() { return tables().flat; }
const Table& inter_table() { return tables().inter; }

CommColl& comm_coll(Comm* c)
{
    if (!c->coll) {
        c->coll.reset(new CommColl);
        c->coll->table = c->inter() ? &inter_table() : &flat_table();
    }
    return *c->coll;
}

int next_tag(Comm* c)
{
    CommColl& cc = comm_coll(c);
    return static_cast<int>(cc.seq++ & 0x3fffffffu);
}

bool tracing() { return trace_param.get(); }

const Algo& select(const Table& t, Coll c, const Args& a)
{
    const Table::Entry& e = t.entry[static_cast<int>(c)];
    const Algo* chosen;
    if (e.forced >= 0 && (e.algos[e.forced].usable == nullptr || e.algos[e.forced].usable(a))) {
        chosen = &e.algos[e.forced];
    } else {
        int i = e.choose(a);
        if (e.algos[i].usable != nullptr && !e.algos[i].usable(a)) {
            i = e.count - 1; // every list ends with an algorithm that does everything
        }
        chosen = &e.algos[i];
    }
    if (trace_param.get() && a.team.rank == 0) [[unlikely]] {
        rt::log(rt::LogLevel::info, "coll: %s %s: %s (team of %d, %llu bytes)", t.name,
                coll_name(c), chosen->name, a.team.size, static_cast<unsigned long long>(a.bytes));
    }
    return *chosen;
}

int build_flat(Schedule& s, Coll c, const Args& a)
{
    Args b = a;
    b.coll = c;
    return select(flat_table(), c, b).build(s, b);
}

Team local_team(const Comm* c) { return Team{c->local->world.data(), c->local->size(), c->rank}; }

Team remote_team(const Comm* c)
{
    if (c->remote == nullptr) {
        return Team{};
    }
    return Team{c->remote->world.data(), c->remote->size(), -1};
}

} // namespace ulmpi::mpi::coll
