// A worker's spare blocks for requests whose handler waits
// (daemon/connection/pending_spares.h): every way a wait ends gives its block
// back, or frees it; a kept block serves the next wait clean; bounded.
#include "daemon/connection/pending_spares.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;

// Waits for fd 42 to be readable, then answers with the fixture's `answer`.
// Counts its exchanges' destruction.
class WaitThenAnswer final : public Handler {
 public:
  WaitThenAnswer(const Response* answer, int* destroyed)
      : answer_(answer), destroyed_(destroyed) {}
  std::unique_ptr<Exchange> Start(const Request&) override {
    return std::make_unique<Wait>(answer_, destroyed_);
  }

 private:
  struct Wait final : Exchange {
    Wait(const Response* answer, int* destroyed)
        : answer(answer), destroyed(destroyed) {}
    ~Wait() override { ++*destroyed; }
    Step Resume(const Wake& wake, Response& response) override {
      if (wake.why == Wake::Why::kStart)
        return Step::WaitFds({{42, kFdReadable}}, milliseconds(100));
      // Only what differs from a fresh response: a block that came back
      // unclean would show through.
      if (answer->status != 200) response.status = answer->status;
      if (!answer->extra_headers.empty())
        response.extra_headers = answer->extra_headers;
      response.body += answer->body;
      return Step::Done();
    }
    const Response* answer;
    int* destroyed;
  };
  const Response* answer_;
  int* destroyed_;
};

class PendingSparesTest : public testing::MachineTest {
 protected:
  PendingSparesTest() {
    limits_.request_timeout = milliseconds(50);
    Build({});
    router_->Add("/w", std::make_unique<WaitThenAnswer>(&answer_, &destroyed_));
    env_.spares = &spares_;
    answer_.body = "answer\n";
  }
  // A connection whose request waits now.
  std::unique_ptr<Connection> Waiting() {
    auto c = Open();
    c->Received("GET /w HTTP/1.1\r\nHost: a\r\n\r\n", now_);
    EXPECT_EQ(c->phase(), Phase::kHandler);
    return c;
  }
  std::string Ready(Connection& c) {
    const uint8_t ready[] = {kFdReadable};
    c.HandlerFdsReady(ready, now_ + milliseconds(1));
    std::string out(c.pending_out());
    c.Sent(out.size(), now_);
    return out;
  }

  PendingSpares spares_;
  Response answer_;
  int destroyed_ = 0;
};

TEST_F(PendingSparesTest, AnAnsweredWaitGivesItsBlockBackAndTheNextTakesIt) {
  auto c = Waiting();
  EXPECT_EQ(spares_.kept(), 0u);
  EXPECT_NE(Ready(*c).find("answer\n"), std::string::npos);
  EXPECT_EQ(destroyed_, 1);  // the exchange ended with its response
  EXPECT_EQ(spares_.kept(), 1u);
  c->Received("GET /w HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  EXPECT_EQ(spares_.kept(), 0u);  // taken, not allocated
  Ready(*c);
  EXPECT_EQ(spares_.kept(), 1u);
}

TEST_F(PendingSparesTest, ATimedOutAndACutShortWaitGiveTheirsBack) {
  auto timed_out = Waiting();
  timed_out->DeadlinePassed(now_ + milliseconds(60));  // past the 50 ms
  EXPECT_EQ(std::string(timed_out->pending_out()).rfind("HTTP/1.1 504", 0), 0u);
  EXPECT_EQ(spares_.kept(), 1u);
  auto cut = Waiting();
  cut->CutShort();
  EXPECT_EQ(std::string(cut->pending_out()).rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_EQ(spares_.kept(), 1u);  // the one taken came back
  EXPECT_EQ(destroyed_, 2);
}

TEST_F(PendingSparesTest, AClosedConnectionsBlockIsFreedNotKept) {
  auto c = Waiting();
  c->PeerClosed();
  EXPECT_EQ(destroyed_, 1);
  EXPECT_EQ(spares_.kept(), 0u);
}

TEST_F(PendingSparesTest, AKeptBlockServesTheNextWaitClean) {
  answer_.status = 201;
  answer_.extra_headers = "X-First: 1\r\n";
  auto c = Waiting();
  const std::string first = Ready(*c);
  EXPECT_EQ(first.rfind("HTTP/1.1 201", 0), 0u);
  EXPECT_NE(first.find("X-First: 1\r\n"), std::string::npos);
  answer_ = Response();
  answer_.body = "second\n";
  c->Received("GET /w HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  const std::string second = Ready(*c);
  EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
  EXPECT_EQ(second.find("X-First"), std::string::npos) << second;
  EXPECT_NE(second.find("second\n"), std::string::npos);
}

TEST_F(PendingSparesTest, KeepsAtMostABoundedNumber) {
  std::vector<std::unique_ptr<Connection>> all;
  for (size_t i = 0; i < kKeptPending + 5; ++i) all.push_back(Waiting());
  for (auto& c : all) Ready(*c);
  EXPECT_EQ(spares_.kept(), kKeptPending);
  EXPECT_EQ(destroyed_, static_cast<int>(kKeptPending + 5));
}

TEST_F(PendingSparesTest, ABlockThatHeldALargeResponseIsFreed) {
  answer_.body.assign(kKeptPendingBytes + 1, 'x');
  auto c = Waiting();
  Ready(*c);
  EXPECT_EQ(spares_.kept(), 0u);
}

}  // namespace
}  // namespace gearbox
