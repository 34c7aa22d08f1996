// One worker's connections to one route's database: `size` slots, opened
// lazily, re-opened after a failure with a backoff. Owned by the route's
// handler instance, so used by one worker only: no locks. Exchanges that
// find every slot in use wait on wake_fd() (an eventfd the pool signals when
// a slot comes free), so an async loop never blocks on a full pool.
#pragma once

#include <postgresql/libpq-fe.h>

#include <chrono>
#include <string>
#include <vector>

namespace gearbox::postgres {

using Clock = std::chrono::steady_clock;

struct PgSlot {
  enum class State { kEmpty, kInUse, kIdle };
  State state = State::kEmpty;
  PGconn* conn = nullptr;
  bool prepared = false;  // the route's statement exists on conn
};

class PgPool {
 public:
  // dsn goes to libpq as is; shown_dsn (redacted) goes to log lines.
  PgPool(std::string dsn, std::string shown_dsn, std::string route, int size);
  ~PgPool();  // closes every connection (PQfinish)
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  enum class Outcome {
    kIdle,      // slot holds an open connection, ready for a query
    kConnect,   // slot's connection is being opened: PQconnectPoll it
    kBackoff,   // the database failed recently and the retry is not due
    kFull,      // every slot is in use: wait on wake_fd()
    kNoMemory,  // libpq could not even start (PQconnectStart returned null)
  };
  struct Lease {
    Outcome outcome;
    PgSlot* slot = nullptr;  // kIdle, kConnect: the caller's until it gives
                             // it back (Release or Drop)
  };
  // Takes an idle connection, else starts a connection in an empty slot
  // (unless backing off), else kFull.
  Lease Acquire(Clock::time_point now);
  // The caller's slot goes back idle, its connection fit for another query.
  void Release(PgSlot* slot);
  // The caller's slot's connection is closed (broken, or abandoned
  // mid-query): the slot is empty again.
  void Drop(PgSlot* slot);
  // A connection attempt succeeded (resets the backoff) or failed (Drop,
  // then no new attempt for a while: 50 ms doubling to 2 s).
  void Connected();
  void ConnectFailed(PgSlot* slot, Clock::time_point now,
                     const std::string& error);

  // Waiting for a free slot: readable when one may be free. A waiter counts
  // itself in (AddWaiter) before waiting and out (RemoveWaiter) after; a
  // woken waiter calls DrainWake before trying Acquire again.
  int wake_fd() const { return wake_fd_; }
  void AddWaiter() { ++waiters_; }
  void RemoveWaiter() { --waiters_; }
  void DrainWake();

  const std::string& route() const { return route_; }
  const std::string& shown_dsn() const { return shown_dsn_; }
  const std::string& last_error() const { return last_error_; }
  int size() const { return static_cast<int>(slots_.size()); }
  // Milliseconds until the next connection attempt may start (0: now).
  int64_t BackoffLeftMs(Clock::time_point now) const;

 private:
  void WakeWaiter();

  const std::string dsn_;
  const std::string shown_dsn_;
  const std::string route_;
  std::vector<PgSlot> slots_;
  int wake_fd_ = -1;
  int waiters_ = 0;
  int failures_ = 0;  // consecutive failed connection attempts
  Clock::time_point retry_at_{};
  std::string last_error_;
};

// libpq's message for conn without its trailing newline.
std::string ErrorMessage(const PGconn* conn);

}  // namespace gearbox::postgres
