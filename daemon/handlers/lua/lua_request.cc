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

void PushHeaders(lua_State* L, std::span<const Header> headers,
                 const Host& host) {
  lua_createtable(L, 0, static_cast<int>(headers.size()));
  char name[128];
  for (const Header& h : headers) {
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

void PushParams(lua_State* L, std::span<const PathParam> params) {
  lua_createtable(L, 0, static_cast<int>(params.size()));
  for (const PathParam& p : params) {
    lua_pushlstring(L, p.name.data(), p.name.size());
    lua_pushlstring(L, p.value.data(), p.value.size());
    lua_rawset(L, -3);
  }
}

// req's fields built on first read.
enum class Field {
  kNone,
  kMethod,
  kPath,
  kQuery,
  kHeaders,
  kBody,
  kParams,
  kClient
};

// Read on every first access of a field: sorted by length first, so a key
// is compared with at most three names.
Field FieldNamed(std::string_view name) {
  switch (name.size()) {
    case 4:
      return name == "path"   ? Field::kPath
             : name == "body" ? Field::kBody
                              : Field::kNone;
    case 5:
      return name == "query" ? Field::kQuery : Field::kNone;
    case 6:
      return name == "method"   ? Field::kMethod
             : name == "params" ? Field::kParams
             : name == "client" ? Field::kClient
                                : Field::kNone;
    case 7:
      return name == "headers" ? Field::kHeaders : Field::kNone;
    default:
      return Field::kNone;
  }
}

// Pushes `field` built from `source`.
void PushField(lua_State* L, Field field, const RequestSource& source,
               const Host& host) {
  switch (field) {
    case Field::kMethod:
      lua_pushlstring(L, source.method.data(), source.method.size());
      return;
    case Field::kPath:
      lua_pushlstring(L, source.path.data(), source.path.size());
      return;
    case Field::kQuery:
      return PushQuery(L, source.query);
    case Field::kHeaders:
      return PushHeaders(L, source.headers, host);
    case Field::kBody:
      if (source.body_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, source.body_ref);
      } else {
        lua_pushlstring(L, source.body.data(), source.body.size());
      }
      return;
    case Field::kParams:
      return PushParams(L, source.params);
    case Field::kClient:
      if (const std::string_view client = source.Client(); client.empty()) {
        lua_pushnil(L);
      } else {
        lua_pushlstring(L, client.data(), client.size());
      }
      return;
    case Field::kNone:
      lua_pushnil(L);
      return;
  }
}

// req's __index: builds a lazy field on its first read and keeps it in req.
// Only the coroutine req was made for can build it (host.current is its
// context while it runs); a req kept past its request, or read from another
// request, raises an error instead of reading the wrong request's data.
int IndexRequest(lua_State* L) {
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  size_t len;
  const char* key = lua_tolstring(L, 2, &len);
  const Field field = FieldNamed({key, len});
  if (field == Field::kNone) return 0;
  const Host& host = HostOf(L);
  const WaitCtx* ctx = host.current;
  if (!ctx || !ctx->source || ctx->req != lua_topointer(L, 1)) {
    return luaL_error(L,
                      "req.%s: read outside its own request (copy what you "
                      "keep of req while the request runs)",
                      key);
  }
  PushField(L, field, *ctx->source, host);
  if (!lua_isnil(L, -1)) {  // req.client is nil when unknown
    lua_pushvalue(L, 2);
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
  }
  return 1;
}

}  // namespace

void RequestSource::View(const Request& request) {
  method = request.method;
  path = request.path;
  query = request.query;
  body = request.body;
  request_ = &request;
  headers = request.headers;
  params = request.Params();
}

void RequestSource::Keep(lua_State* L) {
  if (!body.empty()) {
    lua_pushlstring(L, body.data(), body.size());
    body_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    body = {};
  }
  const Request& live = *request_;
  size_t size =
      method.size() + path.size() + query.size() + live.remote_addr.size();
  for (const Header& h : headers) size += h.name.size() + h.value.size();
  for (const PathParam& p : params) size += p.value.size();
  bytes_.reserve(size);  // exact: the views below never move
  auto keep = [this](std::string_view v) {
    const size_t at = bytes_.size();
    bytes_.append(v);
    return std::string_view(bytes_.data() + at, v.size());
  };
  method = keep(method);
  path = keep(path);
  query = keep(query);
  kept_ = std::make_unique<Request>();
  kept_->SetOrigin(live.origin);  // its views are the generation's config
  kept_->remote_addr = keep(live.remote_addr);
  kept_->headers.assign(headers.begin(), headers.end());
  for (Header& h : kept_->headers) {
    h.name = keep(h.name);
    h.value = keep(h.value);
  }
  request_ = kept_.get();
  headers = kept_->headers;
  // A capture's name views the route's pattern, valid for the generation.
  params_.assign(params.begin(), params.end());
  for (PathParam& p : params_) p.value = keep(p.value);
  params = params_;
}

void RequestSource::Release(lua_State* L) {
  luaL_unref(L, LUA_REGISTRYINDEX, body_ref);
  body_ref = LUA_NOREF;
}

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
  lua_newtable(L);
  lua_pushlightuserdata(L, host);
  lua_pushcclosure(L, IndexRequest, 1);
  lua_setfield(L, -2, "__index");
  host->req_meta = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  host->checked_names_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  host->content_types_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

void PushRequest(lua_State* L, WaitCtx& ctx, const Host& host) {
  // Room for the fields a handler commonly reads: more rehashes once.
  lua_createtable(L, 0, 4);
  lua_rawgeti(L, LUA_REGISTRYINDEX, host.req_meta);
  lua_setmetatable(L, -2);
  ctx.req = lua_topointer(L, -1);
}

}  // namespace gearbox::lua
