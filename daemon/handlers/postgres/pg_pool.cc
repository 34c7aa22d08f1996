#include "daemon/handlers/postgres/pg_pool.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/handlers/postgres/pg_errors.h"
#include "daemon/logging.h"

namespace gearbox::postgres {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kMaxBackoff = std::chrono::seconds(2);

// An idle connection's socket, looked at without waiting. The server ended
// it (a shutdown or pg_terminate_backend: FATAL 57P01, then EOF): a recv()
// would read only the FATAL and leave the connection looking open, so the
// hang-up is what tells. Anything else it sent (a notice, a parameter
// status) is read by libpq.
bool IdleStillOpen(PGconn* conn) {
  pollfd p{PQsocket(conn), POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) > 0) {
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
      PQconsumeInput(conn);  // its error message, for the log
      return false;
    }
    if ((p.revents & POLLIN) && !PQconsumeInput(conn)) return false;
  }
  return PQstatus(conn) == CONNECTION_OK;
}

}  // namespace

std::string ErrorMessage(const PGconn* conn) {
  std::string message = conn ? PQerrorMessage(conn) : "out of memory";
  while (!message.empty() &&
         (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  for (char& c : message) {
    if (c == '\n' || c == '\t') c = ' ';  // one log line
  }
  return message;
}

PgPool::PgPool(std::string dsn, std::string shown_dsn, std::string route,
               int size, WorkerHome* home, int pipeline)
    : dsn_(std::move(dsn)),
      shown_dsn_(std::move(shown_dsn)),
      route_(std::move(route)),
      slots_(static_cast<size_t>(size)),
      own_home_(home ? nullptr : std::make_unique<WorkerHome>()),
      home_(home ? home : own_home_.get()),
      pipeline_(static_cast<size_t>(pipeline)) {
  for (PgSlot& slot : slots_) slot.pool = this;
}

PgPool::~PgPool() {
  for (PgSlot& slot : slots_) Close(&slot);
}

void PgPool::Close(PgSlot* slot) {
  if (slot->watched_fd >= 0) home_->Forget(slot->watched_fd);
  slot->watched_fd = -1;
  if (slot->conn) PQfinish(slot->conn);
  slot->conn = nullptr;
}

PgPool::Lease PgPool::Acquire(Clock::time_point now) {
  if (pace_.quick()) {
    if (PgSlot* busy = PipelinedWithRoom(Pick::kBusiest, now)) {
      return {Outcome::kJoin, busy};
    }
  }
  PgSlot* empty = nullptr;
  if (PgSlot* idle = TakeIdle(&empty, now)) return {Outcome::kIdle, idle};
  if (!empty || now < retry_at_) {
    // Every connection is busy (or none may be opened yet): ride on the
    // least loaded pipelined one with room.
    if (PgSlot* join = PipelinedWithRoom(Pick::kRoomiest, now)) {
      return {Outcome::kJoin, join};
    }
    return {empty ? Outcome::kBackoff : Outcome::kFull};
  }
  return StartConnect(empty, now);
}

PgSlot* PgPool::TakeIdle(PgSlot** first_empty, Clock::time_point now) {
  for (PgSlot& slot : slots_) {  // O(pool); pool <= 1024, usually 4..16
    if (slot.state == PgSlot::State::kIdle) {
      // An idle connection the server ended is dropped here instead of
      // failing the query it would be given: a watched one was looked at
      // when it turned readable (OnIdleReadable), an unwatched one (a
      // blocking worker's) costs a poll() unless it was used just now
      // (kCheckIdleAfter).
      const bool check =
          slot.watched_fd < 0 && now - slot.idle_since >= kCheckIdleAfter;
      if (check ? !IdleStillOpen(slot.conn)
                : PQstatus(slot.conn) != CONNECTION_OK) {
        LogInfo("postgres_connection_closed", "route={} error={}",
                LogQuote(route_), LogQuote(ErrorMessage(slot.conn)));
        slot.state = PgSlot::State::kInUse;
        Drop(&slot);
      } else {
        slot.state = PgSlot::State::kInUse;
        return &slot;
      }
    }
    if (slot.state == PgSlot::State::kEmpty && !*first_empty) {
      *first_empty = &slot;
    }
  }
  return nullptr;
}

PgSlot* PgPool::PipelinedWithRoom(Pick pick, Clock::time_point now) {
  PgSlot* join = nullptr;
  for (PgSlot& slot : slots_) {  // O(pool), as TakeIdle
    // While connections open, a query waits in the queue for whichever
    // connection frees a turn first, rather than ride behind a busy one: in
    // a burst on a cold pool the first connections up would take every
    // arrival, pipeline deep, while the others open and then idle.
    if (pick == Pick::kRoomiest && slot.connecting) return nullptr;
    if (!slot.pipelined || slot.inflight.empty() || slot.stalled() ||
        slot.inflight.size() >= pipeline_ ||
        (pick == Pick::kBusiest &&
         now - slot.head_since >= PgPace::kQuickBelow)) {
      continue;
    }
    if (!join || (pick == Pick::kRoomiest
                      ? slot.inflight.size() < join->inflight.size()
                      : slot.inflight.size() > join->inflight.size())) {
      join = &slot;
    }
  }
  return join;
}

PgPool::Lease PgPool::StartConnect(PgSlot* slot, Clock::time_point now) {
  // The dsn first, expanded; the later keywords override it: JSON wants
  // UTF-8 whatever the server's encoding.
  const char* keywords[] = {"dbname", "client_encoding",
                            "fallback_application_name", nullptr};
  const char* values[] = {dsn_.c_str(), "UTF8", "gearboxd", nullptr};
  PGconn* conn = PQconnectStartParams(keywords, values, 1);
  if (!conn) {
    LogNoResources("PQconnectStartParams", "out of memory");
    return {Outcome::kNoResources};
  }
  if (PQstatus(conn) == CONNECTION_BAD) {
    const std::string error = ErrorMessage(conn);
    PQfinish(conn);
    slot->conn = nullptr;
    if (OutOfDescriptors(error)) {
      LogNoResources("PQconnectStartParams", error);
      return {Outcome::kNoResources};
    }
    ConnectFailed(slot, now, error);
    return {Outcome::kBackoff};
  }
  slot->state = PgSlot::State::kInUse;
  slot->conn = conn;
  slot->connecting = true;
  slot->statements.Clear();
  slot->prepare_failure_logged = false;
  return {Outcome::kConnect, slot};
}

void PgPool::Release(PgSlot* slot) {
  if (WakeFirst(slot)) return;  // stays kInUse: the waiter's now
  if (!slot->inflight.empty()) return;
  slot->state = PgSlot::State::kIdle;
  // Only an unwatched one is looked at when taken (TakeIdle).
  if (slot->watched_fd < 0) slot->idle_since = Clock::now();
}

void PgPool::Drop(PgSlot* slot) {
  Close(slot);
  slot->connecting = false;
  slot->pipelined = false;
  slot->inflight.clear();
  slot->orphans.clear();
  slot->stalled_since = {};
  slot->head_since = {};
  slot->head_alone = false;
  slot->statements.Clear();
  slot->state = PgSlot::State::kEmpty;
  WakeFirst(nullptr);
}

void PgPool::OnIdleReadable(void* arg) {
  auto* slot = static_cast<PgSlot*>(arg);
  PgPool* pool = slot->pool;
  if (!slot->inflight.empty()) return pool->Drain(slot);
  // In use: its exchange reads it (its waits ride on the same watch).
  if (slot->state != PgSlot::State::kIdle) return;
  if (PQconsumeInput(slot->conn) && PQstatus(slot->conn) == CONNECTION_OK) {
    return;  // a notice, a parameter status: read, nothing to do
  }
  LogInfo("postgres_connection_closed", "route={} error={}",
          LogQuote(pool->route_), LogQuote(ErrorMessage(slot->conn)));
  slot->state = PgSlot::State::kInUse;
  pool->Drop(slot);
}

void PgPool::Connected(PgSlot* slot) {
  slot->connecting = false;
  slot->watched_fd = PQsocket(slot->conn);
  if (!home_->Watch(slot->watched_fd, &PgPool::OnIdleReadable, slot)) {
    slot->watched_fd = -1;
  }
#ifdef LIBPQ_HAS_PIPELINING
  // Only a watched connection: its reader is the worker's dispatch, which
  // serves every segment on it. A blocking worker runs one query at a time,
  // and so does a pipeline of 1, without pipeline mode: the path libpq 13
  // takes, which `pipeline = 1` keeps tested.
  slot->pipelined =
      pipeline_ > 1 && slot->watched_fd >= 0 && PQenterPipelineMode(slot->conn);
#endif
  if (failures_ > 0) {
    LogInfo("postgres_reconnected", "route={} dsn={} after_failures={}",
            LogQuote(route_), LogQuote(shown_dsn_), failures_);
  }
  failures_ = 0;
  retry_at_ = {};
}

void PgPool::ConnectFailed(PgSlot* slot, Clock::time_point now,
                           const std::string& error) {
  Drop(slot);
  last_error_ = error;
  const auto backoff = std::min<Clock::duration>(
      kFirstBackoff * (1 << std::min(failures_, 6)), kMaxBackoff);
  ++failures_;
  retry_at_ = now + backoff;
  LogWarn(
      "postgres_connect_failed",
      "route={} dsn={} failures={} retry_in_ms={} error={}", LogQuote(route_),
      LogQuote(shown_dsn_), failures_,
      std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count(),
      LogQuote(error));
}

int64_t PgPool::BackoffLeftMs(Clock::time_point now) const {
  if (now >= retry_at_) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(retry_at_ - now)
      .count();
}

bool PgPool::Enqueue(PgWaiter* waiter) {
  if (waiter->fd == -1) {
    waiter->fd = home_->NewWake();
    if (waiter->fd == -1) {
      LogNoResources("eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC)", strerror(errno));
      return false;
    }
  }
  waiter->handed = nullptr;
  waiter->queued = true;
  waiters_.push_back(waiter);
  return true;
}

void PgPool::LogNoResources(std::string_view call, std::string_view error) {
  LogWarn("postgres_no_resources", "route={} call={} error={}",
          LogQuote(route_), LogQuote(call), LogQuote(error));
}

void PgPool::Dequeue(PgWaiter* waiter) {
  if (waiter->queued) {
    // O(waiters): only a wait that ends unserved (its deadline) gets here.
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), waiter));
    waiter->queued = false;
  }
  if (waiter->fd != -1) {
    home_->FreeWake(waiter->fd);
    waiter->fd = -1;
  }
  if (PgSlot* slot = waiter->handed) {
    waiter->handed = nullptr;
    Release(slot);
  }
}

bool PgPool::WakeFirst(PgSlot* slot) {
  if (waiters_.empty()) return false;
  PgWaiter* waiter = waiters_.front();
  waiters_.pop_front();
  waiter->queued = false;
  waiter->handed = slot;
  home_->Signal(waiter->fd);
  return true;
}

}  // namespace gearbox::postgres
