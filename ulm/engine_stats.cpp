// What the engine prints about itself: counters at finalize (--stats) and
// what a rank waits for when a wait lasts too long (ULMPI_ULM_HANG_REPORT_S).
#include "ulm/engine.h"

#include <cinttypes>
#include <cstdio>

namespace ulmpi::ulm {

void Engine::print_stats() const
{
    for (const Peer& p : peers_) {
        const MsgCounters& c = p.counters;
        const Link& l = links_[p.rank];
        if (c.msgs_sent == 0 && c.msgs_received == 0 && l.counters.frags_sent == 0 &&
            l.counters.frags_received == 0) {
            continue;
        }
        const path::Path* via = l.control_path();
        std::fprintf(stderr,
                     "ulmpi-stats rank=%d peer=%d path=%s msgs_sent=%" PRIu64 " msgs_received=%" PRIu64
                     " bytes_received=%" PRIu64 " unexpected=%" PRIu64 " out_of_order=%" PRIu64
                     " get_crc_reused=%" PRIu64 "\n",
                     rank_, p.rank, via != nullptr ? via->info().name : "-", c.msgs_sent, c.msgs_received,
                     c.bytes_received, c.unexpected, c.out_of_order, c.get_crc_reused);
        links_.print_stats(stderr, rank_, p.rank);
    }
    for (const auto& path : paths_) {
        const path::PathCounters& c = path->counters();
        std::fprintf(stderr,
                "ulmpi-stats rank=%d path=%s frags_sent=%" PRIu64 " bytes_sent=%" PRIu64 " frags_received=%" PRIu64
                " bytes_received=%" PRIu64 " send_again=%" PRIu64 " gets=%" PRIu64 " get_bytes=%" PRIu64
                " (%s)\n",
                rank_, path->info().name, c.frags_sent, c.bytes_sent, c.frags_received, c.bytes_received,
                c.send_again, c.gets, c.get_bytes, path->describe());
    }
}

void Engine::print_state(const char* why) const
{
    std::fprintf(stderr, "ulmpi-state rank=%d (%s): posted=%zu unexpected=%zu live_sends=%zu "
                 "send_ids=%zu recv_ids=%zu kept_frags=%zu\n",
                 rank_, why, matcher_.posted_count(), matcher_.unexpected_count(),
                 send_pool_.in_use(), sends_.live(), recvs_.live(), links_.kept_frags());
    for (const Peer& p : peers_) {
        const Link& l = links_[p.rank];
        if (p.pending.empty() && l.ctrl_pending.empty() && l.unacked.empty() && p.ahead.empty() &&
            l.counters.frags_received == 0 && l.counters.frags_sent == 0) {
            continue;
        }
        const SendFrag* o = l.unacked.oldest();
        const Unexpected* a = p.ahead.front();
        std::fprintf(stderr,
                     "ulmpi-state rank=%d peer=%d: pending_sends=%zu ctrl_queued=%zu unacked=%zu "
                     "oldest_seq=%" PRIu64 " oldest_retries=%u backoff=%u next_frag=%" PRIu64
                     " next_msg=%" PRIu64 " expected_msg=%" PRIu64 " ahead=%zu ahead_first=%" PRIu64
                     " received_inorder=%" PRIu64 " delivered_inorder=%" PRIu64
                     " ack_due=%d failed=%d rails_up=%d/%d\n",
                     rank_, p.rank, p.pending.size(), l.ctrl_pending.size(), l.unacked.live(),
                     o != nullptr ? o->seq : 0, o != nullptr ? o->retries : 0, l.backoff,
                     l.next_frag_out.value(), p.next_msg_out.value(), p.expected_in.value(), p.ahead.size(),
                     a != nullptr ? a->hdr.msg_seq : 0, l.received.in_order(), l.delivered.in_order(),
                     l.ack_due ? 1 : 0, l.alive() ? 0 : 1, l.up_rails(), l.nrails);
    }
    // What the program waits for: the first posted receives and stored
    // messages (source and tag as matched: logical ranks when replicated).
    std::size_t shown = 0;
    matcher_.for_each_posted([&](const RecvMsg& r) {
        if (++shown <= 16) {
            std::fprintf(stderr, "ulmpi-state rank=%d posted: src=%d tag=%d ctx=%u\n", rank_, r.src,
                         r.tag, r.ctx.value());
        }
    });
    shown = 0;
    matcher_.for_each_unexpected([&](const Unexpected& u) {
        if (++shown <= 16) {
            std::fprintf(stderr,
                         "ulmpi-state rank=%d unexpected: src=%d tag=%d ctx=%u peer=%d "
                         "rep_seq=%" PRIu64 " bytes=%" PRIu64 "\n",
                         rank_, u.src, u.tag(), u.ctx().value(), u.peer, u.rep_seq, u.hdr.msg_len);
        }
    });
    if (rep_ != nullptr) {
        rep_->print_state();
    }
    print_stats();
}

} // namespace ulmpi::ulm
