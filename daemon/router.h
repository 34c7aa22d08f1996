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

class Router {
 public:
  Router(const std::vector<RouteConfig>& routes, const ServerInfo& info);

  // The handler for `path`, or the built-in 404 handler; for "*" (OPTIONS *)
  // an empty 200. Never null.
  Handler* Find(std::string_view path) const;
  // Serves `path` with `handler` (replacing any), for handlers that do not
  // come from the handler table (tests; loadable modules).
  void Add(std::string path, std::unique_ptr<Handler> handler) {
    routes_[std::move(path)] = std::move(handler);
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
  std::unordered_map<std::string, std::unique_ptr<Handler>, Hash,
                     std::equal_to<>>
      routes_;
  std::unique_ptr<Handler> not_found_;
  std::unique_ptr<Handler> server_options_;
};

}  // namespace gearbox
