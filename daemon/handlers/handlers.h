// The handler table: the one list of handler kinds a [[route]] can name.
// Adding a handler = writing its file and adding one row to kHandlerTable
// (handler_table.cc; docs/handlers.md "Adding a handler" shows both).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/handler.h"
#include "daemon/metrics/lifetime_stats.h"
#include "daemon/metrics/route_history.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/worker_home.h"

namespace gearbox {

// What handlers may know about the server (the status handler reports it).
struct ServerInfo {
  std::string model;
  int generation = 1;
  std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
  std::shared_ptr<StatsRegion> stats;  // may be null in unit tests
  // The generation's per-route snapshots, for /status?window= (may be null:
  // then only the last interval is shown).
  std::shared_ptr<const RouteHistory> history;
  // Process-lifetime counters (OpenMetrics): the retired generations' sums,
  // plus `live`: the regions of the generations that were running when this
  // one started (older ones draining, then `stats`). May be null in unit
  // tests; then the OpenMetrics figures are this generation's.
  std::shared_ptr<const LifetimeStats> lifetime;
  std::vector<std::shared_ptr<StatsRegion>> live;
  // Route id -> name (RouteNames() in router.h; "" for an unused id): what
  // per-route figures are shown under.
  std::vector<std::string> route_names;
  int cores = 1;  // the machine's, for the advice in /status
  // How many instances of each handler the generation builds at most (one
  // per worker), and which one this is (0-based; set by the Router): a
  // handler that owns backend connections logs its budget once, from
  // worker 0.
  int workers = 1;
  int worker = 0;
  // The calling worker's stats slot (set by the Router from the model);
  // null in unit tests. A handler may publish per-worker gauges in it.
  WorkerStats* slot = nullptr;
  // [lua]: the settings of the worker's Lua runtime.
  LuaConfig lua;
  // The worker's home for what outlives an exchange (daemon/worker_home.h):
  // set by the Router, never null for a handler it makes.
  WorkerHome* home = nullptr;
};

// What a handler's file defines: builds the handler for a route whose params
// the loader checked against the handler's schema (every key is there, with
// its declared type), so the handler reads them with route.params.Int("ms")
// and friends.
using HandlerFactory = std::unique_ptr<Handler>(const RouteConfig& route,
                                                const ServerInfo& info);

// Every handler's schema, in table order: what the config loader is handed.
std::span<const HandlerSchema> HandlerSchemas();

// Builds the handler a route names; null for a name not in the table.
std::unique_ptr<Handler> MakeHandler(const RouteConfig& route,
                                     const ServerInfo& info);

// A route for handler at pattern `path` (aborts if malformed; "" for a
// built-in answer that is never routed) with every parameter at its default
// (for routes the daemon makes itself, such as the 404 route, and tests).
// Aborts for a name not in the table.
RouteConfig DefaultRoute(std::string path, std::string_view handler);

// Parses a non-negative decimal query value; `fallback` when absent or
// malformed.
int64_t QueryInt(const Request& request, std::string_view key,
                 int64_t fallback);

}  // namespace gearbox
