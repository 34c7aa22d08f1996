// Operator controls (issue 17), deadlines and stalls: a waiting handler gets
// 504 at its route's timeout; a CPU-stuck prefork child is killed and
// replaced; a stuck threadpool thread is reported and replaced; async stall
// detection logs and counts a loop a callback blocks. Timings are bounded
// waits with generous margins, not tight races; every figure goes to the test
// log.
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "tests/hardening/controls_fixture.h"
#include "tests/hardening/hardening.h"

namespace gearbox::hardening {
namespace {

using gearbox::testing::GetRequest;
using gearbox::testing::WaitUntil;

// How old an HTTP Date header value is, in seconds (-1: unparsable).
int64_t DateAgeSeconds(const std::string& value) {
  struct tm tm = {};
  const char* end = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return -1;
  return static_cast<int64_t>(time(nullptr) - timegm(&tm));
}

// A route whose handler waits longer than its timeout, and one that takes
// [limits] request_timeout.
constexpr char kSlowRoutes[] =
    "\n[[route]]\npath = \"/slow\"\nhandler = \"wait\"\nms = 5000\n"
    "timeout = \"300ms\"\n"
    "\n[[route]]\npath = \"/slow_default\"\nhandler = \"wait\"\nms = 5000\n";

// Every model: the state machine destroys the waiting exchange at the
// deadline and answers 504 within the timeout + 100 ms, on a connection that
// stays usable.
TEST_F(ControlsTest, WaitingHandlerPastRouteTimeoutGets504) {
  Settings s;
  s.routes = kSlowRoutes;
  s.limits_extra = "request_timeout = \"400ms\"\n";
  ASSERT_NO_FATAL_FAILURE(Start(s));
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok()) << c.error();
  std::string timings;
  auto timed = [&](std::string_view target, double timeout_ms) {
    SCOPED_TRACE(std::string(target));
    const auto start = Clock::now();
    ASSERT_TRUE(c.Send(GetRequest(target))) << c.error();
    HttpResponse r = c.ReadResponse(Millis(5000));
    const double ms = MsSince(start);
    timings += " " + std::string(target) + "=" + std::to_string(ms);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 504) << r.raw;
    EXPECT_EQ(r.body, "request timeout\n");
    EXPECT_GE(ms, timeout_ms - 2);  // steady clock; 2 ms of rounding
    EXPECT_LE(ms, timeout_ms + 100) << "504 later than timeout + 100 ms";
  };
  for (int i = 0; i < 3; ++i) timed("/slow", 300);
  timed("/slow_default", 400);
  // The same connection serves the next request.
  ASSERT_TRUE(c.Send(GetRequest("/hello"))) << c.error();
  HttpResponse hello = c.ReadResponse();
  EXPECT_EQ(hello.status, 200) << hello.raw;
  Report("ms:" + timings);
  const std::string json = StatusJson();
  EXPECT_EQ(JsonNumber(json, "request_timeouts"), 4) << json;
  EXPECT_EQ(JsonNumber(json, "5xx"), 4) << json;
  EXPECT_EQ(JsonNumber(json, "inflight"), 1) << json;  // the /status itself
}

// A /burn that takes 20 s of CPU against a 500 ms timeout.
constexpr char kBurnRoute[] =
    "\n[[route]]\npath = \"/burn\"\nhandler = \"burn\"\nmax_us = 30000000\n"
    "timeout = \"500ms\"\n";

