// `lua`: a route served by a Lua script (docs/lua.md). Each request runs in
// its own coroutine on the worker's runtime (lua_runtime.h); every wait is a
// Step, so the same script runs under every model.
#include <memory>
#include <string>

#include "daemon/handlers/handlers.h"
#include "daemon/handlers/lua/lua_coroutine.h"
#include "daemon/handlers/lua/lua_request.h"
#include "daemon/handlers/lua/lua_runtime.h"
#include "daemon/logging.h"

namespace gearbox {
namespace {

using lua::Runtime;

// What a route's exchanges share: owned by its handler instance.
struct LuaRoute {
  std::string path;
  std::string script;
  uint64_t errors = 0;  // this worker's runtime errors on the route
};

class LuaRequestExchange final : public lua::Coroutine {
 public:
  // Runs the handler up to its first wait (or its end) at once: req's lazy
  // fields view `request`, which is valid only until Start returns.
  LuaRequestExchange(Runtime* runtime, int fn, LuaRoute* route,
                     const Request& request)
      : Coroutine(runtime, fn, route->script),
        runtime_(runtime),
        route_(route) {
    source_.View(request);
    ctx().source = &source_;
    lua::PushRequest(co(), ctx(), runtime->vm().host());
    set_nargs(1);
    if (RunFirst()) source_.Keep(runtime->vm().L());
  }
  ~LuaRequestExchange() override { source_.Release(runtime_->vm().L()); }

 private:
  std::string Answer(int n, Response& response) override {
    return lua::ReadAnswer(co(), n, runtime_->vm().host(), response);
  }

  void Failed(const std::string& message, const std::string& traceback,
              bool memory, Response& response) override {
    ++route_->errors;
    LogError("lua_error",
             "route={} script={} error={} memory={} errors={} traceback={}",
             LogQuote(route_->path), LogQuote(route_->script),
             LogQuote(message), memory, route_->errors, LogQuote(traceback));
    response.Reset();
    response.status = 500;
    response.body = "internal server error\n";
    response.handler_error = true;
  }

  Runtime* const runtime_;
  LuaRoute* const route_;
  lua::RequestSource source_;
};

class LuaHandler final : public Handler {
 public:
  LuaHandler(const RouteConfig& route, const ServerInfo& info)
      : runtime_(Runtime::ForWorker(info)) {
    route_.path = route.path;
    route_.script = lua::ResolveScript(route.params.Text("script"), info.lua);
    script_ = runtime_->Script(route_.script, info.lua.init_timeout);
  }

  std::unique_ptr<Exchange> Start(const Request& request) override {
    const lua::Script* script = runtime_->Loaded(script_);
    if (!script) return Answer(500, "internal server error\n");
    const int fn = script->For(request.method);
    if (fn == LUA_NOREF) {
      return Immediately([allow = script->Allow()](Response& response) {
        response.status = 405;
        response.body = "method not allowed\n";
        response.extra_headers = "Allow: " + allow + "\r\n";
      });
    }
    return std::make_unique<LuaRequestExchange>(runtime_.get(), fn, &route_,
                                                request);
  }

 private:
  static std::unique_ptr<Exchange> Answer(int status, const char* body) {
    return Immediately([status, body](Response& response) {
      response.status = status;
      response.body = body;
    });
  }

  // Declared first: destroyed last, after the route the exchanges read.
  std::shared_ptr<Runtime> runtime_;
  LuaRoute route_;
  int script_ = -1;
};

}  // namespace

std::unique_ptr<Handler> MakeLuaHandler(const RouteConfig& route,
                                        const ServerInfo& info) {
  return std::make_unique<LuaHandler>(route, info);
}

}  // namespace gearbox
