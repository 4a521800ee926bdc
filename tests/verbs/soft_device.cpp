#include "tests/verbs/soft_device.h"

#include "runtime/clock.h"
#include "tests/verbs/soft_memory.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ulmpi::soft {

using namespace path::verbs;

namespace {

constexpr std::uint64_t kMagic = 0x756c6d7069736f66ULL;
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kMaxDev = 4;
constexpr std::uint32_t kMaxPort = 4;
constexpr std::uint32_t kMaxProcs = 256;
constexpr std::uint32_t kMaxQps = 4096;
constexpr std::uint32_t kMaxCqs = 512;
constexpr std::uint32_t kMaxSrqs = 256;
constexpr std::uint32_t kMaxMrs = 65535;
constexpr std::uint32_t kSrqRing = 8192;
constexpr std::uint32_t kCqRing = 8192;
constexpr std::uint32_t kQpnBase = 0x100;
constexpr std::size_t kPage = 4096;

struct PortSlot {
    std::uint32_t active;
    std::uint32_t epoch;
    std::uint16_t lid;
    std::uint8_t pad[6];
    std::uint8_t gid[16];
};
struct ProcSlot {
    std::int32_t pid;
    std::uint32_t in_use;
    std::uint64_t pool_base;
    std::uint32_t objects; // queue pairs, queues and registrations it holds
    std::uint32_t pad;
};
struct QpSlot {
    std::uint32_t in_use;
    std::uint32_t proc;
    std::uint8_t state;
    std::uint8_t port;
    std::uint8_t dev;
    std::uint8_t global;
    std::uint8_t rnr_retry;
    std::uint8_t retry_cnt;
    std::uint8_t timeout;
    std::uint8_t inject_status;
    std::uint32_t access;
    std::uint32_t dest_qpn;
    std::uint32_t rq_psn;
    std::uint32_t sq_psn;
    std::uint16_t dlid;
    std::uint16_t pad;
    std::uint8_t dgid[16];
    std::uint32_t path_mtu;
    std::uint32_t srq;
    std::uint32_t recv_cq;
    std::uint32_t send_cq;
    std::int32_t inject_after; // -1: none
    std::uint32_t access_error_pending;
};
struct RecvWqe {
    std::uint64_t wr_id;
    std::uint64_t addr;
    std::uint32_t len;
    std::uint32_t lkey;
};
struct SrqSlot {
    std::uint32_t in_use;
    std::uint32_t proc;
    std::uint64_t head;
    std::uint64_t tail;
    std::uint32_t depth;
    std::uint32_t pad;
    RecvWqe ring[kSrqRing];
};
struct CqSlot {
    std::uint32_t in_use;
    std::uint32_t proc;
    std::uint64_t head;
    std::uint64_t tail;
    std::uint32_t depth;
    std::uint32_t overrun;
    Wc ring[kCqRing];
};
struct MrSlot {
    std::uint32_t in_use;
    std::uint32_t proc;
    std::uint32_t gen;
    std::uint32_t access;
    std::uint64_t addr;
    std::uint64_t len;
    std::uint64_t pages_addr; // the owner's page list, read with process_vm_readv
    std::uint64_t npages;
    std::uint32_t dev;
    std::uint32_t pad;
};
struct Fabric {
    std::atomic<std::uint64_t> magic;
    std::uint32_t version;
    std::uint32_t devices;
    std::uint32_t ports;
    std::uint32_t mtu;
    std::uint32_t max_inline;
    std::uint32_t link;
    pthread_mutex_t lock;
    PortSlot port[kMaxDev][kMaxPort];
    FabricCounters counters;
    ProcSlot procs[kMaxProcs];
    QpSlot qps[kMaxQps];
    SrqSlot srqs[kMaxSrqs];
    CqSlot cqs[kMaxCqs];
    MrSlot mrs[kMaxMrs];
};

// Not "ulmpi-...": test harnesses sweep /dev/shm/ulmpi-* files a job left.
std::string seg_name(const std::string& fabric) { return "/verbs-soft-" + fabric; }

class Guard {
public:
    explicit Guard(Fabric* f) : f_(f)
    {
        if (pthread_mutex_lock(&f_->lock) == EOWNERDEAD) {
            pthread_mutex_consistent(&f_->lock);
        }
    }
    ~Guard() { pthread_mutex_unlock(&f_->lock); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

private:
    Fabric* f_;
};

// Maps the fabric; creates and initializes it when `opt` is given and it
// does not exist yet.
Fabric* attach(const std::string& name, const FabricOptions* opt, std::string& why)
{
    const std::string n = seg_name(name);
    bool created = false;
    int fd = -1;
    if (opt != nullptr) {
        fd = ::shm_open(n.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        created = fd >= 0;
    }
    if (fd < 0) {
        fd = ::shm_open(n.c_str(), O_RDWR, 0600);
    }
    if (fd < 0) {
        why = "soft fabric " + n + ": " + std::strerror(errno);
        return nullptr;
    }
    if (created && ::ftruncate(fd, sizeof(Fabric)) != 0) {
        why = std::string("soft fabric ftruncate: ") + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    // Wait for the creator's ftruncate.
    struct stat st {};
    for (int i = 0; i < 5000; ++i) {
        if (::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= sizeof(Fabric)) {
            break;
        }
        ::usleep(1000);
    }
    void* p = reinterpret_cast<void*>(::syscall(SYS_mmap, nullptr, sizeof(Fabric), PROT_READ | PROT_WRITE,
                                                MAP_SHARED, fd, 0));
    ::close(fd);
    if (p == MAP_FAILED || reinterpret_cast<long>(p) < 0) {
        why = std::string("soft fabric mmap: ") + std::strerror(errno);
        return nullptr;
    }
    auto* f = static_cast<Fabric*>(p);
    if (created) {
        f->version = kVersion;
        f->devices = static_cast<std::uint32_t>(std::clamp(opt->devices, 1, static_cast<int>(kMaxDev)));
        f->ports = static_cast<std::uint32_t>(std::clamp(opt->ports, 1, static_cast<int>(kMaxPort)));
        f->mtu = opt->mtu;
        f->max_inline = opt->max_inline;
        f->link = static_cast<std::uint32_t>(opt->link);
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&f->lock, &a);
        pthread_mutexattr_destroy(&a);
        for (std::uint32_t d = 0; d < kMaxDev; ++d) {
            for (std::uint32_t q = 0; q < kMaxPort; ++q) {
                PortSlot& ps = f->port[d][q];
                ps.active = 1;
                ps.lid = static_cast<std::uint16_t>(1 + d * kMaxPort + q);
                ps.gid[0] = 0xfe;
                ps.gid[1] = 0x80;
                ps.gid[14] = static_cast<std::uint8_t>(d + 1);
                ps.gid[15] = static_cast<std::uint8_t>(q + 1);
            }
        }
        f->magic.store(kMagic, std::memory_order_release);
    } else {
        for (int i = 0; i < 5000 && f->magic.load(std::memory_order_acquire) != kMagic; ++i) {
            ::usleep(1000);
        }
        if (f->magic.load(std::memory_order_acquire) != kMagic || f->version != kVersion) {
            why = "soft fabric " + n + " is not ready or of another version";
            ::syscall(SYS_munmap, p, sizeof(Fabric));
            return nullptr;
        }
    }
    return f;
}

void detach(Fabric* f) { ::syscall(SYS_munmap, f, sizeof(Fabric)); }

std::uint32_t key_of(std::uint32_t idx, std::uint32_t gen) { return ((gen & 0xffffu) << 16) | (idx + 1); }

// Frees every queue pair, queue and registration of process slot `proc`
// (the fabric's lock held): what the kernel does for a process that exits,
// however it ends. A queue pair of a dead process must not stay: its slot
// would answer for whichever process takes the dead one's slot next.
void release_objects(Fabric* f, std::uint32_t proc)
{
    for (QpSlot& q : f->qps) {
        if (q.in_use != 0 && q.proc == proc) {
            q.in_use = 0;
        }
    }
    for (SrqSlot& q : f->srqs) {
        if (q.in_use != 0 && q.proc == proc) {
            q.in_use = 0;
        }
    }
    for (CqSlot& c : f->cqs) {
        if (c.in_use != 0 && c.proc == proc) {
            c.in_use = 0;
        }
    }
    for (MrSlot& m : f->mrs) {
        if (m.in_use != 0 && m.proc == proc) {
            m.in_use = 0;
        }
    }
    f->procs[proc].objects = 0;
}

bool proc_dead(const ProcSlot& p)
{
    return p.in_use != 0 && ::kill(p.pid, 0) != 0 && errno == ESRCH;
}

class SoftCq final : public Cq {
public:
    std::uint32_t idx = 0;
};
class SoftSrq final : public Srq {
public:
    std::uint32_t idx = 0;
};
struct PendingWr {
    SendWr wr;
    std::vector<Sge> sges;
    std::vector<std::byte> inline_bytes;
    rt::Nanos deadline = 0;
    std::uint32_t rnr_tries = 0;
};
class SoftQp final : public Qp {
public:
    std::uint32_t idx = 0;
    std::deque<PendingWr> sq;
    QpCaps caps;
};
class SoftMr final : public Mr {
public:
    std::uint32_t idx = 0;
    std::vector<PageRef> pages;
};

class SoftDevice final : public Device {
public:
    SoftDevice(Fabric* f, int dev, std::string name) : f_(f), dev_(dev), name_(std::move(name)) {}
    ~SoftDevice() override;
    bool start(const FabricOptions& opt, std::string& why);

    const DeviceAttr& attr() const override { return attr_; }
    Status query_port(int port, int gid_index, PortAttr& out) override;
    Status create_cq(std::uint32_t depth, Cq*& out) override;
    void destroy_cq(Cq* cq) override;
    Status create_srq(std::uint32_t depth, Srq*& out) override;
    void destroy_srq(Srq* srq) override;
    Status create_qp(Cq* send_cq, Cq* recv_cq, Srq* srq, QpCaps& caps, Qp*& out) override;
    void destroy_qp(Qp* qp) override;
    Status modify_qp_init(Qp* qp, int port, unsigned access) override;
    Status modify_qp_rtr(Qp* qp, const RtrAttr& attr) override;
    Status modify_qp_rts(Qp* qp, const RtsAttr& attr) override;
    Status modify_qp_error(Qp* qp) override;
    Status modify_qp_reset(Qp* qp) override;
    QpState qp_state(Qp* qp) override;
    Status reg_mr(void* addr, std::size_t len, unsigned access, Mr*& out) override;
    void dereg_mr(Mr* mr) override;
    Status post_send(Qp* qp, const SendWr& wr) override;
    Status post_srq_recv(Srq* srq, std::uint64_t wr_id, const Sge& sge) override;
    int poll_cq(Cq* cq, Wc* out, int max) override;
    bool poll_async(AsyncEvent& ev) override;

private:
    bool port_active(std::uint32_t dev, std::uint32_t port) const
    {
        return port >= 1 && port <= f_->ports && f_->port[dev][port - 1].active != 0;
    }
    void progress_locked();
    bool execute(SoftQp& q, PendingWr& p, rt::Nanos now); // false: blocked
    void push_cq(std::uint32_t cq, const Wc& wc);
    void fail(SoftQp& q, PendingWr& p, WcStatus st);
    bool translate(std::uint32_t proc, std::uint32_t key, std::uint64_t addr, std::uint64_t len,
                   unsigned need, std::vector<iovec>& out);
    bool transfer(std::uint32_t proc, bool write, const std::vector<iovec>& local,
                  const std::vector<iovec>& remote);
    void check_events_locked();
    // Counts this process's objects; when the last object of the last
    // process goes (MPI ranks close their paths but may never destroy the
    // device), the fabric's name is removed.
    void held_locked(int delta);

    Fabric* f_;
    int dev_;
    std::string name_;
    std::uint32_t proc_ = 0;
    SoftMemory mem_;
    DeviceAttr attr_;
    std::vector<SoftQp*> qps_;
    std::vector<SoftMr*> my_mrs_; // by slot, this process's
    std::deque<AsyncEvent> events_;
    std::atomic<std::size_t> queued_{0}; // requests in this process's send queues (fabric lock)
    std::uint32_t seen_epoch_[kMaxPort] = {};
    std::uint32_t seen_active_[kMaxPort] = {};
};

void SoftDevice::held_locked(int delta)
{
    ProcSlot& me = f_->procs[proc_];
    me.objects = static_cast<std::uint32_t>(static_cast<int>(me.objects) + delta);
    if (delta > 0 || me.objects != 0) {
        return;
    }
    for (std::uint32_t i = 0; i < kMaxProcs; ++i) {
        const ProcSlot& p = f_->procs[i];
        if (p.in_use != 0 && p.objects != 0 && ::kill(p.pid, 0) == 0) {
            return;
        }
    }
    ::shm_unlink(seg_name(name_).c_str());
}

bool SoftDevice::start(const FabricOptions& opt, std::string& why)
{
    if (!mem_.open(opt.pool_bytes, why)) {
        return false;
    }
    Guard g(f_);
    // Processes that died (killed: their destructors never ran) lose
    // their objects now, before their slots are taken again.
    for (std::uint32_t i = 0; i < kMaxProcs; ++i) {
        if (proc_dead(f_->procs[i])) {
            release_objects(f_, i);
            f_->procs[i].in_use = 0;
        }
    }
    std::uint32_t slot = kMaxProcs;
    for (std::uint32_t i = 0; i < kMaxProcs; ++i) {
        if (f_->procs[i].in_use == 0) {
            slot = i;
            break;
        }
    }
    if (slot == kMaxProcs) {
        why = "soft fabric: too many processes";
        return false;
    }
    proc_ = slot;
    f_->procs[slot].pid = ::getpid();
    f_->procs[slot].pool_base = mem_.pool_base();
    f_->procs[slot].objects = 0;
    f_->procs[slot].in_use = 1;
    for (std::uint32_t q = 0; q < kMaxPort; ++q) {
        seen_epoch_[q] = f_->port[dev_][q].epoch;
        seen_active_[q] = f_->port[dev_][q].active;
    }
    attr_.name = "soft" + std::to_string(dev_);
    attr_.ports = static_cast<int>(f_->ports);
    attr_.max_qp_wr = 4096;
    attr_.max_srq_wr = kSrqRing;
    attr_.max_cqe = kCqRing;
    attr_.max_sge = 16;
    attr_.max_qp_rd_atom = 16;
    attr_.max_mr_size = std::uint64_t{1} << 40;
    attr_.max_msg_size = std::uint64_t{1} << 31;
    my_mrs_.assign(kMaxMrs, nullptr);
    return true;
}

SoftDevice::~SoftDevice()
{
    {
        Guard g(f_);
        release_objects(f_, proc_);
        f_->procs[proc_].in_use = 0;
        // The last process to leave removes the fabric's name.
        bool anyone = false;
        for (std::uint32_t i = 0; i < kMaxProcs && !anyone; ++i) {
            anyone = f_->procs[i].in_use != 0 && ::kill(f_->procs[i].pid, 0) == 0;
        }
        if (!anyone) {
            ::shm_unlink(seg_name(name_).c_str());
        }
    }
    for (SoftMr* m : my_mrs_) {
        delete m;
    }
    for (SoftQp* q : qps_) {
        delete q;
    }
    detach(f_);
}

Status SoftDevice::query_port(int port, int gid_index, PortAttr& out)
{
    if (port < 1 || port > static_cast<int>(f_->ports)) {
        return Errc::invalid_arg;
    }
    Guard g(f_);
    const PortSlot& ps = f_->port[dev_][port - 1];
    out = PortAttr{};
    out.state = ps.active != 0 ? PortState::active : PortState::down;
    out.link = static_cast<LinkLayer>(f_->link);
    out.lid = out.link == LinkLayer::infiniband ? ps.lid : 0;
    out.active_mtu = f_->mtu;
    if (gid_index <= 0) {
        std::memcpy(out.gid, ps.gid, 16);
        out.gid_index = 0;
    } else {
        return Errc::invalid_arg; // one GID per soft port
    }
    out.gbps = 100;
    return Errc::ok;
}

Status SoftDevice::create_cq(std::uint32_t depth, Cq*& out)
{
    if (depth == 0 || depth > kCqRing) {
        return Errc::invalid_arg;
    }
    Guard g(f_);
    for (std::uint32_t i = 0; i < kMaxCqs; ++i) {
        CqSlot& c = f_->cqs[i];
        if (c.in_use == 0) {
            c.in_use = 1;
            c.proc = proc_;
            c.head = c.tail = 0;
            c.depth = depth;
            c.overrun = 0;
            held_locked(1);
            auto* cq = new SoftCq;
            cq->idx = i;
            out = cq;
            return Errc::ok;
        }
    }
    return Errc::no_memory;
}

void SoftDevice::destroy_cq(Cq* cq)
{
    auto* c = static_cast<SoftCq*>(cq);
    {
        Guard g(f_);
        f_->cqs[c->idx].in_use = 0;
        held_locked(-1);
    }
    delete c;
}

Status SoftDevice::create_srq(std::uint32_t depth, Srq*& out)
{
    if (depth == 0 || depth > kSrqRing) {
        return Errc::invalid_arg;
    }
    Guard g(f_);
    for (std::uint32_t i = 0; i < kMaxSrqs; ++i) {
        SrqSlot& s = f_->srqs[i];
        if (s.in_use == 0) {
            s.in_use = 1;
            s.proc = proc_;
            s.head = s.tail = 0;
            s.depth = depth;
            held_locked(1);
            auto* srq = new SoftSrq;
            srq->idx = i;
            out = srq;
            return Errc::ok;
        }
    }
    return Errc::no_memory;
}

void SoftDevice::destroy_srq(Srq* srq)
{
    auto* s = static_cast<SoftSrq*>(srq);
    {
        Guard g(f_);
        f_->srqs[s->idx].in_use = 0;
        held_locked(-1);
    }
    delete s;
}

Status SoftDevice::create_qp(Cq* send_cq, Cq* recv_cq, Srq* srq, QpCaps& caps, Qp*& out)
{
    if (send_cq == nullptr || recv_cq == nullptr || srq == nullptr || caps.max_send_wr == 0 ||
        caps.max_send_wr > attr_.max_qp_wr || caps.max_send_sge > attr_.max_sge) {
        return Errc::invalid_arg;
    }
    Guard g(f_);
    for (std::uint32_t i = 0; i < kMaxQps; ++i) {
        QpSlot& s = f_->qps[i];
        if (s.in_use != 0) {
            continue;
        }
        std::memset(&s, 0, sizeof s);
        s.in_use = 1;
        s.proc = proc_;
        s.dev = static_cast<std::uint8_t>(dev_);
        s.state = static_cast<std::uint8_t>(QpState::reset);
        s.srq = static_cast<SoftSrq*>(srq)->idx;
        s.send_cq = static_cast<SoftCq*>(send_cq)->idx;
        s.recv_cq = static_cast<SoftCq*>(recv_cq)->idx;
        s.inject_after = -1;
        caps.max_inline = std::min(caps.max_inline, f_->max_inline);
        held_locked(1);
        auto* q = new SoftQp;
        q->idx = i;
        q->qpn = kQpnBase + i;
        q->caps = caps;
        qps_.push_back(q);
        out = q;
        return Errc::ok;
    }
    return Errc::no_memory;
}

void SoftDevice::destroy_qp(Qp* qp)
{
    auto* q = static_cast<SoftQp*>(qp);
    {
        Guard g(f_);
        f_->qps[q->idx].in_use = 0;
        held_locked(-1);
        queued_.fetch_sub(q->sq.size(), std::memory_order_relaxed);
    }
    qps_.erase(std::remove(qps_.begin(), qps_.end(), q), qps_.end());
    delete q;
}

Status SoftDevice::modify_qp_init(Qp* qp, int port, unsigned access)
{
    Guard g(f_);
    QpSlot& s = f_->qps[static_cast<SoftQp*>(qp)->idx];
    if (s.state != static_cast<std::uint8_t>(QpState::reset) || port < 1 ||
        port > static_cast<int>(f_->ports)) {
        return Errc::invalid_arg;
    }
    s.port = static_cast<std::uint8_t>(port);
    s.access = access;
    s.state = static_cast<std::uint8_t>(QpState::init);
    return Errc::ok;
}

Status SoftDevice::modify_qp_rtr(Qp* qp, const RtrAttr& a)
{
    Guard g(f_);
    QpSlot& s = f_->qps[static_cast<SoftQp*>(qp)->idx];
    const bool mtu_ok = a.path_mtu >= 256 && a.path_mtu <= f_->mtu && (a.path_mtu & (a.path_mtu - 1)) == 0;
    if (s.state != static_cast<std::uint8_t>(QpState::init) || !mtu_ok || a.max_dest_rd_atomic == 0) {
        return Errc::invalid_arg;
    }
    if (static_cast<LinkLayer>(f_->link) == LinkLayer::ethernet && !a.global) {
        return Errc::invalid_arg; // RoCE needs a GRH
    }
    s.dest_qpn = a.dest_qpn;
    s.rq_psn = a.rq_psn & 0xffffffu;
    s.path_mtu = a.path_mtu;
    s.dlid = a.dlid;
    s.global = a.global ? 1 : 0;
    std::memcpy(s.dgid, a.dgid, 16);
    s.state = static_cast<std::uint8_t>(QpState::rtr);
    return Errc::ok;
}

Status SoftDevice::modify_qp_rts(Qp* qp, const RtsAttr& a)
{
    Guard g(f_);
    QpSlot& s = f_->qps[static_cast<SoftQp*>(qp)->idx];
    if (s.state != static_cast<std::uint8_t>(QpState::rtr) || a.max_rd_atomic == 0) {
        return Errc::invalid_arg;
    }
    s.sq_psn = a.sq_psn & 0xffffffu;
    s.timeout = a.timeout;
    s.retry_cnt = a.retry_cnt;
    s.rnr_retry = a.rnr_retry;
    s.state = static_cast<std::uint8_t>(QpState::rts);
    return Errc::ok;
}

Status SoftDevice::modify_qp_error(Qp* qp)
{
    Guard g(f_);
    f_->qps[static_cast<SoftQp*>(qp)->idx].state = static_cast<std::uint8_t>(QpState::error);
    progress_locked(); // flush what is queued
    return Errc::ok;
}

Status SoftDevice::modify_qp_reset(Qp* qp)
{
    auto* q = static_cast<SoftQp*>(qp);
    Guard g(f_);
    QpSlot& s = f_->qps[q->idx];
    s.state = static_cast<std::uint8_t>(QpState::reset);
    s.inject_after = -1;
    queued_.fetch_sub(q->sq.size(), std::memory_order_relaxed);
    q->sq.clear();
    return Errc::ok;
}

QpState SoftDevice::qp_state(Qp* qp)
{
    Guard g(f_);
    return static_cast<QpState>(f_->qps[static_cast<SoftQp*>(qp)->idx].state);
}

Status SoftDevice::reg_mr(void* addr, std::size_t len, unsigned acc, Mr*& out)
{
    if (addr == nullptr || len == 0 || len > attr_.max_mr_size) {
        return Errc::invalid_arg;
    }
    if ((acc & access::remote_write) != 0 && (acc & access::local_write) == 0) {
        return Errc::invalid_arg; // as ibv_reg_mr: remote write needs local write
    }
    auto* m = new SoftMr;
    int err = mem_.pin(reinterpret_cast<std::uintptr_t>(addr), len, m->pages);
    if (err != 0) {
        delete m;
        return err == ENOMEM ? Errc::no_memory : Errc::invalid_arg;
    }
    Guard g(f_);
    for (std::uint32_t i = 0; i < kMaxMrs; ++i) {
        MrSlot& s = f_->mrs[i];
        if (s.in_use != 0) {
            continue;
        }
        s.in_use = 1;
        s.proc = proc_;
        ++s.gen;
        s.access = acc;
        s.addr = reinterpret_cast<std::uint64_t>(addr);
        s.len = len;
        s.pages_addr = reinterpret_cast<std::uint64_t>(m->pages.data());
        s.npages = m->pages.size();
        s.dev = static_cast<std::uint32_t>(dev_);
        m->idx = i;
        m->addr = addr;
        m->length = len;
        m->access = acc;
        m->lkey = m->rkey = key_of(i, s.gen);
        my_mrs_[i] = m;
        held_locked(1);
        out = m;
        return Errc::ok;
    }
    mem_.unpin(reinterpret_cast<std::uintptr_t>(addr), m->pages);
    delete m;
    return Errc::no_memory;
}

void SoftDevice::dereg_mr(Mr* mr)
{
    auto* m = static_cast<SoftMr*>(mr);
    {
        Guard g(f_);
        f_->mrs[m->idx].in_use = 0;
        my_mrs_[m->idx] = nullptr;
        held_locked(-1);
    }
    mem_.unpin(reinterpret_cast<std::uintptr_t>(m->addr), m->pages);
    delete m;
}

void SoftDevice::push_cq(std::uint32_t cq, const Wc& wc)
{
    CqSlot& c = f_->cqs[cq];
    if (c.in_use == 0) {
        return;
    }
    if (c.tail - c.head >= c.depth) {
        c.overrun = 1;
        return;
    }
    c.ring[c.tail % kCqRing] = wc;
    __atomic_store_n(&c.tail, c.tail + 1, __ATOMIC_RELEASE);
}

void SoftDevice::fail(SoftQp& q, PendingWr& p, WcStatus st)
{
    QpSlot& s = f_->qps[q.idx];
    Wc wc;
    wc.wr_id = p.wr.wr_id;
    wc.status = st;
    wc.op = p.wr.op;
    wc.qp_num = q.qpn;
    push_cq(s.send_cq, wc);
    s.state = static_cast<std::uint8_t>(QpState::error);
}

bool SoftDevice::translate(std::uint32_t proc, std::uint32_t key, std::uint64_t addr, std::uint64_t len,
                           unsigned need, std::vector<iovec>& out)
{
    std::uint32_t idx = (key & 0xffffu) - 1;
    if ((key & 0xffffu) == 0 || idx >= kMaxMrs) {
        return false;
    }
    const MrSlot& m = f_->mrs[idx];
    if (m.in_use == 0 || (m.gen & 0xffffu) != (key >> 16) || m.proc != proc ||
        m.dev != static_cast<std::uint32_t>(dev_) || (m.access & need) != need || addr < m.addr ||
        addr + len > m.addr + m.len || addr + len < addr) {
        return false;
    }
    if (len == 0) {
        return true;
    }
    const std::uint64_t a0 = m.addr & ~(kPage - 1);
    const std::uint64_t first = (addr - a0) / kPage;
    const std::uint64_t last = (addr + len - 1 - a0) / kPage;
    std::vector<PageRef> pages(last - first + 1);
    if (proc == proc_) {
        const SoftMr* mine = my_mrs_[idx];
        std::copy(mine->pages.begin() + static_cast<std::ptrdiff_t>(first),
                  mine->pages.begin() + static_cast<std::ptrdiff_t>(last + 1), pages.begin());
    } else {
        iovec l{pages.data(), pages.size() * sizeof(PageRef)};
        iovec r{reinterpret_cast<void*>(m.pages_addr + first * sizeof(PageRef)), l.iov_len};
        if (::process_vm_readv(f_->procs[proc].pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(l.iov_len)) {
            return false;
        }
    }
    const std::uint64_t pool = f_->procs[proc].pool_base;
    std::uint64_t at = addr;
    std::uint64_t left = len;
    for (std::uint64_t pi = first; pi <= last; ++pi) {
        std::uint64_t in_page = at - (a0 + pi * kPage);
        std::uint64_t take = std::min<std::uint64_t>(kPage - in_page, left);
        PageRef ref = pages[pi - first];
        std::uint64_t base = ref == kInPlace ? at : pool + ref * kPage + in_page;
        if (!out.empty() && reinterpret_cast<std::uint64_t>(out.back().iov_base) + out.back().iov_len == base) {
            out.back().iov_len += take;
        } else {
            out.push_back({reinterpret_cast<void*>(base), static_cast<std::size_t>(take)});
        }
        at += take;
        left -= take;
    }
    return true;
}

bool SoftDevice::transfer(std::uint32_t proc, bool write, const std::vector<iovec>& local,
                          const std::vector<iovec>& remote)
{
    const pid_t pid = f_->procs[proc].pid;
    std::size_t li = 0, ri = 0, lo = 0, ro = 0;
    while (li < local.size() && ri < remote.size()) {
        std::size_t n = std::min(local[li].iov_len - lo, remote[ri].iov_len - ro);
        iovec l{static_cast<char*>(local[li].iov_base) + lo, n};
        iovec r{static_cast<char*>(remote[ri].iov_base) + ro, n};
        ssize_t got = write ? ::process_vm_writev(pid, &l, 1, &r, 1, 0) : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got != static_cast<ssize_t>(n)) {
            return false;
        }
        lo += n;
        ro += n;
        if (lo == local[li].iov_len) {
            ++li, lo = 0;
        }
        if (ro == remote[ri].iov_len) {
            ++ri, ro = 0;
        }
    }
    return true;
}

bool SoftDevice::execute(SoftQp& q, PendingWr& p, rt::Nanos now)
{
    QpSlot& s = f_->qps[q.idx];
    Wc wc;
    wc.wr_id = p.wr.wr_id;
    wc.op = p.wr.op;
    wc.qp_num = q.qpn;
    if (s.state == static_cast<std::uint8_t>(QpState::error)) {
        wc.status = WcStatus::wr_flush_err;
        push_cq(s.send_cq, wc);
        ++f_->counters.flushed;
        return true;
    }
    if (s.inject_after >= 0) {
        if (s.inject_after == 0) {
            s.inject_after = -1;
            fail(q, p, static_cast<WcStatus>(s.inject_status));
            return true;
        }
        --s.inject_after;
    }
    QpSlot* d = nullptr;
    if (s.dest_qpn >= kQpnBase && s.dest_qpn < kQpnBase + kMaxQps) {
        d = &f_->qps[s.dest_qpn - kQpnBase];
    }
    bool reach = port_active(s.dev, s.port) && d != nullptr && d->in_use != 0 &&
                 (d->state == static_cast<std::uint8_t>(QpState::rtr) ||
                  d->state == static_cast<std::uint8_t>(QpState::rts)) &&
                 d->dest_qpn == q.qpn && port_active(d->dev, d->port) && s.sq_psn == d->rq_psn &&
                 s.path_mtu <= d->path_mtu;
    if (reach) {
        const PortSlot& dp = f_->port[d->dev][d->port - 1];
        reach = s.global != 0 ? std::memcmp(s.dgid, dp.gid, 16) == 0 : s.dlid == dp.lid;
    }
    if (reach && (f_->procs[d->proc].in_use == 0 || ::kill(f_->procs[d->proc].pid, 0) != 0)) {
        reach = false; // nobody answers for a process that is gone
    }
    if (!reach) {
        // Nobody acknowledges: retried until the transport timeout.
        rt::Nanos timeout = static_cast<rt::Nanos>(4096.0 * static_cast<double>(1ull << std::min<int>(s.timeout, 31)) *
                                                   (s.retry_cnt + 1));
        if (p.deadline == 0) {
            p.deadline = now + timeout;
        }
        if (now >= p.deadline) {
            ++f_->counters.retry_exceeded;
            fail(q, p, WcStatus::retry_exc_err);
            return true;
        }
        return false;
    }
    p.deadline = 0;
    std::uint64_t len = 0;
    for (const Sge& g : p.sges) {
        len += g.length;
    }
    std::vector<iovec> local;
    if (p.wr.inline_data) {
        len = p.inline_bytes.size();
        if (len > 0) {
            local.push_back({p.inline_bytes.data(), static_cast<std::size_t>(len)});
        }
    } else {
        const unsigned need = p.wr.op == Op::rdma_read ? access::local_write : 0u;
        for (const Sge& g : p.sges) {
            if (!translate(proc_, g.lkey, g.addr, g.length, need, local)) {
                fail(q, p, WcStatus::loc_prot_err);
                return true;
            }
        }
    }
    std::vector<iovec> remote;
    if (p.wr.op == Op::send) {
        SrqSlot& r = f_->srqs[d->srq];
        if (r.in_use == 0 || r.head == r.tail) {
            if (p.rnr_tries == 0) {
                ++f_->counters.rnr_naks;
            }
            ++p.rnr_tries;
            if (s.rnr_retry != 7 && p.rnr_tries > s.rnr_retry) {
                fail(q, p, WcStatus::rnr_retry_exc_err);
                return true;
            }
            return false;
        }
        const RecvWqe w = r.ring[r.head % kSrqRing];
        ++r.head;
        Wc rc;
        rc.wr_id = w.wr_id;
        rc.op = Op::recv;
        rc.qp_num = s.dest_qpn;
        if (len > w.len) {
            rc.status = WcStatus::loc_len_err;
            push_cq(d->recv_cq, rc);
            d->state = static_cast<std::uint8_t>(QpState::error);
            fail(q, p, WcStatus::rem_inv_req_err);
            return true;
        }
        if (!translate(d->proc, w.lkey, w.addr, len, access::local_write, remote)) {
            rc.status = WcStatus::loc_prot_err;
            push_cq(d->recv_cq, rc);
            d->state = static_cast<std::uint8_t>(QpState::error);
            fail(q, p, WcStatus::rem_op_err);
            return true;
        }
        if (!transfer(d->proc, true, local, remote)) {
            fail(q, p, WcStatus::retry_exc_err);
            return true;
        }
        rc.byte_len = static_cast<std::uint32_t>(len);
        push_cq(d->recv_cq, rc);
        ++f_->counters.sends;
    } else {
        const bool read = p.wr.op == Op::rdma_read;
        const unsigned need = read ? access::remote_read : access::remote_write;
        if ((d->access & need) != need || !translate(d->proc, p.wr.rkey, p.wr.remote_addr, len, need, remote)) {
            ++f_->counters.access_errors;
            d->state = static_cast<std::uint8_t>(QpState::error);
            d->access_error_pending = 1;
            fail(q, p, WcStatus::rem_access_err);
            return true;
        }
        if (!transfer(d->proc, !read, local, remote)) {
            fail(q, p, WcStatus::retry_exc_err);
            return true;
        }
        ++(read ? f_->counters.reads : f_->counters.writes);
    }
    f_->counters.bytes += len;
    s.sq_psn = (s.sq_psn + 1) & 0xffffffu;
    d->rq_psn = (d->rq_psn + 1) & 0xffffffu;
    if (p.wr.signaled) {
        wc.status = WcStatus::success;
        wc.byte_len = p.wr.op == Op::rdma_read ? static_cast<std::uint32_t>(len) : 0;
        push_cq(s.send_cq, wc);
    }
    return true;
}

void SoftDevice::progress_locked()
{
    const rt::Nanos now = rt::monotonic_ns();
    for (SoftQp* q : qps_) {
        while (!q->sq.empty()) {
            if (!execute(*q, q->sq.front(), now)) {
                break;
            }
            q->sq.pop_front();
            queued_.fetch_sub(1, std::memory_order_relaxed);
        }
    }
}

Status SoftDevice::post_send(Qp* qp, const SendWr& wr)
{
    auto* q = static_cast<SoftQp*>(qp);
    Guard g(f_);
    QpSlot& s = f_->qps[q->idx];
    if (s.state != static_cast<std::uint8_t>(QpState::rts) && s.state != static_cast<std::uint8_t>(QpState::error)) {
        return Errc::invalid_arg;
    }
    if (wr.nsge < 0 || static_cast<std::uint32_t>(wr.nsge) > q->caps.max_send_sge ||
        (wr.op != Op::send && wr.op != Op::rdma_read && wr.op != Op::rdma_write) ||
        (wr.inline_data && wr.op == Op::rdma_read)) {
        return Errc::invalid_arg;
    }
    if (q->sq.size() >= q->caps.max_send_wr) {
        return Errc::again;
    }
    PendingWr p;
    p.wr = wr;
    p.wr.sg = nullptr;
    p.sges.assign(wr.sg, wr.sg + wr.nsge);
    if (wr.inline_data) {
        std::size_t total = 0;
        for (const Sge& e : p.sges) {
            total += e.length;
        }
        if (total > q->caps.max_inline) {
            return Errc::invalid_arg;
        }
        for (const Sge& e : p.sges) {
            const auto* b = reinterpret_cast<const std::byte*>(e.addr);
            p.inline_bytes.insert(p.inline_bytes.end(), b, b + e.length);
        }
    }
    q->sq.push_back(std::move(p));
    queued_.fetch_add(1, std::memory_order_relaxed);
    progress_locked();
    return Errc::ok;
}

Status SoftDevice::post_srq_recv(Srq* srq, std::uint64_t wr_id, const Sge& sge)
{
    Guard g(f_);
    SrqSlot& r = f_->srqs[static_cast<SoftSrq*>(srq)->idx];
    if (r.tail - r.head >= r.depth) {
        return Errc::again;
    }
    r.ring[r.tail % kSrqRing] = RecvWqe{wr_id, sge.addr, sge.length, sge.lkey};
    ++r.tail;
    return Errc::ok;
}

int SoftDevice::poll_cq(Cq* cq, Wc* out, int max)
{
    // Nothing queued here and nothing arrived: no need for the fabric's lock
    // (spinning ranks would otherwise convoy on it).
    CqSlot& e = f_->cqs[static_cast<SoftCq*>(cq)->idx];
    // Several threads may post and poll (the verbs path under
    // MPI_THREAD_MULTIPLE): the queues are read under the fabric's lock,
    // their total count here.
    const bool pending = queued_.load(std::memory_order_relaxed) != 0;
    if (!pending && __atomic_load_n(&e.tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&e.head, __ATOMIC_RELAXED) &&
        __atomic_load_n(&e.overrun, __ATOMIC_RELAXED) == 0) {
        return 0;
    }
    Guard g(f_);
    progress_locked();
    CqSlot& c = f_->cqs[static_cast<SoftCq*>(cq)->idx];
    if (c.overrun != 0) {
        return -1;
    }
    int n = 0;
    while (n < max && c.head != c.tail) {
        out[n++] = c.ring[c.head % kCqRing];
        ++c.head;
    }
    return n;
}

void SoftDevice::check_events_locked()
{
    for (std::uint32_t q = 0; q < f_->ports; ++q) {
        const PortSlot& ps = f_->port[dev_][q];
        if (ps.epoch != seen_epoch_[q]) {
            seen_epoch_[q] = ps.epoch;
            if (ps.active != seen_active_[q]) {
                seen_active_[q] = ps.active;
                AsyncEvent ev;
                ev.kind = ps.active != 0 ? AsyncEvent::Kind::port_active : AsyncEvent::Kind::port_error;
                ev.port = static_cast<int>(q + 1);
                events_.push_back(ev);
            }
        }
    }
    for (SoftQp* q : qps_) {
        QpSlot& s = f_->qps[q->idx];
        if (s.access_error_pending != 0) {
            s.access_error_pending = 0;
            AsyncEvent ev;
            ev.kind = AsyncEvent::Kind::qp_access_error;
            ev.qp_num = q->qpn;
            ev.port = s.port;
            events_.push_back(ev);
        }
    }
}

bool SoftDevice::poll_async(AsyncEvent& ev)
{
    Guard g(f_);
    if (events_.empty()) {
        progress_locked();
        check_events_locked();
    }
    if (events_.empty()) {
        return false;
    }
    ev = events_.front();
    events_.pop_front();
    return true;
}

class SoftProvider final : public Provider {
public:
    explicit SoftProvider(const FabricOptions& opt) : opt_(opt) {}
    const char* name() const override { return "soft"; }
    std::vector<std::string> devices(std::string& why) override
    {
        Fabric* f = attach(opt_.name, &opt_, why);
        if (f == nullptr) {
            return {};
        }
        std::vector<std::string> out;
        for (std::uint32_t d = 0; d < f->devices; ++d) {
            out.push_back("soft" + std::to_string(d));
        }
        detach(f);
        return out;
    }
    std::unique_ptr<Device> open(const std::string& device, std::string& why) override
    {
        int d = -1;
        if (device.rfind("soft", 0) == 0) {
            d = std::atoi(device.c_str() + 4);
        }
        Fabric* f = attach(opt_.name, &opt_, why);
        if (f == nullptr) {
            return nullptr;
        }
        if (d < 0 || d >= static_cast<int>(f->devices)) {
            why = "no soft device " + device;
            detach(f);
            return nullptr;
        }
        auto dev = std::make_unique<SoftDevice>(f, d, opt_.name);
        if (!dev->start(opt_, why)) {
            return nullptr;
        }
        return dev;
    }

private:
    FabricOptions opt_;
};

template <class F> bool with_fabric(const std::string& name, F&& fn)
{
    std::string why;
    Fabric* f = attach(name, nullptr, why);
    if (f == nullptr) {
        std::fprintf(stderr, "soft fabric control: %s\n", why.c_str());
        return false;
    }
    {
        Guard g(f);
        fn(*f);
    }
    detach(f);
    return true;
}

} // namespace

bool parse_options(const std::string& args, const std::string& jobid, FabricOptions& out,
                   std::string& why)
{
    out.name = jobid;
    std::size_t pos = 0;
    while (pos <= args.size()) {
        std::size_t end = args.find(',', pos);
        if (end == std::string::npos) {
            end = args.size();
        }
        std::string w = args.substr(pos, end - pos);
        pos = end + 1;
        if (w.empty()) {
            continue;
        }
        std::size_t eq = w.find('=');
        std::string k = w.substr(0, eq);
        std::string v = eq == std::string::npos ? "" : w.substr(eq + 1);
        char* e = nullptr;
        unsigned long long n = std::strtoull(v.c_str(), &e, 10);
        bool num = !v.empty() && e != nullptr && *e == '\0';
        if (k == "name" && !v.empty() && v.find('/') == std::string::npos) {
            out.name = v;
        } else if (k == "devices" && num) {
            out.devices = static_cast<int>(n);
        } else if (k == "ports" && num) {
            out.ports = static_cast<int>(n);
        } else if (k == "inline" && num) {
            out.max_inline = static_cast<std::uint32_t>(n);
        } else if (k == "mtu" && num) {
            out.mtu = static_cast<std::uint32_t>(n);
        } else if (k == "pool" && num) {
            out.pool_bytes = n;
        } else if (k == "link" && (v == "ib" || v == "eth")) {
            out.link = v == "ib" ? LinkLayer::infiniband : LinkLayer::ethernet;
        } else {
            why = "soft device: cannot read '" + w + "'";
            return false;
        }
    }
    if (out.name.empty()) {
        why = "soft device: no fabric name";
        return false;
    }
    return true;
}

std::unique_ptr<Provider> make_soft_provider(const FabricOptions& opt)
{
    return std::make_unique<SoftProvider>(opt);
}

bool set_port_state(const std::string& fabric, int device, int port, bool active)
{
    if (device < 0 || device >= static_cast<int>(kMaxDev) || port < 1 || port > static_cast<int>(kMaxPort)) {
        return false;
    }
    return with_fabric(fabric, [&](Fabric& f) {
        PortSlot& ps = f.port[device][port - 1];
        ps.active = active ? 1 : 0;
        ++ps.epoch;
    });
}

bool inject_error(const std::string& fabric, std::uint32_t qpn, std::uint32_t after, WcStatus status)
{
    if (qpn < kQpnBase || qpn >= kQpnBase + kMaxQps) {
        return false;
    }
    return with_fabric(fabric, [&](Fabric& f) {
        QpSlot& s = f.qps[qpn - kQpnBase];
        s.inject_after = static_cast<std::int32_t>(after);
        s.inject_status = static_cast<std::uint8_t>(status);
    });
}

bool counters(const std::string& fabric, FabricCounters& out)
{
    return with_fabric(fabric, [&](Fabric& f) { out = f.counters; });
}

void unlink_fabric(const std::string& fabric) { ::shm_unlink(seg_name(fabric).c_str()); }

} // namespace ulmpi::soft
