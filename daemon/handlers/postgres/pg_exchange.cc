#include "daemon/handlers/postgres/pg_exchange.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>

#include "daemon/handlers/postgres/pg_cancel.h"
#include "daemon/logging.h"

namespace gearbox::postgres {
namespace {

struct ResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

const char* PhaseName(int phase) {
  static constexpr const char* kNames[] = {
      "acquire", "wait_pool", "connect", "check_budget", "deallocate",
      "prepare", "execute",   "execute"};  // a segment runs the execute
  return kNames[phase];
}

const char* Sqlstate(const PGresult* result) {
  const char* code =
      result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  return code ? code : "";
}

std::string ServerMessage(const PGresult* result, const PGconn* conn) {
  const char* primary =
      result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  return primary ? primary : ErrorMessage(conn);
}

}  // namespace

std::unique_ptr<Exchange> PgExchange::Make(PgPool* pool, PgRoute* route,
                                           PgParams&& params) {
  return std::unique_ptr<Exchange>(
      new (pool) PgExchange(pool, route, std::move(params)));
}

void* PgExchange::operator new(size_t size, PgPool* pool) {
  return pool->exchange_blocks().Take(size);
}

void PgExchange::operator delete(void* block, PgPool* pool) {
  pool->exchange_blocks().Give(block, sizeof(PgExchange));
}

void PgExchange::operator delete(PgExchange* exchange,
                                 std::destroying_delete_t) {
  PgPool* pool = exchange->pool_;
  exchange->~PgExchange();
  pool->exchange_blocks().Give(exchange, sizeof(PgExchange));
}

PgExchange::PgExchange(PgPool* pool, PgRoute* route, PgParams&& params)
    : pool_(pool), route_(route), params_(std::move(params)) {}

PgExchange::~PgExchange() {
  StopWaiting();
  GiveBack();
  if (result_) PQclear(result_);
  if (prepare_error_) PQclear(prepare_error_);
  if (wake_ != -1) pool_->home()->FreeWake(wake_);
}

Step PgExchange::Resume(const Wake& wake, Response& response) {
  if (wake.why == Wake::Why::kDeadline && phase_ != Phase::kSegment) {
    // Only a connect is timed here, and a segment behind a stalled query
    // (AwaitStalled): every other wait is unbounded.
    return ConnectTimedOut(response);
  }
  switch (phase_) {
    case Phase::kAcquire:
      return Acquire(response);
    case Phase::kWaitPool: {
      // Dequeued: handed a connection, or told to try again (one was
      // closed, its slot is free to connect).
      PgSlot* handed = waiter_.handed;
      waiter_.handed = nullptr;
      StopWaiting();
      // A pipelined connection handed over may have broken since.
      if (!handed || !handed->conn) return Acquire(response);
      slot_ = handed;
      return slot_->pipelined ? SendSegment(response) : NextCommand(response);
    }
    case Phase::kConnect:
      return Connect(response);
    case Phase::kSegment:
      return AwaitSegment(wake, response);
    default:
      return Pump(wake, response);
  }
}

Step PgExchange::Acquire(Response& response) {
  const Clock::time_point now = Clock::now();
  const PgPool::Lease lease = pool_->Acquire(now);
  if (lease.outcome == PgPool::Outcome::kFull) {
    // Under async other exchanges hold every connection: queue for one
    // (never under a blocking model: one exchange per worker).
    if (!pool_->Enqueue(&waiter_)) return Fail(response, kNoResources);
    phase_ = Phase::kWaitPool;
    return Step::WaitFds({{waiter_.fd, kFdReadable}}, kUntilRequestDeadline);
  }
  slot_ = lease.slot;
  switch (lease.outcome) {
    case PgPool::Outcome::kIdle:
      return slot_->pipelined ? SendSegment(response) : NextCommand(response);
    case PgPool::Outcome::kJoin:
      return SendSegment(response);
    case PgPool::Outcome::kConnect:
      phase_ = Phase::kConnect;
      connect_deadline_ = now + route_->connect_timeout;
      // libpq: after PQconnectStart, act as if PQconnectPoll said WRITING.
      return WaitSocket(kFdWritable, response);
    case PgPool::Outcome::kBackoff:
      // Logged by the failed attempt (PgPool::ConnectFailed); the 502s it
      // causes are counted per route by status.
      return Fail(response, kUnreachable);
    default:  // kNoResources, logged by the pool
      return Fail(response, kNoResources);
  }
}

Step PgExchange::Connect(Response& response) {
  switch (PQconnectPoll(slot_->conn)) {
    case PGRES_POLLING_READING:
      return WaitSocket(kFdReadable, response);
    case PGRES_POLLING_WRITING:
      return WaitSocket(kFdWritable, response);
    case PGRES_POLLING_OK:
      break;
    default: {
      const std::string error = ErrorMessage(slot_->conn);
      if (OutOfDescriptors(error)) {
        pool_->Drop(slot_);
        slot_ = nullptr;
        LogWarn("postgres_no_resources", "route={} call=PQconnectPoll error={}",
                LogQuote(pool_->route()), LogQuote(error));
        return Fail(response, kNoResources);
      }
      pool_->ConnectFailed(slot_, Clock::now(), error);
      slot_ = nullptr;
      return Fail(response, kUnreachable);
    }
  }
  if (PQsetnonblocking(slot_->conn, 1) != 0) return Broken(response);
  pool_->Connected(slot_);
  if (slot_->pipelined) return SendSegment(response);
  if (route_->check_budget) {
    route_->check_budget = false;
    phase_ = Phase::kCheckBudget;
    return Send(response);
  }
  return NextCommand(response);
}

Step PgExchange::ConnectTimedOut(Response& response) {
  // Every other wait is unbounded: the request deadline ends it first.
  if (phase_ != Phase::kConnect || !slot_) {
    return Fail(response, kConnectionLost);
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      route_->connect_timeout)
                      .count();
  pool_->ConnectFailed(slot_, Clock::now(),
                       fmt::format("connect_timeout: no connection after "
                                   "{} ms",
                                   ms));
  slot_ = nullptr;
  return Fail(response, kUnreachable);
}

// The statement is prepared on this connection already, or is prepared now
// (after the least recently used one is deallocated, when the cache is full).
Step PgExchange::NextCommand(Response& response) {
  if (const std::string* name = slot_->statements.Find(route_->query)) {
    statement_ = *name;
    phase_ = Phase::kExecute;
  } else {
    statement_ = slot_->statements.Victim();
    phase_ = statement_.empty() ? Phase::kPrepare : Phase::kDeallocate;
    if (statement_.empty()) statement_ = slot_->statements.NextName();
  }
  return Send(response);
}

Step PgExchange::Send(Response& response) {
  PGconn* conn = slot_->conn;
  int sent = 0;
  if (phase_ == Phase::kCheckBudget) {
    sent = PQsendQuery(conn, "SHOW max_connections");
  } else if (phase_ == Phase::kDeallocate) {
    slot_->statements.Forget(statement_);
    sent = PQsendQuery(conn, ("DEALLOCATE " + statement_).c_str());
  } else if (phase_ == Phase::kPrepare) {
    sent = PQsendPrepare(conn, statement_.c_str(), route_->query.c_str(),
                         route_->nparams, nullptr);
  } else {
    const ParamPointers values(params_);
    sent = PQsendQueryPrepared(conn, statement_.c_str(), params_.count(),
                               values.data(), nullptr, nullptr, 0) &&
           PQsetSingleRowMode(conn);
    rows_.Begin(&body_, route_->json);
  }
  if (!sent) return Broken(response);
  in_query_ = true;
  flushing_ = true;
  return Pump(Wake{}, response);
}

// libpq's non-blocking loop: PQflush until the command is written (reading
// meanwhile, so a server that talks back does not deadlock us), then
// PQconsumeInput until PQisBusy says a result is complete, and PQgetResult
// until it returns null (the command is over).
Step PgExchange::Pump(const Wake& wake, Response& response) {
  PGconn* conn = slot_->conn;
  if (wake.ready(0, kFdReadable) && !PQconsumeInput(conn)) {
    return Broken(response);
  }
  bool ready = false;  // PQisBusy said a result is complete
  if (flushing_) {
    const int left = PQflush(conn);
    if (left < 0) return Broken(response);
    if (left > 0) return WaitSocket(kFdReadable | kFdWritable, response);
    flushing_ = false;
    // An async loop reads only on a readable wake: right after the flush
    // the backend has not run yet, and a recv() would say EAGAIN. A
    // blocking worker may read ahead (read_ahead.h).
    if (pool_->home()->polls_each_wait() && slot_->read_ahead.Wanted()) {
      if (!PQconsumeInput(conn)) return Broken(response);
      ready = !PQisBusy(conn);
      slot_->read_ahead.Found(ready);
    }
  }
  // A PQisBusy that just said no is not asked again: each call parses
  // what is buffered anew.
  for (; ready || !PQisBusy(conn); ready = false) {
    PGresult* result = PQgetResult(conn);
    if (!result) {
      in_query_ = false;
      return Finish(response);
    }
    if (!Take(result)) return TooLarge(response);
  }
  return WaitSocket(kFdReadable, response);
}

bool PgExchange::Take(PGresult* result) {
  const ExecStatusType status = PQresultStatus(result);
  const bool rows = status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK;
  if (phase_ == Phase::kExecute && rows && !result_) {
    rows_.Add(result);
    PQclear(result);
    return rows_.rows() <= route_->max_rows &&
           static_cast<int64_t>(body_.size()) <= route_->max_bytes;
  }
  // The first of anything else (a command's result, an error) is the one
  // that answers; an error after some rows replaces them.
  if (!result_) {
    result_ = result;
  } else {
    PQclear(result);
  }
  return true;
}

Step PgExchange::Finish(Response& response) {
  Result result(result_);
  result_ = nullptr;
  const ExecStatusType status =
      result ? PQresultStatus(result.get()) : PGRES_TUPLES_OK;
  if (phase_ == Phase::kCheckBudget) {
    return CheckedBudget(result.get(), response);
  }
  if (phase_ == Phase::kDeallocate) {
    if (status != PGRES_COMMAND_OK) return QueryFailed(result.get(), response);
    statement_ = slot_->statements.NextName();
    phase_ = Phase::kPrepare;
    return Send(response);
  }
  if (phase_ == Phase::kPrepare) {
    if (status != PGRES_COMMAND_OK) {
      return PrepareFailed(result.get(), response);
    }
    slot_->statements.Add(route_->query, statement_);
    phase_ = Phase::kExecute;
    return Send(response);
  }
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return QueryFailed(result.get(), response);
  }
  rows_.End();
  body_ += '\n';
  response.status = 200;
  response.content_type = "application/json";
  response.body.swap(body_);
  GiveBack();
  return Step::Done();
}

