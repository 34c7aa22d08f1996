// The prefork head guard: a process of its own, next to the children, that
// holds connections whose request head is arriving slowly, so that slowloris
// clients cost about 5 KiB each instead of a whole child (what nginx's
// buffering does in front of a prefork server). A child parks such a
// connection with it (fd plus the bytes read, over a SOCK_SEQPACKET channel);
// the guard reads the rest of the head without blocking, under the deadline
// the child started, and hands the connection back to whichever child is free
// once the head is complete. Heads that miss header_timeout get 408; beyond
// max_connections held (or what RLIMIT_NOFILE leaves room for), 503.
//
// A process, not a thread of the master: the master forks children at any
// time (respawns), and a fork while another thread holds a lock (the
// allocator's, the logger's) leaves the child deadlocked.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "daemon/listeners.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

// The guard process's name (comm), as `ps -o comm` shows it.
inline constexpr char kHeadGuardProcessName[] = "gearboxd-guard";

class HeadGuard {
 public:
  // Creates the two channels (owned by the master, so that a guard or child
  // that dies can be replaced). Returns null with `error` set when they cannot
  // be made or cannot carry a whole request head (prefork then runs without a
  // guard: children keep slow heads themselves).
  static std::unique_ptr<HeadGuard> Create(const Listeners& listeners,
                                           const LimitsConfig& limits,
                                           std::string* error);
  ~HeadGuard();
  HeadGuard(const HeadGuard&) = delete;
  HeadGuard& operator=(const HeadGuard&) = delete;

  // The children's ends: they send parked connections to park_fd() and take
  // connections with a complete head from unpark_fd().
  int park_fd() const { return park_[1]; }
  int unpark_fd() const { return unpark_[0]; }
  // The most bytes one parked connection may carry.
  size_t capacity() const { return capacity_; }

  // Forks the guard process, which counts into `stats`. Returns its pid, or
  // -1 with errno.
  pid_t Fork(WorkerStats& stats);

  // No guard or child will be forked again (the generation is draining): the
  // master drops its copies of every channel end. The guard then sees the end
  // of parking once every child has closed its park end, finishes the heads it
  // holds (hands them back, or 408 at their deadline), closes the unpark end
  // (which is what lets draining children exit) and exits.
  void CloseForDrain();

 private:
  HeadGuard(const Listeners& listeners, const LimitsConfig& limits)
      : listeners_(listeners), limits_(limits) {}

  const Listeners& listeners_;
  const LimitsConfig limits_;
  int park_[2] = {-1, -1};    // [0] the guard receives, [1] children send
  int unpark_[2] = {-1, -1};  // [0] children receive, [1] the guard sends
  size_t capacity_ = 0;
};

}  // namespace gearbox
