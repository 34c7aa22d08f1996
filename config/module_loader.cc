// [[module]]: each entry read, named apart from the built-in handlers and the
// other modules, its path resolved against the file that names it.
#include <algorithm>
#include <string>

#include "config/fields.h"
#include "config/internal.h"
#include "config/loader_internal.h"

namespace gearbox::config_internal {

bool Loader::Modules(const toml::array& array) {
  return EachTable(array, "module", &Loader::Module);
}

bool Loader::Module(const std::string& label, const toml::table& table) {
  ModuleConfig module;
  module.where = Position(table.source().begin);
  if (!ReadTable(label, table, config_internal::ModuleFields(&module))) {
    return false;
  }
  const toml::node* name = table.get("name");
  const toml::node* path = table.get("path");
  if (!name || !path) {
    return Fail(table.source().begin,
                label + ": missing required key " +
                    (name ? "\"path\" (the .so file)"
                          : "\"name\" (what routes' handler = names)"));
  }
  if (FindSchema(vocabulary_.handlers, module.name)) {
    // Every built-in name is taken, the fault-test ones too.
    std::vector<std::string_view> taken = handler_names_;
    taken.insert(taken.end(), fault_test_names_.begin(),
                 fault_test_names_.end());
    return Fail(name->source().begin,
                label + " name: " + QuoteToml(module.name) +
                    " is a built-in handler; give the module another name "
                    "(built-in: " +
                    Join(taken) + ")");
  }
  for (const ModuleConfig& other : config_.modules) {
    if (other.name == module.name) {
      return Fail(name->source().begin,
                  label + " name: duplicate module name " +
                      QuoteToml(module.name) + " (first at line " +
                      std::to_string(other.where.line) + ")");
    }
  }
  module.path_at = Position(path->source().begin);
  // Relative to the file that names it, not to gearboxd's working directory.
  const size_t slash = source_.rfind('/');
  if (module.path[0] != '/' && slash != std::string::npos) {
    module.path = source_.substr(0, slash + 1) + module.path;
  }
  config_.modules.push_back(std::move(module));
  return true;
}

bool Loader::IsModule(std::string_view name) const {
  return std::any_of(config_.modules.begin(), config_.modules.end(),
                     [&](const ModuleConfig& m) { return m.name == name; });
}

}  // namespace gearbox::config_internal
