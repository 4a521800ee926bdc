// PmixBootstrap: a client of a PMIx server (Slurm's `srun --mpi=pmix`, PRRTE,
// Open MPI's launchers), through Debian's libpmix (PMIx 4.2). Built only when
// meson finds libpmix (option `pmix`); libpmix itself is loaded only here,
// when a PMIx launcher started the program (runtime/pmix_lib.h).
//
// Start: PMIx_Init gives our namespace and rank; job-level values (job size,
// universe size, appnum) come from the wildcard rank, per-process ones (node
// id of every rank, our local rank, the host name) from each rank. The
// namespace is unique per Slurm step and names our shared-memory files.
//
// Values: put() is PMIx_Put(GLOBAL) of a byte object under "ulmpi.<key>";
// the fence is PMIx_Fence with PMIX_COLLECT_DATA, so that get() afterwards
// is local. fence_begin() starts PMIx_Fence_nb; its callback (on the PMIx
// progress thread) sets an atomic that fence_test() reads.
//
// Failure notices: one event handler for the process-failure codes and the
// lost connection to the server. It runs on the PMIx progress thread: it
// turns each notice into a FailureEvent under a mutex and adds 1 to an
// eventfd, which is event_fd(); poll_event() reads it back on the MPI thread.
// It also adds 1 to an atomic counter in this process, notice_word(), which
// ULM's progress loop compares at the cost of one load. A process that
// ended with exit code 0 is not a failure. (PMI-2 has no notices at all:
// under srun --mpi=pmi2 a failure is learned only from silence.)
#include "runtime/boot_wire.h"
#include "runtime/bootstrap.h"
#include "runtime/bootstrap_env.h"
#include "runtime/log.h"
#include "runtime/pmix_lib.h"
#include "runtime/pmix_names.h"


#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <sys/eventfd.h>
#include <unistd.h>

namespace ulmpi::rt {
namespace {

constexpr int kAbortWaitMs = 3000;
constexpr const char* kKeyPrefix = "ulmpi.";

const pmix_lib::Api& lib() { return pmix_lib::api(); }

std::string pmix_error(pmix_status_t rc) { return lib().error_string(rc); }

class PmixBootstrap;
// The one PMIx client of this process, for the event handler (which runs on
// the PMIx progress thread). g_mu is held while the handler uses it and
// while it is cleared, so the object never goes away under the handler.
std::mutex g_mu;
PmixBootstrap* g_self = nullptr;

// Owns a pmix_value_t returned by PMIx_Get.
struct ValuePtr {
    pmix_value_t* v = nullptr;
    ~ValuePtr()
    {
        if (v != nullptr) {
            pmix_lib::value_release(v);
        }
    }
};

// Integer of any of the unsigned/signed kinds PMIx servers use for counts.
bool value_int(const pmix_value_t* v, long& out)
{
    switch (v->type) {
    case PMIX_UINT32: out = static_cast<long>(v->data.uint32); return true;
    case PMIX_UINT16: out = v->data.uint16; return true;
    case PMIX_UINT8: out = v->data.uint8; return true;
    case PMIX_INT32: out = v->data.int32; return true;
    case PMIX_INT: out = v->data.integer; return true;
    case PMIX_UINT: out = static_cast<long>(v->data.uint); return true;
    case PMIX_UINT64: out = static_cast<long>(v->data.uint64); return true;
    case PMIX_SIZE: out = static_cast<long>(v->data.size); return true;
    case PMIX_PROC_RANK: out = static_cast<long>(v->data.rank); return true;
    default: return false;
    }
}

class PmixBootstrap final : public Bootstrap {
public:
    ~PmixBootstrap() override;

    Status start(std::string& why);

    const JobInfo& job() const override { return job_; }
    Status put(std::string_view key, const void* data, std::size_t len) override;
    Status fence() override;
    Status fence_begin() override;
    Status fence_test() override;
    Status get(int rank, std::string_view key, std::vector<std::byte>& out) override;
    [[noreturn]] void abort(int code, std::string_view msg) override;
    Status finalize() override;
    bool poll_event(FailureEvent& ev) override;
    int event_fd() const override { return efd_; }
    const std::atomic<std::uint64_t>* notice_word() const override { return &notices_; }
    const char* name() const override { return "pmix"; }
    Status publish_name(std::string_view service, std::string_view port) override
    {
        return pmix_names::publish(service, port);
    }
    Status unpublish_name(std::string_view service) override
    {
        return pmix_names::unpublish(service);
    }
    Status lookup_name(std::string_view service, std::string& port) override
    {
        return pmix_names::lookup(service, port);
    }

private:
    static void on_event(std::size_t id, pmix_status_t status, const pmix_proc_t* source,
                         pmix_info_t info[], std::size_t ninfo, pmix_info_t* results,
                         std::size_t nresults, pmix_event_notification_cbfunc_fn_t cbfunc,
                         void* cbdata);
    static void on_fence(pmix_status_t status, void* cbdata);
    void notice(pmix_status_t status, const pmix_proc_t* source, const pmix_info_t* info,
                std::size_t ninfo);
    void push(FailureEvent ev);

