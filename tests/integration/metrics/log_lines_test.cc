// The per-request logs ([log] access, [log] slow) and where the stats line goes
// under journald, for the model of this target (part of the metrics_<model>
// binary; main() is in metrics_test.cc).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "tests/integration/metrics/metrics_fixture.h"

namespace gearbox::testing {
namespace {

// 4. Access and slow logs: one `event=access` line per request with method,
// path, status, bytes and duration; `event=slow_request` only for requests
// over [log] slow, with the phase that took the time.
TEST_F(MetricsTest, AccessAndSlowLogLines) {
  Sizing sizing;
  sizing.workers = 2;
  sizing.threads = 2;
  sizing.access = true;
  sizing.slow = "50ms";
  sizing.interval = "10s";
  ASSERT_NO_FATAL_FAILURE(Start(sizing));

  struct Sent {
    std::string request;
    std::string method, path;
    int status;
    std::string request_id;  // "-" when none
    size_t response_bytes = 0;
  };
  std::vector<Sent> sent = {
      {GetRequest("/hello"), "GET", "/hello", 200, "-"},
      {GetRequest("/hello", "X-Request-Id: req-42\r\n"), "GET", "/hello", 200,
       "req-42"},
      {GetRequest("/nope?x=1"), "GET", "/nope", 404, "-"},
      {"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 4\r\n\r\nping",
       "POST", "/echo", 200, "-"},
      {GetRequest("/sleep?ms=100"), "GET", "/sleep", 200, "-"},
      {GetRequest("/hello"), "GET", "/hello", 200, "-"},
      // A fence: served last, by the same worker, its line follows every
      // line of the others. Once it is there, none of theirs can follow.
      {GetRequest("/hello", "X-Request-Id: fence\r\n"), "GET", "/hello", 200,
       "fence"},
  };
  // One keep-alive connection: the lines come in request order.
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok()) << c.error();
  for (Sent& s : sent) {
    ASSERT_TRUE(c.Send(s.request)) << c.error();
    HttpResponse r = c.ReadResponse();
    ASSERT_EQ(r.error, "") << s.request;
    ASSERT_EQ(r.status, s.status) << r.raw;
    s.response_bytes = r.raw.size();
  }
  const TcpPorts ports = PortsOf(c.fd());
  c.Close();
  WaitUntil(
      [&] {
        for (const LogLine& l : Lines("access"))
          if (l.Get("request_id") == "fence") return true;
        return false;
      },
      Millis(3000));
  // Nor can a line for the connection's end: the server has closed it.
  EXPECT_TRUE(WaitUntil([&] { return !ServerHolds(ports); }, Millis(3000)));
  std::vector<LogLine> access = Lines("access");
  std::vector<LogLine> slow = Lines("slow_request");
  for (const LogLine& l : access) printf("%s\n", l.raw.c_str());
  for (const LogLine& l : slow) printf("%s\n", l.raw.c_str());

  ASSERT_EQ(access.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    const LogLine& l = access[i];
    const Sent& s = sent[i];
    SCOPED_TRACE(l.raw);
    EXPECT_EQ(l.Get("level"), "info");
    EXPECT_EQ(l.Get("method"), s.method);
    EXPECT_EQ(l.Get("path"), s.path) << "the path, without the query";
    EXPECT_EQ(IntOr(l, "status"), s.status);
    EXPECT_EQ(l.Get("request_id"), s.request_id);
    EXPECT_EQ(IntOr(l, "bytes"), static_cast<int64_t>(s.response_bytes))
        << "bytes = the response as the client read it";
    ASSERT_TRUE(l.Num("duration_ms").has_value());
    ASSERT_TRUE(l.Num("queue_ms").has_value());
    EXPECT_GE(*l.Num("duration_ms"), 0.0);
    EXPECT_TRUE(l.Int("worker").has_value());
    if (s.path == "/sleep") {
      EXPECT_GE(*l.Num("duration_ms"), 100.0);
      EXPECT_LT(*l.Num("duration_ms"), 1000.0);
    } else {
      EXPECT_LT(*l.Num("duration_ms"), 50.0);
    }
  }

  ASSERT_EQ(slow.size(), 1u) << "only /sleep?ms=100 is over 50 ms";
  const LogLine& s = slow[0];
  EXPECT_EQ(s.Get("level"), "warning");
  EXPECT_EQ(s.Get("method"), "GET") << s.raw;
  EXPECT_EQ(s.Get("path"), "/sleep") << s.raw;
  EXPECT_EQ(IntOr(s, "status"), 200) << s.raw;
  EXPECT_EQ(s.Get("phase"), "handler_wait") << s.raw;
  EXPECT_GE(NumOr(s, "duration_ms"), 100.0) << s.raw;
  for (const LogLine& l : slow) EXPECT_NE(l.Get("path"), "/hello") << l.raw;

  // The access log and the counters agree.
  std::optional<JsonValue> status = StatusJson();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(JsonInt(*status, "requests"), static_cast<int64_t>(sent.size()));
  EXPECT_EQ(JsonInt(*status, "status.4xx"), 1);
  // ... and /status itself is logged too.
  std::vector<LogLine> after =
      WaitForLines("access", sent.size() + 1, Millis(2000));
  ASSERT_EQ(after.size(), sent.size() + 1);
  EXPECT_EQ(after.back().Get("path"), "/status") << after.back().raw;
}

// 5. journald: under systemd (JOURNAL_STREAM naming stderr) the stats line goes
// to the journal with GEARBOX_* fields. Reading them back needs a running
// systemd-journald, i.e. a booted systemd, so that check lives in
// tests/system/systemd_driver.sh ("metrics: the journal's GEARBOX_* fields,
// STATUS= and /status agree"), run by tests/system/systemd_test.sh in its
// container. Here: the other half, a stderr that is not the journal.

// JOURNAL_STREAM is inherited by every process started from a systemd unit; per
// systemd.exec(5) it means "stderr is the journal" only when its
// device:inode equals fstat(stderr). A gearboxd whose stderr is a file (or a
// pipe) must keep writing its stats line there.
TEST_F(MetricsTest, StatsLineStaysOnStderrWhenJournalStreamIsNotStderr) {
  Sizing sizing;
  sizing.interval = "200ms";
  // Set only while the daemon is spawned (the child copies the environment);
  // no other thread runs now.
  setenv("JOURNAL_STREAM", "1:1", 1);
  Start(sizing);
  unsetenv("JOURNAL_STREAM");
  ASSERT_NE(daemon_, nullptr);
  std::vector<LogLine> stats = WaitForStats(2, Millis(3000));
  EXPECT_GE(stats.size(), 2u)
      << "JOURNAL_STREAM=1:1 does not describe this daemon's stderr (a log "
         "file), yet no event=stats line reached it within 3 s";
}

}  // namespace
}  // namespace gearbox::testing
