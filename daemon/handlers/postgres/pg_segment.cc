// PgExchange's pipelined path: on a connection in libpq's pipeline mode
// several exchanges' segments are on the wire at once, each its commands and
// a sync point (PQpipelineSync), so a failing query aborts only the rest of
// its own segment. The connection's reader (PgPool::Drain) hands each result
// to its segment; the exchange waits on a wake of its own meanwhile.
#include <algorithm>
#include <memory>

#include "daemon/handlers/postgres/pg_cancel.h"
#include "daemon/handlers/postgres/pg_exchange.h"
#include "daemon/logging.h"

namespace gearbox::postgres {

Step PgExchange::SendSegment(Response& response) {
  PGconn* conn = slot_->conn;
  bool sent = true;
  commands_.Clear();
  if (route_->check_budget) {
    route_->check_budget = false;
    sent = PQsendQueryParams(conn, "SHOW max_connections", 0, nullptr, nullptr,
                             nullptr, nullptr, 0);
    commands_.Add(SegmentCommands::Kind::kCheckBudget);
  }
  sent = sent && SendStatement(conn) && PQpipelineSync(conn);
  if (!sent) {
    PgSlot* slot = slot_;
    slot_ = nullptr;
    pool_->FailPipeline(slot);  // the segments already on it fail too
    return Fail(response, kConnectionLost);
  }
  const bool first = slot_->inflight.empty();
  slot_->inflight.push_back(this);
  on_wire_ = true;
  phase_ = Phase::kSegment;
  // Rows come one by one when this query is the one libpq reads first;
  // otherwise the reader sets it when the query's turn comes.
  if (first) {
    PQsetSingleRowMode(conn);
    slot_->head_since = Clock::now();
    slot_->head_alone = true;
  }
  rows_.Begin(&body_, route_->json);
  wake_ = pool_->home()->NewWake();
  const int left = PQflush(conn);
  flushing_ = left > 0;
  if (left < 0) {
    pool_->FailPipeline(slot_);  // OnLost: answered below
  }
  return AwaitSegment(Wake{}, response);
}

// A statement new to the connection is prepared in the same segment as its
// first execute, and is in the cache from now on: later segments on this
// connection execute it by name, as they run after this one. A full cache's
// least recently used statement is DEALLOCATEd first, so the server never
// holds more than the cache: no segment still on the wire runs it (a
// connection carries at most 64 segments, the cache keeps 64 statements).
bool PgExchange::SendStatement(PGconn* conn) {
  const std::string* cached = slot_->statements.Find(route_->query);
  if (!cached) slot_->statements.Evict();
  bool sent = SendDeallocations(conn);
  if (cached) {
    statement_ = *cached;
  } else {
    statement_ = slot_->statements.NextName();
    slot_->statements.Add(route_->query, statement_);
    sent =
        sent && PQsendPrepare(conn, statement_.c_str(), route_->query.c_str(),
                              route_->nparams, nullptr);
    commands_.Add(SegmentCommands::Kind::kPrepare);
  }
  const ParamPointers values(params_);
  sent = sent && PQsendQueryPrepared(conn, statement_.c_str(), params_.count(),
                                     values.data(), nullptr, nullptr, 0);
  commands_.Add(SegmentCommands::Kind::kExecute);
  return sent;
}

// Pipeline mode refuses the simple query protocol: PQsendQueryParams. A
// DEALLOCATE aborted by an earlier failure in its segment is tried again by
// the next segment (OnDeallocated).
bool PgExchange::SendDeallocations(PGconn* conn) {
  std::vector<std::string>& evicted = slot_->statements.evicted();
  bool sent = true;
  commands_.first_deallocation = commands_.count;
  for (int i = 0;
       sent && i < SegmentCommands::kMaxDeallocations && !evicted.empty();
       ++i) {
    commands_.deallocating[i] = std::move(evicted.back());
    evicted.pop_back();
    const std::string sql = "DEALLOCATE " + commands_.deallocating[i];
    sent = PQsendQueryParams(conn, sql.c_str(), 0, nullptr, nullptr, nullptr,
                             nullptr, 0);
    commands_.Add(SegmentCommands::Kind::kDeallocate);
  }
  return sent;
}

void PgExchange::OnDeallocated(PGresult* result) {
  if (slot_) commands_.Deallocated(result, slot_->statements);
  PQclear(result);
}

Step PgExchange::AwaitSegment(const Wake& wake, Response& response) {
  if (synced_ || lost_) return SegmentDone(response);
  if (flushing_ &&
      (wake.why == Wake::Why::kStart || wake.ready(0, kFdWritable))) {
    const int left = PQflush(slot_->conn);
    if (left < 0) {
      pool_->FailPipeline(slot_);
      return SegmentDone(response);
    }
    flushing_ = left > 0;
  }
  if (flushing_) {
    // Rare (a segment larger than the socket's buffer): a writable wait of
    // its own; what the server answers meanwhile is the reader's.
    return Step::WaitFds({{PQsocket(slot_->conn), kFdWritable}},
                         kUntilRequestDeadline);
  }
  if (wake_ == -1) return Fail(response, kNoResources);
  // Neither synced nor lost: a signal that came was a stall notice.
  pool_->home()->Rearm(wake_);
  if (slot_->stalled()) return AwaitStalled(response);
  return Step::WaitFds({{wake_, kFdReadable}}, kUntilRequestDeadline);
}

Step PgExchange::AwaitStalled(Response& response) {
  const auto left = slot_->stalled_since + kStallBound - Clock::now();
  if (left > Clock::duration::zero()) {
    return Step::WaitFds({{wake_, kFdReadable}},
                         std::chrono::ceil<std::chrono::microseconds>(left));
  }
  PgSlot* slot = slot_;
  const bool queued = CancelInBackground(slot->conn, pool_->route());
  LogWarn("postgres_pipeline_reset",
          "route={} stalled_ms={} segments={} backend_pid={} queued={}",
          LogQuote(pool_->route()),
          std::chrono::duration_cast<std::chrono::milliseconds>(
              Clock::now() - slot->stalled_since)
              .count(),
          slot->inflight.size(), PQbackendPID(slot->conn), queued);
  pool_->FailPipeline(slot);  // every segment's OnLost, this one's too
  return SegmentDone(response);
}

void PgExchange::OnStalled() {
  if (wake_ != -1) pool_->home()->Signal(wake_);  // re-waits, bounded
}

void PgExchange::OnResult(PGresult* result) {
  const SegmentCommands::Kind command = commands_.Current();
  if (command == SegmentCommands::Kind::kDeallocate) {
    return OnDeallocated(result);
  }
  const ExecStatusType status = PQresultStatus(result);
  if (command == SegmentCommands::Kind::kExecute && !result_ &&
      (status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK)) {
    // Past a limit the rest is dropped as it comes: the connection carries
    // other segments, so it is read to this one's end, not cut off.
    if (!too_large_) {
      rows_.Add(result);
      too_large_ = rows_.rows() > route_->max_rows ||
                   static_cast<int64_t>(body_.size()) > route_->max_bytes;
      if (too_large_) {
        LogWarn("postgres_result_too_large",
                "route={} rows_read={} bytes={} max_rows={} max_bytes={}",
                LogQuote(pool_->route()), rows_.rows(), body_.size(),
                route_->max_rows, route_->max_bytes);
        body_.clear();
        body_.shrink_to_fit();
        PQclear(result);
        // Alone on the connection, the query is surely the backend's
        // current one: cancelled, the connection closed, answered now.
        if (slot_->inflight.size() == 1) {
          synced_ = true;
          Abandon();
          pool_->home()->Signal(wake_);
        }
        return;
      }
    }
    PQclear(result);
    return;
  }
  if (!result_) {
    result_ = result;
  } else {
    PQclear(result);
  }
}

void PgExchange::OnCommandEnd() {
  using Kind = SegmentCommands::Kind;
  const Kind command = commands_.Current();
  commands_.Advance();
  // result_ is the execute's answer (an error or a command's); the
  // deallocations answer nothing (OnDeallocated).
  if (command == Kind::kExecute || command == Kind::kDeallocate) return;
  PGresult* result = result_;
  result_ = nullptr;
  if (command == Kind::kCheckBudget) {
    if (result) LogBudget(result);
    PQclear(result);
  } else if (result && PQresultStatus(result) != PGRES_COMMAND_OK) {
    // The prepare failed: segments behind this one that found the statement
    // in the cache fail their execute too (the same SQL would not prepare).
    slot_->statements.Forget(statement_);
    LogPrepareFailure(result);
    prepare_error_ = result;
  } else {
    PQclear(result);
  }
}

void PgExchange::OnSync() {
  synced_ = true;
  on_wire_ = false;
  slot_ = nullptr;  // the reader decides what the connection does next
  pool_->home()->Signal(wake_);
}

void PgExchange::OnLost() {
  lost_ = true;
  on_wire_ = false;
  slot_ = nullptr;
  if (wake_ != -1) pool_->home()->Signal(wake_);
}

Step PgExchange::SegmentDone(Response& response) {
  phase_ = Phase::kExecute;  // for the log lines: what ran
  if (lost_) {
    LogWarn("postgres_connection_lost", "route={} phase=execute dsn={}",
            LogQuote(pool_->route()), LogQuote(pool_->shown_dsn()));
    return Fail(response, kConnectionLost);
  }
  if (prepare_error_) {
    Answer(response, kPrepareFailed,
           PQresultErrorField(prepare_error_, PG_DIAG_SQLSTATE)
               ? PQresultErrorField(prepare_error_, PG_DIAG_SQLSTATE)
               : "");
    return Step::Done();
  }
  if (too_large_) return Fail(response, kResultTooLarge);
  const ExecStatusType status =
      result_ ? PQresultStatus(result_) : PGRES_TUPLES_OK;
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return QueryFailed(result_, response);
  }
  rows_.End();
  body_ += '\n';
  response.status = 200;
  response.content_type = "application/json";
  response.body.swap(body_);
  return Step::Done();
}