    bool get_int(int rank, const char* key, long& out, bool job_level);
    // Registers on_event for `codes`; false with the PMIx status when refused.
    bool register_handler(pmix_status_t* codes, std::size_t n, pmix_status_t& rc);
    Status node_map(std::string& why);

    JobInfo job_;
    pmix_proc_t me_{};
    bool initialized_ = false;
    bool finalized_ = false;
    int efd_ = -1;
    std::vector<std::size_t> handlers_; // event handler registrations

    void detach();

    std::mutex mu_; // events_ and closed_, shared with the PMIx thread
    std::deque<FailureEvent> events_;
    std::atomic<std::uint64_t> notices_{0}; // + 1 per event pushed (notice_word)
    bool closed_ = false;

    std::atomic<int> fence_state_{0}; // 0 idle, 1 running, 2 done
    std::atomic<pmix_status_t> fence_status_{PMIX_SUCCESS};
    pmix_info_t fence_info_{};

    std::map<std::pair<int, std::string>, std::vector<std::byte>, std::less<>> cache_;
};

PmixBootstrap::~PmixBootstrap()
{
    detach();
    if (initialized_ && !finalized_) {
        lib().finalize(nullptr, 0);
    }
    if (efd_ >= 0) {
        ::close(efd_);
    }
}

void PmixBootstrap::detach()
{
    for (std::size_t id : handlers_) {
        lib().deregister_event_handler(id, nullptr, nullptr);
    }
    handlers_.clear();
    {
        std::lock_guard<std::mutex> lock(g_mu);
        if (g_self == this) {
            g_self = nullptr;
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    events_.clear();
}

bool PmixBootstrap::register_handler(pmix_status_t* codes, std::size_t n, pmix_status_t& rc)
{
    pmix_info_t name;
    PMIX_INFO_CONSTRUCT(&name);
    lib().info_load(&name, PMIX_EVENT_HDLR_NAME, "ulmpi-failures", PMIX_STRING);
    rc = lib().register_event_handler(codes, n, &name, 1, &on_event, nullptr, nullptr);
    pmix_lib::info_destruct(&name);
    if (rc < 0) {
        return false;
    }
    handlers_.push_back(static_cast<std::size_t>(rc));
    return true;
}

bool PmixBootstrap::get_int(int rank, const char* key, long& out, bool job_level)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me_.nspace,
                     job_level ? PMIX_RANK_WILDCARD : static_cast<pmix_rank_t>(rank));
    ValuePtr val;
    if (lib().get(&p, key, nullptr, 0, &val.v) != PMIX_SUCCESS || val.v == nullptr) {
        return false;
    }
    return value_int(val.v, out);
}

Status PmixBootstrap::start(std::string& why)
{
    efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0) {
        why = std::string("eventfd: ") + std::strerror(errno);
        return Errc::io_error;
    }
    pmix_status_t rc = lib().init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
        const char* ns = std::getenv("PMIX_NAMESPACE");
        why = "PMIX_NAMESPACE=" + std::string(ns != nullptr ? ns : "") +
              " is set but PMIx_Init failed: " + pmix_error(rc) +
              " (is this program started by a PMIx launcher, e.g. srun --mpi=pmix?)";
        return Errc::unreachable;
    }
    initialized_ = true;

    long v = 0;
    job_.rank = static_cast<int>(me_.rank);
    if (!get_int(0, PMIX_JOB_SIZE, v, true) || v < 1) {
        why = "the PMIx server gives no job size (" PMIX_JOB_SIZE ")";
        return Errc::protocol;
    }
    job_.size = static_cast<int>(v);
    if (job_.rank < 0 || job_.rank >= job_.size) {
        why = "PMIx rank " + std::to_string(me_.rank) + " is outside a job of size " +
              std::to_string(job_.size);
        return Errc::protocol;
    }
    job_.universe_size = get_int(0, PMIX_UNIV_SIZE, v, true) && v > 0 ? static_cast<int>(v) : job_.size;
    job_.appnum = get_int(job_.rank, PMIX_APPNUM, v, false) && v >= 0 ? static_cast<int>(v) : 0;
    job_.jobid = bootenv::safe_jobid("pmix-", me_.nspace);

