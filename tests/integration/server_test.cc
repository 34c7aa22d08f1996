// The integration suite: the real gearboxd, real sockets, one Bazel target per
// concurrency model (tests/integration/models.bzl). Every test starts its own
// daemon on port 0 with its config in $TEST_TMPDIR, so tests are independent.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace gearbox::testing {
namespace {

constexpr int kMaxHeaderBytes = 2048;
constexpr int kMaxBodyBytes = 1024;

struct Sizing {
  int threads = 64;  // [threadpool]
  int queue = 1024;
  int workers = 8;  // [prefork]
  int loops = 1;    // [async]
};

// Every model's section is written; the daemon uses only the chosen model's.
std::string Sections(const Sizing& s = {}) {
  auto line = [](std::string key, int value) {
    return key + " = " + std::to_string(value) + "\n";
  };
  std::string t;
  t += "[threadpool]\n" + line("threads", s.threads) + line("queue", s.queue);
  t += "\n[prefork]\n" + line("workers", s.workers) + line("max_requests", 0);
  t += "\n[async]\n" + line("loops", s.loops);
  t += "\n[limits]\n";
  t += "header_timeout = \"10s\"\n";
  t += "idle_timeout = \"75s\"\n";
  t += line("max_header_bytes", kMaxHeaderBytes);
  t += line("max_body_bytes", kMaxBodyBytes);
  t += line("max_connections", 10000);
  t += "\n[log]\nlevel = \"info\"\n";
  t += "\n[metrics]\ninterval = \"10s\"\n";
  return t;
}

class ServerTest : public ::testing::Test {
 protected:
  void Start(const Sizing& sizing = {}) {
    DaemonConfig config;
    config.model = ModelUnderTest();
    config.sections = Sections(sizing);
    std::string error;
    daemon_ = Daemon::Start(config, &error);
    ASSERT_NE(daemon_, nullptr) << error;
  }

  void TearDown() override {
    if (HasFailure() && daemon_) {
      std::string log = daemon_->Log();
      if (log.size() > 8000) log = "..." + log.substr(log.size() - 8000);
      ADD_FAILURE() << "model=" << ModelUnderTest() << " gearboxd log ("
                    << daemon_->log_path() << "):\n"
                    << log;
    }
    daemon_.reset();
  }

  int port() const { return daemon_->port(); }

  // A fresh connection; fails the test when it cannot connect.
  Connection Connect() {
    Connection c = Connection::Open(port());
    EXPECT_TRUE(c.ok()) << c.error();
    return c;
  }

  // GET /hello on a fresh connection answers 200: the server is still healthy.
  void ExpectHealthy() {
    HttpResponse r = Exchange(port(), GetRequest("/hello"));
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, "hello world\n");
  }

  std::unique_ptr<Daemon> daemon_;
};

TEST_F(ServerTest, HelloReturns200WithStandardHeaders) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpResponse r = Exchange(port(), GetRequest("/hello"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.version, "HTTP/1.1");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_EQ(r.Header("Content-Length"), "12") << r.raw;
  EXPECT_TRUE(r.HasHeader("Date")) << r.raw;
  EXPECT_FALSE(r.Header("Date").empty()) << r.raw;
  EXPECT_TRUE(r.HasHeader("Server")) << r.raw;
  EXPECT_FALSE(r.Header("Server").empty()) << r.raw;
}

TEST_F(ServerTest, StatusRouteAnswers) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpResponse r = Exchange(port(), GetRequest("/status"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_FALSE(r.body.empty());
}

TEST_F(ServerTest, KeepAliveServesThreeRequestsOnOneConnection) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("request " + std::to_string(i + 1));
    ASSERT_TRUE(c.Send(GetRequest("/hello"))) << c.error();
    HttpResponse r = c.ReadResponse();
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.body, "hello world\n");
    EXPECT_NE(r.Header("Connection"), "close") << r.raw;
  }
  EXPECT_TRUE(c.StaysOpen()) << c.error();
}

TEST_F(ServerTest, PipelinedRequestsAnsweredInOrder) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  // The slow request goes first: a server answering out of order would send a
  // /hello response before it.
  ASSERT_TRUE(c.Send(GetRequest("/sleep?ms=30") + GetRequest("/hello") +
                     GetRequest("/echo")))
      << c.error();
  HttpResponse first = c.ReadResponse();
  ASSERT_EQ(first.error, "");
  EXPECT_EQ(first.status, 200) << first.raw;
  EXPECT_EQ(first.body, "waited 30 ms\n");
  HttpResponse second = c.ReadResponse();
  ASSERT_EQ(second.error, "");
  EXPECT_EQ(second.status, 200) << second.raw;
  EXPECT_EQ(second.body, "hello world\n");
  HttpResponse third = c.ReadResponse();
  ASSERT_EQ(third.error, "");
  EXPECT_EQ(third.status, 200) << third.raw;
  EXPECT_EQ(third.body, "");  // GET /echo without a body
  EXPECT_TRUE(c.StaysOpen()) << c.error();
}

