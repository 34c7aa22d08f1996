#include "daemon/router.h"

#include <algorithm>

namespace gearbox {

Router::Router(const std::vector<RouteConfig>& routes, const ServerInfo& info)
    : info_(info) {
  for (size_t i = 0; i < routes.size(); ++i) {
    const uint32_t id = static_cast<uint32_t>(std::min(i, kOtherRoute));
    routes_.emplace(routes[i].path, Entry{MakeHandler(routes[i], info_), id});
  }
  RouteConfig not_found = DefaultRoute("", "text");
  not_found.params.Set("status", int64_t{404});
  not_found.params.Set("body", std::string("not found\n"));
  not_found_ = MakeHandler(not_found, info_);
  // "OPTIONS *" (the only request the codecs let through with target "*")
  // asks about the server, not a resource (RFC 9110 9.3.7): 200, no content.
  RouteConfig server_options = DefaultRoute("", "text");
  server_options.params.Set("status", int64_t{200});
  server_options.params.Set("body", std::string());
  server_options_ = MakeHandler(server_options, info_);
}

RouteMatch Router::Match(std::string_view path) const {
  // Route paths start with '/' (the loader checks), so "*" is never a route;
  // it counts with the unrouted requests.
  if (path == "*") {
    return {server_options_.get(), static_cast<uint32_t>(kOtherRoute)};
  }
  auto it = routes_.find(path);
  if (it == routes_.end()) {
    return {not_found_.get(), static_cast<uint32_t>(kOtherRoute)};
  }
  return {it->second.handler.get(), it->second.id};
}

void Router::Add(std::string path, std::unique_ptr<Handler> handler) {
  auto it = routes_.find(path);
  if (it != routes_.end()) {
    it->second.handler = std::move(handler);
    return;
  }
  routes_.emplace(std::move(path), Entry{std::move(handler),
                                         static_cast<uint32_t>(kOtherRoute)});
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
