// The transmit entries of a provider that does not say when it has none
// left (docs/ofi.md "Which provider"): libfabric 1.17's rxd holds one entry
// for every message sent (fi_inject's too) until the peer acknowledges it,
// and when none is left fi_send answers success and drops the message (a
// missing -FI_EAGAIN in rxd_ep_generic_sendmsg, fixed upstream in 2025;
// fi_inject and fi_read answer -FI_EAGAIN as they should). The path keeps
// the count itself: a send counter bound to the endpoint counts every
// message rxd completes (it frees the entry in the same step, injects
// included), so posted - completed is what rxd holds. take() refuses a
// send (the path answers it as -FI_EAGAIN: backlog) when no entry is free.
//
// Used under the path's provider lock (dom_), like every call into the
// domain. Off (take() always true) for every other provider.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstdint>
#include <string>

namespace ulmpi::path::ofi {

class TxCredits {
public:
    TxCredits() = default;
    TxCredits(const TxCredits&) = delete;
    TxCredits& operator=(const TxCredits&) = delete;
    ~TxCredits() { close(); }

    // Whether `info`'s provider needs the count (rxd).
    static bool needed(const fi_info* info);
    // Opens the counter and binds it to `ep` (before fi_enable), for
    // `entries` transmit entries; false (with the reason) when it cannot.
    bool open(fid_domain* domain, fid_ep* ep, std::size_t entries, std::string& why);
    void close();
    bool on() const { return cntr_ != nullptr; }

    // Before a message send: whether an entry is free (counted as taken).
    bool take();
    // The send just taken was refused by the provider (nothing sent).
    void give_back() { --posted_; }
    std::uint64_t in_flight() const { return posted_ - completed_; }

private:
    fid_cntr* cntr_ = nullptr;
    std::uint64_t limit_ = 0;
    std::uint64_t posted_ = 0;
    std::uint64_t completed_ = 0; // the counter's last value (successes and errors)
};

} // namespace ulmpi::path::ofi
