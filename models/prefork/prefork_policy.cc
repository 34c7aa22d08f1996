#include "models/prefork/prefork_policy.h"

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

// How long a handler's wait runs before the held connections go to the guard.
// Parking one and taking it back costs two SCM_RIGHTS messages, an
// epoll_ctl, a close and a wake of the guard and of a sibling: a request on
// a held connection may wait this long behind a short wait (a point lookup)
// rather than pay that for every request.
constexpr std::chrono::microseconds kParkHeldAfter{1000};

// The most held connections WaitIdle polls beside its own (HeldConnections
// holds at most kHeldPerChild + 1).
constexpr size_t kMaxHeldPolled = 32;

// The most waiting fds (listeners and the hand-back) polled.
constexpr size_t kMaxWaitingPolled = 8;

ReadWait FromWait(bool ready, bool interrupted) {
  if (interrupted) return ReadWait::kInterrupted;
  return ready ? ReadWait::kReadable : ReadWait::kTimedOut;
}

// What WaitIdle polls: [this connection, the held ones, the waiting fds].
struct IdlePollSet {
  pollfd fds[1 + kMaxHeldPolled + kMaxWaitingPolled];
  size_t n = 0;
  size_t first_waiting = 0;  // fds[1, first_waiting) are the held ones
};

IdlePollSet IdlePollSetFor(int fd, const PreforkPolicy::Options& o) {
  IdlePollSet set;
  set.fds[set.n++] = {fd, POLLIN, 0};
  if (o.held) {
    for (int held : o.held->fds())
      if (set.n < 1 + kMaxHeldPolled) set.fds[set.n++] = {held, POLLIN, 0};
  }
  set.first_waiting = set.n;
  for (size_t i = 0; i < o.waiting_fds.size() && i < kMaxWaitingPolled; ++i)
    set.fds[set.n++] = {o.waiting_fds[i], POLLIN, 0};
  return set;
}

// What one poll of an IdlePollSet saw besides this connection's bytes.
IdleEvents ReadIdleEvents(const IdlePollSet& set, int handback_fd) {
  IdleEvents e;
  for (size_t i = 1; i < set.first_waiting && e.held < 0; ++i)
    if (set.fds[i].revents) e.held = set.fds[i].fd;
  for (size_t i = set.first_waiting; i < set.n; ++i) {
    if (!(set.fds[i].revents & POLLIN)) continue;
    e.waiting = true;
    e.listener |= set.fds[i].fd != handback_fd;
  }
  return e;
}

// When an idle connection may be given up for a waiting client. A parked
// connection stays open (the guard reads whatever the peer sends next), so
// parking needs no grace; closing one does. The grace is staggered by slot so
// that one waiting client makes one child (not all of them) give up its
// connection.
Clock::time_point HandoffAfter(const PreforkPolicy::Options& o, bool parking) {
  if (parking) return Clock::now();
  return Clock::now() + kHandoffGrace +
         std::chrono::milliseconds(5 * std::min<size_t>(o.self_slot, 16));
}

// Looks again shortly at this connection and the held ones (the waiting fds
// stay readable until a sibling takes the client): true when this one has
// bytes.
bool OwnReadableSoon(IdlePollSet& set, Clock::time_point until) {
  return poll(set.fds, set.first_waiting, std::min(5, MillisUntil(until))) >
             0 &&
         set.fds[0].revents;
}

}  // namespace

bool PreforkPolicy::Parking() const {
  return o_.park_heads_after.count() > 0 &&
         !(o_.draining && o_.draining->load(std::memory_order_relaxed));
}

bool PreforkPolicy::HoldsParkable() const {
  return o_.held && !o_.held->empty() && Parking();
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

void PreforkPolicy::WillWait() {
  if (HoldsParkable()) o_.held->ParkAll();
}

// While a client waits (a listener has one queued, or the guard's hand-back
// channel a connection with a request), the held connections go to the guard
// at once: its queue serves them and the waiting ones in turn. Otherwise a
// child's held connections wait out a short wait here.
std::chrono::microseconds PreforkPolicy::WillWaitAfter() const {
  return HoldsParkable() && !ListenerPending() ? kParkHeldAfter
                                               : std::chrono::microseconds(0);
}

// Holds the connection, but gives a keep-alive one up when another client
// waits, or when one of the connections the child holds has a request.
ReadWait PreforkPolicy::WaitIdle(BlockingConnection& c,
                                 Clock::time_point deadline) {
  IdlePollSet set = IdlePollSetFor(c.fd, o_);
  const bool parking = Parking();
  const Clock::time_point handoff_after = HandoffAfter(o_, parking);
  for (;;) {
    // A held connection that times out makes this one give way too: the
    // child's loop expires it.
    const Clock::time_point until =
        o_.held ? std::min(deadline, o_.held->earliest()) : deadline;
    int r = poll(set.fds, set.n, MillisUntil(until));
    if (r < 0)
      return errno == EINTR ? ReadWait::kInterrupted : ReadWait::kError;
    if (r == 0) {
      // Its own deadline first: an expired held connection served by the
      // child's loop must not give way to another expired one.
      if (Clock::now() >= deadline) return ReadWait::kTimedOut;
      return ReadWait::kPark;
    }
    if (set.fds[0].revents) return ReadWait::kReadable;
    const IdleEvents e = ReadIdleEvents(set, o_.handback_fd);
    // A free child will take the newcomer, or this connection has been idle
    // only briefly (the peer may be about to reuse it: closing now would race
    // its next request): keep it.
    const bool give_way =
        e.waiting && !FreeSibling() && Clock::now() >= handoff_after;
    if (e.held >= 0 || give_way) return MakeWay(e, give_way, parking);
    if (OwnReadableSoon(set, until)) return ReadWait::kReadable;
    if (Clock::now() >= deadline) return ReadWait::kTimedOut;
  }
}

// Either a held connection has a request or a new client is queued: this
// idle connection makes way for one of them, in turns.
ReadWait PreforkPolicy::MakeWay(const IdleEvents& e, bool give_way,
                                bool parking) {
  if (e.held >= 0 && (held_turn_ || !give_way)) {
    // The child serves the held connection next; this one is held.
    ready_held_ = e.held;
    held_turn_ = false;
    return ReadWait::kPark;
  }
  // A new client is queued: hold this kept-alive connection (the child, or
  // the guard, which holds it until its next request: Apache's event MPM
  // idea, in processes), or without a guard close it.
  held_turn_ = true;
  gave_way_to_handback_ = !e.listener;
  return parking ? ReadWait::kPark : ReadWait::kGiveUp;
}

}  // namespace gearbox