// prefork: the master kills the child at deadline + grace (1 s), the client
// gets 504 (HTTP) and a close, a new child takes the slot, and a fresh
// request is served by the other child meanwhile.
TEST_F(ControlsTest, PreforkCpuStuckChildIsKilledAndReplaced) {
  if (!IsModel("prefork")) GTEST_SKIP() << "prefork only";
  Settings s;
  s.workers = 2;
  s.routes = kBurnRoute;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  const std::vector<pid_t> before = WorkerChildrenOf(pid());
  ASSERT_EQ(before.size(), 2u);

  Connection burn = Connection::Open(port());
  ASSERT_TRUE(burn.ok()) << burn.error();
  const auto sent = Clock::now();
  ASSERT_TRUE(burn.Send(GetRequest("/burn?us=20000000")));
  // A child burns: /status (served by the other one) counts it in flight.
  ASSERT_TRUE(WaitUntil([&] { return Status("inflight") >= 2; }, Millis(5000)))
      << "the /burn request never started";
  std::string error;
  const double hello_ms = TimedHello(Millis(2000), &error);
  EXPECT_GE(hello_ms, 0) << "no fresh request served while a child burns: "
                         << error;

  HttpResponse r = burn.ReadResponse(Millis(6000));
  const double answered_ms = MsSince(sent);
  EXPECT_EQ(r.status, 504) << r.error << r.raw;
  EXPECT_EQ(r.body, "request timeout\n");
  EXPECT_EQ(r.Header("Connection"), "close") << r.raw;
  // Rendered ahead (once per child), stamped at the kill: today's Date.
  const int64_t date_age = DateAgeSeconds(r.Header("Date"));
  EXPECT_GE(date_age, 0) << r.raw;
  EXPECT_LE(date_age, 5) << r.raw;
  EXPECT_TRUE(burn.WaitClosed(Millis(2000)));
  // deadline 500 ms + grace 1 s, then the master's 100 ms tick.
  EXPECT_GE(answered_ms, 1500 - 5);
  EXPECT_LE(answered_ms, 3500);

  const std::string log = WaitForLog("event=child_replaced", Millis(3000));
  const std::string killed = LineWith(log, "event=request_killed");
  ASSERT_NE(killed, "") << "no event=request_killed";
  EXPECT_NE(killed.find("path=/burn "), std::string::npos) << killed;
  EXPECT_NE(killed.find("age_ms="), std::string::npos) << killed;
  pid_t victim = 0;
  for (pid_t p : before) {
    if (killed.find(" pid=" + std::to_string(p) + " ") != std::string::npos)
      victim = p;
  }
  EXPECT_NE(victim, 0) << "the line names none of " << before[0] << ", "
                       << before[1] << ": " << killed;
  // Replaced: two children again, the victim not among them.
  std::vector<pid_t> after;
  WaitUntil(
      [&] {
        after = WorkerChildrenOf(pid());
        return after.size() == 2 &&
               std::find(after.begin(), after.end(), victim) == after.end();
      },
      Millis(3000));
  EXPECT_EQ(after.size(), 2u);
  EXPECT_EQ(std::find(after.begin(), after.end(), victim), after.end());
  EXPECT_EQ(log.find("event=child_died"), std::string::npos)
      << "a kill is not a crash";
  ExpectHealthy("after the kill");
  EXPECT_EQ(Status("request_timeouts"), 1) << "counted once";
  Report("answered_ms=" + std::to_string(answered_ms) +
         " hello_while_stuck_ms=" + std::to_string(hello_ms) + " " + killed);
}

