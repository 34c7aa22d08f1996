// Metrics under known load, one target per model (metrics_<model>): the real
// gearboxd, real sockets, and assertions on *parsed* figures — the periodic
// `event=stats` logfmt line, the /status JSON and OpenMetrics exposition, the
// access and slow-request logs — against what the client actually sent and saw.
//
// Counting rules the daemon follows (daemon/connection/request_cycle.h) and the
// tests rely on:
//   - `requests` is cumulative and counts a request when its response is
//     serialized (FinishRequest), i.e. before the client can read it. So once
//     the client holds N responses, every later stats line says >= N.
//   - A /status request is counted after it rendered its own body: /status
//     shows the requests before it; the next scrape shows it too.
//   - A threadpool 503 from a full queue is counted in `rejected` and `s5xx`,
//     not in `requests` (it never reached a handler).
//   - Percentiles (p50_ms ...) cover one interval: bucket upper bounds of a
//     log-linear histogram (~12% wide), so a 20 ms sleep reads 20.480.
//
// Every wait is bounded; each test takes a few seconds. The access/slow log
// and journald tests are in log_lines_test.cc (same binary).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/metrics/metrics_fixture.h"

namespace gearbox::testing {
namespace {

// 1. Known load: 10 clients x 50 keep-alive GET /sleep?ms=20, workers sized so
// nothing queues. The counters must add up exactly; the latency must read
// ~20 ms; busy must rise during the load and fall to 0 after it.
TEST_F(MetricsTest, KnownLoadIsCountedExactly) {
  constexpr int kClients = 10;
  constexpr int kPerClient = 50;
  constexpr int kSent = kClients * kPerClient;
  Sizing sizing;  // threadpool 16 threads, prefork 12 workers, async 1 loop
  sizing.interval = "1s";
  ASSERT_NO_FATAL_FAILURE(Start(sizing));

  // The load takes ~1.1 s (50 x 20 ms per client); starting it 400 ms after a
  // stats line puts the next line (interval 1 s, on the supervisor's 100 ms
  // tick) inside it.
  ASSERT_NO_FATAL_FAILURE(SyncToStatsLine(Millis(400)));
  const size_t before_load = Stats().size();
  const auto t0 = Clock::now();
  LoadResult load = KeepAliveLoad(port(), kClients, kPerClient, "/sleep?ms=20",
                                  "waited 20 ms\n");
  const double load_s =
      std::chrono::duration<double>(Clock::now() - t0).count();
  const size_t after_load = Stats().size();
  // Two more lines: the first is written after the last response (all counted,
  // nothing in flight), the second is a whole idle interval.
  std::vector<LogLine> stats = WaitForStats(after_load + 2, Millis(3500));

  printf("model=%s sent=%d ok=%d statuses=%s retries=%d failed=%d load=%.3fs\n",
         ModelUnderTest().c_str(), kSent, load.ok,
         DescribeStatuses(load.statuses).c_str(), load.retries, load.failed,
         load_s);
  printf("stats lines: %zu before the load, %zu at its end, %zu now\n%s",
         before_load, after_load, stats.size(), StatsTable(stats).c_str());

  ASSERT_EQ(load.ok, kSent) << load.failures;
  ASSERT_GE(stats.size(), after_load + 2) << "no stats lines after the load";
  ASSERT_GT(after_load, before_load)
      << "no stats line was written during the " << load_s << " s load";

  for (const LogLine& l : stats) {
    for (const char* key : kStatsKeys)
      EXPECT_TRUE(l.Has(key)) << "stats line without " << key << ": " << l.raw;
    EXPECT_EQ(l.Get("model"), ModelUnderTest()) << l.raw;
    EXPECT_EQ(l.Get("level"), "info") << l.raw;
  }

  // Exact totals on the last line.
  const LogLine& last = stats.back();
  EXPECT_EQ(IntOr(last, "requests"), kSent) << last.raw;
  EXPECT_EQ(IntOr(last, "s2xx"), kSent) << last.raw;
  EXPECT_EQ(IntOr(last, "s4xx"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "s5xx"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "rejected"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "bad_input"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "timeouts"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "inflight"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "busy"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "queue"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "conns"), 0)
      << "the clients closed every connection: " << last.raw;
  EXPECT_GT(IntOr(last, "bytes_in"), 0) << last.raw;
  EXPECT_GT(IntOr(last, "bytes_out"), 0) << last.raw;
  EXPECT_EQ(NumOr(last, "rps"), 0.0) << "an idle interval: " << last.raw;

  // The per-interval deltas add up to the total and never go backwards; every
  // interval that served requests reads ~20 ms at p50.
  int64_t prev = 0;
  int loaded_intervals = 0;
  for (size_t i = 0; i < stats.size(); ++i) {
    const LogLine& l = stats[i];
    const int64_t req = IntOr(l, "requests");
    EXPECT_GE(req, prev) << "requests went backwards: " << l.raw;
    if (req > prev) {
      ++loaded_intervals;
      const double p50 = NumOr(l, "p50_ms");
      EXPECT_GE(p50, 19.5) << "interval " << i << ": " << l.raw;
      EXPECT_LE(p50, 35.0) << "interval " << i << ": " << l.raw;
      EXPECT_GE(NumOr(l, "max_ms"), p50) << l.raw;
      EXPECT_GT(NumOr(l, "rps"), 0.0) << l.raw;
    } else {
      EXPECT_EQ(NumOr(l, "p50_ms"), 0.0)
          << "an idle interval has no p50: " << l.raw;
    }
    prev = req;
  }
  EXPECT_GE(loaded_intervals, 1);

  // busy > 0 on a line written during the load, 0 on the first after it.
  int64_t busy_during = 0;
  for (size_t i = before_load; i < after_load; ++i)
    busy_during = std::max(busy_during, IntOr(stats[i], "busy"));
  EXPECT_GT(busy_during, 0)
      << "no stats line during the load saw a busy worker";
  EXPECT_EQ(IntOr(stats[after_load], "busy"), 0) << stats[after_load].raw;
  EXPECT_EQ(IntOr(stats[after_load], "requests"), kSent)
      << stats[after_load].raw;

  // /status (taken only now) agrees; it counts itself after rendering, so the
  // OpenMetrics scrape that follows sees exactly one more.
  std::optional<JsonValue> status = StatusJson();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(JsonInt(*status, "requests"), kSent);
  EXPECT_EQ(JsonInt(*status, "status.2xx"), kSent);
  EXPECT_EQ(JsonInt(*status, "inflight"), 1) << "the /status request itself";
  EXPECT_EQ(JsonInt(*status, "rejected"), 0);
  const JsonValue* model = status->Find("model");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->text, ModelUnderTest());
  const std::string om = OpenMetrics();
  printf("openmetrics:\n%s", om.c_str());
  std::optional<double> total =
      OpenMetricsSample(om, "gearbox_requests_total ");
  ASSERT_TRUE(total.has_value()) << om;
  EXPECT_EQ(*total, kSent + 1) << "500 loads + the /status JSON request\n"
                               << om;
  std::optional<double> two =
      OpenMetricsSample(om, "gearbox_responses_total{class=\"2xx\"}");
  ASSERT_TRUE(two.has_value()) << om;
  EXPECT_EQ(*two, kSent + 1) << om;
  std::optional<double> count =
      OpenMetricsSample(om, "gearbox_request_duration_seconds_count ");
  ASSERT_TRUE(count.has_value()) << om;
  EXPECT_EQ(*count, kSent + 1) << om;
  EXPECT_NE(om.find("# EOF\n"), std::string::npos) << om;
  // The model is a label of gearbox_info alone (a reload may change it).
  EXPECT_NE(om.find("gearbox_info{model=\"" + ModelUnderTest() +
                    "\",generation=\"1\"} 1\n"),
            std::string::npos)
      << om;

