// The blocking driver's turn rule (models/blocking_connection.h): a turn that
// is over gives the connection back without reading it, except when the
// model says bytes may be waiting that nobody has read (read_first:
// threadpool's edge-triggered parking saw them come while it was parking);
// then the driver reads and serves them first. A close is announced to the
// model while the fd is still open (threadpool unregisters it first).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "daemon/handlers/handlers.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"
#include "models/blocking_connection.h"
#include "tests/unit/models/blocking_harness.h"

namespace gearbox {
namespace {

// A turn that is always over, and a model that parks what has no bytes.
class TurnAlwaysOver final : public BlockingPolicy {
 public:
  ReadWait WaitReadable(BlockingConnection&, const Interest&) override {
    return ReadWait::kPark;
  }
  bool TurnOver(const BlockingConnection&) override { return true; }
  void WillWait() override {}
  bool ReadFirstWhenIdle() const override { return false; }
};

// A model that registered the fd somewhere: it hears of the close.
class WatchesTheFd final : public BlockingPolicy {
 public:
  ReadWait WaitReadable(BlockingConnection&, const Interest&) override {
    return ReadWait::kPark;
  }
  void WillClose(BlockingConnection& c) override {
    ++closes;
    fd_open = c.fd >= 0 && fcntl(c.fd, F_GETFD) != -1;
  }
  int closes = 0;
  bool fd_open = false;
};

constexpr char kGet[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";

class ServeBlockingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));
    routes.back().params.Set("body", std::string("hello world\n"));
    ASSERT_NO_FATAL_FAILURE(
        h_.Open(std::make_unique<Router>(routes, ServerInfo{}), routes.size()));
  }
  void Send(const std::string& bytes) { h_.Send(bytes); }
  static void ExpectHello(const std::string& response) {
    EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response;
    EXPECT_NE(response.find("hello world\n"), std::string::npos) << response;
  }
  // A fresh connection is read whatever the turn says: its first request is
  // served, and then the connection is idle, its turn over.
  void ServeFirstRequest() {
    Send(kGet);
    ASSERT_EQ(ServeBlocking(*h_.c, h_.ctx, policy_),
              ConnectionOutcome::kParked);
    ExpectHello(Received());
    ASSERT_EQ(h_.c->conn.phase(), Phase::kIdle);
  }
  std::string Received() { return h_.Received(); }

  BlockingHarness h_;
  TurnAlwaysOver policy_;
};

TEST_F(ServeBlockingTest, ATurnThatIsOverParksWithoutReading) {
  ASSERT_NO_FATAL_FAILURE(ServeFirstRequest());
  Send(kGet);  // the next request, while the turn is over
  EXPECT_EQ(ServeBlocking(*h_.c, h_.ctx, policy_), ConnectionOutcome::kParked);
  EXPECT_EQ(Received(), "") << "the request is still in the socket";
}

TEST_F(ServeBlockingTest, ReadFirstServesWhatIsWaitingEvenWhenTheTurnIsOver) {
  ASSERT_NO_FATAL_FAILURE(ServeFirstRequest());
  Send(kGet);
  EXPECT_EQ(ServeBlocking(*h_.c, h_.ctx, policy_, /*read_first=*/true),
            ConnectionOutcome::kParked);
  ExpectHello(Received());
}

TEST_F(ServeBlockingTest, TheModelHearsOfACloseWhileTheFdIsStillOpen) {
  WatchesTheFd policy;
  Send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ServeBlocking(*h_.c, h_.ctx, policy), ConnectionOutcome::kClosed);
  EXPECT_EQ(policy.closes, 1);
  EXPECT_TRUE(policy.fd_open) << "told after the fd was closed";
  EXPECT_EQ(h_.c->fd, -1);
  ExpectHello(Received());
}

}  // namespace
}  // namespace gearbox
