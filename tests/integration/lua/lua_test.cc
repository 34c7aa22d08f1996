// Lua handlers under every model (one target per model, models.bzl): the
// same scripts, driven over real sockets, waiting on real timers and a real
// TCP backend.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>

#include "tests/integration/lua/lua_fixture.h"

namespace gearbox::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWorkers = 4;

bool IsModel(const char* name) { return ModelUnderTest() == name; }

class LuaTest : public ModuleTest {
 protected:
  void StartApp(const std::string& lua = "memory = 16777216\n") {
    StartWith(ModelSections(kWorkers) + "[lua]\n" + lua + "\n" +
              LuaRoute("/app", TestScript("app.lua"), "timeout = \"3s\"") +
              LuaRoute("/short", TestScript("app.lua"), "timeout = \"200ms\""));
  }
  HttpResponse Get(const std::string& target) {
    return Exchange(port(), GetRequest(target));
  }
};

TEST_F(LuaTest, HelloWithQueryHeadersAndBody) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  HttpResponse r =
      Exchange(port(), GetRequest("/app?name=J%C3%BCrgen+x&tag=a&tag=b&flag",
                                  "X-Agent: probe/1\r\n"));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_FALSE(r.Header("X-Served").empty());
  for (const char* want :
       {"\"method\":\"GET\"", "\"path\":\"/app\"",
        "\"name\":\"J\xC3\xBCrgen x\"", "\"tags\":\"a,b\"", "\"flag\":true",
        "\"agent\":\"probe/1\"", "\"agent_lower\":\"probe/1\"",
        "\"warmed\":\"worker "}) {
    EXPECT_NE(r.body.find(want), std::string::npos) << want << " in " << r.body;
  }
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(
      c.Send("POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n"
             "hello there"));
  HttpResponse post = c.ReadResponse();
  EXPECT_EQ(post.status, 201) << post.raw;
  EXPECT_EQ(post.body, "got 11 bytes: hello there\n");
}

// req's fields are built on first read; read only after a wait, they still
// hold this request's data (copied when the handler first waited).
TEST_F(LuaTest, RequestFieldsReadAfterAWait) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  HttpResponse r = Exchange(port(), GetRequest("/app?do=late&name=after+wait",
                                               "X-Agent: late/2\r\n"));
  ASSERT_EQ(r.status, 200) << r.raw;
  for (const char* want :
       {"\"method\":\"GET\"", "\"path\":\"/app\"", "\"name\":\"after wait\"",
        "\"agent\":\"late/2\"", "\"client\":\"127.0.0.1\"", "\"body\":\"\""}) {
    EXPECT_NE(r.body.find(want), std::string::npos) << want << " in " << r.body;
  }
  // Behind a trusted proxy (loopback is, by default) the client is the one
  // it forwarded for: read after the wait, from the kept headers.
  HttpResponse fwd = Exchange(
      port(), GetRequest("/app?do=late", "X-Forwarded-For: 203.0.113.7\r\n"));
  EXPECT_NE(fwd.body.find("\"client\":\"203.0.113.7\""), std::string::npos)
      << fwd.body;
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send(
      "POST /app?do=late HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n"
      "hello there"));
  HttpResponse post = c.ReadResponse();
  EXPECT_EQ(post.status, 200) << post.raw;
  EXPECT_NE(post.body.find("\"body\":\"hello there\""), std::string::npos)
      << post.body;
  EXPECT_NE(post.body.find("\"method\":\"POST\""), std::string::npos)
      << post.body;
}

// A req kept past its request raises on a field it never built: it does not
// read whatever request the worker serves now.
TEST_F(LuaTest, RequestKeptPastItsRequestRaises) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok());
  std::string body = "none\n";
  // Each worker has its own state: repeat until the worker that answers
  // the second request kept a req from an earlier one.
  for (int i = 0; i < 8 * kWorkers && body == "none\n"; ++i) {
    ASSERT_TRUE(c.Send("GET /app?do=keep HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_EQ(c.ReadResponse().status, 200);
    ASSERT_TRUE(c.Send("GET /app?do=stale HTTP/1.1\r\nHost: t\r\n\r\n"));
    HttpResponse r = c.ReadResponse();
    ASSERT_EQ(r.status, 200) << r.raw;
    body = r.body;
  }
  EXPECT_EQ(body.rfind("false ", 0), 0u) << body;
  EXPECT_NE(body.find("req.headers: read outside its own request"),
            std::string::npos)
      << body;
}

TEST_F(LuaTest, JsonDecode) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  HttpResponse r = Get("/app?do=decode");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "6 6 true true x 1.5 2 0\n");
}

