// `gearboxd --advise` reads a window of the daemon's history, not the last
// stats interval (part of the metrics_<model> binary): with a 1 s interval,
// three routes loaded one after the other all appear in the advice, and the
// summary line states the window. Also /status?window= itself: the figures of
// the window asked, its bounds, and a 400 for a window out of range.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/metrics/metrics_fixture.h"

namespace gearbox::testing {
namespace {

constexpr const char* kRoutes =
    "\n[[route]]\npath = \"/hello\"\nhandler = \"text\"\n"
    "body = \"hello world\\n\"\n"
    "\n[[route]]\npath = \"/w5\"\nhandler = \"wait\"\nms = 5\n"
    "\n[[route]]\npath = \"/b2\"\nhandler = \"burn\"\nus = 2000\n"
    "\n[[route]]\npath = \"/status\"\nhandler = \"status\"\n";

std::vector<std::string> SplitText(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class AdviseWindowTest : public MetricsTest {
 protected:
  void StartDaemon(const std::string& interval = "1s") {
    Sizing sizing;
    sizing.interval = interval;
    DaemonConfig config;
    config.model = ModelUnderTest();
    config.default_routes = false;
    config.sections = Sections(sizing) + kRoutes;
    std::string error;
    daemon_ = Daemon::Start(config, &error);
    ASSERT_NE(daemon_, nullptr) << error;
  }

  // Keep-alive GETs of `target` from 4 clients for `length` (whole rounds of
  // 10 requests each); returns how many were answered 200.
  int LoadFor(const std::string& target, Millis length) {
    const auto end = Clock::now() + length;
    int ok = 0;
    while (Clock::now() < end) {
      LoadResult r = KeepAliveLoad(port(), 4, 10, target, "");
      EXPECT_EQ(r.statuses[200], 40) << target << ": " << r.failures;
      ok += r.statuses[200];
    }
    return ok;
  }

  // Runs `gearboxd ARGS...`; returns its exit status and output.
  std::pair<int, std::string> Run(std::vector<std::string> args) {
    static int n = 0;
    const std::string out =
        TestTempDir() + "/advise-window-" + std::to_string(++n) + ".out";
    args.insert(args.begin(), GearboxdPath());
    std::string error;
    const pid_t pid = SpawnLogged(args, out, &error);
    EXPECT_GT(pid, 0) << error;
    if (pid <= 0) return {-1, error};
    const std::optional<int> status = WaitChild(pid, Millis(15000));
    EXPECT_TRUE(status.has_value()) << "gearboxd did not exit";
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    printf("gearboxd %s ->\n%s", args[1].c_str(), text.str().c_str());
    return {status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1,
            text.str()};
  }

  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(port());
  }
};

// The routes --advise printed a line for.
std::vector<std::string> AdvisedRoutes(const std::vector<std::string>& lines) {
  std::vector<std::string> routes;
  for (const std::string& l : lines) {
    if (l.rfind("route=", 0) == 0) {
      routes.push_back(l.substr(6, l.find(' ') - 6));
    }
  }
  return routes;
}

double SummaryNumber(const std::string& summary, const std::string& key) {
  const size_t at = summary.find(" " + key + "=");
  if (at == std::string::npos) return -1;
  return std::stod(summary.substr(at + key.size() + 2));
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The scenario of an operator: 3 s of load on /hello, then on /w5 (a 5 ms
// wait), then on /b2 (a 2 ms burn), with [metrics] interval = "1s"; then
// `gearboxd --advise URL`. The last interval holds /b2 only; the default
// window (60 s, or since start) holds all three.
TEST_F(AdviseWindowTest, AdviseListsEveryRouteLoadedWithinTheWindow) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  const auto start = Clock::now();
  EXPECT_GT(LoadFor("/hello", Millis(3000)), 0);
  EXPECT_GT(LoadFor("/w5", Millis(3000)), 0);
  EXPECT_GT(LoadFor("/b2", Millis(3000)), 0);
  const double loaded_s =
      std::chrono::duration<double>(Clock::now() - start).count();

  // What the advice used to read: the last 1 s interval has no /hello.
  HttpResponse last = Exchange(port(), GetRequest("/status?format=text"));
  std::string hello_row;
  for (const std::string& l : SplitText(last.body)) {
    if (l.rfind("route: name=/hello ", 0) == 0) hello_row = l;
  }
  EXPECT_NE(hello_row.find(" w_requests=0 "), std::string::npos)
      << "the last interval holds no /hello:\n"
      << last.body;

  auto [code, out] = Run({"--advise", Url()});
  ASSERT_EQ(code, 0) << out;
  std::vector<std::string> lines = SplitText(out);
  ASSERT_GE(lines.size(), 4u) << out;
  const std::vector<std::string> routes = AdvisedRoutes(lines);
  for (const char* r : {"/hello", "/w5", "/b2"}) {
    EXPECT_TRUE(Has(routes, r)) << r << " missing from:\n" << out;
  }
  const std::string& summary = lines.back();
  ASSERT_EQ(summary.rfind("summary window_s=", 0), 0u) << summary;
  EXPECT_EQ(SummaryNumber(summary, "window_asked_s"), 60) << summary;
  // Since the daemon started: the loads, and less than the 60 s asked.
  EXPECT_GE(SummaryNumber(summary, "window_s"), loaded_s - 0.5) << summary;
  EXPECT_LT(SummaryNumber(summary, "window_s"), 60) << summary;

  // --window 2s: the last two seconds hold /b2, not /hello (6 s before).
  auto [code2, out2] = Run({"--advise", Url(), "--window", "2s"});
  ASSERT_EQ(code2, 0) << out2;
  std::vector<std::string> lines2 = SplitText(out2);
  const std::vector<std::string> routes2 = AdvisedRoutes(lines2);
  EXPECT_TRUE(Has(routes2, "/b2")) << out2;
  EXPECT_FALSE(Has(routes2, "/hello")) << out2;
  ASSERT_FALSE(lines2.empty());
  EXPECT_EQ(SummaryNumber(lines2.back(), "window_asked_s"), 2) << out2;
  EXPECT_GE(SummaryNumber(lines2.back(), "window_s"), 2) << out2;
  EXPECT_LT(SummaryNumber(lines2.back(), "window_s"), 3.5)
      << "a snapshot is at most one 1 s interval older than asked";
}

// /status?window=: the JSON states the window asked and covered, and counts
// every request of a route loaded within it; out-of-range windows are a 400
// naming the bounds, and --window out of range a usage error.
TEST_F(AdviseWindowTest, StatusWindowCountsAndBounds) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  LoadResult hello = KeepAliveLoad(port(), 2, 50, "/hello", "hello world\n");
  ASSERT_EQ(hello.ok, 100) << hello.failures;
  std::optional<JsonValue> status = StatusJson("?window=15m");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->Path("window.asked_s")->Num().value_or(0), 900);
  EXPECT_LT(status->Path("window.seconds")->Num().value_or(1e9), 900)
      << "since the daemon started";
  // Every request since start is in the window, exactly (the text format
  // has the window's raw sums).
  HttpResponse text =
      Exchange(port(), GetRequest("/status?format=text&window=15m"));
  EXPECT_NE(text.body.find("window_asked_s: 900.000\n"), std::string::npos)
      << text.body;
  std::string hello_row;
  for (const std::string& l : SplitText(text.body)) {
    if (l.rfind("route: name=/hello ", 0) == 0) hello_row = l;
  }
  EXPECT_NE(hello_row.find(" w_requests=100 "), std::string::npos) << text.body;

