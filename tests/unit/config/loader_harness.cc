#include "tests/unit/config/loader_harness.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "config/params.h"
#include "daemon/handlers/handlers.h"

namespace gearbox::testing::loader {
namespace {

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

}  // namespace

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

}  // namespace gearbox::testing::loader
