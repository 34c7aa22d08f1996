#include "daemon/handlers/lua/lua_script.h"

#include <algorithm>

namespace gearbox::lua {
namespace {

bool IsMethodName(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
  });
}

// Checks the method table on top of the stack and takes refs of its
// functions; "" or what is wrong.
std::string TakeMethods(lua_State* L, const std::string& path, Script* out) {
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    const std::string key =
        lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (key != "init" && !IsMethodName(key)) {
      lua_pop(L, 2);
      return path +
             ": the returned table's keys are methods (GET, POST, ...) and "
             "init; got " +
             (key.empty() ? "a key that is not a string" : "\"" + key + "\"");
    }
    if (!lua_isfunction(L, -1)) {
      lua_pop(L, 2);
      return path + ": the returned table's " + key + " is a " +
             luaL_typename(L, -1) + ", not a function";
    }
    const int ref = luaL_ref(L, LUA_REGISTRYINDEX);  // pops the value
    if (key == "init") {
      out->init = ref;
    } else {
      out->methods.emplace_back(key, ref);
    }
  }
  std::sort(out->methods.begin(), out->methods.end());
  if (out->methods.empty()) {
    return path +
           ": the returned table has no method (GET = function(req) ...)";
  }
  return "";
}

}  // namespace

std::string ResolveScript(const std::string& script, const LuaConfig& lua) {
  if (script.empty() || script[0] == '/') return script;
  return lua.base_dir + "/" + script;
}

std::string WithFullPath(std::string text, const std::string& path) {
  for (size_t at = text.find("..."); at != std::string::npos;
       at = text.find("...", at)) {
    const size_t colon = text.find(':', at + 3);
    if (colon == std::string::npos) break;
    const std::string_view tail(text.data() + at + 3, colon - at - 3);
    if (!tail.empty() && path.size() > tail.size() && path.ends_with(tail)) {
      text.replace(at, colon - at, path);
      at += path.size();
    } else {
      at += 3;
    }
  }
  return text;
}

int Script::For(std::string_view method) const {
  if (handler != LUA_NOREF) return handler;
  for (const auto& [name, ref] : methods) {
    if (name == method) return ref;
  }
  return method == "HEAD" ? For("GET") : LUA_NOREF;
}

std::string Script::Allow() const {
  std::vector<std::string> names;
  for (const auto& m : methods) names.push_back(m.first);
  if (For("GET") != LUA_NOREF && For("HEAD") != LUA_NOREF &&
      std::find(names.begin(), names.end(), "HEAD") == names.end()) {
    names.push_back("HEAD");
  }
  std::sort(names.begin(), names.end());
  std::string allow;
  for (const std::string& n : names) allow += (allow.empty() ? "" : ", ") + n;
  return allow;
}

std::string LoadScript(Vm& vm, const std::string& path, Script* out,
                       const std::string* text) {
  lua_State* L = vm.L();
  out->path = path;
  const std::string chunk = "@" + path;  // positions say path:line
  const int loaded =
      text ? luaL_loadbuffer(L, text->data(), text->size(), chunk.c_str())
           : luaL_loadfile(L, path.c_str());
  if (loaded != 0) {
    std::string message = lua_tostring(L, -1);
    lua_pop(L, 1);
    return WithFullPath(std::move(message), path);
  }
  if (std::string error = ProtectedCall(vm, 0, 1); !error.empty()) {
    return WithFullPath(std::move(error), path);
  }
  if (lua_isfunction(L, -1)) {
    out->handler = luaL_ref(L, LUA_REGISTRYINDEX);
    return "";
  }
  if (!lua_istable(L, -1)) {
    const std::string type = luaL_typename(L, -1);
    lua_pop(L, 1);
    return path +
           ": the script must return a function(req) or a table of them by "
           "method; it returned " +
           (type == "nil" ? "nothing" : "a " + type);
  }
  std::string error = TakeMethods(L, path, out);
  lua_pop(L, 1);
  return error;
}

}  // namespace gearbox::lua
