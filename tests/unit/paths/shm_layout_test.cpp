// SegmentLayout (paths/shm/shm_layout.h): every FIFO and fragment buffer of
// every rank lies inside the segment, nothing overlaps, and each piece is
// aligned for what it holds.
#include "paths/shm/shm_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ulmpi::path::shm {
namespace {

struct Piece {
    std::size_t begin;
    std::size_t end;
    std::string what;
};

SegmentLayout make(std::uint32_t local, std::uint32_t slots, std::uint32_t nsmall,
                   std::uint32_t small_bytes, std::uint32_t nlarge, std::uint32_t large_bytes)
{
    SegmentLayout l;
    l.local_size = local;
    l.fifo_slots = slots;
    l.small_count = nsmall;
    l.small_bytes = small_bytes;
    l.large_count = nlarge;
    l.large_bytes = large_bytes;
    return l;
}

void check_layout(const SegmentLayout& l)
{
    std::vector<Piece> pieces;
    pieces.push_back({0, l.header_size(), "header"});
    EXPECT_GE(l.header_size(), sizeof(SegHeader));
    for (std::uint32_t s = 0; s < l.local_size; ++s) {
        const std::size_t region = l.region_offset(s);
        EXPECT_EQ(region % SegmentLayout::kPage, 0u) << "region " << s;
        for (std::uint32_t r = 0; r < l.local_size; ++r) {
            std::size_t off = l.fifo_offset(s, r);
            EXPECT_EQ(off % kSlotBytes, 0u) << "fifo " << s << "->" << r;
            EXPECT_GE(off, region);
            EXPECT_LE(off + l.fifo_size(), region + l.region_size());
            pieces.push_back(
                {off, off + l.fifo_size(), "fifo " + std::to_string(s) + "->" + std::to_string(r)});
        }
        const std::size_t db = l.doorbell_offset(s);
        EXPECT_EQ(db % kSlotBytes, 0u) << "doorbell " << s;
        EXPECT_GE(db, region);
        EXPECT_LE(db + sizeof(DoorbellHead) + l.doorbell_words() * 8, region + l.region_size());
        EXPECT_GE(l.doorbell_words() * 64, l.local_size) << "a bit for every local rank";
        pieces.push_back({db, db + sizeof(DoorbellHead) + l.doorbell_words() * 8,
                          "doorbell " + std::to_string(s)});
        for (std::uint32_t i = 0; i < l.small_count; ++i) {
            std::size_t off = l.frag_offset(s, 0, i);
            EXPECT_EQ(off % 64, 0u);
            EXPECT_LE(off + l.small_bytes, region + l.region_size());
            pieces.push_back(
                {off, off + l.small_bytes, "small " + std::to_string(s) + "/" + std::to_string(i)});
        }
        for (std::uint32_t i = 0; i < l.large_count; ++i) {
            std::size_t off = l.frag_offset(s, 1, i);
            EXPECT_EQ(off % 64, 0u);
            EXPECT_LE(off + l.large_bytes, region + l.region_size());
            pieces.push_back(
                {off, off + l.large_bytes, "large " + std::to_string(s) + "/" + std::to_string(i)});
        }
    }
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        EXPECT_LT(pieces[i].begin, pieces[i].end) << pieces[i].what;
        EXPECT_LE(pieces[i].end, l.total_size()) << pieces[i].what << " outside the segment";
        if (i > 0) {
            EXPECT_LE(pieces[i - 1].end, pieces[i].begin)
                << pieces[i - 1].what << " overlaps " << pieces[i].what;
        }
    }
}

TEST(SegmentLayout, pieces_do_not_overlap_and_are_aligned)
{
    for (std::uint32_t local : {1u, 2u, 3u, 8u, 64u, 65u}) {
        for (std::uint32_t slots : {2u, 64u, 1024u}) {
            SCOPED_TRACE(testing::Message() << "local " << local << " slots " << slots);
            check_layout(make(local, slots, 128, 4224, 32, 65664));
            check_layout(make(local, slots, 4, 192, 2, 256));
            check_layout(make(local, slots, 7, 64, 3, 4160));
        }
    }
}

TEST(SegmentLayout, region_size_is_whole_pages)
{
    SegmentLayout l = make(3, 64, 5, 192, 3, 4160);
    EXPECT_EQ(l.fifos_size() % SegmentLayout::kPage, 0u);
    EXPECT_EQ(l.doorbell_size() % SegmentLayout::kPage, 0u);
    EXPECT_EQ(l.smalls_size() % SegmentLayout::kPage, 0u);
    EXPECT_EQ(l.larges_size() % SegmentLayout::kPage, 0u);
    EXPECT_EQ(l.total_size(), l.header_size() + 3 * l.region_size());
    EXPECT_EQ(l.fifo_size(), fifo_bytes(64));
    EXPECT_EQ(fifo_bytes(64), sizeof(FifoControl) + 64 * sizeof(Slot));
}

} // namespace
} // namespace ulmpi::path::shm
