#include "ft/rep/ack_ring.h"

#include <bit>

namespace ulmpi::rep {

namespace {

// Calls f(bit) for every set bit of `bits`.
template <class F> void each_bit(std::uint32_t bits, F&& f)
{
    while (bits != 0) {
        const std::uint32_t bit = bits & (~bits + 1);
        f(bit);
        bits &= ~bit;
    }
}

} // namespace

std::uint32_t AckRing::post(std::uint64_t m, std::uint32_t want, std::uint32_t known,
                            ulm::SendMsg* send, std::shared_ptr<HeldCopy> copy, bool keep_copy)
{
    // An early acknowledgement may be in both places (kept aside, then
    // given again once the window had come back down to its number): both
    // are used up.
    std::uint32_t early = 0;
    if (Slot* s = slot(m); s != nullptr) {
        early = s->early & want;
        s->early &= ~early;
    }
    if (!stale_.empty()) [[unlikely]] {
        each_bit(want, [&](std::uint32_t bit) {
            if (stale_.erase({m, bit}) != 0) {
                early |= bit;
            }
        });
    }
    want &= ~(early | known);
    if (m > high_) {
        high_ = m;
    }
    if (want == 0 && !(keep_copy && copy)) {
        trim(); // its slot may hold nothing any more
        return 0;
    }
    Slot& t = make(m);
    if (!t.posted) {
        t.posted = true;
        ++posted_;
    }
    t.e.send = want != 0 ? send : nullptr;
    t.e.copy = std::move(copy);
    t.e.waiting = want;
    return want;
}

AckEntry* AckRing::ack(std::uint64_t m, std::uint32_t bit)
{
    Slot* s = slot(m);
    if (s != nullptr && s->posted) [[likely]] {
        return &s->e;
    }
    if (s != nullptr || m > high_) {
        make(m).early |= bit; // (a sender replica behind its sibling)
    } else {
        stale_.insert({m, bit});
    }
    return nullptr;
}

void AckRing::erase(std::uint64_t m)
{
    Slot* s = slot(m);
    if (s == nullptr || !s->posted) {
        return;
    }
    s->posted = false;
    s->e = AckEntry{};
    --posted_;
    trim();
}

void AckRing::forget_early(std::uint32_t bits)
{
    for (std::size_t i = 0; i < span_; ++i) {
        at(i).early &= ~bits;
    }
    std::erase_if(stale_, [&](const auto& x) { return (x.second & bits) != 0; });
    trim();
}

AckRing::Slot& AckRing::make(std::uint64_t m)
{
    if (span_ == 0) {
        if (slots_.empty()) {
            grow(1);
        }
        head_ = 0;
        base_ = m;
        span_ = 1;
        return at(0);
    }
    if (m < base_) {
        const auto down = static_cast<std::size_t>(base_ - m);
        if (span_ + down > slots_.size()) {
            grow(span_ + down);
        }
        head_ = (head_ - down) & (slots_.size() - 1);
        base_ = m;
        span_ += down;
        return at(0);
    }
    const auto i = static_cast<std::size_t>(m - base_);
    if (i >= span_) {
        if (i + 1 > slots_.size()) {
            grow(i + 1);
        }
        span_ = i + 1;
    }
    return at(i);
}

void AckRing::grow(std::size_t need)
{
    std::vector<Slot> bigger(std::bit_ceil(std::max<std::size_t>(need, 16)));
    for (std::size_t i = 0; i < span_; ++i) {
        bigger[i] = std::move(at(i));
    }
    slots_ = std::move(bigger);
    head_ = 0;
}

void AckRing::trim()
{
    while (span_ > 0) {
        Slot& f = at(0);
        if (f.posted || (f.early != 0 && base_ > high_)) {
            break;
        }
        // Acknowledged early, but at or below the highest number posted: a
        // duplicate or one posted again later (resend); kept aside.
        each_bit(f.early, [&](std::uint32_t bit) { stale_.insert({base_, bit}); });
        f.early = 0;
        head_ = (head_ + 1) & (slots_.size() - 1);
        ++base_;
        --span_;
    }
    while (span_ > 0) {
        const Slot& b = at(span_ - 1);
        if (b.posted || b.early != 0) {
            break;
        }
        --span_;
    }
}

} // namespace ulmpi::rep
