// One request on a postgres route: take a connection from the worker's pool
// (or wait for one), connect it if new, prepare the route's statement once
// per connection, run it, answer its rows as JSON. Every wait is a Step on
// PQsocket (or the pool's wake fd), so blocking models poll() and an async
// loop keeps many queries in flight.
#pragma once

#include <postgresql/libpq-fe.h>

#include <string>
#include <vector>

#include "daemon/handler.h"
#include "daemon/handlers/postgres/pg_pool.h"

namespace gearbox::postgres {

// What every exchange of one route (on one worker) reads: owned by the
// route's handler instance, which outlives its exchanges.
struct PgRoute {
  std::string query;
  int nparams = 0;
  int connections_max = 0;   // workers x pool, for the max_connections check
  bool check_budget = true;  // SHOW max_connections after the first connect
};

class PgExchange final : public Exchange {
 public:
  PgExchange(PgPool* pool, PgRoute* route, std::vector<std::string> values,
             Clock::time_point deadline);
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
    kPrepare,
    kExecute
  };
  Step Acquire(Response& response);
  Step Connect(Response& response);
  Step NextCommand(Response& response);
  Step Send(Response& response);
  Step Pump(const Wake& wake, Response& response);
  Step Finish(PGresult* result, Response& response);
  Step CheckedBudget(const PGresult* result, Response& response);
  Step QueryFailed(const PGresult* result, Response& response);
  Step Broken(Response& response);
  Step TimedOut(Response& response);
  Step WaitSocket(uint8_t events, Response& response);
  std::chrono::microseconds Remaining() const;
  void StopWaiting();
  // Gives the slot back: cancels a query on the wire and closes its
  // connection, or returns an idle one to the pool.
  void GiveBack();

  PgPool* const pool_;
  PgRoute* const route_;
  const std::vector<std::string> values_;  // $1..$N
  const Clock::time_point deadline_;
  Phase phase_ = Phase::kAcquire;
  PgSlot* slot_ = nullptr;
  PgWaiter waiter_;             // while waiting for a connection
  bool flushing_ = false;       // PQflush has not written everything yet
  bool in_query_ = false;       // a command is sent, not all its results read
  PGresult* result_ = nullptr;  // the current command's first result
};

}  // namespace gearbox::postgres
