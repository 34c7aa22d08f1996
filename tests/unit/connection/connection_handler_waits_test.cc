// The connection state machine while a handler waits, with a clock the test
// moves by hand: a timed wait, a wait on backend fds, pipelined requests
// behind one, the peer closing mid-wait, and the request deadline
// ([limits] request_timeout, a route's `timeout`) that cuts a wait with 504.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "daemon/connection/connection.h"
#include "tests/unit/connection/connection_fixture.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using testing::ConnectionTest;

TEST_F(ConnectionTest, WaitingHandlerResumesAtItsDeadline) {
  auto c = Open();
  c->Received("GET /sleep?ms=50 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kHandler);
  EXPECT_FALSE(i.write);
  EXPECT_TRUE(i.read);
  EXPECT_EQ(i.deadline, now_ + milliseconds(50));
  EXPECT_EQ(stats().inflight.load(), 1u);
  c->DeadlinePassed(now_ + milliseconds(10));  // early
  EXPECT_EQ(c->Next(now_).kind, Kind::kHandler);
  now_ += milliseconds(50);
  c->DeadlinePassed(now_);
  EXPECT_NE(Drain(*c).find("waited 50 ms"), std::string::npos);
  EXPECT_EQ(stats().inflight.load(), 0u);
  EXPECT_EQ(c->Next(now_).kind, Kind::kRead);
}

TEST_F(ConnectionTest, PipelinedRequestWaitsBehindAWaitingHandler) {
  auto c = Open();
  c->Received(std::string("GET /sleep?ms=5 HTTP/1.1\r\nHost: a\r\n\r\n") +
                  std::string(kHello),
              now_);
  EXPECT_EQ(c->Next(now_).kind, Kind::kHandler);
  EXPECT_TRUE(c->pending_out().empty());
  now_ += milliseconds(5);
  c->DeadlinePassed(now_);
  std::string out = Drain(*c);
  EXPECT_LT(out.find("waited 5 ms"), out.find("200 OK\r\nContent-Type"));
  EXPECT_EQ(stats().requests.load(), 2u);
}

TEST_F(ConnectionTest, PeerClosingMidWaitCancelsTheExchange) {
  auto c = Open();
  c->Received("GET /sleep?ms=50 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  c->PeerClosed();
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_EQ(i.reason, CloseReason::kClient);
  c->CountClosed();
  EXPECT_EQ(stats().inflight.load(), 0u);
  EXPECT_EQ(stats().busy.load(), 0u);
  EXPECT_EQ(closed(CloseReason::kClient), 1u);
  EXPECT_EQ(stats().requests.load(), 0u);
}

// Waits for its fd to become readable (a backend answering), for at most
// 100 ms; says how the wait ended. Counts its destruction.
class FdWaitHandler final : public Handler {
 public:
  FdWaitHandler(int fd, int* destroyed) : fd_(fd), destroyed_(destroyed) {}
  std::unique_ptr<Exchange> Start(const Request&) override {
    return std::make_unique<Wait>(fd_, destroyed_);
  }

 private:
  struct Wait final : Exchange {
    Wait(int fd, int* destroyed) : fd(fd), destroyed(destroyed) {}
    ~Wait() override { ++*destroyed; }
    Step Resume(const Wake& wake, Response& response) override {
      if (wake.why == Wake::Why::kStart)
        return Step::WaitFds({{fd, kFdReadable}}, milliseconds(100));
      response.body =
          wake.why == Wake::Why::kFdsReady && wake.ready(0, kFdReadable)
              ? "ready\n"
              : "deadline\n";
      return Step::Done();
    }
    int fd;
    int* destroyed;
  };
  int fd_;
  int* destroyed_;
};

class FdWaitTest : public ConnectionTest {
 protected:
  FdWaitTest() {
    router_->Add("/fd", std::make_unique<FdWaitHandler>(42, &destroyed_));
  }
  int destroyed_ = 0;
};

constexpr std::string_view kFd = "GET /fd HTTP/1.1\r\nHost: a\r\n\r\n";

TEST_F(FdWaitTest, InterestNamesTheFdsAndTheDeadline) {
  auto c = Open();
  c->Received(kFd, now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kHandler);
  ASSERT_EQ(i.handler_fds.size(), 1u);
  EXPECT_EQ(i.handler_fds[0].fd, 42);
  EXPECT_EQ(i.handler_fds[0].events, kFdReadable);
  EXPECT_EQ(i.deadline, now_ + milliseconds(100));
  EXPECT_NE(i.wait_seq, 0u);
}

TEST_F(FdWaitTest, ReadyFdResumesTheExchange) {
  auto c = Open();
  c->Received(kFd, now_);
  const uint8_t ready[] = {kFdReadable};
  c->HandlerFdsReady(ready, now_ + milliseconds(3));
  EXPECT_NE(Drain(*c).find("ready\n"), std::string::npos);
  EXPECT_EQ(destroyed_, 1);
  EXPECT_EQ(c->Next(now_).kind, Kind::kRead);
}

TEST_F(FdWaitTest, DeadlineWithNothingReadyResumesWithDeadline) {
  auto c = Open();
  c->Received(kFd, now_);
  c->DeadlinePassed(now_ + milliseconds(100));
  EXPECT_NE(Drain(*c).find("deadline\n"), std::string::npos);
}

TEST_F(FdWaitTest, EachWaitHasItsOwnNumber) {
  auto a = Open();
  a->Received(kFd, now_);
  auto b = Open();
  b->Received(kFd, now_);
  EXPECT_NE(a->Next(now_).wait_seq + 1000, 0u);
  const uint8_t ready[] = {kFdReadable};
  const uint32_t first = a->Next(now_).wait_seq;
  a->HandlerFdsReady(ready, now_);
  a->Received(kFd, now_);
  EXPECT_NE(a->Next(now_).wait_seq, first);
}

TEST_F(FdWaitTest, PeerClosingMidWaitDestroysTheExchange) {
  auto c = Open();
  c->Received(kFd, now_);
  c->PeerClosed();
  EXPECT_EQ(destroyed_, 1);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);
  c->CountClosed();
  EXPECT_EQ(stats().inflight.load(), 0u);
}

// Request deadlines: [limits] request_timeout and a route's `timeout`.

// Waits `step` at a time, `steps` times, then answers: a handler whose every
// wait is short but whose whole exchange is long.
class StepsHandler final : public Handler {
 public:
  StepsHandler(milliseconds step, int steps) : step_(step), steps_(steps) {}
  std::unique_ptr<Exchange> Start(const Request&) override {
    return std::make_unique<Steps>(step_, steps_);
  }

 private:
  struct Steps final : Exchange {
    Steps(milliseconds step, int left) : step(step), left(left) {}
    Step Resume(const Wake&, Response& response) override {
      if (left-- > 0) return Step::WaitFor(step);
      response.body = "done\n";
      return Step::Done();
    }
    milliseconds step;
    int left;
  };
  milliseconds step_;
  int steps_;
};

class DeadlineTest : public FdWaitTest {
 protected:
  DeadlineTest() {
    limits_.request_timeout = milliseconds(300);
    router_->Add("/fd50", std::make_unique<FdWaitHandler>(42, &destroyed_),
                 milliseconds(50));
    router_->Add("/steps", std::make_unique<StepsHandler>(milliseconds(100), 5),
                 milliseconds(250));
  }
  uint64_t request_timeouts() { return stats().request_timeouts.load(); }
};

TEST_F(DeadlineTest, WaitPastRequestTimeoutGets504AndKeepsTheConnection) {
  auto c = Open();
  c->Received("GET /sleep?ms=1000 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kHandler);
  EXPECT_EQ(i.deadline, now_ + milliseconds(300));  // not the 1000 ms wait
  c->DeadlinePassed(now_ + milliseconds(299));      // early: nothing
  EXPECT_EQ(c->Next(now_).kind, Kind::kHandler);
  c->DeadlinePassed(now_ + milliseconds(300));
  i = c->Next(now_ + milliseconds(300));
  EXPECT_EQ(i.kind, Kind::kRead);  // kept alive
  EXPECT_EQ(i.deadline, now_ + milliseconds(300) + limits_.idle_timeout);
  const std::string out = Drain(*c);
  EXPECT_EQ(out.rfind("HTTP/1.1 504 Gateway Timeout\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("request timeout\n"), std::string::npos);
  EXPECT_EQ(request_timeouts(), 1u);
  EXPECT_EQ(stats().status_class[5].load(), 1u);
  EXPECT_EQ(stats().inflight.load(), 0u);
  EXPECT_EQ(stats().current_start_us.load(), 0u);
  // The connection serves the next request as usual.
  c->Received(kHello, now_ + milliseconds(301));
  EXPECT_NE(Drain(*c).find("200 OK"), std::string::npos);
}

TEST_F(DeadlineTest, WaitShorterThanTheDeadlineIsServed) {
  auto c = Open();
  c->Received("GET /sleep?ms=100 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  EXPECT_EQ(c->Next(now_).deadline, now_ + milliseconds(100));
  c->DeadlinePassed(now_ + milliseconds(100));
  EXPECT_NE(Drain(*c).find("waited 100 ms"), std::string::npos);
  EXPECT_EQ(request_timeouts(), 0u);
}

TEST_F(DeadlineTest, RouteTimeoutOverridesRequestTimeoutAndCancelsFdWait) {
  auto c = Open();
  c->Received("GET /fd50 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  Interest i = c->Next(now_);
  ASSERT_EQ(i.kind, Kind::kHandler);
  EXPECT_EQ(i.handler_fds.size(), 1u);
  EXPECT_EQ(i.deadline, now_ + milliseconds(50));  // not the fd wait's 100
  c->DeadlinePassed(now_ + milliseconds(50));
  EXPECT_EQ(destroyed_, 1);  // destroying it cancels the wait
  EXPECT_NE(Drain(*c).find(" 504 "), std::string::npos);
  EXPECT_EQ(request_timeouts(), 1u);
}

TEST_F(DeadlineTest, FdReadyAfterTheDeadlineStillGets504) {
  auto c = Open();
  c->Received("GET /fd50 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  const uint8_t ready[] = {kFdReadable};
  c->HandlerFdsReady(ready, now_ + milliseconds(60));  // the driver was late
  EXPECT_EQ(destroyed_, 1);
  EXPECT_NE(Drain(*c).find(" 504 "), std::string::npos);
}

TEST_F(DeadlineTest, DeadlineRunsFromHandlerStartNotPerWait) {
  auto c = Open();
  c->Received("GET /steps HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  EXPECT_EQ(c->Next(now_).deadline, now_ + milliseconds(100));
  c->DeadlinePassed(now_ + milliseconds(100));
  EXPECT_EQ(c->Next(now_).deadline, now_ + milliseconds(200));
  c->DeadlinePassed(now_ + milliseconds(200));
  EXPECT_EQ(c->Next(now_).deadline, now_ + milliseconds(250));  // capped
  EXPECT_TRUE(c->pending_out().empty());
  c->DeadlinePassed(now_ + milliseconds(250));
  EXPECT_NE(Drain(*c).find(" 504 "), std::string::npos);
  EXPECT_EQ(request_timeouts(), 1u);
}

// The start the stuck-request watchers read, and the service time counted,
// share the machine's clock with the deadlines: a handler that waits X is
// served in no less than X (a later clock reading as the start made a 20 ms
// wait count 19.8 ms of service under load).
TEST_F(DeadlineTest, RequestStartsAtTheMachinesNow) {
  auto c = Open();
  c->Received("GET /sleep?ms=1000 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  ASSERT_EQ(c->Next(now_).kind, Kind::kHandler);
  EXPECT_EQ(stats().current_start_us.load(), MicrosOf(now_));
  EXPECT_EQ(stats().current_deadline_us.load(),
            MicrosOf(now_ + milliseconds(300)));
}

TEST_F(DeadlineTest, PipelinedRequestBehindATimedOutOneIsServed) {
  auto c = Open();
  c->Received(std::string("GET /fd50 HTTP/1.1\r\nHost: a\r\n\r\n") +
                  std::string(kHello),
              now_);
  c->DeadlinePassed(now_ + milliseconds(50));
  const std::string out = Drain(*c);
  const size_t timeout = out.find(" 504 "), ok = out.find(" 200 OK");
  ASSERT_NE(timeout, std::string::npos) << out;
  ASSERT_NE(ok, std::string::npos) << out;
  EXPECT_LT(timeout, ok);
}

}  // namespace
}  // namespace gearbox
