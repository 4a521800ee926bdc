// ULM fragment headers as they travel on every path (docs/wire_protocol.md).
//
// Every fragment starts with a BaseHeader: version, type, flags, the pair's
// epoch, sender and receiver ranks, payload length, the 64-bit
// per-(sender, receiver) fragment sequence number used by reliability, and
// two CRC32C checksums: one over
// the header (so a fragment whose header is damaged is dropped without
// trusting any of its fields) and one over the payload (so a fragment with
// an intact header but damaged data is answered with a `corrupt` ack and
// resent at once). The type selects the rest:
//
//   eager  a whole small message whose sender waits for nothing (not Ssend):
//          the match envelope without the rendezvous fields (48 bytes), so
//          that with a few payload bytes it fills one 64-byte cache line of
//          a shared-memory FIFO slot. Received as a match with flag eager.
//   match  first fragment of a message: envelope (context, tag), the 64-bit
//          per-pair message sequence number that keeps MPI's non-overtaking
//          order, the message length and the sender's descriptor id.
//          flags: eager (the whole message is here) or rendezvous; sync
//          (Ssend: the receiver answers when matched); get (payload carries a
//          remote key: the receiver reads the rest itself, then sends fin).
//   data   a later fragment of a rendezvous message, addressed to the
//          receiver's descriptor, at a byte offset.
//   piece  part of a data fragment (`whole`, its payload `whole_len` bytes)
//          split when its rail went down and no other rail takes fragments
//          that large (udp + ofi: 1.4 KiB against 64 KiB). Each piece has
//          its own sequence number; the receiver delivers the whole or its
//          pieces, never both: the first piece marks `whole` delivered (a
//          later copy of it is a duplicate), and pieces of a whole that
//          arrived before them are dropped (LinkSet::accept).
//   cts    clear to send: the receiver matched a rendezvous message and asks
//          for the bytes from `offset` on (also the Ssend acknowledgement).
//   fin    the receiver finished a single-copy read; the sender completes.
//   ack    reliability: acknowledges fragment `ack_seq` with a status and
//          carries the receiver's LIRS/LIDS (see reliability.h).
//   probe, probe_ack
//          the per-peer link asks whether a path it declared down carries
//          traffic again; the peer answers over the path the probe came by
//          (not sequenced, like ACKs).
//
// The epoch names the incarnations of the pair: (sender's incarnation +
// receiver's incarnation) mod 256. A process that replaces a dead one (a
// respawn, a re-created replica) is a new incarnation, so both directions
// change epoch: fragments of the dead process still in flight, and
// fragments sent to it before the survivors learned of its death, are
// refused, and the new pair starts a fresh sequence space.
//
// Any sequenced fragment may carry an acknowledgement piggy-backed: with
// flag::ack_ext an AckExt (the sender's LIDS for the traffic it received)
// follows the type's header and counts as part of the header (hcrc covers
// it; the payload starts after it). header_len() gives the whole length.
//
// Under replication a match or eager fragment may carry a replication
// acknowledgement (flag::rep_ext): a RepExt right after the type's header,
// before the AckExt when both are there, part of the header as well. A
// fragment without checksums (flag::crc clear) carries it in place of the
// two checksum words instead, which carry nothing then: over shm a 1-byte
// replicated eager message stays one 64-byte line (rep_ext_len, rep_ext_at).
//
// All fields are fixed width and little-endian (the only byte order we run
// on); padding is spelled out; sizes are asserted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ulmpi::ulm {

inline constexpr std::uint8_t kWireVersion = 4; // 3: flag::rep_ext; 4: RepExt in the checksum words

// cancel: the sender asks to withdraw an unmatched message (MPI_Cancel of
// a send whose match fragment has left); cancel_reply answers it.
enum class FragType : std::uint8_t {
    match = 1, data = 2, cts = 3, fin = 4, ack = 5, cancel = 6, cancel_reply = 7, eager = 8,
    probe = 9, probe_ack = 10, piece = 11
};

namespace flag {
inline constexpr std::uint8_t eager = 1u << 0;  // match: whole message in this fragment
inline constexpr std::uint8_t sync = 1u << 1;   // match: sender waits for the match (Ssend)
inline constexpr std::uint8_t get = 1u << 2;    // match: payload is a remote key
inline constexpr std::uint8_t crc = 1u << 3;    // base: crc field is valid
inline constexpr std::uint8_t reliable = 1u << 4; // base: sender expects an ack
inline constexpr std::uint8_t ack_ext = 1u << 5;  // base: an AckExt follows the header
inline constexpr std::uint8_t ack_now = 1u << 6;  // base: the sender waits for this ack: do not delay it
inline constexpr std::uint8_t rep_ext = 1u << 7;  // match, eager: a RepExt follows the header
} // namespace flag

