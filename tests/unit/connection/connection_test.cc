// The connection state machine without sockets: bytes in, interest and bytes
// out, with a clock the test moves by hand.
#include "daemon/connection/connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using Kind = Interest::Kind;

class ConnectionTest : public testing::MachineTest {
 protected:
  ConnectionTest() {
    limits_.header_timeout = milliseconds(1000);
    limits_.body_timeout = milliseconds(2000);
    limits_.idle_timeout = milliseconds(3000);
    limits_.send_timeout = milliseconds(4000);
    limits_.max_body_bytes = 100;
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));  // every param default
    routes.push_back(DefaultRoute("/sleep", "wait"));
    Build(routes);
  }
};

constexpr std::string_view kHello = "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";

TEST_F(ConnectionTest, ServesAndKeepsAlive) {
  auto c = Open();
  EXPECT_EQ(c->phase(), Phase::kFresh);
  c->Received(kHello, now_);
  Interest i = c->Next(now_);
  EXPECT_TRUE(i.write);
  EXPECT_EQ(i.kind, Kind::kRead);
  EXPECT_EQ(i.deadline, now_ + limits_.idle_timeout);
  EXPECT_EQ(c->phase(), Phase::kIdle);
  EXPECT_EQ(Drain(*c).rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_FALSE(c->Next(now_).write);
  EXPECT_EQ(stats().requests.load(), 1u);
  EXPECT_FALSE(c->has_input());
}

TEST_F(ConnectionTest, PipelinedRequestsAnswerInOrder) {
  auto c = Open();
  std::string two =
      std::string(kHello) + "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n";
  c->Received(two, now_);
  std::string out = Drain(*c);
  size_t ok = out.find("200 OK"), missing = out.find("404 Not Found");
  ASSERT_NE(ok, std::string::npos);
  ASSERT_NE(missing, std::string::npos);
  EXPECT_LT(ok, missing);
  EXPECT_EQ(stats().requests.load(), 2u);
}

TEST_F(ConnectionTest, RequestSplitAcrossReadsIsServedOnce) {
  auto c = Open();
  for (char ch : kHello) {
    c->Received(std::string_view(&ch, 1), now_);
  }
  EXPECT_EQ(stats().requests.load(), 1u);
  EXPECT_NE(Drain(*c).find("200 OK"), std::string::npos);
}

TEST_F(ConnectionTest, SilentFreshConnectionClosesUnansweredAtHeaderTimeout) {
  auto c = Open();
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kRead);
  EXPECT_EQ(i.deadline, now_ + limits_.header_timeout);
  c->DeadlinePassed(now_ + milliseconds(999));  // early: nothing happens
  EXPECT_EQ(c->Next(now_).kind, Kind::kRead);
  c->DeadlinePassed(i.deadline);
  i = c->Next(i.deadline);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_FALSE(i.write);
  EXPECT_EQ(i.reason, CloseReason::kHeaderTimeout);
  c->CountClosed();
  EXPECT_EQ(closed(CloseReason::kHeaderTimeout), 1u);
}

TEST_F(ConnectionTest, PartialHeadGets408AtHeaderTimeoutFromAccept) {
  auto c = Open();
  const Clock::time_point due = now_ + limits_.header_timeout;
  now_ += milliseconds(500);
  c->Received("GET /hello HTTP/1.1\r\nHo", now_);
  EXPECT_EQ(c->phase(), Phase::kHead);
  EXPECT_EQ(c->Next(now_).deadline, due);  // not reset by the first bytes
  c->DeadlinePassed(due);
  Interest i = c->Next(due);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_TRUE(i.write);
  EXPECT_EQ(i.reason, CloseReason::kHeaderTimeout);
  EXPECT_EQ(Drain(*c).rfind("HTTP/1.1 408", 0), 0u);
}

