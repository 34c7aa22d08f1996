// threadpool's poller and ReadyQueue (models/threadpool/) on a unix socket,
// without a network and without the model around them: a full queue refuses
// with 503, and a connection a worker parked mid-head gets 408 from the
// poller at its deadline. Both answers are counted as the bytes that went.
#include "models/threadpool/connection_poller.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "models/threadpool/ready_queue.h"
#include "tests/support/wait_until.h"
#include "tests/unit/models/local_socket.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using testing::ConnectLocal;
using testing::LocalListener;
using testing::ReadToEof;
using testing::WaitUntil;

// A worker's policy that parks whatever has no bytes (as threadpool's does).
class ParkWhenIdle final : public BlockingPolicy {
 public:
  ReadWait WaitReadable(BlockingConnection&, const Interest&) override {
    return ReadWait::kPark;
  }
};

class PollerTest : public ::testing::Test {
 protected:
  void Start(size_t queue_capacity) {
    ASSERT_GE(listener_.fd, 0);
    Listener l;
    l.fd = listener_.fd;
    listeners_.push_back(l);
    ctx_.listeners = &listeners_;
    ctx_.stats = StatsRegion::Create(2, 1);
    ctx_.config.limits.header_timeout = milliseconds(100);
    queue_ =
        std::make_unique<ReadyQueue>(queue_capacity, ctx_.stats->Slot(0), 1, 1);
    poller_ = std::make_unique<ConnectionPoller>(ctx_, *queue_, draining_);
    ASSERT_TRUE(poller_->Init().ok());
    poller_->StartThread();
  }
  void TearDown() override {
    if (poller_) poller_->Stop();
  }
  WorkerStats& slot(size_t i) { return ctx_.stats->Slot(i); }
  uint64_t closed(CloseReason r) {
    return slot(0).closed[static_cast<int>(r)].load() +
           slot(1).closed[static_cast<int>(r)].load();
  }

  LocalListener listener_;
  Listeners listeners_;
  ModelContext ctx_;
  std::atomic<bool> draining_{false};
  std::unique_ptr<ReadyQueue> queue_;
  std::unique_ptr<ConnectionPoller> poller_;
};

TEST_F(PollerTest, FullQueueRefusesWith503CountedAsSent) {
  ASSERT_NO_FATAL_FAILURE(Start(/*queue_capacity=*/0));
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("Retry-After: 1\r\n"), std::string::npos) << got;
  ASSERT_TRUE(WaitUntil([&] { return closed(CloseReason::kServer) == 1; },
                        milliseconds(5000)));
  EXPECT_EQ(slot(0).rejected.load(), 1u);
  EXPECT_EQ(slot(0).bytes_out.load(), got.size());
  EXPECT_EQ(poller_->open(), 0);
}

TEST_F(PollerTest, HeadParkedByAWorkerGets408FromThePollerAtItsDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(/*queue_capacity=*/4));
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  const std::string part = "GET /hello HTTP/1.1\r\n";
  ASSERT_EQ(write(client, part.data(), part.size()),
            static_cast<ssize_t>(part.size()));
  // The worker's turn: it reads the part, has nothing more, and parks it.
  bool idle = false;
  PooledConnection* c = queue_->Pop(0, std::chrono::seconds(5), &idle);
  ASSERT_NE(c, nullptr);
  Request request;
  Response response;
  BlockingContext bc;
  bc.env.cycle.stats = &slot(1);
  bc.env.limits = &ctx_.config.limits;
  bc.env.draining = &draining_;
  bc.env.request = &request;
  bc.env.response = &response;
  RealSleeper sleeper;
  bc.sleeper = &sleeper;
  ParkWhenIdle policy;
  ASSERT_EQ(ServeBlocking(*c, bc, policy), ConnectionOutcome::kParked);
  EXPECT_EQ(c->conn.phase(), Phase::kHead);
  ASSERT_EQ(queue_->Park(c), ParkedSet::Armed::kParked);
  // The poller, not a worker, answers it at the head's deadline.
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
  ASSERT_TRUE(
      WaitUntil([&] { return closed(CloseReason::kHeaderTimeout) == 1; },
                milliseconds(5000)));
  EXPECT_EQ(slot(0).bytes_out.load(), got.size());  // the poller's slot
  EXPECT_EQ(slot(1).bytes_out.load(), 0u);
  // The poller counts the close, then forgets the connection: its open count
  // follows a moment later on the poller's thread.
  EXPECT_TRUE(
      WaitUntil([&] { return poller_->open() == 0; }, milliseconds(5000)));
}

}  // namespace
}  // namespace gearbox
