#include "paths/lossy/lossy_path.h"

#include "paths/registry.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace ulmpi::path {

// A private copy of a received fragment, delivered as addressable bytes.
struct LossyPath::RxCopy {
    std::vector<std::byte> bytes;
    std::size_t len = 0;
    std::size_t hlen = 0;
    int peer = -1;
};

struct LossyPath::TxFrag {
    std::vector<std::byte> bytes;
    std::size_t len = 0;
    int peer = -1;
    Lane lane = Lane::control;
    int copies = 0; // sends still to make (2 for a duplicate)
};

// What the inner path's progress() delivers to: the decorator's receive side.
class LossyPath::RxSink final : public Sink {
public:
    RxSink(LossyPath& owner, Sink& up) : owner_(owner), up_(up) {}
    void on_frag(Path&, RxFrag& frag) override { owner_.on_rx(up_, frag); }
    void on_path_down(Path&, int peer) override { up_.on_path_down(owner_, peer); }
    void on_path_up(Path&, int peer) override { up_.on_path_up(owner_, peer); }
    void on_get_done(Path&, std::uint64_t token, Status st) override
    {
        owner_.on_get_done(up_, token, st);
    }

private:
    LossyPath& owner_;
    Sink& up_;
};

namespace {

// ---------------------------------------------------------------------------
// Parameters

// A text parameter whose value is checked when it is loaded, so that
// config_validate (MPI_Init) reports a malformed value by name.
class CheckedTextParam final : public rt::ParamBase {
public:
    using Check = bool (*)(std::string_view text, std::string& why);
    CheckedTextParam(const char* name, const char* def, const char* help, Check check)
        : ParamBase(name, rt::ParamKind::text, help), default_(def), value_(def), check_(check)
    {
    }
    const std::string& get() const
    {
        load_once();
        return value_;
    }
    // Why the environment value was refused ("" when it was not).
    const std::string& error() const
    {
        load_once();
        return error_;
    }
    std::string default_text() const override { return default_; }
    std::string value_text() const override { return get(); }
    bool reload(std::string& why) override
    {
        value_ = default_;
        error_.clear();
        const char* e = env_value();
        if (e == nullptr) {
            return true;
        }
        if (!check_(e, error_)) {
            why = std::string("'") + e + "': " + error_;
            error_ = why;
            return false;
        }
        value_ = e;
        return true;
    }

private:
    std::string default_;
    std::string value_;
    std::string error_;
    Check check_;
};

bool check_spec(std::string_view text, std::string& why)
{
    LossyConfig cfg;
    return parse_lossy_spec(text, cfg, why);
}

std::vector<std::string> split(std::string_view s)
{
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= s.size()) {
        std::size_t comma = s.find(',', pos);
        std::string_view item = s.substr(pos, comma == s.npos ? s.npos : comma - pos);
        while (!item.empty() && item.front() == ' ') {
            item.remove_prefix(1);
        }
        while (!item.empty() && item.back() == ' ') {
            item.remove_suffix(1);
        }
        if (!item.empty()) {
            out.emplace_back(item);
        }
        if (comma == s.npos) {
            break;
        }
        pos = comma + 1;
    }
    return out;
}

bool check_paths(std::string_view text, std::string& why)
{
    std::vector<std::string> names = split(text);
    if (names.size() == 1 && names[0] == "all") {
        return true;
    }
    for (const std::string& n : names) {
        auto reg = registered_paths();
        auto same = [&](const RegisteredPath& r) { return n == r.name; };
        if (std::none_of(reg.begin(), reg.end(), same)) {
            why = "unknown path '" + n + "' (built paths:";
            for (const auto& r : reg) {
                why += std::string(" ") + r.name;
            }
            why += "; or 'all')";
            return false;
        }
    }
    return true;
}

