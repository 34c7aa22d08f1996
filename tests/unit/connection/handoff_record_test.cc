// A connection handed between processes (the prefork head guard and its
// children) without sockets: the sender's machine writes the codec's record
// of what it parsed (SaveParsed), the receiver's machine resumes from it
// (Adopt). A head is parsed once: the receiver starts in Phase::kBody, reads
// the body from where the sender stopped, and nothing the sender answered is
// answered again.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "daemon/connection/connection.h"
#include "daemon/fastcgi/fastcgi_protocol.h"
#include "daemon/fastcgi/fastcgi_writer.h"
#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using Kind = Interest::Kind;

class HandoffRecordTest : public testing::MachineTest {
 protected:
  HandoffRecordTest() {
    limits_.header_timeout = milliseconds(1000);
    limits_.body_timeout = milliseconds(2000);
    limits_.idle_timeout = milliseconds(3000);
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));
    routes.push_back(DefaultRoute("/echo", "echo"));
    Build(routes);
  }

  // The guard's machine: its codec stops at bodies.
  std::unique_ptr<Connection> Guard(Protocol protocol) {
    std::unique_ptr<ServerCodec> codec = MakeCodec(protocol, limits_);
    codec->StopAtBody();
    auto c = std::make_unique<Connection>(protocol, std::move(codec));
    c->Attach(&env_);
    c->Accepted(now_, 0);
    return c;
  }
  std::unique_ptr<Connection> Child(Protocol protocol) {
    return Open(protocol);
  }
  // What travels, as the channel carries it: the record, then the bytes
  // (copied: the sender is gone once it is sent).
  struct Travel {
    ConnectionProgress progress;
    std::string record;
    std::string bytes;
  };
  Travel Send(const Connection& from) {
    Travel t;
    t.progress = from.Progress();
    t.bytes = std::string(from.SaveParsed(t.record));
    return t;
  }
  std::unique_ptr<Connection> Receive(const Travel& t, Protocol protocol,
                                      bool stop_at_body = false) {
    std::unique_ptr<ServerCodec> codec = MakeCodec(protocol, limits_);
    if (stop_at_body) codec->StopAtBody();
    auto c = std::make_unique<Connection>(protocol, std::move(codec));
    c->Attach(&env_);
    c->Adopt(t.progress, t.record, t.bytes);
    return c;
  }
  // Processes what is buffered and returns what the machine wants written.
  std::string Run(Connection& c) {
    while (c.Next(now_).kind == Kind::kProcess) c.Process(now_);
    std::string out(c.pending_out());
    c.Sent(out.size(), now_);
    return out;
  }
  WorkerStats& stats() { return stats_->Slot(0); }
};

TEST_F(HandoffRecordTest, HttpHeadRecordStandsForTheHeadAlone) {
  auto guard = Guard(Protocol::kHttp);
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: a\r\nX-Pad:  spaced \r\n"
      "Content-Length: 10\r\n\r\n";
  guard->Received(head + "01234", now_);
  ASSERT_EQ(guard->phase(), Phase::kBody);
  EXPECT_EQ(Run(*guard), "");  // nothing served, nothing answered
  Travel t = Send(*guard);
  EXPECT_EQ(t.bytes, "01234");  // the head travels parsed, not as bytes
  EXPECT_FALSE(t.record.empty());
  EXPECT_LE(t.record.size(), head.size() + kHeadRecordOverhead);
  EXPECT_EQ(t.progress.deadline, now_ + limits_.body_timeout);

  auto child = Receive(t, Protocol::kHttp);
  EXPECT_EQ(child->phase(), Phase::kBody);  // not parsed again
  EXPECT_EQ(child->deadline(), now_ + limits_.body_timeout);
  EXPECT_EQ(Run(*child), "");  // half the body: it waits for the rest
  EXPECT_EQ(child->Next(now_).kind, Kind::kRead);
  child->Received("56789", now_);
  const std::string out = Run(*child);
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - 10), "0123456789");
  EXPECT_EQ(request_.FindHeader("x-pad"), "spaced");
  EXPECT_EQ(request_.method, "POST");
  EXPECT_EQ(stats().requests.load(), 1u);
}

