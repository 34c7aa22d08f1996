// One worker's connections to one route's database: `size` slots, opened
// lazily, re-opened after a failure with a backoff. Owned by the route's
// handler instance, so used by one worker only: no locks. Each open
// connection's socket is watched by the worker's home (WorkerHome) for as
// long as it lives, so a wait on it registers nothing and a server that
// closes an idle connection is noticed when it does. An exchange that finds
// every slot in use queues (FIFO) and waits on a wake of its own (under async
// no system call); a released connection is handed to the first in the queue
// and its wake signalled, so an async loop never blocks on a full pool, and a
// release wakes one waiter, not all (no thundering herd at c >> pool).
#pragma once

#include <postgresql/libpq-fe.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/handlers/postgres/block_cache.h"
#include "daemon/handlers/postgres/pg_pace.h"
#include "daemon/handlers/postgres/pg_segment.h"
#include "daemon/handlers/postgres/read_ahead.h"
#include "daemon/handlers/postgres/statement_cache.h"
#include "daemon/worker_home.h"

namespace gearbox::postgres {

using Clock = std::chrono::steady_clock;

class PgPool;

struct PgSlot {
  enum class State { kEmpty, kInUse, kIdle };
  State state = State::kEmpty;
  PGconn* conn = nullptr;
  PgPool* pool = nullptr;
  int watched_fd = -1;        // PQsocket, while the worker's home watches it
  StatementCache statements;  // prepared on conn, by SQL text
  // A failed prepare was logged (with the SQL) for this connection: later
  // ones on it are only answered, not logged again.
  bool prepare_failure_logged = false;
  ReadAhead read_ahead;  // a blocking worker's read right after a send
  // Since when an unwatched one is idle: past kCheckIdleAfter it is
  // poll()ed before it is given a query (unset for a watched one).
  std::chrono::steady_clock::time_point idle_since{};
  // In pipeline mode (a watched connection, libpq >= 14): segments on the
  // wire, oldest first; null for one whose exchange went away (its results
  // are read and dropped).
  bool pipelined = false;
  std::deque<PgSegment*> inflight;
  // Opening: from StartConnect until Connected, or its Drop.
  bool connecting = false;
  // Segments of exchanges that went away, still on the wire (in inflight).
  std::vector<std::unique_ptr<OrphanSegment>> orphans;
  // Since when the head segment's exchange is gone while its query runs
  // (the epoch: it is not): no new segment joins the connection, and past
  // kStallBound it is reset.
  std::chrono::steady_clock::time_point stalled_since{};
  // Since when the head segment is the server's (its send, or the reading
  // of the sync before it), while segments are on the connection; and
  // whether it was sent to a connection with nothing else on it, so that
  // its answer times the server alone (PgPace).
  std::chrono::steady_clock::time_point head_since{};
  bool head_alone = false;

  bool Orphaned(const PgSegment* segment) const {
    for (const auto& orphan : orphans) {
      if (orphan.get() == segment) return true;
    }
    return false;
  }
  // The head segment's exchange went away (dropped or orphaned).
  bool HeadAbandoned() const {
    return !inflight.empty() &&
           (!inflight.front() || Orphaned(inflight.front()));
  }
  bool stalled() const {
    return stalled_since != std::chrono::steady_clock::time_point{};
  }
};

// How long a pipelined connection may stay behind a query whose exchange
// went away (a timeout, a client gone) before that query is cancelled and
// the connection reset, the segments behind it answered 502: their own
// deadlines would answer them 504 later, and the query may never end.
inline constexpr std::chrono::milliseconds kStallBound{1000};

// An unwatched idle connection (a blocking worker's) is poll()ed before it
// is given a query, so that one the server ended (a restart, an idle
// timeout, pg_terminate_backend) is replaced instead of failing the query.
// One used this recently is taken as it is: under load that look was one
// more system call on every request. One the server ended within this
// window of its last use fails its query (502), as one ended between the
// check and the send always could.
inline constexpr std::chrono::milliseconds kCheckIdleAfter{10};

// An exchange waiting for a connection (a member of the exchange).
struct PgWaiter {
  int fd = -1;               // its wake (WorkerHome::NewWake) while queued
  PgSlot* handed = nullptr;  // a connection handed over (the waiter's now)
  bool queued = false;
};

class PgPool {
 public:
  // dsn goes to libpq as is; shown_dsn (redacted) goes to log lines. home:
  // the worker's (ServerInfo::home); null: one of the pool's own.
  // pipeline: segments one pipelined connection carries at most.
  PgPool(std::string dsn, std::string shown_dsn, std::string route, int size,
         WorkerHome* home, int pipeline = 1);
  ~PgPool();  // closes every connection (PQfinish)
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  enum class Outcome {
    kIdle,     // slot holds an open connection, ready for a query
    kJoin,     // slot is pipelined and busy, with room for one more query
    kConnect,  // slot's connection is being opened: PQconnectPoll it
    kBackoff,  // the database failed recently and the retry is not due
    kFull,     // every slot is in use: Enqueue, wait on waiter.fd
    // No connection could be started for want of a resource of this
    // process (PQconnectStart returned null; socket(): EMFILE/ENFILE).
    // Logged; no backoff, as the database did not fail.
    kNoResources,
  };
  struct Lease {
    Outcome outcome;
    PgSlot* slot = nullptr;  // kIdle, kConnect: the caller's until it gives
                             // it back (Release or Drop)
  };
  // Takes an idle connection, else starts a connection in an empty slot
  // (unless backing off), else joins the least loaded pipelined connection
  // with room, else kFull. While the pool's queries are quick (PgPace), a
  // pipelined connection with room whose head segment is young (under
  // PgPace::kQuickBelow) is taken first, the busiest such: its backend is
  // awake, and not stuck in a slow query.
  Lease Acquire(Clock::time_point now);
  // The caller's slot's connection is fit for another query: handed to the
  // first waiter, else idle (when no segment is on it).
  void Release(PgSlot* slot);
  // A pipelined connection's socket turned readable: reads what came and
  // hands each result to its segment; a segment that ends frees room for
  // a waiter. A broken connection fails its segments (OnLost) and is dropped.
  void Drain(PgSlot* slot);
  // A connection that broke with segments on it: each OnLost, then Drop.
  void FailPipeline(PgSlot* slot);
  // After the head segment changed or went away: stalled_since set when the
  // head's exchange is gone (each segment behind it told OnStalled), else
  // cleared.
  void MarkStall(PgSlot* slot);
  WorkerHome* home() const { return home_; }
  // The caller's slot's connection is closed (broken, or abandoned
  // mid-query): the slot is empty again, and the first waiter is woken
  // (without a slot: it calls Acquire again, and connects).
  void Drop(PgSlot* slot);
  // slot's connection attempt succeeded (resets the backoff; its socket is
  // watched from now on) or failed (Drop, then no new attempt for a while:
  // 50 ms doubling to 2 s).
  void Connected(PgSlot* slot);
  void ConnectFailed(PgSlot* slot, Clock::time_point now,
                     const std::string& error);

