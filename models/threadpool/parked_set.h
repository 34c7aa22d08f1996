// threadpool's parked connections: the ones waiting for bytes (idle
// keep-alive, slow mid-request, fresh ones whose first request is not here),
// in one epoll set that every worker waits on (leader/follower). epoll
// reports a readable one to one worker, which takes it and serves it: no
// poller thread, queue hop or wake-up between the bytes and the worker. An
// expiry index ordered by deadline lets the poller thread time them out (408
// or a silent close) without a worker.
//
// Edge-triggered, added once: parking again costs no system call (an
// EPOLLONESHOT re-arm would be one epoll_ctl per request, under the queue's
// lock).
// An edge names its connection's slot; when it comes while the connection is
// not parked (a worker serves it, it is queued, the poller holds it), the
// slot remembers it, and the next Arm() says the connection is ready instead
// of parking it: bytes that came while nobody waited for them are read.
//
// An event names a slot and the slot's generation, never a pointer: the
// poller may close a connection while a worker holds an event for it, and
// the generation tells that worker the event is stale.
//
// A connection leaves the set before its fd is closed (Unwatch), although
// closing would take it out: a worker waking in epoll_wait holds each ready
// socket while it polls it, and when the fd is closed at that moment the
// socket's last reference goes with that worker, whose release runs only when
// its epoll_wait returns. Finding nothing to report, it sleeps on, and the
// client sees no FIN, its answer sent, until the next event wakes that worker.
// Taking it out waits for such a poll (epoll's own lock), so the close is the
// last reference: one epoll_ctl per connection that was ever parked.
//
// Not thread-safe: ReadyQueue's mutex guards it, so a drain sees each
// connection in exactly one place (Unwatch, which touches only the kernel's
// set, is the exception).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/clock.h"
#include "models/model.h"
#include "models/threadpool/pooled_connection.h"

namespace gearbox {

class ParkedSet {
 public:
  // Event data with this bit set is not a slot's (ReadyQueue's wake-ups).
  static constexpr uint64_t kTagBit = 1ull << 63;

  enum class Armed {
    kParked,  // waits for bytes until c->conn.deadline()
    kReady,   // bytes may have come since it was last read: serve it
    kFailed,  // epoll_ctl failed (the caller closes it)
  };

  ParkedSet() = default;
  ~ParkedSet();
  ParkedSet(const ParkedSet&) = delete;
  ParkedSet& operator=(const ParkedSet&) = delete;

  Status Init();
  int epoll_fd() const { return epoll_fd_; }

  // Parks `c` until c->conn.deadline(): epoll reports it when bytes or a
  // hang-up come. Its first park adds its fd to the set.
  Armed Arm(PooledConnection* c);
  // The connection an event's data names, taken out of the set; null when
  // it is not parked (remembered for its next Arm()) or the event is stale.
  PooledConnection* Take(uint64_t data);
  // Before `c`'s fd is closed: out of the epoll set, so the close is the
  // socket's last reference. Any thread holding `c`; no lock needed.
  void Unwatch(const PooledConnection* c) const;
  // Before `c` is deleted (closed or not): its slot is free, its events
  // stale.
  void Forget(PooledConnection* c);
  // Takes out those whose deadline passed (the caller expires them).
  void TakeExpired(Clock::time_point now, std::vector<PooledConnection*>& out);
  // Takes out the idle ones (between requests) a drain has not given its
  // deadline yet.
  void TakeIdle(std::vector<PooledConnection*>& out);
  void TakeAll(std::vector<PooledConnection*>& out);

  // The earliest deadline; Clock::time_point::max() when empty.
  Clock::time_point NextDeadline() const;
  size_t size() const { return by_deadline_.size(); }

 private:
  struct Slot {
    PooledConnection* c = nullptr;  // while its fd is in the set
    uint32_t generation = 1;        // event data is never 0
    bool parked = false;
    bool edge = false;  // an event came while it was not parked
  };
  bool Register(PooledConnection* c);
  void Remove(PooledConnection* c);

  int epoll_fd_ = -1;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  PooledConnection::ParkIndex by_deadline_;
};

}  // namespace gearbox