    if (Status st = node_map(why); !st.ok()) {
        return st;
    }
    if (!bootenv::fill_locality(job_, why)) {
        return Errc::protocol;
    }
    if (get_int(job_.rank, PMIX_LOCAL_RANK, v, false) && v >= 0 && v < job_.local_size) {
        job_.local_rank = static_cast<int>(v);
    }
    {
        pmix_proc_t p;
        PMIX_LOAD_PROCID(&p, me_.nspace, me_.rank);
        ValuePtr val;
        if (lib().get(&p, PMIX_HOSTNAME, nullptr, 0, &val.v) == PMIX_SUCCESS && val.v != nullptr &&
            val.v->type == PMIX_STRING && val.v->data.string != nullptr) {
            job_.host = val.v->data.string;
        } else {
            job_.host = bootenv::node_name();
        }
    }
    job_.local_cpus = bootenv::slurm_local_cpus();

    // Failure notices: process events and the lost server, then node
    // events in a handler of their own (Slurm's server refuses those, and a
    // refusal fails the whole registration).
    {
        std::lock_guard<std::mutex> lock(g_mu);
        g_self = this;
    }
    pmix_status_t proc_codes[] = {PMIX_ERR_PROC_ABORTED,        PMIX_PROC_TERMINATED,
                                  PMIX_EVENT_PROC_TERMINATED,   PMIX_ERR_PROC_TERM_WO_SYNC,
                                  PMIX_ERR_PROC_ABORTED_BY_SIG, PMIX_ERR_PROC_KILLED_BY_CMD,
                                  PMIX_ERR_EXIT_NONZERO_TERM,   PMIX_ERR_PROC_REQUESTED_ABORT,
                                  PMIX_ERR_LOST_CONNECTION,     PMIX_ERR_UNREACH,
                                  PMIX_ERR_JOB_ABORTED,         PMIX_ERR_JOB_ABORTED_BY_SIG};
    pmix_status_t node_codes[] = {PMIX_EVENT_NODE_DOWN, PMIX_EVENT_NODE_OFFLINE};
    if (!register_handler(proc_codes, sizeof proc_codes / sizeof proc_codes[0], rc)) {
        // Not fatal: the job runs, only without the launcher's failure notices.
        ULMPI_WARN("cannot register for PMIx process failure events: %s", pmix_error(rc).c_str());
    }
    if (!register_handler(node_codes, sizeof node_codes / sizeof node_codes[0], rc)) {
        ULMPI_DEBUG("the PMIx server offers no node events: %s", pmix_error(rc).c_str());
    }
    return Errc::ok;
}

Status PmixBootstrap::node_map(std::string& why)
{
    job_.node_of_rank.assign(static_cast<std::size_t>(job_.size), -1);
    long v = 0;
    bool all = true;
    for (int r = 0; r < job_.size && all; ++r) {
        all = get_int(r, PMIX_NODEID, v, false) && v >= 0;
        job_.node_of_rank[static_cast<std::size_t>(r)] = static_cast<int>(v);
    }
    if (all) {
        // Node ids may be any numbers; make them indexes 0..N-1 in order of
        // first appearance.
        std::map<int, int> index;
        for (int& n : job_.node_of_rank) {
            auto it = index.emplace(n, static_cast<int>(index.size())).first;
            n = it->second;
        }
        return Errc::ok;
    }
    // Without per-rank node ids: the node list and the ranks on each node.
    char* list = nullptr;
    pmix_status_t rc = lib().resolve_nodes(me_.nspace, &list);
    if (rc != PMIX_SUCCESS || list == nullptr) {
        why = "the PMIx server tells neither " PMIX_NODEID " of every rank nor the node list (" +
              pmix_error(rc) + ")";
        return Errc::protocol;
    }
    std::string nodes(list);
    std::free(list);
    job_.node_of_rank.assign(static_cast<std::size_t>(job_.size), -1);
    int index = 0;
    std::size_t pos = 0;
    while (pos <= nodes.size()) {
        std::size_t comma = nodes.find(',', pos);
        std::string node = nodes.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        pos = comma == std::string::npos ? nodes.size() + 1 : comma + 1;
        if (node.empty()) {
            continue;
        }
        pmix_proc_t* procs = nullptr;
        std::size_t n = 0;
        if (lib().resolve_peers(node.c_str(), me_.nspace, &procs, &n) == PMIX_SUCCESS) {
            for (std::size_t i = 0; i < n; ++i) {
                if (procs[i].rank < static_cast<pmix_rank_t>(job_.size)) {
                    job_.node_of_rank[procs[i].rank] = index;
                }
            }
            PMIX_PROC_FREE(procs, n);
        }
        ++index;
    }
    for (int r = 0; r < job_.size; ++r) {
        if (job_.node_of_rank[static_cast<std::size_t>(r)] < 0) {
            why = "the PMIx server places rank " + std::to_string(r) + " on no node";
            return Errc::protocol;
        }
    }
    return Errc::ok;
}