void PgExchange::Abandon() {
  if (!on_wire_) return;
  on_wire_ = false;
  PgSlot* slot = slot_;
  slot_ = nullptr;
  const bool others_ride = std::any_of(
      slot->inflight.begin(), slot->inflight.end(), [&](PgSegment* segment) {
        return segment && segment != static_cast<PgSegment*>(this) &&
               !slot->Orphaned(segment);
      });
  if (others_ride) {
    // Its results are dropped as they come; the orphan, if any, still reads
    // what they say about the connection's statements.
    PgSegment* heir = nullptr;
    if (commands_.TouchesStatements()) {
      const bool prepare_failed =
          commands_.Current() == SegmentCommands::Kind::kPrepare && result_ &&
          PQresultStatus(result_) != PGRES_COMMAND_OK;
      slot->orphans.push_back(std::make_unique<OrphanSegment>(
          std::move(commands_), statement_, prepare_failed, &slot->statements));
      heir = slot->orphans.back().get();
    }
    std::replace(slot->inflight.begin(), slot->inflight.end(),
                 static_cast<PgSegment*>(this), heir);
    pool_->MarkStall(slot);
    return;
  }
  // Nobody else waits on the connection: cancel the query and close it, as
  // an exclusive exchange does.
  const bool queued = CancelInBackground(slot->conn, pool_->route());
  LogInfo("postgres_cancelled",
          "route={} phase=execute backend_pid={} queued={}",
          LogQuote(pool_->route()), PQbackendPID(slot->conn), queued);
  slot->inflight.clear();
  slot->state = PgSlot::State::kInUse;
  pool_->Drop(slot);
}

}  // namespace gearbox::postgres
