// The per-connection prepared-statement cache: keyed by SQL text, fresh
// names, least recently used first out.
#include "daemon/handlers/postgres/statement_cache.h"

#include <gtest/gtest.h>

namespace gearbox::postgres {
namespace {

TEST(StatementCacheTest, FindsByTextAndEvictsTheLeastRecentlyUsed) {
  StatementCache cache(2);
  EXPECT_EQ(cache.Find("SELECT 1"), nullptr);
  EXPECT_EQ(cache.Victim(), "");
  const std::string a = cache.NextName(), b = cache.NextName();
  EXPECT_NE(a, b);
  cache.Add("SELECT 1", a);
  cache.Add("SELECT 2", b);
  ASSERT_NE(cache.Find("SELECT 1"), nullptr);  // now the most recent
  EXPECT_EQ(*cache.Find("SELECT 1"), a);
  EXPECT_EQ(cache.Victim(), b) << "full: SELECT 2 was used least recently";
  cache.Forget(b);
  EXPECT_EQ(cache.Find("SELECT 2"), nullptr);
  EXPECT_EQ(cache.Victim(), "");
  cache.Add("SELECT 3", cache.NextName());
  EXPECT_EQ(cache.size(), 2u);
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.Find("SELECT 1"), nullptr);
}

TEST(StatementCacheTest, EvictKeepsTheNameToDeallocate) {
  StatementCache cache(2);
  cache.Evict();
  EXPECT_TRUE(cache.evicted().empty()) << "not full: nothing leaves";
  const std::string a = cache.NextName(), b = cache.NextName();
  cache.Add("SELECT 1", a);
  cache.Add("SELECT 2", b);
  cache.Find("SELECT 1");
  cache.Evict();
  ASSERT_EQ(cache.evicted().size(), 1u);
  EXPECT_EQ(cache.evicted()[0], b) << "SELECT 2 was used least recently";
  EXPECT_EQ(cache.Find("SELECT 2"), nullptr);
  EXPECT_EQ(cache.size(), 1u);
  cache.Clear();
  EXPECT_TRUE(cache.evicted().empty()) << "a new connection has nothing";
}

}  // namespace
}  // namespace gearbox::postgres
