// A script as loaded into a state: compiled, its top level run (waits raise
// there: host.current is null), its returned value checked and kept.
#pragma once

#include <luajit-2.1/lua.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/handlers/lua/lua_vm.h"

namespace gearbox::lua {

struct Script {
  std::string path;
  // Registry refs (LUA_NOREF when absent): the handler function when the
  // script returned one; otherwise one per method of its table, and init.
  int handler = LUA_NOREF;
  std::vector<std::pair<std::string, int>> methods;
  int init = LUA_NOREF;

  // The function that serves `method` (HEAD falls back to GET), or
  // LUA_NOREF: then the response is 405 with Allow().
  int For(std::string_view method) const;
  // "GET, HEAD, POST": what a 405 lists.
  std::string Allow() const;
};

// A route's script as written, resolved: a relative one is relative to the
// config file's directory (as a [[module]] path).
std::string ResolveScript(const std::string& script, const LuaConfig& lua);

// Lua shortens a long chunk name to "...<its tail>" in positions
// (LUA_IDSIZE): each such position of `path` in `text` is written out whole,
// so a log line names the script an operator can open.
std::string WithFullPath(std::string text, const std::string& path);

// Loads `path` into vm: "" on success (out filled, refs held in vm's
// registry), else "path:line: message" (a syntax error, an error in the top
// level, a returned value of the wrong shape).
// `text`: the script's source as already read (the checked copy); null:
// read path now.
std::string LoadScript(Vm& vm, const std::string& path, Script* out,
                       const std::string* text = nullptr);

}  // namespace gearbox::lua
