// Several ULM engines in one process, wired by MemPath and LocalBootstrap,
// plus helpers to build buffers and read the fragment log.
#pragma once

#include "tests/support/test_bootstrap.h"
#include "mem_path.h"

#include "paths/self/self_path.h"
#include "runtime/config.h"
#include "ulm/engine.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace ulmpi::test {

using ulm::ContextId;
using ulm::DataRef;
using ulm::Engine;
using ulm::FragType;
using ulm::Layout;
using ulm::RecvMsg;
using ulm::Run;
using ulm::SendMode;
using ulm::SendMsg;

inline const Run kByteRun{0, 1};
inline const std::uint64_t kBytePrefix[2] = {0, 1};
inline const Layout kBytes{1, 1, 1, &kByteRun, kBytePrefix, true};

inline DataRef bytes_ref(void* p, std::size_t n) { return DataRef{p, n, &kBytes}; }

inline std::vector<std::byte> pattern(std::size_t n, std::uint32_t seed)
{
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<std::byte>((i * 7 + seed * 131 + (i >> 8) * 3 + 1) & 0xff);
    }
    return v;
}

// Byte vectors compared with a short message (first difference) on failure.
inline ::testing::AssertionResult same_bytes(const std::vector<std::byte>& got,
                                             const std::vector<std::byte>& want)
{
    if (got.size() != want.size()) {
        return ::testing::AssertionFailure() << "size " << got.size() << ", want " << want.size();
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] != want[i]) {
            std::size_t bad = 0;
            for (std::size_t k = i; k < got.size(); ++k) {
                bad += got[k] != want[k] ? 1 : 0;
            }
            char what[64];
            std::snprintf(what, sizeof what, " (got 0x%02x, want 0x%02x); ",
                          static_cast<unsigned>(got[i]), static_cast<unsigned>(want[i]));
            return ::testing::AssertionFailure() << "first difference at byte " << i << " of "
                                                 << got.size() << what << bad << " bytes differ";
        }
    }
    return ::testing::AssertionSuccess();
}

// Sets a parameter for the lifetime of the object (parameters are read at
// Engine::init): ScopedSizeParam, ScopedIntParam.
template <class Param, class Value> class ScopedParam {
public:
    ScopedParam(const char* name, Value v) : p_(dynamic_cast<Param*>(rt::find_param(name)))
    {
        if (p_ == nullptr) {
            ADD_FAILURE() << "no parameter " << name << " of this kind";
            return;
        }
        old_ = p_->get();
        p_->set(v);
    }
    ~ScopedParam()
    {
        if (p_ != nullptr) {
            p_->set(old_);
        }
    }
    ScopedParam(const ScopedParam&) = delete;
    ScopedParam& operator=(const ScopedParam&) = delete;

private:
    Param* p_;
    Value old_{};
};
using ScopedSizeParam = ScopedParam<rt::SizeParam, std::uint64_t>;
using ScopedIntParam = ScopedParam<rt::IntParam, std::int64_t>;

struct ClusterOptions {
    int n = 2;
    MemPathOptions mem;
    // Rails: MemPaths per rank, each on its own fabric, named mem0, mem1...
    // (one rail keeps the name in `mem`); rail_tweak adjusts rail k's options.
    int rails = 1;
    std::vector<int> incarnation; // JobInfo::incarnation by rank (default 0)
    std::function<void(int rank, int rail, MemPathOptions&)> rail_tweak;
    bool self_path = false; // a SelfPath in front of the MemPath
    int local_cpus = 0;     // CPUs the launcher had for the ranks (0: unknown)
    std::function<void(int, MemPathOptions&)> tweak;
};

class Cluster {
public:
    explicit Cluster(ClusterOptions o = {}) : n_(o.n)
    {
        job_ = std::make_unique<LocalJob>(o.n);
        job_->local_cpus = o.local_cpus;
        std::vector<std::vector<std::unique_ptr<path::Path>>> paths(static_cast<std::size_t>(o.n));
        for (int r = 0; r < o.n; ++r) {
            boots_.push_back(std::make_unique<LocalBootstrap>(*job_, r));
            if (static_cast<std::size_t>(r) < o.incarnation.size()) {
                boots_.back()->mutable_job().incarnation = o.incarnation[static_cast<std::size_t>(r)];
            }
            engines_.push_back(std::make_unique<Engine>());
            MemPathOptions m = o.mem;
            m.seed = o.mem.seed * 1000 + static_cast<std::uint32_t>(r);
            if (o.self_path) {
                m.reach_self = false;
                paths[static_cast<std::size_t>(r)].push_back(std::make_unique<path::SelfPath>(r));
            }
            if (o.tweak) {
                o.tweak(r, m);
            }
            for (int k = 0; k < o.rails; ++k) {
                MemPathOptions mk = m;
                if (o.rails > 1) {
                    mk.name = kRailNames[k];
                    mk.seed = m.seed * 10 + static_cast<std::uint32_t>(k);
                }
                if (o.rail_tweak) {
                    o.rail_tweak(r, k, mk);
                }
                auto mp = std::make_unique<MemPath>(rail_fabric(k), r, mk);
                if (k == 0) {
                    mem_.push_back(mp.get());
                }
                rails_.push_back(mp.get());
                paths[static_cast<std::size_t>(r)].push_back(std::move(mp));
            }
        }
        rails_per_rank_ = o.rails;
        std::vector<rt::Status> st(static_cast<std::size_t>(o.n));
        std::vector<std::string> why(static_cast<std::size_t>(o.n));
        std::vector<std::thread> threads;
        for (int r = 0; r < o.n; ++r) {
            auto i = static_cast<std::size_t>(r);
            threads.emplace_back(
                [&, i] { st[i] = engines_[i]->init(*boots_[i], std::move(paths[i]), why[i]); });
        }
        for (auto& t : threads) {
            t.join();
        }
        for (int r = 0; r < o.n; ++r) {
            if (!st[static_cast<std::size_t>(r)].ok()) {
                ADD_FAILURE() << "rank " << r << " init: " << why[static_cast<std::size_t>(r)];
                ok_ = false;
            }
        }
    }

