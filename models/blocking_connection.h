// The blocking driver shared by `prefork` and `threadpool`: it runs the
// connection state machine with poll/recv/send, sleeping through handler
// waits, until the connection closes or the model's policy takes it back.
#pragma once

#include <poll.h>
#include <time.h>

#include <chrono>
#include <string_view>

#include "config/config.h"
#include "daemon/connection/connection.h"

namespace gearbox {

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
  ~BlockingConnection();  // closes fd if still open (uncounted)
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  int fd;
  Connection conn;
  Clock::time_point turn_started{};  // when the current worker took it
};

// What a blocking wait for bytes ended with.
enum class ReadWait {
  kReadable,     // read again
  kTimedOut,     // the interest's deadline passed
  kInterrupted,  // a signal: look at the state again (draining?)
  kPark,         // the model takes the connection back (it has no bytes)
  kGiveUp,       // close it for the model (prefork: a client waits)
  kError,
};

// Per-model behaviour the driver asks for; it never asks which model.
class BlockingPolicy {
 public:
  virtual ~BlockingPolicy() = default;
  // Bytes are about to be processed: true has the next response ask the peer
  // to close after it (Connection::set_close_after_response).
  virtual bool CloseAfterResponse() { return false; }
  // The connection wants bytes and the socket has none right now.
  virtual ReadWait WaitReadable(BlockingConnection& c,
                                const Interest& interest) = 0;
  // Others wait for a worker and this connection has had its turn: true hands
  // it back (parked when idle, re-queued when requests are buffered).
  virtual bool TurnOver(const BlockingConnection&) { return false; }
  // The worker is about to block (a handler's wait, a full socket): its place
  // may go to a worker that is free now.
  virtual void WillWait() {}
  // How long a handler's wait runs before WillWait(): zero gives the place
  // away at once; a short wait (a database answer) may end before.
  virtual std::chrono::microseconds WillWaitAfter() const { return {}; }
  // False: a connection idle again after a request of this turn (nothing
  // buffered) goes to WaitReadable() without the read that would find
  // nothing: the client rarely sends its next request before it has the
  // response (nginx never does), and the model's wait (poll, epoll) reports
  // bytes that came meanwhile.
  virtual bool ReadFirstWhenIdle() const { return true; }
  // The machine closes the connection; its fd is still open. What the model
  // registered the fd with lets go of it first (threadpool: its epoll set).
  virtual void WillClose(BlockingConnection&) {}
};

struct BlockingContext {
  ConnectionEnv env;  // router, stats slot, log, limits, draining, scratch
  Sleeper* sleeper = nullptr;
};

// kYield: requests are buffered but others are queued; put the connection at
// the back of the queue.
enum class ConnectionOutcome { kClosed, kParked, kYield };

// Serves `c` until it closes (the fd is closed and counted) or the policy
// takes it back. `read_first`: bytes may be waiting that nobody has read
// (threadpool: they came while it was parking); the policy may not take it
// back before one read.
ConnectionOutcome ServeBlocking(BlockingConnection& c,
                                const BlockingContext& ctx,
                                BlockingPolicy& policy,
                                bool read_first = false);

// Closes the fd and counts the reason the machine gave.
void CloseBlocking(BlockingConnection& c);

// Waits until `fd` is ready for `events` or the deadline passes. Returns false
// on timeout; true when ready, on error or hang-up (the next I/O call
// reports), and on EINTR when `eintr` is non-null (then *eintr is set).
bool WaitFor(int fd, short events, Clock::time_point deadline,
             bool* eintr = nullptr);
int MillisUntil(Clock::time_point deadline);
// CLOCK_MONOTONIC now + `d`: the absolute deadline a sleep waits until, so a
// wake-up that is not its end sleeps on to the same instant.
timespec MonotonicAfter(std::chrono::microseconds d);

}  // namespace gearbox
