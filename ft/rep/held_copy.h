// A copy of a message the replicator keeps while its send has completed
// (rep_copy_limit): what a substitute would send, or a re-created replica
// asks for. Up to kInline bytes are kept inside (no allocation for a small
// message; the HeldCopy itself comes from a pool, pool.h).
#pragma once

#include "ulm/message.h"

#include <cstddef>
#include <vector>

namespace ulmpi::rep {

struct HeldCopy {
    static constexpr std::size_t kInline = 64;

    int tag = 0;
    ulm::ContextId ctx;

    std::byte* data() { return len_ > kInline ? heap_.data() : inline_; }
    const std::byte* data() const { return len_ > kInline ? heap_.data() : inline_; }
    std::size_t size() const { return len_; }
    void resize(std::size_t n)
    {
        len_ = n;
        if (n > kInline) {
            heap_.resize(n);
        }
    }

private:
    std::size_t len_ = 0;
    std::vector<std::byte> heap_;
    alignas(8) std::byte inline_[kInline];
};

} // namespace ulmpi::rep
