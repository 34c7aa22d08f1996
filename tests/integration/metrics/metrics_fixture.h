// The fixture and helpers of the metrics suite (metrics_test.cc,
// log_lines_test.cc): daemon config sizing, a bounded keep-alive load
// generator, and readers for the stats lines and /status of a running gearboxd.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/metrics/logfmt.h"

namespace gearbox::testing {

struct Sizing {
  int threads = 16;  // [threadpool]
  int queue = 1024;
  int workers = 12;  // [prefork]
  int max_requests = 0;
  int loops = 1;                // [async]
  std::string interval = "1s";  // [metrics]; the loader's minimum is 100ms
  bool access = false;          // [log]
  std::string slow;             // [log] slow, "" = unset
};

// The TOML sections for `s`: every model's section is written; the daemon uses
// only the chosen model's.
std::string Sections(const Sizing& s);

// Field readers that turn "absent or malformed" into a value no assertion
// expects (-1), so a missing key fails the comparison that reads it.
int64_t IntOr(const LogLine& l, std::string_view key, int64_t fallback = -1);
double NumOr(const LogLine& l, std::string_view key, double fallback = -1);
int64_t JsonInt(const JsonValue& v, std::string_view path);

// Keys the stats line promises (daemon/metrics/stats_reporter.cc).
extern const char* const kStatsKeys[31];

// One row per stats line, with the per-interval request delta, for the test log.
std::string StatsTable(const std::vector<LogLine>& stats);

// The result of a fixed amount of client load.
struct LoadResult {
  int ok = 0;       // responses with the expected status and body
  int retries = 0;  // requests resent after the server closed an idle
                    // keep-alive connection without answering (prefork hands
                    // idle connections back when a new client waits)
  std::map<int, int> statuses;  // every response the client read
  int failed = 0;               // requests that got no response at all
  std::string failures;
};

// `threads` clients, each sending `per_thread` GETs of `target` on one
// keep-alive connection (reconnecting only when the server closed it with no
// response: that request was never read, so resending does not double-count).
// Every read is bounded (5 s), every request tried at most 5 times.
LoadResult KeepAliveLoad(int port, int threads, int per_thread,
                         const std::string& target, const std::string& body);

// "200x500 503x6".
std::string DescribeStatuses(const std::map<int, int>& statuses);

class MetricsTest : public ::testing::Test {
 protected:
  using Clock = std::chrono::steady_clock;

  // Starts gearboxd under the model of this target with `sizing`.
  void Start(const Sizing& sizing);
  // On failure, appends the tail of the daemon's log to the test output.
  void TearDown() override;

  int port() const { return daemon_->port(); }

  // The complete log lines of `event` so far.
  std::vector<LogLine> Lines(std::string_view event) const;
  std::vector<LogLine> Stats() const { return Lines("stats"); }
  // Polls the log until it has at least `count` lines of `event`; returns
  // them (possibly fewer, after `timeout`).
  std::vector<LogLine> WaitForLines(std::string_view event, size_t count,
                                    Millis timeout) const;
  std::vector<LogLine> WaitForStats(size_t count, Millis timeout) const {
    return WaitForLines("stats", count, timeout);
  }
  // Waits for a fresh stats line, then `delay`, so that a load of known length
  // starting right after straddles the next line.
  void SyncToStatsLine(Millis delay);

  // GET /status<query> on a fresh connection, parsed (and printed). Fails the
  // test on any error.
  std::optional<JsonValue> StatusJson(const std::string& query = "");
  // GET /status?format=openmetrics on a fresh connection: the exposition.
  std::string OpenMetrics();

  std::unique_ptr<Daemon> daemon_;
};

}  // namespace gearbox::testing
