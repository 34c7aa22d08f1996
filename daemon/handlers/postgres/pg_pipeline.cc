// The reader of a pipelined connection (PgPool::Drain): results come in the
// order the segments were sent, each segment's commands ending with a null
// from PQgetResult and the segment with PGRES_PIPELINE_SYNC.
#include "daemon/handlers/postgres/pg_pool.h"
#include "daemon/logging.h"

namespace gearbox::postgres {

void PgPool::Drain(PgSlot* slot) {
  if (!PQconsumeInput(slot->conn)) return FailPipeline(slot);
  size_t ended = 0;
  Clock::time_point now{};  // read once, at the first sync
  // A segment may close the connection from a callback (CutOff): conn is
  // looked at afresh each turn.
  while (slot->conn && !slot->inflight.empty() && !PQisBusy(slot->conn)) {
    PGconn* conn = slot->conn;
    PgSegment* head = slot->inflight.front();
    PGresult* result = PQgetResult(conn);
    if (!result) {
      if (head) head->OnCommandEnd();
      // The next command is current now: rows of a query come one by one
      // (refused, harmlessly, for a command that is no query).
      PQsetSingleRowMode(conn);
      continue;
    }
    if (PQresultStatus(result) == PGRES_PIPELINE_SYNC) {
      PQclear(result);
      slot->inflight.pop_front();
      ++ended;
      if (now == Clock::time_point{}) now = Clock::now();
      HeadEnded(slot, now);
      if (head) head->OnSync();
      MarkStall(slot);
      PQsetSingleRowMode(conn);
      continue;
    }
    if (head) {
      head->OnResult(result);
    } else {
      PQclear(result);  // its exchange went away: dropped as it comes
    }
  }
  if (!slot->conn) return;
  if (!slot->orphans.empty()) {
    std::erase_if(slot->orphans, [](const auto& o) { return o->done(); });
  }
  if (PQstatus(slot->conn) != CONNECTION_OK) return FailPipeline(slot);
  // Each segment that ended makes room for one waiter (Release hands the
  // connection over, or makes it idle once nothing is on it).
  for (; ended > 0; --ended) {
    if (!slot->inflight.empty() && waiters_.empty()) break;
    Release(slot);
  }
}

void PgPool::HeadEnded(PgSlot* slot, Clock::time_point now) {
  if (slot->head_alone) pace_.Sample(now - slot->head_since);
  slot->head_alone = false;
  slot->head_since = slot->inflight.empty() ? Clock::time_point{} : now;
}

void PgPool::MarkStall(PgSlot* slot) {
  if (!slot->HeadAbandoned()) {
    slot->stalled_since = {};
    return;
  }
  if (slot->stalled()) return;
  slot->stalled_since = Clock::now();
  for (PgSegment* segment : slot->inflight) {
    if (segment) segment->OnStalled();
  }
}

void PgPool::FailPipeline(PgSlot* slot) {
  LogInfo("postgres_connection_lost", "route={} segments={} error={}",
          LogQuote(route_), slot->inflight.size(),
          LogQuote(ErrorMessage(slot->conn)));
  std::deque<PgSegment*> lost;
  lost.swap(slot->inflight);
  for (PgSegment* segment : lost) {
    if (segment) segment->OnLost();
  }
  slot->state = PgSlot::State::kInUse;
  Drop(slot);
}

}  // namespace gearbox::postgres
