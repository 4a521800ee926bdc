// FT-MPI REBUILD: failed ranks replaced by new processes, MPI_COMM_WORLD
// at full size again. The recovery itself (the agreement on who failed) is
// mpi/ftmpi_recovery.cpp's; this file holds what REBUILD adds.
//
// Survivors, once the recovery's agreement has decided the removed ranks
// (ftmpi_rebuild_replace, from the progress loop, the same at everyone):
//   1. for each removed rank w: the engine resets the link to w to the next
//      incarnation k (fresh sequence spaces; fragments of the dead process
//      carry the old epoch and are refused) and every path that reached it
//      forgets it (Engine::replace_peer); the launcher is asked for a new
//      process for w as incarnation k (Bootstrap::respawn; every survivor
//      asks, the launcher starts one);
//   2. every survivor publishes the state a new process needs ("ftmpi.state":
//      the recovery count, the context generations, the modes, the ranks the
//      recovery replaced, every rank's incarnation), then enters a fence. The launcher counts the new
//      processes in it, so it completes when they have published their
//      addresses (their own wire-up's first fence) — or failed again;
//   3. a new process that joined (it put "ftmpi.incarnation" = k) is
//      connected (Engine::connect_replaced), revived in the detector and the
//      bootstrap; one that did not stays failed (a later recovery replaces
//      it again). A second fence matches the new processes' second one.
// The survivors keep their progress going in the fences (the recovery's
// agreement may still need their answers elsewhere); the recovery hook
// does not run again meanwhile.
// A new process (ftmpi_rebuild_join, from MPI_Init): its wire-up is the
// usual one (the paths know from JobInfo::incarnation that they join a
// running job); it then takes the newest state the survivors published, so
// that its contexts, its recovery count and its attributes are theirs, and
// MPI_Init returns MPI_INIT_RESTARTED_NODE. The incarnations in it set its
// links' epochs before its first progress call: the launcher's
// ULMPI_PEER_INCARNATIONS misses a rank whose respawn it had not been asked
// for yet when it started this one (two ranks replaced at once).
#include "mpi/ftmpi_rebuild.h"

#include "mpi/state.h"
#include "runtime/log.h"

#include <cstring>
#include <string>
#include <unistd.h>

