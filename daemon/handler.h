// The handler seam: a handler says what it needs next; the model decides how to
// wait. A handler never learns which model runs it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>

#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox {

// One file descriptor a handler waits on (a backend socket, a timerfd).
struct FdWait {
  int fd = -1;
  uint8_t events = 0;  // kFdReadable | kFdWritable: what to wait for
  // In a Wake: what happened. An error or hang-up sets kFdError plus the
  // events asked for, under every model (a failed connect(): writable too).
  uint8_t ready = 0;
};
inline constexpr uint8_t kFdReadable = 1;
inline constexpr uint8_t kFdWritable = 2;
inline constexpr uint8_t kFdError = 4;
// Most fds one wait names: inline, so a Step never allocates.
inline constexpr size_t kMaxWaitFds = 4;

// What an in-flight exchange needs next (Redis's aeTimeProc returning the next
// delay, nginx's NGX_AGAIN, MariaDB's MYSQL_WAIT_READ): done, a timer, or
// readiness of some fds with a deadline. Every kind works under every model:
// blocking workers poll() (the client's socket too, so a hang-up is noticed),
// the async model registers events on the connection's loop.
struct Step {
  enum class Kind : uint8_t { kDone, kTimer, kFds };
  Kind kind = Kind::kDone;
  // kTimer: the delay. kFds: how long to wait at most (then Wake::kDeadline).
  std::chrono::microseconds timeout{0};
  uint8_t nfds = 0;
  std::array<FdWait, kMaxWaitFds> fds{};

  static Step Done() { return Step{}; }
  static Step WaitFor(std::chrono::microseconds d) {
    Step s;
    s.kind = Kind::kTimer;
    s.timeout = d;
    return s;
  }
  // At most kMaxWaitFds entries (more is a handler bug: aborts).
  static Step WaitFds(std::initializer_list<FdWait> fds,
                      std::chrono::microseconds timeout);
  bool done() const { return kind == Kind::kDone; }
  std::span<const FdWait> wait_fds() const { return {fds.data(), nfds}; }
};

// Why Resume() is called (again).
struct Wake {
  enum class Why : uint8_t {
    kStart,     // the first call, right after Start()
    kTimer,     // a Step::WaitFor delay has passed
    kFdsReady,  // at least one of the Step's fds is ready: see fds[i].ready
    kDeadline,  // a Step::WaitFds timeout passed with none ready
  };
  Why why = Why::kStart;
  uint8_t nfds = 0;
  std::array<FdWait, kMaxWaitFds> fds{};  // the Step's fds, `ready` filled in

  bool ready(size_t i, uint8_t what) const {
    return i < nfds && (fds[i].ready & what) != 0;
  }
};

// One in-flight request, owned by its connection. Resume() runs on the
// worker that started it (a prefork child, a threadpool thread, an async
// loop), never on two threads at once. Destroying an exchange before it is
// done cancels it: the connection closed, or its deadline passed. Its waits
// are removed before that, so a destructor may close the fds it waited on.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // Called first right after Start() (Wake::kStart), then again after each
  // wait with what ended it. Fills `response` before returning Done(). Must
  // not block: a long Resume() delays every connection of an async loop.
  virtual Step Resume(const Wake& wake, Response& response) = 0;
};

// The threading contract. Every worker (a prefork child, a threadpool
// thread, an async loop) builds its own instance of every handler, on its
// own thread (a prefork child after fork), from the generation's RouteSet
// (daemon/router.h). So:
//  - An instance is only ever called by the worker that made it, one call at
//    a time: its members need no locks, and it may own things that must not
//    be shared across threads or fork (a pool of backend connections).
//  - Under async one instance serves many exchanges at once, interleaved at
//    their waits; under prefork and threadpool one at a time. A handler must
//    not depend on either.
//  - What instances share (the route's params, ServerInfo::stats) is
//    read-only, or atomic as the stats region is.
//  - The instance is destroyed on its worker's thread when the worker stops
//    cleanly, after every exchange it started has ended.
class Handler {
 public:
  virtual ~Handler() = default;
  // Starts an exchange. `request` is valid only during this call: copy what
  // later Resume() calls need. Must not block.
  virtual std::unique_ptr<Exchange> Start(const Request& request) = 0;
};

// An exchange that is complete at its first Resume(): most handlers.
template <typename Fn>
class ImmediateExchange final : public Exchange {
 public:
  explicit ImmediateExchange(Fn fn) : fn_(std::move(fn)) {}
  Step Resume(const Wake&, Response& response) override {
    fn_(response);
    return Step::Done();
  }

 private:
  Fn fn_;
};

template <typename Fn>
std::unique_ptr<Exchange> Immediately(Fn fn) {
  return std::make_unique<ImmediateExchange<Fn>>(std::move(fn));
}

}  // namespace gearbox
