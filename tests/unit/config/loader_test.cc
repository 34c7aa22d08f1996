#include "config/loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/handlers/handlers.h"
#include "models/model.h"

namespace gearbox {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// The real handler table: the reference file and the messages below are about
// the built-in handlers. LoaderSchemaTest uses schemas of its own.
const ConfigVocabulary kVocabulary{ModelSchemas(), HandlerSchemas()};

// The built-in handlers' names as an unknown handler's message suggests them
// (fault-test-only ones are not), from the handler table, so a new handler
// changes no test.
std::string BuiltInNames() {
  std::string names;
  for (const HandlerSchema& schema : HandlerSchemas()) {
    if (schema.fault_test_only) continue;
    if (!names.empty()) names += ", ";
    names += schema.name;
  }
  return names;
}

Config Load(std::string_view toml) {
  ConfigResult result = LoadConfigString(toml, "test.toml", kVocabulary);
  if (auto* error = std::get_if<ConfigError>(&result)) {
    ADD_FAILURE() << "unexpected error: " << error->ToString() << "\n" << toml;
    return Config{};
  }
  return std::get<Config>(result);
}

ConfigError LoadError(std::string_view toml) {
  ConfigResult result = LoadConfigString(toml, "test.toml", kVocabulary);
  if (!std::holds_alternative<ConfigError>(result)) {
    ADD_FAILURE() << "loaded without error:\n" << toml;
    return ConfigError{};
  }
  return std::get<ConfigError>(result);
}

// The error is at line:column and its message contains substring.
void ExpectError(std::string_view toml, int line, int column,
                 std::string_view substring) {
  SCOPED_TRACE(std::string(toml));
  const ConfigError error = LoadError(toml);
  EXPECT_EQ(error.file, "test.toml");
  EXPECT_EQ(error.line, line) << error.ToString();
  EXPECT_EQ(error.column, column) << error.ToString();
  EXPECT_NE(error.message.find(substring), std::string::npos)
      << "message: " << error.message << "\nexpected to contain: " << substring;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

auto Tie(const ListenConfig& l) {
  return std::tie(l.address, l.protocol, l.name, l.backlog, l.unix_mode);
}

// Keys and values in order; positions differ between a file and its -p text.
std::vector<std::pair<std::string, ParamValue>> Values(const RouteParams& p) {
  std::vector<std::pair<std::string, ParamValue>> values;
  for (const RouteParam& param : p.entries()) {
    values.emplace_back(param.key, param.value);
  }
  return values;
}

auto Tie(const RouteConfig& r) {
  return std::make_tuple(r.path, r.methods, r.pattern, r.handler, r.timeout,
                         Values(r.params));
}

// Everything but source and foreground (neither comes from TOML).
void ExpectSameConfig(const Config& a, const Config& b) {
  EXPECT_EQ(a.server.model, b.server.model);
  EXPECT_EQ(a.server.graceful_timeout.count(),
            b.server.graceful_timeout.count());
  ASSERT_EQ(a.listen.size(), b.listen.size());
  for (size_t i = 0; i < a.listen.size(); ++i) {
    EXPECT_TRUE(Tie(a.listen[i]) == Tie(b.listen[i])) << "listen #" << i + 1;
  }
  EXPECT_EQ(a.threadpool.threads, b.threadpool.threads);
  EXPECT_EQ(a.threadpool.queue, b.threadpool.queue);
  EXPECT_EQ(a.threadpool.max_threads, b.threadpool.max_threads);
  EXPECT_EQ(a.threadpool.idle_thread_timeout, b.threadpool.idle_thread_timeout);
  EXPECT_EQ(a.threadpool.max_spawn_rate, b.threadpool.max_spawn_rate);
  EXPECT_EQ(a.prefork.workers, b.prefork.workers);
  EXPECT_EQ(a.prefork.max_workers, b.prefork.max_workers);
  EXPECT_EQ(a.prefork.idle_worker_timeout, b.prefork.idle_worker_timeout);
  EXPECT_EQ(a.prefork.max_spawn_rate, b.prefork.max_spawn_rate);
  EXPECT_EQ(a.prefork.max_requests, b.prefork.max_requests);
  EXPECT_EQ(a.async.loops, b.async.loops);
  EXPECT_EQ(a.async.stall_threshold, b.async.stall_threshold);
  EXPECT_EQ(a.limits.header_timeout.count(), b.limits.header_timeout.count());
  EXPECT_EQ(a.limits.idle_timeout.count(), b.limits.idle_timeout.count());
  EXPECT_EQ(a.limits.body_timeout.count(), b.limits.body_timeout.count());
  EXPECT_EQ(a.limits.send_timeout.count(), b.limits.send_timeout.count());
  EXPECT_EQ(a.limits.max_header_bytes, b.limits.max_header_bytes);
  EXPECT_EQ(a.limits.max_body_bytes, b.limits.max_body_bytes);
  EXPECT_EQ(a.limits.max_connections, b.limits.max_connections);
  EXPECT_EQ(a.limits.request_timeout.count(), b.limits.request_timeout.count());
  EXPECT_EQ(a.log.level, b.log.level);
  EXPECT_EQ(a.log.access, b.log.access);
  EXPECT_EQ(a.log.slow.has_value(), b.log.slow.has_value());
  if (a.log.slow && b.log.slow) {
    EXPECT_EQ(a.log.slow->count(), b.log.slow->count());
  }
  EXPECT_EQ(a.metrics.interval.count(), b.metrics.interval.count());
  ASSERT_EQ(a.routes.size(), b.routes.size());
  for (size_t i = 0; i < a.routes.size(); ++i) {
    EXPECT_TRUE(Tie(a.routes[i]) == Tie(b.routes[i])) << "route #" << i + 1;
  }
}

// Format, reload, compare; and formatting is stable.
void ExpectRoundTrip(const Config& config) {
  const std::string text = FormatConfig(config, HandlerSchemas());
  SCOPED_TRACE(text);
  const Config reloaded = Load(text);
  ExpectSameConfig(config, reloaded);
  // Stable, but for the first line ("loaded from <source>").
  const auto body = [](const std::string& t) { return t.substr(t.find('\n')); };
  EXPECT_EQ(body(FormatConfig(reloaded, HandlerSchemas())), body(text));
  // Without the schemas only the comments go.
  const Config bare = Load(FormatConfig(config));
  ExpectSameConfig(config, bare);
}

// Every key set to a value other than its default.
constexpr std::string_view kEverything = R"(
[server]
model = "async"
graceful_timeout = "1500ms"

[[listen]]
address = "0.0.0.0:80"
backlog = 128

[[listen]]
address = "[::1]:0"
name = "v6"
protocol = "http"

[[listen]]
address = "unix:/run/gearbox/fcgi.sock"
protocol = "fastcgi"
unix_mode = 0o600

[[listen]]
address = "localhost:9000"
protocol = "fastcgi"
name = "fcgi-tcp"

[threadpool]
threads = 8
max_threads = 12
idle_thread_timeout = "3s"
max_spawn_rate = 5
queue = 16

[prefork]
workers = 2
max_workers = 6
idle_worker_timeout = "1500ms"
max_spawn_rate = 7
max_requests = 1000

[async]
loops = 4
stall_threshold = "0s"

[limits]
header_timeout = "250us"
idle_timeout = "2m"
body_timeout = "90s"
send_timeout = "1h"
max_header_bytes = 1024
max_body_bytes = 17179869184
max_connections = 1
request_timeout = "2s"
drain_idle_timeout = "0s"

[log]
level = "debug"
access = true
slow = "0s"

[metrics]
interval = "100ms"

[[route]]
path = "/t"
handler = "text"
body = "quote \" backslash \\ tab \t nul \u0000 é\n"
status = 418
content_type = "application/json; charset=utf-8"

[[route]]
path = "/w"
handler = "wait"
timeout = "750ms"
ms = 3600000
max_ms = 3600000

[[route]]
path = "/b"
handler = "burn"
us = 0
max_us = 0

[[route]]
path = "/e"
handler = "echo"

[[route]]
path = "/s"
handler = "status"
)";

TEST(LoaderTest, ShippedReferenceFileEqualsTheDefaults) {
  ConfigResult result = LoadConfigFile("config/gearbox.toml", kVocabulary);
  ASSERT_TRUE(std::holds_alternative<Config>(result))
      << std::get<ConfigError>(result).ToString();
  const Config& file = std::get<Config>(result);
  EXPECT_EQ(file.source, "config/gearbox.toml");
  // The reference promises to behave exactly like running without -c.
  ExpectSameConfig(file, Load(EmbeddedDefaultConfig()));
  ExpectSameConfig(file, Load(""));
  ExpectRoundTrip(file);
}

TEST(LoaderTest, EmbeddedDefault) {
  EXPECT_EQ(EmbeddedDefaultConfig(), ReadFile("config/default.toml"));
  const Config c = Load(EmbeddedDefaultConfig());
  EXPECT_EQ(c.server.model, "threadpool");
  ASSERT_EQ(c.listen.size(), 1u);
  EXPECT_EQ(c.listen[0].address, "127.0.0.1:8080");
  EXPECT_EQ(c.listen[0].protocol, Protocol::kHttp);
  EXPECT_EQ(c.listen[0].name, "http");
  ASSERT_EQ(c.routes.size(), 5u);
  EXPECT_EQ(c.routes[0].path, "/hello");
  EXPECT_EQ(c.routes[0].handler, "text");
  EXPECT_EQ(c.routes[0].params.Text("body"), "hello world\n");
  EXPECT_EQ(c.routes[0].params.Int("status"), 200);
  EXPECT_EQ(c.routes[1].path, "/sleep");
  EXPECT_EQ(c.routes[1].handler, "wait");
  EXPECT_EQ(c.routes[1].params.Int("ms"), 1);
  EXPECT_EQ(c.routes[1].params.Int("max_ms"), 10000);
  EXPECT_EQ(c.routes[2].path, "/echo");
  EXPECT_EQ(c.routes[2].handler, "echo");
  EXPECT_EQ(c.routes[3].path, "/burn");
  EXPECT_EQ(c.routes[3].handler, "burn");
  EXPECT_EQ(c.routes[3].params.Int("us"), 200);
  EXPECT_EQ(c.routes[4].path, "/status");
  EXPECT_EQ(c.routes[4].handler, "status");
  ExpectRoundTrip(c);
}

TEST(LoaderTest, EmptyFileGetsDefaultListenerAndRoutes) {
  const Config c = Load("");
  EXPECT_EQ(c.source, "test.toml");
  ASSERT_EQ(c.listen.size(), 1u);
  EXPECT_EQ(c.listen[0].address, "127.0.0.1:8080");
  EXPECT_EQ(c.routes.size(), 5u);
  EXPECT_EQ(c.limits.idle_timeout, seconds(75));
  EXPECT_FALSE(c.log.slow.has_value());
}

TEST(LoaderTest, ExplicitEmptyRoutesMeansNoRoutes) {
  const Config c = Load("route = []\n[server]\nmodel = \"prefork\"\n");
  EXPECT_TRUE(c.routes.empty());
  EXPECT_EQ(c.listen.size(), 1u);
  ExpectRoundTrip(c);
}

TEST(LoaderTest, ListenersReplaceTheDefaultButRoutesStay) {
  const Config c = Load("[[listen]]\naddress = \"unix:/tmp/g.sock\"\n");
  ASSERT_EQ(c.listen.size(), 1u);
  EXPECT_EQ(c.listen[0].address, "unix:/tmp/g.sock");
  EXPECT_EQ(c.listen[0].unix_mode, 0660u);
  EXPECT_EQ(c.routes.size(), 5u);
}

TEST(LoaderTest, EveryKey) {
  const Config c = Load(kEverything);
  EXPECT_EQ(c.server.model, "async");
  EXPECT_EQ(c.server.graceful_timeout, milliseconds(1500));
  ASSERT_EQ(c.listen.size(), 4u);
  EXPECT_EQ(c.listen[0].name, "http");
  EXPECT_EQ(c.listen[0].backlog, 128);
  EXPECT_EQ(c.listen[1].name, "v6");
  EXPECT_EQ(c.listen[2].protocol, Protocol::kFastCgi);
  EXPECT_EQ(c.listen[2].name, "fastcgi");
  EXPECT_EQ(c.listen[2].unix_mode, 0600u);
  EXPECT_EQ(c.listen[3].name, "fcgi-tcp");
  EXPECT_EQ(c.threadpool.threads, 8);
  EXPECT_EQ(c.threadpool.queue, 16);
  EXPECT_EQ(c.threadpool.max_threads, 12);
  EXPECT_EQ(c.threadpool.idle_thread_timeout, seconds(3));
  EXPECT_EQ(c.threadpool.max_spawn_rate, 5);
  EXPECT_EQ(c.prefork.workers, 2);
  EXPECT_EQ(c.prefork.max_workers, 6);
  EXPECT_EQ(c.prefork.idle_worker_timeout, milliseconds(1500));
  EXPECT_EQ(c.prefork.max_spawn_rate, 7);
  EXPECT_EQ(c.prefork.max_requests, 1000);
  EXPECT_EQ(c.async.loops, 4);
  EXPECT_EQ(c.async.stall_threshold, microseconds(0));
  EXPECT_EQ(c.limits.header_timeout, microseconds(250));
  EXPECT_EQ(c.limits.idle_timeout, minutes(2));
  EXPECT_EQ(c.limits.body_timeout, seconds(90));
  EXPECT_EQ(c.limits.send_timeout, hours(1));
  EXPECT_EQ(c.limits.max_header_bytes, 1024);
  EXPECT_EQ(c.limits.max_body_bytes, int64_t{1} << 34);
  EXPECT_EQ(c.limits.max_connections, 1);
  EXPECT_EQ(c.limits.request_timeout, seconds(2));
  EXPECT_EQ(c.limits.drain_idle_timeout, seconds(0));
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_TRUE(c.log.access);
  ASSERT_TRUE(c.log.slow.has_value());
  EXPECT_EQ(*c.log.slow, microseconds(0));
  EXPECT_EQ(c.metrics.interval, milliseconds(100));
  ASSERT_EQ(c.routes.size(), 5u);
  EXPECT_EQ(c.routes[0].params.Text("body"),
            std::string("quote \" backslash \\ tab \t nul \0 é\n", 35));
  EXPECT_EQ(c.routes[0].params.Int("status"), 418);
  EXPECT_EQ(c.routes[0].params.Text("content_type"),
            "application/json; charset=utf-8");
  EXPECT_EQ(c.routes[1].timeout, milliseconds(750));
  EXPECT_FALSE(c.routes[0].timeout.has_value());
  EXPECT_EQ(RouteTimeout(c.routes[0], c.limits), seconds(2));
  EXPECT_EQ(RouteTimeout(c.routes[1], c.limits), milliseconds(750));
  EXPECT_EQ(c.routes[1].params.Int("ms"), 3600000);
  EXPECT_EQ(c.routes[1].params.Int("max_ms"), 3600000);
  EXPECT_EQ(c.routes[2].params.Int("us"), 0);
  EXPECT_EQ(c.routes[2].params.Int("max_us"), 0);
}

TEST(LoaderTest, FormatConfigRoundTrips) {
  const Config c = Load(kEverything);
  ExpectRoundTrip(c);
  const std::string text = FormatConfig(c, HandlerSchemas());
  // Largest exact unit; unix_mode in octal only for unix sockets.
  EXPECT_NE(text.find("graceful_timeout = \"1500ms\""), std::string::npos);
  EXPECT_NE(text.find("header_timeout = \"250us\""), std::string::npos);
  EXPECT_NE(text.find("idle_timeout = \"2m\""), std::string::npos);
  EXPECT_NE(text.find("body_timeout = \"90s\""), std::string::npos);
  EXPECT_NE(text.find("send_timeout = \"1h\""), std::string::npos);
  EXPECT_NE(text.find("slow = \"0s\""), std::string::npos);
  EXPECT_NE(text.find("request_timeout = \"2s\""), std::string::npos);
  EXPECT_NE(text.find("timeout = \"750ms\""), std::string::npos);
  EXPECT_NE(text.find("unix_mode = 0o600"), std::string::npos);
  EXPECT_EQ(text.find("unix_mode"), text.rfind("unix_mode"));
}

TEST(LoaderTest, PoolCeilingsDefaultToTheMinimum) {
  const Config d = Load("");
  EXPECT_EQ(d.threadpool.max_threads, d.threadpool.threads);
  EXPECT_EQ(d.prefork.max_workers, d.prefork.workers);
  EXPECT_EQ(d.prefork.idle_worker_timeout, seconds(10));
  EXPECT_EQ(d.threadpool.idle_thread_timeout, seconds(10));
  EXPECT_EQ(d.prefork.max_spawn_rate, 32);
  EXPECT_EQ(d.async.stall_threshold, milliseconds(100));
  EXPECT_EQ(d.limits.request_timeout, seconds(50));
  const Config c = Load("[threadpool]\nthreads = 3\n[prefork]\nworkers = 5\n");
  EXPECT_EQ(c.threadpool.max_threads, 3);
  EXPECT_EQ(c.prefork.max_workers, 5);
  EXPECT_EQ(c.prefork.Limits().min, 5);
  EXPECT_EQ(c.prefork.Limits().max, 5);
}

TEST(LoaderTest, UnixModeDecimalOrOctal) {
  EXPECT_EQ(Load("[[listen]]\naddress = \"unix:/a\"\nunix_mode = 432\n")
                .listen[0]
                .unix_mode,
            0660u);
  EXPECT_EQ(Load("[[listen]]\naddress = \"unix:/a\"\nunix_mode = 0o0\n")
                .listen[0]
                .unix_mode,
            0u);
  ExpectError(
      "[[listen]]\naddress = \"unix:/a\"\nunix_mode = 660\n", 3, 13,
      "[[listen]] #1 unix_mode: 660 (0o1224) out of range (0o0..0o777)");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nunix_mode = 0o600\n", 3,
              13,
              "[[listen]] #1 unix_mode: only applies to \"unix:\" addresses");
}

