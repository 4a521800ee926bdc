// The "external32" data representation (MPI-3.1 §13.5.2): big-endian, IEEE
// formats, fixed sizes per type. Native and external32 sizes differ for
// MPI_LONG / MPI_UNSIGNED_LONG (8 -> 4 bytes), MPI_WCHAR (4 -> 2) and
// MPI_LONG_DOUBLE (x87 80-bit extended in 16 bytes -> IEEE binary128).
//
// MPI_Pack_external packs natively first (ulm::pack, the ordinary flattened
// walk) and converts that packed stream here; unpacking goes the other way.
// The packed stream is the sequence of the type's basic elements in
// type-map order, so conversion walks the type's structure over it: a
// homogeneous type (one basic type) is a flat array of that basic type,
// otherwise the blocks are visited in order.
#include "mpi/datatype/datatype.h"

#include <bit>
#include <cstring>
#include <limits>

namespace ulmpi::mpi {
namespace {

enum class Conv : std::uint8_t {
    swap,            // same size: byte order only
    narrow_signed,   // 8-byte two's complement <-> 4 bytes
    narrow_unsigned, // 8- or 4-byte unsigned <-> fewer bytes
    long_double,     // native long double <-> IEEE binary128
};

struct Atom {
    std::uint8_t native;
    std::uint8_t ext;
    Conv conv;
};

// The basic values of one element of a predefined type, in packed order:
// one, or two for pair and complex types, none for the markers.
struct Atoms {
    int n = 0;
    Atom a[2]{};
};

Atoms atoms_of(MPI_Datatype h, std::uint64_t size)
{
    constexpr Atom ld{16, 16, Conv::long_double};
    auto one = [](Atom x) { return Atoms{1, {x, x}}; };
    auto two = [](Atom x, Atom y) { return Atoms{2, {x, y}}; };
    auto same = [](std::uint64_t s) {
        return Atom{static_cast<std::uint8_t>(s), static_cast<std::uint8_t>(s), Conv::swap};
    };
    switch (h) {
    case MPI_LB:
    case MPI_UB: return Atoms{};
    case MPI_LONG: return one({8, 4, Conv::narrow_signed});
    case MPI_UNSIGNED_LONG: return one({8, 4, Conv::narrow_unsigned});
    case MPI_WCHAR: return one({4, 2, Conv::narrow_unsigned});
    case MPI_LONG_DOUBLE: return one(ld);
    case MPI_C_FLOAT_COMPLEX:
    case MPI_CXX_FLOAT_COMPLEX:
    case MPI_COMPLEX:
    case MPI_COMPLEX8: return two(same(4), same(4));
    case MPI_C_DOUBLE_COMPLEX:
    case MPI_CXX_DOUBLE_COMPLEX:
    case MPI_DOUBLE_COMPLEX:
    case MPI_COMPLEX16: return two(same(8), same(8));
    case MPI_C_LONG_DOUBLE_COMPLEX:
    case MPI_CXX_LONG_DOUBLE_COMPLEX: return two(ld, ld);
    case MPI_FLOAT_INT:
    case MPI_2INT:
    case MPI_2INTEGER:
    case MPI_2REAL: return two(same(4), same(4));
    case MPI_DOUBLE_INT: return two(same(8), same(4));
    case MPI_LONG_INT: return two({8, 4, Conv::narrow_signed}, same(4));
    case MPI_SHORT_INT: return two(same(2), same(4));
    case MPI_LONG_DOUBLE_INT: return two(ld, same(4));
    case MPI_2DOUBLE_PRECISION: return two(same(8), same(8));
    default: return size == 0 ? Atoms{} : one(same(size));
    }
}

// Big-endian store/load of the low `n` bytes of v.
void store_be(std::byte* out, std::uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; ++i) {
        out[n - 1 - i] = static_cast<std::byte>(v >> (8 * i));
    }
}

std::uint64_t load_be(const std::byte* in, unsigned n)
{
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) {
        v = (v << 8) | std::to_integer<std::uint64_t>(in[i]);
    }
    return v;
}

std::uint64_t load_native(const std::byte* in, unsigned n)
{
    switch (n) {
    case 1: return std::to_integer<std::uint64_t>(in[0]);
    case 2: {
        std::uint16_t v;
        std::memcpy(&v, in, 2);
        return v;
    }
    case 4: {
        std::uint32_t v;
        std::memcpy(&v, in, 4);
        return v;
    }
    default: {
        std::uint64_t v;
        std::memcpy(&v, in, 8);
        return v;
    }
    }
}

