#include "paths/self/self_path.h"

#include "paths/registry.h"
#include "runtime/config.h"

#include <cstring>

namespace ulmpi::path {
namespace {

const rt::SizeParam eager_param{"self_eager_limit", 65536,
                                "messages to oneself up to this size are copied eagerly"};

std::vector<std::unique_ptr<Path>> make_self_paths(const rt::JobInfo& job)
{
    std::vector<std::unique_ptr<Path>> out;
    out.push_back(std::make_unique<SelfPath>(job.rank));
    return out;
}

const Registrar reg{"self", 100, &make_self_paths};

struct SelfFrag final : RxFrag {};

// Remote key of the self path: a list of (address, length) of our own memory.
struct KeyEntry {
    std::uint64_t addr;
    std::uint64_t len;
};

} // namespace

SelfPath::SelfPath(int my_rank) : rank_(my_rank)
{
    info_.name = "self";
    info_.bandwidth_mbs = 1e5;
    info_.latency_us = 0.05;
    info_.eager_limit = eager_param.get();
    info_.max_frag = static_cast<std::uint32_t>(info_.eager_limit + 4096);
    info_.inline_max = info_.max_frag;
    info_.reliable_default = false;
    info_.can_fail = false;
    info_.has_get = true;
}

Status SelfPath::open(rt::Bootstrap&) { return Errc::ok; }
Status SelfPath::connect(rt::Bootstrap&) { return Errc::ok; }
void SelfPath::close() {}

bool SelfPath::acquire(int, std::size_t len, TxBuffer& out)
{
    rt::OptGuard g(q_);
    Frag* f;
    if (!free_.empty()) {
        f = free_.back();
        free_.pop_back();
    } else {
        all_.push_back(std::make_unique<Frag>());
        f = all_.back().get();
    }
    if (f->bytes.size() < len) {
        f->bytes.resize(len);
    }
    out.data = f->bytes.data();
    out.cap = f->bytes.size();
    out.token = reinterpret_cast<std::uintptr_t>(f);
    return true;
}

SendResult SelfPath::commit(int, const TxBuffer& buf, std::size_t len)
{
    Frag* f = reinterpret_cast<Frag*>(buf.token);
    f->len = len;
    rt::OptGuard g(q_);
    queue_.push_back(f);
    queued_.fetch_add(1, std::memory_order_relaxed);
    ++counters_.frags_sent;
    counters_.bytes_sent += len;
    return SendResult::done;
}

std::size_t SelfPath::make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
{
    std::size_t need = static_cast<std::size_t>(iovcnt) * sizeof(KeyEntry);
    if (need > cap) {
        return 0;
    }
    auto* k = static_cast<KeyEntry*>(out);
    for (int i = 0; i < iovcnt; ++i) {
        k[i].addr = reinterpret_cast<std::uint64_t>(iov[i].iov_base);
        k[i].len = iov[i].iov_len;
    }
    return need;
}

Status SelfPath::get(int, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                     const iovec* local, int nlocal)
{
    std::size_t nk = rkey_len / sizeof(KeyEntry);
    if (nk == 0 || rkey == nullptr) {
        return Errc::invalid_arg; // an empty key describes nothing to read
    }
    std::vector<KeyEntry> keys(nk);
    std::memcpy(keys.data(), rkey, nk * sizeof(KeyEntry));
    std::size_t ki = 0;
    std::uint64_t koff = remote_offset;
    while (ki < nk && koff >= keys[ki].len) {
        koff -= keys[ki].len;
        ++ki;
    }
    for (int i = 0; i < nlocal; ++i) {
        auto* dst = static_cast<std::byte*>(local[i].iov_base);
        std::size_t left = local[i].iov_len;
        while (left > 0) {
            if (ki >= nk) {
                return Errc::invalid_arg;
            }
            std::size_t take = static_cast<std::size_t>(keys[ki].len - koff);
            if (take > left) {
                take = left;
            }
            std::memcpy(dst, reinterpret_cast<const std::byte*>(keys[ki].addr) + koff, take);
            dst += take;
            left -= take;
            koff += take;
            counters_.get_bytes += take;
            if (koff == keys[ki].len) {
                ++ki;
                koff = 0;
            }
        }
    }
    ++counters_.gets;
    return Errc::ok;
}

int SelfPath::progress(Sink& sink)
{
    if (queued_.load(std::memory_order_relaxed) == 0) {
        return 0; // nothing queued: no lock touched
    }
    if (!rx_.try_lock()) {
        return 0; // another thread delivers them, in order
    }
    // Deliver what is queued now; fragments queued by the sink while we
    // deliver wait for the next call.
    std::size_t n = 0;
    {
        rt::OptGuard g(q_);
        n = queue_.size();
    }
    for (std::size_t i = 0; i < n; ++i) {
        Frag* f = nullptr;
        {
            rt::OptGuard g(q_);
            f = queue_.front();
            queue_.pop_front();
            queued_.fetch_sub(1, std::memory_order_relaxed);
        }
        SelfFrag rx;
        rx.peer = rank_;
        rx.data = f->bytes.data();
        rx.len = f->len;
        rx.addressable = true;
        ++counters_.frags_received;
        counters_.bytes_received += f->len;
        sink.on_frag(*this, rx);
        rt::OptGuard g(q_);
        free_.push_back(f);
    }
    rx_.unlock();
    return static_cast<int>(n);
}

} // namespace ulmpi::path
