#include "runtime/mpirun/job_map.h"
#include "runtime/mpirun/net.h"
#include "runtime/mpirun/options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <unistd.h>

using namespace ulmpi::rt::mpirun;

namespace {

ParseOutcome parse(std::initializer_list<const char*> args, Options& o, std::string& err,
                   const char* env_timeout = nullptr)
{
    std::vector<const char*> argv{"mpirun"};
    argv.insert(argv.end(), args.begin(), args.end());
    return parse_options(static_cast<int>(argv.size()), argv.data(), env_timeout, o, err);
}

} // namespace

TEST(MpirunOptions, program_and_its_arguments)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-np", "4", "./a.out", "-n", "5", "--tag-output"}, o, err), ParseOutcome::run)
        << err;
    ASSERT_EQ(o.apps.size(), 1u);
    EXPECT_EQ(o.apps[0].np, 4);
    EXPECT_EQ(o.apps[0].argv, (std::vector<std::string>{"./a.out", "-n", "5", "--tag-output"}));
    EXPECT_FALSE(o.tag_output) << "options after the program are the program's";
}

TEST(MpirunOptions, default_is_one_process)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"hostname"}, o, err), ParseOutcome::run);
    EXPECT_EQ(o.apps[0].np, 1);
}

TEST(MpirunOptions, mpmd_contexts)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-n", "1", "master", "x", ":", "-np", "3", "worker", ":", "third"}, o, err),
              ParseOutcome::run)
        << err;
    ASSERT_EQ(o.apps.size(), 3u);
    EXPECT_EQ(o.apps[0].argv, (std::vector<std::string>{"master", "x"}));
    EXPECT_EQ(o.apps[1].np, 3);
    EXPECT_EQ(o.apps[2].np, 1);
    EXPECT_EQ(parse({"a", ":"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"a", ":", "-n", "2"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({":", "a"}, o, err), ParseOutcome::error);
}

TEST(MpirunOptions, job_wide_options)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-x", "A=1", "--x=B", "--param", "Ulm_Eager_Limit=8k", "--timeout=2.5",
                     "--wdir", "/tmp", "--bind-to", "none", "--stdin", "none", "--oversubscribe",
                     "--boot", "tcp", "-v", "prog"},
                    o, err),
              ParseOutcome::run)
        << err;
    ASSERT_EQ(o.exports.size(), 2u);
    EXPECT_EQ(o.exports[0].second.value(), "1");
    EXPECT_FALSE(o.exports[1].second.has_value());
    ASSERT_EQ(o.params.size(), 1u);
    EXPECT_EQ(o.params[0].first, "ulm_eager_limit");
    EXPECT_EQ(o.params[0].second, "8k");
    EXPECT_DOUBLE_EQ(o.timeout_s, 2.5);
    EXPECT_EQ(o.wdir, "/tmp");
    EXPECT_EQ(o.bind, BindMode::none);
    EXPECT_EQ(o.stdin_rank, -1);
    EXPECT_EQ(o.boot, BootKind::tcp);
    EXPECT_TRUE(o.verbose);
}