void store_native(std::byte* out, std::uint64_t v, unsigned n)
{
    switch (n) {
    case 1: out[0] = static_cast<std::byte>(v); break;
    case 2: {
        auto x = static_cast<std::uint16_t>(v);
        std::memcpy(out, &x, 2);
        break;
    }
    case 4: {
        auto x = static_cast<std::uint32_t>(v);
        std::memcpy(out, &x, 4);
        break;
    }
    default: std::memcpy(out, &v, 8); break;
    }
}

// Any size: reverse the bytes on a little-endian host.
void swap_copy(std::byte* out, const std::byte* in, unsigned n)
{
    if constexpr (std::endian::native == std::endian::big) {
        std::memcpy(out, in, n);
    } else {
        for (unsigned i = 0; i < n; ++i) {
            out[i] = in[n - 1 - i];
        }
    }
}

constexpr bool kX87 = std::numeric_limits<long double>::digits == 64;
constexpr bool kQuad = std::numeric_limits<long double>::digits == 113;
static_assert(kX87 || kQuad || std::numeric_limits<long double>::digits == 53,
              "external32: unknown long double format");

// binary128 as two 64-bit halves (hi holds sign, exponent, top 48 fraction bits).
void ld_to_quad(const std::byte* in, std::uint64_t& hi, std::uint64_t& lo)
{
    if constexpr (kX87) {
        // x87: 64-bit significand with an explicit integer bit, then sign and
        // a 15-bit exponent with the same bias as binary128. The 63 fraction
        // bits become the top of binary128's 112; denormals line up too.
        std::uint64_t mant;
        std::uint16_t se;
        std::memcpy(&mant, in, 8);
        std::memcpy(&se, in + 8, 2);
        std::uint64_t frac = mant & 0x7fffffffffffffffULL;
        hi = (static_cast<std::uint64_t>(se) << 48) | (frac >> 15);
        lo = (frac & 0x7fffULL) << 49;
    } else if constexpr (kQuad) {
        std::uint64_t w[2];
        std::memcpy(w, in, 16);
        hi = std::endian::native == std::endian::little ? w[1] : w[0];
        lo = std::endian::native == std::endian::little ? w[0] : w[1];
    } else { // long double is double
        double d;
        std::memcpy(&d, in, sizeof d);
        std::uint64_t b = std::bit_cast<std::uint64_t>(d);
        std::uint64_t sign = b >> 63;
        std::uint64_t exp = (b >> 52) & 0x7ff;
        std::uint64_t frac = b & 0xfffffffffffffULL;
        std::uint64_t qexp = exp == 0 ? 0 : exp == 0x7ff ? 0x7fff : exp - 1023 + 16383;
        if (exp == 0 && frac != 0) { // a double denormal is a normal binary128
            int shift = std::countl_zero(frac) - 11;
            frac = (frac << shift) & 0xfffffffffffffULL;
            qexp = static_cast<std::uint64_t>(1 - 1023 + 16383 - shift);
        }
        hi = (sign << 63) | (qexp << 48) | (frac >> 4);
        lo = frac << 60;
    }
}

void quad_to_ld(std::uint64_t hi, std::uint64_t lo, std::byte* out)
{
    if constexpr (kX87) {
        auto se = static_cast<std::uint16_t>(hi >> 48);
        std::uint64_t exp = se & 0x7fff;
        std::uint64_t frac = ((hi & 0xffffffffffffULL) << 15) | (lo >> 49); // truncated to 63 bits
        std::uint64_t mant = frac | (exp != 0 ? 0x8000000000000000ULL : 0);
        std::memset(out, 0, 16);
        std::memcpy(out, &mant, 8);
        std::memcpy(out + 8, &se, 2);
    } else if constexpr (kQuad) {
        std::uint64_t w[2];
        w[std::endian::native == std::endian::little ? 1 : 0] = hi;
        w[std::endian::native == std::endian::little ? 0 : 1] = lo;
        std::memcpy(out, w, 16);
    } else {
        long double v = 0;
        std::uint64_t sign = hi >> 63;
        std::int64_t exp = static_cast<std::int64_t>((hi >> 48) & 0x7fff);
        std::uint64_t frac52 = ((hi & 0xffffffffffffULL) << 4) | (lo >> 60);
        std::uint64_t b;
        if (exp == 0x7fff) {
            b = (sign << 63) | (0x7ffULL << 52) | frac52;
        } else if (exp == 0 || exp - 16383 < -1074) {
            b = sign << 63;
        } else if (exp - 16383 > 1023) {
            b = (sign << 63) | (0x7ffULL << 52);
        } else if (exp - 16383 < -1022) { // a double denormal
            std::uint64_t m = (frac52 | (1ULL << 52)) >> (-1022 - (exp - 16383));
            b = (sign << 63) | m;
        } else {
            b = (sign << 63) | (static_cast<std::uint64_t>(exp - 16383 + 1023) << 52) | frac52;
        }
        double d = std::bit_cast<double>(b);
        v = d;
        std::memcpy(out, &v, sizeof v);
    }
}