TEST(LoaderTest, ParseDuration) {
  EXPECT_EQ(ParseDuration("0s"), microseconds(0));
  EXPECT_EQ(ParseDuration("250us"), microseconds(250));
  EXPECT_EQ(ParseDuration("1500ms"), milliseconds(1500));
  EXPECT_EQ(ParseDuration("10s"), seconds(10));
  EXPECT_EQ(ParseDuration("2m"), minutes(2));
  EXPECT_EQ(ParseDuration("1h"), hours(1));
  EXPECT_EQ(ParseDuration("007s"), seconds(7));
  EXPECT_EQ(ParseDuration("2562047788h"), hours(2562047788));
  EXPECT_EQ(ParseDuration("9223372036854775807us"),
            microseconds(9223372036854775807));
  for (std::string_view bad :
       {"", "s", "10", "-5s", "+5s", " 5s", "5s ", "5 s", "1.5s", "5sec", "5S",
        "10 parsecs", "5d", "5ns", "9223372036854775808us",
        "99999999999999999999s", "2562047789h", "5ms5"}) {
    EXPECT_EQ(ParseDuration(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(LoaderErrorTest, TomlSyntax) {
  ExpectError("[limits]\nheader_timeout = 10s\n", 2, 20, "TOML syntax error: ");
  // toml++ reports a redefined key at its value.
  ExpectError("[server]\nmodel = \"async\"\nmodel = \"prefork\"\n", 3, 9,
              "TOML syntax error: ");
}

TEST(LoaderErrorTest, UnknownTable) {
  ExpectError("[server]\nmodel = \"async\"\n\n[serverz]\nx = 1\n", 4, 2,
              "unknown table [serverz] (valid tables: server, listen, "
              "prefork, threadpool, async, limits, log, metrics, lua, module, "
              "route)");
  ExpectError("model = \"async\"\n", 1, 1, "unknown top-level key \"model\"");
}

TEST(LoaderErrorTest, UnknownKey) {
  ExpectError(
      "[limits]\nheader_timeout = \"5s\"\n  idle_timout = \"5s\"\n", 3, 3,
      "[limits] idle_timout: unknown key (valid: header_timeout, "
      "idle_timeout, body_timeout, send_timeout, max_header_bytes, "
      "max_body_bytes, max_connections, request_timeout, drain_idle_timeout)");
  ExpectError("[server]\nthreads = 4\n", 2, 1,
              "[server] threads: unknown key (valid: model, graceful_timeout, "
              "enable_crash_handler, trusted_proxies)");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nport = 8\n", 3, 1,
              "[[listen]] #1 port: unknown key (valid: address, protocol, "
              "name, backlog, unix_mode)");
}

TEST(LoaderErrorTest, ParamOfAnotherHandlerIsAnUnknownKey) {
  ExpectError("[[route]]\npath = \"/x\"\nhandler = \"text\"\nms = 5\n", 4, 1,
              "[[route]] #1 ms: unknown key for handler \"text\" (valid: path, "
              "methods, "
              "handler, timeout, body, status, content_type)");
  ExpectError("[[route]]\nbody = \"x\"\npath = \"/x\"\nhandler = \"echo\"\n", 2,
              1,
              "[[route]] #1 body: unknown key for handler \"echo\" (valid: "
              "path, methods, handler, timeout)");
}

TEST(LoaderErrorTest, PoolCeilingBelowTheMinimum) {
  ExpectError("[prefork]\nmax_workers = 8\nworkers = 16\n", 2, 15,
              "[prefork] max_workers: 8 is less than workers (16)");
  // Against the default minimum (64 threads).
  ExpectError("[threadpool]\nmax_threads = 8\n", 2, 15,
              "[threadpool] max_threads: 8 is less than threads (64)");
  ExpectError("[threadpool]\nmax_spawn_rate = 0\n", 2, 18, "(1..4096)");
  ExpectError("[prefork]\nidle_worker_timeout = \"0s\"\n", 2, 23,
              "must be greater than 0");
}

TEST(LoaderErrorTest, WrongType) {
  ExpectError("[threadpool]\nthreads = \"64\"\n", 2, 11,
              "[threadpool] threads: expected an integer, got string \"64\"");
  ExpectError("[log]\naccess = \"yes\"\n", 2, 10,
              "[log] access: expected true or false, got string \"yes\"");
  ExpectError("[limits]\nidle_timeout = 75\n", 2, 16,
              "[limits] idle_timeout: expected a duration string like \"10s\"");
  ExpectError("[server]\nmodel = 1.5\n", 2, 9,
              "[server] model: expected a string, got float 1.5");
  ExpectError("server = 5\n", 1, 10,
              "[server]: expected a table, got integer 5");
  ExpectError(
      "[listen]\naddress = \"127.0.0.1:1\"\n", 1, 1,
      "[[listen]]: expected an array of tables [[listen]], got a table");
  ExpectError("route = [1]\n", 1, 10,
              "[[route]] #1: expected a table, got integer 1");
}

TEST(LoaderErrorTest, OutOfRange) {
  ExpectError("[threadpool]\nthreads = 0\n", 2, 11,
              "[threadpool] threads: 0 out of range (1..4096)");
  ExpectError("[threadpool]\nqueue = 1000001\n", 2, 9,
              "[threadpool] queue: 1000001 out of range (1..1000000)");
  ExpectError("[prefork]\nmax_requests = -1\n", 2, 16,
              "[prefork] max_requests: -1 out of range (>= 0)");
  ExpectError("[prefork]\nworkers = 1025\n", 2, 11, "(1..1024)");
  ExpectError("[async]\nloops = 257\n", 2, 9, "(1..256)");
  ExpectError("[limits]\nmax_header_bytes = 1023\n", 2, 20, "(1024..1048576)");
  ExpectError("[limits]\nmax_body_bytes = 17179869185\n", 2, 18,
              "(0..17179869184)");
  ExpectError("[limits]\nmax_connections = 0\n", 2, 19, "(1..1000000)");
  ExpectError("[limits]\nsend_timeout = \"0ms\"\n", 2, 16,
              "[limits] send_timeout: must be greater than 0, got 0ms");
  ExpectError("[limits]\nrequest_timeout = \"0s\"\n", 2, 19,
              "[limits] request_timeout: must be greater than 0, got 0s");
  ExpectError("[[route]]\npath = \"/t\"\nhandler = \"text\"\ntimeout = 5\n", 4,
              11,
              "[[route]] #1 timeout: expected a duration string like \"10s\"");
  ExpectError(
      "[[route]]\npath = \"/t\"\nhandler = \"text\"\ntimeout = \"0ms\"\n", 4,
      11, "[[route]] #1 timeout: must be greater than 0, got 0ms");
  ExpectError("[metrics]\ninterval = \"99ms\"\n", 2, 12,
              "[metrics] interval: 99ms is below the minimum 100ms");
  ExpectError("[server]\ngraceful_timeout = \"8761h\"\n", 2, 20,
              "is above the maximum 8760h");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nbacklog = 0\n", 3, 11,
              "[[listen]] #1 backlog: 0 out of range (1..65535)");
  ExpectError("[[route]]\npath = \"/t\"\nhandler = \"text\"\nstatus = 600\n", 4,
              10, "[[route]] #1 status: 600 out of range (100..599)");
  ExpectError("[[route]]\npath = \"/w\"\nhandler = \"wait\"\nms = 3600001\n", 4,
              6, "[[route]] #1 ms: 3600001 out of range (0..3600000)");
  ExpectError("[[route]]\npath = \"/b\"\nhandler = \"burn\"\nus = 60000001\n",
              4, 6, "[[route]] #1 us: 60000001 out of range (0..60000000)");
}

TEST(LoaderErrorTest, CapBelowDefault) {
  ExpectError(
      "[[route]]\npath = \"/w\"\nhandler = \"wait\"\nms = 50\nmax_ms = 10\n", 5,
      10, "[[route]] #1 max_ms: 10 is less than ms (50)");
  ExpectError("[[route]]\npath = \"/w\"\nhandler = \"wait\"\nms = 20000\n", 4,
              6, "[[route]] #1 ms: 20000 exceeds the default max_ms (10000)");
  ExpectError(
      "[[route]]\npath = \"/b\"\nhandler = \"burn\"\nus = 5\nmax_us = 4\n", 5,
      10, "[[route]] #1 max_us: 4 is less than us (5)");
}

TEST(LoaderErrorTest, BadDuration) {
  ExpectError("[limits]\nheader_timeout = \"10 parsecs\"\n", 2, 18,
              "[limits] header_timeout: bad duration \"10 parsecs\" (expected "
              "e.g. \"10s\", \"1500ms\"");
  ExpectError("[log]\nslow = \"-1s\"\n", 2, 8,
              "[log] slow: bad duration \"-1s\"");
  ExpectError("[server]\ngraceful_timeout = \"30\"\n", 2, 20,
              "[server] graceful_timeout: bad duration \"30\"");
}

TEST(LoaderErrorTest, BadAddress) {
  const auto expect = [](std::string_view address, std::string_view why) {
    const std::string toml =
        "[[listen]]\naddress = \"" + std::string(address) + "\"\n";
    ExpectError(toml, 2, 11,
                "[[listen]] #1 address: bad address \"" + std::string(address) +
                    "\": " + std::string(why));
  };
  expect("127.0.0.1:99999", "port 99999 out of range (0..65535)");
  expect("127.0.0.1:http", "port \"http\" is not a number");
  expect("127.0.0.1:", "missing port");
  expect("127.0.0.1", "missing \":PORT\"");
  expect(":8080", "missing host");
  expect("::1:8080", "IPv6 addresses need brackets");
  expect("[::1]", "missing \":PORT\" after \"[::1]\"");
  expect("[::g]:80", "\"::g\" is not an IPv6 address");
  expect("[::1:80", "missing ']'");
  expect("300.0.0.1:80", "\"300.0.0.1\" is not an IPv4 address");
  expect("bad host:80", "\"bad host\" is not a valid host name");
  expect("unix:run/g.sock", "unix socket path must be absolute");
  expect("unix:/" + std::string(107, 'x'),
         "unix socket path is 108 bytes, longer than the limit of 107");
  // The longest path that fits sun_path, and the other accepted forms.
  for (const std::string& good :
       {"unix:/" + std::string(106, 'x'), std::string("[::]:0"),
        std::string("[2001:db8::1]:65535"), std::string("localhost:8080"),
        std::string("0.0.0.0:80")}) {
    Load("[[listen]]\naddress = \"" + good + "\"\n");
  }
}

TEST(LoaderErrorTest, UnknownModel) {
  ExpectError(
      "[server]\nmodel = \"x\"\n", 2, 9,
      "[server] model: unknown model \"x\" (valid: prefork, threadpool, "
      "async)");
  // A default that the vocabulary lacks is reported too, without a position.
  constexpr ModelSchema kOnlyAsync[] = {{"async", {}}};
  ConfigResult result =
      LoadConfigString("", "test.toml", {kOnlyAsync, HandlerSchemas()});
  ASSERT_TRUE(std::holds_alternative<ConfigError>(result));
  EXPECT_EQ(
      std::get<ConfigError>(result).ToString(),
      "test.toml: [server] model: the default model \"threadpool\" is not "
      "available; set one of async");
}

TEST(LoaderErrorTest, UnknownHandler) {
  ExpectError("[[route]]\npath = \"/x\"\nhandler = \"nope\"\n", 3, 11,
              "[[route]] #1 handler: unknown handler \"nope\" (valid: " +
                  BuiltInNames() + ")");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nprotocol = \"spdy\"\n", 3,
              12, "unknown protocol \"spdy\" (valid: http, fastcgi)");
  ExpectError("[log]\nlevel = \"verbose\"\n", 2, 9,
              "unknown log level \"verbose\" (valid: trace, debug, info, warn, "
              "error, critical, off)");
}

TEST(LoaderErrorTest, MissingRequiredKey) {
  ExpectError(
      "[[route]]\npath = \"/x\"\nhandler = \"echo\"\n\n"
      "[[route]]\nhandler = \"echo\"\n",
      5, 1, "[[route]] #2: missing required key \"path\"");
  ExpectError("[[route]]\npath = \"/x\"\n", 1, 1,
              "[[route]] #1: missing required key \"handler\"");
  ExpectError("[[listen]]\nname = \"x\"\n", 1, 1,
              "[[listen]] #1: missing required key \"address\"");
  ExpectError("listen = []\n", 1, 10, "at least one listener is required");
}

TEST(LoaderErrorTest, BadRoutePath) {
  ExpectError("[[route]]\npath = \"x\"\nhandler = \"echo\"\n", 2, 8,
              "[[route]] #1 path: path \"x\" must start with '/'");
  ExpectError("[[route]]\npath = \"/a?b=1\"\nhandler = \"echo\"\n", 2, 8,
              "must not contain");
  ExpectError(
      "[[route]]\npath = \"/t\"\nhandler = \"text\"\ncontent_type = "
      "\"a\\r\\nb\"\n",
      4, 16, "[[route]] #1 content_type: bad header value \"a\\r\\nb\"");
}

TEST(LoaderErrorTest, DuplicateRoute) {
  ExpectError(
      "[[route]]\npath = \"/a\"\nhandler = \"echo\"\n\n"
      "[[route]]\nhandler = \"echo\"\npath = \"/a\"\n",
      7, 8,
      "[[route]] #2 path: \"/a\" conflicts with [[route]] #1 \"/a\" (line 2, "
      "column 8): duplicate route");
}

TEST(LoaderErrorTest, ConflictingRoutesNameBoth) {
  ExpectError(
      "[[route]]\npath = \"/posts/{id}\"\nhandler = \"echo\"\n"
      "[[route]]\nhandler = \"echo\"\npath = \"/{resource}/latest\"\n",
      6, 8,
      "[[route]] #2 path: \"/{resource}/latest\" conflicts with [[route]] #1 "
      "\"/posts/{id}\" (line 2, column 8): both match /posts/latest and "
      "neither is more specific");
  // Overlapping method sets on one pattern.
  ExpectError(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\", \"POST\"]\n"
      "handler = \"echo\"\n"
      "[[route]]\npath = \"/a\"\nmethods = [\"POST\"]\nhandler = \"echo\"\n",
      6, 8,
      "\"POST /a\" conflicts with [[route]] #1 \"GET,POST /a\" (line 2, "
      "column 8): the same pattern with overlapping methods");
  // Go's consequence: a method-restricted catch-all against a plain route.
  ExpectError(
      "[[route]]\npath = \"/index.html\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/\"\nmethods = [\"GET\"]\nhandler = \"echo\"\n",
      5, 8, "both match /index.html and neither is more specific");
}

TEST(LoaderErrorTest, MalformedPatterns) {
  for (const char* bad : {"/a/{", "/a/{x}{y}", "/a/{x...}/b"}) {
    ExpectError(
        "[[route]]\npath = \"" + std::string(bad) + "\"\nhandler = \"echo\"\n",
        2, 8, "[[route]] #1 path: path \"" + std::string(bad) + "\": ");
  }
}

TEST(LoaderErrorTest, BadMethods) {
  ExpectError("[[route]]\npath = \"/a\"\nmethods = []\nhandler = \"echo\"\n", 3,
              11, "[[route]] #1 methods: empty list");
  ExpectError(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\", \"G T\"]\n"
      "handler = \"echo\"\n",
      3, 11, "element 1: \"G T\" is not a method name");
  ExpectError(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\", \"GET\"]\n"
      "handler = \"echo\"\n",
      3, 11, "element 1: duplicate method \"GET\"");
}

TEST(LoaderTest, DisjointMethodsShareAPattern) {
  const Config config = Load(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\"]\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/a\"\nmethods = [\"POST\"]\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/a/{id}\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/a/\"\nhandler = \"echo\"\n");
  ASSERT_EQ(config.routes.size(), 4u);
  EXPECT_EQ(config.routes[1].methods, std::vector<std::string>{"POST"});
  EXPECT_EQ(RouteDisplay(config.routes[1]), "POST /a");
  EXPECT_EQ(RouteDisplay(config.routes[2]), "/a/{id}");
}

// -p: most specific first, unrelated routes in config order; the printed
// config loads back to the same routes.
TEST(LoaderTest, PrintsRoutesMostSpecificFirst) {
  const Config config = Load(
      "[[route]]\npath = \"/\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/a/\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/a/b\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/z\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/a/b\"\nmethods = [\"GET\"]\nhandler = "
      "\"echo\"\n");
  EXPECT_EQ(SpecificityOrder(config.routes),
            (std::vector<size_t>{3, 4, 2, 1, 0}));
  const std::string text = FormatConfig(config, HandlerSchemas());
  const Config printed = Load(text);
  ASSERT_EQ(printed.routes.size(), 5u);
  const std::vector<std::string> shown = {"/z", "GET /a/b", "/a/b", "/a/", "/"};
  for (size_t i = 0; i < shown.size(); ++i) {
    EXPECT_EQ(RouteDisplay(printed.routes[i]), shown[i]) << text;
  }
}

TEST(LoaderErrorTest, DuplicateListener) {
  // Both names default to "http": the error points at the second table.
  ExpectError(
      "[[listen]]\naddress = \"127.0.0.1:1\"\n"
      "[[listen]]\naddress = \"127.0.0.1:2\"\n",
      3, 1,
      "[[listen]] #2 name: duplicate listener name \"http\" (first at line 1)");
  ExpectError(
      "[[listen]]\naddress = \"127.0.0.1:1\"\nname = \"a\"\n"
      "[[listen]]\naddress = \"127.0.0.1:2\"\nname = \"a\"\n",
      6, 8, "[[listen]] #2 name: duplicate listener name \"a\"");
  ExpectError(
      "[[listen]]\naddress = \"127.0.0.1:1\"\n"
      "[[listen]]\naddress = \"127.0.0.1:1\"\nname = \"b\"\n",
      4, 11,
      "[[listen]] #2 address: duplicate address \"127.0.0.1:1\" (first at "
      "line 1)");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nname = \"a:b\"\n", 3, 8,
              "[[listen]] #1 name: bad name \"a:b\"");
}

