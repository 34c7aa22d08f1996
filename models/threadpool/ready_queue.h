// threadpool's work source, where every worker takes its next connection
// (leader/follower, as in the ACE and Apache event designs):
//  - the queue: new connections the poller accepted and connections whose
//    turn ended with requests buffered, bounded: a full queue is the 503;
//  - the parked set: connections waiting for bytes, in one epoll set the
//    idle workers wait on together. When bytes arrive the kernel wakes one
//    of them, which serves the connection and, once it would wait again,
//    parks it itself (edge-triggered: no system call): no thread in between.
//    Only the seated workers (WorkerSeats, about one per core) wait there.
// One mutex guards both and the count of connections in workers, so a drain
// sees every connection in exactly one place.
//
// "queued" (the gauge, queue_max, the 503) counts the queue. A kept-alive
// connection whose next request arrives while every worker is busy waits in
// the kernel's ready list instead; it is never refused (its connection is
// already accepted, and bounded by max_connections), and `ready_waits()`
// counts the times a worker found such work waiting, the pool's growth
// signal beside the queue.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "daemon/metrics/worker_stats.h"
#include "models/model.h"
#include "models/threadpool/parked_set.h"
#include "models/threadpool/pooled_connection.h"
#include "models/threadpool/worker_seats.h"

namespace gearbox {

class ReadyQueue {
 public:
  // `gauges`: the acceptor slot, which carries queue depth and high-water.
  // `workers`: the most worker threads there may be, `seats` how many of
  // them wait for events at once.
  ReadyQueue(size_t capacity, WorkerStats& gauges, size_t workers, int seats)
      : capacity_(capacity), gauges_(gauges), seats_(seats, workers) {}
  ~ReadyQueue();

  // The epoll set and its wake-ups. `expiry_wake_fd`: an eventfd the
  // poller waits on, written when a connection parks with a deadline earlier
  // than the poller's next expiry pass.
  Status Init(int expiry_wake_fd);

  // Poller: queues a new connection. False when the queue is full (or
  // closed): the caller refuses it with 503.
  bool Push(PooledConnection* c);
  // Worker: a connection whose next request is buffered but whose turn is
  // over goes to the back, behind those waiting (bounded by the open
  // connections).
  void Requeue(PooledConnection* c);
  // Worker `worker` (0..workers-1): blocks until a connection is ready
  // (queued, or parked and now readable), or closed; gives up after
  // `idle_for` without work: null with *idle set (a thread may then retire;
  // ReleaseSeat() first). Null without *idle: closed.
  PooledConnection* Pop(size_t worker, std::chrono::microseconds idle_for,
                        bool* idle);
  // Worker: about to block (or to leave): a follower takes its seat.
  void ReleaseSeat(size_t worker) { seats_.Release(worker); }
  // Poller: seats held on one turn for longer than `after` go to followers.
  // True when the poller should look again within a millisecond.
  bool RetakeSeats(std::chrono::microseconds after);
  // Worker: done with what Pop() gave it. Park() parks it to wait for bytes;
  // kReady: bytes may have come while it was served, the worker keeps it
  // and reads; kFailed: the caller closes it. Done() when it was requeued,
  // Closed() when it was closed (before it is deleted).
  ParkedSet::Armed Park(PooledConnection* c);
  void Done();
  void Closed(PooledConnection* c);
  // Whoever holds `c`, before its fd is closed (ParkedSet::Unwatch: then the
  // client sees the close at once). Without the lock.
  void Unwatch(const PooledConnection* c) const { parked_.Unwatch(c); }

  // Poller: parks a connection no worker holds (drain, new deadline); one
  // with bytes waiting is queued for a worker. False: the caller closes it.
  bool ParkFromPoller(PooledConnection* c);
  // Poller: a connection it took out is about to be closed and deleted
  // (unwatched first).
  void Forget(PooledConnection* c);
  // Poller: the earliest parked deadline, and the connections past theirs.
  // `until`: when the poller next looks (a Park() with an earlier deadline
  // wakes it).
  Clock::time_point NextDeadline(Clock::time_point until);
  void TakeExpired(Clock::time_point now, std::vector<PooledConnection*>& out);
  // Poller, draining: the idle parked connections, taken out to be re-parked
  // with the drain's deadline (or closed).
  void TakeIdleParked(std::vector<PooledConnection*>& out);

  // Wakes every worker; Pop() returns null once the queue is empty.
  void Close();
  // Waits until nothing is queued, in a worker, or parked.
  bool WaitIdle(Deadline deadline);
  // After Close() and the workers' exit: whatever is left.
  std::deque<PooledConnection*> TakeQueued();
  void TakeParked(std::vector<PooledConnection*>& out);

  // For the turn and growth decisions (readable without the lock).
  const std::atomic<int>& queued() const { return queued_; }
  // Waiting on the epoll set, or asleep for a seat.
  int idle_workers() const {
    return waiters_.load(std::memory_order_relaxed) + seats_.followers();
  }
  uint64_t ready_waits() const {
    return ready_waits_.load(std::memory_order_relaxed);
  }

 private:
  void EnqueueLocked(PooledConnection* c);
  PooledConnection* PopQueuedLocked();
  PooledConnection* TakeEvent(uint64_t data, uint64_t now_us);
  int WaitEvent(uint64_t* data, int timeout_ms);
  void Wake(uint64_t n);
  ParkedSet::Armed ArmLocked(PooledConnection* c);
  void DoneLocked();
  void UpdateGauge();  // caller holds mu_
  bool IdleLocked() const {
    return queue_.empty() && active_ == 0 && parked_.size() == 0;
  }

  const size_t capacity_;
  WorkerStats& gauges_;
  int queue_wake_fd_ = -1;  // semaphore eventfd: one count per queued push
  int close_fd_ = -1;       // readable once closed, never read: wakes all
  int expiry_wake_fd_ = -1;
  std::mutex mu_;
  std::condition_variable idle_cv_;
  std::deque<PooledConnection*> queue_;
  ParkedSet parked_;
  Clock::time_point expiry_pass_ = Clock::time_point::max();
  int active_ = 0;
  std::atomic<bool> closed_{false};
  std::atomic<int> queued_{0};
  std::atomic<int> waiters_{0};  // in epoll_wait
  WorkerSeats seats_;
  std::atomic<uint64_t> ready_waits_{0};
};

}  // namespace gearbox
