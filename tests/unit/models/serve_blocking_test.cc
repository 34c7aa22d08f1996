// The blocking driver's turn rule (models/blocking_connection.h): a turn that
// is over gives the connection back without reading it, except when the
// model says bytes may be waiting that nobody has read (read_first:
// threadpool's edge-triggered parking saw them come while it was parking);
// then the driver reads and serves them first.
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

constexpr char kGet[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";

class ServeBlockingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));
    routes.back().params.Set("body", std::string("hello world\n"));
    router_ = std::make_unique<Router>(routes, ServerInfo{});
    stats_ = StatsRegion::Create(1, routes.size());
    ctx_.env.cycle = {router_.get(), &stats_->Slot(0), nullptr, 0};
    ctx_.env.limits = &limits_;
    ctx_.env.draining = &draining_;
    ctx_.env.request = &request_;
    ctx_.env.response = &response_;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    client_ = sv[0];
    c_ = std::make_unique<BlockingConnection>(sv[1], Protocol::kHttp, limits_);
    c_->conn.Attach(&ctx_.env);
    c_->conn.Accepted(Clock::now(), 0);
  }
  void TearDown() override { close(client_); }
  void Send(const std::string& bytes) {
    ASSERT_EQ(write(client_, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  static void ExpectHello(const std::string& response) {
    EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response;
    EXPECT_NE(response.find("hello world\n"), std::string::npos) << response;
  }
  // A fresh connection is read whatever the turn says: its first request is
  // served, and then the connection is idle, its turn over.
  void ServeFirstRequest() {
    Send(kGet);
    ASSERT_EQ(ServeBlocking(*c_, ctx_, policy_), ConnectionOutcome::kParked);
    ExpectHello(Received());
    ASSERT_EQ(c_->conn.phase(), Phase::kIdle);
  }
  // What the client has received so far.
  std::string Received() {
    char buf[4096];
    ssize_t n = recv(client_, buf, sizeof(buf), MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

  std::unique_ptr<Router> router_;
  std::shared_ptr<StatsRegion> stats_;
  LimitsConfig limits_;
  std::atomic<bool> draining_{false};
  Request request_;
  Response response_;
  BlockingContext ctx_;
  TurnAlwaysOver policy_;
  int client_ = -1;
  std::unique_ptr<BlockingConnection> c_;
};

TEST_F(ServeBlockingTest, ATurnThatIsOverParksWithoutReading) {
  ASSERT_NO_FATAL_FAILURE(ServeFirstRequest());
  Send(kGet);  // the next request, while the turn is over
  EXPECT_EQ(ServeBlocking(*c_, ctx_, policy_), ConnectionOutcome::kParked);
  EXPECT_EQ(Received(), "") << "the request is still in the socket";
}

TEST_F(ServeBlockingTest, ReadFirstServesWhatIsWaitingEvenWhenTheTurnIsOver) {
  ASSERT_NO_FATAL_FAILURE(ServeFirstRequest());
  Send(kGet);
  EXPECT_EQ(ServeBlocking(*c_, ctx_, policy_, /*read_first=*/true),
            ConnectionOutcome::kParked);
  ExpectHello(Received());
}

}  // namespace
}  // namespace gearbox
