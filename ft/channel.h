// The fault-tolerance control channel: small messages between the ft/
// machinery of two processes (revoke notices, agreement rounds), outside
// every communicator.
//
// They travel as ordinary ULM messages on a context of their own
// (kFtContext, which no communicator uses), so they are reliable, ordered
// per pair and striped and failed over like any other traffic, and need no
// path of their own. One wildcard receive is kept posted on that context;
// the channel's progress hook hands every arrival to the handler of its
// kind and posts the receive again. A send to a process that has failed is
// dropped quietly (the protocols above cope with a silent peer: they learn
// of failures from the detector, not from the channel).
//
// Every message starts with a Header: its kind, the communicator's context
// id and the sequence number of the operation it belongs to; the rest is
// the kind's own payload (bounded by kMaxPayload).
#pragma once

#include "ulm/engine.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ulmpi::ft {

inline constexpr ulm::ContextId kFtContext{0xfff0'0000u};

enum class MsgKind : std::uint8_t { revoke = 1, agree = 2 };

struct Header {
    MsgKind kind;
    std::uint8_t sub;      // the kind's own message type
    std::uint16_t pad;
    std::uint32_t ctx;     // the communicator's point-to-point context id
    std::uint64_t seq;     // which operation on it
};
static_assert(sizeof(Header) == 16);

class Channel final : public ulm::ProgressHook {
public:
    static constexpr std::size_t kMaxPayload = 16384;
    // (sender's world rank, header, payload bytes after the header)
    using Handler = std::function<void(int, const Header&, const std::byte*, std::size_t)>;

    // `slow`: polled every 256th progress call only (a job without fault
    // tolerance, where only a revoke or an MPIX_ call's agreement comes).
    explicit Channel(ulm::Engine& engine, bool slow = false);
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    void on(MsgKind kind, Handler h);
    // Sends header + payload to world rank `to` (quietly nothing when it has failed).
    void send(int to, const Header& h, const void* payload, std::size_t len);
    // Messages handed to handlers so far (for tests).
    std::uint64_t received() const { return received_; }

    int poll() override;

private:
    void post();

    ulm::Engine& engine_;
    std::array<Handler, 4> handlers_{};
    ulm::RecvMsg* rx_ = nullptr;
    std::vector<std::byte> rx_buf_;
    std::vector<std::pair<ulm::SendMsg*, std::vector<std::byte>>> tx_;
    std::uint64_t received_ = 0;
    bool dispatching_ = false;
};

} // namespace ulmpi::ft
