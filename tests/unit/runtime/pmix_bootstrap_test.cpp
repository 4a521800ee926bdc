// The PMIx bootstrap against a PMIx server that this test runs itself
// (libpmix's server side): two ranks (tests/unit/runtime/pmix_client.cpp,
// path in $ULMPI_PMIX_CLIENT) learn their job, exchange a value through a
// fence, and rank 0 turns the server's failure notice for rank 1 into a
// rank_failed event; a normal end (exit code 0) before it is not one.
#include <gtest/gtest.h>

#include <pmix.h>
#include <pmix_server.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

const char* const kNspace = "ulmpi-unit-pmix";

pmix_status_t on_connected(const pmix_proc_t*, void*, pmix_op_cbfunc_t, void*)
{
    return PMIX_OPERATION_SUCCEEDED;
}

pmix_status_t on_finalized(const pmix_proc_t*, void*, pmix_op_cbfunc_t, void*)
{
    return PMIX_OPERATION_SUCCEEDED;
}

pmix_status_t on_abort(const pmix_proc_t*, void*, int, const char*, pmix_proc_t*, size_t,
                       pmix_op_cbfunc_t, void*)
{
    return PMIX_OPERATION_SUCCEEDED;
}

// Every rank is local: the server library has gathered their data already.
pmix_status_t on_fence(const pmix_proc_t*, size_t, const pmix_info_t*, size_t, char* data,
                       size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata)
{
    if (cbfunc != nullptr) {
        cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
    }
    return PMIX_SUCCESS;
}

struct Child {
    pid_t pid = -1;
    int out = -1; // its stdout
    std::string buf;

    // The next line, or "" after timeout_ms.
    std::string line(int timeout_ms)
    {
        for (int waited = 0; waited < timeout_ms;) {
            std::size_t nl = buf.find('\n');
            if (nl != std::string::npos) {
                std::string l = buf.substr(0, nl);
                buf.erase(0, nl + 1);
                return l;
            }
            pollfd p{out, POLLIN, 0};
            if (::poll(&p, 1, 100) == 1) {
                char tmp[4096];
                ssize_t n = ::read(out, tmp, sizeof tmp);
                if (n <= 0) {
                    return "";
                }
                buf.append(tmp, static_cast<std::size_t>(n));
            } else {
                waited += 100;
            }
        }
        return "";
    }
};

void add_uint32(void* list, const char* key, std::uint32_t v)
{
    PMIx_Info_list_add(list, key, &v, PMIX_UINT32);
}

class PmixServer : public ::testing::Test {
protected:
    void SetUp() override
    {
        client_ = std::getenv("ULMPI_PMIX_CLIENT") != nullptr ? std::getenv("ULMPI_PMIX_CLIENT") : "";
        ASSERT_FALSE(client_.empty()) << "ULMPI_PMIX_CLIENT names the client program";
        char tmpl[] = "/tmp/ulmpi-pmix-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        module_.client_connected = on_connected;
        module_.client_finalized = on_finalized;
        module_.abort = on_abort;
        module_.fence_nb = on_fence;
        pmix_info_t info[2];
        PMIX_INFO_CONSTRUCT(&info[0]);
        PMIX_INFO_CONSTRUCT(&info[1]);
        PMIx_Info_load(&info[0], PMIX_SERVER_TMPDIR, dir_.c_str(), PMIX_STRING);
        PMIx_Info_load(&info[1], PMIX_SYSTEM_TMPDIR, dir_.c_str(), PMIX_STRING);
        pmix_status_t rc = PMIx_server_init(&module_, info, 2);
        PMIX_INFO_DESTRUCT(&info[0]);
        PMIX_INFO_DESTRUCT(&info[1]);
        ASSERT_EQ(rc, PMIX_SUCCESS) << PMIx_Error_string(rc);
        up_ = true;
    }

    void TearDown() override
    {
        for (Child& c : children_) {
            if (c.pid > 0) {
                ::kill(c.pid, SIGKILL);
                int st = 0;
                ::waitpid(c.pid, &st, 0);
            }
            if (c.out >= 0) {
                ::close(c.out);
            }
        }
        if (up_) {
            PMIx_server_finalize();
        }
        if (!dir_.empty()) {
            std::string cmd = "rm -rf '" + dir_ + "'";
            (void)std::system(cmd.c_str());
        }
    }

