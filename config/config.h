// Typed, validated gearbox configuration. Models and handlers only ever see
// these structs; TOML stays inside config/.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/ip_net.h"
#include "config/model_sections.h"
#include "config/params.h"
#include "config/route_pattern.h"

namespace gearbox {

enum class Protocol { kHttp, kFastCgi };

struct ListenConfig {
  std::string address;  // as written: "HOST:PORT", "[::1]:PORT" or "unix:/path"
  Protocol protocol = Protocol::kHttp;
  std::string
      name;  // systemd FileDescriptorName=; defaults to the protocol name
  int backlog = 511;  // listen(2) backlog when gearboxd binds the socket itself
  uint32_t unix_mode = 0660;  // file mode for unix sockets gearboxd creates
};

struct ServerConfig {
  std::string model = "threadpool";
  Duration graceful_timeout = std::chrono::seconds(30);
  // Allows routes whose handler is fault_test_only (HandlerSchema): the
  // `crash` handler, which aborts the process.
  bool enable_crash_handler = false;
  // Peers whose X-Forwarded-For / X-Real-IP name the client (nginx's
  // set_real_ip_from): by default unix-socket peers and loopback, where the
  // packaged nginx connects from.
  std::vector<IpNet> trusted_proxies = DefaultTrustedProxies();
};

struct LimitsConfig {
  Duration header_timeout = std::chrono::seconds(10);
  Duration idle_timeout = std::chrono::seconds(75);
  Duration body_timeout = std::chrono::seconds(30);
  Duration send_timeout = std::chrono::seconds(30);
  int64_t max_header_bytes = 16384;
  int64_t max_body_bytes = 1048576;
  int64_t max_connections = 10000;
  // Handler start to response complete, for routes without their own
  // `timeout`: a waiting handler is cut off with 504 (below nginx's
  // proxy_read_timeout of 60s, so gearbox answers before nginx gives up).
  Duration request_timeout = std::chrono::seconds(50);
  // A draining generation keeps a connection that was idle when the drain
  // began this long (0: closes it at once): a request nginx sends on it
  // meanwhile is answered, with Connection: close, by the old generation,
  // instead of meeting a close (a POST lost that way is a 502).
  Duration drain_idle_timeout = std::chrono::seconds(1);
  // After answering bad input with a close, the client's remaining bytes are
  // read and dropped this long at most (0: closed at once), as nginx's
  // lingering_close: closing on unread input resets the connection, and the
  // reset can destroy the answer before the client reads it.
  Duration lingering_timeout = std::chrono::seconds(2);
};

struct LogConfig {
  std::string level = "info";  // trace|debug|info|warn|error|critical|off
  bool access = false;
  std::optional<Duration> slow;  // log requests slower than this
};

struct MetricsConfig {
  Duration interval = std::chrono::seconds(10);
  // event=advice is logged once the model advisor's pick has differed from the
  // configured model this long; zero: never.
  Duration advice_after = std::chrono::minutes(5);
};

// [lua]: the Lua handler's runtime, one per worker (daemon/handlers/lua/).
struct LuaConfig {
  // Added before the default package.path, for require() of an
  // application's own modules ("/etc/gearbox/lua/?.lua"); "": the default.
  std::string path;
  // Bytes one worker's Lua state may allocate; a request past it gets 500.
  int64_t memory = 64 << 20;
  // How long a script's init(worker) may take when a worker starts (its
  // waits block that worker's start; past this it is abandoned and logged).
  Duration init_timeout = std::chrono::seconds(10);
  // The directory of the config file: a route's relative script is
  // relative to it (set by the loader).
  std::string base_dir;
  // Each route's script as the check read it (path -> text; set by the
  // daemon's CheckLuaScripts): a generation's workers compile exactly what
  // was checked, even if the file changes while they start.
  std::shared_ptr<const std::map<std::string, std::string>> sources;
};

// One [[module]]: a handler kind from a shared object (gearbox/module.h),
// loaded by the daemon (daemon/modules/); config/ only reads the table.
struct ModuleConfig {
  std::string name;  // what a route's handler names; not a built-in's name
  // As resolved: a relative path is relative to the config file's directory.
  std::string path;
  SourcePosition where;    // of the [[module]] table
  SourcePosition path_at;  // of the path value: load errors point here
};

// One [[route]]: a path pattern (and optionally methods) mapped to a handler
// with its parameters. The
// keys every route has are fields here (path, handler); the handler's own keys
// are in params, checked against its schema (config/params.h).
struct RouteConfig {
  std::string path;      // the pattern as written
  RoutePattern pattern;  // path, parsed (config/route_pattern.h)
  // The methods it serves, as written (GET implies HEAD); empty: any.
  std::vector<std::string> methods;
  std::string handler;  // a row of the handler table, or a [[module]] name
  // The route's deadline, handler start to response complete; unset:
  // [limits] request_timeout. A route-level key, not a handler parameter:
  // every handler has it (a backend handler may also bound its own waits by
  // it).
  std::optional<Duration> timeout;
  // A built-in handler: every key of its schema, defaults filled in. A
  // module: every other key of the route as written (integers, booleans,
  // strings), for the module's create() to check.
  RouteParams params;
  bool module = false;        // handler names a [[module]]
  SourcePosition where;       // of the [[route]] table, for errors found later
  SourcePosition handler_at;  // of the handler value
  SourcePosition path_at;     // of the path value: conflicts point here
};

// How a route is named in messages, -p and metrics: its pattern, after its
// methods when it has some ("GET,POST /items/{id}").
std::string RouteDisplay(const RouteConfig& route);

// Indexes of `routes` with every route before those it is more specific
// than: each comes as soon as every route more specific than it has, the
// earliest in the config first (the order -p prints). O(n^2).
std::vector<size_t> SpecificityOrder(const std::vector<RouteConfig>& routes);

// The model sections (threadpool, prefork, async) are the base's.
struct Config : ModelSections {
  std::string source = "<embedded>";  // file the config came from
  // The models the file was read against (the model table's rows): how
  // FormatConfig prints their sections.
  std::span<const ModelSchema> model_schemas;
  ServerConfig server;
  std::vector<ListenConfig> listen;
  LimitsConfig limits;
  LogConfig log;
  MetricsConfig metrics;
  LuaConfig lua;
  std::vector<ModuleConfig> modules;
  std::vector<RouteConfig> routes;
  bool foreground =
      false;  // set from the CLI (-F): single worker for a debugger
};

// The subset of Config a model needs, by value so a generation owns its copy.
// The deadline of a request on `route` under `limits`.
inline Duration RouteTimeout(const RouteConfig& route,
                             const LimitsConfig& limits) {
  return route.timeout.value_or(limits.request_timeout);
}

struct ModelConfig : ModelSections {
  ServerConfig server;
  LimitsConfig limits;
  bool foreground = false;
};

}  // namespace gearbox
