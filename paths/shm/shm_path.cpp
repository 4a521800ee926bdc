#include "paths/shm/shm_path.h"

#include "paths/registry.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/shared_region.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ulmpi::path {
namespace {

const rt::SizeParam eager_param{"shm_eager_limit", 4096,
                                "messages up to this size go eagerly over shared memory"};
const rt::SizeParam frag_param{"shm_frag_size", 65536,
                               "payload bytes of a large shared-memory fragment (rendezvous copy)"};
const rt::IntParam slots_param{"shm_fifo_slots", 0,
                               "slots per shared-memory FIFO (power of two, 128 bytes each; 0: 128 "
                               "on a host of at most 16 ranks, else 64)"};
// The automatic FIFO size. A window of 64 messages each way (OSU's bw and
// bibw) of 121 B-4 KiB takes 64 slots for the fragments and up to 64 for
// their buffers' returns in the same FIFO: with 64 slots both ranks found
// it full and bibw at 1 KiB fell to 0.05-1.8 GB/s in some rounds (15 with
// 128; docs/benchmarks.md, 2026-11-28). Beyond 16 ranks a host keeps 64,
// so per-peer memory does not double (docs/scaling.md).
constexpr std::uint32_t kAutoSlotsFew = 128;
constexpr std::uint32_t kAutoSlotsMany = 64;
constexpr std::size_t kFewLocalRanks = 16;
const rt::IntParam small_param{"shm_small_frags", 128, "small fragment buffers per rank"};
const rt::IntParam large_param{"shm_large_frags", 32, "large fragment buffers per rank"};
const rt::BoolParam cma_param{"shm_single_copy", true,
                              "read large messages straight from the sender (process_vm_readv)"};
// Measured on the 2-core reference machine (docs/benchmarks.md): a direct
// read wins up to about 2 MiB; above, streaming through fragment buffers
// (the sender copies in while the receiver copies out, each on its core,
// in cache-sized pieces) moves more bytes per second.
const rt::SizeParam cma_max_param{
    "shm_single_copy_max", 2 * 1024 * 1024,
    "largest message read straight from the sender; larger ones stream through shared fragments (0: no limit)"};

// Non-temporal stores pay where the two ranks share no cache (the usual
// placement of the 2-vCPU reference VM: 4 KiB eager bandwidth with checksums
// 3.1 -> 6.8 GB/s, 4 MiB ping-pong 512 -> 231 us) and cost where they share
// one (the same VM with both vCPUs on one core: 4 KiB ping-pong 0.49 ->
// 0.77 us, 4 MiB 111 -> 250 us): docs/benchmarks.md, 2026-11-28.
const rt::BoolParam stream_param{
    "shm_stream", true,
    "with checksums on, write fragments of 2 KiB and more past the cache (non-temporal stores), "
    "and stream rendezvous data instead of reading it from the sender: faster where the ranks "
    "share no cache, slower where they do"};

const rt::IntParam prefault_param{
    "shm_prefault_peers", 32,
    "with at most this many local ranks, MPI_Init maps the pages of every FIFO and doorbell a rank "
    "uses (the first message to each peer then takes no page faults); more: they come at first use"};

// What progress() reads before connect() (and after a failed one): a
// doorbell nobody rings, so the poll needs no test of its own.
shm::DoorbellHead g_silent_doorbell{};

// Each rank publishes the address of this word; peers read it back with
// process_vm_readv to learn whether single copy is allowed here.
volatile std::uint64_t g_cma_probe = 0x636d6170726f6265ULL;

struct ShmRxFrag final : RxFrag {};

struct RkeyHead {
    std::uint32_t pid;
    std::uint32_t n;
};
struct RkeyEntry {
    std::uint64_t addr;
    std::uint64_t len;
};
// A key of one entry that lies in a shared area of the sender
// (runtime/shared_region.h) has this bit in RkeyHead::n and an RkeyShared
// after its entry: the receiver maps the area and copies with memcpy
// (shm_peer_maps.h), or, when it cannot, reads the entry as any other.
constexpr std::uint32_t kRkeyShared = 1u << 31;
struct RkeyShared {
    std::int32_t fd;
    std::uint32_t pad;
    std::uint64_t ino;
    std::uint64_t offset;
};

std::vector<std::unique_ptr<Path>> make_shm_paths(const rt::JobInfo& job)
{
    std::vector<std::unique_ptr<Path>> out;
    int local = 0;
    for (int node : job.node_of_rank) {
        local += node == job.node_id ? 1 : 0;
    }
    if (local >= 2) {
        out.push_back(std::make_unique<ShmPath>(job));
    }
    return out;
}

const Registrar reg{"shm", 50, &make_shm_paths};

std::uint32_t power_of_two_at_least(std::int64_t v)
{
    std::uint32_t p = 2;
    while (p < v && p < (1u << 20)) {
        p <<= 1;
    }
    return p;
}

template <class T> T load(const std::byte* p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

} // namespace

ShmPath::ShmPath(const rt::JobInfo& job) : job_(job), doorbell_(&g_silent_doorbell)
{
    local_of_.assign(job.node_of_rank.size(), -1);
    for (std::size_t r = 0; r < job.node_of_rank.size(); ++r) {
        if (job.node_of_rank[r] == job.node_id) {
            local_of_[r] = static_cast<int>(locals_.size());
            if (static_cast<int>(r) == job.rank) {
                me_ = static_cast<std::uint32_t>(locals_.size());
            }
            locals_.emplace_back();
            locals_.back().rank = static_cast<int>(r);
        }
    }
    std::uint64_t eager = std::min<std::uint64_t>(eager_param.get(), 1u << 20);
    std::uint64_t frag = std::clamp<std::uint64_t>(frag_param.get(), eager, 16u << 20);
    layout_.local_size = static_cast<std::uint32_t>(locals_.size());
    layout_.fifo_slots = slots_param.get() > 0 ? power_of_two_at_least(slots_param.get())
                         : locals_.size() <= kFewLocalRanks ? kAutoSlotsFew
                                                             : kAutoSlotsMany;
    layout_.small_count = static_cast<std::uint32_t>(std::clamp<std::int64_t>(small_param.get(), 4, 1 << 16));
    layout_.large_count = static_cast<std::uint32_t>(std::clamp<std::int64_t>(large_param.get(), 2, 1 << 16));
    layout_.small_bytes = static_cast<std::uint32_t>(shm::SegmentLayout::round(eager + 128, 64));
    layout_.large_bytes = static_cast<std::uint32_t>(shm::SegmentLayout::round(frag + 128, 64));

    info_.name = "shm";
    info_.bandwidth_mbs = 10000;
    info_.latency_us = 0.3;
    info_.eager_limit = eager;
    info_.max_frag = layout_.large_bytes;
    info_.inline_max = static_cast<std::uint32_t>(shm::kSlotData);
    info_.line_bytes = static_cast<std::uint32_t>(shm::kLine);
    info_.line_skew = static_cast<std::uint32_t>(shm::kSlotHeader);
    info_.reliable_default = false;
    info_.can_fail = false;
    info_.streamed_tx = stream_param.get();
    info_.has_get = false; // decided in connect()
    seg_name_ = "/ulmpi-" + job.jobid + "-" + std::to_string(job.node_id);
}

ShmPath::~ShmPath() { close(); }

bool ShmPath::can_reach(int peer) const
{
    int l = local_index(peer);
    // Once a rank moved (a replica re-created on its substitute's host),
    // only ranks on their own host's segment share it.
    return l >= 0 && static_cast<std::uint32_t>(l) != me_ && open_ && placed_ &&
           (job_.placed_node_of_rank.empty() || job_.same_segment(job_.rank, peer));
}

Status ShmPath::attach_segment()
{
    // Our launcher's anonymous segment when it gave us one, else the name.
    Status st = job_.shm_fd >= 0 ? seg_.attach_fd(job_.shm_fd, layout_.total_size())
                                  : seg_.attach(seg_name_, layout_.total_size());
    if (!st.ok()) {
        return st;
    }
    auto* h = reinterpret_cast<shm::SegHeader*>(seg_.base());
    if (h->magic != shm::kSegMagic || h->local_size != layout_.local_size ||
        h->region_bytes != layout_.region_size() || h->area_bytes != layout_.area_bytes) {
        ULMPI_ERROR("shared segment %s does not match this rank's settings (are all ranks "
                    "started with the same ULMPI_SHM_* parameters?)",
                    job_.shm_fd >= 0 ? "of the launcher" : seg_name_.c_str());
        return Errc::protocol;
    }
    return Errc::ok;
}

Status ShmPath::open(rt::Bootstrap&)
{
    if (job_.spawned) {
        // A spawned process (MPI_Comm_spawn): the segment is the job's. In
        // a slot used before (incarnation > 0) my region is the last
        // process's: emptied before my parents and siblings read it (they
        // do after the wire-up's first fence).
        if (Status st = attach_segment(); !st.ok()) {
            return st;
        }
        if (job_.incarnation > 0) {
            std::memset(at(layout_.region_offset(me_)), 0, layout_.region_size());
        }
    } else if (job_.incarnation > 0) {
        // A respawned process: the segment is the survivors'. My region is
        // the dead process's: empty it (its FIFOs towards every peer, its
        // buffers) before anyone reads it again (after the next fence).
        if (Status st = attach_segment(); !st.ok()) {
            return st;
        }
        // (Its FIFOs and doorbell; what its buffers hold does not matter.)
        std::memset(at(layout_.region_offset(me_)), 0, layout_.fifos_size() + layout_.doorbell_size());
    } else if (me_ == 0) {
        Status st = job_.shm_fd >= 0 ? seg_.create_in(job_.shm_fd, layout_.total_size())
                                      : seg_.create(seg_name_, layout_.total_size());
        if (!st.ok()) {
            return st;
        }
        auto* h = reinterpret_cast<shm::SegHeader*>(seg_.base());
        h->local_size = layout_.local_size;
        h->fifo_slots = layout_.fifo_slots;
        h->region_bytes = layout_.region_size();
        h->area_bytes = layout_.area_bytes;
        h->magic = shm::kSegMagic;
    }
    return Errc::ok;
}

void ShmPath::reserve_shared_area(std::size_t bytes)
{
    if (!open_) {
        layout_.area_bytes = shm::SegmentLayout::round(bytes, shm::SegmentLayout::kPage);
    }
}

std::byte* ShmPath::shared_area(std::size_t* bytes) const
{
    if (!open_ || layout_.area_bytes == 0) {
        return nullptr;
    }
    if (bytes != nullptr) {
        *bytes = layout_.area_bytes;
    }
    return at(layout_.area_offset());
}

bool ShmPath::spawn_partner(int rank) const
{
    return std::find(job_.parents.begin(), job_.parents.end(), rank) != job_.parents.end() ||
           std::find(job_.world.begin(), job_.world.end(), rank) != job_.world.end();
}

// Everything of this process's place in the segment (me_): its FIFOs to
// and from every local peer, its doorbell (and single-copy probe), nothing
// polled or announced yet, every buffer free. At connect(), and when a
// forked process becomes a dead replica (become()).
void ShmPath::take_identity()
{
    for (std::uint32_t j = 0; j < layout_.local_size; ++j) {
        Local& l = locals_[j];
        l.to = shm::FifoWriter(at(layout_.fifo_offset(me_, j)), layout_.fifo_slots);
        l.from = shm::FifoReader(at(layout_.fifo_offset(j, me_)), layout_.fifo_slots);
        l.announced = false;
        l.polled = false;
        l.returns.clear();
    }
    pending_returns_ = 0;
    doorbell_ = reinterpret_cast<shm::DoorbellHead*>(at(layout_.doorbell_offset(me_)));
    doorbell_bits_ = reinterpret_cast<std::atomic<std::uint64_t>*>(
        at(layout_.doorbell_offset(me_) + sizeof(shm::DoorbellHead)));
    doorbell_->probe_addr.store(reinterpret_cast<std::uint64_t>(&g_cma_probe), std::memory_order_relaxed);
    doorbell_->pid.store(static_cast<std::uint64_t>(::getpid()), std::memory_order_release);
    active_.assign(layout_.local_size, 0);
    nactive_.store(0, std::memory_order_relaxed);
    rings_seen_.store(0, std::memory_order_relaxed);
    free_small_.clear();
    free_large_.clear();
    for (std::uint32_t i = layout_.small_count; i-- > 0;) {
        free_small_.push_back(i);
    }
    for (std::uint32_t i = layout_.large_count; i-- > 0;) {
        free_large_.push_back(i);
    }
    lent_[0].assign(layout_.small_count, -1);
    lent_[1].assign(layout_.large_count, -1);
}

Status ShmPath::connect(rt::Bootstrap&)
{
    if (me_ != 0 && job_.incarnation == 0 && !job_.spawned) {
        if (Status st = attach_segment(); !st.ok()) {
            return st;
        }
    }
    // Nothing of my region is touched here (shm_layout.h) but my FIFOs on
    // a small host (prefault()): its pages come when I first write a FIFO
    // or a buffer, on my NUMA node.
    take_identity();
    if (prefaults()) {
        prefault(layout_.fifo_offset(me_, 0), layout_.fifo_size() * layout_.local_size);
    }
    if (job_.spawned && job_.incarnation > 0) {
        for (Local& l : locals_) {
            if (!spawn_partner(l.rank)) {
                // A slot used again: the FIFO of a process that took no
                // part in this spawn may still hold what it sent the
                // slot's last process (only my parents reset theirs): not
                // read (docs/dynamic_processes.md, "Limits").
                l.ready = false;
            }
        }
    }

    info_.has_get = false; // until connected() has tested it
    describe_ = std::string("shm: ") + std::to_string(layout_.local_size) + " local ranks";
    open_ = true;
    return Errc::ok;
}

Status ShmPath::connected(rt::Bootstrap&)
{
    // Single copy works only if we can read the local peers' memory. The
    // kernel decides that from the credentials of the two processes and
    // its ptrace policy, which are the same for every pair of ranks that
    // one launcher started, so one peer (the next on this host) answers
    // for all of them: testing every peer cost each rank a system call per
    // local rank, the host one per pair.
    bool cma = cma_param.get();
    std::string why = cma ? "" : "switched off by ULMPI_SHM_SINGLE_COPY";
    for (std::uint32_t step = 1; cma && step < layout_.local_size; ++step) {
        const std::uint32_t j = (me_ + step) % layout_.local_size;
        // Every process wrote its probe in connect(), before the fence
        // that precedes this call.
        const auto* head = reinterpret_cast<const shm::DoorbellHead*>(at(layout_.doorbell_offset(j)));
        const auto pid = static_cast<pid_t>(head->pid.load(std::memory_order_acquire));
        const std::uint64_t addr = head->probe_addr.load(std::memory_order_relaxed);
        if (pid == 0 && job_.is_spawn_slot(locals_[j].rank)) {
            continue; // a spawn slot without a process (yet)
        }
        if (pid == 0) {
            cma = false;
            why = "peer did not publish its probe";
            break;
        }
        std::uint64_t got = 0;
        iovec liov{&got, sizeof got};
        iovec riov{reinterpret_cast<void*>(addr), sizeof got};
        ssize_t n = ::process_vm_readv(pid, &liov, 1, &riov, 1, 0);
        if (n != static_cast<ssize_t>(sizeof got) || got != g_cma_probe) {
            cma = false;
            why = std::string("process_vm_readv: ") + (n < 0 ? std::strerror(errno) : "short read");
        }
        break; // one process tested answers for all (above)
    }
    info_.has_get = cma;
    info_.get_max = cma_max_param.get();
    if (prefaults()) {
        // Every writer mapped its FIFOs in connect(), before the fence: the
        // pages exist, on their writers' nodes; now map the FIFOs I read
        // and the doorbells I ring.
        for (std::uint32_t j = 0; j < layout_.local_size; ++j) {
            if (j != me_ && !job_.is_spawn_slot(locals_[j].rank)) {
                prefault(layout_.fifo_offset(j, me_), layout_.fifo_size());
                prefault(layout_.doorbell_offset(j), layout_.doorbell_size());
            }
        }
    }
    describe_ = std::string("shm: ") + std::to_string(layout_.local_size) + " local ranks, " +
                (cma ? "single copy by process_vm_readv" : "copy in/out (" + why + ")");

    // Everyone on this host has attached: the name can go now, so nothing is
    // left in /dev/shm however the job ends. Unless a respawned process may
    // have to attach later, or a spawned one (the launcher removes the name
    // at the end).
    if (!job_.respawnable && job_.first_slot < 0) {
        seg_.unlink();
    }
    return Errc::ok;
}

// The first message between two ranks used to take page faults on both
// sides (the sender's FIFO slot and the peer's doorbell, the receiver's
// view of both): about 2 us each here, 5 of them in the first round trip.
// On a host of few ranks (the pages grow with their square) MPI_Init maps
// them instead; only at the wire-up of the first processes.
bool ShmPath::prefaults() const
{
    return job_.incarnation == 0 && !job_.spawned &&
           layout_.local_size <= static_cast<std::uint32_t>(std::max<std::int64_t>(prefault_param.get(), 0));
}

void ShmPath::prefault(std::size_t offset, std::size_t len)
{
    const std::size_t begin = offset / shm::SegmentLayout::kPage * shm::SegmentLayout::kPage;
    const std::size_t end = std::min(seg_.size(), (offset + len + shm::SegmentLayout::kPage - 1) / shm::SegmentLayout::kPage * shm::SegmentLayout::kPage);
    if (end > begin) {
        // An older kernel answers EINVAL: then the first messages take the faults.
        (void)::madvise(at(begin), end - begin, MADV_POPULATE_WRITE);
    }
}

Status ShmPath::reset_peer(int peer, rt::Bootstrap&)
{
    const int j = local_index(peer);
    if (j < 0 || static_cast<std::uint32_t>(j) == me_ || !open_) {
        return Errc::invalid_arg;
    }
    Local& l = locals_[static_cast<std::size_t>(j)];
    const auto ju = static_cast<std::uint32_t>(j);
    // My FIFO towards it starts empty; its FIFO towards me is read again
    // from the start once the new process has emptied it (connect_peer).
    std::memset(at(layout_.fifo_offset(me_, ju)), 0, layout_.fifo_size());
    l.to = shm::FifoWriter(at(layout_.fifo_offset(me_, ju)), layout_.fifo_slots);
    l.from = shm::FifoReader(at(layout_.fifo_offset(ju, me_)), layout_.fifo_slots);
    l.ready = false;
    l.announced = false; // the new process starts with an empty doorbell
    pending_returns_ -= static_cast<std::uint32_t>(l.returns.size());
    l.returns.clear(); // its buffers are gone with it
    // My buffers it had not given back are mine again.
    rt::OptGuard fg(free_lock_);
    for (std::uint32_t cls = 0; cls < 2; ++cls) {
        std::vector<std::int32_t>& lent = lent_[cls];
        for (std::uint32_t i = 0; i < lent.size(); ++i) {
            if (lent[i] == j) {
                lent[i] = -1;
                (cls == 0 ? free_small_ : free_large_).push_back(i);
            }
        }
    }
    return Errc::ok;
}

Status ShmPath::connect_peer(int peer, rt::Bootstrap&)
{
    const int j = local_index(peer);
    if (j < 0 || static_cast<std::uint32_t>(j) == me_ || !open_) {
        return Errc::invalid_arg;
    }
    // (Not when it runs on another host now: its place here stays unread.)
    locals_[static_cast<std::size_t>(j)].ready = can_reach(peer);
    return Errc::ok;
}

Status ShmPath::wipe_peer(int peer)
{
    const int j = local_index(peer);
    if (j < 0 || !open_) {
        return Errc::ok; // placed on another host: nothing of it here
    }
    if (static_cast<std::uint32_t>(j) == me_ && placed_) {
        return Errc::invalid_arg;
    }
    // Its FIFOs towards every peer and its buffers: the region of the dead
    // process, which nobody reads until the new process is connected.
    std::memset(at(layout_.region_offset(static_cast<std::uint32_t>(j))), 0, layout_.region_size());
    return Errc::ok;
}

Status ShmPath::become(int rank, int ready, rt::Bootstrap&)
{
    if (!open_) {
        return Errc::ok;
    }
    const int me = local_index(rank);
    if (me < 0) {
        // Placed on another host: no region here. The mapping stays (a
        // process forked from me later may be placed here), but nothing
        // of the forking process's place is mine: no FIFO read, no buffer.
        placed_ = false;
        for (Local& l : locals_) {
            l.ready = false;
            l.returns.clear();
        }
        pending_returns_ = 0;
        nactive_.store(0, std::memory_order_relaxed);
        rings_seen_.store(0, std::memory_order_relaxed);
        doorbell_ = &quiet_bell_;
        return Errc::ok;
    }
    // The forking process cleared this region (wipe_peer) and its own FIFO
    // towards it (reset_peer); every other peer clears its FIFO towards us
    // when it hears of the new process, and is connected (connect_peer)
    // only then.
    // Its doorbell was wiped with the region: nothing rang it yet, and
    // every peer rings it again before it sends (reset_peer).
    me_ = static_cast<std::uint32_t>(me);
    placed_ = true;
    take_identity();
    for (Local& l : locals_) {
        l.ready = l.rank == ready;
    }
    return Errc::ok;
}

void ShmPath::close()
{
    if (open_ || seg_.base() != nullptr) {
        // With spawn slots, a process may still be spawned into the segment
        // after this one ends: the launcher removes the name at the end.
        if (!job_.respawnable && job_.first_slot < 0) {
            seg_.unlink();
        }
        seg_.detach();
        open_ = false;
    }
}

const char* ShmPath::describe() const
{
    return describe_.empty() ? "shm" : describe_.c_str();
}

namespace {

// A counter bumped by several threads at once under fine locks.
inline void bump(std::uint64_t& c, std::uint64_t v = 1)
{
    if (rt::fine_locks()) [[unlikely]] {
        std::atomic_ref<std::uint64_t>(c).fetch_add(v, std::memory_order_relaxed);
    } else {
        c += v;
    }
}

} // namespace

// Called with l.tx held.
bool ShmPath::flush_returns(Local& l)
{
    std::size_t done = 0;
    for (; done < l.returns.size(); ++done) {
        shm::Slot* s = l.to.reserve();
        if (s == nullptr) {
            break;
        }
        std::memcpy(s->data, &l.returns[done], sizeof(shm::FragRef));
        l.to.publish(s, shm::SlotKind::frag_return, sizeof(shm::FragRef));
    }
    l.returns.erase(l.returns.begin(), l.returns.begin() + static_cast<std::ptrdiff_t>(done));
    pending_returns_.fetch_sub(static_cast<std::uint32_t>(done), std::memory_order_relaxed);
    return l.returns.empty();
}

// Called with l.tx held, before the first slot written to local peer j.
void ShmPath::announce(Local& l, std::uint32_t j)
{
    const std::size_t db = layout_.doorbell_offset(j);
    auto* head = reinterpret_cast<shm::DoorbellHead*>(at(db));
    auto* bits = reinterpret_cast<std::atomic<std::uint64_t>*>(at(db + sizeof(shm::DoorbellHead)));
    bits[me_ / 64].fetch_or(std::uint64_t{1} << (me_ % 64), std::memory_order_relaxed);
    head->rings.fetch_add(1, std::memory_order_release);
    l.announced = true;
}

// A sender rang: poll the FIFOs of the bits not seen yet.
void ShmPath::answer_doorbell()
{
    rt::OptGuard g(doorbell_lock_);
    const std::uint64_t rings = doorbell_->rings.load(std::memory_order_acquire);
    if (rings == rings_seen_.load(std::memory_order_relaxed)) {
        return; // another thread answered it
    }
    std::uint32_t n = nactive_.load(std::memory_order_relaxed);
    for (std::size_t w = 0; w < layout_.doorbell_words(); ++w) {
        std::uint64_t word = doorbell_bits_[w].load(std::memory_order_relaxed);
        while (word != 0) {
            const auto j = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(word)));
            word &= word - 1;
            if (j < layout_.local_size && j != me_ && !locals_[j].polled) {
                locals_[j].polled = true;
                active_[n++] = j;
            }
        }
    }
    nactive_.store(n, std::memory_order_release);
    rings_seen_.store(rings, std::memory_order_relaxed);
}

