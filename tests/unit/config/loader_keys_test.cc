// Every key set, the forms a value may take, and the printed config (-p):
// it loads back to the same config.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/ip_net.h"
#include "config/loader.h"
#include "daemon/handlers/handlers.h"
#include "tests/unit/config/loader_harness.h"

namespace gearbox::testing::loader {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

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
lingering_timeout = "5m"

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
  EXPECT_EQ(c.limits.lingering_timeout, minutes(5));
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

}  // namespace
}  // namespace gearbox::testing::loader
