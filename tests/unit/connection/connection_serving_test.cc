// The connection state machine without sockets: bytes in, interest and bytes
// out, with a clock the test moves by hand. Serving and closing: keep-alive,
// pipelining, a head handed off, bad input and limits, the ways a connection
// is closed (Connection: close, the drain, refusal, the model's say).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/connection/connection.h"
#include "tests/unit/connection/connection_fixture.h"

namespace gearbox {
namespace {

using testing::ConnectionTest;

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
