#include "daemon/router.h"

#include <cstdio>
#include <cstdlib>

namespace gearbox {

Router::Router(const std::vector<RouteConfig>& routes, const ServerInfo& info,
               const Modules* modules, int worker)
    : info_(info) {
  for (const RouteConfig& route : routes) {
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
    routes_.emplace(route.path, Route{std::move(handler),
                                      route.timeout.value_or(Duration(0))});
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

}  // namespace gearbox