  for (const char* bad : {"16m", "0s", "500ms", "soon"}) {
    HttpResponse r =
        Exchange(port(), GetRequest(std::string("/status?window=") + bad));
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("want a duration from 1s to 15m"), std::string::npos)
        << r.body;
  }
  auto [code, out] = Run({"--advise", Url(), "--window", "1h"});
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--window 1h: want a duration from 1s to 15m"),
            std::string::npos)
      << out;
}

// A window needs no completed stats interval: with an hour-long interval, the
// first seconds are there, with the workers serving them.
TEST_F(AdviseWindowTest, AWindowBeforeTheFirstInterval) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon("1h"));
  LoadResult hello = KeepAliveLoad(port(), 2, 20, "/hello", "hello world\n");
  ASSERT_EQ(hello.ok, 40) << hello.failures;
  std::optional<JsonValue> status = StatusJson("?window=60s");
  ASSERT_TRUE(status.has_value());
  EXPECT_GT(JsonInt(*status, "window.workers"), 0);
  EXPECT_GT(JsonInt(*status, "advice.configured_size"), 0);
  EXPECT_EQ(status->Path("window.routes")->array.size(), 1u)
      << "/hello (the /status request in progress is not counted yet)";
  std::optional<JsonValue> last = StatusJson();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->Path("advice")->type, JsonValue::Type::kNull)
      << "without a window: the last interval, none completed yet";
}

}  // namespace
}  // namespace gearbox::testing
