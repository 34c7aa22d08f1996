// The connection state machine's bounds on the client, with a clock the test
// moves by hand: header_timeout (from accept, and per head after idle),
// body_timeout, idle_timeout between keep-alive requests, and send_timeout
// on a write the socket stops taking.
#include <gtest/gtest.h>

#include <string>

#include "daemon/connection/connection.h"
#include "tests/unit/connection/connection_fixture.h"

namespace gearbox {
namespace {

using testing::ConnectionTest;

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

}  // namespace
}  // namespace gearbox
