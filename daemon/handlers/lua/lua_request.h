// The `req` table a handler gets, and how its return values become the
// response.
//
// Each of req's fields (method, path, query, headers, body, params,
// client) is built on its first read (req's metatable), so a request pays
// only for what its handler reads. They are built from a
// RequestSource: views of the Request while it is valid (Handler::Start),
// copied into the exchange when the handler first waits (the connection
// reuses the request's buffer after Start).
#pragma once

#include <luajit-2.1/lua.hpp>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/handlers/lua/lua_host.h"
#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox::lua {

// What req's lazy fields are built from.
class RequestSource {
 public:
  // Views `request`: valid while it is.
  void View(const Request& request);
  // Copies what the views see, so the fields can still be built after the
  // request's buffer is reused. Allocates: only a handler that waits pays.
  // The body becomes a Lua string in L's registry at once, so a body read
  // after the wait is still copied only once.
  void Keep(lua_State* L);
  // Drops what Keep put in L's registry.
  void Release(lua_State* L);

  // The client's address as text; "" when unknown. Computed on demand
  // (formatting it costs more than the rest), after Keep from the kept copy.
  std::string_view Client() const { return request_->Client(); }

  std::string_view method, path, query, body;
  std::span<const Header> headers;
  std::span<const PathParam> params;
  int body_ref = LUA_NOREF;  // the kept body, when Keep made one

 private:
  const Request* request_ = nullptr;  // the request, then kept_
  // After Keep: what Request::Client() reads (origin, headers, remote_addr),
  // viewing bytes_. Made by Keep: a Request is large to construct.
  std::unique_ptr<Request> kept_;
  std::string bytes_;
  std::vector<PathParam> params_;
};

// Pushes req for `ctx`'s coroutine (ctx.source must be set and outlive its
// reads), its fields still unbuilt. Only the coroutine that owns ctx may
// build them; read after it ended, they raise an error.
void PushRequest(lua_State* L, WaitCtx& ctx, const Host& host);

// The values a handler returned (the n on top of L): status, body[,
// headers]. "" or what is wrong with them.
std::string ReadAnswer(lua_State* L, int n, Host& host, Response& response);

// Sets up req's and req.headers' metatables, and ReadAnswer's tables of
// checked header names and content types (once per state).
void InstallRequestMeta(lua_State* L, Host* host);

}  // namespace gearbox::lua
