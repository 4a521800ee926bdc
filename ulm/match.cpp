#include "ulm/match.h"

namespace ulmpi::ulm {

Matcher::~Matcher() = default;

Matcher::Context& Matcher::context_slow(std::uint32_t v)
{
    if (v < kDense) [[likely]] {
        if (v >= dense_.size()) {
            dense_.resize(v + 1);
        }
        auto& c = dense_[v];
        if (!c) {
            c = std::make_unique<Context>();
        }
        return *c;
    }
    auto& c = sparse_[v];
    if (!c) {
        c = std::make_unique<Context>();
    }
    return *c;
}

Unexpected* Matcher::post_search(Context& c, RecvMsg* r)
{
    for (Unexpected* u = c.unexpected.front(); u != nullptr; u = c.unexpected.next(u)) {
        if (envelope_matches(r->src, r->tag, u->source(), u->tag())) {
            c.unexpected.remove(u);
            return u;
        }
    }
    c.posted.push_back(r);
    r->posted = true;
    return nullptr;
}

Unexpected* Matcher::post_front(RecvMsg* r)
{
    Context& c = context(r->ctx);
    for (Unexpected* u = c.unexpected.front(); u != nullptr; u = c.unexpected.next(u)) {
        if (envelope_matches(r->src, r->tag, u->source(), u->tag())) {
            c.unexpected.remove(u);
            return u;
        }
    }
    c.posted.push_front(r);
    r->posted = true;
    return nullptr;
}

RecvMsg* Matcher::arrive_search(Context& c, RecvMsg* first, int src, int tag)
{
    for (RecvMsg* r = c.posted.next(first); r != nullptr; r = c.posted.next(r)) {
        if (envelope_matches(r->src, r->tag, src, tag)) {
            c.posted.remove(r);
            r->posted = false;
            return r;
        }
    }
    return nullptr;
}

void Matcher::add_unexpected(Unexpected* u) { context(u->ctx()).unexpected.push_back(u); }

Unexpected* Matcher::probe(ContextId ctx, int src, int tag)
{
    Context& c = context(ctx);
    for (Unexpected* u = c.unexpected.front(); u != nullptr; u = c.unexpected.next(u)) {
        if (envelope_matches(src, tag, u->source(), u->tag())) {
            return u;
        }
    }
    return nullptr;
}

Unexpected* Matcher::find_unexpected(ContextId ctx, int src, std::uint64_t msg_seq)
{
    Context& c = context(ctx);
    for (Unexpected* u = c.unexpected.front(); u != nullptr; u = c.unexpected.next(u)) {
        if (u->peer == src && u->hdr.msg_seq == msg_seq) {
            return u;
        }
    }
    return nullptr;
}

void Matcher::take(Unexpected* u) { context(u->ctx()).unexpected.remove(u); }

bool Matcher::cancel(RecvMsg* r)
{
    if (!r->posted) {
        return false;
    }
    context(r->ctx).posted.remove(r);
    r->posted = false;
    return true;
}

std::size_t Matcher::posted_count() const
{
    std::size_t n = 0;
    for (const auto& c : dense_) {
        n += c ? c->posted.size() : 0;
    }
    for (const auto& [id, c] : sparse_) {
        n += c->posted.size();
    }
    return n;
}

std::size_t Matcher::unexpected_count() const
{
    std::size_t n = 0;
    for (const auto& c : dense_) {
        n += c ? c->unexpected.size() : 0;
    }
    for (const auto& [id, c] : sparse_) {
        n += c->unexpected.size();
    }
    return n;
}

} // namespace ulmpi::ulm