struct BaseHeader {
    std::uint8_t version;
    FragType type;
    std::uint8_t flags;
    std::uint8_t epoch;         // (sender's + receiver's incarnation) mod 256
    std::uint32_t src;          // sender's world rank
    std::uint32_t dst;          // receiver's world rank
    std::uint32_t payload_len;  // bytes after the header
    std::uint64_t frag_seq;     // per (sender, receiver) pair, from 1; 0: not sequenced
    std::uint32_t hcrc;         // CRC32C of the header with hcrc = 0 (flag::crc)
    std::uint32_t pcrc;         // CRC32C of the payload (flag::crc)
};
static_assert(sizeof(BaseHeader) == 32);

struct MatchHeader {
    BaseHeader base;
    std::uint32_t context;
    std::int32_t tag;
    std::uint64_t msg_seq;      // per (sender, receiver) pair, from 1
    std::uint64_t msg_len;      // bytes of the whole message
    std::uint64_t send_id;      // sender's descriptor
};
static_assert(sizeof(MatchHeader) == 64);

struct EagerHeader {
    BaseHeader base;
    std::uint32_t context;
    std::int32_t tag;
    std::uint64_t msg_seq;      // per (sender, receiver) pair, from 1 (shared with match)
};
static_assert(sizeof(EagerHeader) == 48);

struct DataHeader {
    BaseHeader base;
    std::uint64_t recv_id;      // receiver's descriptor
    std::uint64_t offset;       // byte offset of this payload in the message
};
static_assert(sizeof(DataHeader) == 48);

// The first fields are DataHeader's: a piece is delivered as data.
struct PieceHeader {
    BaseHeader base;
    std::uint64_t recv_id;      // receiver's descriptor
    std::uint64_t offset;       // byte offset of this payload in the message
    std::uint64_t whole;        // sequence number of the fragment split
    std::uint32_t whole_len;    // its payload bytes (all its pieces together)
    std::uint32_t pad;
};
static_assert(sizeof(PieceHeader) == 64);

struct CtsHeader {
    BaseHeader base;
    std::uint64_t send_id;
    std::uint64_t recv_id;
    std::uint64_t offset;       // send from this byte on
    std::uint64_t length;       // bytes the receiver will accept (after truncation)
};
static_assert(sizeof(CtsHeader) == 64);

struct FinHeader {
    BaseHeader base;
    std::uint64_t send_id;
};
static_assert(sizeof(FinHeader) == 40);

enum class CancelResult : std::uint32_t {
    cancelled = 1,   // the message was still unexpected: removed
    matched = 2,     // a receive took it: the send completes normally
    not_arrived = 3, // not (yet) matchable here: ask again
};

struct CancelHeader {
    BaseHeader base;
    std::uint64_t send_id;
    std::uint64_t msg_seq;      // the message's sequence number from sender to receiver
    std::uint32_t context;
    CancelResult result;        // cancel_reply only
};
static_assert(sizeof(CancelHeader) == 56);

enum class AckStatus : std::uint8_t { good = 1, corrupt = 2 };

// probe / probe_ack: `nonce` is echoed back; `sent` is the prober's clock
// (a round-trip sample of the path).
struct ProbeHeader {
    BaseHeader base;
    std::uint64_t nonce;
    std::int64_t sent;
};
static_assert(sizeof(ProbeHeader) == 48);

struct AckHeader {
    BaseHeader base;
    std::uint64_t ack_seq;      // fragment acknowledged (0: only LIRS/LIDS news)
    std::uint64_t lirs;         // largest in-order received sequence
    std::uint64_t lids;         // largest in-order delivered sequence
    std::uint64_t sack;         // bit i: sequence lids + sack_off + i was delivered
    std::uint32_t sack_off;     // where the map starts above lids (>= 2): at the
                                // lowest fragment that arrived out of order since
                                // the last ACK (fragments striped over rails of
                                // unequal delay arrive far beyond LIDS)
    AckStatus status;           // of ack_seq
    std::uint8_t pad[3];
};
static_assert(sizeof(AckHeader) == 72);

// A piggy-backed acknowledgement: everything up to `lids` from the
// fragment's receiver to its sender was delivered (an ack of `lids` with an
// empty SACK map).
struct AckExt {
    std::uint64_t lids;
};
static_assert(sizeof(AckExt) == 8);

// A piggy-backed replication acknowledgement (docs/replication.md): the
// fragment's sender received message `m` of the receiver's rank to its own
// rank (numbered as ft/rep numbers them). Only on match and eager fragments.
// With flag::crc it follows the type's header; without, it takes the place
// of hcrc and pcrc (rep_ext_at).
struct RepExt {
    std::uint64_t m;
};
static_assert(sizeof(RepExt) == 8);
static_assert(offsetof(BaseHeader, hcrc) % 8 == 0 && offsetof(BaseHeader, pcrc) == offsetof(BaseHeader, hcrc) + 4,
              "a RepExt fits the two checksum words");

