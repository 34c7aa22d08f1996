// Turns the counters into the periodic `stats` log line (logfmt, stable keys) and a
// short human summary for sd_notify STATUS=.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "daemon/metrics/worker_stats.h"

namespace gearbox {

class StatsReporter {
 public:
  // Logs one `event=stats ...` line with figures since the previous call and
  // returns the STATUS= summary.
  std::string Report(std::string_view model, int generation,
                     const StatsRegion& stats, int workers);

 private:
  std::chrono::steady_clock::time_point last_time_ =
      std::chrono::steady_clock::now();
  const StatsRegion* last_region_ = nullptr;
  StatsRegion::Totals last_;
};

}  // namespace gearbox