TEST(MpirunOptions, errors_name_the_offending_word)
{
    Options o;
    std::string err;
    EXPECT_EQ(parse({"--bogus", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("--bogus"), std::string::npos);
    EXPECT_EQ(parse({"-n", "zero", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("zero"), std::string::npos);
    EXPECT_EQ(parse({"-n"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"--param", "x", "prog"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"--param", "a-b=1", "prog"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"-x", "9X=1", "prog"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"--timeout", "-1", "prog"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"--tag-output=yes", "prog"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({}, o, err), ParseOutcome::error);
}

TEST(MpirunOptions, help_and_version)
{
    Options o;
    std::string err;
    EXPECT_EQ(parse({"--help"}, o, err), ParseOutcome::help);
    EXPECT_EQ(parse({"-h", "prog"}, o, err), ParseOutcome::help);
    EXPECT_EQ(parse({"--version"}, o, err), ParseOutcome::version);
    std::string h = help_text("mpirun");
    for (const char* word : {"--tag-output", "--timeout", "MPIEXEC_TIMEOUT", "--param", "124",
                             "127", "Exit status"}) {
        EXPECT_NE(h.find(word), std::string::npos) << word;
    }
}

TEST(MpirunOptions, timeout_option_wins_over_the_environment)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"prog"}, o, err, "3"), ParseOutcome::run);
    EXPECT_DOUBLE_EQ(o.timeout_s, 3);
    ASSERT_EQ(parse({"--timeout", "7", "prog"}, o, err, "3"), ParseOutcome::run);
    EXPECT_DOUBLE_EQ(o.timeout_s, 7);
    EXPECT_EQ(parse({"prog"}, o, err, "later"), ParseOutcome::error);
    EXPECT_NE(err.find("MPIEXEC_TIMEOUT"), std::string::npos);
}

TEST(MpirunOptions, hosts_from_the_command_line_and_a_hostfile)
{
    char path[] = "/tmp/ulmpi_hostfile_XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string text = "# comment\nlocalhost slots=2\n\n  node7 slots=4 max_slots=8 # x\n";
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-H", "a:3,b", "--hostfile", path, "prog"}, o, err), ParseOutcome::run)
        << err;
    ::unlink(path);
    ASSERT_EQ(o.hosts.size(), 4u);
    EXPECT_EQ(o.hosts[0].name, "a");
    EXPECT_EQ(o.hosts[0].slots, 3);
    EXPECT_EQ(o.hosts[1].slots, 0);
    EXPECT_EQ(o.hosts[2].name, "localhost");
    EXPECT_EQ(o.hosts[2].slots, 2);
    EXPECT_EQ(o.hosts[3].name, "node7");
    EXPECT_EQ(o.hosts[3].slots, 4);
    EXPECT_EQ(parse({"-H", "a:x", "prog"}, o, err), ParseOutcome::error);
    EXPECT_EQ(parse({"--hostfile", "/nonexistent/hosts", "prog"}, o, err), ParseOutcome::error);
}

TEST(JobMap, local_ranks_fill_this_host)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-n", "2", "a", ":", "-n", "3", "b"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 2, "box.example.org", m, err)) << err;
    EXPECT_EQ(m.size(), 5);
    EXPECT_EQ(m.num_nodes(), 1);
    EXPECT_EQ(m.host(0).name, "box.example.org");
    EXPECT_EQ(m.local_size(0), 5);
    EXPECT_EQ(m.universe_size(), 5);
    for (int r = 0; r < 5; ++r) {
        EXPECT_EQ(m.rank(r).local_rank, r);
        EXPECT_EQ(m.rank(r).app, r < 2 ? 0 : 1);
        EXPECT_EQ(m.rank(r).node, 0);
    }
    EXPECT_EQ(m.node_of_rank(), (std::vector<std::int32_t>{0, 0, 0, 0, 0}));
}

TEST(JobMap, default_spawn_slots_are_each_hosts_slots_at_least_the_minimum)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-H", "a:2,b:12", "-n", "3", "prog"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build_from(o, 2, "box", {false, false}, m, err)) << err;
    m.add_spawn_slots_auto(8);
    EXPECT_EQ(m.size(), 3);
    EXPECT_EQ(m.host(0).spawn_slots.size(), 8u);  // 2 slots: the minimum
    EXPECT_EQ(m.host(1).spawn_slots.size(), 12u); // its slots
    EXPECT_EQ(m.total(), 3 + 8 + 12);
    EXPECT_EQ(m.universe_size(), m.total());
    EXPECT_TRUE(m.is_spawn_slot(3));
    EXPECT_EQ(m.rank(3).node, 0);
    EXPECT_EQ(m.rank(3 + 8).node, 1);
}

