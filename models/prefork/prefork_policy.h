// What a prefork child does while its one connection waits for bytes: hold a
// kept-alive connection but give it up when another client waits and no
// sibling is free; park a slow head with the head guard.
#pragma once

#include <atomic>
#include <chrono>
#include <span>

#include "daemon/metrics/worker_stats.h"
#include "models/blocking_connection.h"
#include "models/prefork/prefork_held.h"

namespace gearbox {

// What one poll of an idle connection's watch saw besides its own bytes.
struct IdleEvents {
  int held = -1;          // the first held connection with a request
  bool waiting = false;   // a client waits on a listener or the hand-back
  bool listener = false;  // ... on a listener, not (only) the hand-back
};

class PreforkPolicy final : public BlockingPolicy {
 public:
  struct Options {
    // Listening fds and the guard's unpark channel: a client waiting on any
    // of them makes an idle keep-alive connection give way.
    std::span<const int> waiting_fds;
    // Which of them is the guard's unpark channel (-1: none).
    int handback_fd = -1;
    // The children's stats slots: an idle keep-alive connection is given up
    // only when no sibling is free to take the waiting client.
    const StatsRegion* siblings = nullptr;
    size_t sibling_count = 0;  // the first slots of `siblings` are children
    size_t self_slot = 0;
    // A request head still incomplete this long after it began (or a fresh
    // connection silent this long after accept) is parked with the head
    // guard. Zero: never.
    std::chrono::microseconds park_heads_after{0};
    const std::atomic<bool>* draining = nullptr;  // no parking once draining
    // The idle connections the child holds beside this one (null: none).
    // WaitIdle watches them too, and they go to the guard before the child
    // blocks (WillWait).
    HeldConnections* held = nullptr;
  };
  explicit PreforkPolicy(const Options& options) : o_(options) {}
  void set_waiting_fds(std::span<const int> fds) { o_.waiting_fds = fds; }
  void stop_parking() { o_.park_heads_after = {}; }

  // Asked before each response: if a client is already waiting and no
  // sibling is free, say "Connection: close" on this response rather than
  // drop the connection later while idle, when the peer (nginx) may be
  // sending the next request on it: a GET would be retried, a POST would
  // fail.
  bool CloseAfterResponse() override;
  // WaitIdle() polls the connection with the waiting fds: no read first.
  bool ReadFirstWhenIdle() const override { return false; }
  // The child is about to block: the connections it holds go to the guard,
  // where a free sibling can take their next request.
  void WillWait() override;
  // ... once a handler's wait has lasted kParkHeldAfter, and only when the
  // child holds some (an unneeded grace would split the wait in two polls).
  std::chrono::microseconds WillWaitAfter() const override;
  ReadWait WaitReadable(BlockingConnection& c,
                        const Interest& interest) override;
  // The last idle connection given up was for the guard's hand-back alone
  // (no new client waited on a listener).
  bool gave_way_to_handback() const { return gave_way_to_handback_; }
  // The held connection whose request made the last idle connection give way
  // (-1: none); the child serves it next, without another poll.
  int TakeReadyHeld() {
    int fd = ready_held_;
    ready_held_ = -1;
    return fd;
  }

 private:
  ReadWait WaitIdle(BlockingConnection& c, Clock::time_point deadline);
  ReadWait MakeWay(const IdleEvents& e, bool give_way, bool parking);
  ReadWait WaitHead(BlockingConnection& c, Clock::time_point deadline);
  bool ListenerPending() const;
  bool FreeSibling() const;
  bool Parking() const;
  // It holds idle connections the guard can take (Parking()).
  bool HoldsParkable() const;

  Options o_;
  bool gave_way_to_handback_ = false;
  int ready_held_ = -1;
  // Held connections and the guard's hand-backs take turns when both have a
  // request ready, so neither starves the other.
  bool held_turn_ = false;
};

}  // namespace gearbox
