// The datatype engine (mpi/datatype: constructors, flattening, element
// counts, external32) against a brute-force model.
//
// Random nested types are described by a Spec tree and built twice: by the
// engine's constructors, and by a reference that expands the full type map
// entry by entry, enumerating every copy of every child (no min/max
// shortcuts, no run merging). For each type the two must agree on the
// packed byte sequence (the engine's runs expanded byte by byte vs the type
// map's entries in order), size, bounds, true bounds, element counts,
// MPI_Get_elements counts of every prefix, the basic type, and what
// ulm::pack gathers from real memory for several counts.
#include "mpi/datatype/datatype.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace ulmpi::mpi {
namespace {

struct Init {
    Init() { datatype_init_predefined(); }
};
const Init init_once;

Datatype* pre(MPI_Datatype h) { return datatype_get(h); }

// --- the model -------------------------------------------------------------

struct Spec {
    enum Kind { basic, contiguous, vector, hvector, indexed, hindexed, structure, resized, dup };
    Kind kind = basic;
    MPI_Datatype handle = MPI_INT; // basic
    int count = 0;
    int blocklen = 0;
    std::int64_t stride = 0; // elements (vector) or bytes (hvector)
    std::vector<int> lens;
    std::vector<std::int64_t> disps; // elements (indexed) or bytes (hindexed, struct)
    std::vector<std::shared_ptr<Spec>> kids;
    std::int64_t lb = 0; // resized
    std::int64_t extent = 0;
};
using SpecP = std::shared_ptr<Spec>;

// One basic element of the type map.
struct Entry {
    std::int64_t disp;
    std::uint64_t size;
    const Datatype* type;
};

// The expanded type map and the bounds the rules of constructors.cpp give,
// computed by enumerating every copy.
struct Ref {
    std::vector<Entry> entries;
    bool sticky_lb = false, sticky_ub = false;
    std::int64_t lb = 0, ub = 0;
    std::uint32_t align = 1;
    // The basic type: the one predefined type of the members, nullptr when
    // mixed; members holding no basic type at all (markers, structs of
    // markers) do not count.
    const Datatype* basic = nullptr;
    bool mixed = false;
    bool any = false;
    std::int64_t extent() const { return ub - lb; }
    std::uint64_t size() const
    {
        std::uint64_t s = 0;
        for (const Entry& e : entries) {
            s += e.size;
        }
        return s;
    }
};

// A copy of child `c` placed at displacement d.
struct Copy {
    const Ref* c;
    std::int64_t d;
};

bool is_marker(MPI_Datatype h) { return h == MPI_LB || h == MPI_UB; }

void place(Ref& r, const std::vector<Copy>& copies, const std::vector<MPI_Datatype>& marker_of,
           bool pad)
{
    bool lm = false, ln = false, um = false, un = false;
    std::int64_t lmv = 0, lnv = 0, umv = 0, unv = 0;
    for (std::size_t i = 0; i < copies.size(); ++i) {
        const Copy& k = copies[i];
        MPI_Datatype mk = marker_of[i];
        if (mk == MPI_LB) {
            lmv = lm ? std::min(lmv, k.d) : k.d;
            lm = true;
            continue;
        }
        if (mk == MPI_UB) {
            umv = um ? std::max(umv, k.d) : k.d;
            um = true;
            continue;
        }
        for (const Entry& e : k.c->entries) {
            r.entries.push_back({e.disp + k.d, e.size, e.type});
        }
        bool data = k.c->size() > 0;
        if (k.c->sticky_lb) {
            lmv = lm ? std::min(lmv, k.d + k.c->lb) : k.d + k.c->lb;
            lm = true;
        } else if (data) {
            lnv = ln ? std::min(lnv, k.d + k.c->lb) : k.d + k.c->lb;
            ln = true;
        }
        if (k.c->sticky_ub) {
            umv = um ? std::max(umv, k.d + k.c->ub) : k.d + k.c->ub;
            um = true;
        } else if (data) {
            unv = un ? std::max(unv, k.d + k.c->ub) : k.d + k.c->ub;
            un = true;
        }
    }
    r.sticky_lb = lm;
    r.sticky_ub = um;
    r.lb = lm ? lmv : (ln ? lnv : 0);
    r.ub = um ? umv : (un ? unv : 0);
    if (pad && !lm && !um && r.align > 1) {
        std::int64_t a = r.align;
        std::int64_t rem = ((r.ub - r.lb) % a + a) % a;
        if (rem != 0) {
            r.ub += a - rem;
        }
    }
}

Ref expand(const Spec& s)
{
    Ref r;
    if (s.kind == Spec::basic) {
        const Datatype* t = pre(s.handle);
        if (!is_marker(s.handle)) {
            r.entries.push_back({0, t->size, t});
            r.ub = t->extent();
            r.align = t->align;
            r.basic = t;
            r.any = true;
        }
        return r;
    }
    std::vector<Ref> kids;
    for (const SpecP& k : s.kids) {
        kids.push_back(expand(*k));
        const Ref& c = kids.back();
        r.align = std::max(r.align, c.align);
        if (!c.any || (c.basic == nullptr && c.entries.empty())) {
            continue;
        }
        if (!r.any) {
            r.basic = c.basic;
            r.mixed = c.mixed;
            r.any = true;
        } else if (c.mixed || c.basic != r.basic) {
            r.mixed = true;
        }
    }
    if (r.mixed) {
        r.basic = nullptr;
    }
    std::vector<Copy> copies;
    std::vector<MPI_Datatype> marks;
    auto add = [&](std::size_t kid, std::int64_t d) {
        copies.push_back({&kids[kid], d});
        const Spec& k = *s.kids[kid];
        marks.push_back(k.kind == Spec::basic && is_marker(k.handle) ? k.handle
                                                                     : MPI_DATATYPE_NULL);
    };
    std::int64_t e0 = kids[0].extent();
    switch (s.kind) {
    case Spec::contiguous:
        for (int i = 0; i < s.count; ++i) {
            add(0, i * e0);
        }
        break;
    case Spec::vector:
    case Spec::hvector: {
        std::int64_t step = s.kind == Spec::vector ? s.stride * e0 : s.stride;
        for (int i = 0; i < s.count; ++i) {
            for (int j = 0; j < s.blocklen; ++j) {
                add(0, i * step + j * e0);
            }
        }
        break;
    }
    case Spec::indexed:
    case Spec::hindexed:
        for (std::size_t i = 0; i < s.lens.size(); ++i) {
            std::int64_t base = s.kind == Spec::indexed ? s.disps[i] * e0 : s.disps[i];
            for (int j = 0; j < s.lens[i]; ++j) {
                add(0, base + j * e0);
            }
        }
        break;
    case Spec::structure:
        for (std::size_t i = 0; i < s.lens.size(); ++i) {
            for (int j = 0; j < s.lens[i]; ++j) {
                add(i, s.disps[i] + j * kids[i].extent());
            }
        }
        break;
    case Spec::resized:
    case Spec::dup: add(0, 0); break;
    default: break;
    }
    place(r, copies, marks, s.kind == Spec::structure);
    if (s.kind == Spec::resized) {
        r.lb = s.lb;
        r.ub = s.lb + s.extent;
        r.sticky_lb = r.sticky_ub = true;
    }
    if (s.kind == Spec::dup) {
        r.lb = kids[0].lb;
        r.ub = kids[0].ub;
        r.sticky_lb = kids[0].sticky_lb;
        r.sticky_ub = kids[0].sticky_ub;
    }
    return r;
}

// --- the engine ------------------------------------------------------------

// Builds s with the engine's constructors; returns a type holding one reference.
Datatype* build(const Spec& s)
{
    if (s.kind == Spec::basic) {
        return pre(s.handle);
    }
    std::vector<Datatype*> kids;
    for (const SpecP& k : s.kids) {
        kids.push_back(build(*k));
    }
    Datatype* t = nullptr;
    Datatype* k0 = kids[0];
    std::vector<std::uint64_t> lens(s.lens.begin(), s.lens.end());
    std::vector<std::int64_t> disps = s.disps;
    switch (s.kind) {
    case Spec::contiguous: t = build_contiguous(static_cast<std::uint64_t>(s.count), k0); break;
    case Spec::vector:
        t = build_hvector(static_cast<std::uint64_t>(s.count),
                          static_cast<std::uint64_t>(s.blocklen), s.stride * k0->extent(), k0);
        break;
    case Spec::hvector:
        t = build_hvector(static_cast<std::uint64_t>(s.count),
                          static_cast<std::uint64_t>(s.blocklen), s.stride, k0);
        break;
    case Spec::indexed:
        for (auto& d : disps) {
            d *= k0->extent();
        }
        t = build_hindexed(lens.size(), lens.data(), disps.data(), k0);
        break;
    case Spec::hindexed: t = build_hindexed(lens.size(), lens.data(), disps.data(), k0); break;
    case Spec::structure:
        t = build_struct(lens.size(), lens.data(), disps.data(), kids.data());
        break;
    case Spec::resized: t = build_resized(k0, s.lb, s.extent); break;
    case Spec::dup: t = build_dup(k0); break;
    default: break;
    }
    for (Datatype* k : kids) {
        datatype_release(k); // the new type holds its own references
    }
    return t;
}

// --- random specs ------------------------------------------------------------

const MPI_Datatype kBasics[] = {MPI_CHAR, MPI_SHORT, MPI_INT,  MPI_DOUBLE,
                                MPI_BYTE, MPI_LONG,  MPI_FLOAT};

struct Gen {
    std::mt19937_64 rng;
    explicit Gen(std::uint64_t seed) : rng(seed) {}
    int below(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
    int range(int lo, int hi) { return lo + below(hi - lo + 1); }
    // A count in 0..hi, zero only now and then (zero counts empty whole subtrees).
    int count(int hi) { return below(10) == 0 ? 0 : range(1, hi); }

    // budget: a rough bound on the entries of the expanded map.
    SpecP make(int depth, std::uint64_t budget)
    {
        auto s = std::make_shared<Spec>();
        if (depth == 0 || budget < 4 || below(8) == 0) {
            s->kind = Spec::basic;
            s->handle = kBasics[below(std::size(kBasics))];
            return s;
        }
        s->kind = static_cast<Spec::Kind>(1 + below(8));
        auto kid = [&](std::uint64_t b) { return make(depth - 1, b); };
        switch (s->kind) {
        case Spec::contiguous:
            s->count = count(4);
            s->kids.push_back(kid(budget / std::max(1, s->count)));
            break;
        case Spec::vector:
        case Spec::hvector:
            s->count = count(4);
            s->blocklen = count(3);
            s->kids.push_back(kid(budget / std::max(1, s->count * s->blocklen)));
            s->stride = s->kind == Spec::vector ? range(-4, 5) : range(-40, 40);
            break;
        case Spec::indexed:
        case Spec::hindexed: {
            int n = count(4);
            int total = 0;
            for (int i = 0; i < n; ++i) {
                s->lens.push_back(count(3));
                total += s->lens.back();
                s->disps.push_back(s->kind == Spec::indexed ? range(-6, 6) : range(-60, 60));
            }
            s->kids.push_back(kid(budget / std::max(1, total)));
            break;
        }
        case Spec::structure: {
            int n = range(1, 4);
            for (int i = 0; i < n; ++i) {
                s->lens.push_back(count(3));
                s->disps.push_back(range(-50, 50));
                if (below(6) == 0) {
                    auto m = std::make_shared<Spec>();
                    m->handle = below(2) == 0 ? MPI_LB : MPI_UB;
                    s->kids.push_back(m);
                    s->lens.back() = 1;
                } else {
                    s->kids.push_back(kid(budget / static_cast<std::uint64_t>(n * 3)));
                }
            }
            break;
        }
        case Spec::resized:
            s->lb = range(-20, 20);
            s->extent = range(-8, 40);
            s->kids.push_back(kid(budget));
            break;
        case Spec::dup: s->kids.push_back(kid(budget)); break;
        default: break;
        }
        return s;
    }
};

// --- comparison --------------------------------------------------------------

std::vector<std::int64_t> bytes_of_runs(const Datatype* t)
{
    std::vector<std::int64_t> v;
    for (const ulm::Run& r : t->runs) {
        for (std::uint64_t i = 0; i < r.len; ++i) {
            v.push_back(r.disp + static_cast<std::int64_t>(i));
        }
    }
    return v;
}

std::vector<std::int64_t> bytes_of_entries(const Ref& r)
{
    std::vector<std::int64_t> v;
    for (const Entry& e : r.entries) {
        for (std::uint64_t i = 0; i < e.size; ++i) {
            v.push_back(e.disp + static_cast<std::int64_t>(i));
        }
    }
    return v;
}

void check_against_model(const Spec& s, const std::string& what)
{
    Ref ref = expand(s);
    Datatype* t = build(s);
    ASSERT_NE(t, nullptr);
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS) << why;
    SCOPED_TRACE(what);

