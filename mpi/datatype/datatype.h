// Datatypes. Every type, predefined or derived, carries its flattened
// layout (ulm/packer.h): the runs of one element with adjacent runs merged,
// which is all ULM and the paths ever see. Predefined types come from
// predefined.def; derived constructors (constructors.cpp) build the type's
// structure and its bounds at once, and commit (flatten.cpp) turns the
// structure into runs. docs/datatypes.md has the whole design.
//
// Structure of a derived type. Every constructor, including the MPI-2 array
// types, is expressed in one shape:
//
//     reps copies, rep_stride bytes apart, of the sequence of blocks;
//     a block is `count` copies of `type` at that type's extent, the first
//     at byte `disp`.
//
// (vector: reps = count, one block of blocklen; indexed and struct: reps = 1,
// one block per entry; resized and dup: one block of one copy; subarray and
// darray: one block holding an internal type built from the same shapes.)
// Size, bounds, element counts and the basic type follow from the children
// in O(blocks) without expanding anything; only commit expands, and it
// merges as it goes (see flatten.cpp for the cost).
//
// Ownership. `refs` counts every holder: each live handle (MPI_Type_free
// drops one), each block and each `types` entry of another type, and each
// pending request (datatype_retain in the request paths). The last release
// deletes the type and releases its children. Predefined types are never
// freed. A request that uses a type must hold a reference until it is
// finished: the ULM descriptor points into `runs`.
#pragma once

#include "mpi/entry.h"
#include "mpi/handle.h"
#include "ulm/packer.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ulmpi::mpi {

enum class Category : std::uint8_t {
    signed_int,
    unsigned_int,
    floating,
    floating_complex,
    logical,
    character,
    byte,
    packed,
    pair,
    marker,
    derived,
};

template <class V, class I> struct LocPair {
    V value;
    I index;
};

struct Datatype;

// `count` copies of `type`, consecutive at type->extent(), the first at `disp`.
struct TypeBlock {
    Datatype* type = nullptr; // holds a reference
    std::int64_t disp = 0;
    std::uint64_t count = 0;
};

struct Datatype {
    int handle = 0; // a live handle naming the type (0: none, an internal type)
    Category category = Category::derived;
    bool predefined = false;
    bool committed = false;
    std::uint64_t size = 0; // data bytes
    MPI_Aint lb = 0;        // extent = ub - lb
    MPI_Aint ub = 0;
    MPI_Aint true_lb = 0;
    MPI_Aint true_ub = 0;
    // The type map holds explicit bound markers (MPI_LB / MPI_UB entries, or
    // the markers MPI_Type_create_resized, subarray and darray put there).
    // They are sticky: a type built from this one takes its lb (ub) from
    // the markers only.
    bool sticky_lb = false;
    bool sticky_ub = false;
    // Alignment of the strictest basic element (struct padding uses it).
    std::uint32_t align = 1;
    // Basic elements per element of this type (for MPI_Get_elements) and the
    // size of one basic element when all are alike (0 otherwise).
    std::uint64_t elements = 1;
    std::uint64_t element_size = 0;
    // The predefined type every basic element of this type is (itself for a
    // predefined type; for a derived type built from one predefined type,
    // that type; nullptr when mixed). Reductions work on basic elements.
    const Datatype* basic = nullptr;
    // Bytes of one element in the "external32" representation.
    std::uint64_t ext32_size = 0;
    // Predefined pair types: bytes of the value member (the index follows).
    std::uint32_t pair_first = 0;

    // Structure (derived types; see the top of this file).
    std::uint64_t reps = 1;
    std::int64_t rep_stride = 0;
    std::vector<TypeBlock> blocks;

    // How the program built it, for MPI_Type_get_envelope / get_contents.
    int combiner = MPI_COMBINER_NAMED;
    std::vector<int> ints;
    std::vector<MPI_Aint> aints;
    std::vector<Datatype*> types; // each holds a reference

    // Flattened form: valid once `flattened` (always for committed types).
    bool flattened = false;
    std::vector<ulm::Run> runs;
    std::vector<std::uint64_t> prefix;
    ulm::Layout layout;

    std::string name;
    int refs = 1;
    // Further live handles naming this object (MPI_Type_get_contents hands
    // out a new handle for each derived type it returns).
    std::vector<int> aliases;
    // Attribute hook: owned by the attribute engine (type keyvals), which
    // installs type_attr_hooks; the datatype code never looks inside.
    void* attrs = nullptr;

