// Datatypes. Every type, predefined or derived, carries its flattened
// layout (ulm/packer.h): the runs of one element with adjacent runs merged,
// which is all ULM and the paths ever see. Predefined types come from
// predefined.def; derived constructors (datatype/constructors) build the
// type map and flatten it at commit.
#pragma once

#include "mpi/entry.h"
#include "ulm/packer.h"

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

struct Datatype {
    int handle = 0;
    Category category = Category::derived;
    bool predefined = false;
    bool committed = false;
    std::uint64_t size = 0;  // data bytes
    MPI_Aint lb = 0;         // extent = ub - lb
    MPI_Aint ub = 0;
    MPI_Aint true_lb = 0;
    MPI_Aint true_ub = 0;
    // Basic elements per element of this type (for MPI_Get_elements) and the
    // size of one basic element when all are alike (0 otherwise).
    std::uint64_t elements = 1;
    std::uint64_t element_size = 0;
    // The predefined type every basic element of this type is (itself for a
    // predefined type; for a derived type built from one predefined type,
    // that type; nullptr when mixed). Reductions work on basic elements.
    const Datatype* basic = nullptr;
    std::vector<ulm::Run> runs;
    std::vector<std::uint64_t> prefix;
    ulm::Layout layout;
    std::string name;
    int refs = 1;

    MPI_Aint extent() const { return ub - lb; }
    // Recomputes `layout` from runs (merging adjacent runs) and extent.
    void finish_layout();
    ulm::DataRef ref(const void* buf, std::uint64_t count) const
    {
        return ulm::DataRef{const_cast<void*>(buf), count, &layout};
    }
};

void datatype_init_predefined();
Datatype* datatype_get(MPI_Datatype h); // nullptr for invalid handles and MPI_DATATYPE_NULL
const char* datatype_name(MPI_Datatype h);

} // namespace ulmpi::mpi