  // ?format=text: "key: value" lines; two /status requests came before it.
  HttpResponse text = Exchange(port(), GetRequest("/status?format=text"));
  ASSERT_EQ(text.error, "");
  EXPECT_EQ(text.status, 200) << text.raw;
  std::map<std::string, std::string> fields;
  for (size_t pos = 0; pos < text.body.size();) {
    size_t eol = text.body.find('\n', pos);
    if (eol == std::string::npos) eol = text.body.size();
    std::string line = text.body.substr(pos, eol - pos);
    pos = eol + 1;
    size_t colon = line.find(": ");
    if (colon != std::string::npos)
      fields[line.substr(0, colon)] = line.substr(colon + 2);
  }
  printf("GET /status?format=text ->\n%s", text.body.c_str());
  EXPECT_EQ(fields["model"], ModelUnderTest()) << text.body;
  EXPECT_EQ(fields["requests"], std::to_string(kSent + 2)) << text.body;
  EXPECT_EQ(fields["s2xx"], std::to_string(kSent + 2)) << text.body;
  EXPECT_EQ(fields["rejected"], "0") << text.body;
}

// While a request is in flight its worker counts as busy, whatever finished
// meanwhile: B (900 ms) starts, A (200 ms) starts and finishes, and every stats
// line until B is answered must show inflight=1 and busy>=1.
TEST_F(MetricsTest, BusyWhileARequestIsInFlight) {
  Sizing sizing;
  sizing.interval = "100ms";
  ASSERT_NO_FATAL_FAILURE(Start(sizing));
  Connection b = Connection::Open(port());
  Connection a = Connection::Open(port());
  ASSERT_TRUE(a.ok() && b.ok()) << a.error() << b.error();
  const size_t before_b = Stats().size();
  ASSERT_TRUE(b.Send(GetRequest("/sleep?ms=900"))) << b.error();
  // B has started: a stats line counts it in flight.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::vector<LogLine> lines = Stats();
        for (size_t i = before_b; i < lines.size(); ++i)
          if (IntOr(lines[i], "inflight") >= 1) return true;
        return false;
      },
      Millis(3000)))
      << "no stats line shows B in flight";
  ASSERT_TRUE(a.Send(GetRequest("/sleep?ms=200"))) << a.error();
  HttpResponse ra = a.ReadResponse();
  ASSERT_EQ(ra.error, "");
  ASSERT_EQ(ra.status, 200) << ra.raw;
  // A is answered (~300 ms); B runs until ~900 ms. The next line may have
  // been taken while A was still in flight; the ones after it were not: the
  // two the test needs, within the 400 ms it allows.
  const size_t from = WaitForStats(Stats().size() + 1, Millis(3000)).size();
  std::vector<LogLine> stats = WaitForStats(from + 2, Millis(400));
  HttpResponse rb = b.ReadResponse();
  ASSERT_EQ(rb.error, "");
  ASSERT_EQ(rb.status, 200) << rb.raw;
  printf("model=%s lines while only B (900 ms) was in flight: %zu..%zu\n%s",
         ModelUnderTest().c_str(), from, stats.size(),
         StatsTable(stats).c_str());
  ASSERT_GE(stats.size(), from + 2)
      << "interval 100ms: expected >= 2 lines in 400 ms";
  for (size_t i = from; i < stats.size(); ++i) {
    const LogLine& l = stats[i];
    EXPECT_EQ(IntOr(l, "inflight"), 1) << "B is in flight: " << l.raw;
    EXPECT_GE(IntOr(l, "busy"), 1)
        << "a worker holds B (inflight=1), yet busy=0: " << l.raw;
    EXPECT_EQ(IntOr(l, "requests"), 1) << "A is counted, B not yet: " << l.raw;
  }
}

