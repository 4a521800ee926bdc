// The choice of bootstrap from the environment (runtime/bootstrap.cpp), its
// errors, and the PMI-2 client against a fake launcher on a socket pair.
#include "runtime/bootstrap.h"
#include "runtime/bootstrap_pmi2_wire.h"

#include <gtest/gtest.h>

#include "runtime/config.h"

#include <csignal>
#include <cstdlib>
#include <map>
#include <string>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace ulmpi::rt;

namespace {

const char* const kVars[] = {"ULMPI_BOOT_ADDR", "PMIX_NAMESPACE", "PMI_FD", "PMI_RANK",
                             "PMI_JOBID", "PMI_SIZE", "SLURM_CPUS_ON_NODE", "SLURMD_NODENAME"};

// Clears the launcher variables for one test and restores them after.
class CleanEnv {
public:
    CleanEnv()
    {
        for (const char* v : kVars) {
            if (const char* x = std::getenv(v)) {
                saved_[v] = x;
            }
            ::unsetenv(v);
        }
    }
    ~CleanEnv()
    {
        for (const char* v : kVars) {
            ::unsetenv(v);
        }
        for (const auto& [k, v] : saved_) {
            ::setenv(k.c_str(), v.c_str(), 1);
        }
    }

private:
    std::map<std::string, std::string> saved_;
};

// Speaks the launcher's side of PMI-2 for a job of two ranks, of which the
// client is rank 1: what Slurm's plugin answers, in the order the client
// asks. Values put are kept and served back; rank 0's value for "peer" is
// preset, and so is its "boot.pid" when `peer_pid` is not 0. The ranks are on
// two nodes, or on one when peer_pid is set (rank 0 is then a local peer).
void fake_launcher(int fd, std::string* error, int* finalized, int peer_pid = 0)
{
    auto fail = [&](const std::string& e) { *error = e; };
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') {
        line += c;
    }
    if (line != "cmd=init pmi_version=2 pmi_subversion=0") {
        return fail("init line: " + line);
    }
    const std::string answer = "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n";
    if (::write(fd, answer.data(), answer.size()) != static_cast<ssize_t>(answer.size())) {
        return fail("write");
    }
    std::map<std::string, std::string> kvs;
    kvs[pmi2::kvs_key(0, "peer", 0)] = pmi2::encode_value("hello", 5)[0];
    if (peer_pid != 0) {
        std::int32_t pid = peer_pid;
        kvs[pmi2::kvs_key(0, "boot.pid", 0)] = pmi2::encode_value(&pid, sizeof pid)[0];
    }
    const char* map = peer_pid != 0 ? "(vector,(0,1,2))" : "(vector,(0,2,1))";
    std::map<std::string, std::string> staged;
    pmi2::FrameReader reader;
    for (;;) {
        std::string body, why;
        int r = reader.next(body, why);
        if (r < 0) {
            return fail(why);
        }
        if (r == 0) {
            char buf[4096];
            ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) {
                return;
            }
            reader.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        pmi2::Message m;
        if (!pmi2::parse_body(body, m, why)) {
            return fail(why);
        }
        std::string out;
        if (m.cmd == "fullinit") {
            if (m.find("pmirank") == nullptr || m.find("threaded") == nullptr ||
                m.find("pmijobid") == nullptr) {
                return fail("fullinit without pmirank/threaded/pmijobid");
            }
            out = pmi2::encode("fullinit-response", {{"rc", "0"}, {"pmi-version", "2"},
                                                     {"pmi-subversion", "0"}, {"rank", "1"},
                                                     {"size", "2"}, {"appnum", "-1"},
                                                     {"debugged", "FALSE"}, {"pmiverbose", "FALSE"}});
        } else if (m.cmd == "job-getid") {
            out = pmi2::encode("job-getid-response", {{"rc", "0"}, {"jobid", "77.3"}});
        } else if (m.cmd == "info-getjobattr") {
            const std::string* key = m.find("key");
            if (key != nullptr && *key == "PMI_process_mapping") {
                out = pmi2::encode("info-getjobattr-response",
                                   {{"rc", "0"}, {"found", "TRUE"}, {"value", map}});
            } else {
                out = pmi2::encode("info-getjobattr-response", {{"rc", "0"}, {"found", "FALSE"}});
            }
        } else if (m.cmd == "kvs-put") {
            staged[*m.find("key")] = *m.find("value");
            out = pmi2::encode("kvs-put-response", {{"rc", "0"}});
        } else if (m.cmd == "kvs-fence") {
            kvs.insert(staged.begin(), staged.end());
            out = pmi2::encode("kvs-fence-response", {{"rc", "0"}});
        } else if (m.cmd == "kvs-get") {
            if (m.find("key")->rfind("u0/fence.", 0) == 0) {
                // Rank 0 (not a process here) has entered every fence.
                kvs[*m.find("key")] = pmi2::encode_value(nullptr, 0)[0];
            }
            auto it = kvs.find(*m.find("key"));
            out = it == kvs.end()
                      ? pmi2::encode("kvs-get-response", {{"rc", "0"}, {"found", "FALSE"}})
                      : pmi2::encode("kvs-get-response",
                                     {{"rc", "0"}, {"found", "TRUE"}, {"value", it->second}});
        } else if (m.cmd == "finalize") {
            *finalized = 1;
            out = pmi2::encode("finalize-response", {{"rc", "0"}});
        } else {
            return fail("unexpected command " + m.cmd);
        }
        if (::write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) {
            return fail("write");
        }
    }
}

} // namespace