    // Two ranks on two nodes (node ids 5 and 7), both served here.
    void register_job()
    {
        void* job = PMIx_Info_list_start();
        // The maps every host gives: the nodes, and the ranks on each.
        char* nodes = nullptr;
        char* ppn = nullptr;
        ASSERT_EQ(PMIx_generate_regex("hostA,hostB", &nodes), PMIX_SUCCESS);
        ASSERT_EQ(PMIx_generate_ppn("0;1", &ppn), PMIX_SUCCESS);
        PMIx_Info_list_add(job, PMIX_NODE_MAP, nodes, PMIX_REGEX);
        PMIx_Info_list_add(job, PMIX_PROC_MAP, ppn, PMIX_REGEX);
        std::free(nodes);
        std::free(ppn);
        add_uint32(job, PMIX_JOB_SIZE, 2);
        add_uint32(job, PMIX_UNIV_SIZE, 2);
        add_uint32(job, PMIX_LOCAL_SIZE, 2);
        for (std::uint32_t r = 0; r < 2; ++r) {
            void* proc = PMIx_Info_list_start();
            pmix_rank_t rank = r;
            PMIx_Info_list_add(proc, PMIX_RANK, &rank, PMIX_PROC_RANK);
            add_uint32(proc, PMIX_NODEID, r == 0 ? 5 : 7);
            std::uint16_t lr = 0;
            PMIx_Info_list_add(proc, PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
            PMIx_Info_list_add(proc, PMIX_HOSTNAME, r == 0 ? "hostA" : "hostB", PMIX_STRING);
            pmix_data_array_t arr;
            PMIx_Info_list_convert(proc, &arr);
            PMIx_Info_list_add(job, PMIX_PROC_DATA, &arr, PMIX_DATA_ARRAY);
            PMIX_DATA_ARRAY_DESTRUCT(&arr);
            PMIx_Info_list_release(proc);
        }
        pmix_data_array_t all;
        PMIx_Info_list_convert(job, &all);
        PMIx_Info_list_release(job);
        pmix_status_t rc = PMIx_server_register_nspace(
            kNspace, 2, static_cast<pmix_info_t*>(all.array), all.size, nullptr, nullptr);
        PMIX_DATA_ARRAY_DESTRUCT(&all);
        // Without a callback the call is blocking and says so.
        ASSERT_TRUE(rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED) << PMIx_Error_string(rc);
    }

    void start(int rank)
    {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, kNspace, static_cast<pmix_rank_t>(rank));
        pmix_status_t rc =
            PMIx_server_register_client(&p, ::getuid(), ::getgid(), nullptr, nullptr, nullptr);
        ASSERT_TRUE(rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED) << PMIx_Error_string(rc);
        char** env = nullptr;
        ASSERT_EQ(PMIx_server_setup_fork(&p, &env), PMIX_SUCCESS);
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::dup2(fds[1], STDOUT_FILENO);
            ::close(fds[0]);
            ::close(fds[1]);
            for (char** e = env; e != nullptr && *e != nullptr; ++e) {
                ::putenv(*e);
            }
            ::unsetenv("ULMPI_BOOT_ADDR");
            ::unsetenv("PMI_FD");
            ::unsetenv("PMI_RANK");
            ::execl(client_.c_str(), client_.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(fds[1]);
        Child c;
        c.pid = pid;
        c.out = fds[0];
        children_.push_back(c);
    }

    int wait_exit(Child& c)
    {
        for (int i = 0; i < 200; ++i) {
            int st = 0;
            if (::waitpid(c.pid, &st, WNOHANG) == c.pid) {
                c.pid = -1;
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            ::usleep(50000);
        }
        return -1;
    }

    void notify(pmix_status_t code, int rank, int exit_code)
    {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, kNspace, static_cast<pmix_rank_t>(rank));
        pmix_info_t info[2];
        PMIX_INFO_CONSTRUCT(&info[0]);
        PMIX_INFO_CONSTRUCT(&info[1]);
        PMIx_Info_load(&info[0], PMIX_EVENT_AFFECTED_PROC, &p, PMIX_PROC);
        PMIx_Info_load(&info[1], PMIX_EXIT_CODE, &exit_code, PMIX_INT);
        pmix_status_t rc = PMIx_Notify_event(code, &p, PMIX_RANGE_NAMESPACE, info, 2, nullptr, nullptr);
        PMIX_INFO_DESTRUCT(&info[0]);
        PMIX_INFO_DESTRUCT(&info[1]);
        EXPECT_TRUE(rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED) << PMIx_Error_string(rc);
    }

    std::string client_;
    std::string dir_;
    pmix_server_module_t module_{};
    bool up_ = false;
    std::vector<Child> children_;
};

} // namespace

TEST_F(PmixServer, ranks_learn_the_job_exchange_values_and_hear_of_a_failure)
{
    register_job();
    start(0);
    start(1);
    for (int r = 0; r < 2; ++r) {
        std::string ready = children_[static_cast<std::size_t>(r)].line(20000);
        std::string node = r == 0 ? "node=0" : "node=1";
        EXPECT_NE(ready.find("ready pmix rank=" + std::to_string(r) + " size=2 " + node +
                             " nodes=2 local=0/1 host=host" + (r == 0 ? "A" : "B") +
                             " jobid=pmix-" + kNspace),
                  std::string::npos)
            << ready;
    }
    EXPECT_EQ(children_[0].line(20000), "got value of rank 1");
    EXPECT_EQ(children_[1].line(20000), "got value of rank 0");
    EXPECT_EQ(wait_exit(children_[1]), 0);
    // A normal end is no failure; an abort is.
    notify(PMIX_PROC_TERMINATED, 1, 0);
    notify(PMIX_ERR_PROC_ABORTED, 1, 9);
    std::string ev = children_[0].line(25000);
    EXPECT_NE(ev.find("event rank_failed rank=1 word=1 "), std::string::npos)
        << ev << " (the notice word counts the notices)";
    EXPECT_NE(ev.find("exit code 9"), std::string::npos) << ev;
    EXPECT_EQ(wait_exit(children_[0]), 0);
}
