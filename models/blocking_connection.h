// The blocking connection loop shared by `prefork` and `threadpool`:
// read -> codec -> handler steps (sleeping through waits) -> write, until the
// connection closes or (threadpool) goes idle and is handed back to the poller.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "config/config.h"
#include "daemon/buffer.h"
#include "daemon/codec.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"
#include "models/request_cycle.h"

namespace gearbox {

using Clock = std::chrono::steady_clock;

// How a blocking worker waits out a handler's Step::WaitFor. Injectable for
// tests and interruptible for a forced stop.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Returns false when the sleep was cut short because the model is aborting.
  virtual bool SleepFor(std::chrono::microseconds d) = 0;
};

// clock_nanosleep, resumed after signals: the request in hand is always
// finished.
class RealSleeper final : public Sleeper {
 public:
  bool SleepFor(std::chrono::microseconds d) override;
};

struct BlockingConnection {
  BlockingConnection(int fd, Protocol protocol, const LimitsConfig& limits);
  ~BlockingConnection();
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  int fd;
  std::unique_ptr<ServerCodec> codec;
  Buffer in;
  std::string out;
  Request request;
  Response response;
  Clock::time_point deadline{};  // of the current request phase (head or body)
  bool in_request = false;       // the deadline above is armed
  bool body_armed = false;       // the deadline is the body's (body_timeout)
  bool fresh = true;             // no request seen yet on this connection
  // When it was accepted or handed to a worker (for the queue-wait figure).
  uint64_t ready_us = 0;
  Clock::time_point turn_started{};  // when the current worker took it
  // Threadpool bookkeeping while parked in the poller: its entry in the
  // poller's expiry index, and whether the fd is already in the epoll set.
  std::multimap<Clock::time_point, BlockingConnection*>::iterator park_entry;
  bool parked = false;
  bool registered = false;
};

struct BlockingContext {
  RequestCycle cycle;  // router, stats slot, request log, worker index
  const LimitsConfig* limits = nullptr;
  const std::atomic<bool>* draining =
      nullptr;  // finish this request, then close
  Sleeper* sleeper = nullptr;
};

// What to do when a keep-alive connection has no request in progress.
struct IdlePolicy {
  // threadpool: return kParked instead of blocking whenever the socket has no
  // bytes yet (idle keep-alive, or a request head/body still arriving), so
  // neither idle nor slow clients pin a thread.
  bool park = false;
  // prefork: while idle, also watch these listening fds and close the idle
  // connection as soon as another client is waiting (one connection per child).
  std::span<const int> listeners;
  // prefork: the children's stats slots. An idle keep-alive connection is given
  // up only when no sibling is free to take the waiting client.
  const StatsRegion* siblings = nullptr;
  size_t self_slot = 0;
  // threadpool: connections waiting for a worker. While more wait than there
  // are idle workers, a connection's turn ends after kTurnSlice: it goes back
  // to the poller (or to the back of the queue, if its next request is already
  // buffered) so that waiting clients are not starved by a busy keep-alive one.
  const std::atomic<int>* queued = nullptr;
  const std::atomic<int>* idle_workers = nullptr;  // workers waiting for work
};

// kYield: the next request is already buffered but others are queued; put the
// connection at the back of the queue.
enum class ConnectionOutcome { kClosed, kParked, kYield };

// Serves requests on `conn` until it closes (the fd is closed and counted) or
// is parked. Blocking I/O with deadlines: header/body/send timeouts from
// `limits`.
ConnectionOutcome ServeBlocking(BlockingConnection& conn,
                                const BlockingContext& context,
                                const IdlePolicy& idle);

// Closes the fd and counts the reason.
void CloseBlocking(BlockingConnection& conn, WorkerStats& stats,
                   CloseReason reason);

// Best-effort non-blocking answer on a connection nobody will serve (503 on a
// full queue); then the caller closes it.
void SendAndForget(int fd, std::string_view bytes);

}  // namespace gearbox
