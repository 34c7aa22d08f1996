// One Lua runtime per worker, shared by that worker's Lua routes: built by
// the worker's first Lua handler instance, on the worker's own thread (after
// fork in a prefork child), destroyed with the last. Each script is compiled
// and its init run once per runtime, however many routes name it. No lock:
// a runtime is only ever touched by its worker.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "daemon/handlers/handlers.h"
#include "daemon/handlers/lua/lua_script.h"
#include "daemon/handlers/lua/lua_vm.h"

namespace gearbox::lua {

class Runtime {
 public:
  // The calling worker's runtime for info's generation, made if none is
  // alive on this thread.
  static std::shared_ptr<Runtime> ForWorker(const ServerInfo& info);
  Runtime(const ServerInfo& info);
  ~Runtime();

  // The index of `path`'s script, loading it (top level, then init, which
  // may wait: run to its end here, bounded by init_timeout) on first use.
  // A script that fails to load still gets an index: its routes answer 500.
  int Script(const std::string& path, Duration init_timeout);
  // Null when the script failed to load (error() says why).
  const lua::Script* Loaded(int index) const;
  const std::string& error(int index) const { return scripts_[index].error; }

  Vm& vm() { return *vm_; }
  // Bracket every coroutine gearbox runs. Ended() rebuilds the state once a
  // memory error was seen and no coroutine is left, and refreshes lua_kib.
  void Started() { ++active_; }
  void Ended(bool memory_error);

 private:
  struct Entry {
    std::string path;
    Duration init_timeout;
    lua::Script script;
    std::string error;  // "" when loaded
  };
  void Load(Entry& entry);
  void RunInit(Entry& entry);
  void Rebuild();
  void Publish(bool collect);

  const ServerInfo info_;
  std::unique_ptr<Vm> vm_;
  std::vector<Entry> scripts_;
  int active_ = 0;
  bool rebuild_ = false;
  bool rebuilding_ = false;
  std::chrono::nanoseconds last_collect_{};  // CLOCK_MONOTONIC_COARSE
};

}  // namespace gearbox::lua
