// One configured Lua state: the standard libraries less os.exit, the [lua]
// package.path, the gearbox.* API, the memory cap, the JIT on or off.
#pragma once

#include <luajit-2.1/lua.hpp>
#include <memory>
#include <string>

#include "config/config.h"
#include "daemon/handlers/lua/lua_host.h"

namespace gearbox::lua {

class Vm {
 public:
  Vm(const LuaConfig& config, int worker, int generation,
     WorkerHome* home = nullptr);
  // Every coroutine gearbox ran in it has ended (their WaitCtx are gone).
  ~Vm();
  Vm(const Vm&) = delete;
  Vm& operator=(const Vm&) = delete;

  lua_State* L() const { return L_; }
  Host& host() { return *host_; }
  // KiB the state holds now (live data and garbage not yet collected).
  size_t kib() const { return host_->alloc.used() / 1024; }

 private:
  std::unique_ptr<Host> host_;  // declared first: outlives L_
  lua_State* L_ = nullptr;
};

// A script's file:line error, or the top level's, as "path:line: message".
// Runs `fn` (on top of L's stack, popped) with `nargs` arguments below it in
// a protected call with the cap armed; returns "" on success.
std::string ProtectedCall(Vm& vm, int nargs, int nresults);

}  // namespace gearbox::lua
