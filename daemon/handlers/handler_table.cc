// The handler table: the only list of handlers (like libevent's eventops[]).
// A row is the single source for one handler: its name, its factory and its
// parameter schema. The config loader validates routes against the schemas
// (HandlerSchemas()), gearboxd -p prints them, config/gearbox.toml is checked
// against them (handlers_test). Nothing registers itself.
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "daemon/handlers/handlers.h"
#include "daemon/handlers/postgres/conninfo.h"
#include "daemon/handlers/postgres/route_params.h"

namespace gearbox {

// A row's factory, defined in its handler's own file
// (daemon/handlers/*_handler.cc), named in the row alone: the block-scope
// declaration is the one C++ needs before it can be called, so adding a
// handler never means declaring it elsewhere too. Rows are read once per
// route and worker, never per request. (Outside the anonymous namespace: a
// block-scope declaration names a function of the innermost namespace.)
#define GEARBOX_FACTORY(name)                             \
  +[](const RouteConfig& route, const ServerInfo& info) { \
    HandlerFactory name;                                  \
    return name(route, info);                             \
  }

namespace {

std::string CheckScriptParam(std::string_view value) {
  return value.empty() ? "a path to a .lua file is required" : "";
}

// A row's parameters are written in the row. A row with more than kMaxParams
// does not compile ("too many initializers"): raise it then.
constexpr size_t kMaxParams = 10;
constexpr bool kFaultTestOnly = true;

struct HandlerKind {
  std::string_view name;  // the value of a route's handler
  HandlerFactory* make;
  std::string_view doc;  // one line
  ParamSpec params[kMaxParams] = {};
  bool fault_test_only = false;  // see HandlerSchema::fault_test_only
};

}  // namespace

constexpr HandlerKind kHandlerTable[] = {
    {"text",
     GEARBOX_FACTORY(MakeTextHandler),
     "a fixed response",
     {StringParam("body", "", "The response body"),
      IntParam("status", 200, 100, 599, "The response status"),
      HeaderValueParam("content_type", "text/plain",
                       "The Content-Type header")}},
    {"wait",
     GEARBOX_FACTORY(MakeWaitHandler),
     "responds after a delay without using CPU (a slow backend)",
     {IntParam("ms", 0, 0, 3600000, "The delay in milliseconds", "max_ms"),
      IntParam("max_ms", 10000, 0, 3600000,
               "The largest delay ?ms=N may ask for")}},
    {"burn",
     GEARBOX_FACTORY(MakeBurnHandler),
     "spins the CPU for a while (CPU-bound work)",
     {IntParam("us", 0, 0, 60000000, "CPU time in microseconds", "max_us"),
      IntParam("max_us", 1000000, 0, 60000000, "The largest ?us=N")}},
    {"echo", GEARBOX_FACTORY(MakeEchoHandler),
     "responds with the request body"},
    {"status", GEARBOX_FACTORY(MakeStatusHandler),
     "live server figures (the same as the periodic stats line)"},
    {"postgres",
     GEARBOX_FACTORY(MakePostgresHandler),
     "runs a SQL statement on PostgreSQL and responds with its rows as JSON",
     {CheckedStringParam("dsn", "",
                         "The libpq conninfo (keep a password in a passfile)",
                         &postgres::CheckConninfo, &postgres::RedactConninfo),
      CheckedStringParam("query", "",
                         "The SQL statement, prepared once per connection",
                         &postgres::CheckQuery),
      StringListParam(
          "params",
          "Path captures or query arguments bound to $1..$N (a capture "
          "wins)"),
      IntParam("pool", 4, 1, 1024, "Connections per worker"),
      IntParam("max_rows", 10000, 1, kNoMax,
               "Rows a result may have; more is cut off with 502"),
      IntParam("max_bytes", 8 << 20, 1, kNoMax,
               "Bytes the JSON of a result may take; more is cut off with 502"),
      CheckedStringParam("connect_timeout", "2s",
                         "How long opening a connection may take (wins over "
                         "the dsn's)",
                         &postgres::CheckConnectTimeout),
      IntParam("pipeline", postgres::kDefaultPipeline, 1,
               postgres::kMaxPipeline,
               "Queries one connection carries at once (async, libpq >= 14)"),
      CheckedStringParam("int8", "number",
                         "int8 and numeric as JSON \"number\" or \"string\" "
                         "(exact past 2^53)",
                         &postgres::CheckInt8)}},
    {"lua",
     GEARBOX_FACTORY(MakeLuaHandler),
     "runs a Lua script, one coroutine per request (docs/lua.md)",
     {CheckedStringParam("script", "",
                         "The script: it returns a function(req) or a table "
                         "of them by method",
                         &CheckScriptParam)}},
    {"crash",
     GEARBOX_FACTORY(MakeCrashHandler),
     "aborts the process, to show what clients see when a worker dies",
     {},
     kFaultTestOnly},
};
#undef GEARBOX_FACTORY

namespace {

// The rows as the loader sees them (a span over each row's used params).
constexpr auto kHandlerSchemas = [] {
  std::array<HandlerSchema, std::size(kHandlerTable)> schemas{};
  for (size_t i = 0; i < schemas.size(); ++i) {
    const HandlerKind& kind = kHandlerTable[i];
    size_t count = 0;
    while (count < kMaxParams && !kind.params[count].key.empty()) ++count;
    schemas[i] = {kind.name, kind.doc, std::span(kind.params, count),
                  kind.fault_test_only};
  }
  return schemas;
}();

}  // namespace

std::span<const HandlerSchema> HandlerSchemas() { return kHandlerSchemas; }

std::unique_ptr<Handler> MakeHandler(const RouteConfig& route,
                                     const ServerInfo& info) {
  for (const HandlerKind& kind : kHandlerTable) {
    if (kind.name == route.handler) return kind.make(route, info);
  }
  return nullptr;
}

RouteConfig DefaultRoute(std::string path, std::string_view handler) {
  const HandlerSchema* schema = FindSchema(HandlerSchemas(), handler);
  if (!schema) {
    fprintf(stderr, "DefaultRoute: no handler \"%.*s\" in the table\n",
            static_cast<int>(handler.size()), handler.data());
    abort();
  }
  RouteConfig route;
  if (!path.empty()) {  // "": a built-in answer (404, 405), never routed
    auto pattern = ParsePattern(path);
    if (auto* why = std::get_if<std::string>(&pattern)) {
      fprintf(stderr, "DefaultRoute: %s: %s\n", path.c_str(), why->c_str());
      abort();
    }
    route.pattern = std::get<RoutePattern>(std::move(pattern));
  }
  route.path = std::move(path);
  route.handler = std::string(handler);
  route.params = DefaultParams(*schema);
  return route;
}

int64_t QueryInt(const Request& request, std::string_view key,
                 int64_t fallback) {
  std::string_view v = request.QueryParam(key);
  if (v.empty()) return fallback;
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size() || n < 0) return fallback;
  return n;
}

}  // namespace gearbox
