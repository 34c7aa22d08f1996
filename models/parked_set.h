// threadpool's parked connections: the ones waiting for bytes (idle
// keep-alive, slow mid-request, fresh ones whose first request is not here),
// armed in one epoll set that every worker waits on (leader/follower). epoll
// reports a readable one to exactly one worker (EPOLLONESHOT), which takes it
// and serves it: no poller thread, queue hop or wake-up between the bytes and
// the worker. An expiry index ordered by deadline lets the poller thread time
// them out (408 or a silent close) without a worker.
//
// An event names a slot and the slot's generation, never a pointer: the
// poller may expire a connection while a worker holds an event for it, and
// the generation tells that worker the event is stale.
//
// Not thread-safe: ReadyQueue's mutex guards it, so a drain sees each
// connection in exactly one place.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/clock.h"
#include "models/blocking_connection.h"
#include "models/model.h"

namespace gearbox {

class ParkedSet {
 public:
  // Event data with this bit set is not a slot's (ReadyQueue's wake-ups).
  static constexpr uint64_t kTagBit = 1ull << 63;

  ParkedSet() = default;
  ~ParkedSet();
  ParkedSet(const ParkedSet&) = delete;
  ParkedSet& operator=(const ParkedSet&) = delete;

  Status Init();
  int epoll_fd() const { return epoll_fd_; }

  // Arms `c` until c->conn.deadline(): epoll reports it once, when readable
  // or hung up. False when epoll_ctl failed (the caller closes it).
  bool Arm(BlockingConnection* c);
  // The connection an event's data names, taken out of the set; null when
  // the event is stale (expired, or taken by a drain, since).
  BlockingConnection* Take(uint64_t data);
  // Takes out those whose deadline passed (the caller expires them).
  void TakeExpired(Clock::time_point now,
                   std::vector<BlockingConnection*>& out);
  // Takes out the idle ones (between requests) a drain has not given its
  // deadline yet.
  void TakeIdle(std::vector<BlockingConnection*>& out);
  void TakeAll(std::vector<BlockingConnection*>& out);

  // The earliest deadline; Clock::time_point::max() when empty.
  Clock::time_point NextDeadline() const;
  size_t size() const { return by_deadline_.size(); }

 private:
  struct Slot {
    BlockingConnection* c = nullptr;
    uint32_t generation = 0;
  };
  void Remove(BlockingConnection* c);

  int epoll_fd_ = -1;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::multimap<Clock::time_point, BlockingConnection*> by_deadline_;
};

}  // namespace gearbox
