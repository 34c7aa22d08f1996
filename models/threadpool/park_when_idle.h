// threadpool's policy for the blocking driver (models/blocking_connection.h):
// a worker never blocks waiting for a client's bytes, epoll holds the
// connection until they come; it gives a connection back once others wait,
// and takes the socket out of the epoll set before it closes it.
#pragma once

#include <chrono>
#include <cstddef>

#include "models/blocking_connection.h"
#include "models/threadpool/ready_queue.h"

namespace gearbox {

// How long a connection may keep its worker while others queue. A slice
// rather than one request per turn: handing every request back to the poller
// cost up to 4x the throughput of fast requests.
inline constexpr std::chrono::milliseconds kTurnSlice{10};

// For worker `worker` of `queue`; the connections it serves are
// PooledConnections.
class ParkWhenIdle final : public BlockingPolicy {
 public:
  ParkWhenIdle(ReadyQueue& queue, size_t worker)
      : queue_(queue), worker_(worker) {}
  ReadWait WaitReadable(BlockingConnection&, const Interest&) override {
    return ReadWait::kPark;
  }
  // Its turn is over once it has had the worker for kTurnSlice and more
  // connections are queued than there are idle workers, or no worker is
  // idle (parked connections may be readable: epoll does not say).
  bool TurnOver(const BlockingConnection& c) override;
  // A handler's wait or a full socket: another worker takes its seat.
  void WillWait() override { queue_.ReleaseSeat(worker_); }
  // After a response the client has rarely sent its next request yet (nginx
  // and most clients wait for the response): a read would find nothing.
  bool ReadFirstWhenIdle() const override { return false; }
  // Out of the epoll set first (ParkedSet::Unwatch), or the client may not
  // see the close until another worker wakes.
  void WillClose(BlockingConnection& c) override;

 private:
  ReadyQueue& queue_;
  const size_t worker_;
};

}  // namespace gearbox
