// MPI_Open_port, MPI_Close_port, MPI_Comm_accept, MPI_Comm_connect
// (MPI-4.0 11.8.2). docs/dynamic_processes.md, "Ports", has the user's view.
//
// The connection, between the root A of the accepting group and the root C
// of the connecting one, on kPortContext (ports.h):
//   1. C sends a request to the port's process, tag request|id: the port's
//      incarnation, a nonce (C's count of its connects), C's group (world
//      ranks). It is a synchronous send: C
//      knows when A has taken it. A takes requests (any source) only inside
//      MPI_Comm_accept on that port; a request for a port nobody accepts on
//      waits there until C gives up after its timeout (info key "timeout",
//      seconds, or parameter port_connect_timeout_s) and cancels it: C's
//      MPI_Comm_connect raises MPI_ERR_PORT. A request already taken is
//      answered, so a connect never gives up after its acceptor committed.
//   2. A answers, tag reply|nonce: a status (ok, or why not: another
//      incarnation of the port's slot, groups that overlap) and A's group.
//   3. Each root broadcasts the outcome and the remote group to its group;
//      then both groups agree on a context pair (port_make_intercomm): the
//      AND of the free pairs in each group, swapped between the roots, tag
//      agree|nonce (so several threads may connect to one port at once).
// Everything before step 1 is local (the port name, the arguments): a name
// that is not one of ours, or of another job, is MPI_ERR_PORT at once.
#include "mpi/ports.h"

#include "mpi/checks.h"
#include "mpi/comm_coll.h"
#include "mpi/comm_ctx.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/ft_comm.h"
#include "mpi/group.h"
#include "mpi/info.h"
#include "mpi/state.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "ulm/thread_lock.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

using namespace ulmpi::mpi;

namespace {

using Words = std::vector<std::uint32_t>;

const ulmpi::rt::IntParam timeout_param{
    "port_connect_timeout_s", 60,
    "seconds MPI_Comm_connect waits for an MPI_Comm_accept on the port before it raises "
    "MPI_ERR_PORT (info key \"timeout\" overrides it per call)"};

constexpr int kRequestTag = 0x10000000;
constexpr int kReplyTag = 0x20000000;
constexpr int kAgreeTag = 0x30000000;
constexpr int kIdBits = 0x00ffffff;
// Port ids stay below this; MPI_Comm_join's tags are above it.
constexpr int kPortIdMax = 0x007fffff;

// The ports this process has open.
std::set<int> g_open;
int g_next_id = 0;
// Each MPI_Comm_connect of this process: the answer's and the agreement's
// tags, so that connects of several threads to one port never mix.
int g_next_nonce = 0;

const MPI_Datatype kWord = MPI_UINT32_T;

ulmpi::ulm::DataRef words_ref(const void* p, int n)
{
    return datatype_get(kWord)->ref(p, static_cast<std::uint64_t>(n));
}

// Waits for a descriptor without a deadline.
template <class Msg> void wait_done(Msg* m)
{
    state().engine.wait([&] { return static_cast<bool>(m->complete); });
}

// Sends n words to world rank `peer` and receives up to m from it.
int root_swap(int peer, int tag, const std::uint32_t* out, int n, std::uint32_t* in, int m)
{
    ulmpi::ulm::Engine& eng = state().engine;
    ulmpi::ulm::RecvMsg* r = nullptr;
    ulmpi::ulm::SendMsg* s = nullptr;
    if (ulmpi::rt::Status st = eng.irecv(words_ref(in, m), peer, tag, kPortContext, &r); !st.ok()) {
        return to_mpi_class(st.code());
    }
    ulmpi::rt::Status st =
        eng.isend(words_ref(out, n), peer, tag, kPortContext, ulmpi::ulm::SendMode::standard, &s);
    if (!st.ok()) {
        eng.abandon(r, st.code());
        wait_done(r);
        eng.release(r);
        return to_mpi_class(st.code());
    }
    eng.wait([&] { return r->complete && s->complete; });
    const ulmpi::rt::Errc e = s->error != ulmpi::rt::Errc::ok ? s->error : r->error;
    eng.release(s);
    eng.release(r);
    return e == ulmpi::rt::Errc::ok ? MPI_SUCCESS : to_mpi_class(e);
}

int my_world() { return state().engine.rank(); }
int my_incarnation() { return state().boot->job().incarnation; }

// A member of c reserves `pair` if it is still free here (comm_ctx.h);
// ANDed over both groups: every member could. Below MULTIPLE, true.
int confirm_pair(Comm* c, int root, int remote_root, int tag, int pair, bool& taken)
{
    taken = true;
    if (!ulmpi::ulm::thread_lock().on()) {
        return MPI_SUCCESS;
    }
    const bool take = !context_in_use(pair);
    if (take) {
        context_reserve(pair);
    }
    std::uint32_t word = take ? 1u : 0u;
    Members lm = local_members(c);
    int e = MPI_SUCCESS;
    {
        Phase ph(c);
        ph.allreduce_band(lm, &word, 1);
        e = ph.run();
    }
    if (e == MPI_SUCCESS && c->rank == root) {
        std::uint32_t theirs = 0;
        e = root_swap(remote_root, tag, &word, 1, &theirs, 1);
        word &= theirs;
    }
    if (e == MPI_SUCCESS) {
        Phase ph(c);
        ph.bcast(lm, root, &word, 1);
        e = ph.run();
    }
    if (take) {
        context_release(pair);
    }
    taken = word == 1u;
    return e;
}

} // namespace

