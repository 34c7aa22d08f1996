// Well-formed requests, pipelined ones and the parser's state between
// them, each under every split (http_parser_harness.h).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/http/http_parser.h"
#include "daemon/request.h"
#include "tests/unit/daemon/http_parser_harness.h"

namespace gearbox::testing::http_parser {
namespace {

std::string_view Find(const Outcome& o, std::string_view name) {
  return FindHeader(o, name);
}

// The error reason of the verdict `input` gets under every split (with the
// default limits), after checking its status.
std::string ExpectErrorAnyLimits(std::string_view input, int status) {
  Trace run = PlayAllSplits(input);
  if (run.outcomes.empty()) return "no outcome";
  const Outcome& last = run.outcomes.back();
  EXPECT_EQ(last.status, Status::kError) << run;
  EXPECT_EQ(last.error_status, status) << run;
  return last.error_reason;
}

TEST(HttpParserTest, SimpleGet) {
  Trace run = PlayAllSplits("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  EXPECT_EQ(o.status, Status::kComplete);
  EXPECT_EQ(o.consumed, 27u);
  EXPECT_EQ(o.method, "GET");
  EXPECT_EQ(o.target, "/");
  EXPECT_EQ(o.path, "/");
  EXPECT_EQ(o.query, "");
  EXPECT_EQ(o.major, 1);
  EXPECT_EQ(o.minor, 1);
  EXPECT_EQ(o.body, "");
  EXPECT_TRUE(o.keep_alive);
  EXPECT_FALSE(o.is_head);
  EXPECT_EQ(run.continues, 0);
}

TEST(HttpParserTest, RequestViewsAreUsableAndHeadersCaseInsensitive) {
  const std::string input =
      "GET /x HTTP/1.1\r\n"
      "Host: example.com\r\n"
      "X-Custom:   padded value \t \r\n"
      "ACCEPT: text/html\r\n"
      "Empty:\r\n"
      "\r\n";
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete);
  ASSERT_EQ(o.headers.size(), 4u) << o;
  EXPECT_EQ(Find(o, "Host"), "example.com");
  EXPECT_EQ(Find(o, "X-Custom"), "padded value");
  EXPECT_EQ(Find(o, "ACCEPT"), "text/html");
  EXPECT_EQ(Find(o, "Empty"), "");

  // FindHeader on the live Request (views into the buffer).
  HttpRequestParser parser(HttpLimits{});
  Request req;
  ASSERT_EQ(parser.Parse(input, req).status, Status::kComplete);
  EXPECT_EQ(req.FindHeader("host"), "example.com");
  EXPECT_EQ(req.FindHeader("HOST"), "example.com");
  EXPECT_EQ(req.FindHeader("x-custom"), "padded value");
  EXPECT_EQ(req.FindHeader("Accept"), "text/html");
  EXPECT_EQ(req.FindHeader("missing"), "");
  EXPECT_EQ(req.FindHeader("Hos"), "");
  EXPECT_EQ(req.FindHeader("Hostx"), "");
}

TEST(HttpParserTest, FieldsAreTakenFromTheCheckedLinesInOrder) {
  // The names and OWS-trimmed values the line checks found, one per field
  // line, whatever their values: empty ones and all-OWS ones between others
  // (their neighbours keep their own names), 8-bit bytes, tabs.
  const std::string input =
      "GET /x HTTP/1.1\r\n"
      "A:\r\n"
      "B: \t \r\n"
      "Host:a.example\r\n"
      "C:\t\xe9t\xe9 x\t\r\n"
      "Content-Length: 2 \r\n"
      "\r\nhi";
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"A", ""},
      {"B", ""},
      {"Host", "a.example"},
      {"C", "\xe9t\xe9 x"},
      {"Content-Length", "2"}};
  EXPECT_EQ(o.headers, want) << o;
  EXPECT_EQ(o.target, "/x");
  EXPECT_EQ(o.body, "hi");
}

