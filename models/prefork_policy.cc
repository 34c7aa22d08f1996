#include "models/prefork_policy.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace gearbox {
namespace {

// How long a keep-alive connection must have been idle before it is given up
// for a waiting client. nginx reuses a cached upstream connection within
// microseconds under load; closing one it may be writing to turns a POST
// into a 502.
constexpr std::chrono::milliseconds kHandoffGrace{20};

ReadWait FromWait(bool ready, bool interrupted) {
  if (interrupted) return ReadWait::kInterrupted;
  return ready ? ReadWait::kReadable : ReadWait::kTimedOut;
}

}  // namespace

bool PreforkPolicy::Parking() const {
  return o_.park_heads_after.count() > 0 &&
         !(o_.draining && o_.draining->load(std::memory_order_relaxed));
}

// True when a listener has a connection waiting to be accepted (one poll()).
bool PreforkPolicy::ListenerPending() const {
  pollfd fds[8];
  size_t n = std::min<size_t>(o_.waiting_fds.size(), 8);
  for (size_t i = 0; i < n; ++i) fds[i] = {o_.waiting_fds[i], POLLIN, 0};
  return n > 0 && poll(fds, n, 0) > 0;
}

// True when another child is alive and holds no connection. O(workers) scan
// of the shared slots; workers <= 1024, and only when a client waits.
bool PreforkPolicy::FreeSibling() const {
  if (!o_.siblings) return false;
  for (size_t i = 0; i < o_.sibling_count; ++i) {
    if (i == o_.self_slot) continue;
    const WorkerStats& s = o_.siblings->Slot(i);
    if (s.pid.load(std::memory_order_relaxed) != 0 &&
        s.open_conns.load(std::memory_order_relaxed) == 0)
      return true;
  }
  return false;
}

bool PreforkPolicy::CloseAfterResponse() {
  // With a guard to hold it, the connection is not given up but parked once
  // idle (see WaitIdle): nothing to announce.
  if (Parking()) return false;
  return !o_.waiting_fds.empty() && ListenerPending() && !FreeSibling();
}

ReadWait PreforkPolicy::WaitReadable(BlockingConnection& c,
                                     const Interest& interest) {
  gave_way_to_handback_ = false;
  switch (c.conn.phase()) {
    case Phase::kIdle:
      return WaitIdle(c, interest.deadline);
    case Phase::kFresh:
    case Phase::kHead:
      return WaitHead(c, interest.deadline);
    default: {
      bool eintr = false;
      bool ready = WaitFor(c.fd, POLLIN, interest.deadline, &eintr);
      return FromWait(ready, eintr);
    }
  }
}

// A new client normally sends its head right after connecting; one that has
// not within the grace goes to the head guard, with the whole head due by the
// deadline it started with.
ReadWait PreforkPolicy::WaitHead(BlockingConnection& c,
                                 Clock::time_point deadline) {
  Clock::time_point until = deadline;
  const bool parking = Parking();
  if (parking) {
    until = std::min(deadline, c.conn.head_started() + o_.park_heads_after);
  }
  bool eintr = false;
  if (WaitFor(c.fd, POLLIN, until, &eintr)) {
    return eintr ? ReadWait::kInterrupted : ReadWait::kReadable;
  }
  if (parking && Clock::now() < deadline) return ReadWait::kPark;
  return ReadWait::kTimedOut;
}

// Holds the connection, but gives a keep-alive one up when another client
// waits. The grace is staggered by slot so that one waiting client makes one
// child (not all of them) give up its connection.
ReadWait PreforkPolicy::WaitIdle(BlockingConnection& c,
                                 Clock::time_point deadline) {
  pollfd fds[9];
  size_t n = 0;
  fds[n++] = {c.fd, POLLIN, 0};
  for (size_t i = 0; i < o_.waiting_fds.size() && n < 9; ++i)
    fds[n++] = {o_.waiting_fds[i], POLLIN, 0};
  // A parked connection stays open (the guard reads whatever the peer sends
  // next), so parking needs no grace; closing one does.
  const bool parking = Parking();
  const Clock::time_point handoff_after =
      parking ? Clock::now()
              : Clock::now() + kHandoffGrace +
                    std::chrono::milliseconds(
                        5 * std::min<size_t>(o_.self_slot, 16));
  for (;;) {
    int r = poll(fds, n, MillisUntil(deadline));
    if (r == 0) return ReadWait::kTimedOut;
    if (r < 0)
      return errno == EINTR ? ReadWait::kInterrupted : ReadWait::kError;
    if (fds[0].revents) return ReadWait::kReadable;
    bool waiting = false;   // this poll saw a client wait (no second poll)
    bool listener = false;  // ... on a listener, not (only) the hand-back
    for (size_t i = 1; i < n; ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      waiting = true;
      listener |= fds[i].fd != o_.handback_fd;
    }
    if (FreeSibling() || Clock::now() < handoff_after) {
      // A free child will take the newcomer, or this connection has been idle
      // only briefly (the peer may be about to reuse it: closing now would
      // race its next request). Keep it; look again shortly.
      pollfd self{c.fd, POLLIN, 0};
      if (poll(&self, 1, std::min(5, MillisUntil(deadline))) > 0)
        return ReadWait::kReadable;
    } else if (waiting) {
      // A new client is queued: hand this kept-alive connection to the guard,
      // which holds it until its next request (Apache's event MPM idea, in
      // processes), or without a guard close it.
      gave_way_to_handback_ = !listener;
      return parking ? ReadWait::kPark : ReadWait::kGiveUp;
    }
    if (Clock::now() >= deadline) return ReadWait::kTimedOut;
  }
}

}  // namespace gearbox
