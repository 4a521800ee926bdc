// Matched messages (MPI-3.1 3.8.2-3.8.3). MPI_Mprobe / MPI_Improbe take a
// message out of matching (ulm::Engine::improbe): from then on no receive
// and no other probe can see it, and the program holds it as an
// MPI_Message until MPI_Mrecv / MPI_Imrecv receive exactly that message
// (ulm::Engine::imrecv). A rendezvous message stays at its first fragment
// meanwhile: its sender waits, as for any message no receive has matched,
// and the rest of the protocol (clear-to-send, or the single-copy read)
// starts when the message is received.
//
// Who owns what: a Message owns the ULM descriptor (ulm::Unexpected) and
// one reference to its communicator until it is received; receiving frees
// the Message and its handle (the handle becomes MPI_MESSAGE_NULL).
// MPI_MESSAGE_NO_PROC (a probe of MPI_PROC_NULL) is a predefined Message
// without descriptor or communicator; receiving it changes nothing but
// the handle.
//
// At MPI_Finalize a message still held is erroneous (a pending
// communication, MPI-3.1 8.7): message_finalize() warns once and receives
// each one into an empty buffer, so that its storage goes and a sender
// still waiting for it (rendezvous, synchronous mode) is released rather
// than left hanging.
#pragma once

#include "mpi/comm.h"
#include "mpi/entry.h"
#include "ulm/message.h"

namespace ulmpi::mpi {

struct Message {
    int handle = 0;
    bool no_proc = false;           // MPI_MESSAGE_NO_PROC
    Comm* comm = nullptr;           // retained; nullptr for MPI_MESSAGE_NO_PROC
    ulm::Unexpected* msg = nullptr; // taken out of matching (set by the probe)
};

// A new message on comm (retained), with a handle and no descriptor yet:
// a probe makes it before it takes a message out of matching, so that it
// never holds a descriptor it cannot hand over. nullptr when out of memory
// or handles.
Message* message_new(Comm* comm);
// nullptr for MPI_MESSAGE_NULL and invalid handles; MPI_MESSAGE_NO_PROC
// resolves to its predefined object.
Message* message_get(MPI_Message h);
// Drops a received message: its handle and its communicator reference (the
// descriptor belongs to the receive now). No-op for MPI_MESSAGE_NO_PROC.
void message_free(Message* m);
// Start of MPI_Finalize: messages never received (see the top).
void message_finalize();

} // namespace ulmpi::mpi
