// The prefork master's head guard: it holds connections whose request head
// is arriving slowly, so that slowloris clients cost a few hundred bytes in
// the master instead of a whole child each (what nginx's buffering does in
// front of a prefork server). A child parks such a connection here (fd plus
// the bytes it read, over a SOCK_SEQPACKET channel); the guard reads the rest
// of the head without blocking, under the deadline the child started, and
// hands the connection back to whichever child is free once the head is
// complete. Heads that miss header_timeout get 408; beyond max_connections
// parked, 503.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "daemon/listeners.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

class HeadGuard {
 public:
  // Creates the channels; nothing runs until Start(). Returns null with
  // `error` set when the channels cannot be made, or cannot carry a whole
  // request head (then prefork runs without a guard, as before).
  static std::unique_ptr<HeadGuard> Create(const Listeners& listeners,
                                           const LimitsConfig& limits,
                                           WorkerStats& stats,
                                           std::string* error);
  virtual ~HeadGuard() = default;

  // The children's ends: they send parked connections to park_fd() and take
  // connections with a complete head from unpark_fd().
  virtual int park_fd() const = 0;
  virtual int unpark_fd() const = 0;
  // The most bytes one parked connection may carry.
  virtual size_t capacity() const = 0;

  virtual bool Start(std::string* error) = 0;
  // No more children will be forked (the generation is draining): the master
  // drops its copy of the park end, so the guard sees the end of parking once
  // every child has closed its copy. It then finishes the connections it
  // holds (handing them back, or 408 at their deadline) and closes the unpark
  // end, which tells the draining children to exit.
  virtual void FinishAfterChildren() = 0;
  // Closes everything it holds now (the drain deadline passed).
  virtual void Abort() = 0;
  // Waits for the guard thread; call after FinishAfterChildren() or Abort().
  virtual void Join() = 0;
};

}  // namespace gearbox
