// The driver core (models/driver.h) with a recording Port, a socketpair for
// the client and a clock the test moves: what the core sends, when, what it
// asks the model to wait for, and what the machine counts as sent.
#include "models/driver.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "daemon/handlers/handlers.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using Kind = Interest::Kind;

// What the core asked of the model, in order.
struct Call {
  Kind kind;
  Clock::time_point deadline;
};

// A model's primitives that record what they are asked. The waits return
// false (an event loop armed its events), except AwaitWrite when `reader`
// is set: then the client reads what came, as a blocking model's poll would
// see room, and the core sends again.
struct RecordingPort {
  Clock::time_point now;
  int client_fd = -1;
  Connection* conn = nullptr;
  int server_fd = -1;
  bool may_process = true;
  std::string* reader = nullptr;
  std::vector<Call> calls;
  int process_asks = 0;
  bool closed = false;

  Clock::time_point Now() { return now; }
  int fd() const { return server_fd; }
  bool MayProcess() {
    ++process_asks;
    return may_process;
  }
  bool AwaitRead(const Interest& i, Clock::time_point) {
    calls.push_back({i.kind, i.deadline});
    return false;
  }
  bool AwaitWrite(const Interest& i, Clock::time_point) {
    calls.push_back({i.kind, i.deadline});
    if (!reader) return false;
    ReadAll();
    return true;
  }
  bool AwaitHandler(const Interest& i, Clock::time_point) {
    calls.push_back({i.kind, i.deadline});
    return false;
  }
  void Close() {
    closed = true;
    close(server_fd);
    server_fd = -1;
    conn->CountClosed();
  }
  void ReadAll() {
    char buf[65536];
    ssize_t n;
    while ((n = recv(client_fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
      reader->append(buf, static_cast<size_t>(n));
  }
};

constexpr std::string_view kHello = "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";
constexpr std::string_view kBig = "GET /big HTTP/1.1\r\nHost: a\r\n\r\n";

class DriverTest : public testing::MachineTest {
 protected:
  DriverTest() {
    limits_.header_timeout = milliseconds(1000);
    limits_.idle_timeout = milliseconds(3000);
    limits_.send_timeout = milliseconds(4000);
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));
    routes.push_back(DefaultRoute("/big", "text"));
    routes.back().params.Set("body", std::string(40000, 'x'));
    routes.push_back(DefaultRoute("/sleep", "wait"));
    Build(routes);
  }
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    client_ = sv[0];
    conn_ = std::make_unique<Connection>(Protocol::kHttp, limits_);
    conn_->Attach(&env_);
    conn_->Accepted(now_, 0);
    port_.now = now_;
    port_.client_fd = client_;
    port_.server_fd = sv[1];
    port_.conn = conn_.get();
  }
  void TearDown() override {
    close(client_);
    if (port_.server_fd >= 0) close(port_.server_fd);
  }
  // What the client has received so far.
  std::string Received() {
    std::string got;
    port_.reader = &got;
    port_.ReadAll();
    port_.reader = nullptr;
    return got;
  }
  void SetSendBuffer(int bytes) {
    ASSERT_EQ(setsockopt(port_.server_fd, SOL_SOCKET, SO_SNDBUF, &bytes,
                         sizeof(bytes)),
              0);
  }
  WorkerStats& stats() { return stats_->Slot(0); }
  uint64_t closed(CloseReason r) {
    return stats().closed[static_cast<int>(r)].load();
  }

  int client_ = -1;
  std::unique_ptr<Connection> conn_;
  RecordingPort port_;
};

TEST_F(DriverTest, ResponseIsSentThenTheModelWaitsForTheNextRequest) {
  conn_->Received(kHello, now_);
  Drive(port_, *conn_);
  const std::string got = Received();
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_EQ(stats().bytes_out.load(), got.size());
  ASSERT_EQ(port_.calls.size(), 1u);
  EXPECT_EQ(port_.calls[0].kind, Kind::kRead);
  EXPECT_EQ(port_.calls[0].deadline, now_ + limits_.idle_timeout);
  EXPECT_FALSE(port_.closed);
}

TEST_F(DriverTest, FullSocketWaitsWritableAndCountsOnlyWhatWent) {
  SetSendBuffer(4096);
  conn_->Received(kBig, now_);
  Drive(port_, *conn_);
  ASSERT_EQ(port_.calls.size(), 1u);
  EXPECT_EQ(port_.calls[0].kind, Kind::kWrite);
  EXPECT_EQ(port_.calls[0].deadline, now_ + limits_.send_timeout);
  EXPECT_FALSE(conn_->pending_out().empty());
  std::string got = Received();
  EXPECT_GT(got.size(), 0u);
  EXPECT_EQ(stats().bytes_out.load(), got.size());
  // The client reads as the model finds room: the rest goes, counted as it
  // goes, and the machine waits for the next request.
  port_.reader = &got;
  port_.calls.clear();
  Drive(port_, *conn_);
  port_.ReadAll();
  EXPECT_GT(got.size(), 40000u);
  EXPECT_EQ(stats().bytes_out.load(), got.size());
  EXPECT_TRUE(conn_->pending_out().empty());
  ASSERT_FALSE(port_.calls.empty());
  EXPECT_EQ(port_.calls.back().kind, Kind::kRead);
}

