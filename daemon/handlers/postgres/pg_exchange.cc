#include "daemon/handlers/postgres/pg_exchange.h"

#include <pthread.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>

#include "daemon/handlers/postgres/pg_cancel.h"
#include "daemon/handlers/postgres/pg_json.h"
#include "daemon/logging.h"

namespace gearbox::postgres {
namespace {

// Each connection prepares its route's one statement under this name.
constexpr char kStatement[] = "gearbox";

struct ResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

// A failure's body: {"error": what, "sqlstate": "42P01"} (sqlstate when the
// server sent one). Never the query or the server's message, which may
// quote data; those go to the log.
Step Failure(Response& response, int status, const char* what,
             const char* sqlstate = nullptr) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("error");
  writer.String(what);
  if (sqlstate && *sqlstate) {
    writer.Key("sqlstate");
    writer.String(sqlstate);
  }
  writer.EndObject();
  response.status = status;
  response.content_type = "application/json";
  response.body.assign(buffer.GetString(), buffer.GetSize());
  response.body += '\n';
  return Step::Done();
}

const char* PhaseName(int phase) {
  static constexpr const char* kNames[] = {
      "acquire", "wait_pool", "connect", "check_budget", "prepare", "execute"};
  return kNames[phase];
}

}  // namespace

PgExchange::PgExchange(PgPool* pool, PgRoute* route,
                       std::vector<std::string> values,
                       Clock::time_point deadline)
    : pool_(pool),
      route_(route),
      values_(std::move(values)),
      deadline_(deadline) {}

PgExchange::~PgExchange() {
  StopWaiting();
  GiveBack();
  if (result_) PQclear(result_);
}

Step PgExchange::Resume(const Wake& wake, Response& response) {
  if (wake.why == Wake::Why::kDeadline) return TimedOut(response);
  switch (phase_) {
    case Phase::kAcquire:
      return Acquire(response);
    case Phase::kWaitPool: {
      // Dequeued: handed a connection, or told to try again (one was
      // closed, its slot is free to connect).
      PgSlot* handed = waiter_.handed;
      waiter_.handed = nullptr;
      StopWaiting();
      if (!handed) return Acquire(response);
      slot_ = handed;
      return NextCommand(response);
    }
    case Phase::kConnect:
      return Connect(response);
    default:
      return Pump(wake, response);
  }
}

Step PgExchange::Acquire(Response& response) {
  const PgPool::Lease lease = pool_->Acquire(Clock::now());
  if (lease.outcome == PgPool::Outcome::kFull) {
    // Under async other exchanges hold every connection: queue for one
    // (never under a blocking model: one exchange per worker).
    pool_->Enqueue(&waiter_);
    phase_ = Phase::kWaitPool;
    return Step::WaitFds({{waiter_.fd, kFdReadable}}, Remaining());
  }
  slot_ = lease.slot;
  switch (lease.outcome) {
    case PgPool::Outcome::kIdle:
      return NextCommand(response);
    case PgPool::Outcome::kConnect:
      phase_ = Phase::kConnect;
      // libpq: after PQconnectStart, act as if PQconnectPoll said WRITING.
      return WaitSocket(kFdWritable, response);
    case PgPool::Outcome::kBackoff:
      // Logged by the failed attempt (PgPool::ConnectFailed); the 502s it
      // causes are counted per route by status.
      return Failure(response, 502, "database unreachable");
    default:
      LogError("postgres_connect_failed", "route={} error=\"out of memory\"",
               LogQuote(pool_->route()));
      return Failure(response, 502, "database unreachable");
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
      pool_->ConnectFailed(slot_, Clock::now(), ErrorMessage(slot_->conn));
      slot_ = nullptr;
      return Failure(response, 502, "database unreachable");
    }
  }
  if (PQsetnonblocking(slot_->conn, 1) != 0) return Broken(response);
  pool_->Connected();
  if (route_->check_budget) {
    route_->check_budget = false;
    phase_ = Phase::kCheckBudget;
    return Send(response);
  }
  return NextCommand(response);
}

Step PgExchange::NextCommand(Response& response) {
  phase_ = slot_->prepared ? Phase::kExecute : Phase::kPrepare;
  return Send(response);
}

