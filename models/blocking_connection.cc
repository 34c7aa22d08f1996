#include "models/blocking_connection.h"

#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "models/driver.h"

namespace gearbox {
namespace {

constexpr size_t kReadChunk = 16384;

// One non-blocking read into the machine. False: the socket had nothing.
// The machine's `now` is taken once the bytes are in: requests they complete
// start then (their service time and handler waits count from it).
bool ReadSome(BlockingConnection& c, BlockingPolicy& policy) {
  for (;;) {
    char* tail = c.conn.ReadSpace(kReadChunk);
    ssize_t n = recv(c.fd, tail, c.conn.ReadRoom(), MSG_DONTWAIT);
    if (n > 0) {
      c.conn.set_close_after_response(policy.CloseAfterResponse());
      c.conn.Commit(static_cast<size_t>(n), Clock::now());
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    c.conn.PeerClosed();
    return true;
  }
}

// The connection wants bytes: read, or wait as the policy says. `*got` tells
// whether the machine was handed bytes (or the peer's close).
// Returns true when the driver goes on, false when the policy took it.
bool Read(BlockingConnection& c, const Interest& interest,
          BlockingPolicy& policy, bool wait_first, bool* got) {
  *got = !wait_first && ReadSome(c, policy);
  if (*got) return true;
  switch (policy.WaitReadable(c, interest)) {
    case ReadWait::kReadable:
    case ReadWait::kInterrupted:
      return true;
    case ReadWait::kTimedOut:
      c.conn.DeadlinePassed(Clock::now());
      return true;
    case ReadWait::kPark:
      // It may wait long: keep only the room its bytes need (a slowloris
      // crowd cost 18 KB a connection with a read chunk each).
      c.conn.Trim();
      return false;
    case ReadWait::kGiveUp:
      c.conn.Abort(CloseReason::kServer);
      return true;
    case ReadWait::kError:
      c.conn.Abort(CloseReason::kError);
      return true;
  }
  return true;
}

// Polls until `until`, to the microsecond (poll() would round a short
// grace up to whole milliseconds).
int PollUntil(pollfd* fds, size_t n, Clock::time_point until) {
  const auto left = std::max<int64_t>(
      0,
      std::chrono::duration_cast<std::chrono::nanoseconds>(until - Clock::now())
          .count());
  const timespec ts{static_cast<time_t>(left / 1000000000),
                    static_cast<long>(left % 1000000000)};
  return ppoll(fds, n, &ts, nullptr);
}

// A handler waits on its fds: poll them with the client's socket, so a
// client that hangs up mid-wait cancels the exchange here too (no thread
// hand-off: the worker is the one waiting). False when `until`, before the
// wait's deadline, passed with nothing to tell the machine.
bool WaitHandlerFds(BlockingConnection& c, const Interest& i,
                    Clock::time_point until) {
  pollfd fds[1 + kMaxWaitFds];
  fds[0] = {c.fd, POLLRDHUP, 0};
  const size_t n = std::min(i.handler_fds.size(), kMaxWaitFds);
  for (size_t k = 0; k < n; ++k) {
    const FdWait& w = i.handler_fds[k];
    short events = 0;
    if (w.events & kFdReadable) events |= POLLIN;
    if (w.events & kFdWritable) events |= POLLOUT;
    fds[1 + k] = {w.fd, events, 0};
  }
  const int r = PollUntil(fds, 1 + n, std::min(until, i.deadline));
  const Clock::time_point now = Clock::now();
  if (r < 0) return true;  // EINTR: the driver looks at the state again
  if (r == 0) {
    if (until < i.deadline) return false;
    c.conn.DeadlinePassed(std::max(now, i.deadline));
    return true;
  }
  if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
    c.conn.PeerClosed();
    return true;
  }
  uint8_t ready[kMaxWaitFds] = {};
  for (size_t k = 0; k < n; ++k) {
    const short re = fds[1 + k].revents;
    if (re & POLLIN) ready[k] |= kFdReadable;
    if (re & POLLOUT) ready[k] |= kFdWritable;
    // An error or hang-up wakes every event the wait asked for, as epoll
    // does under the async model: a failed connect() is WRITABLE | ERROR.
    if (re & (POLLERR | POLLHUP))
      ready[k] |= kFdError | i.handler_fds[k].events;
    if (re & POLLNVAL) ready[k] |= kFdError;
  }
  c.conn.HandlerFdsReady(std::span<const uint8_t>(ready, n), now);
  return true;
}

// A handler's wait, until `until` at the latest. False when `until`, before
// the wait's deadline, passed with nothing to tell the machine. `sleeper` is
// used (and must be set) only for a timer wait.
bool WaitHandler(BlockingConnection& c, const Interest& i, Sleeper* sleeper,
                 Clock::time_point until, Clock::time_point now) {
  if (!i.handler_fds.empty()) return WaitHandlerFds(c, i, until);
  const Clock::time_point end = std::min(until, i.deadline);
  if (!sleeper->SleepFor(
          std::chrono::duration_cast<std::chrono::microseconds>(end - now))) {
    c.conn.CutShort();
    return true;
  }
  if (end < i.deadline) return false;
  c.conn.DeadlinePassed(std::max(Clock::now(), i.deadline));
  return true;
}

// The blocking models' primitives for the driver core (models/driver.h):
// each wait blocks the worker and tells the machine what happened, so the
// core looks again at once; the policy may take the connection back instead.
class BlockingPort {
 public:
  // `sleeper` is used only when a handler waits on a timer.
  BlockingPort(BlockingConnection& c, Sleeper* sleeper, BlockingPolicy& policy,
               bool read_first)
      : c_(c), sleeper_(sleeper), policy_(policy), read_first_(read_first) {}