Status PmixBootstrap::put(std::string_view key, const void* data, std::size_t len)
{
    if (key.empty() || key.size() + std::strlen(kKeyPrefix) > PMIX_MAX_KEYLEN) {
        return Errc::invalid_arg;
    }
    std::string k = kKeyPrefix + std::string(key);
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    // PMIx_Put copies the value.
    val.data.bo.bytes = const_cast<char*>(static_cast<const char*>(data));
    val.data.bo.size = len;
    pmix_status_t rc = lib().put(PMIX_GLOBAL, k.c_str(), &val);
    if (rc != PMIX_SUCCESS) {
        ULMPI_ERROR("bootstrap: PMIx_Put %s: %s", k.c_str(), pmix_error(rc).c_str());
        return Errc::io_error;
    }
    const auto* b = static_cast<const std::byte*>(data);
    cache_[{job_.rank, std::string(key)}].assign(b, b + len);
    return Errc::ok;
}

Status PmixBootstrap::fence()
{
    pmix_status_t rc = lib().commit();
    if (rc != PMIX_SUCCESS) {
        ULMPI_ERROR("bootstrap: PMIx_Commit: %s", pmix_error(rc).c_str());
        return Errc::io_error;
    }
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    PMIX_INFO_CONSTRUCT(&info);
    bool collect = true;
    lib().info_load(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = lib().fence(&all, 1, &info, 1);
    pmix_lib::info_destruct(&info);
    if (rc != PMIX_SUCCESS) {
        ULMPI_ERROR("bootstrap: PMIx_Fence: %s", pmix_error(rc).c_str());
        return rc == PMIX_ERR_LOST_CONNECTION ? Errc::peer_failed : Errc::io_error;
    }
    return Errc::ok;
}

void PmixBootstrap::on_fence(pmix_status_t status, void* cbdata)
{
    auto* self = static_cast<PmixBootstrap*>(cbdata);
    self->fence_status_.store(status, std::memory_order_relaxed);
    self->fence_state_.store(2, std::memory_order_release);
}

Status PmixBootstrap::fence_begin()
{
    if (fence_state_.load(std::memory_order_acquire) == 1) {
        return Errc::internal;
    }
    pmix_status_t rc = lib().commit();
    if (rc != PMIX_SUCCESS) {
        ULMPI_ERROR("bootstrap: PMIx_Commit: %s", pmix_error(rc).c_str());
        return Errc::io_error;
    }
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_lib::info_destruct(&fence_info_);
    PMIX_INFO_CONSTRUCT(&fence_info_);
    bool collect = true;
    lib().info_load(&fence_info_, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    fence_state_.store(1, std::memory_order_release);
    rc = lib().fence_nb(&all, 1, &fence_info_, 1, &on_fence, this);
    if (rc == PMIX_OPERATION_SUCCEEDED) {
        fence_status_.store(PMIX_SUCCESS);
        fence_state_.store(2, std::memory_order_release);
    } else if (rc != PMIX_SUCCESS) {
        fence_state_.store(0, std::memory_order_release);
        ULMPI_ERROR("bootstrap: PMIx_Fence_nb: %s", pmix_error(rc).c_str());
        return Errc::io_error;
    }
    return Errc::ok;
}

Status PmixBootstrap::fence_test()
{
    if (fence_state_.load(std::memory_order_acquire) != 2) {
        return Errc::again;
    }
    fence_state_.store(0, std::memory_order_relaxed);
    pmix_status_t rc = fence_status_.load(std::memory_order_relaxed);
    if (rc != PMIX_SUCCESS) {
        ULMPI_ERROR("bootstrap: PMIx fence: %s", pmix_error(rc).c_str());
        return rc == PMIX_ERR_LOST_CONNECTION ? Errc::peer_failed : Errc::io_error;
    }
    return Errc::ok;
}

Status PmixBootstrap::get(int rank, std::string_view key, std::vector<std::byte>& out)
{
    if (rank < 0 || rank >= job_.size || key.empty() ||
        key.size() + std::strlen(kKeyPrefix) > PMIX_MAX_KEYLEN) {
        return Errc::invalid_arg;
    }
    auto it = cache_.find(std::pair<int, std::string>(rank, key));
    if (it != cache_.end()) {
        out = it->second;
        return Errc::ok;
    }
    std::string k = kKeyPrefix + std::string(key);
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me_.nspace, static_cast<pmix_rank_t>(rank));
    ValuePtr val;
    pmix_status_t rc = lib().get(&p, k.c_str(), nullptr, 0, &val.v);
    if (rc == PMIX_ERR_NOT_FOUND || rc == PMIX_ERR_PROC_ENTRY_NOT_FOUND) {
        return Errc::invalid_arg;
    }
    if (rc != PMIX_SUCCESS || val.v == nullptr) {
        ULMPI_ERROR("bootstrap: PMIx_Get %s of rank %d: %s", k.c_str(), rank, pmix_error(rc).c_str());
        return rc == PMIX_ERR_LOST_CONNECTION ? Errc::peer_failed : Errc::io_error;
    }
    if (val.v->type != PMIX_BYTE_OBJECT) {
        ULMPI_ERROR("bootstrap: PMIx value %s of rank %d is not a byte object", k.c_str(), rank);
        return Errc::protocol;
    }
    const auto* b = reinterpret_cast<const std::byte*>(val.v->data.bo.bytes);
    out.assign(b, b + val.v->data.bo.size);
    cache_[{rank, std::string(key)}] = out;
    return Errc::ok;
}

void PmixBootstrap::abort(int code, std::string_view msg)
{
    bootenv::print_abort(job_.rank, code, msg);
    std::string text = "rank " + std::to_string(job_.rank) + " called MPI_Abort with code " +
                       std::to_string(code) + (msg.empty() ? "" : ": ") + std::string(msg);
    bootenv::let_output_drain();
    // Every process of our namespace; the server ends them (this one included).
    pmix_status_t rc = lib().abort(code, text.c_str(), nullptr, 0);
    if (rc == PMIX_SUCCESS) {
        timespec step{0, 10 * 1000 * 1000};
        for (int waited = 0; waited < kAbortWaitMs; waited += 10) {
            ::nanosleep(&step, nullptr);
        }
    }
    ::_exit(wire::abort_exit_status(code));
}

Status PmixBootstrap::finalize()
{
    if (finalized_ || !initialized_) {
        return Errc::ok;
    }
    finalized_ = true;
    detach();
    pmix_status_t rc = lib().finalize(nullptr, 0);
    if (rc != PMIX_SUCCESS) {
        ULMPI_ERROR("bootstrap: PMIx_Finalize: %s", pmix_error(rc).c_str());
        return Errc::io_error;
    }
    return Errc::ok;
}

void PmixBootstrap::push(FailureEvent ev)
{
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (closed_) {
            return;
        }
        events_.push_back(std::move(ev));
    }
    notices_.fetch_add(1, std::memory_order_release);
    std::uint64_t one = 1;
    ssize_t w = ::write(efd_, &one, sizeof one);
    (void)w; // EAGAIN only when the counter is full: it is readable already
}