TEST(BootstrapSelect, the_first_variable_set_chooses)
{
    CleanEnv env;
    EXPECT_EQ(choose_bootstrap().kind, BootKind::singleton);
    ::setenv("PMI_RANK", "0", 1);
    EXPECT_EQ(choose_bootstrap().kind, BootKind::pmi2);
    EXPECT_EQ(choose_bootstrap().reason, "PMI_RANK=0 is set");
    ::setenv("PMIX_NAMESPACE", "ns", 1);
    EXPECT_EQ(choose_bootstrap().kind, BootKind::pmix);
    ::setenv("ULMPI_BOOT_ADDR", "unix:@x", 1);
    EXPECT_EQ(choose_bootstrap().kind, BootKind::ours);
    EXPECT_STREQ(boot_kind_name(BootKind::pmi2), "pmi2");
}

TEST(BootstrapSelect, an_empty_variable_does_not_count)
{
    CleanEnv env;
    ::setenv("PMIX_NAMESPACE", "", 1);
    ::setenv("PMI_FD", "", 1);
    EXPECT_EQ(choose_bootstrap().kind, BootKind::singleton);
}

TEST(BootstrapSelect, pmi_rank_without_pmi_fd_says_what_is_missing)
{
    CleanEnv env;
    ::setenv("PMI_RANK", "0", 1);
    std::string why;
    EXPECT_EQ(make_bootstrap(why), nullptr);
    EXPECT_NE(why.find("PMI_RANK=0 is set"), std::string::npos) << why;
    EXPECT_NE(why.find("PMI_FD is not"), std::string::npos) << why;
}

TEST(BootstrapSelect, a_pmi_fd_that_is_not_a_number_is_named)
{
    CleanEnv env;
    ::setenv("PMI_FD", "five", 1);
    std::string why;
    EXPECT_EQ(make_bootstrap(why), nullptr);
    EXPECT_NE(why.find("PMI_FD='five' is not a non-negative integer"), std::string::npos) << why;
}

TEST(BootstrapSelect, a_pmi_fd_that_is_not_open_is_named)
{
    CleanEnv env;
    ::setenv("PMI_FD", "987", 1);
    std::string why;
    EXPECT_EQ(make_bootstrap(why), nullptr);
    EXPECT_NE(why.find("PMI_FD=987 is not an open descriptor"), std::string::npos) << why;
}

TEST(BootstrapSelect, a_pmi_fd_that_is_not_a_socket_is_named)
{
    CleanEnv env;
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    ::setenv("PMI_FD", std::to_string(p[0]).c_str(), 1);
    std::string why;
    EXPECT_EQ(make_bootstrap(why), nullptr);
    EXPECT_NE(why.find("is not a stream socket"), std::string::npos) << why;
    ::close(p[0]);
    ::close(p[1]);
}

