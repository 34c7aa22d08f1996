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

// What a path resolves to.
struct Route {
  std::unique_ptr<Handler> handler;
  // The route's own deadline; zero: [limits] request_timeout.
  Duration timeout{0};
};

class Router {
 public:
  Router(const std::vector<RouteConfig>& routes, const ServerInfo& info);

  // The route for `path`, or the built-in 404 route; for "*" (OPTIONS *) an
  // empty 200. Its handler is never null.
  const Route& Match(std::string_view path) const;
  // The handler Match() names. Never null.
  Handler* Find(std::string_view path) const {
    return Match(path).handler.get();
  }
  // Serves `path` with `handler` (replacing any), for handlers that do not
  // come from the handler table (tests; loadable modules).
  void Add(std::string path, std::unique_ptr<Handler> handler,
           Duration timeout = Duration(0)) {
    routes_[std::move(path)] = Route{std::move(handler), timeout};
  }
  const ServerInfo& info() const { return info_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  ServerInfo info_;
  std::unordered_map<std::string, Route, Hash, std::equal_to<>> routes_;
  Route not_found_;
  Route server_options_;
};

}  // namespace gearbox