// True the first time this process asks for route: the budget is logged
// once per process (each worker's pool checks on its first connection, as
// no worker knows which others get traffic; a prefork child is a process).
bool FirstInProcess(const std::string& route) {
  static std::mutex mu;
  [[maybe_unused]] static const int registered = pthread_atfork(
      [] { mu.lock(); }, [] { mu.unlock(); }, [] { mu.unlock(); });
  static auto* seen = new std::set<std::string>;  // never destroyed
  std::lock_guard lock(mu);
  return seen->insert(route).second;
}

Step PgExchange::CheckedBudget(const PGresult* result, Response& response) {
  LogBudget(result);
  return NextCommand(response);
}

void PgExchange::LogBudget(const PGresult* result) {
  const ExecStatusType status = PQresultStatus(result);
  if ((status == PGRES_TUPLES_OK || status == PGRES_SINGLE_TUPLE) &&
      PQntuples(result) == 1 && FirstInProcess(pool_->route())) {
    const int server_max = atoi(PQgetvalue(result, 0, 0));
    if (route_->connections_max > server_max) {
      LogWarn("postgres_budget_exceeded",
              "route={} connections_max={} server_max_connections={} "
              "hint=\"lower pool or the workers, or raise max_connections\"",
              LogQuote(pool_->route()), route_->connections_max, server_max);
    } else {
      LogInfo("postgres_budget",
              "route={} connections_max={} "
              "server_max_connections={}",
              LogQuote(pool_->route()), route_->connections_max, server_max);
    }
  }
}

