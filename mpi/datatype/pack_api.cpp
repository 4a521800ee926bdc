// MPI_Pack / MPI_Unpack / MPI_Pack_size and their "external32" forms.
//
// The native packed format is ULM's packed stream (ulm/packer.h): the data
// bytes of the elements in type-map order, nothing else, so a message sent
// as MPI_PACKED and received with the original type (or the reverse) just
// works. MPI_Pack_size is therefore exact. external32 converts that stream
// (external32.cpp).
#include "mpi/checks.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/errors.h"

#include <climits>
#include <cstring>
#include <vector>

using namespace ulmpi::mpi;

namespace {

// A datatype that can be packed: valid, committed, not a marker.
int packable(Comm* c, MPI_Datatype h, const char* fn, Datatype** out)
{
    return check_type(c, h, fn, out);
}

int need(Comm* c, bool ok, const char* what, const char* fn)
{
    if (!ok) [[unlikely]] {
        return raise(c, MPI_ERR_ARG, fn, "%s", what);
    }
    return MPI_SUCCESS;
}

int count_ok(Comm* c, int count, const char* fn)
{
    if (count < 0) [[unlikely]] {
        return raise(c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    }
    return MPI_SUCCESS;
}

int datarep_ok(const char* datarep, const char* fn)
{
    if (datarep == nullptr || std::strcmp(datarep, "external32") != 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "data representation \"%s\" is not \"external32\"",
                     datarep == nullptr ? "(null)" : datarep);
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize,
              int* position, MPI_Comm comm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Pack";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Datatype* t = nullptr;
    if (int e = packable(c, datatype, fn, &t)) {
        return e;
    }
    if (int e = count_ok(c, incount, fn)) {
        return e;
    }
    if (int e = need(c, position != nullptr, "position is NULL", fn)) {
        return e;
    }
    std::uint64_t bytes = t->size * static_cast<std::uint64_t>(incount);
    if (*position < 0 || outsize < 0) {
        return raise(c, MPI_ERR_ARG, fn, "position %d / outsize %d is negative", *position,
                     outsize);
    }
    if (static_cast<std::uint64_t>(*position) + bytes > static_cast<std::uint64_t>(outsize)) {
        return raise(c, MPI_ERR_TRUNCATE, fn,
                     "%llu bytes at position %d do not fit an output buffer of %d bytes",
                     static_cast<unsigned long long>(bytes), *position, outsize);
    }
    if (bytes > 0 && outbuf == nullptr) {
        return raise(c, MPI_ERR_BUFFER, fn, "outbuf is NULL");
    }
    ulmpi::ulm::pack(t->ref(inbuf, static_cast<std::uint64_t>(incount)), 0,
                     static_cast<std::byte*>(outbuf) + *position, bytes);
    *position += static_cast<int>(bytes);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Pack");
}
ULMPI_ALIAS(MPI_Pack)

int PMPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
                MPI_Datatype datatype, MPI_Comm comm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Unpack";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Datatype* t = nullptr;
    if (int e = packable(c, datatype, fn, &t)) {
        return e;
    }
    if (int e = count_ok(c, outcount, fn)) {
        return e;
    }
    if (int e = need(c, position != nullptr, "position is NULL", fn)) {
        return e;
    }
    std::uint64_t bytes = t->size * static_cast<std::uint64_t>(outcount);
    if (*position < 0 || insize < 0) {
        return raise(c, MPI_ERR_ARG, fn, "position %d / insize %d is negative", *position, insize);
    }
    if (static_cast<std::uint64_t>(*position) + bytes > static_cast<std::uint64_t>(insize)) {
        return raise(
            c, MPI_ERR_TRUNCATE, fn,
            "unpacking %llu bytes at position %d runs past the %d bytes of the input buffer",
            static_cast<unsigned long long>(bytes), *position, insize);
    }
    if (bytes > 0 && inbuf == nullptr) {
        return raise(c, MPI_ERR_BUFFER, fn, "inbuf is NULL");
    }
    ulmpi::ulm::unpack(t->ref(outbuf, static_cast<std::uint64_t>(outcount)), 0,
                       static_cast<const std::byte*>(inbuf) + *position, bytes);
    *position += static_cast<int>(bytes);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Unpack");
}
ULMPI_ALIAS(MPI_Unpack)

int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Pack_size";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Datatype* t = datatype_get(datatype);
    if (t == nullptr) {
        return raise(c, MPI_ERR_TYPE, fn, "0x%x is not a valid datatype",
                     static_cast<unsigned>(datatype));
    }
    if (int e = count_ok(c, incount, fn)) {
        return e;
    }
    if (int e = need(c, size != nullptr, "size is NULL", fn)) {
        return e;
    }
    std::uint64_t bytes = t->size * static_cast<std::uint64_t>(incount);
    if (bytes > static_cast<std::uint64_t>(INT_MAX)) {
        return raise(c, MPI_ERR_ARG, fn,
                     "%d elements of the datatype pack into %llu bytes, more than an int holds",
                     incount, static_cast<unsigned long long>(bytes));
    }
    *size = static_cast<int>(bytes);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Pack_size");
}
ULMPI_ALIAS(MPI_Pack_size)