void PmixBootstrap::notice(pmix_status_t status, const pmix_proc_t* source, const pmix_info_t* info,
                           std::size_t ninfo)
{
    std::vector<pmix_proc_t> affected;
    bool have_exit = false;
    int exit_code = 0;
    std::string text;
    for (std::size_t i = 0; i < ninfo; ++i) {
        const pmix_info_t& in = info[i];
        if (PMIX_CHECK_KEY(&in, PMIX_EVENT_AFFECTED_PROC) && in.value.type == PMIX_PROC &&
            in.value.data.proc != nullptr) {
            affected.push_back(*in.value.data.proc);
        } else if (PMIX_CHECK_KEY(&in, PMIX_EVENT_AFFECTED_PROCS) &&
                   in.value.type == PMIX_DATA_ARRAY && in.value.data.darray != nullptr &&
                   in.value.data.darray->type == PMIX_PROC) {
            const auto* procs = static_cast<const pmix_proc_t*>(in.value.data.darray->array);
            for (std::size_t k = 0; k < in.value.data.darray->size; ++k) {
                affected.push_back(procs[k]);
            }
        } else if (PMIX_CHECK_KEY(&in, PMIX_EXIT_CODE)) {
            long v = 0;
            if (in.value.type == PMIX_INT) {
                v = in.value.data.integer;
                have_exit = true;
            } else if (value_int(&in.value, v)) {
                have_exit = true;
            }
            exit_code = static_cast<int>(v);
        } else if (PMIX_CHECK_KEY(&in, PMIX_EVENT_TEXT_MESSAGE) && in.value.type == PMIX_STRING &&
                   in.value.data.string != nullptr) {
            text = in.value.data.string;
        }
    }
    std::string what = text.empty() ? std::string(lib().error_string(status)) : text;

    if (status == PMIX_ERR_LOST_CONNECTION || status == PMIX_ERR_UNREACH ||
        status == PMIX_ERR_JOB_ABORTED || status == PMIX_ERR_JOB_ABORTED_BY_SIG) {
        FailureEvent ev;
        ev.kind = FailureEvent::Kind::job_ending;
        ev.detail = "the PMIx server reports: " + what;
        push(std::move(ev));
        return;
    }
    if ((status == PMIX_PROC_TERMINATED || status == PMIX_EVENT_PROC_TERMINATED) &&
        (!have_exit || exit_code == 0)) {
        return; // a normal end
    }
    if (affected.empty() && source != nullptr) {
        affected.push_back(*source);
    }
    for (const pmix_proc_t& p : affected) {
        if (!PMIX_CHECK_NSPACE(p.nspace, me_.nspace) || p.rank == me_.rank) {
            continue;
        }
        if (status == PMIX_EVENT_NODE_DOWN || status == PMIX_EVENT_NODE_OFFLINE) {
            // A node event names the node through its processes.
            FailureEvent ev;
            ev.kind = FailureEvent::Kind::rank_failed;
            ev.rank = static_cast<int>(p.rank);
            ev.detail = "its node went down (" + what + ")";
            if (p.rank < static_cast<pmix_rank_t>(job_.size)) {
                push(std::move(ev));
            }
            continue;
        }
        if (p.rank == PMIX_RANK_WILDCARD || p.rank >= static_cast<pmix_rank_t>(job_.size)) {
            continue;
        }
        FailureEvent ev;
        ev.kind = FailureEvent::Kind::rank_failed;
        ev.rank = static_cast<int>(p.rank);
        ev.detail = what;
        if (have_exit) {
            ev.detail += " (exit code " + std::to_string(exit_code) + ")";
        }
        push(std::move(ev));
    }
}