  ConnectionOutcome outcome() const { return outcome_; }
  Clock::time_point Now() { return Clock::now(); }
  int fd() const { return c_.fd; }
  bool MayProcess() {
    if (policy_.TurnOver(c_)) {
      outcome_ = ConnectionOutcome::kYield;
      return false;
    }
    c_.conn.set_close_after_response(policy_.CloseAfterResponse());
    processed_ = true;
    return true;
  }
  bool AwaitRead(const Interest& i, Clock::time_point) {
    if (!read_first_ && c_.conn.phase() == Phase::kIdle &&
        policy_.TurnOver(c_)) {
      c_.conn.Trim();
      outcome_ = ConnectionOutcome::kParked;  // its turn comes again
      return false;
    }
    read_first_ = false;
    // Not at the start of a turn: a connection the model just found
    // readable is read first.
    const bool wait_first = processed_ && c_.conn.phase() == Phase::kIdle &&
                            !policy_.ReadFirstWhenIdle();
    // Bytes read are processed at once (Commit): a request answered from
    // them counts as processed, and the next read waits first.
    if (Read(c_, i, policy_, wait_first, &processed_)) return true;
    outcome_ = ConnectionOutcome::kParked;
    return false;
  }
  bool AwaitWrite(const Interest& i, Clock::time_point) {
    policy_.WillWait();
    if (!WaitFor(c_.fd, POLLOUT, i.deadline))
      c_.conn.DeadlinePassed(Clock::now());
    return true;
  }
  // A wait the policy deems short (its WillWaitAfter) ends without
  // WillWait: giving the worker's place away costs more than it saves.
  bool AwaitHandler(const Interest& i, Clock::time_point now) {
    const auto grace = policy_.WillWaitAfter();
    if (grace.count() > 0) {
      if (WaitHandler(c_, i, sleeper_, now + grace, now)) return true;
      now = Clock::now();
    }
    policy_.WillWait();
    WaitHandler(c_, i, sleeper_, i.deadline, now);
    return true;
  }
  void Close() {
    policy_.WillClose(c_);
    CloseBlocking(c_);
    outcome_ = ConnectionOutcome::kClosed;
  }

 private:
  BlockingConnection& c_;
  Sleeper* sleeper_;
  BlockingPolicy& policy_;
  bool read_first_;
  // A request was processed since the last wait for bytes: the next read,
  // once idle, may wait first (ReadFirstWhenIdle).
  bool processed_ = false;
  ConnectionOutcome outcome_ = ConnectionOutcome::kClosed;
};

}  // namespace

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left + 1, 1 << 30));
}

bool WaitFor(int fd, short events, Clock::time_point deadline, bool* eintr) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = poll(&p, 1, MillisUntil(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;
    if (eintr) {
      *eintr = true;
      return true;
    }
  }
}

timespec MonotonicAfter(std::chrono::microseconds d) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  // An end that has passed is now: a negative tv_nsec is no timespec (futex
  // and clock_nanosleep refuse it with EINVAL).
  const int64_t ns = ts.tv_nsec + std::max<int64_t>(d.count(), 0) * 1000;
  ts.tv_sec += ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  return ts;
}

bool RealSleeper::SleepFor(std::chrono::microseconds d) {
  const timespec ts = MonotonicAfter(d);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
         EINTR) {
  }
  return true;
}

BlockingConnection::BlockingConnection(int fd, Protocol protocol,
                                       const LimitsConfig& limits)
    : fd(fd), conn(protocol, limits) {}

BlockingConnection::~BlockingConnection() {
  if (fd >= 0) close(fd);
}

void CloseBlocking(BlockingConnection& c) {
  if (c.fd < 0) return;
  c.conn.CountClosed();  // first: a client that sees the close may ask /status
  close(c.fd);
  c.fd = -1;
}

ConnectionOutcome ServeBlocking(BlockingConnection& c,
                                const BlockingContext& ctx,
                                BlockingPolicy& policy, bool read_first) {
  c.conn.Attach(&ctx.env);
  // Bytes it brought (handed over, or parked mid-request) are parsed first.
  if (c.conn.has_input()) {
    c.conn.set_close_after_response(policy.CloseAfterResponse());
    c.conn.Process(Clock::now());
  }
  BlockingPort port(c, ctx.sleeper, policy, read_first);
  Drive(port, c.conn);
  return port.outcome();
}

}  // namespace gearbox