// The route's SQL is at fault (the same on every request): logged with the
// SQL once per connection, not once per request.
Step PgExchange::PrepareFailed(const PGresult* result, Response& response) {
  LogPrepareFailure(result);
  GiveBack();
  Answer(response, kPrepareFailed, Sqlstate(result));
  return Step::Done();
}

void PgExchange::LogPrepareFailure(const PGresult* result) {
  const std::string sqlstate = Sqlstate(result);
  if (!slot_->prepare_failure_logged) {
    slot_->prepare_failure_logged = true;
    LogError("postgres_prepare_failed", "route={} sqlstate={} error={} sql={}",
             LogQuote(pool_->route()), sqlstate.empty() ? "none" : sqlstate,
             LogQuote(ServerMessage(result, slot_->conn)),
             LogQuote(route_->query));
  }
}

Step PgExchange::QueryFailed(const PGresult* result, Response& response) {
  const std::string sqlstate = Sqlstate(result);
  const ErrorAnswer answer = AnswerForSqlstate(sqlstate);
  LogWarn("postgres_query_failed",
          "route={} phase={} sqlstate={} status={} error={}",
          LogQuote(pool_->route()), PhaseName(static_cast<int>(phase_)),
          sqlstate.empty() ? "none" : sqlstate, answer.status,
          LogQuote(ServerMessage(result, slot_ ? slot_->conn : nullptr)));
  GiveBack();  // a connection the error broke (57P01: shutdown) is dropped
  Answer(response, answer, sqlstate);
  return Step::Done();
}