// threadpool: a thread burning past its deadline cannot be interrupted; it is
// reported (request_stuck) and a replacement thread serves the other clients
// while it burns on.
TEST_F(ControlsTest, ThreadpoolStuckThreadIsReplacedUpToMaxThreads) {
  if (!IsModel("threadpool")) GTEST_SKIP() << "threadpool only";
  Settings s;
  s.threads = 1;
  // Room for the replacement even when the pool has grown once already: the
  // one thread parks /burn's connection before its bytes come, and when they
  // are ready the moment it comes back, the scaler counts that as work that
  // waited (reason=busy queue=0) and may start the second thread first.
  s.threadpool_extra = "max_threads = 3\n";
  s.routes = kBurnRoute;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  Connection burn = Connection::Open(port());
  ASSERT_TRUE(burn.ok()) << burn.error();
  const auto sent = Clock::now();
  ASSERT_TRUE(burn.Send(GetRequest("/burn?us=5000000")));
  // Reported past deadline (500 ms) + grace (1 s), at the next 100 ms tick.
  const std::string log = WaitForLog("event=request_stuck", Millis(4000));
  const double reported_ms = MsSince(sent);
  const std::string stuck = LineWith(log, "event=request_stuck");
  ASSERT_NE(stuck, "") << "no event=request_stuck";
  EXPECT_NE(stuck.find("path=/burn "), std::string::npos) << stuck;
  EXPECT_NE(stuck.find("replacement=started"), std::string::npos) << stuck;
  EXPECT_GE(reported_ms, 1500 - 5);
  // Other clients are served while the one thread burns.
  std::string error;
  double worst_ms = 0;
  for (int i = 0; i < 5; ++i) {
    const double ms = TimedHello(Millis(2000), &error);
    EXPECT_GE(ms, 0) << error;
    worst_ms = std::max(worst_ms, ms);
  }
  const double hello_done_ms = MsSince(sent);
  EXPECT_LT(hello_done_ms, 5000) << "the burn was over before /hello ran";
  // It finishes late (nothing can cut it short): a 200.
  HttpResponse r = burn.ReadResponse(Millis(10000));
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(Status("request_timeouts"), 1);
  Report("reported_ms=" + std::to_string(reported_ms) +
         " hello_worst_ms=" + std::to_string(worst_ms) + " " + stuck);
}

// async: a 300 ms burn blocks its loop; the callback is logged
// (event=loop_stalled loop=0 ms>=300 path=/burn) and counted, once.
TEST_F(ControlsTest, AsyncBurnLogsLoopStalled) {
  if (!IsModel("async")) GTEST_SKIP() << "async only";
  Settings s;
  s.routes = kBurnRoute;
  s.limits_extra = "request_timeout = \"10s\"\n";
  ASSERT_NO_FATAL_FAILURE(Start(s));
  for (int i = 0; i < 20; ++i) ExpectHealthy("before");  // fast: no stall
  EXPECT_EQ(daemon_->Log().find("event=loop_stalled"), std::string::npos);
  HttpResponse r = gearbox::testing::Exchange(
      port(), GetRequest("/burn?us=300000"), Millis(5000));
  EXPECT_EQ(r.status, 200) << r.error;
  const std::string log = WaitForLog("event=loop_stalled", Millis(2000));
  const std::string line = LineWith(log, "event=loop_stalled");
  ASSERT_NE(line, "") << "no event=loop_stalled after a 300 ms burn";
  EXPECT_NE(line.find(" loop=0 "), std::string::npos) << line;
  EXPECT_NE(line.find(" path=/burn"), std::string::npos) << line;
  const size_t at = line.find(" ms=");
  ASSERT_NE(at, std::string::npos) << line;
  // Timed with the coarse clock: the kernel tick's resolution (<= 10 ms).
  EXPECT_GE(strtod(line.c_str() + at + 4, nullptr), 300 - 10) << line;
  EXPECT_EQ(Status("loop_stalls"), 1);
  Report(line);
}

// stall_threshold = "0s" turns it off.
TEST_F(ControlsTest, AsyncStallDetectionOff) {
  if (!IsModel("async")) GTEST_SKIP() << "async only";
  Settings s;
  s.routes = kBurnRoute;
  s.async_extra = "stall_threshold = \"0s\"\n";
  ASSERT_NO_FATAL_FAILURE(Start(s));
  HttpResponse r = gearbox::testing::Exchange(
      port(), GetRequest("/burn?us=300000"), Millis(5000));
  EXPECT_EQ(r.status, 200) << r.error;
  ExpectHealthy("after");
  EXPECT_EQ(daemon_->Log().find("event=loop_stalled"), std::string::npos);
  EXPECT_EQ(Status("loop_stalls"), 0);
}

}  // namespace
}  // namespace gearbox::hardening

int main(int argc, char** argv) {
  return gearbox::hardening::HardeningMain(argc, argv);
}