TEST(LoaderErrorTest, FirstErrorInTheFileWins) {
  // toml++ tables are sorted maps; the loader still reports in file order.
  ExpectError("[threadpool]\nthreads = 0\n[async]\nloops = 0\n", 2, 11,
              "[threadpool] threads");
  ExpectError("[limits]\nmax_connections = 0\nbody_timeout = \"x\"\n", 2, 19,
              "[limits] max_connections");
}

TEST(LoaderErrorTest, CrashHandlerNeedsTheServerFlag) {
  ExpectError("[[route]]\npath = \"/c\"\nhandler = \"crash\"\n", 3, 11,
              "enable_crash_handler = true");
  // The flag may come after the route.
  Config c = Load(
      "[[route]]\npath = \"/c\"\nhandler = \"crash\"\n"
      "[server]\nenable_crash_handler = true\n");
  ASSERT_EQ(c.routes.size(), 1u);
  EXPECT_EQ(c.routes[0].handler, "crash");
  EXPECT_TRUE(c.server.enable_crash_handler);
}

TEST(LoaderTest, TrustedProxies) {
  Config c = Load("");
  ASSERT_EQ(c.server.trusted_proxies.size(), 3u);  // unix and loopback
  EXPECT_EQ(c.server.trusted_proxies[0].text, "unix");
  EXPECT_EQ(c.server.trusted_proxies[1].text, "127.0.0.0/8");
  EXPECT_EQ(c.server.trusted_proxies[2].text, "::1");
  c = Load("[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"fd00::/8\"]\n");
  ASSERT_EQ(c.server.trusted_proxies.size(), 2u);
  EXPECT_TRUE(c.server.trusted_proxies[0].Contains(*ParseIp("10.2.3.4")));
  EXPECT_FALSE(Trusted(c.server.trusted_proxies, *ParseIp("127.0.0.1")));
  ExpectRoundTrip(c);
  c = Load("[server]\ntrusted_proxies = []\n");  // trust nobody
  EXPECT_TRUE(c.server.trusted_proxies.empty());
  ExpectRoundTrip(c);
}

