#include "daemon/handlers/lua/lua_check.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "daemon/handlers/lua/lua_script.h"
#include "daemon/handlers/lua/lua_vm.h"

namespace gearbox {

namespace {

// The file's bytes, or "" with *error set.
std::string ReadScript(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path + ": " + strerror(errno);
    return "";
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<ConfigError> CheckLuaScripts(Config* checked) {
  const Config& config = *checked;
  auto sources = std::make_shared<std::map<std::string, std::string>>();
  for (size_t i = 0; i < config.routes.size(); ++i) {
    const RouteConfig& route = config.routes[i];
    if (route.module || route.handler != "lua") continue;
    const RouteParam* script = route.params.Find("script");
    const std::string path =
        lua::ResolveScript(std::get<std::string>(script->value), config.lua);
    std::string error;
    std::string text = ReadScript(path, &error);
    if (error.empty()) {
      lua::Vm vm(config.lua, 0, 0);
      lua::Script loaded;
      error = lua::LoadScript(vm, path, &loaded, &text);
    }
    if (!error.empty()) {
      const SourcePosition at =
          script->where.in_file() ? script->where : route.where;
      return ConfigError{
          config.source, at.line, at.column,
          "[[route]] #" + std::to_string(i + 1) + " script: " + error};
    }
    (*sources)[path] = std::move(text);
  }
  checked->lua.sources = std::move(sources);
  return std::nullopt;
}

}  // namespace gearbox
