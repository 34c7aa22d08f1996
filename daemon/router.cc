#include "daemon/router.h"

namespace gearbox {

Router::Router(const std::vector<RouteConfig>& routes, const ServerInfo& info)
    : info_(info) {
  for (const RouteConfig& route : routes) {
    routes_.emplace(route.path, MakeHandler(route, info_));
  }
  RouteConfig not_found = DefaultRoute("", "text");
  not_found.params.Set("status", int64_t{404});
  not_found.params.Set("body", std::string("not found\n"));
  not_found_ = MakeHandler(not_found, info_);
}

Handler* Router::Find(std::string_view path) const {
  auto it = routes_.find(path);
  return it == routes_.end() ? not_found_.get() : it->second.get();
}

}  // namespace gearbox
