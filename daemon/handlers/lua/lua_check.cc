#include "daemon/handlers/lua/lua_check.h"

#include "daemon/handlers/lua/lua_script.h"
#include "daemon/handlers/lua/lua_vm.h"

namespace gearbox {

std::optional<ConfigError> CheckLuaScripts(const Config& config) {
  for (size_t i = 0; i < config.routes.size(); ++i) {
    const RouteConfig& route = config.routes[i];
    if (route.module || route.handler != "lua") continue;
    const RouteParam* script = route.params.Find("script");
    const std::string path =
        lua::ResolveScript(std::get<std::string>(script->value), config.lua);
    lua::Vm vm(config.lua, 0, 0);
    lua::Script loaded;
    const std::string error = lua::LoadScript(vm, path, &loaded);
    if (!error.empty()) {
      const SourcePosition at =
          script->where.in_file() ? script->where : route.where;
      return ConfigError{
          config.source, at.line, at.column,
          "[[route]] #" + std::to_string(i + 1) + " script: " + error};
    }
  }
  return std::nullopt;
}

}  // namespace gearbox