    EXPECT_EQ(t->size, ref.size());
    EXPECT_EQ(t->lb, ref.lb);
    EXPECT_EQ(t->ub, ref.ub);
    EXPECT_EQ(t->sticky_lb, ref.sticky_lb);
    EXPECT_EQ(t->sticky_ub, ref.sticky_ub);
    EXPECT_EQ(t->elements, ref.entries.size());
    if (!ref.entries.empty()) {
        std::int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (const Entry& e : ref.entries) {
            lo = std::min(lo, e.disp);
            hi = std::max(hi, e.disp + static_cast<std::int64_t>(e.size));
        }
        EXPECT_EQ(t->true_lb, lo);
        EXPECT_EQ(t->true_ub, hi);
    }
    // Packed order: the runs are the type map, byte for byte.
    EXPECT_EQ(bytes_of_runs(t), bytes_of_entries(ref));
    // Adjacent runs are always merged.
    for (std::size_t i = 1; i < t->runs.size(); ++i) {
        EXPECT_NE(t->runs[i - 1].disp + static_cast<std::int64_t>(t->runs[i - 1].len),
                  t->runs[i].disp)
            << "runs " << i - 1 << " and " << i << " touch";
    }
    EXPECT_EQ(t->basic, ref.basic);
    // external32: MPI_LONG is 4 bytes there, everything else here native.
    std::uint64_t ext = 0;
    for (const Entry& e : ref.entries) {
        ext += e.type->handle == MPI_LONG ? 4 : e.size;
    }
    EXPECT_EQ(t->ext32_size, ext);

