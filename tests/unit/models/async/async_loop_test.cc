// One async loop (models/async/async_loop.h) on a unix socket, without a
// network and without the model around it: its primitives (read, write,
// timer and the hang-up watch during a handler wait) as the driver core
// uses them.
#include "models/async/async_loop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "tests/support/wait_until.h"
#include "tests/unit/models/local_socket.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using testing::ConnectLocal;
using testing::LocalListener;
using testing::ReadToEof;
using testing::WaitUntil;

constexpr size_t kBigBody = 1 << 20;  // several times a unix socket's buffer

class AsyncLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(listener_.fd, 0);
    Listener l;
    l.fd = listener_.fd;
    listeners_.push_back(l);
    routes_.routes.push_back(DefaultRoute("/big", "text"));
    routes_.routes.back().params.Set("body", std::string(kBigBody, 'x'));
    routes_.routes.push_back(DefaultRoute("/sleep", "wait"));
    shared_.listeners = &listeners_;
    shared_.routes = &routes_;
    stats_ = StatsRegion::Create(1, routes_.routes.size());
    loop_ = std::make_unique<AsyncLoop>(shared_, stats(), 0);
    ASSERT_EQ(loop_->Init(), "");
    loop_->StartThread();
  }
  void TearDown() override {
    shared_.aborting.store(true);
    loop_->Wake();
    loop_->Join();
  }
  WorkerStats& stats() { return stats_->Slot(0); }
  uint64_t closed(CloseReason r) {
    return stats().closed[static_cast<int>(r)].load();
  }
  static void Send(int fd, const std::string& bytes) {
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }

  LocalListener listener_;
  Listeners listeners_;
  RouteSet routes_;
  AsyncShared shared_;
  std::shared_ptr<StatsRegion> stats_;
  std::unique_ptr<AsyncLoop> loop_;
};

// The response does not fit the socket: the loop waits writable and sends
// the rest as the client reads, counting each byte once it went.
TEST_F(AsyncLoopTest, ResponseLargerThanTheSocketArrivesWhole) {
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  Send(client, "GET /big HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string got = ReadToEof(client, milliseconds(10000));
  close(client);
  ASSERT_GT(got.size(), kBigBody);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(got.size() - got.find("\r\n\r\n") - 4, kBigBody);
  ASSERT_TRUE(WaitUntil([&] { return closed(CloseReason::kServer) == 1; },
                        milliseconds(5000)));
  EXPECT_EQ(stats().bytes_out.load(), got.size());
}

TEST_F(AsyncLoopTest, HandlerTimerAnswersTheRequest) {
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  Send(client,
       "GET /sleep?ms=20 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_NE(got.find("waited 20 ms"), std::string::npos) << got;
}

// The read event stays armed while a handler waits: a client that hangs up
// cancels the exchange at once, not at the end of its wait.
TEST_F(AsyncLoopTest, HangUpDuringAHandlerWaitCancelsIt) {
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  Send(client, "GET /sleep?ms=30000 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(WaitUntil([&] { return stats().inflight.load() == 1; },
                        milliseconds(5000)));
  close(client);
  ASSERT_TRUE(WaitUntil([&] { return closed(CloseReason::kClient) == 1; },
                        milliseconds(5000)));
  EXPECT_EQ(stats().inflight.load(), 0u);
  EXPECT_EQ(stats().requests.load(), 0u);
}

}  // namespace
}  // namespace gearbox