int PMPI_Pack_external(const char* datarep, const void* inbuf, int incount, MPI_Datatype datatype,
                       void* outbuf, MPI_Aint outsize, MPI_Aint* position) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Pack_external";
    require_init(fn);
    if (int e = datarep_ok(datarep, fn)) {
        return e;
    }
    Datatype* t = nullptr;
    if (int e = packable(nullptr, datatype, fn, &t)) {
        return e;
    }
    if (int e = count_ok(nullptr, incount, fn)) {
        return e;
    }
    if (int e = need(nullptr, position != nullptr, "position is NULL", fn)) {
        return e;
    }
    auto n = static_cast<std::uint64_t>(incount);
    std::uint64_t ext = t->ext32_size * n;
    if (*position < 0 || outsize < 0 ||
        static_cast<std::uint64_t>(*position) + ext > static_cast<std::uint64_t>(outsize)) {
        return raise(
            nullptr, MPI_ERR_TRUNCATE, fn,
            "%llu external32 bytes at position %ld do not fit an output buffer of %ld bytes",
            static_cast<unsigned long long>(ext), static_cast<long>(*position),
            static_cast<long>(outsize));
    }
    if (ext > 0 && outbuf == nullptr) {
        return raise(nullptr, MPI_ERR_BUFFER, fn, "outbuf is NULL");
    }
    std::vector<std::byte> native(t->size * n);
    ulmpi::ulm::pack(t->ref(inbuf, n), 0, native.data(), native.size());
    std::string why;
    if (int e = external32_from_native(t, n, native.data(),
                                       static_cast<std::byte*>(outbuf) + *position, why)) {
        return raise(nullptr, e, fn, "%s", why.c_str());
    }
    *position += static_cast<MPI_Aint>(ext);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Pack_external");
}
ULMPI_ALIAS(MPI_Pack_external)

int PMPI_Unpack_external(const char* datarep, const void* inbuf, MPI_Aint insize,
                         MPI_Aint* position, void* outbuf, int outcount,
                         MPI_Datatype datatype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Unpack_external";
    require_init(fn);
    if (int e = datarep_ok(datarep, fn)) {
        return e;
    }
    Datatype* t = nullptr;
    if (int e = packable(nullptr, datatype, fn, &t)) {
        return e;
    }
    if (int e = count_ok(nullptr, outcount, fn)) {
        return e;
    }
    if (int e = need(nullptr, position != nullptr, "position is NULL", fn)) {
        return e;
    }
    auto n = static_cast<std::uint64_t>(outcount);
    std::uint64_t ext = t->ext32_size * n;
    if (*position < 0 || insize < 0 ||
        static_cast<std::uint64_t>(*position) + ext > static_cast<std::uint64_t>(insize)) {
        return raise(
            nullptr, MPI_ERR_TRUNCATE, fn,
            "unpacking %llu external32 bytes at position %ld runs past the %ld bytes of the input",
            static_cast<unsigned long long>(ext), static_cast<long>(*position),
            static_cast<long>(insize));
    }
    if (ext > 0 && inbuf == nullptr) {
        return raise(nullptr, MPI_ERR_BUFFER, fn, "inbuf is NULL");
    }
    std::vector<std::byte> native(t->size * n);
    std::string why;
    if (int e = external32_to_native(t, n, static_cast<const std::byte*>(inbuf) + *position,
                                     native.data(), why)) {
        return raise(nullptr, e, fn, "%s", why.c_str());
    }
    ulmpi::ulm::unpack(t->ref(outbuf, n), 0, native.data(), native.size());
    *position += static_cast<MPI_Aint>(ext);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Unpack_external");
}
ULMPI_ALIAS(MPI_Unpack_external)

int PMPI_Pack_external_size(const char* datarep, int incount, MPI_Datatype datatype,
                            MPI_Aint* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Pack_external_size";
    require_init(fn);
    if (int e = datarep_ok(datarep, fn)) {
        return e;
    }
    Datatype* t = datatype_get(datatype);
    if (t == nullptr) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "0x%x is not a valid datatype",
                     static_cast<unsigned>(datatype));
    }
    if (int e = count_ok(nullptr, incount, fn)) {
        return e;
    }
    if (int e = need(nullptr, size != nullptr, "size is NULL", fn)) {
        return e;
    }
    *size = static_cast<MPI_Aint>(t->ext32_size * static_cast<std::uint64_t>(incount));
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Pack_external_size");
}
ULMPI_ALIAS(MPI_Pack_external_size)