  // Queues waiter (after Acquire said kFull) and gives it a wake to wait
  // on, readable once it is dequeued: waiter->handed is then its
  // connection, or null (a slot was emptied: Acquire again). False (logged,
  // not queued) when no wake could be had.
  bool Enqueue(PgWaiter* waiter);
  // Ends a wait, woken or not (the exchange timed out or is destroyed): out
  // of the queue, its wake freed, and a
  // connection it was handed but will not use released to the next waiter.
  void Dequeue(PgWaiter* waiter);

  const std::string& route() const { return route_; }
  const std::string& shown_dsn() const { return shown_dsn_; }
  const std::string& last_error() const { return last_error_; }
  int size() const { return static_cast<int>(slots_.size()); }
  // Milliseconds until the next connection attempt may start (0: now).
  int64_t BackoffLeftMs(Clock::time_point now) const;
  // Where the pool's exchanges live (PgExchange::Make): each worker makes
  // and ends one per request, and a blocking worker has one at a time, an
  // async loop a varying few.
  BlockCache& exchange_blocks() { return exchange_blocks_; }
  static constexpr size_t kKeptExchanges = 16;

 private:
  // Acquire's steps. The first idle connection still open (one found closed
  // is dropped), and in *first_empty the first empty slot seen.
  PgSlot* TakeIdle(PgSlot** first_empty, Clock::time_point now);
  // The pipelined connection with segments on it and room for one more
  // that has the fewest (kRoomiest), or the most among those whose head
  // segment is younger than PgPace::kQuickBelow at now (kBusiest); or null.
  enum class Pick { kRoomiest, kBusiest };
  PgSlot* PipelinedWithRoom(Pick pick, Clock::time_point now);
  // slot's head segment ended (its sync was read at now): timed when it was
  // sent alone, and the next one's turn begins.
  void HeadEnded(PgSlot* slot, Clock::time_point now);
  // Starts opening a connection in the empty slot.
  Lease StartConnect(PgSlot* slot, Clock::time_point now);
  // Dequeues the first waiter, hands it slot (or null) and signals it.
  bool WakeFirst(PgSlot* slot);
  // An idle connection's socket turned readable (WorkerHome's on_idle): the
  // server said something unasked, usually goodbye (57P01, then EOF).
  static void OnIdleReadable(void* slot);
  // Closes slot's connection (after the home forgets its socket).
  void Close(PgSlot* slot);
  // One line per resource failure (postgres_no_resources): the 503 it causes
  // is counted per route by status.
  void LogNoResources(std::string_view call, std::string_view error);

  const std::string dsn_;
  const std::string shown_dsn_;
  const std::string route_;
  std::vector<PgSlot> slots_;
  std::deque<PgWaiter*> waiters_;
  std::unique_ptr<WorkerHome> own_home_;  // when given none (unit tests)
  WorkerHome* const home_;
  const size_t pipeline_;
  PgPace pace_;       // how quickly queries are answered (pipelined)
  int failures_ = 0;  // consecutive failed connection attempts
  Clock::time_point retry_at_{};
  std::string last_error_;
  BlockCache exchange_blocks_{kKeptExchanges};
};

// libpq's message for conn without its trailing newline.
std::string ErrorMessage(const PGconn* conn);

}  // namespace gearbox::postgres
