#include "daemon/modules/modules.h"

#include <algorithm>

#include "daemon/modules/module_handler.h"
#include "daemon/modules/module_host.h"
#include "daemon/modules/module_library.h"

namespace gearbox {
namespace {

static_assert(GEARBOX_FD_READABLE == kFdReadable &&
              GEARBOX_FD_WRITABLE == kFdWritable &&
              GEARBOX_FD_ERROR == kFdError &&
              GEARBOX_MAX_WAIT_FDS == kMaxWaitFds);
static_assert(GEARBOX_WAKE_START == static_cast<int>(Wake::Why::kStart) &&
              GEARBOX_WAKE_TIMER == static_cast<int>(Wake::Why::kTimer) &&
              GEARBOX_WAKE_FDS_READY ==
                  static_cast<int>(Wake::Why::kFdsReady) &&
              GEARBOX_WAKE_DEADLINE == static_cast<int>(Wake::Why::kDeadline));

std::string Label(size_t index) {
  return "[[route]] #" + std::to_string(index + 1);
}

ConfigError At(const Config& config, SourcePosition where, std::string text) {
  return ConfigError{config.source, where.line, where.column, std::move(text)};
}

// The route's keys the module never read: they would be silently ignored.
std::optional<ConfigError> UnreadKey(const Config& config, size_t index,
                                     const gearbox_route& route,
                                     const std::string& module) {
  for (const RouteParam& param : route.route->params.entries()) {
    if (std::find(route.read.begin(), route.read.end(), param.key) !=
        route.read.end()) {
      continue;
    }
    std::string known;
    for (const std::string& key : route.read) {
      known += (known.empty() ? "" : ", ") + key;
    }
    return At(config, param.where,
              Label(index) + " " + param.key + ": unknown key for module \"" +
                  module +
                  "\" (it reads: " + (known.empty() ? "no keys" : known) + ")");
  }
  return std::nullopt;
}

}  // namespace

ModulesResult Modules::Load(Config& config) {
  std::shared_ptr<Modules> modules(new Modules());
  for (size_t i = 0; i < config.modules.size(); ++i) {
    const ModuleConfig& m = config.modules[i];
    std::string error;
    auto library = ModuleLibrary::Load(m.name, m.path, &error);
    if (!library) {
      return At(config, m.path_at,
                "[[module]] #" + std::to_string(i + 1) + " path: " + error);
    }
    modules->libraries_.push_back(std::move(library));
  }
  for (size_t i = 0; i < config.routes.size(); ++i) {
    RouteConfig& r = config.routes[i];
    if (!r.module) continue;
    const auto m = std::find_if(config.modules.begin(), config.modules.end(),
                                [&](auto& m) { return m.name == r.handler; });
    if (m == config.modules.end()) abort();  // the loader checked the name
    const auto& library = modules->libraries_[m - config.modules.begin()];
    if (const ModuleKeys* keys = library->keys()) {
      SourcePosition where;
      if (auto problem = keys->Apply(r.params, &where)) {
        return At(config, where.in_file() ? where : r.where,
                  Label(i) + (where.in_file() ? " " : ": ") + *problem);
      }
    }
    gearbox_route route;
    route.route = &r;
    route.timeout = RouteTimeout(r, config.limits);
    route.keys = library->keys() ? library->api().keys : nullptr;
    void* handler = library->api().create(&route);
    if (route.error || !handler) {
      // A handler made despite an error is the module's: give it back.
      if (handler && library->api().destroy) library->api().destroy(handler);
      const std::string key =
          route.error_key.empty() ? "" : " " + route.error_key;
      return At(config, route.error ? route.error_at : r.handler_at,
                Label(i) + key + ": module \"" + r.handler + "\": " +
                    route.error.value_or("create() failed without a reason"));
    }
    // Kept before the check below, so a rejected handler is destroyed too.
    modules->routes_.push_back({r.path, library, handler});
    if (route.keys) continue;  // checked against the list before create()
    if (auto unread = UnreadKey(config, i, route, r.handler)) return *unread;
  }
  return std::shared_ptr<const Modules>(std::move(modules));
}

std::vector<HandlerSchema> Modules::Schemas() const {
  std::vector<HandlerSchema> schemas;
  for (const auto& library : libraries_) {
    if (library->keys()) schemas.push_back(library->keys()->schema());
  }
  return schemas;
}

Modules::~Modules() {
  for (Route& route : routes_) {
    if (route.library->api().destroy)
      route.library->api().destroy(route.handler);
  }
  routes_.clear();  // then the libraries unload, last reference first
}

std::unique_ptr<Handler> Modules::MakeHandler(std::string_view path, int worker,
                                              int generation) const {
  SetModuleLogWorker(worker, generation);
  for (const Route& route : routes_) {
    if (route.path != path) continue;
    gearbox_worker w{};
    w.struct_size = sizeof w;
    w.index = worker;
    w.generation = generation;
    return MakeModuleHandler(shared_from_this(), *route.library, route.handler,
                             w);
  }
  return nullptr;
}

}  // namespace gearbox