namespace ulmpi::mpi {

namespace {

constexpr const char* kStateKey = "ftmpi.state";
constexpr const char* kIncarnationKey = "ftmpi.incarnation";
constexpr std::int32_t kStateMagic = 0x46524231; // "FRB1"

std::vector<std::int32_t> encode(const FtmpiSnapshot& s)
{
    std::vector<std::int32_t> w = {kStateMagic,
                                   s.epoch,
                                   static_cast<std::int32_t>(s.gen_p2p),
                                   static_cast<std::int32_t>(s.gen_coll),
                                   static_cast<std::int32_t>(s.modes.comm),
                                   static_cast<std::int32_t>(s.modes.msg),
                                   static_cast<std::int32_t>(s.modes.coll),
                                   static_cast<std::int32_t>(s.modes.recovery),
                                   static_cast<std::int32_t>(s.last_ranks.size())};
    w.insert(w.end(), s.last_ranks.begin(), s.last_ranks.end());
    w.push_back(static_cast<std::int32_t>(s.incarnations.size()));
    w.insert(w.end(), s.incarnations.begin(), s.incarnations.end());
    return w;
}

bool decode(const std::vector<std::byte>& bytes, FtmpiSnapshot& s)
{
    constexpr std::size_t kHead = 9;
    if (bytes.size() % 4 != 0 || bytes.size() < kHead * 4) {
        return false;
    }
    std::vector<std::int32_t> w(bytes.size() / 4);
    std::memcpy(w.data(), bytes.data(), bytes.size());
    if (w[0] != kStateMagic || w[8] < 0 || static_cast<std::size_t>(w[8]) + kHead >= w.size()) {
        return false;
    }
    const std::size_t nlast = static_cast<std::size_t>(w[8]);
    const std::int32_t ninc = w[kHead + nlast];
    if (ninc < 0 || kHead + nlast + 1 + static_cast<std::size_t>(ninc) != w.size()) {
        return false;
    }
    s.epoch = w[1];
    s.gen_p2p = static_cast<std::uint32_t>(w[2]);
    s.gen_coll = static_cast<std::uint32_t>(w[3]);
    s.modes.comm = static_cast<ft::CommMode>(w[4]);
    s.modes.msg = static_cast<ft::MsgMode>(w[5]);
    s.modes.coll = static_cast<ft::CollMode>(w[6]);
    s.modes.recovery = static_cast<ft::RecoveryMode>(w[7]);
    s.last_ranks.assign(w.begin() + kHead, w.begin() + static_cast<std::ptrdiff_t>(kHead + nlast));
    s.incarnations.assign(w.begin() + static_cast<std::ptrdiff_t>(kHead + nlast + 1), w.end());
    return true;
}

// A bootstrap fence that keeps this process's progress going meanwhile:
// its peers may still need its answers (the recovery agreement's last
// messages, acknowledgements) before they can reach the same fence.
rt::Status fence_progressing()
{
    State& s = state();
    rt::Status st = s.boot->fence_begin();
    if (st.ok()) {
        s.engine.wait([&] {
            st = s.boot->fence_test();
            return st.code() != rt::Errc::again;
        });
    }
    return st;
}

[[noreturn]] void give_up(const std::string& why)
{
    State& s = state();
    s.boot->abort(1, "rank " + std::to_string(s.boot->job().rank) + ": FT-MPI rebuild: " + why);
    ::_exit(1); // abort() does not return
}

} // namespace

std::vector<int> ftmpi_rebuild_replace(const std::vector<int>& removed, FtmpiSnapshot snap)
{
    State& s = state();
    rt::Bootstrap& boot = *s.boot;
    std::vector<int> incarnation(removed.size());
    for (std::size_t i = 0; i < removed.size(); ++i) {
        const int w = removed[i];
        incarnation[i] = s.engine.link(w).peer_incarnation + 1;
        if (!s.engine.replace_peer(w, incarnation[i]).ok()) {
            give_up("a path to rank " + std::to_string(w) +
                    " cannot take a new process (see the error above)");
        }
        if (rt::Status st = boot.respawn(w, incarnation[i]); !st.ok()) {
            give_up(st.code() == rt::Errc::not_supported
                        ? std::string("the launcher (") + boot.name() +
                              ") cannot start processes into a running job; use mpirun"
                        : "cannot ask the launcher to start rank " + std::to_string(w) +
                              " again (" + rt::errc_name(st.code()) + ")");
        }
    }
    const int n = s.engine.size();
    snap.incarnations.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        snap.incarnations[static_cast<std::size_t>(r)] =
            r == s.engine.rank() ? boot.job().incarnation : s.engine.link(r).peer_incarnation;
    }
    const std::vector<std::int32_t> blob = encode(snap);
    if (!boot.put(kStateKey, blob.data(), blob.size() * sizeof(std::int32_t)).ok() ||
        !fence_progressing().ok()) {
        give_up("the launcher's fence failed while the new processes joined");
    }
    std::vector<int> joined;
    for (std::size_t i = 0; i < removed.size(); ++i) {
        const int w = removed[i];
        std::vector<std::byte> v;
        std::int32_t k = -1;
        if (boot.get(w, kIncarnationKey, v).ok() && v.size() == sizeof k) {
            std::memcpy(&k, v.data(), sizeof k);
        }
        if (k != incarnation[i]) {
            // It failed before it joined: still failed here; the launcher
            // has announced it again, and the next recovery replaces it.
            ULMPI_DEBUG("FT-MPI rebuild: rank %d (incarnation %d) did not join", w,
                        incarnation[i]);
            s.engine.mark_peer_failed(w);
            continue;
        }
        if (!s.engine.connect_replaced(w).ok()) {
            give_up("cannot connect to the new process of rank " + std::to_string(w));
        }
        s.detector->revive(w);
        boot.revived(w, incarnation[i]);
        joined.push_back(w);
    }
    if (!fence_progressing().ok()) {
        give_up("the launcher's fence failed while the new processes joined");
    }
    return joined;
}

void ftmpi_rebuild_announce()
{
    State& s = state();
    const std::int32_t k = s.boot->job().incarnation;
    if (k > 0 && !s.boot->put(kIncarnationKey, &k, sizeof k).ok()) {
        give_up("cannot tell the launcher this process's incarnation");
    }
}

bool ftmpi_rebuild_join(FtmpiSnapshot& out)
{
    State& s = state();
    const rt::JobInfo& job = s.boot->job();
    if (job.incarnation == 0 || job.spawned) { // a spawn slot used again is no respawn
        return false;
    }
    // The newest state any survivor published (a process that published an
    // older one and died since is behind).
    bool found = false;
    for (int r = 0; r < job.size; ++r) {
        std::vector<std::byte> v;
        FtmpiSnapshot snap;
        if (r == job.rank || !s.boot->get(r, kStateKey, v).ok() || !decode(v, snap)) {
            continue;
        }
        if (!found || snap.epoch > out.epoch) {
            out = std::move(snap);
            found = true;
        }
    }
    if (!found) {
        give_up("this process replaces a failed one, but no survivor published FT-MPI's state");
    }
    // Before the first progress call: every link in the survivors' epochs.
    for (int r = 0; r < job.size && static_cast<std::size_t>(r) < out.incarnations.size(); ++r) {
        s.engine.set_peer_incarnation(r, out.incarnations[static_cast<std::size_t>(r)]);
    }
    return true;
}

} // namespace ulmpi::mpi
