// What the gearbox.* functions of one Lua state reach through their upvalue:
// the state's allocator, the coroutine running now, the worker's identity,
// its cosocket pool. One Host per lua_State; never shared across threads.
#pragma once

#include <deque>
#include <luajit-2.1/lua.hpp>
#include <memory>
#include <string>
#include <vector>

#include "daemon/handler.h"
#include "daemon/handlers/lua/lua_alloc.h"
#include "daemon/handlers/lua/tcp_pool.h"
#include "daemon/worker_home.h"

namespace gearbox::lua {

struct TcpSocket;
class RequestSource;

// One coroutine gearbox runs (a request's, or a script's init): what its
// last waiting call asked for, and what it must give back when it ends.
struct WaitCtx {
  lua_State* co = nullptr;
  // Set by a gearbox call just before it yields: the Step to return.
  bool waiting = false;
  Step step;
  // What the resumed call returns: nothing (sleep), or true / nil, "timeout"
  // (a cosocket's fd wait).
  enum class Gives { kNothing, kReady } gives = Gives::kNothing;
  // A delegated exchange (a query on the shared postgres code): Wakes go to
  // it until it is done, then `finish` turns its response into the call's
  // return values.
  std::unique_ptr<Exchange> sub;
  Response sub_response;
  int (*finish)(lua_State* co, WaitCtx& ctx) = nullptr;
  // Cosockets this coroutine opened: closed when it ends, whatever happened.
  std::vector<TcpSocket*> sockets;
  // A request's coroutine: its req table (identity only) and what req's
  // lazy fields are built from (lua_request.h). Null for init.
  const void* req = nullptr;
  const RequestSource* source = nullptr;
};

struct Host {
  explicit Host(int64_t memory) : alloc(memory) {}
  CappedAlloc alloc;
  WaitCtx* current = nullptr;  // null while a script's top level runs
  int worker = 0;
  int generation = 0;
  // The worker's home (ServerInfo::home) for its postgres pools; null in
  // the -t check's throwaway state (nothing connects there).
  WorkerHome* home = nullptr;
  TcpPool pool;
  // Content-Type values a script answered with: Response::content_type is a
  // view that must outlive the response, so each distinct value is kept
  // for the state's life (bounded: kMaxContentTypes). A deque: its elements
  // never move. Scanned linearly: a worker answers with a handful.
  std::deque<std::string> content_types;
  // Registry refs of two tables lua_response.cc keeps: header names already
  // checked (name -> kind; checked_names of them), and content_types'
  // indices by value.
  int checked_names_ref = LUA_NOREF;
  int content_types_ref = LUA_NOREF;
  int checked_names = 0;
  // Coroutines that ran to their end, ready for the next request (a new
  // thread and its registry slot cost more than the request itself).
  struct IdleThread {
    lua_State* co;
    int ref;
  };
  std::vector<IdleThread> idle_threads;
  int req_meta = LUA_NOREF;      // req's metatable (lua_request.cc)
  int headers_meta = LUA_NOREF;  // req.headers' metatable (lua_request.cc)
};

inline constexpr size_t kMaxContentTypes = 256;
inline constexpr size_t kMaxIdleThreads = 256;

// The Host of the gearbox.* function being called (its upvalue 1).
inline Host& HostOf(lua_State* L) {
  return *static_cast<Host*>(lua_touserdata(L, lua_upvalueindex(1)));
}

// The coroutine a waiting call may yield from, or a Lua error naming `what`
// (at the top level: "not available while the script loads"; in a
// coroutine of the script's own: it cannot be resumed by gearbox).
WaitCtx& WaitingCaller(lua_State* L, const char* what);

// Yields the running coroutine with `ctx.step` (set by the caller).
int YieldStep(lua_State* L, WaitCtx& ctx, WaitCtx::Gives gives);

}  // namespace gearbox::lua