TEST(HttpParserTest, QueryStringSplit) {
  const std::string input =
      "GET /wait?ms=25&name=bob&flag&x=&ms=99 HTTP/1.1\r\nHost: a\r\n\r\n";
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete);
  EXPECT_EQ(o.target, "/wait?ms=25&name=bob&flag&x=&ms=99");
  EXPECT_EQ(o.path, "/wait");
  EXPECT_EQ(o.query, "ms=25&name=bob&flag&x=&ms=99");

  HttpRequestParser parser(HttpLimits{});
  Request req;
  ASSERT_EQ(parser.Parse(input, req).status, Status::kComplete);
  EXPECT_EQ(req.QueryParam("ms"), "25");  // the first one wins
  EXPECT_EQ(req.QueryParam("name"), "bob");
  EXPECT_EQ(req.QueryParam("flag"), "");
  EXPECT_EQ(req.QueryParam("x"), "");
  EXPECT_EQ(req.QueryParam("nope"), "");
  EXPECT_EQ(req.QueryParam("m"), "");
  EXPECT_EQ(req.QueryParam("nam"), "");
}

TEST(HttpParserTest, SetTargetWithoutQueryAndWithEmptyQuery) {
  Request req;
  req.SetTarget("/plain");
  EXPECT_EQ(req.path, "/plain");
  EXPECT_EQ(req.query, "");
  req.SetTarget("/q?");
  EXPECT_EQ(req.path, "/q");
  EXPECT_EQ(req.query, "");
  req.SetTarget("/q?a=1?b=2");
  EXPECT_EQ(req.path, "/q");
  EXPECT_EQ(req.query, "a=1?b=2");
  EXPECT_EQ(req.QueryParam("a"), "1?b=2");
}

TEST(HttpParserTest, AbsoluteFormRoutesOnPathAndTakesHostFromTarget) {
  // RFC 9112 3.2.2: a server MUST accept absolute-form, and then ignores the
  // Host field in favour of the target's authority.
  Trace run = PlayAllSplits(
      "GET http://other.example:8080/p?q=1 HTTP/1.1\r\nHost: t\r\n"
      "X-A: 1\r\n\r\n");
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete) << o;
  EXPECT_EQ(o.path, "/p");
  EXPECT_EQ(o.query, "q=1");
  ASSERT_EQ(o.headers.size(), 2u) << o;
  EXPECT_EQ(Find(o, "Host"), "other.example:8080");
  EXPECT_EQ(Find(o, "X-A"), "1");

  // HTTP/1.0 may omit Host: the target's authority becomes one.
  run = PlayAllSplits("GET https://h.example HTTP/1.0\r\n\r\n");
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/");  // an empty path means "/"
  EXPECT_EQ(run.outcomes[0].target, "/");
  EXPECT_EQ(Find(run.outcomes[0], "Host"), "h.example");
}