TEST_F(DriverTest, FailedSendClosesForTheClientAndCountsNoBytes) {
  close(client_);
  client_ = socket(AF_UNIX, SOCK_STREAM, 0);  // closed in TearDown
  conn_->Received(kHello, now_);
  Drive(port_, *conn_);
  EXPECT_TRUE(port_.closed);
  EXPECT_EQ(stats().bytes_out.load(), 0u);
  EXPECT_EQ(closed(CloseReason::kClient), 1u);
  EXPECT_EQ(stats().requests.load(), 1u);
}

TEST_F(DriverTest, PartialHeadGets408AtTheInjectedClocksDeadline) {
  conn_->Received("GET /hello HTTP/1.1\r\n", now_);
  Drive(port_, *conn_);
  ASSERT_EQ(port_.calls.size(), 1u);
  EXPECT_EQ(port_.calls[0].kind, Kind::kRead);
  const Clock::time_point deadline = port_.calls[0].deadline;
  EXPECT_EQ(deadline, now_ + limits_.header_timeout);
  port_.now = deadline;
  conn_->DeadlinePassed(deadline);
  Drive(port_, *conn_);
  const std::string got = Received();
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
  EXPECT_TRUE(port_.closed);
  EXPECT_EQ(closed(CloseReason::kHeaderTimeout), 1u);
  EXPECT_EQ(stats().bytes_out.load(), got.size());
}

TEST_F(DriverTest, HandlerWaitIsArmedUntilItsDeadlineThenAnswered) {
  conn_->Received("GET /sleep?ms=5 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  Drive(port_, *conn_);
  ASSERT_EQ(port_.calls.size(), 1u);
  EXPECT_EQ(port_.calls[0].kind, Kind::kHandler);
  EXPECT_EQ(port_.calls[0].deadline, now_ + milliseconds(5));
  EXPECT_TRUE(Received().empty());
  port_.now = now_ + milliseconds(5);
  conn_->DeadlinePassed(port_.now);
  Drive(port_, *conn_);
  EXPECT_NE(Received().find("waited 5 ms"), std::string::npos);
  EXPECT_EQ(port_.calls.back().kind, Kind::kRead);
}

// Pipelined requests past the flush threshold: the core sends what is there,
// then asks the model before it processes the rest.
TEST_F(DriverTest, ProcessWaitsForTheModelsWord) {
  port_.may_process = false;
  conn_->Received(std::string(kBig) + std::string(kBig) + std::string(kHello),
                  now_);
  EXPECT_EQ(stats().requests.load(), 2u);
  Drive(port_, *conn_);
  EXPECT_EQ(port_.process_asks, 1);
  EXPECT_EQ(stats().requests.load(), 2u);
  EXPECT_TRUE(port_.calls.empty());
  port_.may_process = true;
  std::string got;
  port_.reader = &got;
  Drive(port_, *conn_);
  port_.ReadAll();
  EXPECT_EQ(stats().requests.load(), 3u);
  EXPECT_EQ(got.size(), stats().bytes_out.load());
  size_t responses = 0;
  for (size_t at = got.find("HTTP/1.1 200"); at != std::string::npos;
       at = got.find("HTTP/1.1 200", at + 1))
    ++responses;
  EXPECT_EQ(responses, 3u);
}

// A codec that stops at bodies (the prefork head guard's): the complete head
// is not served; the machine waits to read its body, which the port may
// leave to another process (Phase::kBody).
TEST_F(DriverTest, CompleteHeadWithACodecStoppingAtBodiesIsNotServed) {
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kHttp, limits_);
  codec->StopAtBody();
  conn_ = std::make_unique<Connection>(Protocol::kHttp, std::move(codec));
  conn_->Attach(&env_);
  conn_->Accepted(now_, 0);
  port_.conn = conn_.get();
  conn_->Received(kHello, now_);
  Drive(port_, *conn_);
  ASSERT_EQ(port_.calls.size(), 1u);
  EXPECT_EQ(port_.calls[0].kind, Kind::kRead);
  EXPECT_EQ(conn_->phase(), Phase::kBody);
  EXPECT_EQ(conn_->input(), kHello);
  EXPECT_FALSE(port_.closed);
  EXPECT_TRUE(Received().empty());
  EXPECT_EQ(stats().requests.load(), 0u);
}

}  // namespace
}  // namespace gearbox