void ShmPath::return_frag(Local& l, const shm::FragRef& ref)
{
    rt::OptGuard g(l.tx);
    if (!l.announced) [[unlikely]] {
        announce(l, static_cast<std::uint32_t>(&l - locals_.data()));
    }
    if (l.returns.empty()) {
        if (shm::Slot* s = l.to.reserve()) {
            std::memcpy(s->data, &ref, sizeof ref);
            l.to.publish(s, shm::SlotKind::frag_return, sizeof ref);
            return;
        }
    }
    l.returns.push_back(ref);
    pending_returns_.fetch_add(1, std::memory_order_relaxed);
}

bool ShmPath::acquire(int peer, std::size_t len, TxBuffer& out)
{
    Local& l = locals_[static_cast<std::size_t>(local_index(peer))];
    if (!l.ready) [[unlikely]] {
        bump(counters_.send_again); // being replaced (reset_peer .. connect_peer)
        return false;
    }
    // Held until commit() (ULM commits every buffer it acquired), so a
    // buffer return from another thread's poll cannot take the slot.
    l.tx.lock();
    if (!l.announced) [[unlikely]] {
        announce(l, static_cast<std::uint32_t>(&l - locals_.data()));
    }
    if (!l.returns.empty() && !flush_returns(l)) {
        l.tx.unlock();
        bump(counters_.send_again);
        return false;
    }
    shm::Slot* s = l.to.reserve();
    if (s == nullptr) {
        l.tx.unlock();
        bump(counters_.send_again);
        return false;
    }
    if (len <= shm::kSlotData) {
        out.data = s->data;
        out.cap = shm::kSlotData;
        out.token = 0;
        return true;
    }
    std::uint32_t cls = len <= layout_.small_bytes ? 0 : 1;
    if (len > layout_.large_bytes) {
        l.tx.unlock();
        return false; // ULM never asks for more than info().max_frag
    }
    rt::OptGuard fg(free_lock_);
    std::vector<std::uint32_t>& fl = cls == 0 ? free_small_ : free_large_;
    if (fl.empty() && cls == 0 && !free_large_.empty()) {
        cls = 1; // borrow a large buffer for a small fragment
    }
    std::vector<std::uint32_t>& pool = cls == 0 ? free_small_ : free_large_;
    if (pool.empty()) {
        l.tx.unlock();
        bump(counters_.send_again);
        return false;
    }
    std::uint32_t idx = pool.back();
    pool.pop_back();
    // Lent to the peer from now on (under the free lists' lock, like its
    // return: another thread may take the buffer the moment it is back).
    lent_[cls][idx] = local_index(peer);
    out.data = at(layout_.frag_offset(me_, cls, idx));
    out.cap = cls == 0 ? layout_.small_bytes : layout_.large_bytes;
    out.token = 1 + ((static_cast<std::uintptr_t>(cls) << 31) | idx);
    return true;
}

