#include "daemon/metrics/stats_reporter.h"

#include <fmt/format.h>

#include "daemon/logging.h"

namespace gearbox {

std::string StatsReporter::Report(std::string_view model, int generation,
                                  const StatsRegion& stats, int workers) {
  auto now = std::chrono::steady_clock::now();
  StatsRegion::Totals t = stats.Sum();
  if (last_region_ != &stats) {  // a new generation starts from zero
    last_ = StatsRegion::Totals{};
    last_region_ = &stats;
  }
  double secs = std::chrono::duration<double>(now - last_time_).count();
  if (secs <= 0) secs = 1;
  double rps = static_cast<double>(t.requests - last_.requests) / secs;
  uint64_t closed = 0;
  for (uint64_t c : t.closed) closed += c;
  uint64_t open = t.accepted >= closed ? t.accepted - closed : 0;
  uint64_t timeouts =
      t.closed[static_cast<int>(CloseReason::kHeaderTimeout)] +
      t.closed[static_cast<int>(CloseReason::kIdleTimeout)];
  LogInfo("stats",
          "model={} gen={} rps={:.1f} requests={} inflight={} conns={} busy={} "
          "workers={} s2xx={} s4xx={} s5xx={} rejected={} bad_input={} "
          "timeouts={} bytes_in={} bytes_out={}",
          model, generation, rps, t.requests, t.inflight, open, t.busy, workers,
          t.status_class[2], t.status_class[4], t.status_class[5], t.rejected,
          t.bad_input, timeouts, t.bytes_in, t.bytes_out);
  last_ = t;
  last_time_ = now;
  return fmt::format("{} gen {}: {:.0f} req/s, {} in flight, {}/{} busy, {} conns, {} rejected",
                     model, generation, rps, t.inflight, t.busy, workers, open,
                     t.rejected);
}

}  // namespace gearbox
