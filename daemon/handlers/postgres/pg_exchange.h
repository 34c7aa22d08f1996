// One request on a postgres route: take a connection from the worker's pool
// (or wait for one), connect it if new, prepare the route's statement once
// per connection, run it, answer its rows as JSON. Every wait is a Step on
// PQsocket (or the pool's wake fd), so blocking models poll() and an async
// loop keeps many queries in flight.
//
// The exchange keeps no request deadline of its own: the connection state
// machine owns it (its 504, counted in request_timeouts) and destroys the
// exchange when it passes, which cancels a query on the wire. The one bound
// the exchange times itself is connecting (connect_timeout), as libpq's own
// does not apply under PQconnectPoll.
#pragma once

#include <postgresql/libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "daemon/handler.h"
#include "daemon/handlers/postgres/pg_errors.h"
#include "daemon/handlers/postgres/pg_json.h"
#include "daemon/handlers/postgres/pg_params.h"
#include "daemon/handlers/postgres/pg_pool.h"

namespace gearbox::postgres {

// A wait the exchange does not bound itself: the request deadline (the
// connection state machine's) ends it first.
inline constexpr std::chrono::microseconds kUntilRequestDeadline =
    std::chrono::hours(24 * 365);

// What every exchange of one route (on one worker) reads: owned by the
// route's handler instance, which outlives its exchanges.
struct PgRoute {
  std::string query;
  int nparams = 0;
  int connections_max = 0;      // workers x pool, for the max_connections check
  bool check_budget = true;     // SHOW max_connections after the first connect
  int64_t max_rows = 10000;     // a longer result is cut off: 502
  int64_t max_bytes = 8 << 20;  // of the JSON body; longer is cut off: 502
  std::chrono::microseconds connect_timeout = std::chrono::seconds(2);
  JsonOptions json;
};

class PgExchange final : public Exchange, private PgSegment {
 public:
  // An exchange in one of pool's kept blocks (BlockCache); pool outlives it.
  static std::unique_ptr<Exchange> Make(PgPool* pool, PgRoute* route,
                                        PgParams&& params);
  // Ending it gives its block back to its pool (a destroying delete: the
  // pool is read before the exchange is destroyed).
  static void operator delete(PgExchange* exchange, std::destroying_delete_t);
  // Before the exchange is done (its deadline passed, its client closed):
  // a query on the wire is cancelled and its connection closed.
  ~PgExchange() override;
  Step Resume(const Wake& wake, Response& response) override;

 private:
  enum class Phase {
    kAcquire,
    kWaitPool,
    kConnect,
    kCheckBudget,
    kDeallocate,
    kPrepare,
    kExecute,
    kSegment,  // pipelined: its commands are on the wire (pg_segment.cc)
  };
  Step Acquire(Response& response);
  Step Connect(Response& response);
  Step ConnectTimedOut(Response& response);
  Step NextCommand(Response& response);
  Step Send(Response& response);
  Step Pump(const Wake& wake, Response& response);
  // Takes one result of the command in flight; false when the exchange must
  // stop reading (the rows passed a limit).
  bool Take(PGresult* result);
  Step Finish(Response& response);
  Step CheckedBudget(const PGresult* result, Response& response);
  void LogBudget(const PGresult* result);
  Step PrepareFailed(const PGresult* result, Response& response);
  void LogPrepareFailure(const PGresult* result);  // once per connection
  Step QueryFailed(const PGresult* result, Response& response);
  Step TooLarge(Response& response);
  Step Broken(Response& response);
  Step Fail(Response& response, const ErrorAnswer& answer);
  Step WaitSocket(uint8_t events, Response& response);
  void StopWaiting();
  // Gives the slot back: cancels a query on the wire and closes its
  // connection, or returns an idle one to the pool.
  void GiveBack();

  // The pipelined path (pg_segment.cc), on a watched connection in pipeline
  // mode: the exchange sends its commands and a sync point, then waits on a
  // wake of its own; the connection's reader (PgPool::Drain) feeds it its
  // results and wakes it at its sync point.
  Step SendSegment(Response& response);
  // The segment's DEALLOCATEs of evicted statements, prepare (on a cache
  // miss) and execute; false when libpq refused one.
  bool SendStatement(PGconn* conn);
  bool SendDeallocations(PGconn* conn);
  void OnDeallocated(PGresult* result);
  Step AwaitSegment(const Wake& wake, Response& response);
  // Behind a query whose exchange went away: waits at most until the
  // connection's stall passes kStallBound, then resets it.
  Step AwaitStalled(Response& response);
  Step SegmentDone(Response& response);
  void OnResult(PGresult* result) override;
  void OnCommandEnd() override;
  void OnSync() override;
  void OnLost() override;
  void OnStalled() override;
  // Gone before its sync point: alone on the connection, the query is
  // cancelled and the connection closed; behind or before others, its
  // results are dropped as they come.
  void Abandon();

  PgExchange(PgPool* pool, PgRoute* route, PgParams&& params);
  static void* operator new(size_t size, PgPool* pool);
  static void operator delete(void* block, PgPool* pool);  // a throwing ctor

  PgPool* const pool_;
  PgRoute* const route_;
  const PgParams params_;  // $1..$N
  Phase phase_ = Phase::kAcquire;
  std::string statement_;  // the prepared statement's name on slot_
  PgSlot* slot_ = nullptr;
  PgWaiter waiter_;  // while waiting for a connection
  Clock::time_point connect_deadline_{};
  bool flushing_ = false;       // PQflush has not written everything yet
  bool in_query_ = false;       // a command is sent, not all its results read
  bool too_large_ = false;      // the rows passed max_rows or max_bytes
  PGresult* result_ = nullptr;  // the command's first non-row result
  RowWriter rows_;              // the execute's rows, into body_
  std::string body_;
  SegmentCommands commands_;           // pipelined: the segment's
  int wake_ = -1;                      // WorkerHome::NewWake
  bool on_wire_ = false;               // in its connection's inflight
  bool synced_ = false;                // its sync point came
  bool lost_ = false;                  // its connection broke first
  PGresult* prepare_error_ = nullptr;  // the segment's prepare failed
};

}  // namespace gearbox::postgres