TEST_F(HandoffRecordTest, HttpChunkedBodyResumesAfterTheHead) {
  auto guard = Guard(Protocol::kHttp);
  guard->Received(
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n",
      now_);
  Travel t = Send(*guard);
  EXPECT_EQ(t.bytes, "3\r\nabc\r\n");
  auto child = Receive(t, Protocol::kHttp);
  child->Received("2\r\nde\r\n0\r\n\r\n", now_);
  const std::string out = Run(*child);
  EXPECT_EQ(out.substr(out.size() - 5), "abcde") << out;
}

TEST_F(HandoffRecordTest, PipelinedRequestsAfterAHandedOffHeadAreServed) {
  auto guard = Guard(Protocol::kHttp);
  const std::string get = "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";
  guard->Received(get + get + get, now_);
  ASSERT_EQ(guard->phase(), Phase::kBody);
  Travel t = Send(*guard);
  EXPECT_EQ(t.bytes, get + get);  // the first head travels as its record
  auto child = Receive(t, Protocol::kHttp);
  const std::string out = Run(*child);
  size_t responses = 0;
  for (size_t at = out.find("HTTP/1.1 200"); at != std::string::npos;
       at = out.find("HTTP/1.1 200", at + 1))
    ++responses;
  EXPECT_EQ(responses, 3u) << out;
  EXPECT_EQ(stats().requests.load(), 3u);
  EXPECT_EQ(child->phase(), Phase::kIdle);
}

TEST_F(HandoffRecordTest, HttpPartialHeadTravelsAsBytes) {
  auto child = Child(Protocol::kHttp);
  child->Received("GET /hello HTTP/1.1\r\nHo", now_);
  Travel t = Send(*child);
  EXPECT_TRUE(t.record.empty());
  EXPECT_EQ(t.bytes, "GET /hello HTTP/1.1\r\nHo");
  auto guard = Receive(t, Protocol::kHttp, /*stop_at_body=*/true);
  EXPECT_EQ(guard->phase(), Phase::kHead);
  EXPECT_EQ(guard->deadline(), now_ + limits_.header_timeout);
  guard->Received("st: a\r\n\r\n", now_);
  EXPECT_EQ(guard->phase(), Phase::kBody);
  Travel back = Send(*guard);
  EXPECT_TRUE(back.bytes.empty());
  auto served = Receive(back, Protocol::kHttp);
  const std::string out = Run(*served);
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  EXPECT_EQ(stats().requests.load(), 1u);
}

std::string Pair(std::string_view name, std::string_view value) {
  std::string out;
  out.push_back(static_cast<char>(name.size()));
  out.push_back(static_cast<char>(value.size()));
  return out.append(name).append(value);
}

std::string Record(uint8_t type, uint16_t id, std::string_view body) {
  std::string out;
  fcgi::AppendRecord(out, type, id, body);
  return out;
}

// How many records of `type` are in `out`.
int CountRecords(std::string_view out, uint8_t type) {
  int n = 0;
  while (out.size() >= fcgi::kHeaderSize) {
    const fcgi::RecordHeader h = fcgi::DecodeHeader(out.data());
    n += h.type == type ? 1 : 0;
    out.remove_prefix(std::min(
        out.size(), fcgi::kHeaderSize + h.content_length + h.padding_length));
  }
  return n;
}

