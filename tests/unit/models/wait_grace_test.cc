// A handler's wait under a policy with a WillWaitAfter grace (prefork's, for
// the connections a child holds): a wait that ends within the grace never
// calls WillWait; a longer one calls it once, after the grace, and is still
// answered when its fd turns readable. A timerfd is the backend: it answers
// after a set time without a thread or a sleep.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"
#include "models/blocking_connection.h"
#include "tests/unit/models/blocking_harness.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kGrace{40};

// Waits up to 1 s for its fd to turn readable; answers "ready" or "deadline".
class FdWaitHandler final : public Handler {
 public:
  explicit FdWaitHandler(const int* fd) : fd_(fd) {}
  std::unique_ptr<Exchange> Start(const Request&) override {
    return std::make_unique<Wait>(*fd_);
  }

 private:
  struct Wait final : Exchange {
    explicit Wait(int fd) : fd(fd) {}
    Step Resume(const Wake& wake, Response& response) override {
      if (wake.why == Wake::Why::kStart)
        return Step::WaitFds({{fd, kFdReadable}}, milliseconds(1000));
      response.body =
          wake.why == Wake::Why::kFdsReady ? "ready\n" : "deadline\n";
      return Step::Done();
    }
    int fd;
  };
  const int* fd_;
};

// Records when WillWait is called; parks what has no bytes.
class GracePolicy final : public BlockingPolicy {
 public:
  ReadWait WaitReadable(BlockingConnection&, const Interest&) override {
    return ReadWait::kPark;
  }
  void WillWait() override { calls.push_back(Clock::now()); }
  std::chrono::microseconds WillWaitAfter() const override { return kGrace; }
  std::vector<Clock::time_point> calls;
};

class WaitGraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto router =
        std::make_unique<Router>(std::vector<RouteConfig>{}, ServerInfo{});
    router->Add("/fd", std::make_unique<FdWaitHandler>(&backend_));
    ASSERT_NO_FATAL_FAILURE(h_.Open(std::move(router), 1));
    backend_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    ASSERT_GE(backend_, 0);
  }
  void TearDown() override { close(backend_); }
  // Serves one GET /fd whose backend answers after `answer_after`; returns
  // what the client received and sets started_.
  std::string ServeWithAnswerAfter(milliseconds answer_after) {
    itimerspec t{};
    t.it_value.tv_nsec = answer_after.count() * 1000000;
    EXPECT_EQ(timerfd_settime(backend_, 0, &t, nullptr), 0);
    h_.Send("GET /fd HTTP/1.1\r\nHost: x\r\n\r\n");
    started_ = Clock::now();
    EXPECT_EQ(ServeBlocking(*h_.c, h_.ctx, policy_),
              ConnectionOutcome::kParked);
    return h_.Received();
  }

  BlockingHarness h_;
  GracePolicy policy_;
  int backend_ = -1;
  Clock::time_point started_;
};

TEST_F(WaitGraceTest, AnAnswerWithinTheGraceNeverCallsWillWait) {
  const std::string response = ServeWithAnswerAfter(milliseconds(5));
  EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response;
  EXPECT_NE(response.find("ready\n"), std::string::npos) << response;
  EXPECT_TRUE(policy_.calls.empty());
}

TEST_F(WaitGraceTest, ALongerWaitCallsWillWaitOnceAfterTheGrace) {
  const std::string response = ServeWithAnswerAfter(milliseconds(150));
  EXPECT_NE(response.find("ready\n"), std::string::npos) << response;
  ASSERT_EQ(policy_.calls.size(), 1u);
  const auto at = policy_.calls[0] - started_;
  EXPECT_GE(at, kGrace);
  EXPECT_LT(at, milliseconds(150)) << "WillWait came after the answer";
}

}  // namespace
}  // namespace gearbox