// Bytes a RepExt adds to the header of a fragment with `flags`.
constexpr std::uint32_t rep_ext_len(std::uint8_t flags)
{
    return (flags & flag::rep_ext) && (flags & flag::crc) ? static_cast<std::uint32_t>(sizeof(RepExt)) : 0;
}

// Where the RepExt of a match or eager fragment of type `t` with `flags` is.
constexpr std::uint32_t rep_ext_at(FragType t, std::uint8_t flags)
{
    if (!(flags & flag::crc)) {
        return static_cast<std::uint32_t>(offsetof(BaseHeader, hcrc));
    }
    return static_cast<std::uint32_t>(t == FragType::match ? sizeof(MatchHeader) : sizeof(EagerHeader));
}

static_assert(std::has_unique_object_representations_v<BaseHeader>);
static_assert(std::has_unique_object_representations_v<MatchHeader>);
static_assert(std::has_unique_object_representations_v<EagerHeader>);
static_assert(std::has_unique_object_representations_v<DataHeader>);
static_assert(std::has_unique_object_representations_v<PieceHeader>);
static_assert(std::has_unique_object_representations_v<CtsHeader>);
static_assert(std::has_unique_object_representations_v<FinHeader>);
static_assert(std::has_unique_object_representations_v<AckHeader>);
static_assert(std::has_unique_object_representations_v<ProbeHeader>);

constexpr std::uint32_t header_size(FragType t)
{
    switch (t) {
    case FragType::match: return sizeof(MatchHeader);
    case FragType::eager: return sizeof(EagerHeader);
    case FragType::data: return sizeof(DataHeader);
    case FragType::piece: return sizeof(PieceHeader);
    case FragType::cts: return sizeof(CtsHeader);
    case FragType::fin: return sizeof(FinHeader);
    case FragType::ack: return sizeof(AckHeader);
    case FragType::cancel:
    case FragType::cancel_reply: return sizeof(CancelHeader);
    case FragType::probe:
    case FragType::probe_ack: return sizeof(ProbeHeader);
    }
    return 0;
}

// The whole header of a fragment: the type's header and the AckExt when
// flagged. 0 for an unknown type, and for an unsequenced fragment (ack,
// probe) that claims an AckExt (they never carry one: such a header is
// damaged).
constexpr bool sequenced(FragType t)
{
    return t != FragType::ack && t != FragType::probe && t != FragType::probe_ack;
}

// Fragments whose payload is message data at an offset (received straight
// into the user's buffer).
constexpr bool carries_data(FragType t)
{
    return t == FragType::data || t == FragType::piece;
}

constexpr std::uint32_t header_len(FragType t, std::uint8_t flags)
{
    std::uint32_t h = header_size(t);
    if (h != 0 && (flags & flag::rep_ext)) {
        if (t != FragType::match && t != FragType::eager) {
            return 0; // only messages carry one: a damaged header
        }
        h += rep_ext_len(flags);
    }
    if (h == 0 || !(flags & flag::ack_ext)) {
        return h;
    }
    return !sequenced(t) ? 0 : h + static_cast<std::uint32_t>(sizeof(AckExt));
}

// A match header with both extensions.
inline constexpr std::uint32_t kMaxHeader =
    sizeof(MatchHeader) + sizeof(RepExt) + sizeof(AckExt);

// A header of type H read from received bytes (which need not be aligned).
template <class H> H read_header(const std::byte* p)
{
    static_assert(std::is_trivially_copyable_v<H>);
    H h;
    std::memcpy(&h, p, sizeof h);
    return h;
}
// Every header is whole 8-byte words (ULM copies them word by word).
static_assert(sizeof(MatchHeader) % 8 == 0 && sizeof(EagerHeader) % 8 == 0 && sizeof(DataHeader) % 8 == 0 && sizeof(CtsHeader) % 8 == 0 &&
              sizeof(FinHeader) % 8 == 0 && sizeof(CancelHeader) % 8 == 0 && sizeof(AckHeader) % 8 == 0 &&
              sizeof(ProbeHeader) % 8 == 0 && sizeof(AckExt) % 8 == 0 && sizeof(RepExt) % 8 == 0);
static_assert(kMaxHeader >= sizeof(AckHeader) && kMaxHeader >= sizeof(MatchHeader) + sizeof(AckExt) &&
              kMaxHeader >= sizeof(CtsHeader) + sizeof(AckExt) &&
              kMaxHeader >= sizeof(CancelHeader) + sizeof(AckExt));

} // namespace ulmpi::ulm