// 2. threadpool overload: 2 threads, queue 4, 12 concurrent 300 ms requests.
// Some are refused with 503 + Retry-After; the stats line counts exactly those.
TEST_F(MetricsTest, ThreadpoolRejectionsAreCountedExactly) {
  if (ModelUnderTest() != "threadpool") {
    GTEST_SKIP() << "the bounded hand-off queue (and its 503) is threadpool's";
  }
  constexpr int kClients = 12;
  Sizing sizing;
  sizing.threads = 2;
  sizing.queue = 4;
  sizing.interval = "1s";
  ASSERT_NO_FATAL_FAILURE(Start(sizing));
  ASSERT_NO_FATAL_FAILURE(SyncToStatsLine(Millis(200)));
  const size_t before_load = Stats().size();

  std::vector<HttpResponse> results(kClients);
  std::latch start(kClients);
  std::vector<std::thread> clients;
  const int p = port();
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      start.arrive_and_wait();
      Connection c = Connection::Open(p);
      HttpResponse& r = results[static_cast<size_t>(i)];
      if (!c.ok()) {
        r.error = c.error();
        return;
      }
      if (!c.Send(GetRequest("/sleep?ms=300", "Connection: close\r\n"))) {
        // Refused and closed before the request went out: the 503 may still
        // be readable.
      }
      r = c.ReadResponse(Millis(5000));
    });
  }
  for (std::thread& t : clients) t.join();
  const size_t after_load = Stats().size();
  std::vector<LogLine> stats = WaitForStats(after_load + 2, Millis(3500));

  int n200 = 0, n503 = 0, other = 0;
  std::string problems;
  for (int i = 0; i < kClients; ++i) {
    const HttpResponse& r = results[static_cast<size_t>(i)];
    if (!r.error.empty()) {
      ++other;
      problems += "client " + std::to_string(i) + ": " + r.error + "\n";
    } else if (r.status == 200 && r.body == "waited 300 ms\n") {
      ++n200;
    } else if (r.status == 503) {
      ++n503;
      if (r.Header("Retry-After").empty())
        problems += "client " + std::to_string(i) +
                    ": 503 without Retry-After: " + r.raw + "\n";
    } else {
      ++other;
      problems += "client " + std::to_string(i) + ": " + r.raw + "\n";
    }
  }
  printf("model=%s clients=%d 200=%d 503=%d other=%d\n%s",
         ModelUnderTest().c_str(), kClients, n200, n503, other,
         problems.c_str());
  printf("stats lines: %zu before the load, %zu at its end\n%s", before_load,
         after_load, StatsTable(stats).c_str());

  EXPECT_EQ(other, 0) << problems;
  EXPECT_TRUE(problems.empty()) << problems;
  EXPECT_GT(n503, 0) << "2 threads + 4 queue slots cannot hold 12 clients";
  EXPECT_GE(n200, 2) << "at least the two requests in hand complete";
  ASSERT_GE(stats.size(), after_load + 2);
  const LogLine& last = stats.back();
  EXPECT_EQ(IntOr(last, "rejected"), n503) << last.raw;
  EXPECT_EQ(IntOr(last, "s5xx"), n503) << last.raw;
  EXPECT_EQ(IntOr(last, "s2xx"), n200) << last.raw;
  EXPECT_EQ(IntOr(last, "requests"), n200)
      << "a refused connection never reached a handler: " << last.raw;
  EXPECT_EQ(IntOr(last, "workers"), 2) << last.raw;
  EXPECT_EQ(IntOr(last, "queue"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "busy"), 0) << last.raw;
  int64_t queue_max = 0;
  for (size_t i = before_load; i < stats.size(); ++i)
    queue_max = std::max(queue_max, IntOr(stats[i], "queue_max"));
  EXPECT_GT(queue_max, 0) << "the line covering the load saw no queue";
  EXPECT_LE(queue_max, 4) << "the queue is bounded at 4";
  // The interval after the load has nothing queued.
  EXPECT_EQ(IntOr(last, "queue_max"), 0) << last.raw;

  std::optional<JsonValue> status = StatusJson();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(JsonInt(*status, "rejected"), n503);
  EXPECT_EQ(JsonInt(*status, "status.5xx"), n503);
  EXPECT_EQ(JsonInt(*status, "requests"), n200);
}