// The slow FastCGI client of the integration suite, step by step: a
// management record, BEGIN_REQUEST and half the PARAMS reach a child, which
// parks the connection; the guard reads the rest of the PARAMS; the child
// that takes it back reads STDIN. GET_VALUES is answered once, by the child
// that read it.
TEST_F(HandoffRecordTest, FastCgiStateTravelsWholeAndAnswersOnce) {
  const std::string params =
      Pair("REQUEST_METHOD", "POST") + Pair("REQUEST_URI", "/echo") +
      Pair("SERVER_PROTOCOL", "HTTP/1.1") + Pair("CONTENT_LENGTH", "4");
  const size_t half = params.size() / 2;
  const std::string begin("\x00\x01\x01\x00\x00\x00\x00\x00",
                          fcgi::kBeginRequestBodySize);

  auto first = Child(Protocol::kFastCgi);
  first->Received(Record(fcgi::kGetValues, 0, Pair("FCGI_MPXS_CONNS", "")) +
                      Record(fcgi::kBeginRequest, 1, begin) +
                      Record(fcgi::kParams, 1, params.substr(0, half)),
                  now_);
  const std::string first_out = Run(*first);
  EXPECT_EQ(CountRecords(first_out, fcgi::kGetValuesResult), 1);
  Travel park = Send(*first);
  EXPECT_TRUE(park.bytes.empty());  // every byte was parsed: none re-read

  auto guard = Receive(park, Protocol::kFastCgi, /*stop_at_body=*/true);
  EXPECT_EQ(guard->phase(), Phase::kHead);
  guard->Received(Record(fcgi::kParams, 1, params.substr(half)) +
                      Record(fcgi::kParams, 1, "") +
                      Record(fcgi::kStdin, 1, "ab"),
                  now_);
  EXPECT_EQ(guard->phase(), Phase::kBody);
  EXPECT_EQ(Run(*guard), "");
  Travel back = Send(*guard);
  EXPECT_EQ(back.bytes, Record(fcgi::kStdin, 1, "ab"));

  auto child = Receive(back, Protocol::kFastCgi);
  EXPECT_EQ(child->phase(), Phase::kBody);
  EXPECT_EQ(Run(*child), "");
  child->Received(Record(fcgi::kStdin, 1, "cd") + Record(fcgi::kStdin, 1, ""),
                  now_);
  const std::string out = Run(*child);
  EXPECT_EQ(CountRecords(out, fcgi::kGetValuesResult), 0);
  EXPECT_EQ(CountRecords(out, fcgi::kEndRequest), 1);
  EXPECT_NE(out.find("abcd"), std::string::npos);
  EXPECT_EQ(stats().requests.load(), 1u);
}

// A child parks whatever part of the head it has (a split anywhere before
// the head's end); the guard reads the rest and hands the connection back.
// Every split: one response, the body whole, every reply sent once.
TEST_F(HandoffRecordTest, EverySplitOfTheHeadResumesOnce) {
  const std::string params = Pair("REQUEST_METHOD", "POST") +
                             Pair("REQUEST_URI", "/echo") +
                             Pair("SERVER_PROTOCOL", "HTTP/1.1");
  const std::string begin("\x00\x01\x01\x00\x00\x00\x00\x00",
                          fcgi::kBeginRequestBodySize);
  const std::string fastcgi =
      Record(fcgi::kGetValues, 0, Pair("FCGI_MAX_CONNS", "")) +
      Record(fcgi::kBeginRequest, 1, begin) + Record(fcgi::kParams, 1, params) +
      Record(fcgi::kParams, 1, "") + Record(fcgi::kStdin, 1, "body!") +
      Record(fcgi::kStdin, 1, "");
  const std::string http =
      "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nbody!";
  for (Protocol protocol : {Protocol::kHttp, Protocol::kFastCgi}) {
    const std::string& input = protocol == Protocol::kHttp ? http : fastcgi;
    int resumed = 0;
    for (size_t k = 1; k < input.size(); ++k) {
      SCOPED_TRACE(std::to_string(k));
      auto first = Child(protocol);
      first->Received(input.substr(0, k), now_);
      std::string out = Run(*first);
      if (first->phase() != Phase::kHead && first->phase() != Phase::kFresh)
        continue;  // a child parks heads only
      auto guard = Receive(Send(*first), protocol, /*stop_at_body=*/true);
      guard->Received(input.substr(k), now_);
      ASSERT_EQ(guard->phase(), Phase::kBody);
      out += Run(*guard);
      auto child = Receive(Send(*guard), protocol);
      out += Run(*child);
      EXPECT_EQ(child->phase(), Phase::kIdle);
      if (protocol == Protocol::kHttp) {
        EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
      } else {
        EXPECT_EQ(CountRecords(out, fcgi::kGetValuesResult), 1);
        EXPECT_EQ(CountRecords(out, fcgi::kEndRequest), 1);
      }
      EXPECT_NE(out.find("body!"), std::string::npos) << out;
      ++resumed;
    }
    EXPECT_GT(resumed, 10);
  }
}

TEST_F(HandoffRecordTest, RecordOfAnotherProtocolIsRefusedAndCloses) {
  auto guard = Guard(Protocol::kHttp);
  guard->Received("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n", now_);
  Travel t = Send(*guard);
  auto child = Receive(t, Protocol::kFastCgi);
  EXPECT_EQ(child->Next(now_).kind, Kind::kClose);
  EXPECT_EQ(stats().bad_input.load(), 1u);
}

}  // namespace
}  // namespace gearbox
