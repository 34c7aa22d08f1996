// Expect: 100-continue: when the parser asks for it, and how often under
// every split (http_parser_harness.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/http/http_parser.h"
#include "daemon/request.h"
#include "tests/unit/daemon/http_parser_harness.h"

namespace gearbox::testing::http_parser {
namespace {

TEST(HttpParserTest, ExpectContinueIsSignalledOnceWhenHeadArrivesAlone) {
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n"
      "Content-Length: 5\r\n\r\n";
  const std::string input = head + "hello";
  HttpRequestParser parser(HttpLimits{});
  Request req;
  std::string buf = head;
  HttpRequestParser::Result r = parser.Parse(buf, req);
  EXPECT_EQ(r.status, Status::kIncomplete);
  EXPECT_TRUE(r.send_continue);
  r = parser.Parse(buf, req);  // nothing new: no second Continue
  EXPECT_EQ(r.status, Status::kIncomplete);
  EXPECT_FALSE(r.send_continue);
  buf += "he";
  r = parser.Parse(buf, req);
  EXPECT_EQ(r.status, Status::kIncomplete);
  EXPECT_FALSE(r.send_continue);
  buf += "llo";
  r = parser.Parse(buf, req);
  ASSERT_EQ(r.status, Status::kComplete);
  EXPECT_FALSE(r.send_continue);
  EXPECT_EQ(req.body, "hello");

  // Every schedule agrees on the request; Continue is signalled exactly once
  // when some call saw the whole head without the whole body, and never
  // otherwise.
  Trace whole = PlayAllSplits(input);
  ASSERT_EQ(whole.outcomes.size(), 1u) << whole;
  EXPECT_EQ(whole.outcomes[0].body, "hello");
  EXPECT_EQ(whole.continues, 0);  // the body came with the head: nothing to ask
  for (size_t k = 1; k < input.size(); ++k) {
    Trace split = Play(input, {k, input.size()}, HttpLimits{});
    EXPECT_EQ(split.continues, k >= head.size() ? 1 : 0) << "split at " << k;
  }
  std::vector<size_t> bytewise;
  for (size_t k = 1; k <= input.size(); ++k) bytewise.push_back(k);
  EXPECT_EQ(Play(input, bytewise, HttpLimits{}).continues, 1);
}

TEST(HttpParserTest, ExpectContinueWithoutBodyOrForChunked) {
  // No body follows: nothing to continue.
  HttpRequestParser parser(HttpLimits{});
  Request req;
  HttpRequestParser::Result r = parser.Parse(
      "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", req);
  EXPECT_EQ(r.status, Status::kComplete);
  EXPECT_FALSE(r.send_continue);

  // Chunked body: Continue after the head.
  HttpRequestParser chunked(HttpLimits{});
  std::string buf =
      "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  r = chunked.Parse(buf, req);
  EXPECT_EQ(r.status, Status::kIncomplete);
  EXPECT_TRUE(r.send_continue);
  buf += "1\r\nz\r\n0\r\n\r\n";
  r = chunked.Parse(buf, req);
  ASSERT_EQ(r.status, Status::kComplete);
  EXPECT_EQ(req.body, "z");
}

TEST(HttpParserTest, ExpectContinueResetsForTheNextRequest) {
  HttpRequestParser parser(HttpLimits{});
  Request req;
  const std::string head =
      "POST / HTTP/1.1\r\nHost: a\r\nExpect: "
      "100-continue\r\nContent-Length: 1\r\n\r\n";
  for (int i = 0; i < 2; ++i) {
    std::string buf = head;
    HttpRequestParser::Result r = parser.Parse(buf, req);
    EXPECT_TRUE(r.send_continue) << i;
    buf += "x";
    r = parser.Parse(buf, req);
    ASSERT_EQ(r.status, Status::kComplete) << i;
    EXPECT_EQ(r.consumed, buf.size());
  }
}

TEST(HttpParserTest, ExpectContinueWithOversizeBodyIsRefusedFirst) {
  HttpRequestParser parser(HttpLimits{256, 64});
  Request req;
  HttpRequestParser::Result r = parser.Parse(
      "POST / HTTP/1.1\r\nHost: a\r\nExpect: "
      "100-continue\r\nContent-Length: 65\r\n\r\n",
      req);
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.error_status, 413);
  EXPECT_FALSE(r.send_continue);
}

}  // namespace
}  // namespace gearbox::testing::http_parser
