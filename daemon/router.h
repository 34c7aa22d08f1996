// Exact-path routing table built from [[route]] entries, one per generation.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "daemon/handler.h"
#include "daemon/handlers/handlers.h"

namespace gearbox {

// A path's handler and the route id its figures are counted under: the
// route's index in the config, or kOtherRoute (404s, routes past the first
// kRouteSlots - 1).
struct RouteMatch {
  Handler* handler;
  uint32_t route;
};

// How requests that match no counted route are shown.
inline constexpr std::string_view kOtherRouteName = "(other)";

// Route id -> name for a generation's routes (for ServerInfo::route_names):
// kRouteSlots names, the first routes' paths, "" for ids no route uses, and
// kOtherRouteName last.
std::vector<std::string> RouteNames(const std::vector<RouteConfig>& routes);

class Router {
 public:
  Router(const std::vector<RouteConfig>& routes, const ServerInfo& info);

  // The handler for `path`, or the built-in 404 handler; for "*" (OPTIONS *)
  // an empty 200. Never null.
  Handler* Find(std::string_view path) const { return Match(path).handler; }
  RouteMatch Match(std::string_view path) const;
  // Serves `path` with `handler` (replacing any), for handlers that do not
  // come from the handler table (tests; loadable modules). A new path's
  // figures count under kOtherRoute: route ids follow the config.
  void Add(std::string path, std::unique_ptr<Handler> handler);
  const ServerInfo& info() const { return info_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  ServerInfo info_;
  struct Entry {
    std::unique_ptr<Handler> handler;
    uint32_t id;
  };
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> routes_;
  std::unique_ptr<Handler> not_found_;
  std::unique_ptr<Handler> server_options_;
};

}  // namespace gearbox