const CheckedTextParam spec_param{
    "path_lossy", "",
    "inject faults into path fragments: drop:P,corrupt:P,dup:P,reorder:P,delay:P,seed:N"
    "[,hold_us:N,depth:N,queue:N] (empty: off; docs/fault_injection.md)",
    &check_spec};
const CheckedTextParam paths_param{
    "path_lossy_paths", "",
    "paths the lossy decorator wraps: comma-separated names or 'all' (empty: all but self)",
    &check_paths};
const rt::ChoiceParam dir_param{"path_lossy_dir", "both",
                                "directions the lossy decorator faults: both|tx|rx", "both|tx|rx"};

const DecoratorRegistrar reg{"lossy", &lossy_decorate};

// ---------------------------------------------------------------------------
// Counters of every decorator of the process, and ULM's header length.

LossyCounters g_counters;
// Atomic for the same reason as path.cpp's frag header length: several
// engines in one process (unit tests) install it at once.
std::atomic<HeaderLengthFn> g_header_length{nullptr};

std::uint64_t splitmix64(std::uint64_t& state)
{
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t mix(std::uint64_t v)
{
    return splitmix64(v);
}

std::uint64_t fnv1a(const char* s)
{
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (; s != nullptr && *s != '\0'; ++s) {
        h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ULL;
    }
    return h;
}

// p in [0, 1] as a threshold against a uniform 64-bit draw.
std::uint64_t threshold(double p)
{
    if (p <= 0) {
        return 0;
    }
    if (p >= 1) {
        return std::numeric_limits<std::uint64_t>::max();
    }
    return static_cast<std::uint64_t>(std::ldexp(p, 64));
}

// Header length of a fragment as the decorator splits it; 0 when a
// non-addressable fragment cannot be split (so it cannot be copied).
std::size_t header_length(const std::byte* data, std::size_t len, bool addressable)
{
    if (HeaderLengthFn fn = g_header_length.load(std::memory_order_relaxed); fn != nullptr) {
        std::size_t h = fn(data, len);
        if (h != 0 && h <= len) {
            return h;
        }
        return addressable ? len : 0; // not a fragment ULM knows: all of it is "header"
    }
    return addressable ? std::min(len, kLossyFallbackHeader) : 0;
}

bool parse_u64(std::string_view v, std::uint64_t& out)
{
    std::string s(v);
    if (s.empty() || s[0] == '-') {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long x = std::strtoull(s.c_str(), &end, 0);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    out = x;
    return true;
}

struct CopyFrag final : RxFrag {
    std::size_t hlen = 0;
    std::size_t read_payload(std::size_t offset, const iovec* iov, int iovcnt) override
    {
        std::size_t plen = len - hlen;
        std::size_t done = 0;
        for (int i = 0; i < iovcnt && offset + done < plen; ++i) {
            std::size_t n = std::min(iov[i].iov_len, plen - offset - done);
            std::memcpy(iov[i].iov_base, data + hlen + offset + done, n);
            done += n;
        }
        return done;
    }
};

} // namespace

// ---------------------------------------------------------------------------
// Configuration text

bool parse_lossy_spec(std::string_view text, LossyConfig& out, std::string& why)
{
    LossyConfig cfg = out;
    for (const std::string& item : split(text)) {
        std::size_t colon = item.find(':');
        if (colon == std::string::npos) {
            why = "'" + item + "' is not key:value (keys: drop, corrupt, dup, reorder, delay, "
                  "seed, hold_us, depth, queue)";
            return false;
        }
        std::string key = item.substr(0, colon);
        std::string val = item.substr(colon + 1);
        double* rate = key == "drop"                         ? &cfg.drop
                       : key == "corrupt"                    ? &cfg.corrupt
                       : key == "dup" || key == "duplicate"  ? &cfg.dup
                       : key == "reorder"                    ? &cfg.reorder
                       : key == "delay"                      ? &cfg.delay
                                                             : nullptr;
        if (rate != nullptr) {
            double p = 0;
            if (!rt::parse_real(val, p) || !(p >= 0 && p <= 1)) {
                why = key + " rate '" + val + "' is not a probability between 0 and 1";
                return false;
            }
            *rate = p;
            continue;
        }
        std::uint64_t n = 0;
        if (key == "seed") {
            if (!parse_u64(val, n)) {
                why = "seed '" + val + "' is not a non-negative integer";
                return false;
            }
            cfg.seed = n;
        } else if (key == "hold_us") {
            if (!parse_u64(val, n) || n < 1 || n > 1000000) {
                why = "hold_us '" + val + "' is not between 1 and 1000000 (microseconds)";
                return false;
            }
            cfg.hold_us = static_cast<std::uint32_t>(n);
        } else if (key == "depth") {
            if (!parse_u64(val, n) || n < 1 || n > 1024) {
                why = "depth '" + val + "' is not between 1 and 1024";
                return false;
            }
            cfg.depth = static_cast<std::uint32_t>(n);
        } else if (key == "queue") {
            if (!parse_u64(val, n) || n < 2 || n > (1u << 20)) {
                why = "queue '" + val + "' is not between 2 and 1048576 (fragments)";
                return false;
            }
            cfg.queue = static_cast<std::uint32_t>(n);
        } else {
            why = "unknown key '" + key + "' (keys: drop, corrupt, dup, reorder, delay, seed, "
                  "hold_us, depth, queue)";
            return false;
        }
    }
    double sum = cfg.drop + cfg.corrupt + cfg.dup + cfg.reorder + cfg.delay;
    if (sum > 1 + 1e-9) {
        char buf[128];
        std::snprintf(buf, sizeof buf,
                      "the rates add up to %g; a fragment suffers at most one fault, so they "
                      "must not exceed 1",
                      sum);
        why = buf;
        return false;
    }
    out = cfg;
    return true;
}

LossyFaults& LossyFaults::operator+=(const LossyFaults& o)
{
    frags += o.frags;
    dropped += o.dropped;
    duplicated += o.duplicated;
    reordered += o.reordered;
    delayed += o.delayed;
    corrupted_header += o.corrupted_header;
    corrupted_payload += o.corrupted_payload;
    return *this;
}

LossyCounters lossy_counters() { return g_counters; }
void reset_lossy_counters() { g_counters = LossyCounters{}; }
void set_lossy_header_length(HeaderLengthFn fn)
{
    g_header_length.store(fn, std::memory_order_relaxed);
}

std::unique_ptr<Path> lossy_decorate(std::unique_ptr<Path> inner, const rt::JobInfo& job)
{
    const std::string& spec = spec_param.get();
    if (!spec_param.error().empty()) {
        // MPI_Init's config_validate reports this first; reaching here means a
        // caller skipped it. Running without the faults asked for would
        // silently test nothing.
        rt::fatal("ULMPI_PATH_LOSSY: %s", spec_param.error().c_str());
    }
    if (spec.empty() || inner == nullptr) {
        return inner;
    }
    if (!paths_param.error().empty()) {
        rt::fatal("ULMPI_PATH_LOSSY_PATHS: %s", paths_param.error().c_str());
    }
    const char* name = inner->info().name;
    std::vector<std::string> wanted = split(paths_param.get());
    bool wrap = wanted.empty() ? std::strcmp(name, "self") != 0
                               : (wanted.size() == 1 && wanted[0] == "all") ||
                                     std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    if (!wrap) {
        return inner;
    }
    LossyConfig cfg;
    std::string why;
    if (!parse_lossy_spec(spec, cfg, why)) {
        rt::fatal("ULMPI_PATH_LOSSY: %s", why.c_str()); // checked above; cannot happen
    }
    const std::string& dir = dir_param.get();
    cfg.tx = dir != "rx";
    cfg.rx = dir != "tx";
    ULMPI_INFO("lossy: faults on path %s (%s, direction %s)", name, spec.c_str(), dir.c_str());
    return std::make_unique<LossyPath>(std::move(inner), cfg, job.rank);
}

// ---------------------------------------------------------------------------
// LossyPath

LossyPath::LossyPath(std::unique_ptr<Path> inner, const LossyConfig& cfg, int my_rank)
    : inner_(std::move(inner)), cfg_(cfg), rank_(my_rank)
{
    t_drop_ = threshold(cfg_.drop);
    t_corrupt_ = threshold(cfg_.drop + cfg_.corrupt);
    t_dup_ = threshold(cfg_.drop + cfg_.corrupt + cfg_.dup);
    t_reorder_ = threshold(cfg_.drop + cfg_.corrupt + cfg_.dup + cfg_.reorder);
    t_delay_ = threshold(cfg_.drop + cfg_.corrupt + cfg_.dup + cfg_.reorder + cfg_.delay);
    any_fault_ = t_delay_ != 0;
    // seed ^ rank, then one independent stream per (direction, path, peer).
    std::uint64_t s = mix(cfg_.seed ^ static_cast<std::uint64_t>(rank_)) ^
                      fnv1a(inner_->info().name);
    base_[tx_dir] = mix(s ^ 0x7478'7478'7478'7478ULL);
    base_[rx_dir] = mix(s ^ 0x7278'7278'7278'7278ULL);
    cfg_.queue = std::max<std::uint32_t>(cfg_.queue, 2);
    cfg_.depth = std::max<std::uint32_t>(cfg_.depth, 1);
    cfg_.hold_us = std::max<std::uint32_t>(cfg_.hold_us, 1);
}

LossyPath::~LossyPath() = default;

const PathInfo& LossyPath::info() const
{
    info_ = inner_->info(); // the inner path fills some of it in only when it connects
    if (cfg_.reorder > 0 || cfg_.delay > 0) {
        info_.order = PathInfo::Order::none;
    }
    info_.lossless = false; // it drops fragments on purpose
    // streamed_tx stays the inner path's although this process reads our
    // transmit buffers next: slower, but the faults then hit fragments
    // written the way they are over the inner path (shm: non-temporal).
    return info_;
}

void LossyPath::close()
{
    // Held and queued fragments die with the path (as on a link that goes down).
    ready_.clear();
    std::fill(queued_of_peer_.begin(), queued_of_peer_.end(), 0u);
    held_[tx_dir].clear();
    held_[rx_dir].clear();
    tx_free_.clear();
    for (auto& f : tx_all_) {
        tx_free_.push_back(f.get());
    }
    tx_acquired_ = nullptr;
    tx_in_use_ = 0;
    rx_free_.clear();
    for (auto& c : rx_all_) {
        rx_free_.push_back(c.get());
    }
    inner_->close();
}

std::size_t LossyPath::held() const
{
    return ready_.size() + held_[tx_dir].size() + held_[rx_dir].size();
}

Status LossyPath::get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                      const iovec* local, int nlocal)
{
    Status st = inner_->get(peer, rkey, rkey_len, remote_offset, local, nlocal);
    if (st.ok()) {
        ++counters_.gets;
        for (int i = 0; i < nlocal; ++i) {
            counters_.get_bytes += local[i].iov_len;
        }
    }
    return st;
}

Status LossyPath::start_get(int peer, const void* rkey, std::size_t rkey_len,
                            std::uint64_t remote_offset, const iovec* local, int nlocal,
                            std::uint64_t token)
{
    Status st = inner_->start_get(peer, rkey, rkey_len, remote_offset, local, nlocal, token);
    if (st.ok()) {
        std::uint64_t bytes = 0;
        for (int i = 0; i < nlocal; ++i) {
            bytes += local[i].iov_len;
        }
        gets_started_.emplace_back(token, bytes);
    }
    return st;
}

void LossyPath::on_get_done(Sink& sink, std::uint64_t token, Status st)
{
    auto it = std::find_if(gets_started_.begin(), gets_started_.end(),
                           [&](const auto& g) { return g.first == token; });
    if (it != gets_started_.end()) {
        if (st.ok()) {
            ++counters_.gets;
            counters_.get_bytes += it->second;
        }
        *it = gets_started_.back();
        gets_started_.pop_back();
    }
    sink.on_get_done(*this, token, st);
}

// --- random draws ----------------------------------------------------------

std::uint64_t LossyPath::next(Dir d, int peer)
{
    auto& v = streams_[d];
    auto i = static_cast<std::size_t>(peer < 0 ? 0 : peer);
    if (i >= v.size()) {
        v.resize(i + 1, 0);
    }
    if (v[i] == 0) {
        v[i] = mix(base_[d] ^ (0x9e3779b97f4a7c15ULL * (i + 1)));
        v[i] = v[i] == 0 ? 1 : v[i];
    }
    return splitmix64(v[i]);
}

LossyPath::Fault LossyPath::draw(Dir d, int peer)
{
    if (!any_fault_) {
        return Fault::none;
    }
    std::uint64_t u = next(d, peer);
    return u < t_drop_      ? Fault::drop
           : u < t_corrupt_ ? Fault::corrupt
           : u < t_dup_     ? Fault::dup
           : u < t_reorder_ ? Fault::reorder
           : u < t_delay_   ? Fault::delay
                            : Fault::none;
}

void LossyPath::bump(Dir d, std::uint64_t LossyFaults::*what)
{
    LossyFaults& mine = d == tx_dir ? faults_.tx : faults_.rx;
    LossyFaults& all = d == tx_dir ? g_counters.tx : g_counters.rx;
    ++(mine.*what);
    ++(all.*what);
}

// Flips 1 to 4 distinct bits, all in the header or all in the payload.
void LossyPath::corrupt(Dir d, int peer, std::byte* data, std::size_t len, std::size_t hlen)
{
    hlen = std::min(hlen, len);
    const std::size_t plen = len - hlen;
    bool in_header = plen == 0 || (hlen != 0 && (next(d, peer) & 1) == 0);
    std::byte* region = in_header ? data : data + hlen;
    std::size_t bits = (in_header ? hlen : plen) * 8;
    if (bits == 0) {
        return;
    }
    std::size_t want = std::min<std::size_t>(1 + next(d, peer) % 4, bits);
    std::size_t picked[4];
    std::size_t n = 0;
    while (n < want) {
        std::size_t b = next(d, peer) % bits;
        if (std::find(picked, picked + n, b) == picked + n) {
            picked[n++] = b;
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        region[picked[i] / 8] ^= static_cast<std::byte>(1u << (picked[i] % 8));
    }
    bump(d, in_header ? &LossyFaults::corrupted_header : &LossyFaults::corrupted_payload);
}

void LossyPath::hold(Dir d, void* frag, int peer, Fault fault)
{
    const std::int64_t span = std::int64_t{cfg_.hold_us} * 1000;
    Hold h{frag, peer, 0, 0};
    if (fault == Fault::delay) {
        auto wait = static_cast<std::int64_t>(next(d, peer) % static_cast<std::uint64_t>(span));
        h.due_ns = rt::now_ns() + 1 + wait;
        bump(d, &LossyFaults::delayed);
    } else {
        h.passes = 1 + static_cast<std::uint32_t>(next(d, peer) % cfg_.depth);
        h.due_ns = rt::now_ns() + span; // released anyway if nothing comes after it
        bump(d, &LossyFaults::reordered);
    }
    held_[d].push_back(h);
}

// A fragment of the pair went on: reordered ones waiting behind it get closer
// to their release (the caller releases them).
void LossyPath::passed(Dir d, int peer)
{
    for (Hold& h : held_[d]) {
        if (h.peer == peer && h.passes != 0 && --h.passes == 0) {
            h.due_ns = std::numeric_limits<std::int64_t>::min();
        }
    }
}

// --- send side ---------------------------------------------------------------

LossyPath::TxFrag* LossyPath::take_tx()
{
    if (tx_free_.empty()) {
        tx_all_.push_back(std::make_unique<TxFrag>());
        tx_free_.push_back(tx_all_.back().get());
    }
    TxFrag* f = tx_free_.back();
    tx_free_.pop_back();
    ++tx_in_use_;
    return f;
}

void LossyPath::free_tx(TxFrag* f)
{
    tx_free_.push_back(f);
    --tx_in_use_;
}

bool LossyPath::acquire(int peer, std::size_t len, TxBuffer& out)
{
    (void)peer;
    TxFrag* f = tx_acquired_;
    if (f == nullptr) {
        if (tx_in_use_ >= cfg_.queue) {
            pump();
            if (tx_in_use_ >= cfg_.queue && release_tx(true) > 0) {
                pump();
            }
            if (tx_in_use_ >= cfg_.queue) {
                ++counters_.send_again;
                return false;
            }
        }
        f = take_tx();
        tx_acquired_ = f;
    }
    if (f->bytes.size() < len) {
        f->bytes.resize(len);
    }
    f->lane = out.lane;
    out.data = f->bytes.data();
    out.cap = f->bytes.size();
    out.token = reinterpret_cast<std::uintptr_t>(f);
    return true;
}

// Sends f (its remaining copies) now unless fragments to the same peer wait
// before it; what the inner path does not take now waits in ready_.
SendResult LossyPath::forward(TxFrag* f)
{
    const auto p = static_cast<std::size_t>(f->peer);
    if (p >= queued_of_peer_.size()) {
        queued_of_peer_.resize(p + 1, 0);
    }
    if (queued_of_peer_[p] == 0) {
        while (f->copies > 0) {
            iovec v{f->bytes.data(), f->len};
            SendResult r = inner_->send(f->peer, &v, 1, f->lane);
            if (r == SendResult::again) {
                break;
            }
            if (r == SendResult::failed) {
                free_tx(f);
                return SendResult::failed;
            }
            --f->copies;
        }
        if (f->copies == 0) {
            free_tx(f);
            return SendResult::done;
        }
    }
    ready_.push_back(f);
    ++queued_of_peer_[p];
    return SendResult::done;
}

// Retries the queued fragments in order; a peer whose path answers `again`
// is skipped for the rest of this round so its fragments keep their order.
int LossyPath::pump()
{
    int sent = 0;
    blocked_.clear();
    ready_scratch_.clear();
    for (TxFrag* f : ready_) {
        bool keep = std::find(blocked_.begin(), blocked_.end(), f->peer) != blocked_.end();
        while (!keep && f->copies > 0) {
            iovec v{f->bytes.data(), f->len};
            SendResult r = inner_->send(f->peer, &v, 1, f->lane);
            if (r == SendResult::again) {
                blocked_.push_back(f->peer);
                keep = true;
            } else if (r == SendResult::failed) {
                ULMPI_DEBUG("lossy: %s cannot send a queued fragment to rank %d; dropped",
                            inner_->info().name, f->peer);
                f->copies = 0;
            } else {
                --f->copies;
                ++sent;
            }
        }
        if (keep) {
            ready_scratch_.push_back(f);
        } else {
            --queued_of_peer_[static_cast<std::size_t>(f->peer)];
            free_tx(f);
        }
    }
    ready_.swap(ready_scratch_);
    return sent;
}

// Moves held fragments whose time came (and the oldest one when forced) on
// to the inner path. Returns how many.
int LossyPath::release_tx(bool force_oldest)
{
    int n = 0;
    std::vector<Hold>& held = held_[tx_dir];
    bool again = true;
    while (again && !held.empty()) {
        again = false;
        const std::int64_t now = rt::now_ns();
        for (std::size_t i = 0; i < held.size(); ++i) {
            if (held[i].due_ns <= now || force_oldest) {
                force_oldest = false;
                auto* f = static_cast<TxFrag*>(held[i].frag);
                int peer = held[i].peer;
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
                f->copies = 1;
                (void)forward(f); // a path that fails now loses it, like a lost fragment
                passed(tx_dir, peer);
                ++n;
                again = true; // passed() may have released others; rescan
                break;
            }
        }
    }
    return n;
}

SendResult LossyPath::commit(int peer, const TxBuffer& buf, std::size_t len)
{
    auto* f = reinterpret_cast<TxFrag*>(buf.token);
    ULMPI_ASSERT(f == tx_acquired_);
    tx_acquired_ = nullptr;
    f->len = len;
    f->peer = peer;
    ++counters_.frags_sent;
    counters_.bytes_sent += len;
    bump(tx_dir, &LossyFaults::frags);

    if (!ready_.empty()) {
        pump();
    }
    Fault fault = cfg_.tx ? draw(tx_dir, peer) : Fault::none;
    switch (fault) {
    case Fault::drop:
        bump(tx_dir, &LossyFaults::dropped);
        free_tx(f);
        return SendResult::done;
    case Fault::reorder:
    case Fault::delay:
        hold(tx_dir, f, peer, fault); // acquire() bounds how many wait here
        return SendResult::done;
    case Fault::corrupt:
        corrupt(tx_dir, peer, f->bytes.data(), len, header_length(f->bytes.data(), len, true));
        f->copies = 1;
        break;
    case Fault::dup:
        bump(tx_dir, &LossyFaults::duplicated);
        f->copies = 2;
        break;
    case Fault::none:
        f->copies = 1;
        break;
    }
    SendResult r = forward(f);
    if (!held_[tx_dir].empty()) {
        passed(tx_dir, peer);
        release_tx(false);
    }
    return r;
}

// --- receive side --------------------------------------------------------------

LossyPath::RxCopy* LossyPath::copy_rx(RxFrag& frag, std::size_t hlen)
{
    if (rx_free_.empty()) {
        rx_all_.push_back(std::make_unique<RxCopy>());
        rx_free_.push_back(rx_all_.back().get());
    }
    RxCopy* c = rx_free_.back();
    rx_free_.pop_back();
    if (c->bytes.size() < frag.len) {
        c->bytes.resize(frag.len);
    }
    c->len = frag.len;
    c->hlen = hlen;
    c->peer = frag.peer;
    if (frag.addressable) {
        std::memcpy(c->bytes.data(), frag.data, frag.len);
    } else {
        std::memcpy(c->bytes.data(), frag.data, hlen);
        if (frag.len > hlen) {
            iovec v{c->bytes.data() + hlen, frag.len - hlen};
            std::size_t got = frag.read_payload(0, &v, 1);
            if (got < frag.len - hlen) {
                std::memset(c->bytes.data() + hlen + got, 0, frag.len - hlen - got);
            }
        }
    }
    return c;
}

void LossyPath::free_rx(RxCopy* c) { rx_free_.push_back(c); }

void LossyPath::deliver(Sink& sink, const RxCopy* c)
{
    CopyFrag fr;
    fr.peer = c->peer;
    fr.data = c->bytes.data();
    fr.len = c->len;
    fr.addressable = true;
    fr.hlen = c->hlen;
    ++counters_.frags_received;
    counters_.bytes_received += c->len;
    sink.on_frag(*this, fr);
}

int LossyPath::release_rx(Sink& sink, bool force_oldest)
{
    int n = 0;
    std::vector<Hold>& held = held_[rx_dir];
    bool again = true;
    while (again && !held.empty()) {
        again = false;
        const std::int64_t now = rt::now_ns();
        for (std::size_t i = 0; i < held.size(); ++i) {
            if (held[i].due_ns <= now || force_oldest) {
                force_oldest = false;
                auto* c = static_cast<RxCopy*>(held[i].frag);
                held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
                deliver(sink, c);
                passed(rx_dir, c->peer);
                free_rx(c);
                ++n;
                again = true;
                break;
            }
        }
    }
    return n;
}

void LossyPath::on_rx(Sink& sink, RxFrag& frag)
{
    bump(rx_dir, &LossyFaults::frags);
    Fault fault = cfg_.rx ? draw(rx_dir, frag.peer) : Fault::none;
    std::size_t hlen = 0;
    if (fault != Fault::none && fault != Fault::drop) {
        hlen = header_length(frag.data, frag.len, frag.addressable);
        if (hlen == 0) {
            fault = Fault::none; // cannot copy a fragment we cannot split
        }
    }
    switch (fault) {
    case Fault::none:
        ++counters_.frags_received;
        counters_.bytes_received += frag.len;
        sink.on_frag(*this, frag);
        break;
    case Fault::drop:
        bump(rx_dir, &LossyFaults::dropped);
        return;
    case Fault::corrupt: {
        RxCopy* c = copy_rx(frag, hlen);
        corrupt(rx_dir, frag.peer, c->bytes.data(), c->len, hlen);
        deliver(sink, c);
        free_rx(c);
        break;
    }
    case Fault::dup: {
        bump(rx_dir, &LossyFaults::duplicated);
        RxCopy* c = copy_rx(frag, hlen);
        deliver(sink, c);
        deliver(sink, c);
        free_rx(c);
        break;
    }
    case Fault::reorder:
    case Fault::delay: {
        if (held_[rx_dir].size() >= cfg_.queue) {
            release_rx(sink, true);
        }
        hold(rx_dir, copy_rx(frag, hlen), frag.peer, fault);
        return;
    }
    }
    if (!held_[rx_dir].empty()) {
        passed(rx_dir, frag.peer);
        release_rx(sink, false);
    }
}

int LossyPath::progress(Sink& sink)
{
    int n = 0;
    if (!ready_.empty()) {
        n += pump();
    }
    if (!held_[tx_dir].empty()) {
        n += release_tx(false);
    }
    RxSink wrapped(*this, sink);
    n += inner_->progress(wrapped);
    if (!held_[rx_dir].empty()) {
        n += release_rx(sink, false);
    }
    return n;
}

const char* LossyPath::describe() const
{
    auto side = [](const LossyFaults& f) {
        char b[256];
        std::snprintf(b, sizeof b,
                      "%llu frags: %llu dropped, %llu duplicated, %llu reordered, %llu delayed, "
                      "%llu+%llu corrupted (header+payload)",
                      static_cast<unsigned long long>(f.frags),
                      static_cast<unsigned long long>(f.dropped),
                      static_cast<unsigned long long>(f.duplicated),
                      static_cast<unsigned long long>(f.reordered),
                      static_cast<unsigned long long>(f.delayed),
                      static_cast<unsigned long long>(f.corrupted_header),
                      static_cast<unsigned long long>(f.corrupted_payload));
        return std::string(b);
    };
    char rates[192];
    std::snprintf(rates, sizeof rates,
                  ") drop %g corrupt %g dup %g reorder %g delay %g seed %llu dir %s",
                  cfg_.drop, cfg_.corrupt, cfg_.dup, cfg_.reorder, cfg_.delay,
                  static_cast<unsigned long long>(cfg_.seed),
                  cfg_.tx && cfg_.rx ? "both" : cfg_.tx ? "tx" : cfg_.rx ? "rx" : "none");
    describe_ = std::string("lossy(") + inner_->describe() + rates + "; injected tx " +
                side(faults_.tx) + "; rx " + side(faults_.rx);
    return describe_.c_str();
}

} // namespace ulmpi::path
