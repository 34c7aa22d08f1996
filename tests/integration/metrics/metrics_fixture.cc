#include "tests/integration/metrics/metrics_fixture.h"

#include <cstdio>
#include <latch>
#include <mutex>
#include <thread>

namespace gearbox::testing {

std::string Sections(const Sizing& s) {
  auto line = [](std::string key, int value) {
    return key + " = " + std::to_string(value) + "\n";
  };
  std::string t;
  t += "[threadpool]\n" + line("threads", s.threads) + line("queue", s.queue);
  t += "\n[prefork]\n" + line("workers", s.workers) +
       line("max_requests", s.max_requests);
  t += "\n[async]\n" + line("loops", s.loops);
  t += "\n[log]\nlevel = \"info\"\n";
  t += std::string("access = ") + (s.access ? "true" : "false") + "\n";
  if (!s.slow.empty()) t += "slow = \"" + s.slow + "\"\n";
  t += "\n[metrics]\ninterval = \"" + s.interval + "\"\n";
  return t;
}

int64_t IntOr(const LogLine& l, std::string_view key, int64_t fallback) {
  return l.Int(key).value_or(fallback);
}

double NumOr(const LogLine& l, std::string_view key, double fallback) {
  return l.Num(key).value_or(fallback);
}

int64_t JsonInt(const JsonValue& v, std::string_view path) {
  const JsonValue* x = v.Path(path);
  return x && x->Int() ? *x->Int() : -1;
}

const char* const kStatsKeys[31] = {"model",        "gen",
                                    "rps",          "requests",
                                    "p50_ms",       "p90_ms",
                                    "p99_ms",       "max_ms",
                                    "qwait_p50_ms", "qwait_p99_ms",
                                    "inflight",     "conns",
                                    "busy",         "workers",
                                    "queue",        "queue_max",
                                    "accept_queue", "accept_queue_max",
                                    "s2xx",         "s4xx",
                                    "s5xx",         "rejected",
                                    "bad_input",    "timeouts",
                                    "bytes_in",     "bytes_out",
                                    "parked",       "request_timeouts",
                                    "loop_stalls",  "workers_min",
                                    "workers_max"};

std::string StatsTable(const std::vector<LogLine>& stats) {
  std::string out =
      "  #  requests delta    rps  p50_ms  p90_ms  p99_ms  max_ms qwait50 busy "
      "infl conns queue qmax  s2xx s4xx s5xx rej\n";
  int64_t prev = 0;
  for (size_t i = 0; i < stats.size(); ++i) {
    const LogLine& l = stats[i];
    const int64_t req = IntOr(l, "requests");
    auto n = [&](std::string_view key) {
      return static_cast<long long>(IntOr(l, key));
    };
    char buf[320];
    snprintf(buf, sizeof(buf),
             "%3zu %9lld %5lld %6.1f %7.3f %7.3f %7.3f %7.3f %7.3f %4lld %4lld "
             "%5lld %5lld %4lld %5lld %4lld %4lld %3lld\n",
             i, static_cast<long long>(req), static_cast<long long>(req - prev),
             NumOr(l, "rps"), NumOr(l, "p50_ms"), NumOr(l, "p90_ms"),
             NumOr(l, "p99_ms"), NumOr(l, "max_ms"), NumOr(l, "qwait_p50_ms"),
             n("busy"), n("inflight"), n("conns"), n("queue"), n("queue_max"),
             n("s2xx"), n("s4xx"), n("s5xx"), n("rejected"));
    out += buf;
    prev = req;
  }
  return out;
}

LoadResult KeepAliveLoad(int port, int threads, int per_thread,
                         const std::string& target, const std::string& body) {
  LoadResult total;
  std::mutex mu;
  std::latch start(threads);
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      LoadResult mine;
      Connection c;
      auto note = [&](int i, const std::string& what) {
        if (mine.failures.size() < 1000)
          mine.failures += "client " + std::to_string(t) + " request " +
                           std::to_string(i) + ": " + what + "\n";
      };
      start.arrive_and_wait();
      for (int i = 0; i < per_thread; ++i) {
        HttpResponse r;
        for (int attempt = 0; attempt < 5; ++attempt) {
          if (!c.ok()) c = Connection::Open(port);
          if (!c.ok()) {
            r.error = c.error();
            continue;
          }
          if (!c.Send(GetRequest(target))) {
            r.error = c.error();
            c.Close();
            ++mine.retries;
            continue;
          }
          r = c.ReadResponse(Millis(5000));
          if (r.error.empty()) break;
          const bool unanswered =
              r.error.rfind("connection closed, no response", 0) == 0 ||
              r.error.find("connection reset") != std::string::npos;
          c.Close();
          if (!unanswered) break;
          ++mine.retries;
        }
        if (!r.error.empty()) {
          ++mine.failed;
          note(i, r.error);
          continue;
        }
        ++mine.statuses[r.status];
        if (r.status == 200 && r.body == body) {
          ++mine.ok;
        } else {
          note(i, "status " + std::to_string(r.status) + " body " + r.body);
        }
        if (r.Header("Connection") == "close") c.Close();
      }
      std::lock_guard<std::mutex> lock(mu);
      total.ok += mine.ok;
      total.retries += mine.retries;
      total.failed += mine.failed;
      for (auto [s, k] : mine.statuses) total.statuses[s] += k;
      total.failures += mine.failures;
    });
  }
  for (std::thread& th : clients) th.join();
  return total;
}

