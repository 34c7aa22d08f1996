// threadpool's hand-off between the poller and the worker threads: a bounded
// queue of ready connections plus a wake-up (memcached's notify_worker), and
// the way back for connections a worker parks. One mutex guards both
// directions, so a drain sees every connection in exactly one place.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "daemon/metrics/worker_stats.h"
#include "models/blocking_connection.h"
#include "models/model.h"

namespace gearbox {

class ReadyQueue {
 public:
  // `gauges`: the acceptor slot, which carries queue depth and high-water.
  ReadyQueue(size_t capacity, WorkerStats& gauges)
      : capacity_(capacity), gauges_(gauges) {}

  // Queues a connection found ready. False when the queue is full (or
  // closed): the caller refuses it with 503.
  bool Push(BlockingConnection* c);
  // A connection whose next request is buffered but whose turn is over goes
  // to the back, behind those waiting (bounded by the open connections).
  void Requeue(BlockingConnection* c);
  // Blocks until a connection is ready; null once closed and empty.
  BlockingConnection* Pop();
  // The same, but gives up after `idle_for` without work: null with *idle
  // set (a thread may then retire).
  BlockingConnection* Pop(std::chrono::microseconds idle_for, bool* idle);
  // The worker is done with what Pop() gave it: `parked` goes back to the
  // poller (TakeReturned), anything else was closed or requeued.
  void Done(BlockingConnection* parked);
  // Poller side: connections workers parked since the last call.
  void TakeReturned(std::vector<BlockingConnection*>& out);
  // Poller side: how many connections it holds that a drain must wait for.
  void SetHeld(size_t n);
  // Wakes every worker; Pop() returns null once the queue is empty.
  void Close();
  // Waits until nothing is queued, in a worker, on its way back, or held.
  bool WaitIdle(Deadline deadline);
  std::deque<BlockingConnection*> TakeQueued();

  // For the fairness check (readable without the lock).
  const std::atomic<int>& queued() const { return queued_; }
  const std::atomic<int>& idle_workers() const { return idle_workers_; }

 private:
  void UpdateGauge();  // caller holds mu_
  bool IdleLocked() const {
    return queue_.empty() && active_ == 0 && returned_.empty() && held_ == 0;
  }

  const size_t capacity_;
  WorkerStats& gauges_;
  std::mutex mu_;
  std::condition_variable ready_cv_;
  std::condition_variable idle_cv_;
  std::deque<BlockingConnection*> queue_;
  std::vector<BlockingConnection*> returned_;
  int active_ = 0;
  size_t held_ = 0;
  bool closed_ = false;
  std::atomic<int> queued_{0};
  std::atomic<int> idle_workers_{0};
};

}  // namespace gearbox
