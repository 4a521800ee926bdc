#include "mpi/bsend.h"

#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/p2p.h"
#include "mpi/request.h"
#include "mpi/state.h"

#include <algorithm>
#include <vector>

using namespace ulmpi::mpi;

namespace {

struct Block {
    std::size_t offset;
    std::size_t len;
    ulmpi::ulm::SendMsg* send;
};

struct Attached {
    std::byte* base = nullptr;
    std::size_t size = 0;
    std::vector<Block> blocks; // sorted by offset
};

Attached& attached()
{
    static Attached a;
    return a;
}

void reclaim()
{
    Attached& a = attached();
    ulmpi::ulm::Engine& eng = state().engine;
    a.blocks.erase(std::remove_if(a.blocks.begin(), a.blocks.end(),
                                  [&](const Block& b) {
                                      if (!b.send->complete) {
                                          return false;
                                      }
                                      eng.release(b.send);
                                      return true;
                                  }),
                   a.blocks.end());
}

// First fit; returns the offset or SIZE_MAX.
std::size_t allocate(std::size_t len)
{
    Attached& a = attached();
    std::size_t at = 0;
    std::size_t pos = 0;
    for (; pos < a.blocks.size(); ++pos) {
        if (a.blocks[pos].offset - at >= len) {
            break;
        }
        at = a.blocks[pos].offset + a.blocks[pos].len;
    }
    if (pos == a.blocks.size() && a.size - at < len) {
        return SIZE_MAX;
    }
    a.blocks.insert(a.blocks.begin() + static_cast<std::ptrdiff_t>(pos), Block{at, len, nullptr});
    return at;
}

std::size_t free_bytes()
{
    std::size_t used = 0;
    for (const Block& b : attached().blocks) {
        used += b.len;
    }
    return attached().size - used;
}

} // namespace

namespace ulmpi::mpi {

int bsend_start(Comm* c, const void* buf, int count, const Datatype* t, int dest, int tag, const char* fn)
{
    Attached& a = attached();
    std::size_t bytes = static_cast<std::size_t>(t->size) * static_cast<std::size_t>(count);
    std::size_t need = std::max<std::size_t>(16, (bytes + 15) / 16 * 16); // <= bytes + MPI_BSEND_OVERHEAD
    state().engine.progress();
    reclaim();
    std::size_t off = a.base == nullptr ? SIZE_MAX : allocate(need);
    if (off == SIZE_MAX) {
        if (a.base == nullptr) {
            return raise(c, MPI_ERR_BUFFER, fn,
                         "buffered send of %zu bytes but no buffer is attached (MPI_Buffer_attach)", bytes);
        }
        return raise(c, MPI_ERR_BUFFER, fn,
                     "buffered send needs %zu bytes (data + MPI_BSEND_OVERHEAD) but the attached "
                     "buffer has %zu of %zu bytes free",
                     need, free_bytes(), a.size);
    }
    std::byte* block = a.base + off;
    ulm::pack(t->ref(buf, static_cast<std::uint64_t>(count)), 0, block, bytes);
    auto it = std::find_if(a.blocks.begin(), a.blocks.end(), [&](const Block& b) { return b.offset == off; });
    int e = p2p_isend(c, block, bytes, datatype_get(MPI_BYTE), dest, tag, c->ctx, ulm::SendMode::standard,
                      &it->send, fn);
    if (e != MPI_SUCCESS) {
        a.blocks.erase(it);
    }
    return e;
}

void bsend_drain()
{
    Attached& a = attached();
    if (a.blocks.empty()) {
        return;
    }
    state().engine.wait([&] {
        return std::all_of(a.blocks.begin(), a.blocks.end(), [](const Block& b) { return b.send->complete; });
    });
    reclaim();
}

} // namespace ulmpi::mpi

namespace {

int buffered(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
             MPI_Request* request, const char* fn)
{
    Comm* c;
    Datatype* t;
    if (int e = check_send(buf, count, type, dest, tag, comm, fn, &c, &t)) {
        return e;
    }
    if (request != nullptr) {
        // Ibsend: the data is in the attached buffer when we return, so the
        // request is complete at once.
        Request* r = request_new(Request::Kind::done, c);
        if (r == nullptr) {
            return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
        }
        status_empty(&r->status);
        if (dest != MPI_PROC_NULL) {
            if (int e = bsend_start(c, buf, count, t, dest, tag, fn)) {
                request_free(r);
                return e;
            }
        }
        *request = r->handle;
        return MPI_SUCCESS;
    }
    if (dest == MPI_PROC_NULL) {
        return MPI_SUCCESS;
    }
    return bsend_start(c, buf, count, t, dest, tag, fn);
}

} // namespace

int PMPI_Bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) try {
    EntryGuard guard;
    return buffered(buf, count, type, dest, tag, comm, nullptr, "MPI_Bsend");
} catch (...) {
    return api_exception("MPI_Bsend");
}
ULMPI_ALIAS(MPI_Bsend)

int PMPI_Ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) try {
    EntryGuard guard;
    if (request == nullptr) {
        require_init("MPI_Ibsend");
        return raise(nullptr, MPI_ERR_ARG, "MPI_Ibsend", "request pointer is NULL");
    }
    return buffered(buf, count, type, dest, tag, comm, request, "MPI_Ibsend");
} catch (...) {
    return api_exception("MPI_Ibsend");
}
ULMPI_ALIAS(MPI_Ibsend)

int PMPI_Buffer_attach(void* buffer, int size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Buffer_attach";
    require_init(fn);
    Attached& a = attached();
    if (a.base != nullptr) {
        return raise(nullptr, MPI_ERR_BUFFER, fn, "a buffer is already attached (detach it first)");
    }
    if (size < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "size %d is negative", size);
    }
    if (buffer == nullptr && size > 0) {
        return raise(nullptr, MPI_ERR_BUFFER, fn, "buffer is NULL");
    }
    a.base = static_cast<std::byte*>(buffer);
    a.size = static_cast<std::size_t>(size);
    if (a.base == nullptr) {
        a.base = reinterpret_cast<std::byte*>(&a); // a zero-byte buffer is still attached
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Buffer_attach");
}
ULMPI_ALIAS(MPI_Buffer_attach)

int PMPI_Buffer_detach(void* buffer_addr, int* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Buffer_detach";
    require_init(fn);
    if (buffer_addr == nullptr || size == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", size == nullptr ? "size" : "the buffer address");
    }
    Attached& a = attached();
    bsend_drain();
    void* base = a.base == reinterpret_cast<std::byte*>(&a) ? nullptr : a.base;
    *static_cast<void**>(buffer_addr) = base;
    *size = static_cast<int>(a.size);
    a.base = nullptr;
    a.size = 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Buffer_detach");
}
ULMPI_ALIAS(MPI_Buffer_detach)
