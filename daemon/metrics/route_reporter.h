// Per-route figures over each stats interval: one `event=route_stats` line per
// route with traffic, the window /status shows (published in the shared stats
// region), and the advisor's verdict on it: `event=advice` when the pick has
// differed from the configured model for a sustained period.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/advisor/advisor.h"
#include "daemon/metrics/route_history.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

// The figures of one route from totals `t` gathered over `seconds`. CPU time
// is sampled: when `t` has no sample, the mean of `all_time` (the route's
// totals since the generation started) stands in, if given.
advisor::RouteFigures FiguresOf(std::string name, const RouteTotals& t,
                                double seconds,
                                const RouteTotals* all_time = nullptr);

// The named routes of a published window, with their figures (routes without
// traffic included, rps 0). `names` is ServerInfo::route_names; `all_time`
// the cumulative totals by route id (see FiguresOf).
std::vector<advisor::RouteFigures> WindowFigures(
    const RouteWindow& window, const std::vector<std::string>& names,
    const std::vector<RouteTotals>& all_time);

// When an `event=advice` line is due: the pick must differ from the configured
// model for `after` without a break (an interval that agrees, or is idle,
// restarts the clock); then the line repeats at most once per `repeat` while
// the same pick lasts, and at once when the pick changes.
class AdviceTracker {
 public:
  using Clock = std::chrono::steady_clock;
  AdviceTracker(Duration after, Duration repeat)
      : after_(after), repeat_(repeat) {}
  // One interval's advice. Returns true when the line is due now. `after` of
  // zero turns the line off.
  bool Observe(bool differs, std::string_view pick, Clock::time_point now);
  // How long the current pick has differed (0 when it does not).
  Duration differing_for(Clock::time_point now) const;
  void Reset();

 private:
  Duration after_, repeat_;
  std::optional<Clock::time_point> since_;  // pick_ differing since
  std::string pick_;
  std::optional<Clock::time_point> logged_;  // the last line, for logged_pick_
  std::string logged_pick_;
};

class RouteReporter {
 public:
  using Clock = std::chrono::steady_clock;
  // `cores`: the machine's (advisor::UsableCores()). `advice_after`: see
  // AdviceTracker ([metrics] advice_after).
  RouteReporter(int cores, Duration advice_after);
  // A reload may change [metrics] advice_after (the clock restarts).
  void SetAdviceAfter(Duration advice_after);

  // Called with each stats line: logs the interval's route_stats lines,
  // publishes the window into `stats`, records the running totals into
  // `history` (the generation's, may be null), and logs event=advice when
  // due. `started`: when the generation owning `stats` started (its counters
  // began at zero then).
  void Report(std::string_view model, int generation, int workers,
              StatsRegion& stats, RouteHistory* history,
              const std::vector<std::string>& route_names,
              Clock::time_point started, Clock::time_point now);

 private:
  void LogRoutes(int generation, const RouteWindow& window,
                 const std::vector<std::string>& route_names,
                 const std::vector<RouteTotals>& all_time) const;

  const int cores_;
  Duration advice_after_;
  AdviceTracker tracker_;
  const StatsRegion* last_region_ = nullptr;
  Clock::time_point last_time_{};
  std::vector<RouteTotals> last_;  // by route id, of last_region_
};

}  // namespace gearbox
