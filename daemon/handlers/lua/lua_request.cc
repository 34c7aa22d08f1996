#include "daemon/handlers/lua/lua_request.h"

#include <cctype>

#include "daemon/http/http_syntax.h"

namespace gearbox::lua {
namespace {

// Pushes `raw` form-decoded ('+' is a space, %XX a byte; a malformed escape
// stays as written).
void PushDecoded(lua_State* L, std::string_view raw) {
  if (raw.find_first_of("+%") == std::string_view::npos) {
    lua_pushlstring(L, raw.data(), raw.size());
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '+') {
      luaL_addchar(&b, ' ');
    } else if (raw[i] == '%' && i + 2 < raw.size() &&
               http::HexDigitValue(raw[i + 1]) >= 0 &&
               http::HexDigitValue(raw[i + 2]) >= 0) {
      luaL_addchar(&b, static_cast<char>(http::HexDigitValue(raw[i + 1]) * 16 +
                                         http::HexDigitValue(raw[i + 2])));
      i += 2;
    } else {
      luaL_addchar(&b, raw[i]);
    }
  }
  luaL_pushresult(&b);
}

// t[key] = value (the key at -2, the value at -1, both popped); a key
// already there becomes an array of its values, in order.
void AddArgument(lua_State* L, int t) {
  lua_pushvalue(L, -2);
  lua_rawget(L, t);  // key, value, old
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_rawset(L, t);
    return;
  }
  if (!lua_istable(L, -1)) {
    lua_createtable(L, 2, 0);  // key, value, old, array
    lua_insert(L, -2);
    lua_rawseti(L, -2, 1);  // array[1] = old
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -2);
    lua_rawset(L, t);  // t[key] = array
  }
  lua_insert(L, -2);  // key, array, value
  lua_rawseti(L, -2, static_cast<int>(lua_objlen(L, -2)) + 1);
  lua_pop(L, 2);
}

void PushQuery(lua_State* L, std::string_view query) {
  lua_newtable(L);
  const int t = lua_gettop(L);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{}
                                          : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    PushDecoded(L, pair.substr(0, eq));
    if (eq == std::string_view::npos) {
      lua_pushboolean(L, 1);
    } else {
      PushDecoded(L, pair.substr(eq + 1));
    }
    AddArgument(L, t);
  }
}

void PushHeaders(lua_State* L, const Request& request, const Host& host) {
  lua_createtable(L, 0, static_cast<int>(request.headers.size()));
  char name[128];
  for (const Header& h : request.headers) {
    if (h.name.size() > sizeof name) continue;  // no such header is useful
    for (size_t i = 0; i < h.name.size(); ++i) {
      name[i] =
          static_cast<char>(tolower(static_cast<unsigned char>(h.name[i])));
    }
    lua_pushlstring(L, name, h.name.size());
    lua_pushvalue(L, -1);
    lua_rawget(L, -3);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushlstring(L, h.value.data(), h.value.size());
    } else {
      lua_pushliteral(L, ", ");
      lua_pushlstring(L, h.value.data(), h.value.size());
      lua_concat(L, 3);
    }
    lua_rawset(L, -3);
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, host.headers_meta);
  lua_setmetatable(L, -2);
}

}  // namespace

void InstallRequestMeta(lua_State* L, Host* host) {
  lua_newtable(L);
  luaL_loadstring(
      L,
      "local lower, rawget = string.lower, rawget\n"
      "return function(t, k)\n"
      "  if type(k) == 'string' then return rawget(t, lower(k)) end\n"
      "end");
  lua_call(L, 0, 1);
  lua_setfield(L, -2, "__index");
  host->headers_meta = luaL_ref(L, LUA_REGISTRYINDEX);
}

void PushRequest(lua_State* L, const Request& request, const Host& host) {
  lua_createtable(L, 0, 8);
  lua_pushlstring(L, request.method.data(), request.method.size());
  lua_setfield(L, -2, "method");
  lua_pushlstring(L, request.path.data(), request.path.size());
  lua_setfield(L, -2, "path");
  PushQuery(L, request.query);
  lua_setfield(L, -2, "query");
  PushHeaders(L, request, host);
  lua_setfield(L, -2, "headers");
  lua_pushlstring(L, request.body.data(), request.body.size());
  lua_setfield(L, -2, "body");
  lua_createtable(L, 0, request.param_count);  // the route's path captures
  for (const PathParam& p : request.Params()) {
    lua_pushlstring(L, p.name.data(), p.name.size());
    lua_pushlstring(L, p.value.data(), p.value.size());
    lua_rawset(L, -3);
  }
  lua_setfield(L, -2, "params");
}

}  // namespace gearbox::lua