// HEAD falls back to GET: its head, no body (read up to the close: the
// client cannot frame a HEAD response by its Content-Length).
TEST_F(LuaTest, HeadFallsBackToGet) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  Connection c = Connection::Open(port());
  ASSERT_TRUE(
      c.Send("HEAD /app HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  std::string raw;
  char buf[4096];
  pollfd p{c.fd(), POLLIN, 0};
  while (poll(&p, 1, 5000) == 1) {
    const ssize_t n = read(c.fd(), buf, sizeof buf);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << raw;
  EXPECT_NE(raw.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_EQ(raw.substr(raw.find("\r\n\r\n") + 4), "") << "HEAD has no body";
}

TEST_F(LuaTest, MethodTableAnswers405WithAllow) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  HttpResponse r = Exchange(port(), "DELETE /app HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405) << r.raw;
  EXPECT_EQ(r.Header("Allow"), "GET, HEAD, POST");
}

TEST_F(LuaTest, SleepWaitsWithoutFailing) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  const auto start = Clock::now();
  HttpResponse r = Get("/app?do=sleep&s=0.05");
  const auto ms = std::chrono::duration_cast<Millis>(Clock::now() - start);
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "slept 0.05\n");
  EXPECT_GE(ms.count(), 50);
}

// A sleep past the route's timeout is cut off with 504, like any handler.
TEST_F(LuaTest, SleepPastTheRouteTimeoutIs504) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  const auto start = Clock::now();
  HttpResponse r = Get("/short?do=sleep&s=30");
  EXPECT_EQ(r.status, 504) << r.raw;
  EXPECT_LT(Clock::now() - start, Millis(2000));
  EXPECT_EQ(Get("/short?do=sleep&s=0.001").status, 200);
}

// 200 sleeps of 50 ms at once: async's one loop overlaps them; prefork and
// threadpool hold a worker per sleep (ceil(200 / workers) rounds).
TEST_F(LuaTest, TwoHundredConcurrentSleeps) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  for (int i = 0; i < 2 * kWorkers; ++i) {
    ASSERT_EQ(Get("/app?do=sleep&s=0.001").status, 200);
  }
  constexpr int kRequests = 200;
  Burst burst =
      ConcurrentGets(port(), "/app?do=sleep&s=0.05", kRequests, Millis(30000));
  int ok = 0;
  for (const HttpResponse& r : burst.responses) {
    if (r.status == 200 && r.body == "slept 0.05\n") ++ok;
  }
  EXPECT_EQ(ok, kRequests);
  const int workers = IsModel("async") ? 1 : kWorkers;
  printf("[lua] model=%s sleep_200x50ms_ms=%.0f workers=%d\n",
         ModelUnderTest().c_str(), burst.elapsed_ms, workers);
  if (IsModel("async")) {
    EXPECT_LT(burst.elapsed_ms, 500) << "the sleeps did not overlap";
  } else {
    EXPECT_GE(burst.elapsed_ms, std::ceil(kRequests / double(workers)) * 50)
        << "each sleep should hold its worker";
  }
}

TEST_F(LuaTest, CosocketRoundTripAndKeepalive) {
  LineBackend backend;
  ASSERT_NO_FATAL_FAILURE(StartApp());
  const std::string base = "/app?do=tcp&port=" + std::to_string(backend.port());
  HttpResponse r = Get(base);
  EXPECT_EQ(r.body, "line=pong reused=0\n") << r.raw;
  r = Get(base + "&line=echo+a%20b");
  EXPECT_EQ(r.body, "line=a b reused=0\n") << r.raw;
  // Kept-alive connections are reused: 12 requests over 4 workers give one
  // worker at least three, so at least one request finds its pooled fd.
  int reused = 0;
  for (int i = 0; i < 12; ++i) {
    r = Get(base + "&keep=1");
    ASSERT_EQ(r.status, 200) << r.raw;
    if (r.body == "line=pong reused=1\n") ++reused;
  }
  EXPECT_GE(reused, 1);
  EXPECT_LT(backend.accepted(), 14) << "no connection was reused";
}

TEST_F(LuaTest, CosocketErrors) {
  LineBackend backend;
  ASSERT_NO_FATAL_FAILURE(StartApp());
  const std::string port = std::to_string(backend.port());
  EXPECT_EQ(Get("/app?do=tcp&port=" + std::to_string(ClosedPort())).body,
            "connect_err=connection refused\n");
  const auto start = Clock::now();
  EXPECT_EQ(Get("/app?do=tcp&timeout=100&line=hang&port=" + port).body,
            "receive_err=timeout partial=\n");
  EXPECT_LT(Clock::now() - start, Millis(2000)) << "settimeout not obeyed";
  EXPECT_EQ(Get("/app?do=tcp&line=close&port=" + port).body,
            "receive_err=closed partial=\n");
  // Host names are refused, not resolved on the worker.
  EXPECT_EQ(Get("/app?do=tcp&port=" + port).status, 200);
}

