// Ports (MPI-4.0 11.8.2, "Establishing Communication"): the names that
// MPI_Open_port hands out, and the rendezvous channel the roots of
// MPI_Comm_accept and MPI_Comm_connect use (mpi/ports.cpp). MPI_Comm_join
// (mpi/comm_join.cpp) shares the way two groups agree on a context.
//
// A port name is "ulmpi-port/<world rank>/<incarnation>/<id>/<job id>": the
// process that opened it, which incarnation of its slot, the port's number
// in that process, and the job. Processes of one job (its ranks and the
// processes spawned into it) connect to each other; a port of another job
// is refused with MPI_ERR_PORT (there is no wire-up between jobs).
#pragma once

#include "mpi/comm.h"
#include "ulm/types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ulmpi::mpi {

// Point-to-point traffic of the rendezvous between two roots (never a
// communicator's: a connect request reaches a process before it shares
// any communicator with the requester).
inline constexpr ulm::ContextId kPortContext{0xfff3'0000u};

struct PortName {
    int world = -1;
    int incarnation = 0;
    int id = -1;
    std::string jobid;
};

// "" when `text` is one of our port names (filled into `out`), else what is
// wrong with it.
std::string port_parse(const char* text, PortName& out);
std::string port_format(const PortName& p);

// The two roots of a connection, once they know each other, and their
// groups: each group ANDs its members' free context pairs, the roots swap
// the ANDs (and, under MPI_THREAD_MULTIPLE, confirm the pair over both
// groups), and every member builds the intercommunicator. `remote_root` is
// significant at the root only; `tag_base` keeps two connections of the
// same pair of roots apart. Returns MPI_SUCCESS with *out set, or a raised
// error.
int port_make_intercomm(Comm* c, int root, int remote_root, int tag_base,
                        const std::vector<int>& remote_world, Comm** out, const char* fn);

} // namespace ulmpi::mpi
