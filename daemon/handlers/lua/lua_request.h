// The `req` table a handler gets, and how its return values become the
// response.
#pragma once

#include <luajit-2.1/lua.hpp>
#include <string>

#include "daemon/handlers/lua/lua_host.h"
#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox::lua {

// Pushes req: method, path, query (decoded; a repeated key gives an array,
// a key without '=' gives true), headers (lower-case keys, any-case lookup;
// repeats joined with ", "), body, params (path captures), client.
void PushRequest(lua_State* L, const Request& request, const Host& host);

// The values a handler returned (the n on top of L): status, body[,
// headers]. "" or what is wrong with them.
std::string ReadAnswer(lua_State* L, int n, Host& host, Response& response);

// Sets up the metatable PushRequest gives req.headers (once per state).
void InstallRequestMeta(lua_State* L, Host* host);

}  // namespace gearbox::lua