TEST_F(LuaTest, RuntimeErrorIs500WithScriptLineInTheLog) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  HttpResponse r = Get("/app?do=error");
  EXPECT_EQ(r.status, 500) << r.raw;
  const std::string script = TestScript("app.lua");
  const std::string where =
      script + ":" + std::to_string(LineOf(script, "t.field")) + ":";
  EXPECT_NE(WaitForLog(*daemon_, "event=lua_error route=/app"),
            std::string::npos);
  EXPECT_NE(daemon_->Log().find(where), std::string::npos) << where;
  EXPECT_NE(daemon_->Log().find("stack traceback"), std::string::npos);
  EXPECT_EQ(Get("/app?do=badstatus").status, 500);
  EXPECT_EQ(Get("/app").status, 200) << "the worker's state stays healthy";
  // Both failures counted on their route, in every /status format (the
  // workers' counts meet in the shared region); none on the other route.
  EXPECT_EQ(Get("/short").status, 200);
  const std::string json = Get("/status").body;
  EXPECT_EQ(
      FigureAfter(json, "{\"route\":\"/app\"", "\"handler_errors\":", '}'), 2)
      << json;
  EXPECT_EQ(
      FigureAfter(json, "{\"route\":\"/short\"", "\"handler_errors\":", '}'), 0)
      << json;
  const std::string text = Get("/status?format=text").body;
  EXPECT_EQ(FigureAfter(text, "route: name=/app ", " handler_errors="), 2)
      << text;
  const std::string om = Get("/status?format=openmetrics").body;
  EXPECT_EQ(FigureAfter(
                om, "gearbox_route_handler_errors_total{route=\"/app\"}", "} "),
            2)
      << om;
}

TEST_F(LuaTest, MemoryCapIs500AndTheDaemonStaysHealthy) {
  ASSERT_NO_FATAL_FAILURE(StartApp("memory = 8388608\n"));
  HttpResponse r = Get("/app?do=memory");
  EXPECT_EQ(r.status, 500) << r.raw;
  EXPECT_NE(WaitForLog(*daemon_, "event=lua_state_rebuild"), std::string::npos);
  EXPECT_NE(daemon_->Log().find("not enough memory ([lua] memory)"),
            std::string::npos);
  for (int i = 0; i < 2 * kWorkers; ++i) {
    HttpResponse ok = Get("/app?name=after");
    EXPECT_EQ(ok.status, 200) << ok.raw;
    EXPECT_NE(ok.body.find("\"warmed\":\"worker "), std::string::npos)
        << "a rebuilt state runs init again: " << ok.body;
  }
}

TEST_F(LuaTest, JitIsOnWhereTheHostAllowsIt) {
  ASSERT_NO_FATAL_FAILURE(StartApp());
  HttpResponse r = Get("/app?do=hot");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body.find("jit=true"), std::string::npos) << r.body;
  EXPECT_EQ(daemon_->Log().find("lua_jit_off"), std::string::npos);
}

TEST_F(LuaTest, ReloadPicksUpAnEditedScript) {
  const std::string script = TestTempDir() + "/edited.lua";
  std::ofstream(script) << "return function() return 200, 'version 1\\n' end\n";
  ASSERT_NO_FATAL_FAILURE(
      StartWith(ModelSections(kWorkers) + LuaRoute("/v", script)));
  EXPECT_EQ(Get("/v").body, "version 1\n");
  // Every worker has loaded version 1 (prefork: every child is up, asleep in
  // its accept loop) before the edit: a child still starting would load the
  // broken one.
  ASSERT_TRUE(
      WaitUntil([&] { return ChildrenWaiting(daemon_->pid()); }, Millis(5000)));
  // A broken edit: the reload fails, the old generation keeps serving.
  std::ofstream(script)
      << "return function() return 200, 'version 2\\n' end end\n";
  ASSERT_TRUE(daemon_->Signal(SIGHUP));
  ASSERT_NE(WaitForLog(*daemon_, "event=reload_failed"), std::string::npos);
  EXPECT_NE(daemon_->Log().find("edited.lua:1:"), std::string::npos);
  EXPECT_EQ(Get("/v").body, "version 1\n");
  std::ofstream(script) << "return function() return 200, 'version 2\\n' end\n";
  ASSERT_TRUE(daemon_->Signal(SIGHUP));
  ASSERT_NE(WaitForLog(*daemon_, "event=generation_started gen=2"),
            std::string::npos);
  std::string body;
  const auto until = Clock::now() + Millis(5000);
  do {
    body = Get("/v").body;
  } while (body != "version 2\n" && Clock::now() < until);
  EXPECT_EQ(body, "version 2\n");
}

}  // namespace
}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