    // MPI_Get_elements for every prefix of up to three elements.
    if (t->size > 0) {
        std::vector<std::int64_t> count_at(3 * t->size + 1, -1);
        std::uint64_t pos = 0;
        std::int64_t n = 0;
        count_at[0] = 0;
        for (int rep = 0; rep < 3; ++rep) {
            for (const Entry& e : ref.entries) {
                pos += e.size;
                count_at[pos] = ++n;
            }
        }
        for (std::uint64_t p = 0; p <= 3 * t->size; ++p) {
            ASSERT_EQ(datatype_elements_in(t, p), count_at[p]) << "prefix of " << p << " bytes";
        }
    }

    // ulm::pack gathers exactly the type map from memory, for 1..3 elements.
    for (std::uint64_t count = 1; count <= 3 && t->size > 0; ++count) {
        std::int64_t lo = 0, hi = 1;
        for (std::uint64_t k = 0; k < count; ++k) {
            for (const Entry& e : ref.entries) {
                std::int64_t a = e.disp + static_cast<std::int64_t>(k) * ref.extent();
                lo = std::min(lo, a);
                hi = std::max(hi, a + static_cast<std::int64_t>(e.size));
            }
        }
        std::vector<unsigned char> mem(static_cast<std::size_t>(hi - lo));
        for (std::size_t i = 0; i < mem.size(); ++i) {
            mem[i] = static_cast<unsigned char>(i * 131 + 7);
        }
        unsigned char* base = mem.data() - lo;
        std::vector<unsigned char> want;
        for (std::uint64_t k = 0; k < count; ++k) {
            for (const Entry& e : ref.entries) {
                std::int64_t a = e.disp + static_cast<std::int64_t>(k) * ref.extent();
                want.insert(want.end(), base + a, base + a + e.size);
            }
        }
        std::vector<unsigned char> got(want.size());
        ulm::pack(t->ref(base, count), 0, got.data(), got.size());
        EXPECT_EQ(got, want) << "count " << count;
    }
    datatype_release(t);
}

std::string describe(const Spec& s)
{
    static const char* names[] = {"basic",    "contig", "vector",  "hvector", "indexed",
                                  "hindexed", "struct", "resized", "dup"};
    std::string out = names[s.kind];
    if (s.kind == Spec::basic) {
        return datatype_name(s.handle);
    }
    out += "(";
    if (s.count || s.blocklen || s.stride) {
        out += std::to_string(s.count) + "," + std::to_string(s.blocklen) + "," +
               std::to_string(s.stride) + ";";
    }
    for (std::size_t i = 0; i < s.lens.size(); ++i) {
        out += std::to_string(s.lens[i]) + "@" + std::to_string(s.disps[i]) + " ";
    }
    if (s.kind == Spec::resized) {
        out += std::to_string(s.lb) + "+" + std::to_string(s.extent) + ";";
    }
    for (const SpecP& k : s.kids) {
        out += describe(*k) + " ";
    }
    return out + ")";
}

TEST(Flatten, random_nested_types_match_the_type_map)
{
    Gen gen(20240611);
    for (int i = 0; i < 5000; ++i) {
        SpecP s = gen.make(gen.range(2, 6), 1500);
        check_against_model(*s, "type " + std::to_string(i) + ": " + describe(*s));
        if (::testing::Test::HasFailure()) {
            break;
        }
    }
}

// --- hand-picked cases ---------------------------------------------------------

TEST(Flatten, contiguous_type_is_one_run)
{
    Datatype* t = build_contiguous(1000000000, pre(MPI_INT));
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
    ASSERT_EQ(t->runs.size(), 1u);
    EXPECT_EQ(t->runs[0].len, 4000000000u);
    EXPECT_TRUE(t->layout.contiguous);
    EXPECT_EQ(t->elements, 1000000000u);
    datatype_release(t);
}

TEST(Flatten, touching_vector_blocks_collapse_without_expansion)
{
    // 1e9 blocks whose stride equals the block length: one run, built in O(1).
    auto t0 = std::chrono::steady_clock::now();
    Datatype* t = build_hvector(1000000000, 4, 32, pre(MPI_DOUBLE));
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
    ASSERT_EQ(t->runs.size(), 1u);
    EXPECT_EQ(t->runs[0].len, 32000000000u);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    datatype_release(t);
}

TEST(Flatten, strided_vector_keeps_one_run_per_block)
{
    Datatype* t = build_hvector(1000000, 1, 16, pre(MPI_DOUBLE));
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
    ASSERT_EQ(t->runs.size(), 1000000u);
    EXPECT_EQ(t->runs[999999].disp, 16 * 999999);
    datatype_release(t);
}

TEST(Flatten, nested_vector_of_touching_rows_is_one_run)
{
    // A 1000 x 1000 matrix sent whole through a vector of full rows.
    Datatype* row = build_contiguous(1000, pre(MPI_DOUBLE));
    Datatype* t = build_hvector(1000, 1, 8000, row);
    datatype_release(row);
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
    EXPECT_EQ(t->runs.size(), 1u);
    datatype_release(t);
}

TEST(Flatten, too_many_runs_fail_to_commit_instead_of_exhausting_memory)
{
    Datatype* v = build_hvector(1000000, 1, 16, pre(MPI_DOUBLE));
    Datatype* t = build_hvector(1000000, 1, 16000000, v);
    datatype_release(v);
    std::string why;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(datatype_commit(t, why), MPI_ERR_NO_MEM);
    EXPECT_NE(why.find("ULMPI_MPI_TYPE_MAX_RUNS"), std::string::npos) << why;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_FALSE(t->committed);
    datatype_release(t);
}

TEST(Flatten, deep_nesting_works_and_frees_iteratively)
{
    Datatype* t = pre(MPI_INT);
    for (int i = 0; i < 2000; ++i) {
        Datatype* n = i % 2 == 0 ? build_contiguous(1, t) : build_dup(t);
        datatype_release(t);
        t = n;
    }
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
    EXPECT_EQ(t->runs.size(), 1u);
    EXPECT_EQ(t->size, 4u);
    datatype_release(t); // 2000 levels deep: no recursion in destroy
}

TEST(Flatten, negative_stride_vector_runs_go_downwards)
{
    Datatype* t = build_hvector(3, 1, -8, pre(MPI_INT));
    std::string why;
    ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
    ASSERT_EQ(t->runs.size(), 3u);
    EXPECT_EQ(t->runs[0].disp, 0);
    EXPECT_EQ(t->runs[1].disp, -8);
    EXPECT_EQ(t->runs[2].disp, -16);
    EXPECT_EQ(t->lb, -16);
    EXPECT_EQ(t->ub, 4);
    datatype_release(t);
}

TEST(Bounds, sticky_markers_follow_mpich_lbub_examples)
{
    // { (LB,-3), 4*(BYTE,0), (UB,6) } and the types of MPICH's lbub test.
    Datatype* types[3] = {pre(MPI_LB), pre(MPI_BYTE), pre(MPI_UB)};
    std::uint64_t lens[3] = {1, 4, 1};
    std::int64_t disps[3] = {-3, 0, 6};
    Datatype* evil = build_struct(3, lens, disps, types);
    EXPECT_EQ(evil->lb, -3);
    EXPECT_EQ(evil->extent(), 9);
    Datatype* c = build_contiguous(3, evil);
    EXPECT_EQ(c->lb, -3);
    EXPECT_EQ(c->ub, 24);
    EXPECT_EQ(c->true_ub - c->true_lb, 22);
    Datatype* v = build_hvector(3, 4, -5 * evil->extent(), evil);
    EXPECT_EQ(v->lb, -93);
    EXPECT_EQ(v->extent(), 126);
    EXPECT_EQ(v->true_lb, -90);
    std::int64_t neg[3] = {6, 0, -3};
    Datatype* negx = build_struct(3, lens, neg, types);
    EXPECT_EQ(negx->extent(), -9);
    Datatype* nc = build_contiguous(3, negx);
    EXPECT_EQ(nc->lb, -12);
    EXPECT_EQ(nc->extent(), 9);
    EXPECT_EQ(nc->true_lb, -18);
    for (Datatype* t : {evil, c, v, negx, nc}) {
        datatype_release(t);
    }
}

TEST(Bounds, struct_is_padded_to_its_alignment_unless_bounded)
{
    Datatype* types[2] = {pre(MPI_DOUBLE), pre(MPI_CHAR)};
    std::uint64_t lens[2] = {1, 1};
    std::int64_t disps[2] = {0, 8};
    Datatype* s = build_struct(2, lens, disps, types);
    EXPECT_EQ(s->extent(), 16);
    EXPECT_EQ(s->size, 9u);
    Datatype* only_lb[3] = {pre(MPI_LB), pre(MPI_DOUBLE), pre(MPI_CHAR)};
    std::uint64_t l3[3] = {1, 1, 1};
    std::int64_t d3[3] = {0, 0, 8};
    Datatype* b = build_struct(3, l3, d3, only_lb);
    EXPECT_EQ(b->extent(), 9); // a marker switches padding off (as MPICH)
    Datatype* markers[1] = {pre(MPI_LB)};
    std::uint64_t l1[1] = {1};
    std::int64_t d1[1] = {10};
    Datatype* e = build_struct(1, l1, d1, markers);
    EXPECT_EQ(e->lb, 10);
    EXPECT_EQ(e->ub, 0);
    EXPECT_EQ(e->extent(), -10);
    for (Datatype* t : {s, b, e}) {
        datatype_release(t);
    }
}

TEST(Elements, struct_cut_after_the_int_counts_one_element)
{
    Datatype* types[2] = {pre(MPI_INT), pre(MPI_DOUBLE)};
    std::uint64_t lens[2] = {1, 1};
    std::int64_t disps[2] = {0, 8};
    Datatype* s = build_struct(2, lens, disps, types);
    EXPECT_EQ(datatype_elements_in(s, 4), 1);
    EXPECT_EQ(datatype_elements_in(s, 6), -1);
    EXPECT_EQ(datatype_elements_in(s, 12), 2);
    EXPECT_EQ(datatype_elements_in(s, 16), 3);
    EXPECT_EQ(datatype_elements_in(pre(MPI_DOUBLE_INT), 20), 3); // 12 + a double
    EXPECT_EQ(datatype_elements_in(pre(MPI_DOUBLE_INT), 22), -1);
    datatype_release(s);
}

TEST(Array, subarray_selects_the_right_elements_in_both_orders)
{
    int sizes[3] = {4, 5, 6};
    int subs[3] = {2, 3, 2};
    int starts[3] = {1, 2, 3};
    for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
        Datatype* t = nullptr;
        std::string why;
        ASSERT_EQ(build_subarray(3, sizes, subs, starts, order, pre(MPI_INT), &t, why), MPI_SUCCESS)
            << why;
        ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
        EXPECT_EQ(t->lb, 0);
        EXPECT_EQ(t->extent(), 4 * 5 * 6 * 4);
        std::vector<std::int64_t> want;
        // Element (i, j, k) in type-map order: the last index fastest in C.
        for (int a = 0; a < subs[order == MPI_ORDER_C ? 0 : 2]; ++a) {
            for (int b = 0; b < subs[1]; ++b) {
                for (int c = 0; c < subs[order == MPI_ORDER_C ? 2 : 0]; ++c) {
                    std::int64_t idx =
                        order == MPI_ORDER_C
                            ? ((starts[0] + a) * 5 + (starts[1] + b)) * 6 + (starts[2] + c)
                            : ((starts[2] + a) * 5 + (starts[1] + b)) * 4 + (starts[0] + c);
                    for (int byte = 0; byte < 4; ++byte) {
                        want.push_back(idx * 4 + byte);
                    }
                }
            }
        }
        EXPECT_EQ(bytes_of_runs(t), want) << (order == MPI_ORDER_C ? "C" : "Fortran");
        datatype_release(t);
    }
}

