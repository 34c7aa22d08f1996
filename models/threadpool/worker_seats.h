// How many threadpool workers wait on the epoll set or run at once: about
// one per core, however many threads the pool has. A worker that is about
// to block (a handler's wait, a full socket) gives its seat to a sleeping
// follower first, so the pool still serves as many blocking requests at
// once as it has threads; fast requests are served by the seated few, each
// finding the next ready connection without sleeping, instead of waking a
// different thread of 64 for every request. A worker busy on one connection
// past a limit without saying it blocks (a handler blocking on its own, a
// long CPU burst) has its seat retaken, as Go's sysmon retakes a processor
// from a goroutine stuck in a system call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "daemon/clock.h"
#include "daemon/connection/connection.h"  // Clock

namespace gearbox {

class WorkerSeats {
 public:
  WorkerSeats(int seats, size_t workers);

  // Blocks until `worker` holds a seat: false when closed, or at `give_up`
  // (then *idle is set).
  bool Acquire(size_t worker, Clock::time_point give_up, bool* idle);
  // `worker` is about to block: a follower takes its seat. No-op without one.
  void Release(size_t worker);
  bool held(size_t worker) const {
    return seat_[worker].held.load(std::memory_order_relaxed);
  }
  // A turn on a connection starts (the retake clock) or ends.
  void Busy(size_t worker, uint64_t now_us) {
    seat_[worker].busy_since_us.store(now_us, std::memory_order_relaxed);
  }
  void Idle(size_t worker) { Busy(worker, 0); }
  // Seats of workers busy on one turn for longer than `after_us` go to
  // followers. True when followers wait and a seated worker is busy, not
  // past the limit yet: the caller looks again soon. An idle pool (seated
  // workers waiting for events) needs no look.
  bool Retake(uint64_t now_us, uint64_t after_us);
  int followers() const { return followers_.load(std::memory_order_relaxed); }
  void Close();

 private:
  struct Seat {
    std::atomic<bool> held{false};
    std::atomic<uint64_t> busy_since_us{0};
  };
  void Give();

  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
  bool closed_ = false;
  std::atomic<int> followers_{0};
  std::unique_ptr<Seat[]> seat_;
  const size_t workers_;
};

}  // namespace gearbox
