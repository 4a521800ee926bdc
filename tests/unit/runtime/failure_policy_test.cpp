#include "runtime/mpirun/failure_policy.h"

#include "runtime/notice_board.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

using namespace ulmpi::rt;
using namespace ulmpi::rt::mpirun;
using Action = FailurePolicy::Action;

namespace {

int killed(int sig) { return sig; }            // wait status of a signal death
int exited(int code) { return (code & 0xff) << 8; } // wait status of exit(code)

} // namespace

TEST(ReadExit, tells_success_failures_and_when)
{
    EXPECT_TRUE(read_exit(exited(0), true, true).success);
    EXPECT_TRUE(read_exit(exited(0), false, false).success) << "a non-MPI program's 0";
    ExitReading e = read_exit(exited(0), true, false);
    EXPECT_FALSE(e.success);
    EXPECT_EQ(e.code, 1);
    EXPECT_EQ(e.when, " before MPI_Finalize");
    e = read_exit(killed(9), true, false);
    EXPECT_EQ(e.code, 137);
    EXPECT_NE(e.detail.find("died from signal 9"), std::string::npos);
    e = read_exit(exited(3), true, true);
    EXPECT_TRUE(e.after_finalize);
    EXPECT_EQ(e.code, 3);
}

TEST(FailurePolicy, abort_ends_the_job_at_the_first_failure)
{
    FailurePolicy p(FtMode::none, 4);
    EXPECT_FALSE(p.tolerant());
    EXPECT_EQ(p.on_exit(1, read_exit(killed(9), true, false)), Action::end_job);
    EXPECT_EQ(p.on_lost(2), Action::end_job);
    EXPECT_EQ(p.on_host_lost({3}, true), Action::end_job);
    EXPECT_EQ(p.on_exit(0, read_exit(exited(2), true, true)), Action::end_job)
        << "a bad exit after MPI_Finalize ends a job without FT too";
}

TEST(FailurePolicy, keep_going_announces_and_exits_0_when_the_survivors_finished)
{
    FailurePolicy p(FtMode::ulfm, 4);
    EXPECT_EQ(p.on_exit(2, read_exit(killed(9), true, false)), Action::announce);
    EXPECT_TRUE(p.failed(2));
    EXPECT_EQ(p.on_lost(0), Action::announce);
    std::string summary;
    EXPECT_EQ(p.final_status(summary), 0);
    EXPECT_EQ(summary, "ranks 2, 0 failed; the 2 other ranks finished (MPI_Finalize, exit status 0)");
}

TEST(FailurePolicy, keep_going_exit_status_names_a_bad_end_after_finalize)
{
    FailurePolicy p(FtMode::ulfm, 3);
    EXPECT_EQ(p.on_exit(1, read_exit(killed(11), true, false)), Action::announce);
    EXPECT_EQ(p.on_exit(2, read_exit(exited(5), true, true)), Action::remember);
    EXPECT_FALSE(p.failed(2)) << "it left MPI properly: not a failure for the others";
    std::string summary;
    EXPECT_EQ(p.final_status(summary), 5);
    EXPECT_NE(summary.find("rank 2 ended badly after MPI_Finalize"), std::string::npos);
}

TEST(FailurePolicy, keep_going_every_rank_failed_is_the_first_failure_s_status)
{
    FailurePolicy p(FtMode::ulfm, 2);
    p.on_exit(1, read_exit(killed(9), true, false));
    p.on_exit(0, read_exit(exited(4), true, false));
    std::string summary;
    EXPECT_EQ(p.final_status(summary), 137);
    EXPECT_EQ(summary, "every rank failed (ranks 1, 0); the job did not finish");
}

// mpirun --disable-auto-cleanup: MPICH's mpiexec rule, which MPICH's
// fault-tolerance tests check (a non-zero status when a rank failed).
TEST(FailurePolicy, mpich_rule_exits_with_the_first_failure_s_status_though_the_others_finished)
{
    FailurePolicy p(FtMode::ulfm, 4);
    p.set_mpich_rule(true);
    EXPECT_EQ(p.on_exit(1, read_exit(exited(3), true, false)), Action::announce);
    EXPECT_EQ(p.on_exit(2, read_exit(killed(9), true, false)), Action::announce);
    std::string summary;
    EXPECT_EQ(p.final_status(summary), 3);
    EXPECT_EQ(summary, "ranks 1, 2 failed");
    FailurePolicy q(FtMode::ulfm, 2);
    q.set_mpich_rule(true);
    q.on_exit(1, read_exit(exited(0), true, false)); // exit(0) before MPI_Finalize
    EXPECT_EQ(q.final_status(summary), 1);
    FailurePolicy none(FtMode::ulfm, 2);
    none.set_mpich_rule(true);
    EXPECT_EQ(none.final_status(summary), 0) << "nothing failed";
}