// 3. prefork recycling: 2 workers, max_requests 20, 200 requests on fresh
// connections. Children are replaced ~10 times; the totals live in the shared
// stats slots and survive every replacement.
TEST_F(MetricsTest, PreforkTotalsSurviveRecycling) {
  if (ModelUnderTest() != "prefork") {
    GTEST_SKIP() << "max_requests recycling is prefork's";
  }
  constexpr int kClients = 4;
  constexpr int kPerClient = 50;
  constexpr int kSent = kClients * kPerClient;
  Sizing sizing;
  sizing.workers = 2;
  sizing.max_requests = 20;
  sizing.interval = "1s";
  ASSERT_NO_FATAL_FAILURE(Start(sizing));

  std::atomic<int> ok{0};
  std::mutex mu;
  std::string failures;
  std::vector<std::thread> clients;
  const int p = port();
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&] {
      for (int i = 0; i < kPerClient; ++i) {
        HttpResponse r = Exchange(
            p, GetRequest("/hello", "Connection: close\r\n"), Millis(5000));
        if (r.error.empty() && r.status == 200 && r.body == "hello world\n") {
          ok.fetch_add(1);
        } else {
          std::lock_guard<std::mutex> lock(mu);
          if (failures.size() < 1000)
            failures += "status " + std::to_string(r.status) + " error " +
                        r.error + "\n";
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const size_t after_load = Stats().size();
  std::vector<LogLine> stats = WaitForStats(after_load + 2, Millis(3500));
  std::vector<LogLine> recycled = Lines("child_recycled");
  std::vector<LogLine> died = Lines("child_died");

  printf("model=%s sent=%d ok=%d child_recycled=%zu child_died=%zu\n%s",
         ModelUnderTest().c_str(), kSent, ok.load(), recycled.size(),
         died.size(), StatsTable(stats).c_str());

  ASSERT_EQ(ok.load(), kSent) << failures;
  // Each child exits after 20..22 requests (+10% jitter): with 200 requests
  // over two slots that is at least floor(200/22) - 2 + 1 = 6 recycles.
  EXPECT_GE(recycled.size(), 6u);
  EXPECT_EQ(died.size(), 0u);
  std::set<int64_t> recycled_pids;
  for (const LogLine& l : recycled) {
    EXPECT_GT(IntOr(l, "pid"), 0) << l.raw;
    recycled_pids.insert(IntOr(l, "pid"));
  }
  EXPECT_EQ(recycled_pids.size(), recycled.size()) << "each child exits once";

  ASSERT_GE(stats.size(), after_load + 2);
  const LogLine& last = stats.back();
  EXPECT_EQ(IntOr(last, "requests"), kSent) << last.raw;
  EXPECT_EQ(IntOr(last, "s2xx"), kSent) << last.raw;
  EXPECT_EQ(IntOr(last, "workers"), 2) << last.raw;
  EXPECT_EQ(IntOr(last, "busy"), 0) << last.raw;
  EXPECT_EQ(IntOr(last, "conns"), 0) << last.raw;

  std::optional<JsonValue> status = StatusJson("?full");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(JsonInt(*status, "requests"), kSent);
  EXPECT_EQ(JsonInt(*status, "connections.accepted"), kSent + 1)
      << "200 loads + this /status";
  const JsonValue* workers = status->Find("workers");
  ASSERT_NE(workers, nullptr) << "?full must add per-worker rows";
  ASSERT_EQ(workers->type, JsonValue::Type::kArray);
  // Two children, then the head guard process (slow request heads).
  ASSERT_EQ(workers->array.size(), 3u);
  const int64_t guard_pid = JsonInt(workers->array.back(), "pid");
  EXPECT_GT(guard_pid, 0) << "the last row is the head guard process";
  EXPECT_NE(guard_pid, daemon_->pid());
  int64_t row_sum = 0;
  int busy_rows = 0;
  for (const JsonValue& row : workers->array) {
    const int64_t pid = JsonInt(row, "pid");
    EXPECT_GT(pid, 0);
    EXPECT_EQ(recycled_pids.count(pid), 0u)
        << "a row shows a recycled child " << pid;
    const JsonValue* state = row.Find("state");
    ASSERT_NE(state, nullptr);
    if (state->text == "busy") {
      ++busy_rows;
      const JsonValue* path = row.Find("path");
      ASSERT_NE(path, nullptr);
      EXPECT_EQ(path->text, "/status") << "the child serving this request";
    } else {
      EXPECT_EQ(state->text, "idle");
    }
    row_sum += JsonInt(row, "requests");
  }
  EXPECT_EQ(busy_rows, 1) << "exactly the child answering /status is busy";
  EXPECT_EQ(row_sum, kSent) << "per-slot counts carry over across recycling";
}

}  // namespace
}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
