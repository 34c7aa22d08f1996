// Lingering close in the state machine: after bad input is answered, the
// connection reads and drops what the client still sends until it closes or
// lingering_timeout passes, so the close meets no unread input (which makes
// the kernel reset the connection, and can destroy the answer).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "daemon/connection/connection.h"
#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using Kind = Interest::Kind;

class LingerTest : public testing::MachineTest {
 protected:
  LingerTest() {
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));
    Build(routes);
  }
};

constexpr std::string_view kHello = "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";
constexpr std::string_view kBadHead =
    "POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n";

// The client may still be sending (the body of the request it got 400 for):
// once the answer is out, the write side is shut and its bytes are dropped
// until it closes, so the close meets no unread input.
TEST_F(LingerTest, BadInputLingersAfterTheAnswerUntilThePeerCloses) {
  limits_.lingering_timeout = milliseconds(500);
  auto c = Open();
  c->Received(kBadHead, now_);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);  // the answer goes first
  EXPECT_EQ(Drain(*c).rfind("HTTP/1.1 400", 0), 0u);
  Interest i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kRead);
  EXPECT_TRUE(i.shut_write);
  EXPECT_EQ(i.deadline, now_ + milliseconds(500));
  EXPECT_EQ(c->phase(), Phase::kLinger);
  c->WriteShut();
  EXPECT_FALSE(c->Next(now_).shut_write);
  const uint64_t in = stats().bytes_in.load();
  c->Received(kHello, now_);  // dropped, not served
  std::memcpy(c->ReadSpace(5), "hello", 5);
  c->Commit(5, now_);
  EXPECT_EQ(stats().bytes_in.load(), in + kHello.size() + 5);
  EXPECT_FALSE(c->has_input());
  EXPECT_TRUE(c->pending_out().empty());
  EXPECT_EQ(stats().requests.load(), 0u);  // the late GET was not served
  EXPECT_EQ(c->Next(now_).kind, Kind::kRead);
  c->PeerClosed();
  i = c->Next(now_);
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_EQ(i.reason, CloseReason::kError);  // closed for its bad input
  c->CountClosed();
  EXPECT_EQ(closed(CloseReason::kError), 1u);
  EXPECT_EQ(closed(CloseReason::kClient), 0u);
}

TEST_F(LingerTest, LingerEndsAtLingeringTimeout) {
  limits_.lingering_timeout = milliseconds(500);
  auto c = Open();
  c->Received(kBadHead, now_);
  Drain(*c);
  EXPECT_EQ(c->Next(now_).kind, Kind::kRead);
  c->WriteShut();
  c->DeadlinePassed(now_ + milliseconds(499));
  EXPECT_EQ(c->Next(now_).kind, Kind::kRead);
  c->DeadlinePassed(now_ + milliseconds(500));
  const Interest i = c->Next(now_ + milliseconds(500));
  EXPECT_EQ(i.kind, Kind::kClose);
  EXPECT_EQ(i.reason, CloseReason::kError);
}

TEST_F(LingerTest, ZeroLingeringTimeoutClosesAtOnce) {
  limits_.lingering_timeout = milliseconds(0);
  auto c = Open();
  c->Received(kBadHead, now_);
  Drain(*c);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);
}

TEST_F(LingerTest, ServerCloseAfterAResponseDoesNotLinger) {
  auto c = Open();
  c->Received("GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
              now_);
  Drain(*c);
  EXPECT_EQ(c->Next(now_).kind, Kind::kClose);
}

}  // namespace
}  // namespace gearbox
