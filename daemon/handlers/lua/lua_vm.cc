#include "daemon/handlers/lua/lua_vm.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "daemon/handlers/lua/jit_probe.h"
#include "daemon/handlers/lua/lua_api.h"
#include "daemon/handlers/lua/lua_request.h"
#include "daemon/logging.h"

namespace gearbox::lua {
namespace {

// Reached only by an error outside any protected call: gearbox runs every
// script in one, so this is a broken invariant.
int Panic(lua_State* L) {
  const char* msg = lua_tostring(L, -1);
  fprintf(stderr, "gearboxd: Lua panic: %s\n", msg ? msg : "(no message)");
  abort();
}

// os.exit would end the worker from a script: gone. (A script is trusted
// code like a module: ffi still reaches libc. This guards against
// accidents, not against hostile scripts.)
void RemoveExit(lua_State* L) {
  lua_getglobal(L, "os");
  lua_pushnil(L);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}

void PrependPackagePath(lua_State* L, const std::string& path) {
  if (path.empty()) return;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  const std::string joined = path + ";" + lua_tostring(L, -1);
  lua_pop(L, 1);
  lua_pushlstring(L, joined.data(), joined.size());
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
}

}  // namespace

Vm::Vm(const LuaConfig& config, int worker, int generation, WorkerHome* home)
    : host_(std::make_unique<Host>(config.memory)) {
  host_->worker = worker;
  host_->generation = generation;
  host_->home = home;
  // luaL_newstate, not lua_newstate(our allocator): a non-GC64 LuaJIT
  // (x86_64 before GC64 became its default) refuses a foreign allocator
  // outright. CappedAlloc wraps the one the state was born with instead.
  L_ = luaL_newstate();
  if (!L_) {
    fprintf(stderr, "gearboxd: luaL_newstate: out of memory\n");
    abort();
  }
  lua_atpanic(L_, Panic);
  host_->alloc.Install(L_);
  luaL_openlibs(L_);
  // After the libraries: opening `jit` turns the engine on.
  const std::string& refused = JitRefusedReason();
  if (!refused.empty()) {
    luaJIT_setmode(L_, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    static std::once_flag logged;  // once per process: it holds for its life
    std::call_once(logged, [&] {
      LogWarn("lua_jit_off", "reason={}", LogQuote(refused));
    });
  }
  RemoveExit(L_);
  PrependPackagePath(L_, config.path);
  InstallApi(L_, host_.get());
  InstallRequestMeta(L_, host_.get());
}

Vm::~Vm() { lua_close(L_); }

std::string ProtectedCall(Vm& vm, int nargs, int nresults) {
  lua_State* L = vm.L();
  vm.host().alloc.Arm(true);
  const int status = lua_pcall(L, nargs, nresults, 0);
  vm.host().alloc.Arm(false);
  if (status == 0) return "";
  std::string message = lua_isstring(L, -1)
                            ? lua_tostring(L, -1)
                            : "(an error object that is not a string)";
  if (status == LUA_ERRMEM) message = "not enough memory ([lua] memory)";
  lua_pop(L, 1);
  return message;
}

}  // namespace gearbox::lua
