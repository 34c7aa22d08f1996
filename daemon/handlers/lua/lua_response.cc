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

// What a header name a handler returned turned out to be. The first time a
// name is seen it is checked in full; then it is remembered by value in a
// Lua table of the state (a lookup of an interned string), so a handler
// that answers with the same headers each time checks each name once.
enum NameKind : int { kUnchecked = 0, kPlain = 1, kContentType = 2 };
constexpr int kMaxCheckedNames = 256;  // a worker answers with a handful

// Checks a name seen for the first time: its kind, or "" in *wrong.
NameKind CheckName(std::string_view name, std::string* wrong) {
  if (!http::IsToken(name)) {
    *wrong = "bad header name \"" + std::string(name) + "\"";
    return kUnchecked;
  }
  for (std::string_view reserved :
       {"Content-Length", "Transfer-Encoding", "Connection"}) {
    if (SameName(name, reserved)) {
      *wrong = "gearbox sets " + std::string(reserved) + " itself";
      return kUnchecked;
    }
  }
  return SameName(name, "Content-Type") ? kContentType : kPlain;
}

// The kind of the name at -2 (its string), from `names` (a stack index) or
// checked now and remembered there.
NameKind KindOf(lua_State* L, Host& host, int names, std::string* wrong) {
  lua_pushvalue(L, -2);
  lua_rawget(L, names);
  const auto known = static_cast<NameKind>(lua_tointeger(L, -1));
  lua_pop(L, 1);
  if (known != kUnchecked) return known;
  size_t len;
  const char* name = lua_tolstring(L, -2, &len);
  const NameKind kind = CheckName({name, len}, wrong);
  if (kind != kUnchecked && host.checked_names < kMaxCheckedNames) {
    ++host.checked_names;
    lua_pushvalue(L, -2);
    lua_pushinteger(L, kind);
    lua_rawset(L, names);
  }
  return kind;
}

// The interned copy of the Content-Type at -1 (Response keeps a view of
// it): found by value in `types` (a stack index, string -> 1-based index
// into host.content_types), or added to both.
std::string_view Intern(lua_State* L, Host& host, int types,
                        std::string_view type) {
  lua_pushvalue(L, -1);
  lua_rawget(L, types);
  const lua_Integer known = lua_tointeger(L, -1);
  lua_pop(L, 1);
  if (known > 0) return host.content_types[static_cast<size_t>(known - 1)];
  if (host.content_types.size() >= kMaxContentTypes) return {};
  host.content_types.emplace_back(type);
  lua_pushvalue(L, -1);
  lua_pushinteger(L, static_cast<lua_Integer>(host.content_types.size()));
  lua_rawset(L, types);
  return host.content_types.back();
}

// One header of the returned table (key -2, value -1); "" or what is wrong.
// `names` and `types`: the stack indices of the state's checked names and
// interned types.
std::string AddHeader(lua_State* L, Host& host, int names, int types,
                      Response& response) {
  if (lua_type(L, -2) != LUA_TSTRING) return "a header name is not a string";
  std::string wrong;
  const NameKind kind = KindOf(L, host, names, &wrong);
  if (kind == kUnchecked) return wrong;
  const int t = lua_type(L, -1);
  if (t != LUA_TSTRING && t != LUA_TNUMBER) {
    return "header " + std::string(lua_tostring(L, -2)) + " is a " +
           luaL_typename(L, -1) + ", not a string";
  }
  lua_pushvalue(L, -1);  // tolstring converts a number in place
  size_t len;
  const char* text = lua_tolstring(L, -1, &len);
  const std::string_view value(text, len);
  if (!IsFieldValue(value)) {
    lua_pop(L, 1);
    return "header " + std::string(lua_tostring(L, -2)) +
           " holds a control character";
  }
  if (kind == kContentType) {
    const std::string_view interned = Intern(L, host, types, value);
    lua_pop(L, 1);
    if (interned.empty()) {
      return "more than " + std::to_string(kMaxContentTypes) +
             " distinct Content-Types in one worker";
    }
    response.content_type = interned;
    return "";
  }
  size_t name_len;
  const char* name = lua_tolstring(L, -3, &name_len);
  response.extra_headers.append(name, name_len);
  response.extra_headers.append(": ");
  response.extra_headers.append(value);
  response.extra_headers.append("\r\n");
  lua_pop(L, 1);
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
    lua_rawgeti(L, LUA_REGISTRYINDEX, host.checked_names_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, host.content_types_ref);
    const int names = lua_gettop(L) - 1, types = names + 1;
    lua_pushnil(L);
    while (lua_next(L, base + 3)) {
      std::string wrong = AddHeader(L, host, names, types, response);
      lua_pop(L, 1);
      if (!wrong.empty()) {
        lua_settop(L, base);
        return wrong;
      }
    }
  }
  lua_settop(L, base);
  return "";
}

}  // namespace gearbox::lua