namespace ulmpi::mpi {

std::string port_format(const PortName& p)
{
    return "ulmpi-port/" + std::to_string(p.world) + "/" + std::to_string(p.incarnation) + "/" +
           std::to_string(p.id) + "/" + p.jobid;
}

std::string port_parse(const char* text, PortName& out)
{
    if (text == nullptr) {
        return "the port name is NULL";
    }
    const std::size_t len = ::strnlen(text, MPI_MAX_PORT_NAME);
    if (len == MPI_MAX_PORT_NAME) {
        return "the port name is not terminated within MPI_MAX_PORT_NAME characters";
    }
    constexpr const char* prefix = "ulmpi-port/";
    const std::string name(text, len);
    if (name.rfind(prefix, 0) != 0) {
        return "\"" + name + "\" is not a port name of ulmpi (MPI_Open_port gives them)";
    }
    int fields[3] = {0, 0, 0};
    std::size_t pos = std::strlen(prefix);
    for (int& f : fields) {
        const std::size_t slash = name.find('/', pos);
        if (slash == std::string::npos || slash == pos || slash - pos > 9) {
            return "\"" + name + "\" is not a well-formed port name";
        }
        for (std::size_t i = pos; i < slash; ++i) {
            if (name[i] < '0' || name[i] > '9') {
                return "\"" + name + "\" is not a well-formed port name";
            }
        }
        f = std::atoi(name.substr(pos, slash - pos).c_str());
        pos = slash + 1;
    }
    out.world = fields[0];
    out.incarnation = fields[1];
    out.id = fields[2];
    out.jobid = name.substr(pos);
    if (out.id > kPortIdMax) {
        return "\"" + name + "\" is not a well-formed port name";
    }
    return "";
}

int port_make_intercomm(Comm* c, int root, int remote_root, int tag_base,
                        const std::vector<int>& remote_world, Comm** out, const char* fn)
{
    *out = nullptr;
    const int tag = kAgreeTag | (tag_base & kIdBits);
    const bool is_root = c->rank == root;
    Members lm = local_members(c);
    for (int attempt = 0;; ++attempt) {
        ContextMask mask = context_contribution(true);
        {
            Phase ph(c);
            ph.allreduce_band(lm, mask.data(), kContextWords);
            if (int e = ph.run()) {
                return raise(c, e, fn, "the agreement among the members of %s failed",
                             c->display_name().c_str());
            }
        }
        // The pair, or -1; the same at both roots (the same AND).
        std::uint32_t pick = ~0u;
        int e = MPI_SUCCESS;
        if (is_root) {
            ContextMask theirs{};
            e = root_swap(remote_root, tag, mask.data(), kContextWords, theirs.data(),
                          kContextWords);
            for (int i = 0; i < kContextWords; ++i) {
                mask[static_cast<std::size_t>(i)] &= theirs[static_cast<std::size_t>(i)];
            }
            pick = e != MPI_SUCCESS ? ~1u
                                    : static_cast<std::uint32_t>(context_pick(
                                          mask, context_key(0, tag), attempt));
        }
        {
            Phase ph(c);
            ph.bcast(lm, root, &pick, 1);
            if (int eb = ph.run()) {
                return raise(c, eb, fn, "the broadcast among the members of %s failed",
                             c->display_name().c_str());
            }
        }
        if (pick == ~1u) {
            return raise(c, e != MPI_SUCCESS ? e : MPI_ERR_OTHER, fn,
                         "the exchange with the other group's root failed");
        }
        if (pick == ~0u) {
            return raise(c, MPI_ERR_OTHER, fn,
                         "no context id is free on every process of both groups (%d "
                         "communicators in use here)",
                         context_used_count());
        }
        const int pair = static_cast<int>(pick);
        bool taken = true;
        if (int ec = confirm_pair(c, root, remote_root, tag, pair, taken)) {
            return raise(c, ec, fn, "confirming the context with the other group failed");
        }
        if (!taken) {
            continue; // another creation took it meanwhile (MULTIPLE)
        }
        group_retain(c->local);
        Comm* n = comm_new(c->local, group_new(remote_world), c->rank, pair, c->errhandler);
        if (comm_publish(n) == MPI_COMM_NULL) {
            comm_release(n);
            return raise(c, MPI_ERR_INTERN, fn, "the communicator handle table is full");
        }
        *out = n;
        return MPI_SUCCESS;
    }
}

} // namespace ulmpi::mpi

