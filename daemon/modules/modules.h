// A generation's modules: the [[module]] libraries it loaded (a private copy
// each, see module_library.h) and, for each route that names one, the
// handler the module's create() made. Built in the master before any worker
// exists (by `gearboxd -t` too, so every module error is a config error) and
// shared read-only by the generation's workers; each worker makes its own
// instances from it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "config/loader.h"
#include "daemon/handler.h"

namespace gearbox {

class ModuleLibrary;
class Modules;
using ModulesResult = std::variant<std::shared_ptr<const Modules>, ConfigError>;

class Modules : public std::enable_shared_from_this<Modules> {
 public:
  // Loads every [[module]] of `config` and runs create() for every route
  // that names one. A missing file, a failed dlopen, a wrong ABI, a key the
  // module rejects or never reads: a ConfigError at file:line:col. The
  // routes of a module that declares its keys get them checked and their
  // defaults filled in (in `config`, as the loader does for built-ins).
  static ModulesResult Load(Config& config);
  // destroy() for every route handler, then the libraries unload (the
  // generation has drained: no worker holds an instance).
  ~Modules();
  Modules(const Modules&) = delete;
  Modules& operator=(const Modules&) = delete;

  bool empty() const { return routes_.empty(); }
  // The key schemas of the modules that declare their keys, named by their
  // [[module]] name (for -p); valid as long as this object.
  std::vector<HandlerSchema> Schemas() const;
  // The calling worker's own instance of the module route at `path`
  // (worker_init() runs now, on this thread). Null for another path.
  std::unique_ptr<Handler> MakeHandler(std::string_view path, int worker,
                                       int generation) const;

 private:
  Modules() = default;

  struct Route {
    std::string path;
    std::shared_ptr<const ModuleLibrary> library;
    void* handler = nullptr;  // what create() returned
  };
  std::vector<std::shared_ptr<const ModuleLibrary>> libraries_;
  std::vector<Route> routes_;
};

}  // namespace gearbox
