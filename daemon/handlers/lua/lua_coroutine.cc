#include "daemon/handlers/lua/lua_coroutine.h"

#include "daemon/handlers/lua/lua_runtime.h"
#include "daemon/handlers/lua/lua_script.h"
#include "daemon/handlers/lua/lua_tcp.h"

namespace gearbox::lua {

Coroutine::Coroutine(Runtime* runtime, int fn, const std::string& label)
    : runtime_(runtime), label_(label) {
  Host& host = runtime_->vm().host();
  if (!host.idle_threads.empty()) {
    ctx_.co = host.idle_threads.back().co;
    ref_ = host.idle_threads.back().ref;
    host.idle_threads.pop_back();
  } else {
    lua_State* L = runtime_->vm().L();
    ctx_.co = lua_newthread(L);
    ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  lua_rawgeti(ctx_.co, LUA_REGISTRYINDEX, fn);
  runtime_->Started();
}

Coroutine::~Coroutine() {
  ctx_.sub.reset();  // a query in flight is cancelled by its own exchange
  CloseSockets(ctx_);
  Host& host = runtime_->vm().host();
  // A coroutine that returned can run another function; one that failed,
  // or is still suspended in a wait, cannot.
  if (finished_ && host.idle_threads.size() < kMaxIdleThreads) {
    lua_settop(ctx_.co, 0);
    host.idle_threads.push_back({ctx_.co, ref_});
  } else {
    luaL_unref(runtime_->vm().L(), LUA_REGISTRYINDEX, ref_);
  }
  runtime_->Ended(memory_error_);
}

int Coroutine::PushWakeResults(const Wake& wake) {
  if (ctx_.gives == WaitCtx::Gives::kNothing) return 0;
  if (wake.why == Wake::Why::kFdsReady) {
    lua_pushboolean(ctx_.co, 1);
    return 1;
  }
  lua_pushnil(ctx_.co);
  lua_pushliteral(ctx_.co, "timeout");
  return 2;
}

bool Coroutine::RunFirst() {
  first_status_ = Enter(nargs_);
  return first_status_ == LUA_YIELD;
}

Step Coroutine::Resume(const Wake& wake, Response& response) {
  if (wake.why == Wake::Why::kStart) {
    if (first_status_ < 0) return Settle(Enter(nargs_), response);
    const int status = first_status_;
    first_status_ = -1;
    return Settle(status, response);
  }
  if (ctx_.sub) {
    Step step = ctx_.sub->Resume(wake, ctx_.sub_response);
    if (!step.done()) return step;
    const int n = ctx_.finish(ctx_.co, ctx_);
    ctx_.sub.reset();
    return Settle(Enter(n), response);
  }
  return Settle(Enter(PushWakeResults(wake)), response);
}

int Coroutine::Enter(int nargs) {
  Host& host = runtime_->vm().host();
  host.current = &ctx_;
  host.alloc.Arm(true);
  const int status = lua_resume(ctx_.co, nargs);
  host.alloc.Arm(false);
  host.current = nullptr;
  if (host.alloc.TakeRefused()) memory_error_ = true;
  return status;
}

Step Coroutine::Settle(int status, Response& response) {
  if (status == LUA_YIELD) {
    if (ctx_.waiting) {
      ctx_.waiting = false;
      return ctx_.step;
    }
    lua_settop(ctx_.co, 0);
    lua_pushliteral(ctx_.co,
                    "coroutine.yield() outside a gearbox call: only "
                    "gearbox.* waits may suspend a handler");
    return Error(LUA_ERRRUN, response);
  }
  if (status != 0) return Error(status, response);
  finished_ = true;
  const std::string wrong = Answer(lua_gettop(ctx_.co), response);
  if (!wrong.empty()) {
    lua_settop(ctx_.co, 0);
    lua_pushstring(ctx_.co, (label_ + ": " + wrong).c_str());
    return Error(LUA_ERRRUN, response);
  }
  return Step::Done();
}

Step Coroutine::Error(int status, Response& response) {
  lua_State* L = runtime_->vm().L();
  const bool memory = status == LUA_ERRMEM || memory_error_;
  memory_error_ = memory;
  std::string message = lua_isstring(ctx_.co, -1)
                            ? lua_tostring(ctx_.co, -1)
                            : "(an error object that is not a string)";
  if (status == LUA_ERRMEM) message = "not enough memory ([lua] memory)";
  luaL_traceback(L, ctx_.co, nullptr, 0);
  std::string traceback = lua_tostring(L, -1);
  lua_pop(L, 1);
  Failed(WithFullPath(std::move(message), label_),
         WithFullPath(std::move(traceback), label_), memory, response);
  return Step::Done();
}

}  // namespace gearbox::lua
