// OrphanSegment: a segment whose exchange went away still teaches the
// connection's statement cache what its PREPARE and DEALLOCATEs did.
#include <gtest/gtest.h>
#include <postgresql/libpq-fe.h>

#include "daemon/handlers/postgres/pg_segment.h"

namespace gearbox::postgres {
namespace {

using Kind = SegmentCommands::Kind;

PGresult* Result(ExecStatusType status) {
  return PQmakeEmptyPGresult(nullptr, status);
}

// One command's results as the reader hands them: a result, then the null
// that ends the command.
void Deliver(PgSegment& segment, ExecStatusType status) {
  segment.OnResult(Result(status));
  segment.OnCommandEnd();
}

SegmentCommands DeallocatePrepareExecute(const std::string& evicted) {
  SegmentCommands c;
  c.first_deallocation = 0;
  c.deallocating[0] = evicted;
  c.Add(Kind::kDeallocate);
  c.Add(Kind::kPrepare);
  c.Add(Kind::kExecute);
  return c;
}

TEST(OrphanSegmentTest, AFailedPrepareLeavesTheCache) {
  StatementCache cache;
  cache.Add("SELECT 1", "gearbox_1");
  OrphanSegment orphan(DeallocatePrepareExecute("gearbox_0"), "gearbox_1",
                       false, &cache);
  Deliver(orphan, PGRES_COMMAND_OK);   // DEALLOCATE gearbox_0
  Deliver(orphan, PGRES_FATAL_ERROR);  // PREPARE gearbox_1
  EXPECT_EQ(cache.Find("SELECT 1"), nullptr);
  Deliver(orphan, PGRES_PIPELINE_ABORTED);  // its EXECUTE
  EXPECT_FALSE(orphan.done());
  orphan.OnSync();
  EXPECT_TRUE(orphan.done());
  EXPECT_TRUE(cache.evicted().empty());
}

TEST(OrphanSegmentTest, AGoodPrepareStaysInTheCache) {
  StatementCache cache;
  cache.Add("SELECT 1", "gearbox_1");
  OrphanSegment orphan(DeallocatePrepareExecute("gearbox_0"), "gearbox_1",
                       false, &cache);
  Deliver(orphan, PGRES_COMMAND_OK);
  Deliver(orphan, PGRES_COMMAND_OK);
  Deliver(orphan, PGRES_TUPLES_OK);
  ASSERT_NE(cache.Find("SELECT 1"), nullptr);
  EXPECT_EQ(*cache.Find("SELECT 1"), "gearbox_1");
}

TEST(OrphanSegmentTest, AnAbortedDeallocateIsQueuedAgain) {
  StatementCache cache;
  SegmentCommands c;
  c.Add(Kind::kExecute);  // an earlier command that fails
  c.first_deallocation = 1;
  c.deallocating[0] = "gearbox_7";
  c.Add(Kind::kDeallocate);
  OrphanSegment orphan(std::move(c), "", false, &cache);
  Deliver(orphan, PGRES_FATAL_ERROR);
  Deliver(orphan, PGRES_PIPELINE_ABORTED);
  ASSERT_EQ(cache.evicted().size(), 1u);
  EXPECT_EQ(cache.evicted()[0], "gearbox_7");
}

TEST(OrphanSegmentTest, APrepareThatFailedBeforeTheHandOverLeavesTheCache) {
  StatementCache cache;
  cache.Add("SELECT 1", "gearbox_1");
  SegmentCommands c;
  c.Add(Kind::kPrepare);
  c.Add(Kind::kExecute);
  // Its result came to the exchange; the command's end comes to the orphan.
  OrphanSegment orphan(std::move(c), "gearbox_1", true, &cache);
  orphan.OnCommandEnd();
  EXPECT_EQ(cache.Find("SELECT 1"), nullptr);
}

TEST(OrphanSegmentTest, ALostConnectionEndsIt) {
  StatementCache cache;
  OrphanSegment orphan(DeallocatePrepareExecute("gearbox_0"), "gearbox_1",
                       false, &cache);
  orphan.OnLost();
  EXPECT_TRUE(orphan.done());
}

TEST(SegmentCommandsTest, TouchesStatementsLooksAtWhatIsLeft) {
  SegmentCommands c;
  c.Add(Kind::kCheckBudget);
  c.Add(Kind::kPrepare);
  c.Add(Kind::kExecute);
  EXPECT_TRUE(c.TouchesStatements());
  c.Advance();
  EXPECT_TRUE(c.TouchesStatements());
  c.Advance();
  EXPECT_FALSE(c.TouchesStatements());
}

}  // namespace
}  // namespace gearbox::postgres