TEST(MpirunOptions, spawn_slots_default_to_automatic_but_not_with_replicas_or_ftmpi)
{
    Options o;
    std::string err;
    ::unsetenv("ULMPI_SPAWN_SLOTS");
    ::unsetenv("ULMPI_FT_MODE");
    ASSERT_EQ(parse({"-n", "2", "prog"}, o, err), ParseOutcome::run);
    EXPECT_EQ(o.spawn_slots, -1); // the job map's default
    ASSERT_EQ(parse({"-n", "2", "--spawn-slots", "3", "prog"}, o, err), ParseOutcome::run);
    EXPECT_EQ(o.spawn_slots, 3);
    ASSERT_EQ(parse({"-n", "2", "--replicas", "2", "prog"}, o, err), ParseOutcome::run);
    EXPECT_EQ(o.spawn_slots, 0);
    ASSERT_EQ(parse({"-n", "2", "--ft-mode", "rebuild", "prog"}, o, err), ParseOutcome::run);
    EXPECT_EQ(o.spawn_slots, 0);
}

TEST(JobMap, names_of_this_machine_are_one_host_and_others_are_remote)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-H", "localhost:2,box:3", "-n", "1", "a"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 2, "box.example.org", m, err)) << err;
    EXPECT_EQ(m.num_nodes(), 1);
    EXPECT_EQ(m.host(0).slots, 5);
    EXPECT_EQ(m.universe_size(), 5);
    ASSERT_EQ(parse({"-H", "elsewhere", "a"}, o, err), ParseOutcome::run);
    ASSERT_TRUE(JobMap::build(o, 2, "box", m, err)) << err;
    EXPECT_EQ(m.num_nodes(), 1);
    EXPECT_FALSE(m.host(0).local);
    EXPECT_EQ(m.host(0).name, "elsewhere");
    EXPECT_EQ(m.host(0).slots, 1);
    EXPECT_TRUE(m.has_remote());
    EXPECT_TRUE(is_local_host("box", "box.example.org"));
    EXPECT_TRUE(is_local_host("127.0.0.1", "box"));
    EXPECT_FALSE(is_local_host("boxer", "box"));
}

namespace {
bool local_a(const std::string& name) { return name == "a"; }
std::string hosts_of(const JobMap& m)
{
    std::string s;
    for (int r = 0; r < m.size(); ++r) {
        s += m.host(m.rank(r).node).name;
    }
    return s;
}
} // namespace

TEST(JobMap, map_by_slot_fills_each_host_in_turn_and_wraps)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-H", "a:2,b:2,c", "-n", "7", "p"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "a", local_a, m, err)) << err;
    EXPECT_EQ(hosts_of(m), "aabbcaa");
    EXPECT_TRUE(m.host(0).local);
    EXPECT_FALSE(m.host(1).local);
    EXPECT_EQ(m.rank(6).local_rank, 3);
    EXPECT_EQ(m.local_size(2), 1);
    EXPECT_EQ(m.universe_size(), 7);
}

TEST(JobMap, map_by_node_goes_round_robin_over_hosts_with_room)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--map-by", "node", "-H", "a:3,b:1,c:2", "-n", "8", "p"}, o, err),
              ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "x", local_a, m, err)) << err;
    // abc, ac, a (every slot taken), then plain round-robin: ab.
    EXPECT_EQ(hosts_of(m), "abcacaab");
}

TEST(JobMap, npernode_limits_each_host_and_sets_the_count)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--npernode", "2", "-H", "a:4,b:4,c:4", "p"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "x", local_a, m, err)) << err;
    EXPECT_EQ(hosts_of(m), "aabbcc");
    ASSERT_EQ(parse({"-N", "1", "-H", "a,b", "-n", "3", "p"}, o, err), ParseOutcome::run);
    EXPECT_FALSE(JobMap::build(o, 8, "x", local_a, m, err));
    EXPECT_NE(err.find("--npernode 1"), std::string::npos);
}

TEST(JobMap, a_bare_name_is_one_slot_this_machine_too)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-H", "a,b", "-n", "2", "p"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "a", local_a, m, err)) << err;
    EXPECT_EQ(hosts_of(m), "ab") << "mpirun on host a with 8 CPUs: still one rank on each host";
    EXPECT_EQ(m.universe_size(), 2);
}

