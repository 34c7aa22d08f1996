#include "daemon/router.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gearbox {

Router::Router(const std::vector<RouteConfig>& routes, const ServerInfo& info,
               const Modules* modules, int worker, WorkerStats* slot,
               WorkerHome* home)
    : own_home_(home ? nullptr : std::make_unique<WorkerHome>()), info_(info) {
  info_.worker = worker;
  info_.slot = slot;
  info_.home = home ? home : own_home_.get();
  for (size_t i = 0; i < routes.size(); ++i) {
    const RouteConfig& route = routes[i];
    std::unique_ptr<Handler> handler =
        route.module && modules
            ? modules->MakeHandler(route.path, worker, info_.generation)
            : MakeHandler(route, info_);
    if (!handler) {
      // The loader and Modules::Load checked every route: a broken invariant.
      fprintf(stderr, "Router: no handler for route %s (handler %s)\n",
              route.path.c_str(), route.handler.c_str());
      abort();
    }
    routes_.emplace(
        route.path,
        Route{std::move(handler), route.timeout.value_or(Duration(0)),
              static_cast<uint32_t>(std::min(i, kOtherRoute))});
  }
  RouteConfig not_found = DefaultRoute("", "text");
  not_found.params.Set("status", int64_t{404});
  not_found.params.Set("body", std::string("not found\n"));
  not_found_.handler = MakeHandler(not_found, info_);
  // "OPTIONS *" (the only request the codecs let through with target "*")
  // asks about the server, not a resource (RFC 9110 9.3.7): 200, no content.
  RouteConfig server_options = DefaultRoute("", "text");
  server_options.params.Set("status", int64_t{200});
  server_options.params.Set("body", std::string());
  server_options_.handler = MakeHandler(server_options, info_);
}

const Route& Router::Match(std::string_view path) const {
  // Route paths start with '/' (the loader checks), so "*" is never a route.
  if (path == "*") return server_options_;
  auto it = routes_.find(path);
  return it == routes_.end() ? not_found_ : it->second;
}

void Router::Add(std::string path, std::unique_ptr<Handler> handler,
                 Duration timeout) {
  auto it = routes_.find(path);
  if (it != routes_.end()) {
    it->second.handler = std::move(handler);
    it->second.timeout = timeout;
    return;
  }
  routes_.emplace(std::move(path), Route{std::move(handler), timeout});
}

std::vector<std::string> RouteNames(const std::vector<RouteConfig>& routes) {
  std::vector<std::string> names(kRouteSlots);
  for (size_t i = 0; i < routes.size() && i < kOtherRoute; ++i) {
    names[i] = routes[i].path;
  }
  names[kOtherRoute] = std::string(kOtherRouteName);
  return names;
}

}  // namespace gearbox
