// Errors in a file's syntax, tables, keys, types and values: each at its
// file:line:col, with a message that names the key.
#include <gtest/gtest.h>

#include <variant>

#include "config/loader.h"
#include "daemon/handlers/handlers.h"
#include "models/model.h"
#include "tests/unit/config/loader_harness.h"

namespace gearbox::testing::loader {
namespace {

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
      "max_body_bytes, max_connections, request_timeout, drain_idle_timeout, "
      "lingering_timeout)");
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

TEST(LoaderErrorTest, FirstErrorInTheFileWins) {
  // toml++ tables are sorted maps; the loader still reports in file order.
  ExpectError("[threadpool]\nthreads = 0\n[async]\nloops = 0\n", 2, 11,
              "[threadpool] threads");
  ExpectError("[limits]\nmax_connections = 0\nbody_timeout = \"x\"\n", 2, 19,
              "[limits] max_connections");
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

}  // namespace
}  // namespace gearbox::testing::loader