SendResult ShmPath::commit(int peer, const TxBuffer& buf, std::size_t len)
{
    Local& l = locals_[static_cast<std::size_t>(local_index(peer))];
    shm::Slot* s = l.to.reserve(); // the slot acquire() found
    if (buf.token == 0) {
        l.to.publish(s, shm::SlotKind::inline_frag, static_cast<std::uint32_t>(len));
    } else {
        std::uintptr_t t = buf.token - 1;
        shm::FragRef ref{static_cast<std::uint32_t>(t >> 31), static_cast<std::uint32_t>(t & 0x7fffffffu),
                         static_cast<std::uint32_t>(len), 0};
        std::memcpy(s->data, &ref, sizeof ref);
        l.to.publish(s, shm::SlotKind::frag_ref, sizeof ref);
    }
    if (rt::fine_locks()) [[unlikely]] {
        l.tx.unlock();
        bump(counters_.frags_sent);
        bump(counters_.bytes_sent, len);
    } else {
        ++counters_.frags_sent;
        counters_.bytes_sent += len;
    }
    return SendResult::done;
}

int ShmPath::progress(Sink& sink)
{
    int n = 0;
    if (pending_returns_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
        for (Local& l : locals_) {
            rt::OptGuard g(l.tx);
            if (!l.returns.empty()) {
                flush_returns(l);
            }
        }
    }
    if (doorbell_->rings.load(std::memory_order_relaxed) !=
        rings_seen_.load(std::memory_order_relaxed)) [[unlikely]] {
        answer_doorbell();
    }
    const std::uint32_t count = nactive_.load(std::memory_order_acquire);
    const bool fine = rt::fine_locks();
    for (std::uint32_t a = 0; a < count; ++a) {
        const std::uint32_t j = active_[a];
        Local& l = locals_[j];
        if (!l.ready) [[unlikely]] {
            continue;
        }
        if (fine && (!l.from.worth_a_look() || !l.rx.try_lock())) [[unlikely]] {
            continue; // nothing there, or another thread reads it now
        }
        for (int k = 0; k < 32; ++k) {
            shm::Slot* s = l.from.peek();
            if (s == nullptr) {
                break;
            }
            switch (s->kind) {
            case shm::SlotKind::inline_frag: {
                ShmRxFrag rx;
                rx.peer = l.rank;
                rx.data = s->data;
                rx.len = s->len;
                bump(counters_.frags_received);
                bump(counters_.bytes_received, s->len);
                sink.on_frag(*this, rx);
                break;
            }
            case shm::SlotKind::frag_ref: {
                auto ref = load<shm::FragRef>(s->data);
                ShmRxFrag rx;
                rx.peer = l.rank;
                rx.data = at(layout_.frag_offset(j, ref.cls, ref.index));
                rx.len = ref.len;
                bump(counters_.frags_received);
                bump(counters_.bytes_received, ref.len);
                sink.on_frag(*this, rx);
                return_frag(l, ref);
                break;
            }
            case shm::SlotKind::frag_return: {
                auto ref = load<shm::FragRef>(s->data);
                rt::OptGuard g(free_lock_);
                lent_[ref.cls & 1][ref.index] = -1; // before it is free
                (ref.cls == 0 ? free_small_ : free_large_).push_back(ref.index);
                break;
            }
            }
            l.from.pop();
            ++n;
        }
        if (fine) [[unlikely]] {
            l.rx.unlock();
        }
    }
    return n;
}

