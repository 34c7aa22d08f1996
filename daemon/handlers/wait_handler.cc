// `wait`: stands in for a backend call (the usleep(1000) of the PHP-vs-Tornado
// experiment). It asks the model to wait; blocking models sleep a worker, the
// async model arms a timer.
#include <algorithm>

#include "daemon/handlers/handlers.h"

namespace gearbox {
namespace {

class WaitExchange final : public Exchange {
 public:
  explicit WaitExchange(int64_t ms) : ms_(ms) {}
  Step Resume(const Wake&, Response& response) override {
    if (!waited_ && ms_ > 0) {
      waited_ = true;
      return Step::WaitFor(std::chrono::milliseconds(ms_));
    }
    response.body.assign("waited ");
    response.body.append(std::to_string(ms_));
    response.body.append(" ms\n");
    return Step::Done();
  }

 private:
  const int64_t ms_;
  bool waited_ = false;
};

class WaitHandler final : public Handler {
 public:
  explicit WaitHandler(const RouteParams& params)
      : ms_(params.Int("ms")), max_ms_(params.Int("max_ms")) {}

  std::unique_ptr<Exchange> Start(const Request& request) override {
    int64_t ms = std::min(QueryInt(request, "ms", ms_), max_ms_);
    return std::make_unique<WaitExchange>(ms);
  }

 private:
  const int64_t ms_;
  const int64_t max_ms_;
};

}  // namespace

std::unique_ptr<Handler> MakeWaitHandler(const RouteConfig& route,
                                         const ServerInfo&) {
  return std::make_unique<WaitHandler>(route.params);
}

}  // namespace gearbox
