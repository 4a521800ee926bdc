// Tag matching, independent of paths.
//
// Fragments reach the matcher only in message-sequence order per sender (the
// engine holds back match fragments that arrive ahead of their sequence), so
// MPI's non-overtaking rule reduces to two ordered lists per context:
//   posted      receives in posting order (wildcards included)
//   unexpected  arrived messages in arrival order
// An arrival takes the first posted receive it matches; a new receive takes
// the first unexpected message it matches. Because both lists keep order and
// every sender's messages arrive in sequence, a wildcard receive can never
// let a later message of one sender overtake an earlier one.
#pragma once

#include "runtime/intrusive_list.h"
#include "ulm/message.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace ulmpi::ulm {

inline bool envelope_matches(int want_src, int want_tag, int src, int tag)
{
    return (want_src == kAnySource || want_src == src) && (want_tag == kAnyTag || want_tag == tag);
}

class Matcher {
public:
    Matcher() = default;
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;
    ~Matcher();

    // Returns the first unexpected message `r` matches (removed from the
    // list); otherwise appends `r` to the posted list and returns nullptr.
    // Inline when nothing is stored on the context (a receive posted ahead
    // of its message), else post_search().
    Unexpected* post(RecvMsg* r)
    {
        Context& c = context(r->ctx);
        if (!c.unexpected.empty()) {
            return post_search(c, r);
        }
        c.posted.push_back(r);
        r->posted = true;
        return nullptr;
    }
    // Returns the first posted receive matching an arrived message (removed
    // from the list), or nullptr. Inline when the first posted receive
    // matches (a window of receives from one sender), else arrive_search().
    RecvMsg* arrive(ContextId ctx, int src, int tag)
    {
        Context& c = context(ctx);
        RecvMsg* r = c.posted.front();
        if (r != nullptr && envelope_matches(r->src, r->tag, src, tag)) [[likely]] {
            c.posted.remove(r);
            r->posted = false;
            return r;
        }
        return r == nullptr ? nullptr : arrive_search(c, r, src, tag);
    }
    void add_unexpected(Unexpected* u);
    // First unexpected message matching (src, tag), left in place.
    Unexpected* probe(ContextId ctx, int src, int tag);
    // The unexpected message from `src` with message sequence `msg_seq`
    // (a sender's cancel), left in place.
    Unexpected* find_unexpected(ContextId ctx, int src, std::uint64_t msg_seq);
    // Removes a message found by probe (matched probe: MPI_Mprobe).
    void take(Unexpected* u);
    // Like post(), but a receive that is not served at once goes to the
    // front of the posted list (a receive given back after its sender died:
    // it was first in line).
    Unexpected* post_front(RecvMsg* r);
    // Removes a receive that has not matched yet. false when it is not posted.
    bool cancel(RecvMsg* r);

    // Removes every posted receive `pick` selects and returns them, in
    // posting order within each context.
    template <class Pick> std::vector<RecvMsg*> take_posted(Pick&& pick)
    {
        std::vector<RecvMsg*> out;
        auto scan = [&](Context& c) {
            for (RecvMsg* r = c.posted.front(), *next; r != nullptr; r = next) {
                next = c.posted.next(r);
                if (pick(*r)) {
                    c.posted.remove(r);
                    r->posted = false;
                    out.push_back(r);
                }
            }
        };
        for (auto& c : dense_) {
            if (c) {
                scan(*c);
            }
        }
        for (auto& [id, c] : sparse_) {
            scan(*c);
        }
        return out;
    }

    // Removes every stored message `pick` selects and returns them.
    template <class Pick> std::vector<Unexpected*> take_unexpected(Pick&& pick)
    {
        std::vector<Unexpected*> out;
        auto scan = [&](Context& c) {
            for (Unexpected* u = c.unexpected.front(), *next; u != nullptr; u = next) {
                next = c.unexpected.next(u);
                if (pick(*u)) {
                    c.unexpected.remove(u);
                    out.push_back(u);
                }
            }
        };
        for (auto& c : dense_) {
            if (c) {
                scan(*c);
            }
        }
        for (auto& [id, c] : sparse_) {
            scan(*c);
        }
        return out;
    }
    std::size_t posted_count() const;
    std::size_t unexpected_count() const;
    // Calls fn(const RecvMsg&) for every posted receive and fn(const
    // Unexpected&) for every stored message, context by context (diagnostics).
    template <class Fn> void for_each_posted(Fn&& fn) const
    {
        for_each_context([&](const Context& c) {
            for (RecvMsg* r = c.posted.front(); r != nullptr; r = c.posted.next(r)) {
                fn(*r);
            }
        });
    }
    template <class Fn> void for_each_unexpected(Fn&& fn) const
    {
        for_each_context([&](const Context& c) {
            for (Unexpected* u = c.unexpected.front(); u != nullptr; u = c.unexpected.next(u)) {
                fn(*u);
            }
        });
    }
    // Calls fn(Unexpected*) for every stored message (used at shutdown).
    template <class Fn> void drain_unexpected(Fn&& fn)
    {
        for (auto& c : dense_) {
            if (c) {
                while (Unexpected* u = c->unexpected.pop_front()) {
                    fn(u);
                }
            }
        }
        for (auto& [id, c] : sparse_) {
            while (Unexpected* u = c->unexpected.pop_front()) {
                fn(u);
            }
        }
    }

private:
    struct Context {
        rt::IntrusiveList<RecvMsg, &RecvMsg::hook> posted;
        rt::IntrusiveList<Unexpected, &Unexpected::hook> unexpected;
    };
    static constexpr std::uint32_t kDense = 4096;

    // The context's lists: an inline lookup of a dense context that exists
    // already (every message of the common case), else context_slow().
    Context& context(ContextId id)
    {
        const std::uint32_t v = id.value();
        if (v < dense_.size()) [[likely]] {
            if (Context* c = dense_[v].get()) [[likely]] {
                return *c;
            }
        }
        return context_slow(v);
    }
    Context& context_slow(std::uint32_t v);
    Unexpected* post_search(Context& c, RecvMsg* r);
    // The posted receives after `first` (which does not match).
    RecvMsg* arrive_search(Context& c, RecvMsg* first, int src, int tag);
    template <class Fn> void for_each_context(Fn&& fn) const
    {
        for (const auto& c : dense_) {
            if (c) {
                fn(*c);
            }
        }
        for (const auto& [id, c] : sparse_) {
            fn(*c);
        }
    }

    std::vector<std::unique_ptr<Context>> dense_;
    std::unordered_map<std::uint32_t, std::unique_ptr<Context>> sparse_;
};

} // namespace ulmpi::ulm