TEST(JobMap, repeated_names_add_slots_and_unused_hosts_leave_the_map)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"-H", "b,c,b,d:4", "-n", "3", "p"}, o, err), ParseOutcome::run);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "x", local_a, m, err)) << err;
    EXPECT_EQ(hosts_of(m), "bbc");
    EXPECT_EQ(m.num_nodes(), 2); // d got no rank
    EXPECT_EQ(m.universe_size(), 7);
    EXPECT_EQ(m.node_of_rank(), (std::vector<std::int32_t>{0, 0, 1}));
}

TEST(Net, hosts_file_and_boot_address)
{
    namespace net = ulmpi::rt::mpirun::net;
    char path[] = "/tmp/ulmpi_hosts_XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    std::string text = "# comment\n10.1.2.3 alpha alpha.example beta # trailing\n"
                       "::1 alpha\n10.1.2.4   gamma\nbogus delta\n";
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    std::uint32_t a = 0;
    ASSERT_TRUE(net::parse_ipv4("10.1.2.3", a));
    EXPECT_EQ(net::hosts_file_addresses("beta", path), std::vector<std::uint32_t>{a});
    EXPECT_TRUE(net::hosts_file_addresses("delta", path).empty());
    EXPECT_TRUE(net::hosts_file_addresses("alpha.exam", path).empty());
    ::unlink(path);
    EXPECT_EQ(net::ip_text(a), "10.1.2.3");

    EXPECT_TRUE(net::is_this_machine("127.0.0.1", "box"));
    std::string ip;
    std::string why;
    ASSERT_TRUE(net::choose_boot_ip("lo", {}, ip, why)) << why;
    EXPECT_EQ(ip, "127.0.0.1");
    ASSERT_TRUE(net::choose_boot_ip("127.0.0.0/8", {}, ip, why)) << why;
    EXPECT_EQ(ip, "127.0.0.1");
    EXPECT_FALSE(net::choose_boot_ip("no-such-interface0", {}, ip, why));
    EXPECT_NE(why.find("no-such-interface0"), std::string::npos);
    EXPECT_FALSE(net::choose_boot_ip("127.0.0.0/40", {}, ip, why));
}

