// The keys every [[route]] has, whatever its handler.
#include <algorithm>
#include <functional>
#include <queue>

#include "config/fields.h"
#include "config/internal.h"

namespace gearbox::config_internal {

Reader RoutePath(RouteConfig* route) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::string text;
    if (auto complaint = ReadString(node, &text)) return complaint;
    if (text.empty() || text[0] != '/') {
      return "path " + QuoteToml(text) + " must start with '/'";
    }
    if (HasControl(text) || text.find_first_of(" ?#") != text.npos) {
      return "path " + QuoteToml(text) +
             " must not contain spaces, '?', '#' or control characters "
             "(routes match the path, without the query)";
    }
    auto parsed = ParsePattern(text);
    if (auto* why = std::get_if<std::string>(&parsed)) {
      return "path " + QuoteToml(text) + ": " + *why;
    }
    route->pattern = std::get<RoutePattern>(std::move(parsed));
    route->path = std::move(text);
    route->path_at = Position(node);
    return std::nullopt;
  };
}

Reader Methods(std::vector<std::string>* out) {
  return [=](const toml::node& node) -> std::optional<std::string> {
    std::vector<std::string> methods;
    if (auto complaint = StringList(node, &methods)) return complaint;
    if (methods.empty()) {
      return std::string(
          "empty list: leave methods out for a route that serves any "
          "method");
    }
    for (size_t i = 0; i < methods.size(); ++i) {
      if (!IsMethodToken(methods[i])) {
        return "element " + std::to_string(i) + ": " + QuoteToml(methods[i]) +
               " is not a method name (an RFC 9110 token, e.g. \"GET\")";
      }
      if (std::find(methods.begin(), methods.begin() + i, methods[i]) !=
          methods.begin() + i) {
        return "element " + std::to_string(i) + ": duplicate method " +
               QuoteToml(methods[i]);
      }
    }
    *out = std::move(methods);
    return std::nullopt;
  };
}

std::vector<Field> RouteKeyFields(RouteConfig* route) {
  constexpr Duration kYear = std::chrono::hours(24 * 365);
  return {{"path", RoutePath(route)},
          {"methods", Methods(&route->methods)},
          {"handler",
           [](const toml::node&) { return std::optional<std::string>(); }},
          {"timeout", Dur(&route->timeout, Duration(1), kYear)}};
}

std::vector<Field> RouteFields(RouteConfig* route,
                               const HandlerSchema& schema) {
  std::vector<Field> fields = RouteKeyFields(route);
  for (const ParamSpec& spec : schema.params) {
    fields.push_back({spec.key, Param(spec, &route->params)});
  }
  return fields;
}

}  // namespace gearbox::config_internal

namespace gearbox {

std::string RouteDisplay(const RouteConfig& route) {
  std::string text;
  for (const std::string& m : route.methods) {
    text += (text.empty() ? "" : ",") + m;
  }
  return text.empty() ? route.path : text + " " + route.path;
}

// Kahn's topological sort, always taking the earliest route in config order
// that no remaining route is more specific than.
std::vector<size_t> SpecificityOrder(const std::vector<RouteConfig>& routes) {
  const size_t n = routes.size();
  std::vector<std::vector<size_t>> less_specific(n);  // i -> routes after i
  std::vector<size_t> blockers(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const Relation r = CompareRoutes(routes[i].pattern, routes[i].methods,
                                       routes[j].pattern, routes[j].methods);
      if (r == Relation::kMoreSpecific) {
        less_specific[i].push_back(j);
        ++blockers[j];
      } else if (r == Relation::kMoreGeneral) {
        less_specific[j].push_back(i);
        ++blockers[i];
      }
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (blockers[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t j : less_specific[i]) {
      if (--blockers[j] == 0) ready.push(j);
    }
  }
  return order;  // all n: "more specific" has no cycles
}

}  // namespace gearbox