    MPI_Aint extent() const { return ub - lb; }
    // Recomputes `layout` from runs (merging adjacent runs) and extent.
    void finish_layout();
    ulm::DataRef ref(const void* buf, std::uint64_t count) const
    {
        return ulm::DataRef{const_cast<void*>(buf), count, &layout};
    }
};

void datatype_init_predefined();
// The datatype table; never destroyed (the predefined types live as long as
// the process, and an exit handler may still call MPI). Created on first use.
extern std::atomic<HandleTable<Datatype, ULMPI_KIND_DATATYPE>*> g_datatype_table;
// nullptr for invalid handles and MPI_DATATYPE_NULL. Inline: every call
// that moves data resolves its type.
inline Datatype* datatype_get(MPI_Datatype h)
{
    const HandleTable<Datatype, ULMPI_KIND_DATATYPE>* t = g_datatype_table.load(std::memory_order_acquire);
    return t != nullptr ? t->get(h) : nullptr;
}
const char* datatype_name(MPI_Datatype h);

// References (no-ops on predefined types). Anything that keeps a type past
// the call that named it (a request, another type) holds a reference.
void datatype_retain(Datatype* t);
void datatype_release(Datatype* t);
// A new handle naming t (takes over one reference the caller holds); 0 when
// the handle table is full.
MPI_Datatype datatype_publish(Datatype* t);
// MPI_Type_free: the handle stops naming t, and its reference is released.
void datatype_unpublish(MPI_Datatype h, Datatype* t);

// --- constructors (constructors.cpp) -------------------------------------
// Each returns a new uncommitted derived type holding one reference (the
// caller's), with its structure, size, bounds and element counts set and
// the envelope left as MPI_COMBINER_NAMED (the entry points record it).
// Arguments are assumed checked (counts >= 0, types valid).
Datatype* build_contiguous(std::uint64_t count, Datatype* old);
Datatype* build_hvector(std::uint64_t count, std::uint64_t blocklen, std::int64_t stride_bytes,
                        Datatype* old);
Datatype* build_hindexed(std::size_t count, const std::uint64_t* blocklens,
                         const std::int64_t* disps_bytes, Datatype* old);
Datatype* build_struct(std::size_t count, const std::uint64_t* blocklens,
                       const std::int64_t* disps_bytes, Datatype* const* types);
Datatype* build_resized(Datatype* old, std::int64_t lb, std::int64_t extent);
Datatype* build_dup(Datatype* old);
// The array types check their own arguments: MPI_SUCCESS, or an error class
// with `why` saying what is wrong.
int build_subarray(int ndims, const int* sizes, const int* subsizes, const int* starts, int order,
                   Datatype* old, Datatype** out, std::string& why);
int build_darray(int size, int rank, int ndims, const int* gsizes, const int* distribs,
                 const int* dargs, const int* psizes, int order, Datatype* old, Datatype** out,
                 std::string& why);

// --- commit and flattening (flatten.cpp) ---------------------------------
// Flattens t (and, on the way, its children) into runs; MPI_SUCCESS or
// MPI_ERR_NO_MEM when the runs would exceed ULMPI_MPI_TYPE_MAX_RUNS.
int datatype_flatten(Datatype* t, std::string& why);
int datatype_commit(Datatype* t, std::string& why);

// Basic elements in the first `bytes` of a packed stream of elements of t
// (any number of whole elements plus a part of one): the MPI_Get_elements
// count, or -1 when the bytes end inside a basic element.
std::int64_t datatype_elements_in(const Datatype* t, std::uint64_t bytes);

// --- external32 (external32.cpp) -----------------------------------------
// Bytes of one element of predefined type d in external32 (0 for markers).
std::uint64_t external32_predefined_size(const Datatype& d);
// Converts `count` elements of t between the native packed stream (what
// ulm::pack produces) and external32. MPI_SUCCESS, or MPI_ERR_CONVERSION
// when a value does not fit its external32 size (e.g. a long beyond 32 bits).
int external32_from_native(const Datatype* t, std::uint64_t count, const void* native, void* ext,
                           std::string& why);
int external32_to_native(const Datatype* t, std::uint64_t count, const void* ext, void* native,
                         std::string& why);

// --- attributes ------------------------------------------------------------
// Installed by the attribute engine: copy runs the copy callbacks of `from`
// onto `to` (MPI_Type_dup), erase the delete callbacks (MPI_Type_free).
// Each returns an MPI error code. Null: types carry no attributes.
struct TypeAttrHooks {
    int (*copy)(Datatype* from, Datatype* to) = nullptr;
    int (*erase)(Datatype* t) = nullptr;
};
extern TypeAttrHooks type_attr_hooks;

} // namespace ulmpi::mpi