TEST(Array, darray_pieces_of_all_ranks_tile_the_array_once)
{
    // 2-d 7 x 10 array on a 2 x 3 grid: cyclic(2) rows, block columns; and
    // block(default) x cyclic(default); every element owned exactly once.
    struct Case {
        int distribs[2];
        int dargs[2];
    } cases[] = {
        {{MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, {2, MPI_DISTRIBUTE_DFLT_DARG}},
        {{MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
         {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}},
        {{MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC}, {3, 4}},
    };
    int gsizes[2] = {7, 10};
    int psizes[2] = {2, 3};
    for (const Case& cs : cases) {
        for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
            std::vector<int> owner(70, -1);
            for (int rank = 0; rank < 6; ++rank) {
                Datatype* t = nullptr;
                std::string why;
                ASSERT_EQ(build_darray(6, rank, 2, gsizes, cs.distribs, cs.dargs, psizes, order,
                                       pre(MPI_INT), &t, why),
                          MPI_SUCCESS)
                    << why;
                ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
                EXPECT_EQ(t->extent(), 70 * 4);
                std::vector<std::int64_t> bytes = bytes_of_runs(t);
                std::int64_t last = -1;
                int pr = rank / 3;
                int pc = rank % 3;
                for (std::size_t i = 0; i < bytes.size(); i += 4) {
                    std::int64_t e = bytes[i] / 4;
                    ASSERT_GT(e, last) << "type-map order is increasing global index";
                    last = e;
                    ASSERT_EQ(owner[static_cast<std::size_t>(e)], -1)
                        << "element " << e << " owned twice";
                    owner[static_cast<std::size_t>(e)] = rank;
                    // Check the owner against the distribution formula.
                    int r, c;
                    if (order == MPI_ORDER_C) {
                        r = static_cast<int>(e / 10);
                        c = static_cast<int>(e % 10);
                    } else {
                        r = static_cast<int>(e % 7);
                        c = static_cast<int>(e / 7);
                    }
                    auto who = [](int idx, int g, int p, int dist, int darg) {
                        if (dist == MPI_DISTRIBUTE_BLOCK) {
                            int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
                            return idx / b;
                        }
                        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
                        return (idx / b) % p;
                    };
                    EXPECT_EQ(who(r, 7, 2, cs.distribs[0], cs.dargs[0]), pr);
                    EXPECT_EQ(who(c, 10, 3, cs.distribs[1], cs.dargs[1]), pc);
                }
                datatype_release(t);
            }
            for (int e = 0; e < 70; ++e) {
                EXPECT_NE(owner[static_cast<std::size_t>(e)], -1)
                    << "element " << e << " owned by nobody";
            }
        }
    }
}

// --- external32 ----------------------------------------------------------------

std::vector<unsigned char> to_ext(const Datatype* t, const void* native, std::uint64_t count)
{
    std::vector<unsigned char> packed(t->size * count);
    ulm::pack(t->ref(native, count), 0, packed.data(), packed.size());
    std::vector<unsigned char> out(t->ext32_size * count);
    std::string why;
    EXPECT_EQ(external32_from_native(t, count, packed.data(), out.data(), why), MPI_SUCCESS) << why;
    return out;
}

TEST(External32, integers_and_floats_are_big_endian)
{
    int i = 0x01020304;
    EXPECT_EQ(to_ext(pre(MPI_INT), &i, 1), (std::vector<unsigned char>{1, 2, 3, 4}));
    long l = -2;
    EXPECT_EQ(to_ext(pre(MPI_LONG), &l, 1), (std::vector<unsigned char>{0xff, 0xff, 0xff, 0xfe}));
    double d = 1.0;
    EXPECT_EQ(to_ext(pre(MPI_DOUBLE), &d, 1),
              (std::vector<unsigned char>{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}));
    float f = -2.5f;
    EXPECT_EQ(to_ext(pre(MPI_FLOAT), &f, 1), (std::vector<unsigned char>{0xc0, 0x20, 0, 0}));
    short sh = 0x0a0b;
    EXPECT_EQ(to_ext(pre(MPI_SHORT), &sh, 1), (std::vector<unsigned char>{0x0a, 0x0b}));
    wchar_t w = L'A';
    EXPECT_EQ(to_ext(pre(MPI_WCHAR), &w, 1), (std::vector<unsigned char>{0, 0x41}));
    LocPair<double, int> di{1.0, 7};
    EXPECT_EQ(to_ext(pre(MPI_DOUBLE_INT), &di, 1),
              (std::vector<unsigned char>{0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}));
}

TEST(External32, long_double_is_ieee_binary128)
{
    long double v = -1.5L;
    std::vector<unsigned char> want(16, 0);
    want[0] = 0xbf; // sign, exponent 0x3fff
    want[1] = 0xff;
    want[2] = 0x80; // fraction .1
    EXPECT_EQ(to_ext(pre(MPI_LONG_DOUBLE), &v, 1), want);
    // Round trip keeps every bit of the value.
    const long double vals[] = {0.0L, -0.0L, 1.0L / 3.0L, 1e4000L, -1e-4940L, INFINITY};
    for (long double x : vals) {
        std::vector<unsigned char> ext = to_ext(pre(MPI_LONG_DOUBLE), &x, 1);
        long double back = 0;
        std::string why;
        ASSERT_EQ(external32_to_native(pre(MPI_LONG_DOUBLE), 1, ext.data(), &back, why),
                  MPI_SUCCESS);
        EXPECT_EQ(std::memcmp(&back, &x, 10), 0) << static_cast<double>(x);
    }
}

TEST(External32, long_out_of_32_bit_range_is_a_conversion_error)
{
    long big = 1L << 40;
    std::vector<unsigned char> out(4);
    std::string why;
    EXPECT_EQ(external32_from_native(pre(MPI_LONG), 1, &big, out.data(), why), MPI_ERR_CONVERSION);
    EXPECT_FALSE(why.empty());
}

TEST(External32, random_types_round_trip)
{
    Gen gen(77);
    for (int i = 0; i < 300; ++i) {
        SpecP s = gen.make(4, 200);
        Datatype* t = build(*s);
        std::string why;
        ASSERT_EQ(datatype_commit(t, why), MPI_SUCCESS);
        // Longs must fit 32 bits: start from an external stream (any 4-byte
        // value is a valid long), convert it to native and back.
        std::vector<unsigned char> ext(t->ext32_size * 2);
        for (std::size_t k = 0; k < ext.size(); ++k) {
            ext[k] = static_cast<unsigned char>(k % 3 == 0 ? 0 : k * 11);
        }
        std::vector<unsigned char> n1(t->size * 2), e2(ext.size());
        ASSERT_EQ(external32_to_native(t, 2, ext.data(), n1.data(), why), MPI_SUCCESS) << why;
        ASSERT_EQ(external32_from_native(t, 2, n1.data(), e2.data(), why), MPI_SUCCESS) << why;
        EXPECT_EQ(e2, ext) << describe(*s);
        datatype_release(t);
    }
}

} // namespace
} // namespace ulmpi::mpi
