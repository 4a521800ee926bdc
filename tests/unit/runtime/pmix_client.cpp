// A rank of a job started by the PMIx server of pmix_bootstrap_test: it
// starts the bootstrap, prints what it learnt, exchanges one value with the
// other rank and (rank 0) waits for a failure notice, printing one line per
// step for the test to check.
#include "runtime/bootstrap.h"

#include <atomic>
#include <cstdio>
#include <poll.h>
#include <string>
#include <vector>

using namespace ulmpi::rt;

int main()
{
    std::string why;
    std::unique_ptr<Bootstrap> b = make_bootstrap(why);
    if (!b) {
        std::printf("error %s\n", why.c_str());
        return 2;
    }
    const JobInfo& j = b->job();
    std::printf("ready %s rank=%d size=%d node=%d nodes=%d local=%d/%d host=%s jobid=%s\n",
                b->name(), j.rank, j.size, j.node_id, j.num_nodes, j.local_rank, j.local_size,
                j.host.c_str(), j.jobid.c_str());
    std::fflush(stdout);
    std::string mine = "value of rank " + std::to_string(j.rank);
    if (!b->put("x", mine.data(), mine.size()).ok() || !b->fence().ok()) {
        std::printf("error put/fence\n");
        return 3;
    }
    std::vector<std::byte> v;
    int other = 1 - j.rank;
    if (!b->get(other, "x", v).ok()) {
        std::printf("error get\n");
        return 4;
    }
    std::printf("got %.*s\n", static_cast<int>(v.size()), reinterpret_cast<const char*>(v.data()));
    std::fflush(stdout);
    if (j.rank == 0) {
        // The notice word changes first (one load per check, as in ULM's
        // progress loop), then the event is there to read.
        const std::atomic<std::uint64_t>* word = b->notice_word();
        if (word == nullptr) {
            std::printf("error no notice word\n");
            return 6;
        }
        for (int i = 0; i < 20000 && word->load(std::memory_order_acquire) == 0; ++i) {
            ::poll(nullptr, 0, 1);
        }
        unsigned long long seen = word->load(std::memory_order_acquire);
        FailureEvent ev;
        bool got = false;
        for (int i = 0; i < 200 && !got; ++i) {
            got = b->poll_event(ev);
            if (!got) {
                pollfd p{b->event_fd(), POLLIN, 0};
                ::poll(&p, 1, 100);
            }
        }
        if (!got) {
            std::printf("no event\n");
        } else {
            const char* kind = ev.kind == FailureEvent::Kind::rank_failed   ? "rank_failed"
                               : ev.kind == FailureEvent::Kind::host_failed ? "host_failed"
                                                                            : "job_ending";
            std::printf("event %s rank=%d word=%llu %s\n", kind, ev.rank, seen, ev.detail.c_str());
        }
        std::fflush(stdout);
    }
    return b->finalize().ok() ? 0 : 5;
}
