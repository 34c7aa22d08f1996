// threadpool's poller: owns accept() and the clock. It accepts new
// connections into the ReadyQueue (or refuses them with 503 when it is
// full), and times out parked ones (408 or a silent close, the connection
// state machine's decision) without a worker. It is not on a kept-alive
// request's path: workers take readable parked connections from the
// ReadyQueue's epoll set themselves.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "daemon/connection/connection.h"
#include "models/accept_util.h"
#include "models/model.h"
#include "models/threadpool/pooled_connection.h"
#include "models/threadpool/ready_queue.h"

namespace gearbox {

class ConnectionPoller {
 public:
  ConnectionPoller(const ModelContext& ctx, ReadyQueue& queue,
                   const std::atomic<bool>& draining);
  ~ConnectionPoller();

  // Creates epoll and its wake-up and starts watching the listeners.
  Status Init();
  void StartThread();
  // Any thread: look at the drain flag, or an earlier deadline, now.
  void Wake();
  // Blocks until the poller has stopped accepting and closed idle
  // connections (bounded: a second).
  void WaitDrainAcknowledged();
  // Stops the thread, then closes whatever is still parked.
  void Stop();
  int64_t open() const { return open_.load(std::memory_order_relaxed); }
  // A worker closed a connection.
  void Closed() { open_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  void Loop();
  void OnDrain();
  void AdjustListening();
  Status SetListening(bool on);
  void AcceptFrom(size_t index);
  void Dispatch(PooledConnection* c);
  // Acts on what the machine wants of a connection no worker holds (the
  // driver core, models/driver.h, with the poller's Port): sends what it
  // owes, then parks it or closes it.
  void Settle(PooledConnection* c);
  class Port;
  void Finish(PooledConnection* c);  // closes, counts, deletes
  int NextExpiryMs();
  void ExpireParked();
  void ShortenIdleParked();

  const ModelContext& ctx_;
  ReadyQueue& queue_;
  const std::atomic<bool>& draining_;
  ConnectionEnv env_;  // the acceptor slot: refusals, expiry, drain closes
  Request request_;
  Response response_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  bool listening_ = false;
  bool drain_seen_ = false;
  AcceptGate gate_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> acknowledged_{false};
  std::atomic<int64_t> open_{0};
  std::thread thread_;
  std::vector<PooledConnection*> taken_;  // scratch: expired, idle at drain
};

}  // namespace gearbox
