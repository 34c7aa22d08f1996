// The idle kept-alive connections a prefork child holds beside the one it
// serves. Under load (a client waits and no sibling is free), giving every
// idle connection to the head guard and taking the next ready one back would
// cost two SCM_RIGHTS messages, two closes and two epoll_ctl per request
// between the processes. Holding a few itself, polled with its listeners, the
// child answers the next request on any of them with one poll, as an event
// loop would. The guard still takes what does not fit, and every held
// connection goes to it when the child blocks (on a full socket, at once; in
// a handler's wait, at once while other clients wait, else once the wait has
// lasted longer than a fast request: PreforkPolicy::WillWaitAfter), drains,
// retires or recycles, so a request never waits behind a busy child while a
// sibling is free for longer than a fast request takes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/blocking_connection.h"

namespace gearbox {

// Sends `c` (fd, progress, the codec's record and the bytes after it) to the
// head guard's park channel without blocking and closes the child's copy.
// False when there is no guard (-1), the message would exceed `capacity`, or
// the channel is full: the caller still has the connection.
bool ParkWithGuard(int park_fd, size_t capacity, BlockingConnection& c,
                   uint32_t listener);

class HeldConnections {
 public:
  struct Held {
    std::unique_ptr<BlockingConnection> c;
    uint32_t listener = 0;
    Clock::time_point deadline{};  // its idle timeout (or the drain's linger)
  };

  // At most `capacity` connections are held for a waiting client; one more
  // may be held for a moment while the child swaps to a ready one.
  // `gauge` (may be null) follows size(): the worker's /status count of the
  // connections it holds beside the one in hand.
  HeldConnections(size_t capacity, std::atomic<uint64_t>* gauge);

  size_t size() const { return held_.size(); }
  bool empty() const { return held_.empty(); }
  bool has_room() const { return held_.size() < capacity_; }
  // The held fds, in holding order (for poll).
  std::span<const int> fds() const { return fds_; }
  // The earliest deadline, or time_point::max() when none is held.
  Clock::time_point earliest() const { return earliest_; }

  // Where ParkAll sends them (-1: nowhere, e.g. once draining).
  void set_guard(int park_fd, size_t capacity) {
    park_fd_ = park_fd;
    park_capacity_ = capacity;
  }

  // Holds an idle connection (no bytes, no request in progress); its deadline
  // is what the state machine says now.
  void Hold(std::unique_ptr<BlockingConnection> c, uint32_t listener,
            Clock::time_point now);
  // Removes the connection on `fd` (an empty Held when it is not held).
  Held Take(int fd);
  // Removes one connection whose deadline has passed (empty when none).
  Held TakeExpired(Clock::time_point now);
  // Asks each held connection for its deadline again (the drain shortens it).
  void Refresh(Clock::time_point now);
  // Gives the connection held longest (the least recently served: connections
  // are held again at the back) to the guard, making room for one a client
  // is using. False when the guard cannot take it.
  bool ParkOldest();
  // Gives every held connection to the guard; what the channel cannot take
  // stays held. Returns how many went.
  size_t ParkAll();

 private:
  Held RemoveAt(size_t i);
  void UpdateEarliest();

  size_t capacity_;
  std::vector<Held> held_;
  std::vector<int> fds_;  // fds_[i] is held_[i].c->fd
  Clock::time_point earliest_ = Clock::time_point::max();
  std::atomic<uint64_t>* gauge_;
  int park_fd_ = -1;
  size_t park_capacity_ = 0;
};

}  // namespace gearbox