// The rows passed a limit: the rest is not read. The query is cancelled and
// the connection closed rather than drained: a cancel is asynchronous
// (another thread, the postmaster, a signal), so one that lands late could
// cancel the next exchange's query on a reused connection.
Step PgExchange::TooLarge(Response& response) {
  LogWarn("postgres_result_too_large",
          "route={} rows_read={} bytes={} max_rows={} max_bytes={}",
          LogQuote(pool_->route()), rows_.rows(), body_.size(),
          route_->max_rows, route_->max_bytes);
  GiveBack();
  body_.clear();
  body_.shrink_to_fit();
  return Fail(response, kResultTooLarge);
}

Step PgExchange::Broken(Response& response) {
  LogWarn("postgres_connection_lost", "route={} phase={} dsn={} error={}",
          LogQuote(pool_->route()), PhaseName(static_cast<int>(phase_)),
          LogQuote(pool_->shown_dsn()), LogQuote(ErrorMessage(slot_->conn)));
  in_query_ = false;  // nothing left to cancel on a dead connection
  pool_->Drop(slot_);
  slot_ = nullptr;
  return Fail(response, kConnectionLost);
}

Step PgExchange::Fail(Response& response, const ErrorAnswer& answer) {
  Answer(response, answer);
  return Step::Done();
}

Step PgExchange::WaitSocket(uint8_t events, Response& response) {
  const int fd = PQsocket(slot_->conn);
  if (fd < 0) return Broken(response);
  if (phase_ != Phase::kConnect) {
    return Step::WaitFds({{fd, events}}, kUntilRequestDeadline);
  }
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      connect_deadline_ - Clock::now());
  return Step::WaitFds({{fd, events}},
                       std::max(left, std::chrono::microseconds(1)));
}

void PgExchange::StopWaiting() { pool_->Dequeue(&waiter_); }

void PgExchange::GiveBack() {
  if (phase_ == Phase::kSegment) return Abandon();
  if (!slot_) return;
  const bool fit = !in_query_ && phase_ != Phase::kConnect &&
                   PQstatus(slot_->conn) == CONNECTION_OK;
  if (in_query_) {
    const bool queued = CancelInBackground(slot_->conn, pool_->route());
    LogInfo("postgres_cancelled", "route={} phase={} backend_pid={} queued={}",
            LogQuote(pool_->route()), PhaseName(static_cast<int>(phase_)),
            PQbackendPID(slot_->conn), queued);
  }
  if (fit) {
    pool_->Release(slot_);
  } else {
    pool_->Drop(slot_);
  }
  slot_ = nullptr;
  in_query_ = false;
}

}  // namespace gearbox::postgres
