// `burn`: CPU-bound work for `us` microseconds (or ?us=N, capped by max_us). It
// runs on whatever thread the model gives it; under `async` that blocks the
// loop, which is the honest cost of event loops for CPU work.
#include <algorithm>
#include <chrono>

#include "daemon/handlers/handlers.h"

namespace gearbox {
namespace {

// Spins on arithmetic until `us` of wall time passed; returns a value so the
// work cannot be optimized away.
uint64_t Burn(int64_t us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  do {
    for (int i = 0; i < 256; ++i)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  } while (std::chrono::steady_clock::now() < end);
  return x;
}

class BurnHandler final : public Handler {
 public:
  explicit BurnHandler(const RouteParams& params)
      : us_(params.Int("us")), max_us_(params.Int("max_us")) {}

  std::unique_ptr<Exchange> Start(const Request& request) override {
    int64_t us = std::min(QueryInt(request, "us", us_), max_us_);
    return Immediately([us](Response& response) {
      uint64_t x = Burn(us);
      response.body.assign("burned ");
      response.body.append(std::to_string(us));
      response.body.append(" us ");
      response.body.append(std::to_string(x & 0xff));
      response.body.append("\n");
    });
  }

 private:
  const int64_t us_;
  const int64_t max_us_;
};

}  // namespace

std::unique_ptr<Handler> MakeBurnHandler(const RouteConfig& route,
                                         const ServerInfo&) {
  return std::make_unique<BurnHandler>(route.params);
}

}  // namespace gearbox
