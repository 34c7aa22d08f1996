#include "models/pool_scaler.h"

#include <algorithm>

#include "daemon/logging.h"

namespace gearbox {

PoolScaler::PoolScaler(const PoolLimits& limits, std::string_view model,
                       int generation, Clock::time_point now)
    : limits_(limits), model_(model), generation_(generation), refilled_(now) {}

int PoolScaler::ToGrow(Clock::time_point now, int current, int busy,
                       bool work_waits) {
  // The budget refills whatever the load, so that a burst after a quiet spell
  // starts with a full (small) one. It holds one worker more than a tenth of
  // a second's worth: at 10 calls a second the fraction a call leaves over is
  // kept, so the pool grows at the rate, and over any window T at most
  // rate x T + cap workers start.
  const double rate = std::max(1, limits_.spawn_rate);
  const double cap = rate / 10.0 + 1;
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  budget_ = std::min(cap, budget_ + std::max(0.0, elapsed) * rate);
  refilled_ = now;
  if (!work_waits || busy < current || current >= limits_.max) return 0;
  const int n = std::min(static_cast<int>(budget_), limits_.max - current);
  budget_ -= n;
  return n;
}

void PoolScaler::Changed(int from, int to, std::string_view reason,
                         std::string_view detail) const {
  LogInfo("workers_changed",
          "model={} gen={} from={} to={} min={} max={} "
          "reason={}{}{}",
          model_, generation_, from, to, limits_.min, limits_.max, reason,
          detail.empty() ? "" : " ", detail);
}

}  // namespace gearbox