TEST(BootstrapSelect, a_launcher_that_closes_during_init_is_reported)
{
    CleanEnv env;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ::close(sv[1]);
    ::setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
    std::string why;
    EXPECT_EQ(make_bootstrap(why), nullptr);
    EXPECT_NE(why.find("PMI"), std::string::npos) << why;
    ::close(sv[0]);
}

TEST(Pmi2Bootstrap, talks_to_a_launcher_from_init_to_finalize)
{
    CleanEnv env;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    std::string error;
    int finalized = 0;
    std::thread server(fake_launcher, sv[1], &error, &finalized, 0);
    ::setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
    ::setenv("PMI_RANK", "1", 1);
    ::setenv("SLURMD_NODENAME", "node7", 1);
    std::string why;
    std::unique_ptr<Bootstrap> b = make_bootstrap(why);
    ASSERT_NE(b, nullptr) << why << " / " << error;
    EXPECT_STREQ(b->name(), "pmi2");
    const JobInfo& job = b->job();
    EXPECT_EQ(job.rank, 1);
    EXPECT_EQ(job.size, 2);
    EXPECT_EQ(job.node_of_rank, (std::vector<int>{0, 1}));
    EXPECT_EQ(job.node_id, 1);
    EXPECT_EQ(job.num_nodes, 2);
    EXPECT_EQ(job.local_rank, 0);
    EXPECT_EQ(job.local_size, 1);
    EXPECT_EQ(job.jobid, "pmi2-77.3");
    EXPECT_EQ(job.host, "node7");
    EXPECT_EQ(job.appnum, 0);
    EXPECT_GE(b->event_fd(), 0);

    std::string big(3000, 'x'); // more than one chunk
    for (std::size_t i = 0; i < big.size(); ++i) {
        big[i] = static_cast<char>(i);
    }
    ASSERT_TRUE(b->put("big", big.data(), big.size()).ok());
    ASSERT_TRUE(b->fence_begin().ok());
    Status st = Errc::again;
    for (int i = 0; i < 10000 && st.code() == Errc::again; ++i) {
        st = b->fence_test();
        if (st.code() == Errc::again) {
            ::usleep(100);
        }
    }
    ASSERT_TRUE(st.ok()) << errc_name(st.code());
    std::vector<std::byte> v;
    ASSERT_TRUE(b->get(0, "peer", v).ok());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data()), v.size()), "hello");
    ASSERT_TRUE(b->get(1, "big", v).ok());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data()), v.size()), big);
    EXPECT_EQ(b->get(0, "nothing", v).code(), Errc::invalid_arg);
    EXPECT_EQ(b->get(2, "peer", v).code(), Errc::invalid_arg);
    ASSERT_TRUE(b->fence().ok());
    FailureEvent ev;
    EXPECT_FALSE(b->poll_event(ev));
    ASSERT_TRUE(b->finalize().ok());
    EXPECT_EQ(finalized, 1);
    // The server sees the end (shutdown wakes its read; closing the fd it
    // reads from in another thread would race with that read).
    ::shutdown(sv[1], SHUT_RDWR);
    server.join();
    ::close(sv[1]);
    EXPECT_EQ(error, "");
}

TEST(Pmi2Bootstrap, a_launcher_that_goes_away_is_a_job_ending_event)
{
    CleanEnv env;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    std::string error;
    int finalized = 0;
    std::thread server(fake_launcher, sv[1], &error, &finalized, 0);
    ::setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
    std::string why;
    std::unique_ptr<Bootstrap> b = make_bootstrap(why);
    ASSERT_NE(b, nullptr) << why;
    ::shutdown(sv[1], SHUT_RDWR); // the launcher dies
    server.join();
    FailureEvent ev;
    bool got = false;
    for (int i = 0; i < 1000 && !got; ++i) {
        got = b->poll_event(ev);
        if (!got) {
            ::usleep(1000);
        }
    }
    ASSERT_TRUE(got);
    EXPECT_EQ(ev.kind, FailureEvent::Kind::job_ending);
    EXPECT_NE(ev.detail.find("PMI-2"), std::string::npos) << ev.detail;
    EXPECT_EQ(b->fence().code(), Errc::peer_failed);
    ::close(sv[1]);
}

