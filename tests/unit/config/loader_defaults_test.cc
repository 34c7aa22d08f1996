// The files in config/ and the defaults: the shipped reference file and the
// embedded default are the config an empty file gets; what a file that sets
// only some tables keeps of it; a file that cannot be read.
#include <gtest/gtest.h>

#include <chrono>
#include <variant>

#include "config/config.h"
#include "config/loader.h"
#include "tests/support/read_file.h"
#include "tests/unit/config/loader_harness.h"

namespace gearbox::testing::loader {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

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
}  // namespace gearbox::testing::loader