std::size_t ShmPath::make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
{
    std::size_t need = sizeof(RkeyHead) + static_cast<std::size_t>(iovcnt) * sizeof(RkeyEntry);
    if (!info_.has_get || need > cap) {
        return 0;
    }
    auto* p = static_cast<std::byte*>(out);
    RkeyHead head{static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(iovcnt)};
    rt::SharedRef shared;
    const bool in_shared = iovcnt == 1 && need + sizeof(RkeyShared) <= cap &&
                           rt::find_shared(iov[0].iov_base, iov[0].iov_len, &shared);
    if (in_shared) {
        head.n |= kRkeyShared;
    }
    std::memcpy(p, &head, sizeof head);
    for (int i = 0; i < iovcnt; ++i) {
        RkeyEntry e{reinterpret_cast<std::uint64_t>(iov[i].iov_base), iov[i].iov_len};
        std::memcpy(p + sizeof head + static_cast<std::size_t>(i) * sizeof e, &e, sizeof e);
    }
    if (in_shared) {
        RkeyShared sh{shared.fd, 0, shared.ino, shared.offset};
        std::memcpy(p + need, &sh, sizeof sh);
        need += sizeof sh;
    }
    return need;
}

Status ShmPath::get(int, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                    const iovec* local, int nlocal)
{
    if (rkey_len < sizeof(RkeyHead)) {
        return Errc::protocol;
    }
    const auto* p = static_cast<const std::byte*>(rkey);
    auto head = load<RkeyHead>(p);
    const bool shared = (head.n & kRkeyShared) != 0;
    head.n &= ~kRkeyShared;
    if (rkey_len != sizeof head + std::size_t{head.n} * sizeof(RkeyEntry) +
                        (shared ? sizeof(RkeyShared) : 0) ||
        (shared && head.n != 1)) {
        return Errc::protocol;
    }
    // Remote segments from remote_offset on, as many as the local side needs.
    std::size_t want = 0;
    for (int i = 0; i < nlocal; ++i) {
        want += local[i].iov_len;
    }
    if (shared) {
        const auto e = load<RkeyEntry>(p + sizeof head);
        const auto sh = load<RkeyShared>(p + sizeof head + sizeof(RkeyEntry));
        if (remote_offset > e.len || want > e.len - remote_offset) {
            return Errc::protocol;
        }
        if (peer_maps_.copy(static_cast<pid_t>(head.pid), sh.fd, sh.ino, sh.offset + remote_offset,
                            local, nlocal)) {
            bump(counters_.gets);
            bump(counters_.get_bytes, want);
            rt::count_shared_read(want);
            return Errc::ok;
        }
    }
    std::vector<iovec> remote;
    std::uint64_t skip = remote_offset;
    std::size_t have = 0;
    for (std::uint32_t i = 0; i < head.n && have < want; ++i) {
        auto e = load<RkeyEntry>(p + sizeof head + i * sizeof(RkeyEntry));
        if (skip >= e.len) {
            skip -= e.len;
            continue;
        }
        std::uint64_t len = std::min<std::uint64_t>(e.len - skip, want - have);
        remote.push_back({reinterpret_cast<void*>(e.addr + skip), static_cast<std::size_t>(len)});
        have += len;
        skip = 0;
    }
    if (have < want) {
        return Errc::protocol;
    }
    std::vector<iovec> loc(local, local + nlocal);
    std::size_t li = 0;
    std::size_t ri = 0;
    std::size_t done = 0;
    while (done < want) {
        int ln = static_cast<int>(std::min<std::size_t>(loc.size() - li, IOV_MAX));
        int rn = static_cast<int>(std::min<std::size_t>(remote.size() - ri, IOV_MAX));
        ssize_t got = ::process_vm_readv(static_cast<pid_t>(head.pid), &loc[li], ln, &remote[ri], rn, 0);
        if (got <= 0) {
            if (got < 0 && errno == EINTR) {
                continue;
            }
            ULMPI_DEBUG("process_vm_readv from pid %u: %s", head.pid, got < 0 ? std::strerror(errno) : "no progress");
            return Errc::io_error;
        }
        done += static_cast<std::size_t>(got);
        // Advance both lists by `got` bytes.
        for (std::size_t left = static_cast<std::size_t>(got); left > 0;) {
            std::size_t t = std::min(left, loc[li].iov_len);
            loc[li].iov_base = static_cast<std::byte*>(loc[li].iov_base) + t;
            loc[li].iov_len -= t;
            left -= t;
            if (loc[li].iov_len == 0) {
                ++li;
            }
        }
        for (std::size_t left = static_cast<std::size_t>(got); left > 0;) {
            std::size_t t = std::min(left, remote[ri].iov_len);
            remote[ri].iov_base = static_cast<std::byte*>(remote[ri].iov_base) + t;
            remote[ri].iov_len -= t;
            left -= t;
            if (remote[ri].iov_len == 0) {
                ++ri;
            }
        }
        while (li < loc.size() && loc[li].iov_len == 0) {
            ++li;
        }
        while (ri < remote.size() && remote[ri].iov_len == 0) {
            ++ri;
        }
    }
    bump(counters_.gets);
    bump(counters_.get_bytes, want);
    return Errc::ok;
}

} // namespace ulmpi::path