namespace {

// The outcome a root broadcasts to its group: [status, remote root, n,
// world ranks...]. Status 0 is success; otherwise why not, in `why`.
enum : std::uint32_t { ok = 0, failed = 1 };

// Runs the broadcast of the root's outcome and, on success, the context
// agreement. `head` and `why` are the root's.
int finish(Comm* c, int root, Words& head, const std::string& why, int tag_base,
           MPI_Comm* newcomm, const char* fn)
{
    Members lm = local_members(c);
    // [status, error class, remote root, n] then the n world ranks.
    {
        Phase ph(c);
        ph.bcast(lm, root, head.data(), 4);
        if (int e = ph.run()) {
            return raise(c, e, fn, "the broadcast among the members of %s failed",
                         c->display_name().c_str());
        }
    }
    if (head[0] != ok) {
        const int cls = static_cast<int>(head[1]);
        return raise(c, cls, fn, "%s",
                     c->rank == root ? why.c_str()
                                     : "the connection failed at the root (it says why)");
    }
    std::vector<std::uint32_t> rw(head[3]);
    if (c->rank == root) {
        std::copy(head.begin() + 4, head.begin() + 4 + static_cast<std::ptrdiff_t>(head[3]),
                  rw.begin());
    }
    {
        Phase ph(c);
        ph.bcast(lm, root, rw.data(), static_cast<int>(rw.size()));
        if (int e = ph.run()) {
            return raise(c, e, fn, "the broadcast among the members of %s failed",
                         c->display_name().c_str());
        }
    }
    std::vector<int> remote(rw.begin(), rw.end());
    Comm* n = nullptr;
    if (int e = port_make_intercomm(c, root, static_cast<int>(head[2]), tag_base, remote, &n,
                                    fn)) {
        return e;
    }
    *newcomm = n->handle;
    return MPI_SUCCESS;
}

Words group_words(const Comm* c)
{
    return Words(c->local->world.begin(), c->local->world.end());
}

// The root of MPI_Comm_accept: takes one request for `port` and answers it.
// Fills head ([status, class, remote root, n, ranks]), why, and the
// connection's tag base (the connector's nonce).
void accept_root(Comm* c, const PortName& port, Words& head, std::string& why, int& tag_base)
{
    ulmpi::ulm::Engine& eng = state().engine;
    const auto max = static_cast<std::size_t>(eng.size());
    Words in(3 + max);
    ulmpi::ulm::RecvMsg* r = nullptr;
    const int tag = kRequestTag | port.id;
    if (ulmpi::rt::Status st = eng.irecv(words_ref(in.data(), static_cast<int>(in.size())),
                                         ulmpi::ulm::kAnySource, tag, kPortContext, &r);
        !st.ok()) {
        head = {failed, static_cast<std::uint32_t>(to_mpi_class(st.code())), 0, 0};
        why = "cannot wait for a connection request";
        return;
    }
    wait_done(r);
    const ulmpi::rt::Errc re = r->error;
    const int client = r->env.source;
    eng.release(r);
    if (re != ulmpi::rt::Errc::ok) {
        head = {failed, static_cast<std::uint32_t>(to_mpi_class(re)), 0, 0};
        why = std::string("waiting for a connection request failed: ") +
              ulmpi::rt::errc_name(re);
        return;
    }
    // [incarnation, nonce, n, ranks]
    tag_base = static_cast<int>(in[1]) & kPortIdMax;
    const std::uint32_t n = std::min<std::uint32_t>(in[2], static_cast<std::uint32_t>(max));
    std::uint32_t status = ok;
    std::string reason;
    if (static_cast<int>(in[0]) != port.incarnation) {
        status = 1;
        reason = "the port was opened by an earlier process of its slot";
    }
    for (std::uint32_t i = 0; i < n && status == ok; ++i) {
        if (c->local->rank_of(static_cast<int>(in[3 + i])) != MPI_UNDEFINED) {
            status = 2;
            reason = "the connecting group and the accepting group overlap (world rank " +
                     std::to_string(in[3 + i]) + " is in both)";
        }
    }
    Words reply = {status, 0};
    Words mine = group_words(c);
    reply[1] = static_cast<std::uint32_t>(mine.size());
    reply.insert(reply.end(), mine.begin(), mine.end());
    ulmpi::ulm::SendMsg* s = nullptr;
    ulmpi::rt::Status st =
        eng.isend(words_ref(reply.data(), static_cast<int>(reply.size())), client,
                  kReplyTag | tag_base, kPortContext, ulmpi::ulm::SendMode::standard, &s);
    ulmpi::rt::Errc se = st.ok() ? ulmpi::rt::Errc::ok : st.code();
    if (st.ok()) {
        wait_done(s);
        se = s->error;
        eng.release(s);
    }
    if (se != ulmpi::rt::Errc::ok) {
        head = {failed, static_cast<std::uint32_t>(to_mpi_class(se)), 0, 0};
        why = "answering the connecting process (world rank " + std::to_string(client) +
              ") failed: " + ulmpi::rt::errc_name(se);
        return;
    }
    if (status != ok) {
        const std::uint32_t cls = status == 2 ? MPI_ERR_COMM : MPI_ERR_PORT;
        head = {failed, cls, 0, 0};
        why = reason;
        return;
    }
    head = {ok, 0, static_cast<std::uint32_t>(client), n};
    head.insert(head.end(), in.begin() + 3, in.begin() + 3 + n);
}

// The root of MPI_Comm_connect: sends the request, waits for the answer at
// most `timeout_ns`.
void connect_root(Comm* c, const PortName& port, ulmpi::rt::Nanos timeout_ns, Words& head,
                  std::string& why, int& tag_base)
{
    ulmpi::ulm::Engine& eng = state().engine;
    const int server = port.world;
    tag_base = g_next_nonce++ & kPortIdMax;
    Words req = {static_cast<std::uint32_t>(port.incarnation),
                 static_cast<std::uint32_t>(tag_base), 0};
    Words mine = group_words(c);
    req[2] = static_cast<std::uint32_t>(mine.size());
    req.insert(req.end(), mine.begin(), mine.end());
    const auto max = static_cast<std::size_t>(eng.size());
    Words in(2 + max);
    ulmpi::ulm::RecvMsg* r = nullptr;
    ulmpi::ulm::SendMsg* s = nullptr;
    auto fail = [&](ulmpi::rt::Errc e, const std::string& what) {
        head = {failed, static_cast<std::uint32_t>(to_mpi_class(e)), 0, 0};
        why = what + ": " + ulmpi::rt::errc_name(e);
    };
    if (ulmpi::rt::Status st = eng.irecv(words_ref(in.data(), static_cast<int>(in.size())),
                                         server, kReplyTag | tag_base, kPortContext, &r);
        !st.ok()) {
        fail(st.code(), "cannot wait for the answer");
        return;
    }
    if (ulmpi::rt::Status st =
            eng.isend(words_ref(req.data(), static_cast<int>(req.size())), server,
                      kRequestTag | port.id, kPortContext, ulmpi::ulm::SendMode::synchronous, &s);
        !st.ok()) {
        eng.abandon(r, st.code());
        wait_done(r);
        eng.release(r);
        fail(st.code(), "cannot reach the port's process (world rank " +
                            std::to_string(server) + ")");
        return;
    }
    const ulmpi::rt::Nanos deadline = ulmpi::rt::now_ns() + timeout_ns;
    eng.wait([&] {
        return (r->complete && s->complete) || (!s->complete && ulmpi::rt::now_ns() > deadline) ||
               (s->complete && s->error != ulmpi::rt::Errc::ok);
    });
    if (!s->complete) {
        eng.cancel(s); // asks the port's process; taken meanwhile: it answers
        wait_done(s);
    }
    const bool given_up = s->cancelled;
    const ulmpi::rt::Errc se = s->error;
    eng.release(s);
    if (given_up || se != ulmpi::rt::Errc::ok) {
        eng.abandon(r, ulmpi::rt::Errc::timeout);
        wait_done(r);
        eng.release(r);
        if (given_up) {
            head = {failed, MPI_ERR_PORT, 0, 0};
            why = "no MPI_Comm_accept took the connection on port " + port_format(port) +
                  " within " + std::to_string(timeout_ns / 1000000000) +
                  " s (the port is not open, was closed, or nobody accepts on it; info key "
                  "\"timeout\" or parameter port_connect_timeout_s)";
        } else {
            fail(se, "sending the connection request to world rank " + std::to_string(server) +
                         " failed");
        }
        return;
    }
    wait_done(r);
    const ulmpi::rt::Errc re = r->error;
    eng.release(r);
    if (re != ulmpi::rt::Errc::ok) {
        fail(re, "waiting for the answer of world rank " + std::to_string(server) + " failed");
        return;
    }
    if (in[0] != ok) {
        const std::uint32_t cls = in[0] == 2 ? MPI_ERR_COMM : MPI_ERR_PORT;
        head = {failed, cls, 0, 0};
        why = in[0] == 2 ? "the connecting group and the accepting group overlap"
                         : "the port " + port_format(port) +
                               " belongs to an earlier process of its slot";
        return;
    }
    const std::uint32_t n = std::min<std::uint32_t>(in[1], static_cast<std::uint32_t>(max));
    head = {ok, 0, static_cast<std::uint32_t>(server), n};
    head.insert(head.end(), in.begin() + 2, in.begin() + 2 + n);
}

// The checks common to accept and connect; at the root, the port too.
int check_args(MPI_Comm comm, int root, MPI_Comm* newcomm, const char* fn, Comm** out)
{
    if (int e = check_intra_root(comm, root, newcomm, "newcomm", fn, out)) {
        return e;
    }
    Comm* c = *out;
    if (state().engine.replicated()) {
        return raise(c, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                     "ports are not available under --replicas (docs/replication.md)");
    }
    return MPI_SUCCESS;
}

// A port name at the root: "" or what is wrong (MPI_ERR_PORT).
std::string root_port(const char* name, bool accepting, PortName& port)
{
    std::string why = port_parse(name, port);
    if (!why.empty()) {
        return why;
    }
    if (port.jobid != state().boot->job().jobid) {
        return "port " + std::string(name) + " belongs to another job (" + port.jobid +
               "); processes of one job only can connect";
    }
    if (port.world < 0 || port.world >= state().engine.size()) {
        return "port " + std::string(name) + " names world rank " + std::to_string(port.world) +
               ", not a process of this job";
    }
    if (accepting && (port.world != my_world() || port.incarnation != my_incarnation() ||
                      g_open.count(port.id) == 0)) {
        return "port " + std::string(name) + " is not open in this process (MPI_Open_port here "
               "first)";
    }
    return "";
}

ulmpi::rt::Nanos connect_timeout(MPI_Info info)
{
    std::int64_t s = timeout_param.get();
    if (const Info* i = info_get(info)) {
        if (const std::string* v = info_pairs_find(i->pairs, "timeout")) {
            char* end = nullptr;
            const long t = std::strtol(v->c_str(), &end, 10);
            if (end != v->c_str() && t > 0) {
                s = t;
            }
        }
    }
    return static_cast<ulmpi::rt::Nanos>(std::max<std::int64_t>(s, 1)) * 1000000000;
}

int accept_or_connect(const char* port_name, MPI_Info info, int root, MPI_Comm comm,
                      MPI_Comm* newcomm, bool accepting, const char* fn)
{
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_args(comm, root, newcomm, fn, &c)) {
        return e;
    }
    *newcomm = MPI_COMM_NULL;
    Words head = {failed, MPI_ERR_PORT, 0, 0};
    std::string why;
    int tag_base = 0;
    if (c->rank == root) {
        PortName port;
        why = root_port(port_name, accepting, port);
        if (why.empty()) {
            if (accepting) {
                accept_root(c, port, head, why, tag_base);
            } else {
                connect_root(c, port, connect_timeout(info), head, why, tag_base);
            }
        }
    }
    return finish(c, root, head, why, tag_base, newcomm, fn); // tag_base: the roots' only
}

} // namespace

