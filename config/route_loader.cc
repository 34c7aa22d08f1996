// [[route]]: the handler first (it decides which keys are valid), then its
// parameters or a module's raw ones; the caps between parameters and the
// conflicts between routes' patterns.
#include <algorithm>
#include <string>

#include "config/fields.h"
#include "config/internal.h"
#include "config/loader_internal.h"

namespace gearbox::config_internal {

bool Loader::Routes(const toml::array& array) {
  routes_set_ = true;  // even when empty: "route = []" means no routes at all
  return EachTable(array, "route", &Loader::Route);
}

bool Loader::Route(const std::string& label, const toml::table& table) {
  RouteConfig route;
  route.where = Position(table.source().begin);
  // The handler decides which other keys are valid, so it is read first.
  const toml::node* handler = table.get("handler");
  std::vector<std::string_view> valid = handler_names_;
  for (const ModuleConfig& m : config_.modules) valid.push_back(m.name);
  if (!handler) {
    return Fail(table.source().begin,
                label + ": missing required key \"handler\" (one of " +
                    Join(valid) + ")");
  }
  std::vector<std::string_view> accepted = valid;
  accepted.insert(accepted.end(), fault_test_names_.begin(),
                  fault_test_names_.end());
  if (OneOf(accepted, "handler", &route.handler)(*handler)) {
    // The complaint lists what a user may pick: not the fault-test ones.
    return Fail(handler->source().begin,
                label + " handler: " +
                    *OneOf(valid, "handler", &route.handler)(*handler));
  }
  route.handler_at = Position(handler->source().begin);
  if (IsModule(route.handler)) return ModuleRoute(label, table, route);
  const HandlerSchema& schema =
      *FindSchema(vocabulary_.handlers, route.handler);
  if (schema.fault_test_only) {
    fault_test_routes_.emplace_back(Position(handler->source().begin),
                                    schema.name);
  }
  route.params = DefaultParams(schema);
  if (!ReadTable(label, table, config_internal::RouteFields(&route, schema),
                 " for handler " + QuoteToml(route.handler))) {
    return false;
  }
  return AddRoute(label, table, route, &schema);
}

// A module's route: every key but path and handler goes, as written, to
// the module's create(), which checks it (daemon/modules/).
bool Loader::ModuleRoute(const std::string& label, const toml::table& table,
                         RouteConfig& route) {
  route.module = true;
  std::vector<Field> fields = config_internal::RouteKeyFields(&route);
  const size_t route_keys = fields.size();
  for (auto [key, node] : InSourceOrder(table)) {
    const bool route_key =
        std::any_of(fields.begin(), fields.begin() + route_keys,
                    [key = key](auto& f) { return f.name == key->str(); });
    if (!route_key) {
      fields.push_back(
          {key->str(), config_internal::RawParam(key->str(), &route.params)});
    }
  }
  if (!ReadTable(label, table, fields)) return false;
  return AddRoute(label, table, route, nullptr);
}

// Checks what every route needs (a path, a pattern no other route conflicts
// with) and a built-in handler's caps, and keeps the route.
bool Loader::AddRoute(const std::string& label, const toml::table& table,
                      RouteConfig& route, const HandlerSchema* schema) {
  const toml::node* path = table.get("path");
  if (!path) {
    return Fail(table.source().begin,
                label + ": missing required key \"path\"");
  }
  if (schema && !CapsHold(label, *schema, route.params)) return false;
  if (auto missing =
          schema ? MissingCheckedParam(*schema, route.params) : std::nullopt) {
    return Fail(table.source().begin, label + ": " + *missing);
  }
  if (!NoConflict(label, route)) return false;
  config_.routes.push_back(std::move(route));
  return true;
}

// Go's rule: of two routes that match a common request, one must be more
// specific. O(n) per route, O(n^2) per file, paid once per load.
bool Loader::NoConflict(const std::string& label, const RouteConfig& route) {
  for (size_t j = 0; j < config_.routes.size(); ++j) {
    const RouteConfig& other = config_.routes[j];
    auto why = RouteConflict(route.pattern, route.methods, other.pattern,
                             other.methods);
    if (!why) continue;
    return Fail(route.path_at,
                label + " path: " + QuoteToml(RouteDisplay(route)) +
                    " conflicts with " + Label("route", j) + " " +
                    QuoteToml(RouteDisplay(other)) + " (line " +
                    std::to_string(other.path_at.line) + ", column " +
                    std::to_string(other.path_at.column) + "): " + *why);
  }
  return true;
}

// A default must not exceed the cap a query parameter may raise it to
// (ParamSpec::at_most). The error points at the cap when the file set it.
bool Loader::CapsHold(const std::string& label, const HandlerSchema& schema,
                      const RouteParams& params) {
  for (const ParamSpec& spec : schema.params) {
    if (spec.at_most.empty()) continue;
    const RouteParam& value = *params.Find(spec.key);
    const RouteParam& cap = *params.Find(spec.at_most);
    const int64_t v = std::get<int64_t>(value.value);
    const int64_t c = std::get<int64_t>(cap.value);
    if (c >= v) continue;
    if (cap.where.in_file()) {
      return Fail(cap.where, label + " " + cap.key + ": " + std::to_string(c) +
                                 " is less than " + value.key + " (" +
                                 std::to_string(v) + ")");
    }
    return Fail(value.where, label + " " + value.key + ": " +
                                 std::to_string(v) + " exceeds the default " +
                                 cap.key + " (" + std::to_string(c) +
                                 "); set " + cap.key + " too");
  }
  return true;
}

}  // namespace gearbox::config_internal