TEST(MpirunOptions, with_ft_and_its_spellings)
{
    using ulmpi::rt::FtMode;
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--with-ft", "ulfm", "prog"}, o, err), ParseOutcome::run) << err;
    EXPECT_EQ(o.ft, FtMode::ulfm);
    ASSERT_EQ(o.params.size(), 1u);
    EXPECT_EQ(o.params[0], (std::pair<std::string, std::string>{"ft", "ulfm"}));
    ASSERT_EQ(parse({"-with-ft", "mpi", "prog"}, o, err), ParseOutcome::run) << err;
    EXPECT_EQ(o.ft, FtMode::ulfm);
    EXPECT_FALSE(o.mpich_ft);
    ASSERT_EQ(parse({"-disable-auto-cleanup", "prog"}, o, err), ParseOutcome::run) << err;
    EXPECT_EQ(o.ft, FtMode::ulfm);
    EXPECT_TRUE(o.mpich_ft) << "MPICH's spelling brings MPICH's exit rule";
    ASSERT_EQ(parse({"--disable-auto-cleanup", "--with-ft=no", "prog"}, o, err), ParseOutcome::run);
    EXPECT_EQ(o.ft, FtMode::none) << "the last one wins";
    EXPECT_FALSE(o.mpich_ft);
    ASSERT_EQ(parse({"--disable-auto-cleanup", "--with-ft", "ulfm", "prog"}, o, err),
              ParseOutcome::run);
    EXPECT_FALSE(o.mpich_ft) << "--with-ft last: ulmpi's rule";
    ASSERT_EQ(parse({"--param", "ft=ulfm", "prog"}, o, err), ParseOutcome::run) << err;
    EXPECT_EQ(o.ft, FtMode::ulfm);
    EXPECT_EQ(parse({"--with-ft", "on", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("--with-ft: 'on' is not ulfm, mpi or no"), std::string::npos) << err;
    EXPECT_EQ(parse({"--param", "ft=on", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("ft"), std::string::npos) << err;
}

TEST(MpirunOptions, ftmpi_modes_set_their_parameters)
{
    using ulmpi::rt::FtMode;
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--ft-mode", "shrink", "--ft-msg-mode", "cont", "--ft-coll-mode",
                     "nonatomic", "--ft-recovery", "manual", "prog"},
                    o, err),
              ParseOutcome::run)
        << err;
    EXPECT_EQ(o.ft, FtMode::ulfm) << "an FT-MPI mode keeps the job alive";
    using P = std::pair<std::string, std::string>;
    const std::vector<P> want = {{"ft_mode", "shrink"}, {"ft", "ulfm"}, {"ft_msg_mode", "cont"},
                                 {"ft_coll_mode", "nonatomic"}, {"ft_recovery", "manual"}};
    EXPECT_EQ(o.params, want);
    ASSERT_EQ(parse({"--ft-mode", "abort", "prog"}, o, err), ParseOutcome::run) << err;
    EXPECT_EQ(o.ft, FtMode::none);
    EXPECT_EQ(parse({"--ft-mode", "blanks", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("--ft-mode: 'blanks' is not abort, rebuild, blank or shrink"),
              std::string::npos)
        << err;
    EXPECT_EQ(parse({"--ft-msg-mode", "keep", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("--ft-msg-mode"), std::string::npos) << err;
}

TEST(MpirunOptions, initial_errhandler)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--initial-errhandler", "MPI_ERRORS_RETURN", "prog"}, o, err),
              ParseOutcome::run)
        << err;
    ASSERT_EQ(o.params.size(), 1u);
    EXPECT_EQ(o.params[0],
              (std::pair<std::string, std::string>{"initial_errhandler", "mpi_errors_return"}));
    EXPECT_EQ(parse({"--initial-errhandler", "ignore", "prog"}, o, err), ParseOutcome::error);
    EXPECT_NE(err.find("--initial-errhandler: 'ignore' is not mpi_errors_are_fatal, "
                       "mpi_errors_abort or mpi_errors_return"),
              std::string::npos)
        << err;
}

TEST(JobMap, replicas_of_a_rank_run_on_different_hosts)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--replicas", "2", "-H", "a:2,b:2", "-n", "2", "p"}, o, err),
              ParseOutcome::run)
        << err;
    EXPECT_EQ(o.replicas, 2);
    EXPECT_EQ(o.ft, ulmpi::rt::FtMode::ulfm) << "a replica's death must not end the job";
    bool param = false;
    for (const auto& [name, value] : o.params) {
        param = param || (name == "rep_replicas" && value == "2");
    }
    EXPECT_TRUE(param);
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "a", local_a, m, err)) << err;
    EXPECT_EQ(hosts_of(m), "aabb"); // process k*N + i is replica k of rank i
    EXPECT_NE(m.describe(2).find("process 2 (rank 0, replica 1) on b"), std::string::npos);

    Options o3;
    ASSERT_EQ(parse({"--replicas=3", "-H", "a:1,b:1,c:1", "-n", "3", "p"}, o3, err),
              ParseOutcome::run)
        << err;
    ASSERT_TRUE(JobMap::build(o3, 8, "a", local_a, m, err)) << err;
    EXPECT_EQ(hosts_of(m), "abcbcacab");
}

TEST(JobMap, replicas_on_one_host_share_it)
{
    Options o;
    std::string err;
    ASSERT_EQ(parse({"--replicas", "3", "-n", "2", "p"}, o, err), ParseOutcome::run) << err;
    JobMap m;
    ASSERT_TRUE(JobMap::build(o, 8, "a", local_a, m, err)) << err;
    EXPECT_EQ(m.size(), 6);
    EXPECT_EQ(m.num_nodes(), 1);
}

TEST(MpirunOptions, replicas_must_be_a_count)
{
    for (const char* bad : {"0", "x", "33", "-1"}) {
        Options o;
        std::string err;
        EXPECT_EQ(parse({"--replicas", bad, "p"}, o, err), ParseOutcome::error) << bad;
        EXPECT_NE(err.find("--replicas"), std::string::npos) << err;
    }
}
