// gearbox.postgres{ dsn = ..., pool = N, pipeline = M } and
// pool:query(sql, ...): the
// query runs as the built-in postgres handler's own exchange
// (daemon/handlers/postgres/: the same pool, non-blocking libpq code and
// per-connection statement cache), delegated to as the coroutine's
// sub-exchange; its JSON rows become Lua tables, typed as that handler types
// them (NULL is gearbox.null).
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/handlers/lua/lua_api.h"
#include "daemon/handlers/postgres/conninfo.h"
#include "daemon/handlers/postgres/pg_exchange.h"
#include "daemon/handlers/postgres/route_params.h"

namespace gearbox::lua {
namespace {

constexpr const char* kMeta = "gearbox.postgres";
constexpr int kDefaultPool = 4;
// Distinct SQL texts one pool keeps routes for: dynamic SQL past this is
// refused (the server side is bounded by the statement cache).
constexpr size_t kMaxStatements = 1024;

// Finds a statement's route by the SQL text as Lua holds it, without
// copying it into a key first (C++20 heterogeneous lookup).
struct SqlHash {
  using is_transparent = void;
  size_t operator()(std::string_view sql) const {
    return std::hash<std::string_view>{}(sql);
  }
};

// One worker's pool, made at a script's top level (nothing connects then:
// connections open with the first query).
struct LuaPgPool {
  LuaPgPool(const std::string& dsn, int size, int pipeline, WorkerHome* home)
      : pool(dsn, postgres::RedactConninfo(dsn), "lua", size, home, pipeline) {}
  postgres::PgPool pool;
  // What each SQL text's exchanges read (outlives them: the pool object is
  // on the stack of every coroutine that queries it).
  std::unordered_map<std::string, std::unique_ptr<postgres::PgRoute>, SqlHash,
                     std::equal_to<>>
      routes;
};

LuaPgPool& Checked(lua_State* L) {
  return **static_cast<LuaPgPool**>(luaL_checkudata(L, 1, kMeta));
}

// gearbox.postgres{ dsn = "...", pool = N, pipeline = M } -> pool
int NewPool(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "dsn");
  const char* dsn = lua_tostring(L, -1);
  if (!dsn)
    return luaL_error(L,
                      "gearbox.postgres: dsn (a libpq conninfo) is required");
  const std::string problem = postgres::CheckConninfo(dsn);
  if (!problem.empty()) {
    return luaL_error(L, "gearbox.postgres: dsn: %s", problem.c_str());
  }
  lua_getfield(L, 1, "pool");
  const int size = static_cast<int>(luaL_optinteger(L, -1, kDefaultPool));
  if (size < 1 || size > 1024) {
    return luaL_error(L, "gearbox.postgres: pool %d is not in 1..1024", size);
  }
  lua_getfield(L, 1, "pipeline");
  const int pipeline =
      static_cast<int>(luaL_optinteger(L, -1, postgres::kDefaultPipeline));
  if (pipeline < 1 || pipeline > postgres::kMaxPipeline) {
    return luaL_error(L, "gearbox.postgres: pipeline %d is not in 1..%d",
                      pipeline, postgres::kMaxPipeline);
  }
  auto** box = static_cast<LuaPgPool**>(lua_newuserdata(L, sizeof(LuaPgPool*)));
  *box = new LuaPgPool(dsn, size, pipeline, HostOf(L).home);
  luaL_getmetatable(L, kMeta);
  lua_setmetatable(L, -2);
  return 1;
}

int Collect(lua_State* L) {
  auto** box = static_cast<LuaPgPool**>(lua_touserdata(L, 1));
  delete *box;  // closes its connections
  *box = nullptr;
  return 0;
}

// The sub-exchange is done: rows, or nil, error category, sqlstate.
int FinishQuery(lua_State* co, WaitCtx& ctx) {
  const Response& r = ctx.sub_response;
  const int n = PushJson(co, r.body.data(), r.body.size());
  if (r.status == 200 || n != 1) return n;
  // An error answer: {"error": category, "sqlstate": ...}.
  lua_getfield(co, -1, "error");
  lua_getfield(co, -2, "sqlstate");
  lua_remove(co, -3);
  lua_pushnil(co);
  lua_insert(co, -3);
  return 3;
}

// pool:query(sql, ...) -> rows | nil, err[, sqlstate]
int Query(lua_State* L) {
  LuaPgPool& pool = Checked(L);
  size_t len;
  const char* sql = luaL_checklstring(L, 2, &len);
  WaitCtx& ctx = WaitingCaller(L, "pool:query");
  postgres::PgParams values;
  for (int i = 3; i <= lua_gettop(L); ++i) {
    size_t vlen;
    const char* v = lua_tolstring(L, i, &vlen);
    if (!v) return luaL_argerror(L, i, "a string or a number");
    values.Add(std::string_view(v, vlen));
  }
  const std::string_view key(sql, len);
  auto it = pool.routes.find(key);
  if (it == pool.routes.end()) {
    if (pool.routes.size() >= kMaxStatements) {
      lua_pushnil(L);
      lua_pushliteral(L, "too many distinct statements on this pool");
      return 2;
    }
    auto route = std::make_unique<postgres::PgRoute>();
    route->query = key;
    route->check_budget = false;
    it = pool.routes.emplace(std::string(key), std::move(route)).first;
  }
  it->second->nparams = values.count();
  ctx.sub_response.Reset();
  ctx.sub = postgres::PgExchange::Make(&pool.pool, it->second.get(),
                                       std::move(values));
  ctx.finish = FinishQuery;
  const Step step = ctx.sub->Resume(Wake{}, ctx.sub_response);
  if (step.done()) {  // answered without a wait (a pool backing off)
    ctx.sub.reset();
    return FinishQuery(L, ctx);
  }
  ctx.step = step;
  return YieldStep(L, ctx, WaitCtx::Gives::kNothing);
}

}  // namespace

void InstallPostgres(lua_State* L, Host* host) {
  luaL_newmetatable(L, kMeta);
  lua_newtable(L);
  SetFunction(L, host, "query", Query);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, Collect);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  SetFunction(L, host, "postgres", NewPool);
}

}  // namespace gearbox::lua
