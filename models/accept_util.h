// accept() shared by the models: non-blocking, close-on-exec, TCP_NODELAY, and
// a clear answer to descriptor exhaustion. On EMFILE/ENFILE the worker pauses
// accepting for kAcceptPause (as nginx does with its accept events) instead of
// spinning on a listener that stays readable; pending clients wait in the
// kernel backlog and are served once descriptors free up. AcceptGate holds
// that pause and the connection cap, once for every model.
#pragma once

#include <chrono>
#include <cstdint>

#include "config/ip_net.h"

namespace gearbox {

inline constexpr std::chrono::milliseconds kAcceptPause{100};

enum class AcceptError { kNone, kAgain, kExhausted, kOther };

// Returns the new connection's fd, or -1 with `error` set (kAgain: nothing to
// accept; kExhausted: out of descriptors, pause; kOther: logged, rate-limited).
// `peer` gets the client's end (kUnix for a unix-socket peer).
int AcceptConnection(int listen_fd, AcceptError& error, IpAddress& peer);

// Descriptor-exhaustion events so far (for tests and logs).
unsigned long EmfileEvents();

// Whether a worker may accept: below [limits] max_connections and not within
// the pause after descriptor exhaustion. One per accepting worker (a loop, a
// poller, a prefork child); the count of open connections the cap applies to
// is the model's, passed in. While the gate is closed the worker stops
// watching its listeners (the kernel backlog absorbs the burst) and asks
// again when a connection closes, at its next tick, or at paused_until().
class AcceptGate {
 public:
  using Clock = std::chrono::steady_clock;
  explicit AcceptGate(int64_t max_connections) : cap_(max_connections) {}
  // True when a connection may be taken at `now` with `open` held.
  bool Open(int64_t open, Clock::time_point now) const {
    return open < cap_ && now >= paused_until_;
  }
  // AcceptConnection(), when Open(open, now): the new fd (and its `peer`),
  // or -1 (nothing waiting, at the cap, an error logged, or out of
  // descriptors: then the gate stays closed for kAcceptPause).
  int Accept(int listen_fd, int64_t open, Clock::time_point now,
             IpAddress& peer);
  // The end of the current exhaustion pause (in the past when none).
  Clock::time_point paused_until() const { return paused_until_; }

 private:
  int64_t cap_;
  Clock::time_point paused_until_{};
};

}  // namespace gearbox
