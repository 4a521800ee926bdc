// ulmpi_daemon: mpirun's stand-in on another host.
//
// Started by mpirun's launch agent (`ssh host ulmpi_daemon ...`, `ip netns
// exec host ulmpi_daemon ...`) with the job secret on its stdin. It connects
// back to mpirun over TCP (DAEMON_HELLO), receives the host's part of the
// job (LAUNCH) and then, in one poll() loop:
//
//   * forks the host's ranks exactly as mpirun forks local ones (launcher.h:
//     own process group, PR_SET_PDEATHSIG SIGKILL, pipes for stdout/stderr,
//     the launcher environment with ULMPI_BOOT_ADDR naming this daemon) and
//     reports each with SPAWNED;
//   * relays the ranks' bootstrap frames (Relay) over its one connection;
//   * sends their output up as OUTPUT frames as it arrives (mpirun cuts it
//     into lines), reading a pipe only while less than kUpHighWater bytes
//     wait to go up, so a slow mpirun slows the ranks instead of filling
//     memory;
//   * reports every exit with EXITED, after draining that rank's bootstrap
//     connection and pipes, so an ABORT or FINALIZE and the last words come
//     first;
//   * applies SIGNAL to every rank's process group (to one rank's when the
//     header names it: a rank that a fault-tolerant job declared failed),
//     and STDIN to the stdin rank's pipe;
//   * in a fault-tolerant job (the LAUNCH environment sets ULMPI_FT to ulfm
//     or mpi), keeps the host's notice board (runtime/notice_board.h): the
//     ranks inherit it, and every EVENT from mpirun is marked on it after
//     it went down to the ranks' connections;
//   * ends the ranks' stray output holders 1 s after the last rank ended, as
//     mpirun does;
//   * in a replicated job (--replicas), is a child subreaper and adopts the
//     process a substitute of this host forks for its dead sibling (replica
//     recovery, docs/replication.md): ADOPT expect from mpirun lets that
//     process connect as the re-created rank; ADOPT take (its pid and the
//     numbers of its pipes' read ends) makes it a rank of this host: its
//     pipes are opened through /proc/<pid>/fd/N, as mpirun does on its own
//     host, and from then on it is reaped, reported (OUTPUT, EXITED) and
//     signalled as the ranks the daemon started; ADOPTED answers. The
//     rank's earlier process's streams end first.
//
// It ends at SHUTDOWN (kill what is left, remove /dev/shm/ulmpi-<jobid>*,
// BYE, exit 0), or when it loses mpirun (connection closed or timed out by
// keepalive) or gets SIGTERM/SIGINT/SIGHUP: then it kills its ranks, removes
// the files and exits 1.
#pragma once

#include "runtime/boot_wire.h"
#include "runtime/clock.h"
#include "runtime/notice_board.h"
#include "runtime/shm_segment.h"
#include "runtime/daemon/relay.h"
#include "runtime/mpirun/boot_listener.h"

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ulmpi::rt::daemon {

struct DaemonArgs {
    wire::BootAddr boot;  // mpirun
    int node = 0;
    std::string host;
    std::string jobid;
    wire::Secret secret{};
};

class Daemon final : public Relay::Uplink {
public:
    explicit Daemon(DaemonArgs args) : args_(std::move(args)) {}
    ~Daemon() override;
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Runs until the job ends; returns the daemon's exit status.
    int run();

    void up(wire::Bytes frame) override;
    void drain_stdout(int rank) override;

private:
    struct Rank {
        int rank = 0;
        pid_t pid = -1;
        bool reaped = false;
        int out_fd = -1;
        int err_fd = -1;
        int in_fd = -1;     // the stdin rank's pipe
        std::string in_buf; // STDIN data not written yet
        bool in_eof = false;
        bool adopted = false; // a re-created replica (ADOPT take)
    };

    bool connect_up(std::string& why);
    bool setup_signals();
    void loop();
    void on_up_frame(wire::Message& m);
    void launch(const wire::Launch& l);
    void read_output(Rank& r, int stream, bool drain);
    void close_stream(Rank& r, int stream);
    void write_stdin(Rank& r);
    void reap();
    void signal_ranks(int sig, int only_rank = -1);
    void on_event(const wire::Event& ev);
    void adopt(int rank, const wire::Adopt& a);
    void flush_up(bool block); // block: wait up to kByeWaitMs for room
    void read_up();
    // Kills what is left, removes the job's files; BYE when mpirun asked.
    void finish(bool bye);
    bool outputs_open() const;

    DaemonArgs args_;
    int up_fd_ = -1;
    wire::FrameReader up_reader_{wire::kMaxFrame};
    wire::Bytes up_out_;
    std::size_t up_pos_ = 0;
    bool up_lost_ = false;
    int sig_fd_ = -1;
    mpirun::BootListener down_;
    std::unique_ptr<Relay> relay_;
    std::vector<Rank> ranks_;
    NoticeBoard board_; // fault-tolerant jobs only
    HostSegmentFd shm_; // this host's shared memory (its ranks map it)
    bool subreaper_ = false; // replicated job: re-created replicas become our children
    bool launched_ = false;
    bool listening_ = false; // the ranks' socket (first LAUNCH)
    bool done_ = false;
    int exit_status_ = 0;
    Nanos drain_until_ = 0;
    std::string lost_reason_;
};

} // namespace ulmpi::rt::daemon