TEST(HttpParserTest, HostIsRequiredOnceAndValid) {
  // RFC 9112 3.2.
  EXPECT_EQ(ExpectErrorAnyLimits("GET / HTTP/1.1\r\n\r\n", 400), "no_host");
  EXPECT_EQ(
      ExpectErrorAnyLimits("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
      "bad_host");
  EXPECT_EQ(ExpectErrorAnyLimits("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
            "bad_host");
  Trace run = PlayAllSplits("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kComplete);
  run = PlayAllSplits("GET / HTTP/1.1\r\nHost:\r\n\r\n");  // empty: valid
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kComplete);
}

TEST(HttpParserTest, PostWithContentLength) {
  const std::string input =
      "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\n"
      "Content-Length: 11\r\n\r\nhello world";
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete);
  EXPECT_EQ(o.method, "POST");
  EXPECT_EQ(o.path, "/echo");
  EXPECT_EQ(o.body, "hello world");
  EXPECT_EQ(o.consumed, input.size());
  EXPECT_EQ(Find(o, "Content-Type"), "text/plain");
}

TEST(HttpParserTest, PostWithZeroContentLength) {
  Trace run = PlayAllSplits(
      "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kComplete);
  EXPECT_EQ(run.outcomes[0].body, "");
}

TEST(HttpParserTest, ChunkedBodyIsReassembled) {
  const std::string input =
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=val\r\nhello\r\n"
      "1\r\n \r\n"
      "b;ext\r\nworld again\r\n"
      "0\r\nX-Trailer: yes\r\n\r\n";
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete) << o;
  EXPECT_EQ(o.body, "hello world again");
  EXPECT_EQ(o.consumed, input.size());
  EXPECT_EQ(Find(o, "Transfer-Encoding"), "chunked");
  // RFC 9110 6.5.1: trailer fields must not be merged into the header section.
  EXPECT_EQ(Find(o, "X-Trailer"), "") << o;
  EXPECT_TRUE(o.keep_alive);
}

TEST(HttpParserTest, ChunkedSingleChunkAndEmptyBody) {
  Trace one = PlayAllSplits(
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\n\r\n");
  ASSERT_EQ(one.outcomes.size(), 1u) << one;
  EXPECT_EQ(one.outcomes[0].body, "abc");

  Trace empty = PlayAllSplits(
      "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\n");
  ASSERT_EQ(empty.outcomes.size(), 1u) << empty;
  EXPECT_EQ(empty.outcomes[0].status, Status::kComplete);
  EXPECT_EQ(empty.outcomes[0].body, "");
}

TEST(HttpParserTest, PipelinedRequestsAreConsumedOneAtATime) {
  const std::string a = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string b =
      "POST /b?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz";
  const std::string c =
      "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\nhi\r\n2\r\nyo\r\n0\r\n\r\n";
  const std::string d =
      "HEAD /d HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  Trace run = PlayAllSplits(a + b + c + d);
  ASSERT_EQ(run.outcomes.size(), 4u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/a");
  EXPECT_EQ(run.outcomes[0].consumed, a.size());
  EXPECT_EQ(run.outcomes[1].path, "/b");
  EXPECT_EQ(run.outcomes[1].query, "x=1");
  EXPECT_EQ(run.outcomes[1].body, "xyz");
  EXPECT_EQ(run.outcomes[1].consumed, b.size());
  EXPECT_EQ(run.outcomes[2].path, "/c");
  EXPECT_EQ(run.outcomes[2].body, "hiyo");
  EXPECT_EQ(run.outcomes[2].consumed, c.size());
  EXPECT_EQ(run.outcomes[3].path, "/d");
  EXPECT_TRUE(run.outcomes[3].is_head);
  EXPECT_FALSE(run.outcomes[3].keep_alive);
  EXPECT_EQ(run.outcomes[3].consumed, d.size());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(run.outcomes[i].keep_alive) << i;
}

TEST(HttpParserTest, PipelineStopsAtPartialRequest) {
  const std::string a = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string partial = "GET /b HTTP/1.1\r\nHo";
  Trace run = PlayAllSplits(a + partial);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kComplete);
  EXPECT_EQ(run.outcomes[0].consumed, a.size());
  EXPECT_EQ(run.outcomes[1].status, Status::kIncomplete);
  EXPECT_EQ(run.outcomes[1].consumed, partial.size());  // left in the buffer
}

TEST(HttpParserTest, InRequestAndInBody) {
  HttpRequestParser parser(HttpLimits{});
  Request req;
  EXPECT_FALSE(parser.InRequest());
  EXPECT_FALSE(parser.InBody());
  std::string buf = "POST / HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(parser.Parse(buf, req).status, Status::kIncomplete);
  EXPECT_TRUE(parser.InRequest());
  EXPECT_FALSE(parser.InBody());
  buf += "Content-Length: 4\r\n\r\nab";
  EXPECT_EQ(parser.Parse(buf, req).status, Status::kIncomplete);
  EXPECT_TRUE(parser.InRequest());
  EXPECT_TRUE(parser.InBody());
  buf += "cd";
  HttpRequestParser::Result r = parser.Parse(buf, req);
  ASSERT_EQ(r.status, Status::kComplete);
  EXPECT_EQ(req.body, "abcd");
  EXPECT_FALSE(parser.InRequest());  // idle again between requests
  EXPECT_FALSE(parser.InBody());
}

TEST(HttpParserTest, EmptyLinesBeforeARequestAreNotARequest) {
  // RFC 9112 2.2: a server SHOULD ignore empty lines before a request line
  // (some clients send a CRLF after a body); they do not start a request, so
  // the connection stays idle (idle timeout, not header timeout).
  HttpRequestParser parser(HttpLimits{});
  Request req;
  std::string buf = "\r\n\r";
  EXPECT_EQ(parser.Parse(buf, req).status, Status::kIncomplete);
  EXPECT_FALSE(parser.InRequest());
  buf += "\nG";
  EXPECT_EQ(parser.Parse(buf, req).status, Status::kIncomplete);
  EXPECT_TRUE(parser.InRequest());
  buf += "ET / HTTP/1.1\r\nHost: a\r\n\r\n";
  HttpRequestParser::Result r = parser.Parse(buf, req);
  ASSERT_EQ(r.status, Status::kComplete);
  EXPECT_EQ(r.consumed, buf.size());
  EXPECT_FALSE(parser.InRequest());
}

}  // namespace
}  // namespace gearbox::testing::http_parser
