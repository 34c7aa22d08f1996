// gearbox.sleep, gearbox.now, gearbox.log, gearbox.worker and the yield that
// every waiting call ends with.
#include "daemon/handlers/lua/lua_api.h"

#include <time.h>

#include <cmath>
#include <string>

#include "daemon/logging.h"

namespace gearbox::lua {

WaitCtx& WaitingCaller(lua_State* L, const char* what) {
  Host& host = HostOf(L);
  if (!host.current) {
    luaL_error(L,
               "%s: not available while the script loads; use init or the "
               "handler",
               what);
  }
  if (host.current->co != L) {
    luaL_error(L,
               "%s: called from a coroutine of the script's own; gearbox "
               "resumes only the handler's and init's",
               what);
  }
  return *host.current;
}

int YieldStep(lua_State* L, WaitCtx& ctx, WaitCtx::Gives gives) {
  ctx.waiting = true;
  ctx.gives = gives;
  return lua_yield(L, 0);
}

void SetFunction(lua_State* L, Host* host, const char* name, lua_CFunction fn) {
  lua_pushlightuserdata(L, host);
  lua_pushcclosure(L, fn, 1);
  lua_setfield(L, -2, name);
}

namespace {

// gearbox.sleep(seconds): a timer Step. 0 (or less) still yields once, as
// ngx.sleep(0) does, so a loop can let other requests run.
int Sleep(lua_State* L) {
  const double seconds = luaL_checknumber(L, 1);
  WaitCtx& ctx = WaitingCaller(L, "gearbox.sleep");
  if (!(seconds < 1e7))
    return luaL_error(L, "gearbox.sleep: %f: too long", seconds);
  const auto us = std::chrono::microseconds(
      seconds > 0 ? static_cast<int64_t>(std::llround(seconds * 1e6)) : 0);
  ctx.step = Step::WaitFor(us);
  return YieldStep(L, ctx, WaitCtx::Gives::kNothing);
}

// gearbox.now(): seconds since the epoch, with microseconds.
int Now(lua_State* L) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9);
  return 1;
}

spdlog::level::level_enum LevelNamed(lua_State* L, const char* name) {
  static constexpr std::pair<const char*, spdlog::level::level_enum> kLevels[] =
      {{"debug", spdlog::level::debug},
       {"info", spdlog::level::info},
       {"warn", spdlog::level::warn},
       {"error", spdlog::level::err}};
  for (const auto& [n, level] : kLevels) {
    if (std::string_view(name) == n) return level;
  }
  luaL_error(L, "gearbox.log: level \"%s\" (use debug, info, warn or error)",
             name);
  return spdlog::level::off;
}

// A logfmt key from a script: letters, digits, '_', '.', '-' only, so a
// field can never forge another.
bool BareKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' &&
        c != '-')
      return false;
  }
  return true;
}

// A field's value as logged: strings and numbers as Lua prints them, booleans
// as true/false, anything else by its type ("table").
std::string FieldText(lua_State* L, int index) {
  switch (lua_type(L, index)) {
    case LUA_TSTRING:
    case LUA_TNUMBER: {
      lua_pushvalue(L, index);  // lua_tolstring converts a number in place
      size_t len;
      const char* text = lua_tolstring(L, -1, &len);
      std::string out(text, len);
      lua_pop(L, 1);
      return out;
    }
    case LUA_TBOOLEAN:
      return lua_toboolean(L, index) ? "true" : "false";
    default:
      return lua_typename(L, lua_type(L, index));
  }
}

// gearbox.log(level, event, fields?): one logfmt line through gearbox's
// logger, with the worker's fields.
int Log(lua_State* L) {
  const auto level = LevelNamed(L, luaL_checkstring(L, 1));
  size_t event_len;
  const char* event = luaL_checklstring(L, 2, &event_len);
  if (!BareKey({event, event_len})) {
    return luaL_error(
        L, "gearbox.log: event \"%s\": use letters, digits, _ . -", event);
  }
  if (!spdlog::default_logger_raw()->should_log(level)) return 0;
  std::string fields;
  if (lua_istable(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {  // the key at -2, the value at -1
      size_t klen = 0;
      const char* k =
          lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &klen) : "";
      if (BareKey({k, klen})) {
        fields += ' ';
        fields.append(k, klen);
        fields += '=';
        fields += LogQuote(FieldText(L, -1));
      }
      lua_pop(L, 1);
    }
  }
  const Host& host = HostOf(L);
  LogAt(level, std::string_view(event, event_len), "worker={} generation={}{}",
        host.worker, host.generation, fields);
  return 0;
}

}  // namespace

void InstallApi(lua_State* L, Host* host) {
  lua_newtable(L);
  SetFunction(L, host, "sleep", Sleep);
  SetFunction(L, host, "now", Now);
  SetFunction(L, host, "log", Log);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, host->worker);
  lua_setfield(L, -2, "index");
  lua_pushinteger(L, host->generation);
  lua_setfield(L, -2, "generation");
  lua_setfield(L, -2, "worker");
  lua_setglobal(L, "gearbox");
  lua_getglobal(L, "gearbox");
  InstallJson(L, host);
  InstallTcp(L, host);
  InstallPostgres(L, host);
  lua_pop(L, 1);
}

}  // namespace gearbox::lua
