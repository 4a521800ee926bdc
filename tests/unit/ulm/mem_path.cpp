#include "mem_path.h"

#include "ulm/wire.h"

#include <algorithm>
#include <cstring>

namespace ulmpi::test {
namespace {

struct KeyEntry {
    std::uint64_t addr;
    std::uint64_t len;
};

// A received fragment. When the payload is not addressable, `data` holds
// only a copy of the header and read_payload() copies from the real bytes.
struct MemRx final : path::RxFrag {
    const std::byte* payload = nullptr;
    std::size_t payload_len = 0;

    std::size_t read_payload(std::size_t offset, const iovec* iov, int iovcnt) override
    {
        std::size_t done = 0;
        for (int i = 0; i < iovcnt; ++i) {
            std::size_t n = iov[i].iov_len;
            if (offset + done + n > payload_len) {
                n = payload_len > offset + done ? payload_len - offset - done : 0;
            }
            std::memcpy(iov[i].iov_base, payload + offset + done, n);
            done += n;
        }
        return done;
    }
};

} // namespace

MemPath::MemPath(MemFabric& fabric, int rank, MemPathOptions opt)
    : fabric_(fabric), rank_(rank), opt_(opt), rng_(opt.seed)
{
    info_.name = opt_.name;
    info_.bandwidth_mbs = opt_.bandwidth_mbs;
    info_.latency_us = opt_.latency_us;
    info_.max_frag = opt_.max_frag;
    info_.inline_max = opt_.inline_max;
    info_.line_bytes = opt_.line_bytes;
    info_.line_skew = opt_.line_skew;
    info_.eager_limit = opt_.eager_limit;
    info_.reliable_default = opt_.reliable;
    info_.has_get = opt_.has_get;
    info_.get_max = opt_.get_max;
    info_.get_depth = opt_.has_get ? opt_.get_depth : 0;
    info_.order = opt_.claim_order.value_or(opt_.order == Order::fifo ? path::PathInfo::Order::total
                                                                       : path::PathInfo::Order::none);
}

MemPath::~MemPath() { close(); }

rt::Status MemPath::open(rt::Bootstrap& boot)
{
    std::lock_guard lock(fabric_.mu);
    const std::size_t n = static_cast<std::size_t>(boot.job().size);
    if (fabric_.by_rank.size() < n) {
        fabric_.by_rank.resize(n, nullptr);
    }
    fabric_.by_rank[static_cast<std::size_t>(rank_)] = this;
    reach_.assign(n, false);
    in_flight_.assign(n, 0);
    opened_ = true;
    std::int32_t me = rank_;
    return boot.put(std::string("mem.addr.") + opt_.name, &me, sizeof me);
}

rt::Status MemPath::connect(rt::Bootstrap& boot)
{
    // A peer is reachable when it published its address before the fence.
    for (int r = 0; r < boot.job().size; ++r) {
        std::vector<std::byte> v;
        if (boot.get(r, std::string("mem.addr.") + opt_.name, v).ok() && v.size() == sizeof(std::int32_t)) {
            std::int32_t who;
            std::memcpy(&who, v.data(), sizeof who);
            reach_[static_cast<std::size_t>(r)] = who == r && (opt_.reach_self || r != rank_);
        }
    }
    return rt::Errc::ok;
}

void MemPath::close()
{
    std::lock_guard lock(fabric_.mu);
    if (opened_ && static_cast<std::size_t>(rank_) < fabric_.by_rank.size() &&
        fabric_.by_rank[static_cast<std::size_t>(rank_)] == this) {
        fabric_.by_rank[static_cast<std::size_t>(rank_)] = nullptr;
    }
    opened_ = false;
}

bool MemPath::can_reach(int peer) const
{
    return peer >= 0 && static_cast<std::size_t>(peer) < reach_.size() &&
           reach_[static_cast<std::size_t>(peer)];
}

MemPath::Frag* MemPath::new_frag(std::size_t len)
{
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
    f->len = 0;
    f->cap = len;
    f->credited = false;
    f->src = -1;
    return f;
}

void MemPath::free_frag(Frag* f) { free_.push_back(f); }

bool MemPath::acquire(int peer, std::size_t len, path::TxBuffer& out)
{
    std::lock_guard lock(fabric_.mu);
    if (len > info_.max_frag) {
        ++violations_;
        return false;
    }
    if (opt_.capacity != 0 && in_flight_[static_cast<std::size_t>(peer)] >= opt_.capacity) {
        ++counters_.send_again;
        return false;
    }
    Frag* f = new_frag(len);
    out.data = f->bytes.data();
    out.cap = len;
    out.token = reinterpret_cast<std::uintptr_t>(f);
    return true;
}

path::SendResult MemPath::commit(int peer, const path::TxBuffer& buf, std::size_t len)
{
    std::lock_guard lock(fabric_.mu);
    Frag* mine = reinterpret_cast<Frag*>(buf.token);
    if (len > mine->cap) {
        ++violations_;
    }
    MemPath* dst = fabric_.by_rank[static_cast<std::size_t>(peer)];
    if (dst == nullptr || opt_.refuse_send) {
        free_frag(mine);
        return path::SendResult::failed;
    }
    if (fabric_.logging) {
        fabric_.log.push_back(
            {rank_, peer,
             std::vector<std::byte>(mine->bytes.begin(),
                                    mine->bytes.begin() + static_cast<std::ptrdiff_t>(len))});
    }
    // Copy into the receiver's own buffer (the sender's one is free again),
    // maybe twice, maybe damaged, maybe not at all.
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    int copies = 1;
    if (opt_.fault) {
        std::vector<std::byte> bytes(mine->bytes.begin(),
                                     mine->bytes.begin() + static_cast<std::ptrdiff_t>(len));
        copies = opt_.fault(rank_, peer, bytes);
        std::memcpy(mine->bytes.data(), bytes.data(), len);
        faults_.dropped += copies == 0 ? 1 : 0;
        faults_.duplicated += copies == 2 ? 1 : 0;
    }
    if (copies == 1 && opt_.drop > 0 && coin(rng_) < opt_.drop) {
        copies = 0;
        ++faults_.dropped;
    } else if (copies == 1 && opt_.duplicate > 0 && coin(rng_) < opt_.duplicate) {
        copies = 2;
        ++faults_.duplicated;
    }
    for (int i = 0; i < copies; ++i) {
        Frag* f = dst->new_frag(len);
        std::memcpy(f->bytes.data(), mine->bytes.data(), len);
        if (opt_.corrupt > 0 && len > 0 && coin(rng_) < opt_.corrupt) {
            f->bytes[rng_() % len] ^= static_cast<std::byte>(1u << (rng_() % 8));
            ++faults_.corrupted;
        }
        f->len = len;
        f->src = rank_;
        f->credited = true;
        dst->inbox_.push_back(f);
        ++in_flight_[static_cast<std::size_t>(peer)];
    }
    free_frag(mine);
    ++counters_.frags_sent;
    counters_.bytes_sent += len;
    return path::SendResult::done;
}

void MemPath::inject(int from, const std::byte* bytes, std::size_t len)
{
    std::lock_guard lock(fabric_.mu);
    Frag* f = new_frag(len);
    std::memcpy(f->bytes.data(), bytes, len);
    f->len = len;
    f->src = from;
    f->credited = false;
    inbox_.push_back(f);
}

std::size_t MemPath::make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
{
    std::size_t need = static_cast<std::size_t>(iovcnt) * sizeof(KeyEntry);
    if (!opt_.has_get || need > cap) {
        return 0;
    }
    auto* p = static_cast<std::byte*>(out);
    for (int i = 0; i < iovcnt; ++i) {
        KeyEntry e{reinterpret_cast<std::uint64_t>(iov[i].iov_base), iov[i].iov_len};
        std::memcpy(p + static_cast<std::size_t>(i) * sizeof e, &e, sizeof e);
    }
    return need;
}

rt::Status MemPath::get(int, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                        const iovec* local, int nlocal)
{
    const auto* k = static_cast<const std::byte*>(rkey);
    return copy_get(std::vector<std::byte>(k, k + rkey_len), remote_offset,
                    std::vector<iovec>(local, local + nlocal));
}

rt::Status MemPath::start_get(int, const void* rkey, std::size_t rkey_len,
                              std::uint64_t remote_offset, const iovec* local, int nlocal,
                              std::uint64_t token)
{
    if (opt_.get_depth == 0) {
        return rt::Errc::not_supported;
    }
    if (rkey_len % sizeof(KeyEntry) != 0) {
        return rt::Errc::protocol;
    }
    if (reads_.size() >= opt_.get_depth) {
        return rt::Errc::again;
    }
    const auto* k = static_cast<const std::byte*>(rkey);
    reads_.push_back(Read{std::vector<std::byte>(k, k + rkey_len), remote_offset,
                          std::vector<iovec>(local, local + nlocal), token});
    max_queued_ = std::max(max_queued_, reads_.size());
    return rt::Errc::ok;
}

rt::Status MemPath::copy_get(const std::vector<std::byte>& key, std::uint64_t remote_offset,
                             const std::vector<iovec>& local)
{
    if (fail_get_ || reads_ended_++ >= opt_.fail_get_after) {
        ++gets_failed_;
        return rt::Errc::io_error;
    }
    if (key.size() % sizeof(KeyEntry) != 0) {
        return rt::Errc::protocol;
    }
    std::vector<KeyEntry> keys(key.size() / sizeof(KeyEntry));
    std::memcpy(keys.data(), key.data(), key.size());
    std::size_t ki = 0;
    std::uint64_t koff = remote_offset;
    while (ki < keys.size() && koff >= keys[ki].len) {
        koff -= keys[ki].len;
        ++ki;
    }
    for (const iovec& l : local) {
        auto* dst = static_cast<std::byte*>(l.iov_base);
        std::size_t left = l.iov_len;
        while (left > 0) {
            if (ki >= keys.size()) {
                return rt::Errc::protocol; // reading past the described memory
            }
            std::size_t take = static_cast<std::size_t>(keys[ki].len - koff);
            take = take < left ? take : left;
            std::memcpy(dst, reinterpret_cast<const std::byte*>(keys[ki].addr) + koff, take);
            dst += take;
            left -= take;
            koff += take;
            if (koff == keys[ki].len) {
                ++ki;
                koff = 0;
            }
        }
    }
    if (gets_corrupted_ < opt_.corrupt_gets) {
        for (const iovec& l : local) {
            if (l.iov_len > 0) {
                *static_cast<std::byte*>(l.iov_base) ^= std::byte{0x10};
                ++gets_corrupted_;
                break;
            }
        }
    }
    ++gets_;
    ++counters_.gets;
    return rt::Errc::ok;
}

void MemPath::deliver(Frag* f, path::Sink& sink)
{
    MemRx rx;
    rx.peer = f->src;
    rx.len = f->len;
    const auto type = f->len >= 2 ? static_cast<ulm::FragType>(f->bytes[1]) : ulm::FragType::ack;
    const bool hide = opt_.unaddressable == Unaddressable::all ||
                      (opt_.unaddressable == Unaddressable::data && type == ulm::FragType::data);
    const std::size_t hlen = ulm::header_size(type);
    std::vector<std::byte> header_copy;
    if (hide && hlen != 0 && f->len >= hlen) {
        // Only the header is readable at `data`; what follows is poison, so
        // an engine that reads the payload there gets wrong bytes.
        header_copy.assign(f->len, std::byte{0xee});
        std::memcpy(header_copy.data(), f->bytes.data(), hlen);
        rx.data = header_copy.data();
        rx.addressable = false;
        rx.payload = f->bytes.data() + hlen;
        rx.payload_len = f->len - hlen;
    } else {
        rx.data = f->bytes.data();
        rx.addressable = true;
    }
    ++counters_.frags_received;
    counters_.bytes_received += f->len;
    sink.on_frag(*this, rx);
    if (f->credited) {
        if (MemPath* src = fabric_.by_rank[static_cast<std::size_t>(f->src)]) {
            --src->in_flight_[static_cast<std::size_t>(rank_)];
        }
    }
    free_frag(f);
}

bool MemPath::abandon_gets(int)
{
    std::lock_guard lock(fabric_.mu);
    for (Read& rd : reads_) {
        given_up_.push_back(rd.token);
        ++gets_failed_;
        orphans_.push_back(std::move(rd));
    }
    reads_.clear();
    return true;
}

void MemPath::land_orphans()
{
    std::lock_guard lock(fabric_.mu);
    for (const Read& rd : orphans_) {
        (void)copy_get(rd.key, rd.offset, rd.local);
    }
    orphans_.clear();
}

int MemPath::progress(path::Sink& sink)
{
    std::lock_guard lock(fabric_.mu);
    int ended = 0;
    if (!given_up_.empty()) {
        std::vector<std::uint64_t> tokens;
        tokens.swap(given_up_);
        for (std::uint64_t t : tokens) {
            sink.on_get_done(*this, t, rt::Errc::io_error);
        }
        ended = static_cast<int>(tokens.size());
    } else if (!reads_.empty() && !hold_reads_) {
        // One read ends per call, copied now (fail_get as it is now).
        Read rd = std::move(reads_.front());
        reads_.pop_front();
        const rt::Status st = copy_get(rd.key, rd.offset, rd.local);
        sink.on_get_done(*this, rd.token, st);
        ended = 1;
    }
    if (paused_ || inbox_.empty()) {
        return ended;
    }
    // Only fragments queued now; those the sink sends to us meanwhile wait
    // for the next call (they are appended behind these).
    const std::size_t avail = inbox_.size();
    std::size_t n = avail;
    if (opt_.max_per_progress != 0 && n > opt_.max_per_progress) {
        n = opt_.max_per_progress;
    }
    std::size_t bytes = 0;
    for (std::size_t done = 0; done < n; ++done) {
        if (opt_.max_bytes_per_progress != 0 && bytes >= opt_.max_bytes_per_progress) {
            n = done;
            break;
        }
        const std::size_t remaining = avail - done; // queued before this call, still here
        std::size_t idx = 0;
        if (opt_.order == Order::newest_first) {
            idx = remaining - 1;
        } else if (opt_.order == Order::random) {
            idx = rng_() % remaining;
        }
        Frag* f = inbox_[idx];
        inbox_.erase(inbox_.begin() + static_cast<std::ptrdiff_t>(idx));
        bytes += f->len;
        deliver(f, sink);
    }
    return static_cast<int>(n) + ended;
}

} // namespace ulmpi::test