TEST_F(ServerTest, Http10WithoutKeepAliveCloses) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.0\r\nHost: test\r\n\r\n")) << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_TRUE(c.WaitClosed())
      << "HTTP/1.0 without keep-alive must close: " << c.error();
}

TEST_F(ServerTest, Http10WithKeepAliveStaysOpen) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  const std::string request =
      "GET /hello HTTP/1.0\r\nHost: test\r\nConnection: keep-alive\r\n\r\n";
  ASSERT_TRUE(c.Send(request)) << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_EQ(r.Header("Connection"), "keep-alive") << r.raw;
  EXPECT_TRUE(c.StaysOpen()) << c.error();
  // And it really is usable.
  ASSERT_TRUE(c.Send(request)) << c.error();
  HttpResponse again = c.ReadResponse();
  ASSERT_EQ(again.error, "");
  EXPECT_EQ(again.status, 200) << again.raw;
}

TEST_F(ServerTest, UnknownPathIs404) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpResponse r = Exchange(port(), GetRequest("/no/such/path"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 404) << r.raw;
}

TEST_F(ServerTest, GarbageIs400AndServerStaysHealthy) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send("THIS IS NOT HTTP\x01\x02\r\n\r\n")) << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(r.Header("Connection"), "close") << r.raw;
  EXPECT_TRUE(c.WaitClosed()) << c.error();
  ExpectHealthy();
}

TEST_F(ServerTest, BodyOverLimitIs413ThenFreshConnectionWorks) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  // Only the head: the server refuses on Content-Length, before any body.
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: " +
                     std::to_string(kMaxBodyBytes + 1) + "\r\n\r\n"))
      << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 413) << r.raw;
  EXPECT_EQ(r.Header("Connection"), "close") << r.raw;
  EXPECT_TRUE(c.WaitClosed()) << c.error();
  ExpectHealthy();
}

TEST_F(ServerTest, BodyAtLimitIsAccepted) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string body(kMaxBodyBytes, 'b');
  HttpResponse r =
      Exchange(port(), "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, body);
}

TEST_F(ServerTest, HeaderBlockOverLimitIs431) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send(GetRequest(
      "/hello", "X-Big: " + std::string(kMaxHeaderBytes + 500, 'a') + "\r\n")))
      << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 431) << r.raw;
  EXPECT_TRUE(c.WaitClosed()) << c.error();
  ExpectHealthy();
}

TEST_F(ServerTest, UnsupportedVersionIs505) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpResponse r = Exchange(port(), "GET / HTTP/2.0\r\nHost: test\r\n\r\n");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 505) << r.raw;
  ExpectHealthy();
}

TEST_F(ServerTest, PostEchoRoundTrips) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string body = "name=gearbox&payload=\x01\x02\xff binary ok\n";
  HttpResponse r =
      Exchange(port(),
               "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: "
               "application/x-test\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, body);
  EXPECT_EQ(r.Header("Content-Type"), "application/x-test") << r.raw;
}

// True when what the client of `ports` sent has reached the server's end of
// the connection and the server has read it all.
bool PartRead(TcpPorts ports) {
  bool delivered = false;
  for (const TcpSocket& s : TcpSockets()) {
    if (s.local_port == ports.client && s.remote_port == ports.server)
      delivered = s.tx_queue == 0;
  }
  const std::optional<TcpSocket> server = ServerEnd(ports);
  return delivered && server && server->rx_queue == 0;
}

TEST_F(ServerTest, ChunkedPostEchoReassembles) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  // In separate writes, so the body spans several reads on the server.
  const std::vector<std::string> parts = {
      "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: text/plain\r\n\r\n",
      "5\r\nhello\r\n",
      "6\r\n world\r\n",
      "1",
      "\r\n!\r\n",
      "0\r\n\r\n"};
  const TcpPorts ports = PortsOf(c.fd());
  for (const std::string& part : parts) {
    ASSERT_TRUE(c.Send(part)) << c.error();
    // Each part arrives on its own, as from a client writing chunks as it
    // makes them: the next one is sent once the server has read this one
    // (delivered: the client's end has nothing unacknowledged; read: the
    // server's end has nothing queued).
    ASSERT_TRUE(WaitUntil([&] { return PartRead(ports); }, Millis(5000)))
        << "the server did not read the part " << part;
  }
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "hello world!");
  EXPECT_EQ(r.Header("Content-Length"), "12") << r.raw;
  // The connection is reusable after a chunked request.
  ASSERT_TRUE(c.Send(GetRequest("/hello"))) << c.error();
  HttpResponse next = c.ReadResponse();
  ASSERT_EQ(next.error, "");
  EXPECT_EQ(next.status, 200) << next.raw;
}

