// The handler table: the one list of handler kinds a [[route]] can name.
// Adding a handler = writing a class and adding one row to kHandlerTable
// (handler_table.cc).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/handler.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

// What handlers may know about the server (the status handler reports it).
struct ServerInfo {
  std::string model;
  int generation = 1;
  std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
  std::shared_ptr<StatsRegion> stats;  // may be null in unit tests
};

// Names of every handler kind, in table order ("text", "wait", ...).
std::span<const std::string_view> HandlerNames();

// Builds the handler a route names. The loader has validated the name and
// params.
std::unique_ptr<Handler> MakeHandler(const RouteConfig& route,
                                     const ServerInfo& info);

// The individual factories, one per file.
std::unique_ptr<Handler> MakeTextHandler(const RouteConfig& route,
                                         const ServerInfo& info);
std::unique_ptr<Handler> MakeWaitHandler(const RouteConfig& route,
                                         const ServerInfo& info);
std::unique_ptr<Handler> MakeBurnHandler(const RouteConfig& route,
                                         const ServerInfo& info);
std::unique_ptr<Handler> MakeEchoHandler(const RouteConfig& route,
                                         const ServerInfo& info);
std::unique_ptr<Handler> MakeStatusHandler(const RouteConfig& route,
                                           const ServerInfo& info);
// Test-only: aborts the process. The loader allows it only with
// [server] enable_crash_handler = true.
std::unique_ptr<Handler> MakeCrashHandler(const RouteConfig& route,
                                          const ServerInfo& info);

// Parses a non-negative decimal query value; `fallback` when absent or
// malformed.
int64_t QueryInt(const Request& request, std::string_view key,
                 int64_t fallback);

}  // namespace gearbox
