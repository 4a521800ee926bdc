#include "mpi/message.h"

#include "mpi/datatype/datatype.h"
#include "mpi/handle.h"
#include "mpi/state.h"
#include "runtime/log.h"
#include "runtime/pool.h"

#include <vector>

namespace ulmpi::mpi {
namespace {

constexpr int kNoProcIndex = 1; // MPI_MESSAGE_NO_PROC = (MESSAGE << 24) | 1

static_assert(MPI_MESSAGE_NO_PROC == ((ULMPI_KIND_MESSAGE << 24) | kNoProcIndex));
static_assert(MPI_MESSAGE_NULL == (ULMPI_KIND_MESSAGE << 24));

struct Messages {
    HandleTable<Message, ULMPI_KIND_MESSAGE> table;
    rt::Pool<Message> pool{64};
    Message no_proc;

    Messages()
    {
        no_proc.handle = MPI_MESSAGE_NO_PROC;
        no_proc.no_proc = true;
        table.set_predefined(kNoProcIndex, &no_proc);
    }
};

Messages& messages()
{
    static auto* m = new Messages; // never destroyed: exit handlers may still look
    return *m;
}

} // namespace

Message* message_new(Comm* comm)
{
    Messages& ms = messages();
    Message* m = ms.pool.get();
    if (m == nullptr) {
        return nullptr;
    }
    m->handle = ms.table.insert(m);
    if (m->handle == 0) {
        ms.pool.put(m);
        return nullptr;
    }
    m->comm = comm;
    comm_retain(comm);
    return m;
}

Message* message_get(MPI_Message h) { return messages().table.get(h); }

void message_free(Message* m)
{
    if (m->no_proc) {
        return;
    }
    Messages& ms = messages();
    Comm* c = m->comm;
    ms.table.erase(m->handle);
    ms.pool.put(m);
    comm_release(c);
}

void message_finalize()
{
    Messages& ms = messages();
    std::vector<Message*> left;
    ms.table.for_each_user([&](Message* m) {
        if (m->msg != nullptr) {
            left.push_back(m);
        }
    });
    if (left.empty()) {
        return;
    }
    ULMPI_WARN("MPI_Finalize: %zu message(s) taken by MPI_Mprobe/MPI_Improbe were never received "
               "(MPI_Mrecv/MPI_Imrecv); their data is dropped",
               left.size());
    ulm::Engine& eng = state().engine;
    const ulm::DataRef nothing = datatype_get(MPI_BYTE)->ref(nullptr, 0);
    for (Message* m : left) {
        ulm::RecvMsg* r = nullptr;
        // Received into zero bytes: truncated, which is what we want here.
        if (eng.imrecv(m->msg, nothing, &r).ok()) {
            eng.wait([r] { return r->complete; });
            eng.release(r);
        }
        message_free(m);
    }
}

} // namespace ulmpi::mpi
