// `gearboxd --advise [URL] [--window D]`: reads a running daemon's
// /status?format=text&window=D, runs the advisor on the window's per-route
// figures and prints one line per route with traffic, then a summary line
// that states the window (advisor.h formats).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/advisor/advisor.h"
#include "daemon/advisor/status_fetch.h"

namespace gearbox::advisor {

// What --advise reads from /status?format=text.
struct StatusFigures {
  MachineFacts machine;       // model, cores, window_workers
  double window_s = 0;        // 0: no stats interval completed yet
  double window_asked_s = 0;  // the window asked for (0: the last interval)
  std::vector<RouteFigures> routes;
};
struct ParsedStatus {
  StatusFigures figures;
  std::string error;  // non-empty: not a gearbox status text
};
ParsedStatus ParseStatusText(std::string_view body);

// The status targets of a config: each HTTP [[listen]] address (a wildcard
// host becomes loopback) with the path of its first `status` route. Sets
// *error (and returns none) when there is no such route or listener.
std::vector<StatusTarget> TargetsFromConfig(const Config& config,
                                            std::string* error);

// The default of --window: the last minute (or since the daemon's
// generation started, if that is shorter).
inline constexpr Duration kDefaultAdviseWindow = std::chrono::seconds(60);

// Asks each target in turn for the figures of the last `window` (1 s to
// 15 min) until one answers; prints the advice to `out`, errors to `err`.
// Returns the exit code: 0 advice printed, 1 no target answered (or none had
// figures yet).
int RunAdvise(const std::vector<StatusTarget>& targets, Duration window,
              FILE* out, FILE* err);

}  // namespace gearbox::advisor