TEST(BootstrapSelect, pmix_without_a_server_names_the_variable)
{
    CleanEnv env;
    ::setenv("PMIX_NAMESPACE", "ulmpi-unit-no-server", 1);
    std::string why;
    std::unique_ptr<Bootstrap> b = make_bootstrap(why);
    EXPECT_EQ(b, nullptr);
    EXPECT_NE(why.find("PMIX_NAMESPACE"), std::string::npos) << why;
}

namespace {

// A process that stands for rank 0 on our node until it is killed.
pid_t start_peer()
{
    pid_t pid = ::fork();
    if (pid == 0) {
        for (;;) {
            ::pause();
        }
    }
    return pid;
}

void kill_peer(pid_t pid)
{
    ::kill(pid, SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
}

// Only report failures (the default ends the step, that is the process).
class ReportOnly {
public:
    ReportOnly()
    {
        ::setenv("ULMPI_BOOT_PMI2_END_STEP", "off", 1);
        std::string why;
        EXPECT_TRUE(find_param("boot_pmi2_end_step")->reload(why)) << why;
    }
    ~ReportOnly()
    {
        ::unsetenv("ULMPI_BOOT_PMI2_END_STEP");
        std::string why;
        (void)find_param("boot_pmi2_end_step")->reload(why);
    }
};

} // namespace

TEST(Pmi2Bootstrap, a_local_rank_that_ends_outside_a_fence_has_failed)
{
    CleanEnv env;
    ReportOnly report;
    pid_t peer = start_peer();
    ASSERT_GT(peer, 0);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    std::string error;
    int finalized = 0;
    std::thread server(fake_launcher, sv[1], &error, &finalized, static_cast<int>(peer));
    ::setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
    std::string why;
    std::unique_ptr<Bootstrap> b = make_bootstrap(why);
    ASSERT_NE(b, nullptr) << why;
    EXPECT_EQ(b->job().local_size, 2);
    ASSERT_TRUE(b->fence().ok()); // the watch starts here
    FailureEvent ev;
    EXPECT_FALSE(b->poll_event(ev));
    kill_peer(peer);
    pollfd p{b->event_fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 5000), 1); // event_fd() wakes a waiting rank
    ASSERT_TRUE(b->poll_event(ev));
    EXPECT_EQ(ev.kind, FailureEvent::Kind::rank_failed);
    EXPECT_EQ(ev.rank, 0);
    EXPECT_NE(ev.detail.find("ended before MPI_Finalize"), std::string::npos) << ev.detail;
    EXPECT_FALSE(b->poll_event(ev)); // once
    ASSERT_TRUE(b->finalize().ok());
    ::shutdown(sv[1], SHUT_RDWR); // the server's read ends
    server.join();
    ::close(sv[1]);
    EXPECT_EQ(error, "");
}

TEST(Pmi2Bootstrap, a_local_rank_that_leaves_after_the_last_fence_has_not_failed)
{
    CleanEnv env;
    ReportOnly report;
    pid_t peer = start_peer();
    ASSERT_GT(peer, 0);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    std::string error;
    int finalized = 0;
    std::thread server(fake_launcher, sv[1], &error, &finalized, static_cast<int>(peer));
    ::setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
    std::string why;
    std::unique_ptr<Bootstrap> b = make_bootstrap(why);
    ASSERT_NE(b, nullptr) << why;
    ASSERT_TRUE(b->fence().ok());
    // MPI_Finalize: the last fence. The peer has its answer and leaves before
    // we read ours.
    ASSERT_TRUE(b->fence_begin().ok());
    ::usleep(20000); // the answer is on the socket
    kill_peer(peer);
    FailureEvent ev;
    EXPECT_FALSE(b->poll_event(ev)); // reads the answer, sees the exit: not judged yet
    Status st = Errc::again;
    for (int i = 0; i < 10000 && st.code() == Errc::again; ++i) {
        st = b->fence_test(); // the fence's barrier asks for rank 0's key
        if (st.code() == Errc::again) {
            EXPECT_FALSE(b->poll_event(ev));
            ::usleep(100);
        }
    }
    EXPECT_TRUE(st.ok());
    EXPECT_FALSE(b->poll_event(ev));
    ASSERT_TRUE(b->finalize().ok());
    EXPECT_FALSE(b->poll_event(ev));
    ::shutdown(sv[1], SHUT_RDWR); // the server's read ends
    server.join();
    ::close(sv[1]);
    EXPECT_EQ(error, "");
}
