// The acknowledgement table's entries for one destination rank (AckTable):
// a ring of slots indexed by message number, from the lowest number kept.
//
// Numbers are posted in increasing order and acknowledged nearly in that
// order, so the numbers kept form a short window: posting the next number
// and releasing one are constant time, with no allocation once the ring
// has grown to the window's size (it doubles when a number falls outside
// and never shrinks). A slot holds a posted entry, or only the replicas
// that acknowledged its number before it was posted (early), or nothing;
// empty slots at either end leave the window.
//
// Early acknowledgements of numbers at or below the highest posted so far
// that fall outside the window (a late duplicate, or a number posted again
// out of order by a resend) are kept aside in a set (`stale`), so that they
// never hold the window's lower end back; they are rare.
#pragma once

#include "ft/rep/held_copy.h"
#include "ulm/message.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace ulmpi::rep {

struct AckEntry {
    ulm::SendMsg* send = nullptr;   // holds the message (nullptr: `copy` does)
    std::shared_ptr<HeldCopy> copy;
    std::uint32_t waiting = 0;      // bit l: replica l of the destination has not acknowledged
};

class AckRing {
    struct Slot {
        AckEntry e;
        std::uint32_t early = 0; // replicas that acknowledged the number before its post
        bool posted = false;
    };

public:
    // Iterates the posted entries in number order as (number, entry) pairs.
    template <bool Const> class Iter {
        using Ring = std::conditional_t<Const, const AckRing, AckRing>;
        using Ref = std::conditional_t<Const, const AckEntry&, AckEntry&>;

    public:
        Iter(Ring* r, std::size_t i) : r_(r), i_(i) { skip(); }
        std::pair<std::uint64_t, Ref> operator*() const
        {
            return {r_->base_ + i_, r_->at(i_).e};
        }
        Iter& operator++()
        {
            ++i_;
            skip();
            return *this;
        }
        bool operator==(const Iter& o) const { return i_ == o.i_; }

    private:
        void skip()
        {
            while (i_ < r_->span_ && !r_->at(i_).posted) {
                ++i_;
            }
        }
        Ring* r_;
        std::size_t i_;
    };

    Iter<false> begin() { return {this, 0}; }
    Iter<false> end() { return {this, span_}; }
    Iter<true> begin() const { return {this, 0}; }
    Iter<true> end() const { return {this, span_}; }
    // Posted entries.
    std::size_t size() const { return posted_; }
    bool empty() const { return posted_ == 0; }
    std::size_t count(std::uint64_t m) const { return find(m) != nullptr ? 1 : 0; }
    AckEntry* find(std::uint64_t m)
    {
        Slot* s = slot(m);
        return s != nullptr && s->posted ? &s->e : nullptr;
    }
    const AckEntry* find(std::uint64_t m) const
    {
        return const_cast<AckRing*>(this)->find(m);
    }

    // Posts m (replacing an entry already posted under that number) to
    // wait for the replicas in `want`: those that acknowledged m early are
    // taken off (their early acknowledgements used up), then those in
    // `known` (known to have m). Returns the replicas it still waits for.
    // Stored when some are left, or, with `keep_copy`, when it has a copy
    // (without its send when nobody waits).
    std::uint32_t post(std::uint64_t m, std::uint32_t want, std::uint32_t known,
                       ulm::SendMsg* send, std::shared_ptr<HeldCopy> copy, bool keep_copy);
    // Replica bit `bit` acknowledged m. The entry, if posted (the caller
    // clears its bit); else the acknowledgement is kept as early: nullptr.
    AckEntry* ack(std::uint64_t m, std::uint32_t bit);
    // Removes the entry of m (after its last acknowledgement).
    void erase(std::uint64_t m);
    // Removes every posted entry for which `drop(entry)` says so.
    template <class F> void erase_if(F&& drop)
    {
        for (std::size_t i = 0; i < span_; ++i) {
            Slot& s = at(i);
            if (s.posted && drop(s.e)) {
                s.posted = false;
                s.e = AckEntry{};
                --posted_;
            }
        }
        trim();
    }
    // Forgets the early acknowledgements of the replicas in `bits`.
    void forget_early(std::uint32_t bits);
    // Slots in the window (posted, early or empty): what the ring spans.
    std::size_t span() const { return span_; }
    // Early acknowledgements kept aside (see above).
    std::size_t stale() const { return stale_.size(); }

private:
    Slot& at(std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    const Slot& at(std::size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    Slot* slot(std::uint64_t m)
    {
        return span_ != 0 && m >= base_ && m - base_ < span_ ? &at(static_cast<std::size_t>(m - base_)) : nullptr;
    }
    // The slot of m, the window extended to it.
    Slot& make(std::uint64_t m);
    void grow(std::size_t need);
    // Drops the empty slots at both ends, and early-only ones at the lower
    // end below the highest number posted (into stale_).
    void trim();

    std::vector<Slot> slots_; // a power of two of them, or none
    std::size_t head_ = 0;    // the slot of base_
    std::uint64_t base_ = 0;  // the lowest number in the window
    std::size_t span_ = 0;    // numbers base_ .. base_ + span_ - 1
    std::size_t posted_ = 0;
    std::uint64_t high_ = 0;  // the highest number ever posted
    std::set<std::pair<std::uint64_t, std::uint32_t>> stale_; // (number, replica bit)
};

} // namespace ulmpi::rep