TEST_F(ConnectionTest, HeadAfterIdleGetsItsOwnHeaderTimeout) {
  auto c = Open();
  c->Received(kHello, now_);
  Drain(*c);
  now_ += milliseconds(2500);
  c->Received("GET /he", now_);
  EXPECT_EQ(c->Next(now_).deadline, now_ + limits_.header_timeout);
}

TEST_F(ConnectionTest, BodyGetsBodyTimeoutOnceHeadIsComplete) {
  auto c = Open();
  c->Received(
      "POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12345",
      now_);
  EXPECT_EQ(c->phase(), Phase::kBody);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.deadline, now_ + limits_.body_timeout);
  now_ += milliseconds(100);
  c->Received("67", now_);  // a trickle does not extend it
  EXPECT_EQ(c->Next(now_).deadline, i.deadline);
  c->DeadlinePassed(i.deadline);
  EXPECT_EQ(c->Next(i.deadline).reason, CloseReason::kHeaderTimeout);
  EXPECT_EQ(Drain(*c).rfind("HTTP/1.1 408", 0), 0u);
}

TEST_F(ConnectionTest, IdleKeepAliveClosesAtIdleTimeout) {
  auto c = Open();
  c->Received(kHello, now_);
  Drain(*c);
  Interest i = c->Next(now_);
  c->DeadlinePassed(i.deadline);
  i = c->Next(i.deadline);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_FALSE(i.write);
  EXPECT_EQ(i.reason, CloseReason::kIdleTimeout);
}

