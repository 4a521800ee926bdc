// A bootstrap for several ranks living in one process (tests only). Each
// rank's Engine::init runs on its own thread; fence() is a real barrier over
// all ranks, so a path reading peers' addresses after the fence sees them.
// After wire-up everything runs on the test's thread.
#pragma once

#include "runtime/bootstrap.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ulmpi::test {

// What all ranks of one in-process job share.
struct FakeJob {
    explicit FakeJob(int n) : size(n), barrier(n) {}
    int size;
    std::barrier<> barrier;
    std::mutex mu;
    std::map<std::pair<int, std::string>, std::vector<std::byte>> values;
    int fences = 0; // completed by rank 0, for tests that count them
    int local_cpus = 0; // JobInfo::local_cpus of every rank
};

class FakeBootstrap final : public rt::Bootstrap {
public:
    FakeBootstrap(FakeJob& job, int rank) : shared_(job)
    {
        job_.rank = rank;
        job_.size = job.size;
        job_.local_rank = rank;
        job_.local_size = job.size;
        job_.node_id = 0;
        job_.num_nodes = 1;
        job_.host = "unit";
        job_.jobid = "unit";
        job_.node_of_rank.assign(static_cast<std::size_t>(job.size), 0);
        job_.universe_size = job.size;
        job_.local_cpus = job.local_cpus;
    }

    const rt::JobInfo& job() const override { return job_; }
    rt::JobInfo& mutable_job() { return job_; }

    rt::Status put(std::string_view key, const void* data, std::size_t len) override
    {
        std::lock_guard lock(shared_.mu);
        auto& v = shared_.values[{job_.rank, std::string(key)}];
        v.resize(len);
        if (len > 0) {
            std::memcpy(v.data(), data, len);
        }
        return rt::Errc::ok;
    }

    rt::Status fence() override
    {
        shared_.barrier.arrive_and_wait();
        if (job_.rank == 0) {
            std::lock_guard lock(shared_.mu);
            ++shared_.fences;
        }
        shared_.barrier.arrive_and_wait();
        return rt::Errc::ok;
    }

    rt::Status get(int rank, std::string_view key, std::vector<std::byte>& out) override
    {
        std::lock_guard lock(shared_.mu);
        auto it = shared_.values.find({rank, std::string(key)});
        if (it == shared_.values.end()) {
            return rt::Errc::invalid_arg;
        }
        out = it->second;
        return rt::Errc::ok;
    }

    [[noreturn]] void abort(int code, std::string_view msg) override
    {
        ADD_FAILURE() << "bootstrap abort(" << code << "): " << msg;
        std::abort();
    }

    rt::Status finalize() override { return rt::Errc::ok; }

    bool poll_event(rt::FailureEvent& ev) override
    {
        std::lock_guard lock(shared_.mu);
        if (events_.empty()) {
            return false;
        }
        ev = events_.front();
        events_.pop_front();
        return true;
    }
    void push_event(rt::FailureEvent ev)
    {
        std::lock_guard lock(shared_.mu);
        events_.push_back(std::move(ev));
    }

    int event_fd() const override { return -1; }
    const char* name() const override { return "fake"; }

private:
    FakeJob& shared_;
    rt::JobInfo job_;
    std::deque<rt::FailureEvent> events_;
};

} // namespace ulmpi::test
