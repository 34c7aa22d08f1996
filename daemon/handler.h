// The handler seam: a handler says what it needs next; the model decides how to
// wait. A handler never learns which model runs it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox {

// What an in-flight exchange needs next (Redis's aeTimeProc returning the next
// delay, nginx's NGX_AGAIN). Open to grow: waiting on a backend fd is the next
// kind.
struct Step {
  std::optional<std::chrono::microseconds>
      wait;  // nullopt == response complete

  static Step Done() { return Step{}; }
  static Step WaitFor(std::chrono::microseconds d) { return Step{d}; }
  bool done() const { return !wait.has_value(); }
};

// One in-flight request. Blocking models loop Resume() and sleep; the async
// model arms a per-connection timer and calls Resume() from its callback.
// Destroying an exchange before it is done cancels it (the connection closed).
class Exchange {
 public:
  virtual ~Exchange() = default;
  // Called first right after Start(), then again after each wait. Fills
  // `response` before returning Done().
  virtual Step Resume(Response& response) = 0;
};

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
  Step Resume(Response& response) override {
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