TEST(FailurePolicy, a_host_that_never_started_its_ranks_ends_even_a_tolerant_job)
{
    FailurePolicy p(FtMode::ulfm, 4);
    EXPECT_EQ(p.on_host_lost({2, 3}, false), Action::end_job);
    FailurePolicy q(FtMode::ulfm, 4);
    EXPECT_EQ(q.on_host_lost({2, 3}, true), Action::announce);
    EXPECT_TRUE(q.failed(2) && q.failed(3) && !q.failed(1));
    std::string summary;
    EXPECT_EQ(q.final_status(summary), 0);
}

TEST(FailurePolicy, nothing_failed_nothing_said)
{
    FailurePolicy p(FtMode::ulfm, 2);
    std::string summary = "x";
    EXPECT_EQ(p.final_status(summary), 0);
    EXPECT_TRUE(summary.empty());
    EXPECT_EQ(rank_list({1, 2, 3, 4}, 2), "1, 2, ...");
}

TEST(NoticeBoard, a_reader_sees_the_generation_and_the_bits_the_writer_set)
{
    NoticeBoard w;
    std::string why;
    ASSERT_TRUE(w.create(130, 3, why).ok()) << why;
    NoticeBoard r;
    ASSERT_TRUE(r.open(w.fd(), 130, 3, why).ok()) << why;
    EXPECT_EQ(r.generation(), 0u);
    EXPECT_FALSE(r.rank_failed(129));
    w.mark_rank(129, 0);
    w.mark_rank(0, 3);
    w.mark_node(2);
    EXPECT_EQ(r.generation(), 3u);
    EXPECT_TRUE(r.rank_failed(129) && r.rank_failed(0) && !r.rank_failed(64));
    EXPECT_EQ(r.failed_incarnation(129), 0);
    EXPECT_EQ(r.failed_incarnation(0), 3);
    EXPECT_EQ(r.failed_incarnation(64), -1);
    EXPECT_TRUE(r.node_failed(2) && !r.node_failed(1));
    w.mark_rank(500, 0); // out of range: ignored
    w.mark_rank(1, -1);  // no such incarnation: ignored
    EXPECT_EQ(r.generation(), 3u);
    EXPECT_FALSE(r.rank_failed(1));
    ASSERT_NE(r.generation_word(), nullptr);
    EXPECT_EQ(r.fd(), -1);
}

TEST(FailurePolicy, a_replaced_rank_counts_as_its_new_process)
{
    FailurePolicy p(FtMode::ulfm, 4);
    EXPECT_EQ(p.on_exit(2, read_exit(killed(9), true, false)), Action::announce);
    p.revive(2);
    EXPECT_FALSE(p.failed(2));
    std::string summary;
    EXPECT_EQ(p.final_status(summary), 0);
    EXPECT_EQ(summary, "rank 2 failed and was replaced by new processes (FT-MPI rebuild)");
    // The new process fails too: a failure like any other.
    EXPECT_EQ(p.on_exit(2, read_exit(killed(9), true, false)), Action::announce);
    EXPECT_TRUE(p.failed(2));
    EXPECT_EQ(p.final_status(summary), 0);
    EXPECT_EQ(summary, "rank 2 failed; the 3 other ranks finished (MPI_Finalize, exit status 0)");
}

TEST(NoticeBoard, a_cleared_rank_reads_as_not_failed_and_moves_the_generation)
{
    NoticeBoard w;
    std::string why;
    ASSERT_TRUE(w.create(4, 1, why).ok()) << why;
    NoticeBoard r;
    ASSERT_TRUE(r.open(w.fd(), 4, 1, why).ok()) << why;
    w.mark_rank(3, 0);
    EXPECT_TRUE(r.rank_failed(3));
    w.clear_rank(3);
    EXPECT_FALSE(r.rank_failed(3));
    EXPECT_EQ(r.generation(), 2u);
    w.mark_rank(3, 1); // the new process failed too
    EXPECT_EQ(r.failed_incarnation(3), 1);
}

TEST(NoticeBoard, a_board_of_another_job_shape_is_refused)
{
    NoticeBoard w;
    std::string why;
    ASSERT_TRUE(w.create(8, 2, why).ok());
    NoticeBoard r;
    EXPECT_FALSE(r.open(w.fd(), 65, 2, why).ok());
    EXPECT_NE(why.find("bytes"), std::string::npos) << why;
    EXPECT_FALSE(r.open(w.fd(), 8, 1, why).ok()) << "same size, other host count";
    EXPECT_FALSE(r.valid());
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    EXPECT_FALSE(r.open(p[0], 8, 2, why).ok());
    ::close(p[0]);
    ::close(p[1]);
}