std::string DescribeStatuses(const std::map<int, int>& statuses) {
  std::string out;
  for (auto [s, n] : statuses)
    out +=
        (out.empty() ? "" : " ") + std::to_string(s) + "x" + std::to_string(n);
  return out.empty() ? "none" : out;
}

// --- MetricsTest ------------------------------------------------------------

void MetricsTest::Start(const Sizing& sizing) {
  DaemonConfig config;
  config.model = ModelUnderTest();
  config.sections = Sections(sizing);
  std::string error;
  daemon_ = Daemon::Start(config, &error);
  ASSERT_NE(daemon_, nullptr) << error;
}

void MetricsTest::TearDown() {
  if (HasFailure() && daemon_) {
    std::string log = daemon_->Log();
    if (log.size() > 12000) log = "..." + log.substr(log.size() - 12000);
    ADD_FAILURE() << "model=" << ModelUnderTest() << " gearboxd log ("
                  << daemon_->log_path() << "):\n"
                  << log;
  }
  daemon_.reset();
}

std::vector<LogLine> MetricsTest::Lines(std::string_view event) const {
  return ParseLogLines(daemon_->Log(), event);
}

std::vector<LogLine> MetricsTest::WaitForLines(std::string_view event,
                                               size_t count,
                                               Millis timeout) const {
  std::vector<LogLine> lines;
  WaitUntil(
      [&] {
        lines = Lines(event);
        return lines.size() >= count;
      },
      timeout);
  return lines;
}

void MetricsTest::SyncToStatsLine(Millis delay) {
  const size_t have = Stats().size();
  std::vector<LogLine> s = WaitForStats(have + 1, Millis(3000));
  ASSERT_GT(s.size(), have) << "no stats line within 3 s";
  // A phase, not a wait: the load that follows is placed `delay` after a
  // line of a periodic clock, and no event marks that point.
  std::this_thread::sleep_for(delay);
}

std::optional<JsonValue> MetricsTest::StatusJson(const std::string& query) {
  HttpResponse r = Exchange(port(), GetRequest("/status" + query));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.Header("Content-Type"), "application/json") << r.raw;
  std::string error;
  std::optional<JsonValue> v = ParseJson(r.body, &error);
  EXPECT_TRUE(v.has_value()) << error << "\nbody: " << r.body;
  if (v) printf("GET /status%s -> %s", query.c_str(), r.body.c_str());
  return v;
}

std::string MetricsTest::OpenMetrics() {
  HttpResponse r = Exchange(port(), GetRequest("/status?format=openmetrics"));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.Header("Content-Type").rfind("application/openmetrics-text", 0),
            0u)
      << r.raw;
  return r.body;
}

}  // namespace gearbox::testing