int PMPI_Open_port(MPI_Info info, char* port_name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Open_port";
    require_init(fn);
    if (port_name == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "port_name is NULL");
    }
    if (info != MPI_INFO_NULL && info_get(info) == nullptr) {
        return raise(nullptr, MPI_ERR_INFO, fn, "info is not a valid info object");
    }
    if (g_next_id > kPortIdMax) {
        return raise(nullptr, MPI_ERR_OTHER, fn, "this process opened %d ports already",
                     g_next_id);
    }
    PortName p;
    p.world = my_world();
    p.incarnation = my_incarnation();
    p.id = g_next_id++;
    p.jobid = state().boot->job().jobid;
    const std::string name = port_format(p);
    if (name.size() >= MPI_MAX_PORT_NAME) {
        return raise(nullptr, MPI_ERR_INTERN, fn, "the port name would be %zu characters long",
                     name.size());
    }
    std::memcpy(port_name, name.c_str(), name.size() + 1);
    g_open.insert(p.id);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Open_port");
}
ULMPI_ALIAS(MPI_Open_port)

int PMPI_Close_port(const char* port_name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Close_port";
    require_init(fn);
    PortName p;
    std::string why = port_parse(port_name, p);
    if (why.empty() && (p.world != my_world() || p.incarnation != my_incarnation() ||
                        p.jobid != state().boot->job().jobid || g_open.erase(p.id) == 0)) {
        why = "port " + std::string(port_name) + " is not open in this process";
    }
    if (!why.empty()) {
        return raise(nullptr, MPI_ERR_PORT, fn, "%s", why.c_str());
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Close_port");
}
ULMPI_ALIAS(MPI_Close_port)

int PMPI_Comm_accept(const char* port_name, MPI_Info info, int root, MPI_Comm comm,
                     MPI_Comm* newcomm) try {
    EntryGuard guard;
    return accept_or_connect(port_name, info, root, comm, newcomm, true, "MPI_Comm_accept");
} catch (...) {
    return api_exception("MPI_Comm_accept");
}
ULMPI_ALIAS(MPI_Comm_accept)

int PMPI_Comm_connect(const char* port_name, MPI_Info info, int root, MPI_Comm comm,
                      MPI_Comm* newcomm) try {
    EntryGuard guard;
    return accept_or_connect(port_name, info, root, comm, newcomm, false, "MPI_Comm_connect");
} catch (...) {
    return api_exception("MPI_Comm_connect");
}
ULMPI_ALIAS(MPI_Comm_connect)