Step PgExchange::Send(Response& response) {
  PGconn* conn = slot_->conn;
  int sent = 0;
  if (phase_ == Phase::kCheckBudget) {
    sent = PQsendQuery(conn, "SHOW max_connections");
  } else if (phase_ == Phase::kPrepare) {
    sent = PQsendPrepare(conn, kStatement, route_->query.c_str(),
                         route_->nparams, nullptr);
  } else {
    std::vector<const char*> values(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) values[i] = values_[i].c_str();
    sent = PQsendQueryPrepared(conn, kStatement, route_->nparams, values.data(),
                               nullptr, nullptr, 0);
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
  if (flushing_) {
    if (wake.ready(0, kFdReadable) && !PQconsumeInput(conn)) {
      return Broken(response);
    }
    const int left = PQflush(conn);
    if (left < 0) return Broken(response);
    if (left > 0) return WaitSocket(kFdReadable | kFdWritable, response);
    flushing_ = false;
  }
  if (!PQconsumeInput(conn)) return Broken(response);
  while (!PQisBusy(conn)) {
    PGresult* result = PQgetResult(conn);
    if (!result) {
      in_query_ = false;
      PGresult* first = result_;
      result_ = nullptr;
      return Finish(first, response);
    }
    if (!result_) {
      result_ = result;
    } else {
      PQclear(result);
    }
  }
  return WaitSocket(kFdReadable, response);
}

Step PgExchange::Finish(PGresult* first, Response& response) {
  Result result(first);
  const ExecStatusType status =
      result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (phase_ == Phase::kCheckBudget) {
    return CheckedBudget(result.get(), response);
  }
  if (phase_ == Phase::kPrepare) {
    if (status != PGRES_COMMAND_OK) {
      return QueryFailed(result.get(), response);
    }
    slot_->prepared = true;
    phase_ = Phase::kExecute;
    return Send(response);
  }
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return QueryFailed(result.get(), response);
  }
  response.status = 200;
  response.content_type = "application/json";
  RowsToJson(result.get(), response.body);
  response.body += '\n';
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
  if (PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1 &&
      FirstInProcess(pool_->route())) {
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
  return NextCommand(response);
}

Step PgExchange::QueryFailed(const PGresult* result, Response& response) {
  const char* sqlstate =
      result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary =
      result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string message = primary ? primary : ErrorMessage(slot_->conn);
  LogWarn("postgres_query_failed", "route={} phase={} sqlstate={} error={}",
          LogQuote(pool_->route()), PhaseName(static_cast<int>(phase_)),
          sqlstate ? sqlstate : "none", LogQuote(message));
  std::string code = sqlstate ? sqlstate : "";
  if (!std::all_of(code.begin(), code.end(),
                   [](unsigned char c) { return std::isalnum(c); })) {
    code.clear();
  }
  GiveBack();  // a connection the error broke (57P01: shutdown) is dropped
  return Failure(response, 502, "query failed", code.c_str());
}

Step PgExchange::Broken(Response& response) {
  LogWarn("postgres_connection_lost", "route={} phase={} dsn={} error={}",
          LogQuote(pool_->route()), PhaseName(static_cast<int>(phase_)),
          LogQuote(pool_->shown_dsn()), LogQuote(ErrorMessage(slot_->conn)));
  in_query_ = false;  // nothing left to cancel on a dead connection
  pool_->Drop(slot_);
  slot_ = nullptr;
  return Failure(response, 502, "database connection lost");
}

Step PgExchange::TimedOut(Response& response) {
  LogWarn("postgres_timeout", "route={} phase={}", LogQuote(pool_->route()),
          PhaseName(static_cast<int>(phase_)));
  StopWaiting();
  GiveBack();
  return Failure(response, 504, "timeout");
}

Step PgExchange::WaitSocket(uint8_t events, Response& response) {
  const int fd = PQsocket(slot_->conn);
  if (fd < 0) return Broken(response);
  return Step::WaitFds({{fd, events}}, Remaining());
}

std::chrono::microseconds PgExchange::Remaining() const {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline_ - Clock::now());
  return std::max(left, std::chrono::microseconds(1));
}

void PgExchange::StopWaiting() { pool_->Dequeue(&waiter_); }

void PgExchange::GiveBack() {
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
