// The per-route part of /status: each route's counters since the generation
// started, the last stats interval's window (published by the supervisor,
// daemon/metrics/route_reporter.h) and the model advisor's verdict on it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/advisor/advisor.h"
#include "daemon/handlers/handlers.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

struct RouteStatus {
  std::vector<std::string> names;   // route id -> name ("" unused)
  std::vector<RouteTotals> totals;  // by route id
  // The last stats interval, or the window asked for (`asked`): then its
  // interval_us is what the figures cover, shorter than asked when the
  // generation is younger.
  RouteWindow window;
  std::optional<Duration> asked;
  advisor::MachineFacts machine;
  std::optional<advisor::Advice> advice;  // none before the first interval
};

// Reads the shared region of `info` (which must have stats): the window is
// the last stats interval, or with `asked` the last `asked` of the
// generation's history (info.history; at most kHistorySpan).
RouteStatus GatherRouteStatus(const ServerInfo& info,
                              std::optional<Duration> asked = std::nullopt);

// ,"cores":..,"cpu_sample_every":..,"routes":[..],"window":{..},"advice":{..}
void AppendRoutesJson(const RouteStatus& status, std::string& out);
// "cores: N" ... one "route: name=... k=v ..." line per route, "advice: ..."
void AppendRoutesText(const RouteStatus& status, std::string& out);
// gearbox_route_*_total{route="..."} counters (this generation's: a reload
// starts them again, which a scraper reads as a counter reset) and
// gearbox_advice_info.
void AppendRoutesOpenMetrics(const RouteStatus& status, std::string& out);

}  // namespace gearbox
