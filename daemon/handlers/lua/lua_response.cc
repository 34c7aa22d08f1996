// A handler's return values -> Response.
#include <strings.h>

#include <string>

#include "daemon/handlers/lua/lua_request.h"
#include "daemon/http/http_syntax.h"

namespace gearbox::lua {
namespace {

bool IsFieldValue(std::string_view value) {
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The interned copy of a Content-Type (Response keeps a view of it).
std::string_view Intern(Host& host, std::string_view type) {
  for (const std::string& known : host.content_types) {
    if (known == type) return known;
  }
  if (host.content_types.size() >= kMaxContentTypes) return {};
  return host.content_types.emplace_back(type);
}

// One header of the returned table (key -2, value -1); "" or what is wrong.
std::string AddHeader(lua_State* L, Host& host, Response& response) {
  if (lua_type(L, -2) != LUA_TSTRING) return "a header name is not a string";
  std::string_view name = lua_tostring(L, -2);
  if (!http::IsToken(name))
    return "bad header name \"" + std::string(name) + "\"";
  const int t = lua_type(L, -1);
  if (t != LUA_TSTRING && t != LUA_TNUMBER) {
    return "header " + std::string(name) + " is a " + luaL_typename(L, -1) +
           ", not a string";
  }
  lua_pushvalue(L, -1);  // tolstring converts a number in place
  size_t len;
  const char* text = lua_tolstring(L, -1, &len);
  const std::string_view value(text, len);
  lua_pop(L, 1);
  if (!IsFieldValue(value)) {
    return "header " + std::string(name) + " holds a control character";
  }
  for (std::string_view reserved :
       {"Content-Length", "Transfer-Encoding", "Connection"}) {
    if (SameName(name, reserved)) {
      return "gearbox sets " + std::string(reserved) + " itself";
    }
  }
  if (SameName(name, "Content-Type")) {
    const std::string_view interned = Intern(host, value);
    if (interned.empty()) {
      return "more than " + std::to_string(kMaxContentTypes) +
             " distinct Content-Types in one worker";
    }
    response.content_type = interned;
    return "";
  }
  response.extra_headers.append(name);
  response.extra_headers.append(": ");
  response.extra_headers.append(value);
  response.extra_headers.append("\r\n");
  return "";
}

}  // namespace

std::string ReadAnswer(lua_State* L, int n, Host& host, Response& response) {
  const int base = lua_gettop(L) - n;
  if (n < 1 || lua_type(L, base + 1) != LUA_TNUMBER) {
    return "the handler must return status, body[, headers]; its first "
           "value is " +
           std::string(n < 1 ? "missing" : luaL_typename(L, base + 1));
  }
  const lua_Number status = lua_tonumber(L, base + 1);
  if (!(status >= 100 && status <= 599) || status != static_cast<int>(status)) {
    return "status " + std::to_string(status) + " is not an integer 100..599";
  }
  response.status = static_cast<int>(status);
  if (n >= 2 && !lua_isnil(L, base + 2)) {
    size_t len;
    const char* body = lua_tolstring(L, base + 2, &len);
    if (!body) {
      return std::string("the body is a ") + luaL_typename(L, base + 2) +
             ", not a string";
    }
    response.body.assign(body, len);
  }
  if (n >= 3 && !lua_isnil(L, base + 3)) {
    if (!lua_istable(L, base + 3)) return "the headers are not a table";
    lua_pushnil(L);
    while (lua_next(L, base + 3)) {
      std::string wrong = AddHeader(L, host, response);
      lua_pop(L, 1);
      if (!wrong.empty()) {
        lua_pop(L, 1);
        return wrong;
      }
    }
  }
  lua_settop(L, base);
  return "";
}

}  // namespace gearbox::lua