void PmixBootstrap::on_event(std::size_t, pmix_status_t status, const pmix_proc_t* source,
                             pmix_info_t info[], std::size_t ninfo, pmix_info_t*, std::size_t,
                             pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata)
{
    {
        std::lock_guard<std::mutex> lock(g_mu);
        if (g_self != nullptr) {
            g_self->notice(status, source, info, ninfo);
        }
    }
    if (cbfunc != nullptr) {
        // Let other handlers (the library's default one) see it too.
        cbfunc(PMIX_SUCCESS, nullptr, 0, nullptr, nullptr, cbdata);
    }
}

bool PmixBootstrap::poll_event(FailureEvent& ev)
{
    std::uint64_t count = 0;
    while (::read(efd_, &count, sizeof count) == static_cast<ssize_t>(sizeof count)) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (events_.empty()) {
        return false;
    }
    ev = std::move(events_.front());
    events_.pop_front();
    if (!events_.empty()) {
        std::uint64_t one = 1;
        ssize_t w = ::write(efd_, &one, sizeof one); // still readable for the rest
        (void)w;
    }
    return true;
}

} // namespace

bool pmix_built() { return true; }

std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::string& why)
{
    std::string load_why;
    if (!pmix_lib::load(load_why)) {
        const char* ns = std::getenv("PMIX_NAMESPACE");
        why = "PMIX_NAMESPACE=" + std::string(ns != nullptr ? ns : "") +
              " is set (a PMIx launcher started this program) but " + load_why +
              "; install libpmix2 or start the program with srun --mpi=pmi2";
        return nullptr;
    }
    auto b = std::make_unique<PmixBootstrap>();
    if (!b->start(why).ok()) {
        return nullptr;
    }
    return b;
}

} // namespace ulmpi::rt
