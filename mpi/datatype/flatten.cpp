// Commit: flattening a type's structure into runs, and counting basic
// elements in a partial packed stream (MPI_Get_elements).
//
// Flattening, as LA-MPI did. A type's runs are built from its children's
// runs (children first, each cached in the child), copied block by block in
// type-map order; every run is appended with `put`, which merges it into the
// previous run when the two touch, so adjacent runs never survive.
//
// Cost. Let R(c) be the runs of child c. A block of `count` copies costs
// O(count * |R(c)|), except when c is dense (one run as long as its extent):
// then the block is one run, O(1), whatever its count. The row of blocks is
// then repeated `reps` times, again O(1) when the row is one run as long as
// rep_stride (a vector whose blocks touch), else O(reps * |row|). So
//   contiguous(1e9, MPI_INT)          1 run, O(1)
//   vector(1e6, 4, 4, MPI_DOUBLE)     1 run, O(1) (stride == blocklen)
//   vector(1e6, 4, 8, MPI_DOUBLE)     1e6 runs, 24 MB (16 B run + 8 B prefix),
//                                     a few ms: ULM walks runs by position,
//                                     so a genuinely strided type needs them
//   indexed with n blocks             <= n runs
// and memory is 24 bytes per run of the committed type (plus the cached
// runs of its uncommitted children). ULMPI_MPI_TYPE_MAX_RUNS caps one type;
// a type that would need more fails to commit with MPI_ERR_NO_MEM rather
// than exhausting memory (1e6 x 1e6 nested strided vectors would need 1e12).
#include "mpi/datatype/datatype.h"
#include "runtime/config.h"

#include <limits>
#include <vector>

namespace ulmpi::mpi {
namespace {

const rt::IntParam max_runs_param{
    "mpi_type_max_runs", std::int64_t{1} << 26,
    "most runs (separate pieces of memory) one committed datatype may flatten into; "
    "24 bytes each (beyond it MPI_Type_commit fails with MPI_ERR_NO_MEM)"};

using ulm::Run;

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

void put(std::vector<Run>& out, std::int64_t disp, std::uint64_t len)
{
    if (len == 0) {
        return;
    }
    if (!out.empty() && out.back().disp + static_cast<std::int64_t>(out.back().len) == disp) {
        out.back().len += len;
    } else {
        out.push_back(Run{disp, len});
    }
}

bool dense(const std::vector<Run>& r, std::int64_t step)
{
    return r.size() == 1 && static_cast<std::int64_t>(r[0].len) == step;
}

// Runs before merging that `n` copies of r, `step` apart, append.
std::uint64_t repeat_bound(const std::vector<Run>& r, std::uint64_t n, std::int64_t step)
{
    if (n == 0 || r.empty()) {
        return 0;
    }
    return dense(r, step) ? 1 : sat_mul(n, r.size());
}

// Appends n copies of r, copy k shifted by base + k * step.
void repeat(std::vector<Run>& out, const std::vector<Run>& r, std::uint64_t n, std::int64_t base,
            std::int64_t step)
{
    if (n == 0 || r.empty()) {
        return;
    }
    if (dense(r, step)) {
        put(out, base + r[0].disp, n * r[0].len);
        return;
    }
    for (std::uint64_t k = 0; k < n; ++k) {
        std::int64_t off = base + static_cast<std::int64_t>(k) * step;
        for (const Run& x : r) {
            put(out, off + x.disp, x.len);
        }
    }
}

int too_many(const Datatype* t, std::uint64_t need, std::string& why)
{
    (void)t;
    why = "the datatype would flatten into " +
          (need == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 2^64")
                                                             : std::to_string(need)) +
          " separate pieces of memory, more than ULMPI_MPI_TYPE_MAX_RUNS = " +
          std::to_string(max_runs_param.get());
    return MPI_ERR_NO_MEM;
}

} // namespace

int datatype_flatten(Datatype* t, std::string& why)
{
    if (t->flattened) {
        return MPI_SUCCESS;
    }
    const auto limit = static_cast<std::uint64_t>(std::max<std::int64_t>(1, max_runs_param.get()));
    std::uint64_t row_bound = 0;
    for (const TypeBlock& b : t->blocks) {
        if (b.count == 0 || b.type->size == 0) {
            continue;
        }
        if (int e = datatype_flatten(b.type, why)) {
            return e;
        }
        row_bound = sat_add(row_bound, repeat_bound(b.type->runs, b.count, b.type->extent()));
    }
    if (t->reps == 0 || t->size == 0) {
        row_bound = 0;
    }
    if (row_bound > limit) {
        return too_many(t, sat_mul(row_bound, t->reps), why);
    }
    std::vector<Run> row;
    row.reserve(row_bound);
    for (const TypeBlock& b : t->blocks) {
        if (b.count == 0 || b.type->size == 0 || row_bound == 0) {
            continue;
        }
        repeat(row, b.type->runs, b.count, b.disp, b.type->extent());
    }
    if (t->reps <= 1) {
        t->runs = std::move(row);
    } else {
        std::uint64_t bound = repeat_bound(row, t->reps, t->rep_stride);
        if (bound > limit) {
            return too_many(t, bound, why);
        }
        std::vector<Run> all;
        all.reserve(bound);
        repeat(all, row, t->reps, 0, t->rep_stride);
        t->runs = std::move(all);
    }
    t->finish_layout();
    return MPI_SUCCESS;
}

int datatype_commit(Datatype* t, std::string& why)
{
    if (t->committed) {
        return MPI_SUCCESS;
    }
    if (int e = datatype_flatten(t, why)) {
        return e;
    }
    t->committed = true;
    return MPI_SUCCESS;
}

namespace {

// Basic elements in the first `rest` bytes of one element of t,
// 0 < rest < t->size; -1 when they end inside a basic element.
std::int64_t partial(const Datatype* t, std::uint64_t rest)
{
    if (t->predefined) {
        // Only a pair type holds more than one basic element.
        return t->category == Category::pair && rest == t->pair_first ? 1 : -1;
    }
    std::uint64_t row_size = t->size / t->reps;
    std::uint64_t row_elements = t->elements / t->reps;
    auto n = static_cast<std::int64_t>((rest / row_size) * row_elements);
    rest %= row_size;
    for (const TypeBlock& b : t->blocks) {
        if (rest == 0) {
            break;
        }
        std::uint64_t bytes = b.count * b.type->size;
        if (bytes == 0) {
            continue;
        }
        if (rest >= bytes) {
            n += static_cast<std::int64_t>(b.count * b.type->elements);
            rest -= bytes;
            continue;
        }
        std::uint64_t whole = rest / b.type->size;
        n += static_cast<std::int64_t>(whole * b.type->elements);
        rest -= whole * b.type->size;
        if (rest != 0) {
            std::int64_t p = partial(b.type, rest);
            if (p < 0) {
                return -1;
            }
            n += p;
            rest = 0;
        }
    }
    return n;
}

} // namespace

std::int64_t datatype_elements_in(const Datatype* t, std::uint64_t bytes)
{
    if (t->size == 0) {
        return 0;
    }
    std::uint64_t whole = bytes / t->size;
    std::uint64_t rest = bytes % t->size;
    auto n = static_cast<std::int64_t>(whole * t->elements);
    if (rest != 0) {
        std::int64_t p = partial(t, rest);
        if (p < 0) {
            return -1;
        }
        n += p;
    }
    return n;
}

} // namespace ulmpi::mpi