TEST_F(ServerTest, ExpectContinueGets100BeforeBody) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: text/plain\r\n"
             "Content-Length: 11\r\nExpect: 100-continue\r\n\r\n"))
      << c.error();
  // No body yet: the server must invite it first.
  HttpResponse interim = c.ReadResponse();
  ASSERT_EQ(interim.error, "");
  EXPECT_EQ(interim.status, 100) << interim.raw;
  EXPECT_EQ(interim.raw, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.Send("hello world")) << c.error();
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "hello world");
}

TEST_F(ServerTest, FullQueueGets503WithRetryAfter) {
  if (ModelUnderTest() != "threadpool") {
    GTEST_SKIP() << "the bounded hand-off queue is threadpool's; prefork and "
                    "async have their own overload behaviour";
  }
  Sizing sizing;
  sizing.threads = 1;
  sizing.queue = 1;
  ASSERT_NO_FATAL_FAILURE(Start(sizing));
  // 1. Hold the only thread.
  Connection busy = Connect();
  ASSERT_TRUE(busy.ok());
  ASSERT_TRUE(busy.Send(GetRequest("/sleep?ms=1500"))) << busy.error();
  // The thread has read the request: no byte of it is left unread.
  const TcpPorts busy_ports = PortsOf(busy.fd());
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::optional<TcpSocket> end = ServerEnd(busy_ports);
        return end && end->rx_queue == 0;
      },
      Millis(5000)))
      << "the thread did not take the first request";
  // 2. Fill the one queue slot: accepted (the poller queues a connection as
  // it accepts it), not read.
  Connection queued = Connect();
  ASSERT_TRUE(queued.ok());
  ASSERT_TRUE(queued.Send(GetRequest("/hello"))) << queued.error();
  ASSERT_TRUE(WaitUntil([&] { return AcceptQueue(port()) == 0; }, Millis(5000)))
      << "the second connection was not accepted";
  // 3. No room: refused at once.
  Connection refused = Connect();
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE(refused.Send(GetRequest("/hello"))) << refused.error();
  HttpResponse r = refused.ReadResponse(Millis(1000));
  ASSERT_EQ(r.error, "") << "the overflow connection must be answered before "
                            "the busy worker frees up";
  EXPECT_EQ(r.status, 503) << r.raw;
  EXPECT_FALSE(r.Header("Retry-After").empty()) << r.raw;
  EXPECT_EQ(r.Header("Connection"), "close") << r.raw;
  EXPECT_TRUE(refused.WaitClosed()) << refused.error();
  // The held and the queued requests still complete, in that order.
  HttpResponse slow = busy.ReadResponse();
  ASSERT_EQ(slow.error, "");
  EXPECT_EQ(slow.status, 200) << slow.raw;
  EXPECT_EQ(slow.body, "waited 1500 ms\n");
  HttpResponse later = queued.ReadResponse();
  ASSERT_EQ(later.error, "");
  EXPECT_EQ(later.status, 200) << later.raw;
  EXPECT_EQ(later.body, "hello world\n");
}

TEST_F(ServerTest, SigtermFinishesInFlightRequest) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Connection c = Connect();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send(GetRequest("/sleep?ms=500"))) << c.error();
  // In flight: /status counts it beside itself.
  ASSERT_TRUE(
      WaitUntil([&] { return JsonNumber(StatusJson(port()), "inflight") >= 2; },
                Millis(5000)));
  ASSERT_TRUE(daemon_->Signal(SIGTERM));
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "waited 500 ms\n");
  std::optional<int> status = daemon_->WaitExit(Millis(5000));
  ASSERT_TRUE(status.has_value()) << "gearboxd still running 5 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << "gearboxd " << DescribeWaitStatus(*status);
}

TEST_F(ServerTest, TwoHundredConcurrentSleepsAllSucceed) {
  ASSERT_NO_FATAL_FAILURE(Start());
  constexpr int kClients = 200;
  std::vector<HttpResponse> results(kClients);
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  const int p = port();
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&results, i, p] {
      // Generous: prefork with 8 workers needs ~25 rounds of 50 ms.
      results[static_cast<size_t>(i)] =
          Exchange(p, GetRequest("/sleep?ms=50", "Connection: close\r\n"),
                   Millis(15000));
    });
  }
  for (std::thread& t : clients) t.join();
  int ok = 0;
  std::string failures;
  for (int i = 0; i < kClients; ++i) {
    const HttpResponse& r = results[static_cast<size_t>(i)];
    if (r.error.empty() && r.status == 200 && r.body == "waited 50 ms\n") {
      ++ok;
    } else if (failures.size() < 2000) {
      failures += "client " + std::to_string(i) + ": status " +
                  std::to_string(r.status) + " error \"" + r.error + "\" raw " +
                  r.raw.substr(0, 200) + "\n";
    }
  }
  EXPECT_EQ(ok, kClients) << failures;
  ExpectHealthy();
}

}  // namespace
}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
