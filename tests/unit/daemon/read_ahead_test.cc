#include "daemon/handlers/postgres/read_ahead.h"

#include <gtest/gtest.h>

namespace gearbox::postgres {
namespace {

// Queries in a row that read ahead, out of `n`; each read finds `hit`.
int ReadsAhead(ReadAhead& r, int n, bool hit) {
  int reads = 0;
  for (int i = 0; i < n; ++i) {
    if (!r.Wanted()) continue;
    ++reads;
    r.Found(hit);
  }
  return reads;
}

TEST(ReadAheadTest, FastQueriesAlwaysReadAhead) {
  ReadAhead r;
  EXPECT_EQ(ReadsAhead(r, 100, true), 100);
}

TEST(ReadAheadTest, SlowQueriesReadAheadOnlyToProbe) {
  ReadAhead r;
  // The first kMisses misses are tried, then one query in kProbeEvery.
  EXPECT_EQ(ReadsAhead(r, ReadAhead::kMisses, false), ReadAhead::kMisses);
  EXPECT_EQ(ReadsAhead(r, 8 * ReadAhead::kProbeEvery, false), 8);
}

TEST(ReadAheadTest, AHitTrustsReadAheadAgain) {
  ReadAhead r;
  ReadsAhead(r, 100, false);
  int until_probe = 0;
  while (!r.Wanted()) ++until_probe;
  EXPECT_LT(until_probe, ReadAhead::kProbeEvery);
  r.Found(true);  // the queries got fast
  EXPECT_EQ(ReadsAhead(r, 10, true), 10);
}

TEST(ReadAheadTest, OccasionalMissesKeepReadingAhead) {
  ReadAhead r;
  int reads = 0;
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(r.Wanted()) << "query " << i;
    r.Found(i % 3 != 0);  // one miss in three, never kMisses in a row
    ++reads;
  }
  EXPECT_EQ(reads, 300);
}

}  // namespace
}  // namespace gearbox::postgres
