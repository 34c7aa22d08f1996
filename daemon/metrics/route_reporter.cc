#include "daemon/metrics/route_reporter.h"

#include <fmt/format.h>

#include <algorithm>

#include "daemon/advisor/machine.h"
#include "daemon/logging.h"

namespace gearbox {

advisor::RouteFigures FiguresOf(std::string name, const RouteTotals& t,
                                double seconds, const RouteTotals* all_time) {
  advisor::RouteFigures f;
  f.route = std::move(name);
  if (t.requests == 0 || seconds <= 0) return f;
  const double n = static_cast<double>(t.requests);
  f.rps = n / seconds;
  f.service_us = static_cast<double>(t.service_us) / n;
  f.queue_us = static_cast<double>(t.queue_us) / n;
  f.wait_us = static_cast<double>(t.wait_us) / n;
  const RouteTotals* cpu = t.cpu_samples ? &t : all_time;
  if (cpu && cpu->cpu_samples) {
    f.cpu_us = static_cast<double>(cpu->cpu_ns) / 1000.0 /
               static_cast<double>(cpu->cpu_samples);
  }
  return f;
}

std::vector<advisor::RouteFigures> WindowFigures(
    const RouteWindow& window, const std::vector<std::string>& names,
    const std::vector<RouteTotals>& all_time) {
  std::vector<advisor::RouteFigures> out;
  const double seconds = static_cast<double>(window.interval_us) / 1e6;
  const size_t ids =
      std::min({names.size(), window.routes.size(), all_time.size()});
  for (size_t id = 0; id < ids; ++id) {
    if (names[id].empty()) continue;
    out.push_back(
        FiguresOf(names[id], window.routes[id], seconds, &all_time[id]));
  }
  return out;
}

bool AdviceTracker::Observe(bool differs, std::string_view pick,
                            Clock::time_point now) {
  if (after_ <= Duration::zero()) return false;
  if (!differs) {
    since_.reset();
    pick_.clear();
    return false;
  }
  if (!since_ || pick_ != pick) {  // a new pick must last on its own
    since_ = now;
    pick_ = std::string(pick);
  }
  if (now - *since_ < after_) return false;
  if (logged_ && logged_pick_ == pick_ && now - *logged_ < repeat_)
    return false;
  logged_ = now;
  logged_pick_ = pick_;
  return true;
}

Duration AdviceTracker::differing_for(Clock::time_point now) const {
  if (!since_) return Duration::zero();
  return std::chrono::duration_cast<Duration>(now - *since_);
}

void AdviceTracker::Reset() {
  since_.reset();
  pick_.clear();
  logged_.reset();
  logged_pick_.clear();
}

namespace {

// An advice line repeats at most this often while it stays the same.
constexpr Duration kAdviceRepeat = std::chrono::hours(1);

}  // namespace

RouteReporter::RouteReporter(int cores, Duration advice_after)
    : cores_(cores),
      advice_after_(advice_after),
      tracker_(advice_after, std::max(advice_after, kAdviceRepeat)) {}

void RouteReporter::SetAdviceAfter(Duration advice_after) {
  if (advice_after == advice_after_) return;
  advice_after_ = advice_after;
  tracker_ = AdviceTracker(advice_after, std::max(advice_after, kAdviceRepeat));
}

void RouteReporter::Report(std::string_view model, int generation, int workers,
                           StatsRegion& stats, RouteHistory* history,
                           const std::vector<std::string>& route_names,
                           Clock::time_point started, Clock::time_point now) {
  const std::vector<RouteTotals> totals = stats.SumRoutes();
  if (history && history->routes() == totals.size()) {
    history->Record(static_cast<uint64_t>(
                        std::chrono::duration_cast<std::chrono::microseconds>(
                            now.time_since_epoch())
                            .count()),
                    totals.data());
  }
  if (last_region_ != &stats) {
    // A new generation: its counters started from zero when it did (within
    // this interval, after a reload).
    last_region_ = &stats;
    last_.assign(totals.size(), RouteTotals{});
    last_time_ = std::max(last_time_, started);
    tracker_.Reset();
  }
  const double seconds =
      std::chrono::duration<double>(now - last_time_).count();
  last_time_ = now;
  RouteWindow window;
  window.interval_us = static_cast<uint64_t>(std::max(seconds, 1e-3) * 1e6);
  window.workers = static_cast<uint64_t>(std::max(workers, 0));
  window.routes.resize(totals.size());
  for (size_t i = 0; i < totals.size(); ++i) {
    window.routes[i] = totals[i].Since(last_[i]);
  }
  last_ = totals;
  stats.PublishWindow(window);
  LogRoutes(generation, window, route_names, totals);

  advisor::MachineFacts machine;
  machine.cores = cores_;
  machine.model = std::string(model);
  machine.size = workers;
  machine.thread_stack_mib = advisor::ThreadStackMiB();
  const advisor::Advice advice =
      advisor::Advise(WindowFigures(window, route_names, totals), machine);
  const bool differs = !advice.idle && advice.Differs(machine);
  if (tracker_.Observe(differs, advice.pick, now)) {
    LogInfo("advice",
            "gen={} model={} size={} pick={} pick_size={} for_s={:.0f} "
            "rps={:.1f} cpu_cores={:.2f} inflight={:.1f} workers={:.1f} "
            "why={}",
            generation, model, workers, advice.pick, advice.size,
            std::chrono::duration<double>(tracker_.differing_for(now)).count(),
            advice.rps, advice.cores, advice.inflight, advice.workers,
            LogQuote(advice.why));
  }
}

void RouteReporter::LogRoutes(int generation, const RouteWindow& window,
                              const std::vector<std::string>& names,
                              const std::vector<RouteTotals>& all_time) const {
  const double seconds = static_cast<double>(window.interval_us) / 1e6;
  const size_t ids =
      std::min({names.size(), window.routes.size(), all_time.size()});
  for (size_t id = 0; id < ids; ++id) {
    const RouteTotals& t = window.routes[id];
    if (names[id].empty() || t.requests == 0) continue;
    const advisor::RouteFigures f =
        FiguresOf(names[id], t, seconds, &all_time[id]);
    LogInfo("route_stats",
            "gen={} route={} rps={:.1f} requests={} service_ms={:.3f} "
            "cpu_us={:.1f} cpu_samples={} cpu_sample_every={} wait_ms={:.3f} "
            "queue_ms={:.3f} inflight={:.2f} cpu_cores={:.3f}",
            generation, LogQuote(f.route), f.rps, t.requests,
            f.service_us / 1000, f.cpu_us, t.cpu_samples, kCpuSampleEvery,
            f.wait_us / 1000, f.queue_us / 1000, f.rps * f.service_us / 1e6,
            f.rps * f.cpu_us / 1e6);
  }
}

}  // namespace gearbox
