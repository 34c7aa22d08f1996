// Routing by pattern and method (Go 1.22 ServeMux semantics; patterns in
// config/route_pattern.h, the request's path in daemon/routing/route_path.h):
// one Router per worker, built from its generation's RouteSet on the worker's
// own thread (after fork in a prefork child), so every handler instance
// belongs to exactly one worker.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/handler.h"
#include "daemon/handlers/handlers.h"
#include "daemon/modules/modules.h"
#include "daemon/routing/route_trie.h"

namespace gearbox {

// What a path resolves to.
struct Route {
  std::unique_ptr<Handler> handler;
  // The route's own deadline; zero: [limits] request_timeout.
  Duration timeout{0};
  // The id its figures are counted under: the route's index in the config,
  // or the number of routes (404s, 405s, 400s, "*": OtherRouteId()).
  uint32_t id = 0;
  // The names of its pattern's wildcards in order ("" for a trailing '/').
  std::vector<std::string> captures;
};

// How requests that match no counted route are shown.
inline constexpr std::string_view kOtherRouteName = "(other)";

// The id requests no route serves count under: one past the config's routes
// (StatsRegion::Create(slots, routes.size()) has a slot for it).
inline uint32_t OtherRouteId(const std::vector<RouteConfig>& routes) {
  return static_cast<uint32_t>(routes.size());
}

// Route id -> name for a generation's routes (for ServerInfo::route_names):
// routes.size() + 1 names: the routes' patterns as written (with their
// methods, "GET,POST /items/{id}", when routes share a pattern: never a
// request's path, so the labels are bounded by the config), and
// kOtherRouteName last.
std::vector<std::string> RouteNames(const std::vector<RouteConfig>& routes);

class Router {
 public:
  // Makes a handler for every route: built-in ones from the handler table,
  // module ones from `modules` (their worker_init runs now). `worker` is the
  // worker's index within its generation. Compiles the patterns into one
  // trie per method named and one for routes of any method.
  // `home` is the worker's (WorkerHome): null gives the handlers one of the
  // Router's own, without a driver (a blocking worker's).
  Router(const std::vector<RouteConfig>& routes, const ServerInfo& info,
         const Modules* modules = nullptr, int worker = 0,
         WorkerStats* slot = nullptr, WorkerHome* home = nullptr);

  // The route for `request` (its method and path), with the route's
  // captures written to request.params: the most specific route that
  // matches, or a built-in one: 404 when none matches, 405 with Allow when
  // only routes of other methods do, 400 for a path gearbox refuses
  // (route_path.h), an empty 200 for "*" (OPTIONS *). Its handler is never
  // null. Allocates nothing (but a 405 for a new set of methods).
  const Route& Match(Request& request) const;
  // Match() for a GET of `path` (tests).
  const Route& Match(std::string_view path) const;
  // The handler Match() names for a GET of `path`. Never null.
  Handler* Find(std::string_view path) const {
    return Match(path).handler.get();
  }
  // Serves pattern `path` for any method with `handler` (replacing the
  // handler of the same pattern), for handlers that do not come from a
  // RouteConfig (tests). Its figures count under the other id: route ids
  // follow the config.
  void Add(std::string path, std::unique_ptr<Handler> handler,
           Duration timeout = Duration(0));
  const ServerInfo& info() const { return info_; }

 private:
  struct MethodTrie {
    std::string method;
    RouteTrie trie;
  };
  RouteTrie& TrieFor(std::string_view method);
  const RouteTrie* FindTrie(std::string_view method) const;
  void Compile(const RouteConfig& route, uint32_t index);
  const Route& NotAllowed(std::string_view path) const;

  std::unique_ptr<WorkerHome> own_home_;  // outlives the handlers below
  ServerInfo info_;
  uint32_t other_id_;                  // OtherRouteId() of the config
  std::vector<Route> routes_;          // by index, config order first
  std::vector<MethodTrie> by_method_;  // a route with methods is in each
  RouteTrie any_method_;
  Route not_found_;
  Route bad_path_;
  Route server_options_;
  // 405 routes by their Allow value, made on first use (the worker's own).
  mutable std::map<std::string, Route, std::less<>> not_allowed_;
  mutable std::string allow_;
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
