// The gearbox.* table a script sees (docs/lua.md is its reference).
#pragma once

#include <luajit-2.1/lua.hpp>

#include "daemon/handlers/lua/lua_host.h"

namespace gearbox::lua {

// Sets the global `gearbox` in L: sleep, now, log, worker, null, json, tcp
// (and, once the postgres part is in, postgres). `host` outlives L.
void InstallApi(lua_State* L, Host* host);

// The parts, each in its own file.
void InstallJson(lua_State* L, Host* host);      // gearbox.json, gearbox.null
void InstallTcp(lua_State* L, Host* host);       // gearbox.tcp
void InstallPostgres(lua_State* L, Host* host);  // gearbox.postgres
// Pushes the value `text` holds (1), or nil and why it is not JSON (2).
int PushJson(lua_State* L, const char* text, size_t len);
// Sets field `name` of the table on top of the stack to fn with host as
// upvalue 1.
void SetFunction(lua_State* L, Host* host, const char* name, lua_CFunction fn);

}  // namespace gearbox::lua
