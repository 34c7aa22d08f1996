// `gearboxd --advise [URL]`: reads a running daemon's /status (text format),
// runs the advisor on the last stats interval's per-route figures and prints
// one line per route with traffic, then a summary line (advisor.h formats).
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
  MachineFacts machine;  // model, cores, window_workers
  double window_s = 0;   // 0: no stats interval completed yet
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

// Asks each target in turn until one answers; prints the advice to `out`,
// errors to `err`. Returns the exit code: 0 advice printed, 1 no target
// answered (or none had figures yet).
int RunAdvise(const std::vector<StatusTarget>& targets, FILE* out, FILE* err);

}  // namespace gearbox::advisor
