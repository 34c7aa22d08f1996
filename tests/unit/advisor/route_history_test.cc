// RouteHistory: the ring of per-route running totals behind /status?window=
// and --advise --window, and ParseWindow's bounds.
#include "daemon/metrics/route_history.h"

#include <gtest/gtest.h>

#include <vector>

namespace gearbox {
namespace {

constexpr uint64_t kSec = 1000000;  // microseconds

std::vector<RouteTotals> Totals(uint64_t requests) {
  std::vector<RouteTotals> t(3);
  t[1].requests = requests;
  t[1].service_us = requests * 10;
  return t;
}

TEST(RouteHistoryTest, ANewRingHoldsTheZeroAtItsStart) {
  auto h = RouteHistory::Create(3, std::chrono::seconds(1), 100 * kSec);
  RouteHistory::Base b = h->At(50 * kSec);  // before the start: the oldest
  EXPECT_EQ(b.at_us, 100 * kSec);
  ASSERT_EQ(b.totals.size(), 3u);
  EXPECT_EQ(b.totals[1].requests, 0u);
}

TEST(RouteHistoryTest, AtGivesTheNewestSnapshotNotAfterTheTime) {
  auto h = RouteHistory::Create(3, std::chrono::seconds(1), 0);
  for (uint64_t s = 1; s <= 10; ++s) h->Record(s * kSec, Totals(s * 7).data());
  RouteHistory::Base b = h->At(4 * kSec + kSec / 2);
  EXPECT_EQ(b.at_us, 4 * kSec);
  EXPECT_EQ(b.totals[1].requests, 28u);
  EXPECT_EQ(b.totals[1].service_us, 280u);
  EXPECT_EQ(h->At(10 * kSec).at_us, 10 * kSec);
  EXPECT_EQ(h->At(99 * kSec).at_us, 10 * kSec);
  EXPECT_EQ(h->At(0).at_us, 0u);
}

TEST(RouteHistoryTest, SnapshotsAreAtLeastASecondApart) {
  auto h = RouteHistory::Create(3, std::chrono::milliseconds(100), 0);
  for (uint64_t ms = 100; ms <= 2500; ms += 100) {
    h->Record(ms * 1000, Totals(ms).data());
  }
  // Kept: 0 (the start), 1.0 s, 2.0 s.
  EXPECT_EQ(h->At(1900 * 1000).at_us, 1 * kSec);
  EXPECT_EQ(h->At(1900 * 1000).totals[1].requests, 1000u);
  EXPECT_EQ(h->At(2500 * 1000).at_us, 2 * kSec);
}

TEST(RouteHistoryTest, TheRingCoversFifteenMinutesAndForgetsOlder) {
  auto h = RouteHistory::Create(3, std::chrono::seconds(10), 0);
  // 15 min / 10 s = 90 snapshots, plus two.
  EXPECT_EQ(h->capacity(), 92u);
  for (uint64_t s = 10; s <= 3600; s += 10) {
    h->Record(s * kSec, Totals(s).data());
  }
  // 15 minutes before the last snapshot is still there...
  EXPECT_EQ(h->At((3600 - 900) * kSec).at_us, (3600 - 900) * kSec);
  // ... an hour before it is not: the oldest kept stands in.
  const RouteHistory::Base oldest = h->At(0);
  EXPECT_EQ(oldest.at_us, (3600 - 91 * 10) * kSec);
  EXPECT_EQ(oldest.totals[1].requests, 3600u - 910u);
  EXPECT_EQ(h->MappedBytes() % 8, 0u);
}

TEST(RouteHistoryTest, MemoryIsWhatTheHeaderSays) {
  // 1 s interval, 32 route ids: 902 entries of 8 + 32 x 48 bytes.
  auto h = RouteHistory::Create(32, std::chrono::seconds(1), 0);
  EXPECT_EQ(h->capacity(), 902u);
  EXPECT_LT(h->MappedBytes(), 1400u * 1024);
  EXPECT_GT(h->MappedBytes(), 1300u * 1024);
}

TEST(RouteHistoryTest, ManyRoutesGetCoarserSnapshotsNotMoreMemory) {
  // 1,000 routes and "(other)": 902 one-second entries of 48 KiB would be
  // 41 MiB; 11 s steps keep the ring under kHistoryBudget.
  auto h = RouteHistory::Create(1001, std::chrono::seconds(1), 0);
  EXPECT_EQ(h->step(), std::chrono::seconds(11));
  EXPECT_EQ(h->capacity(), 84u);  // ceil(900 / 11) + 2
  EXPECT_LE(h->MappedBytes(), kHistoryBudget);
  // At the default 10 s interval: a multiple of it.
  auto ten = RouteHistory::Create(1001, std::chrono::seconds(10), 0);
  EXPECT_EQ(ten->step(), std::chrono::seconds(20));
  EXPECT_EQ(ten->capacity(), 47u);
  // Few routes keep one-second steps.
  EXPECT_EQ(RouteHistory::Create(33, std::chrono::seconds(1), 0)->step(),
            std::chrono::seconds(1));
}

TEST(RouteHistoryTest, ACoarseRingStillCoversFifteenMinutes) {
  auto h = RouteHistory::Create(1001, std::chrono::seconds(1), 0);
  std::vector<RouteTotals> t(1001);
  for (uint64_t s = 1; s <= 3600; ++s) {
    t[1000].requests = s;
    h->Record(s * kSec, t.data());
  }
  // Snapshots every 11 s (0, 11, ..., 3597): one at or before 15 minutes
  // ago is still kept, less than a step older.
  const RouteHistory::Base b = h->At((3600 - 900) * kSec);
  EXPECT_LE(b.at_us, (3600 - 900) * kSec);
  EXPECT_GT(b.at_us + 11 * kSec, (3600 - 900) * kSec);
  EXPECT_EQ(b.totals[1000].requests, b.at_us / kSec);
}

TEST(RouteHistoryTest, EvenHugeConfigsKeepThreeSnapshots) {
  // 100,000 route ids: 4.6 MiB an entry, past the budget on its own. The
  // least ring: windows resolve to 15 minutes.
  auto h = RouteHistory::Create(100000, std::chrono::seconds(1), 0);
  EXPECT_EQ(h->capacity(), 3u);
  EXPECT_EQ(h->step(), kHistorySpan);
}

TEST(ParseWindowTest, FromOneSecondToFifteenMinutes) {
  std::string error;
  EXPECT_EQ(ParseWindow("60s", "window=", &error), std::chrono::seconds(60));
  EXPECT_EQ(ParseWindow("15m", "window=", &error), std::chrono::minutes(15));
  EXPECT_EQ(ParseWindow("1s", "window=", &error), std::chrono::seconds(1));
  for (const char* bad : {"16m", "999ms", "0s", "", "x", "-5s"}) {
    error.clear();
    EXPECT_FALSE(ParseWindow(bad, "window=", &error).has_value()) << bad;
    EXPECT_EQ(error, std::string("window=") + bad +
                         ": want a duration from 1s to 15m, e.g. 60s or 5m");
  }
}

}  // namespace
}  // namespace gearbox
