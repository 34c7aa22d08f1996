#include "daemon/handlers/lua/lua_runtime.h"

#include <time.h>

#include "daemon/handlers/lua/lua_coroutine.h"
#include "daemon/handlers/lua/run_blocking.h"
#include "daemon/logging.h"

namespace gearbox::lua {
namespace {

// How often an idle runtime may run a full collection to publish lua_kib.
constexpr auto kCollectEvery = std::chrono::seconds(1);

// Asked after every exchange: the coarse clock (a few ms of resolution)
// costs a fraction of steady_clock's read, and a second is all that matters.
std::chrono::nanoseconds CoarseNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// A script's init(worker) as a coroutine.
class InitCoroutine final : public Coroutine {
 public:
  using Coroutine::Coroutine;

 private:
  std::string Answer(int, Response&) override { return ""; }
  void Failed(const std::string& message, const std::string& traceback, bool,
              Response&) override {
    error = message;
    where = traceback;
  }

 public:
  std::string error, where;  // set when init raised an error
};

}  // namespace

std::shared_ptr<Runtime> Runtime::ForWorker(const ServerInfo& info) {
  // One per worker thread and generation (a reload's new generation gets a
  // new runtime, so an edited script is picked up, even on a thread that
  // served the old one).
  thread_local int generation = -1;
  thread_local std::weak_ptr<Runtime> current;
  std::shared_ptr<Runtime> runtime = current.lock();
  if (runtime && generation == info.generation) return runtime;
  runtime = std::make_shared<Runtime>(info);
  current = runtime;
  generation = info.generation;
  return runtime;
}

Runtime::Runtime(const ServerInfo& info)
    : info_(info),
      vm_(std::make_unique<Vm>(info.lua, info.worker, info.generation,
                               info.home)) {}

Runtime::~Runtime() {
  if (info_.slot) info_.slot->lua_kib.store(0, std::memory_order_relaxed);
}

int Runtime::Script(const std::string& path, Duration init_timeout) {
  for (size_t i = 0; i < scripts_.size(); ++i) {
    if (scripts_[i].path == path) return static_cast<int>(i);
  }
  scripts_.push_back({path, init_timeout, {}, ""});
  Load(scripts_.back());
  Publish(true);
  return static_cast<int>(scripts_.size() - 1);
}

const lua::Script* Runtime::Loaded(int index) const {
  const Entry& e = scripts_[static_cast<size_t>(index)];
  return e.error.empty() ? &e.script : nullptr;
}

void Runtime::Load(Entry& entry) {
  entry.script = {};
  const std::string* text = nullptr;
  if (info_.lua.sources) {
    auto it = info_.lua.sources->find(entry.path);
    if (it != info_.lua.sources->end()) text = &it->second;
  }
  entry.error = LoadScript(*vm_, entry.path, &entry.script, text);
  if (!entry.error.empty()) {
    // -t checked the script; it changed since, or its top level depends on
    // the worker (memory): its routes answer 500 until a reload.
    LogError("lua_load_failed", "worker={} script={} error={}", info_.worker,
             LogQuote(entry.path), LogQuote(entry.error));
    return;
  }
  if (entry.script.init != LUA_NOREF) RunInit(entry);
}

void Runtime::RunInit(Entry& entry) {
  InitCoroutine init(this, entry.script.init, entry.path);
  lua_State* co = init.co();
  lua_getglobal(co, "gearbox");
  lua_getfield(co, -1, "worker");
  lua_remove(co, -2);
  init.set_nargs(1);
  Response ignored;
  if (!RunBlocking(init, ignored, entry.init_timeout)) {
    init.error = "init did not end within the route's timeout";
  }
  // Its routes serve anyway, as OpenResty's init_worker: what init could
  // not warm, the handler meets cold.
  if (!init.error.empty()) {
    LogError("lua_init_failed", "worker={} script={} error={} traceback={}",
             info_.worker, LogQuote(entry.path), LogQuote(init.error),
             LogQuote(init.where));
  }
}

void Runtime::Ended(bool memory_error) {
  --active_;
  if (memory_error && !rebuild_ && !rebuilding_) {
    rebuild_ = true;
    LogWarn("lua_state_rebuild", "worker={} kib={} cap_kib={} active={}",
            info_.worker, vm_->kib(), vm_->host().alloc.cap() / 1024, active_);
  }
  if (active_ > 0) return;
  if (rebuild_) {
    Rebuild();
    return;
  }
  Publish(CoarseNow() - last_collect_ >= kCollectEvery);
}

void Runtime::Rebuild() {
  rebuild_ = false;
  rebuilding_ = true;  // an init past the cap now must not rebuild again
  vm_.reset();  // no coroutine is left: nothing refers into the old state
  vm_ = std::make_unique<Vm>(info_.lua, info_.worker, info_.generation,
                             info_.home);
  for (Entry& entry : scripts_) Load(entry);
  rebuilding_ = false;
  Publish(true);
}

void Runtime::Publish(bool collect) {
  if (collect) {
    lua_gc(vm_->L(), LUA_GCCOLLECT, 0);
    last_collect_ = CoarseNow();
  }
  if (info_.slot && collect) {
    info_.slot->lua_kib.store(vm_->kib(), std::memory_order_relaxed);
  }
}

}  // namespace gearbox::lua