TEST(LoaderErrorTest, TrustedProxies) {
  ExpectError("[server]\ntrusted_proxies = [\"unix\", \"10.0.0.0/40\"]\n", 2,
              19,
              "[server] trusted_proxies: element 1: \"10.0.0.0/40\": bad "
              "prefix /40 (0..32)");
  ExpectError("[server]\ntrusted_proxies = \"unix\"\n", 2, 19,
              "[server] trusted_proxies: expected an array of strings");
  ExpectError("[server]\ntrusted_proxies = [\"nginx.local\"]\n", 2, 19,
              "\"nginx.local\" is not \"unix\", an IP address or a CIDR "
              "network");
}

TEST(LoaderErrorTest, ToString) {
  const ConfigError error = LoadError("[server]\nmodel = \"x\"\n");
  EXPECT_EQ(error.ToString(),
            "test.toml:2:9: [server] model: unknown model \"x\" (valid: "
            "prefork, threadpool, async)");
}

TEST(LoaderErrorTest, UnreadableFile) {
  ConfigResult result =
      LoadConfigFile("/nonexistent/gearbox.toml", kVocabulary);
  ASSERT_TRUE(std::holds_alternative<ConfigError>(result));
  const ConfigError& error = std::get<ConfigError>(result);
  EXPECT_EQ(error.line, 0);
  EXPECT_EQ(error.ToString(),
            "/nonexistent/gearbox.toml: No such file or directory");
  result = LoadConfigFile("config", kVocabulary);  // a directory
  ASSERT_TRUE(std::holds_alternative<ConfigError>(result));
  EXPECT_EQ(std::get<ConfigError>(result).ToString(), "config: Is a directory");
}

}  // namespace
}  // namespace gearbox
