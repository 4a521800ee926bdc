#include "ft/channel.h"

#include "runtime/log.h"
#include "ulm/packer.h"

#include <cstring>

namespace ulmpi::ft {

Channel::Channel(ulm::Engine& engine, bool slow) : engine_(engine)
{
    rx_buf_.resize(sizeof(Header) + kMaxPayload);
    post();
    if (slow) {
        engine_.add_slow_progress_hook(this);
    } else {
        engine_.add_progress_hook(this);
    }
}

Channel::~Channel()
{
    engine_.remove_progress_hook(this);
    if (rx_ != nullptr) {
        if (!engine_.cancel(rx_) && !rx_->complete) {
            engine_.withdraw(*rx_);
        }
        engine_.release(rx_);
        rx_ = nullptr;
    }
    for (auto& [s, bytes] : tx_) {
        engine_.release(s);
    }
}

void Channel::on(MsgKind kind, Handler h)
{
    handlers_[static_cast<std::size_t>(kind) % handlers_.size()] = std::move(h);
}

void Channel::post()
{
    const ulm::DataRef ref{rx_buf_.data(), rx_buf_.size(), &ulm::bytes_layout()};
    if (!engine_.irecv(ref, ulm::kAnySource, ulm::kAnyTag, kFtContext, &rx_).ok()) {
        rt::fatal("fault tolerance: cannot post the control channel's receive");
    }
}

void Channel::send(int to, const Header& h, const void* payload, std::size_t len)
{
    if (len > kMaxPayload || to < 0 || to >= engine_.size() || engine_.peer_failed(to)) {
        return;
    }
    std::vector<std::byte> bytes(sizeof h + len);
    std::memcpy(bytes.data(), &h, sizeof h);
    if (len > 0) {
        std::memcpy(bytes.data() + sizeof h, payload, len);
    }
    const ulm::DataRef ref{bytes.data(), bytes.size(), &ulm::bytes_layout()};
    ulm::SendMsg* s = nullptr;
    if (!engine_.isend(ref, to, 0, kFtContext, ulm::SendMode::standard, &s).ok()) {
        return; // failed meanwhile
    }
    if (s->complete) {
        engine_.release(s);
        return;
    }
    tx_.emplace_back(s, std::move(bytes)); // the buffer lives until the send completes
}

int Channel::poll()
{
    int n = 0;
    for (std::size_t i = 0; i < tx_.size();) {
        if (tx_[i].first->complete) {
            engine_.release(tx_[i].first);
            tx_[i] = std::move(tx_.back());
            tx_.pop_back();
            ++n;
        } else {
            ++i;
        }
    }
    // A handler may send, and sending may progress: no re-entry.
    if (dispatching_) {
        return n;
    }
    dispatching_ = true;
    while (rx_ != nullptr && rx_->complete) {
        ulm::RecvMsg* r = rx_;
        rx_ = nullptr;
        const int from = r->env.source;
        const std::size_t len = r->error == rt::Errc::ok ? r->received : 0;
        std::vector<std::byte> msg(rx_buf_.begin(), rx_buf_.begin() + static_cast<std::ptrdiff_t>(len));
        engine_.release(r);
        post();
        if (len >= sizeof(Header)) {
            Header h;
            std::memcpy(&h, msg.data(), sizeof h);
            const Handler& fn = handlers_[static_cast<std::size_t>(h.kind) % handlers_.size()];
            if (fn) {
                ++received_;
                fn(from, h, msg.data() + sizeof h, len - sizeof h);
            }
        } else if (len > 0) {
            ULMPI_DEBUG("fault tolerance: dropped a %zu-byte control message from rank %d", len, from);
        }
        ++n;
    }
    dispatching_ = false;
    return n;
}

} // namespace ulmpi::ft