TEST_F(ConnectionTest, BadInputIsAnsweredCountedAndClosed) {
  auto c = Open();
  c->Received("GET /hello HTTP/1.1\r\nBad Header: x\r\n\r\n", now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_EQ(i.reason, CloseReason::kError);
  EXPECT_EQ(Drain(*c).rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(stats().bad_input.load(), 1u);
  EXPECT_EQ(stats().status_class[4].load(), 1u);
}

TEST_F(ConnectionTest, OversizedBodyIs413) {
  auto c = Open();
  c->Received("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n",
              now_);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);
  EXPECT_EQ(Drain(*c).rfind("HTTP/1.1 413", 0), 0u);
}

TEST_F(ConnectionTest, ConnectionCloseClosesAfterTheResponse) {
  auto c = Open();
  c->Received("GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
              now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_TRUE(i.write);
  EXPECT_EQ(i.reason, CloseReason::kServer);
}

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

TEST_F(ConnectionTest, BlockedWriteIsBoundBySendTimeout) {
  auto c = Open();
  c->Received(kHello, now_);
  c->Sent(3, now_);
  c->WriteBlocked(now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kWrite);
  EXPECT_EQ(i.deadline, now_ + limits_.send_timeout);
  c->WriteBlocked(now_ + milliseconds(100));  // armed once, not per chunk
  EXPECT_EQ(c->Next(now_).deadline, i.deadline);
  c->DeadlinePassed(i.deadline);
  i = c->Next(i.deadline);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_FALSE(i.write);
  EXPECT_EQ(i.reason, CloseReason::kSendTimeout);
}

TEST_F(ConnectionTest, CompletedWriteRestartsTheIdleClock) {
  auto c = Open();
  c->Received(kHello, now_);
  c->WriteBlocked(now_);
  now_ += milliseconds(3500);
  c->Sent(c->pending_out().size(), now_);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kRead);
  EXPECT_TRUE(i.deadline_changed);
  EXPECT_EQ(i.deadline, now_ + limits_.idle_timeout);
}

// An idle connection is not closed the moment the drain begins (a peer may be
// sending on it): it lingers for drain_idle_timeout, then closes for the drain;
// a request that comes meanwhile is answered with Connection: close.
TEST_F(ConnectionTest, DrainClosesIdleAfterLingerButServesFreshAndInFlight) {
  auto idle = Open();
  idle->Received(kHello, now_);
  Drain(*idle);
  auto reused = Open();
  reused->Received(kHello, now_);
  Drain(*reused);
  auto fresh = Open();
  auto waiting = Open();
  waiting->Received("GET /sleep?ms=5 HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  draining_ = true;
  Interest i = idle->Next(now_);
  EXPECT_EQ(i.kind, Kind::kRead);
  EXPECT_EQ(i.deadline, now_ + limits_.drain_idle_timeout);
  idle->DeadlinePassed(now_ + limits_.drain_idle_timeout);
  i = idle->Next(now_ + limits_.drain_idle_timeout);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_EQ(i.reason, CloseReason::kDrain);
  EXPECT_EQ(reused->Next(now_).kind, Kind::kRead);
  reused->Received(kHello, now_ + milliseconds(10));
  i = reused->Next(now_ + milliseconds(10));
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_EQ(i.reason, CloseReason::kDrain);
  EXPECT_NE(Drain(*reused).find("Connection: close"), std::string::npos);
  EXPECT_EQ(fresh->Next(now_).kind, Kind::kRead);
  fresh->Received(kHello, now_);
  i = fresh->Next(now_);
  EXPECT_EQ(i.kind, Kind::kClose);  // answered, with Connection: close
  EXPECT_NE(Drain(*fresh).find("Connection: close"), std::string::npos);
  waiting->DeadlinePassed(now_ + milliseconds(5));
  EXPECT_EQ(waiting->Next(now_).reason, CloseReason::kDrain);
  EXPECT_NE(Drain(*waiting).find("waited 5 ms"), std::string::npos);
}

TEST_F(ConnectionTest, RefusedConnectionGets503WithRetryAfter) {
  auto c = Open();
  c->Refuse();
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kClose);
  std::string out = Drain(*c);
  EXPECT_EQ(out.rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_NE(out.find("Retry-After: 1\r\n"), std::string::npos);
  EXPECT_EQ(stats().rejected.load(), 1u);
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

TEST_F(ConnectionTest, ModelCanAnnounceClose) {
  auto c = Open();
  c->set_close_after_response(true);
  c->Received(kHello, now_);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);
  EXPECT_NE(Drain(*c).find("Connection: close"), std::string::npos);
}

TEST_F(ConnectionTest, HeadHandedOffMidHeadIsServedByTheNextOwner) {
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kHttp, limits_);
  codec->StopAtBody();
  auto guard = std::make_unique<Connection>(Protocol::kHttp, std::move(codec));
  guard->Attach(&env_);
  guard->Accepted(now_, 0);
  guard->Received("GET /hello HTTP/1.1\r\n", now_);
  EXPECT_EQ(guard->Next(now_).kind, Kind::kRead);
  EXPECT_EQ(guard->phase(), Phase::kHead);
  guard->Received("Host: a\r\n\r\n", now_);
  EXPECT_EQ(guard->Next(now_).kind, Kind::kRead);
  EXPECT_EQ(guard->phase(), Phase::kBody);  // the head is complete
  EXPECT_EQ(stats().requests.load(), 0u);
  ConnectionProgress progress = guard->Progress();
  EXPECT_TRUE(progress.fresh);
  // The head came in time: the body's own bound runs from its end.
  EXPECT_EQ(progress.deadline, now_ + limits_.body_timeout);

  Connection child(Protocol::kHttp, limits_);
  child.Attach(&env_);
  std::string record;
  const std::string_view bytes = guard->SaveParsed(record);
  EXPECT_TRUE(bytes.empty());  // the head travels as the codec's record
  child.Adopt(progress, record, bytes);
  child.Process(now_);
  EXPECT_EQ(stats().requests.load(), 1u);
  EXPECT_NE(Drain(child).find("200 OK"), std::string::npos);
}

TEST_F(ConnectionTest, FastCgiFramingErrorClosesSilently) {
  auto c = Open(Protocol::kFastCgi);
  c->Received(kHello, now_);  // not FastCGI: a framing error, closed silently
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);
  EXPECT_EQ(stats().bad_input.load(), 1u);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);  // no answer: no linger
}

}  // namespace
}  // namespace gearbox
