// Exact-path routing: one Router per worker, built from its generation's
// RouteSet on the worker's own thread (after fork in a prefork child), so
// every handler instance belongs to exactly one worker.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "daemon/handler.h"
#include "daemon/handlers/handlers.h"
#include "daemon/modules/modules.h"

namespace gearbox {

// What a path resolves to.
struct Route {
  std::unique_ptr<Handler> handler;
  // The route's own deadline; zero: [limits] request_timeout.
  Duration timeout{0};
  // The id its figures are counted under: the route's index in the config,
  // or kOtherRoute (404s, "*", routes past the first kRouteSlots - 1).
  uint32_t id = static_cast<uint32_t>(kOtherRoute);
};

// How requests that match no counted route are shown.
inline constexpr std::string_view kOtherRouteName = "(other)";

// Route id -> name for a generation's routes (for ServerInfo::route_names):
// kRouteSlots names, the first routes' paths, "" for ids no route uses, and
// kOtherRouteName last.
std::vector<std::string> RouteNames(const std::vector<RouteConfig>& routes);

class Router {
 public:
  // Makes a handler for every route: built-in ones from the handler table,
  // module ones from `modules` (their worker_init runs now). `worker` is the
  // worker's index within its generation.
  // `home` is the worker's (WorkerHome): null gives the handlers one of the
  // Router's own, without a driver (a blocking worker's).
  Router(const std::vector<RouteConfig>& routes, const ServerInfo& info,
         const Modules* modules = nullptr, int worker = 0,
         WorkerStats* slot = nullptr, WorkerHome* home = nullptr);

  // The route for `path`, or the built-in 404 route; for "*" (OPTIONS *) an
  // empty 200. Its handler is never null.
  const Route& Match(std::string_view path) const;
  // The handler Match() names. Never null.
  Handler* Find(std::string_view path) const {
    return Match(path).handler.get();
  }
  // Serves `path` with `handler` (replacing any), for handlers that do not
  // come from a RouteConfig (tests). A new path's figures count under
  // kOtherRoute: route ids follow the config.
  void Add(std::string path, std::unique_ptr<Handler> handler,
           Duration timeout = Duration(0));
  const ServerInfo& info() const { return info_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unique_ptr<WorkerHome> own_home_;  // outlives the handlers below
  ServerInfo info_;
  std::unordered_map<std::string, Route, Hash, std::equal_to<>> routes_;
  Route not_found_;
  Route server_options_;
};

// What every worker of a generation builds its Router from: shared by the
// workers, read-only (and copied into each prefork child by fork).
struct RouteSet {
  std::vector<RouteConfig> routes;
  ServerInfo info;  // the status handler reads info.stats, shared by all
  std::shared_ptr<const Modules> modules;  // null: no [[module]]

  // The calling worker's own handlers. Call it on the worker's thread: a
  // module's worker_init runs here, and its log lines name this worker.
  // `slot`: the worker's stats slot (ServerInfo::slot).
  std::unique_ptr<Router> MakeRouter(int worker, WorkerStats* slot = nullptr,
                                     WorkerHome* home = nullptr) const {
    return std::make_unique<Router>(routes, info, modules.get(), worker, slot,
                                    home);
  }
};

}  // namespace gearbox
