// Helpers of the reliability tests: a reliable in-memory cluster with a
// fault hook, sends and receives of byte vectors, and counts of fragments
// in the fabric's log.
#pragma once

#include "engine_harness.h"

#include "runtime/clock.h"
#include "ulm/ft_hooks.h"

#include <string>

namespace ulmpi::test {

inline constexpr int kTag = 9;

inline ulm::FragType type_of(const std::vector<std::byte>& b) { return static_cast<ulm::FragType>(b[1]); }
inline std::uint64_t seq_of(const std::vector<std::byte>& b)
{
    ulm::BaseHeader h;
    std::memcpy(&h, b.data(), sizeof h);
    return h.frag_seq;
}

struct Hooks final : ulm::FailureHooks {
    void on_peer_failed(int, const char*) override {}
    void on_peer_unreachable(int peer, const char* why) override
    {
        unreachable = peer;
        path_name = why;
    }
    void on_job_ending(const char*) override {}
    int unreachable = -1;
    std::string path_name;
};

inline ClusterOptions reliable(std::function<int(int, int, std::vector<std::byte>&)> fault = {})
{
    ClusterOptions o;
    o.mem.reliable = true;
    o.mem.fault = std::move(fault);
    return o;
}

inline SendMsg* send_bytes(Engine& e, const std::vector<std::byte>& v, int dst)
{
    SendMsg* s = nullptr;
    EXPECT_TRUE(e.isend(bytes_ref(const_cast<std::byte*>(v.data()), v.size()), dst, kTag, ContextId(0),
                        SendMode::standard, &s)
                    .ok());
    return s;
}

inline RecvMsg* recv_bytes(Engine& e, std::vector<std::byte>& v, int src)
{
    RecvMsg* r = nullptr;
    EXPECT_TRUE(e.irecv(bytes_ref(v.data(), v.size()), src, kTag, ContextId(0), &r).ok());
    return r;
}

// Counts fragments of a type from src to dst in the fabric's log.
inline std::size_t logged(const MemFabric& f, int src, int dst, ulm::FragType t)
{
    std::size_t n = 0;
    for (const FragRecord& r : f.log) {
        n += r.src == src && r.dst == dst && type_of(r.bytes) == t ? 1 : 0;
    }
    return n;
}

// First fragments of messages (match or eager) from src to dst in the log.
inline std::size_t logged_messages(const MemFabric& f, int src, int dst)
{
    return logged(f, src, dst, ulm::FragType::match) + logged(f, src, dst, ulm::FragType::eager);
}

} // namespace ulmpi::test
