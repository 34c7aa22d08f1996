// Typed, validated gearbox configuration. Models and handlers only ever see
// these structs; TOML stays inside config/.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/params.h"

namespace gearbox {

using Duration = std::chrono::microseconds;

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
};

struct ThreadPoolConfig {
  int threads = 64;
  int queue = 1024;
};

struct PreforkConfig {
  int workers = 4;
  int64_t max_requests = 0;  // 0 = never recycle
};

struct AsyncConfig {
  int loops = 1;
};

struct LimitsConfig {
  Duration header_timeout = std::chrono::seconds(10);
  Duration idle_timeout = std::chrono::seconds(75);
  Duration body_timeout = std::chrono::seconds(30);
  Duration send_timeout = std::chrono::seconds(30);
  int64_t max_header_bytes = 16384;
  int64_t max_body_bytes = 1048576;
  int64_t max_connections = 10000;
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

// One [[route]]: an exact path mapped to a handler with its parameters. The
// keys every route has are fields here (path, handler); the handler's own keys
// are in params, checked against its schema (config/params.h).
struct RouteConfig {
  std::string path;
  std::string handler;  // the name of a row of the handler table
  RouteParams params;   // every key of the handler's schema, defaults filled in
  SourcePosition where;  // of the [[route]] table, for errors found later
};

struct Config {
  std::string source = "<embedded>";  // file the config came from
  ServerConfig server;
  std::vector<ListenConfig> listen;
  ThreadPoolConfig threadpool;
  PreforkConfig prefork;
  AsyncConfig async;
  LimitsConfig limits;
  LogConfig log;
  MetricsConfig metrics;
  std::vector<RouteConfig> routes;
  bool foreground =
      false;  // set from the CLI (-F): single worker for a debugger
};

// The subset of Config a model needs, by value so a generation owns its copy.
struct ModelConfig {
  ServerConfig server;
  ThreadPoolConfig threadpool;
  PreforkConfig prefork;
  AsyncConfig async;
  LimitsConfig limits;
  bool foreground = false;
};

}  // namespace gearbox
