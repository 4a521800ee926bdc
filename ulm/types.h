// Strong integer types for ULM's identifiers, so a context id is never passed
// where a sequence number is expected.
#pragma once

#include <compare>
#include <cstdint>

namespace ulmpi::ulm {

template <class Tag, class T> class Strong {
public:
    constexpr Strong() = default;
    constexpr explicit Strong(T v) : v_(v) {}
    constexpr T value() const { return v_; }
    constexpr auto operator<=>(const Strong&) const = default;
    constexpr Strong& operator++()
    {
        ++v_;
        return *this;
    }

private:
    T v_{};
};

using ContextId = Strong<struct ContextTag, std::uint32_t>;
using MsgSeq = Strong<struct MsgSeqTag, std::uint64_t>;
using FragSeq = Strong<struct FragSeqTag, std::uint64_t>;

inline constexpr int kAnySource = -2; // same value as MPI_ANY_SOURCE by convention only
inline constexpr int kAnyTag = -1;

} // namespace ulmpi::ulm
