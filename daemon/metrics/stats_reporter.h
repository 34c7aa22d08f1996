// Turns the counters into the periodic `stats` log line (logfmt, stable keys),
// the journald fields and a short human summary for sd_notify STATUS=.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "daemon/listeners.h"
#include "daemon/metrics/accept_queue.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

class StatsReporter {
 public:
  explicit StatsReporter(const Listeners& listeners);

  // Samples the kernel accept queues (call often: every supervisor tick); the
  // line reports the latest value and the maximum since the previous line.
  void Sample();

  // Logs one `event=stats ...` line with figures since the previous call (and,
  // under journald, the same figures as GEARBOX_* fields); returns the STATUS=
  // summary.
  std::string Report(std::string_view model, int generation, StatsRegion& stats,
                     int workers);

 private:
  const Listeners& listeners_;
  AcceptQueueProbe probe_;
  int64_t accept_queue_ = 0;
  int64_t accept_queue_max_ = 0;
  const bool journald_;
  std::chrono::steady_clock::time_point last_time_ =
      std::chrono::steady_clock::now();
  const StatsRegion* last_region_ = nullptr;
  uint64_t last_requests_ = 0;
  HistogramSnapshot last_service_;
  HistogramSnapshot last_queue_wait_;
};

}  // namespace gearbox