    bool ok() const { return ok_; }
    int size() const { return n_; }
    Engine& e(int r) { return *engines_[static_cast<std::size_t>(r)]; }
    MemPath& path(int r) { return *mem_[static_cast<std::size_t>(r)]; }
    MemPath& rail(int r, int k) { return *rails_[static_cast<std::size_t>(r * rails_per_rank_ + k)]; }
    MemFabric& rail_fabric(int k)
    {
        if (k == 0) {
            return fabric;
        }
        while (extra_fabrics_.size() < static_cast<std::size_t>(k)) {
            extra_fabrics_.push_back(std::make_unique<MemFabric>());
        }
        return *extra_fabrics_[static_cast<std::size_t>(k - 1)];
    }
    LocalBootstrap& boot(int r) { return *boots_[static_cast<std::size_t>(r)]; }
    LocalJob& job() { return *job_; }

    int progress_all()
    {
        int n = 0;
        for (auto& e : engines_) {
            n += e->progress();
        }
        return n;
    }
    template <class Pred> bool run_until(Pred&& done, int max_rounds = 100000)
    {
        for (int i = 0; i < max_rounds; ++i) {
            if (done()) {
                return true;
            }
            progress_all();
        }
        return done();
    }
    void settle(int rounds = 100)
    {
        for (int i = 0; i < rounds; ++i) {
            progress_all();
        }
    }

    static constexpr const char* kRailNames[] = {"mem0", "mem1", "mem2", "mem3"};
    MemFabric fabric; // declared first: outlives the engines and their paths

private:
    std::vector<std::unique_ptr<MemFabric>> extra_fabrics_; // rails 1...: outlive the engines too
    int n_;
    bool ok_ = true;
    std::unique_ptr<LocalJob> job_;
    std::vector<std::unique_ptr<LocalBootstrap>> boots_;
    std::vector<std::unique_ptr<Engine>> engines_;
    std::vector<MemPath*> mem_;
    std::vector<MemPath*> rails_;
    int rails_per_rank_ = 1;
};

// Fragment log helpers.
inline ulm::BaseHeader base_of(const FragRecord& f)
{
    ulm::BaseHeader b;
    std::memcpy(&b, f.bytes.data(), sizeof b);
    return b;
}
template <class H> H header_of(const FragRecord& f)
{
    H h;
    std::memcpy(&h, f.bytes.data(), sizeof h);
    return h;
}
inline std::vector<const FragRecord*> frags(const MemFabric& fab, FragType type, int src, int dst)
{
    std::vector<const FragRecord*> out;
    for (const FragRecord& f : fab.log) {
        if (f.src == src && f.dst == dst && base_of(f).type == type) {
            out.push_back(&f);
        }
    }
    return out;
}

// The first fragment of a message: match, or eager (a small message with
// the short header).
inline bool starts_message(FragType t) { return t == FragType::match || t == FragType::eager; }

inline std::vector<const FragRecord*> message_frags(const MemFabric& fab, int src, int dst)
{
    std::vector<const FragRecord*> out;
    for (const FragRecord& f : fab.log) {
        if (f.src == src && f.dst == dst && starts_message(base_of(f).type)) {
            out.push_back(&f);
        }
    }
    return out;
}

// Message sequence number of a match or eager fragment (the same offset in both).
inline std::uint64_t msg_seq_of(const FragRecord& f)
{
    static_assert(offsetof(ulm::MatchHeader, msg_seq) == offsetof(ulm::EagerHeader, msg_seq));
    return header_of<ulm::EagerHeader>(f).msg_seq;
}

inline SendMsg* post_send(Engine& e, std::vector<std::byte>& buf, int dst, int tag,
                          std::uint32_t ctx = 0, SendMode mode = SendMode::standard)
{
    SendMsg* s = nullptr;
    rt::Status st = e.isend(bytes_ref(buf.data(), buf.size()), dst, tag, ContextId(ctx), mode, &s);
    EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
    return s;
}

inline RecvMsg* post_recv(Engine& e, std::vector<std::byte>& buf, int src, int tag,
                          std::uint32_t ctx = 0, std::size_t capacity = SIZE_MAX)
{
    RecvMsg* r = nullptr;
    std::size_t cap = capacity == SIZE_MAX ? buf.size() : capacity;
    rt::Status st = e.irecv(bytes_ref(buf.data(), cap), src, tag, ContextId(ctx), &r);
    EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
    return r;
}

} // namespace ulmpi::test