struct Cursor {
    const std::byte* in;
    std::byte* out;
    bool to_ext;
    std::string* why;
};

bool convert_atom(const Atom& a, Cursor& c)
{
    const unsigned from = c.to_ext ? a.native : a.ext;
    const unsigned to = c.to_ext ? a.ext : a.native;
    switch (a.conv) {
    case Conv::swap: swap_copy(c.out, c.in, a.native); break;
    case Conv::narrow_signed:
        if (c.to_ext) {
            auto v = static_cast<std::int64_t>(load_native(c.in, a.native));
            if (v < std::numeric_limits<std::int32_t>::min() ||
                v > std::numeric_limits<std::int32_t>::max()) {
                *c.why = "value " + std::to_string(v) + " does not fit the 4 bytes of external32";
                return false;
            }
            store_be(c.out, static_cast<std::uint64_t>(v), a.ext);
        } else {
            auto v = static_cast<std::int64_t>(static_cast<std::int32_t>(load_be(c.in, a.ext)));
            store_native(c.out, static_cast<std::uint64_t>(v), a.native);
        }
        break;
    case Conv::narrow_unsigned:
        if (c.to_ext) {
            std::uint64_t v = load_native(c.in, a.native);
            if (a.ext < 8 && v >> (8 * a.ext) != 0) {
                *c.why = "value " + std::to_string(v) + " does not fit the " +
                         std::to_string(a.ext) + " bytes of external32";
                return false;
            }
            store_be(c.out, v, a.ext);
        } else {
            store_native(c.out, load_be(c.in, a.ext), a.native);
        }
        break;
    case Conv::long_double: {
        std::uint64_t hi;
        std::uint64_t lo;
        if (c.to_ext) {
            ld_to_quad(c.in, hi, lo);
            store_be(c.out, hi, 8);
            store_be(c.out + 8, lo, 8);
        } else {
            hi = load_be(c.in, 8);
            lo = load_be(c.in + 8, 8);
            quad_to_ld(hi, lo, c.out);
        }
        break;
    }
    }
    c.in += from;
    c.out += to;
    return true;
}

bool convert(const Datatype* t, std::uint64_t count, Cursor& c)
{
    if (count == 0 || t->size == 0) {
        return true;
    }
    if (t->predefined) {
        Atoms at = atoms_of(t->handle, t->size);
        if (at.n == 1 && at.a[0].conv == Conv::swap && at.a[0].native == 1) {
            std::memcpy(c.out, c.in, count); // bytes and chars
            c.in += count;
            c.out += count;
            return true;
        }
        for (std::uint64_t i = 0; i < count; ++i) {
            for (int k = 0; k < at.n; ++k) {
                if (!convert_atom(at.a[k], c)) {
                    return false;
                }
            }
        }
        return true;
    }
    if (t->basic != nullptr && t->basic->size != 0) {
        return convert(t->basic, count * (t->size / t->basic->size), c);
    }
    for (std::uint64_t i = 0; i < count; ++i) {
        for (std::uint64_t r = 0; r < t->reps; ++r) {
            for (const TypeBlock& b : t->blocks) {
                if (!convert(b.type, b.count, c)) {
                    return false;
                }
            }
        }
    }
    return true;
}

} // namespace

std::uint64_t external32_predefined_size(const Datatype& d)
{
    Atoms at = atoms_of(d.handle, d.size);
    std::uint64_t n = 0;
    for (int k = 0; k < at.n; ++k) {
        n += at.a[k].ext;
    }
    return n;
}

int external32_from_native(const Datatype* t, std::uint64_t count, const void* native, void* ext,
                           std::string& why)
{
    Cursor c{static_cast<const std::byte*>(native), static_cast<std::byte*>(ext), true, &why};
    return convert(t, count, c) ? MPI_SUCCESS : MPI_ERR_CONVERSION;
}

int external32_to_native(const Datatype* t, std::uint64_t count, const void* ext, void* native,
                         std::string& why)
{
    Cursor c{static_cast<const std::byte*>(ext), static_cast<std::byte*>(native), false, &why};
    return convert(t, count, c) ? MPI_SUCCESS : MPI_ERR_CONVERSION;
}

} // namespace ulmpi::mpi
