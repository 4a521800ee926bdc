// Reduction operations. An Op is predefined (MPI_MAX .. MPI_NO_OP, with one
// kernel per allowed predefined datatype) or made by MPI_Op_create (a user
// function, commutative or not).
//
// Everything here works on element order: op_apply computes
//     inout[i] = in[i] op inout[i]
// which is the MPI convention (the user function's invec is the left
// operand). A non-commutative reduction stays in rank order when callers put
// the lower ranks' data in `in`.
//
// Predefined ops on a derived datatype reduce its basic elements
// (Datatype::basic, e.g. every MPI_INT of a vector of MPI_INT); a derived
// type mixing several basic types cannot be reduced by a predefined op.
//
// Lifetime: a user op is freed by MPI_Op_free once no pending operation (a
// nonblocking collective's schedule) holds a reference (op_retain/release).
#pragma once

#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"

#include <cstdint>

namespace ulmpi::mpi {

struct Op {
    int handle = 0;
    int index = 0;             // predefined: handle index 1..14; 0 for user ops
    bool commutative = true;
    MPI_User_function* user_fn = nullptr;
    const char* name = "user op";
    int refs = 1;

    bool predefined() const { return index != 0; }
};

Op* op_get(MPI_Op h); // nullptr for invalid handles and MPI_OP_NULL
void op_retain(Op* op);
void op_release(Op* op);

// Whether `op` may reduce data of type `t` (a predefined type, or a derived
// type whose basic elements are all of one predefined type). User ops take
// any type.
bool op_accepts(const Op* op, const Datatype* t);

// inout[i] = in[i] op inout[i] for `count` elements of `t` laid out as t
// says (extent apart). `in` and `inout` must not overlap. op_accepts(op, t)
// must hold.
void op_apply(const Op* op, const void* in, void* inout, std::uint64_t count, const Datatype* t);

} // namespace ulmpi::mpi
