// Well-formed requests: params, bodies, record framing and padding, and the
// responses written back, each under every schedule (fastcgi_harness.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/fastcgi/fastcgi_codec.h"
#include "tests/unit/fastcgi/fastcgi_harness.h"

namespace gearbox::testing::fastcgi_codec {
namespace {

std::string ExpectedHead(size_t length, std::string_view type = "text/plain") {
  return "Status: 200 OK\r\nContent-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

TEST(FastCgiCodecTest, SimpleGet) {
  const std::string input = Request1(1, GetParams("/hello?x=1"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  const Outcome& o = run.outcomes[0];
  EXPECT_EQ(o.status, Status::kComplete);
  EXPECT_EQ(o.consumed, input.size());
  EXPECT_EQ(o.method, "GET");
  EXPECT_EQ(o.target, "/hello?x=1");
  EXPECT_EQ(o.path, "/hello");
  EXPECT_EQ(o.query, "x=1");
  EXPECT_EQ(o.major, 1);
  EXPECT_EQ(o.minor, 1);
  EXPECT_TRUE(o.keep_alive);
  EXPECT_FALSE(o.is_head);
  EXPECT_FALSE(o.close);
  // Empty CONTENT_TYPE / CONTENT_LENGTH (nginx sends them so) are not headers.
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"User-Agent", "curl/8.0"}, {"X-Request-Id", "abc"}};
  EXPECT_EQ(o.headers, headers);
  EXPECT_EQ(o.body, "");
  EXPECT_FALSE(Final(run).in_request);

  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 3u);
  const std::string body = "GET /hello?x=1 path=/hello query=x=1 body=";
  EXPECT_EQ(records[0],
            (OutRecord{kStdout, 1, ExpectedHead(body.size()) + body}));
  EXPECT_EQ(records[1], (OutRecord{kStdout, 1, ""}));
  EXPECT_EQ(records[2], EndRecord(1, 0));
}

TEST(FastCgiCodecTest, PostBodyAcrossStdinRecords) {
  Params p = {{"REQUEST_METHOD", "POST"},
              {"REQUEST_URI", "/echo"},
              {"CONTENT_TYPE", "application/json"},
              {"CONTENT_LENGTH", "13"}};
  const std::string input = Begin(3) + Stream(kParams, 3, ParamStream(p)) +
                            Stream(kStdin, 3, "{\"a\": \"bcd\"}\n", 5);
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  const Outcome& o = run.outcomes[0];
  EXPECT_EQ(o.method, "POST");
  EXPECT_EQ(o.path, "/echo");
  EXPECT_EQ(o.query, "");
  EXPECT_EQ(o.body, "{\"a\": \"bcd\"}\n");
  EXPECT_EQ(FindHeader(o, "Content-Type"), "application/json");
  EXPECT_EQ(FindHeader(o, "Content-Length"), "13");
  std::vector<OutRecord> records = Decode(run.out);
  bool terminated = false;
  EXPECT_NE(StdoutOf(records, 3, &terminated).find("body={\"a\""),
            std::string::npos);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, KeepConnOffClosesAfterResponse) {
  const std::string input = Request1(1, GetParams(), "", /*flags=*/0);
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_FALSE(run.outcomes[0].keep_alive);
  EXPECT_TRUE(run.outcomes[0].close);
  bool terminated = false;
  StdoutOf(Decode(run.out), 1, &terminated);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, KeepConnOnServesPipelinedRequests) {
  const std::string input = Request1(1, GetParams("/a")) +
                            Request1(1, GetParams("/b?q")) +
                            Request1(2, GetParams("/c"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 4u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/a");
  EXPECT_EQ(run.outcomes[1].path, "/b");
  EXPECT_EQ(run.outcomes[1].query, "q");
  EXPECT_EQ(run.outcomes[2].path, "/c");
  EXPECT_EQ(run.outcomes[0].consumed + run.outcomes[1].consumed +
                run.outcomes[2].consumed,
            input.size());
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 9u);
  EXPECT_EQ(records[8], EndRecord(2, 0));
}

TEST(FastCgiCodecTest, OneAndFourByteLengths) {
  const std::string long_name = "HTTP_X_" + std::string(194, 'L');  // 201
  const std::string long_value(300, 'v');
  std::string params =
      ParamStream({{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/hello"}});
  params += Pair(long_name, long_value);  // both 4-byte lengths
  params += Pair("HTTP_SHORT", "s", /*four_name=*/true, /*four_value=*/true);
  params += Pair("HTTP_EMPTY", "");
  params += Pair(std::string(127, 'A'), std::string(128, 'b'));  // 1 and 4
  const std::string input =
      Begin(1) + Stream(kParams, 1, params) + Stream(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete);
  const std::string header_name =
      "X-" + std::string(1, 'L') + std::string(193, 'l');  // "X-Lllll..."
  EXPECT_EQ(FindHeader(o, header_name), long_value);
  EXPECT_EQ(FindHeader(o, "Short"), "s");
  ASSERT_EQ(o.headers.size(), 3u);
  EXPECT_EQ(o.headers[2].first, "Empty");
  EXPECT_EQ(o.headers[2].second, "");
}

TEST(FastCgiCodecTest, PairSplitAcrossParamsRecords) {
  Params p = GetParams("/split?me=1");
  p.emplace_back("HTTP_X_LONG", std::string(200, 'x'));
  const std::string stream = ParamStream(p);
  Trace reference = Play(Request1(1, p), {Request1(1, p).size()}, TestLimits(),
                         SayWhatWasSeen);
  ASSERT_EQ(reference.outcomes.size(), 2u) << reference;
  ASSERT_EQ(reference.outcomes[0].status, Status::kComplete);
  // Every cut of the PARAMS stream into two records (lengths, names and values
  // all end up straddling), then one record per byte.
  for (size_t k = 1; k < stream.size(); ++k) {
    const std::string input =
        Begin(1) + Rec(kParams, 1, std::string_view(stream).substr(0, k)) +
        Rec(kParams, 1, std::string_view(stream).substr(k)) +
        Rec(kParams, 1, "") + Stream(kStdin, 1, "");
    Trace run = Play(input, {input.size()}, TestLimits(), SayWhatWasSeen);
    ASSERT_EQ(run.outcomes.size(), 2u) << "cut " << k << "\n" << run;
    Outcome o = run.outcomes[0];
    o.consumed =
        reference.outcomes[0].consumed;  // framing differs, nothing else
    EXPECT_EQ(o, reference.outcomes[0]) << "cut " << k;
    EXPECT_EQ(run.out, reference.out) << "cut " << k;
  }
  std::string input = Begin(1);
  for (char c : stream) input += Rec(kParams, 1, std::string_view(&c, 1));
  input += Rec(kParams, 1, "") + Stream(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].headers, reference.outcomes[0].headers);
  EXPECT_EQ(run.out, reference.out);
}

TEST(FastCgiCodecTest, PaddingBothWays) {
  const std::string params = ParamStream(GetParams("/pad"));
  // No padding at all (lengths not multiples of 8), odd padding, and the
  // maximum; on every record, including the empty ones that end the streams.
  for (int pad : {0, 3, 255}) {
    const std::string input =
        Rec(kBegin, 1, std::string("\0\1\1\0\0\0\0\0", 8), pad) +
        Rec(kParams, 1, params, pad) + Rec(kParams, 1, "", pad) +
        Rec(kStdin, 1, "abcde", pad) + Rec(kStdin, 1, "", pad);
    Trace run = PlayAllSplits(input);
    ASSERT_EQ(run.outcomes.size(), 2u) << "pad " << pad << "\n" << run;
    EXPECT_EQ(run.outcomes[0].consumed, input.size()) << "pad " << pad;
    EXPECT_EQ(run.outcomes[0].body, "abcde");
    EXPECT_EQ(run.outcomes[0].path, "/pad");
    EXPECT_FALSE(Final(run).in_request);
  }
}

TEST(FastCgiCodecTest, LargeResponseSplitIntoMaxRecords) {
  static std::string big;
  big.clear();
  for (size_t i = 0; i < 200000; ++i)
    big.push_back(static_cast<char>('a' + i % 26));
  Trace run = Play(Request1(9, GetParams("/big")),
                   {Request1(9, GetParams("/big")).size()}, TestLimits(),
                   [](const Request&) {
                     Response r;
                     r.body = big;
                     return r;
                   });
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  std::vector<OutRecord> records = Decode(run.out);
  const std::string expected = ExpectedHead(big.size()) + big;
  ASSERT_EQ(records.size(), 4u + 2u);  // ceil(200068 / 65535) = 4
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(records[i].type, kStdout);
    EXPECT_EQ(records[i].content.size(), 65535u);
  }
  EXPECT_EQ(records[3].content.size(), expected.size() - 3 * 65535);
  bool terminated = false;
  EXPECT_EQ(StdoutOf(records, 9, &terminated), expected);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, HeadHasLengthButNoBody) {
  Params p = GetParams("/hello");
  p[0].second = "HEAD";
  Trace run = PlayAllSplits(Request1(1, p));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_TRUE(run.outcomes[0].is_head);
  const std::string body = "HEAD /hello path=/hello query= body=";
  EXPECT_EQ(StdoutOf(Decode(run.out), 1), ExpectedHead(body.size()));
}

TEST(FastCgiCodecTest, NoContentResponseHasNoEntityHeaders) {
  Trace run = Play(Request1(1, GetParams()), {Request1(1, GetParams()).size()},
                   TestLimits(), [](const Request&) {
                     Response r;
                     r.status = 204;
                     r.body = "ignored";
                     r.extra_headers = "X-A: b\r\n";
                     return r;
                   });
  EXPECT_EQ(StdoutOf(Decode(run.out), 1),
            "Status: 204 No Content\r\nX-A: b\r\n\r\n");
}

TEST(FastCgiCodecTest, ResponseCloseAndCallerClose) {
  const std::string input = Request1(1, GetParams());
  Trace run = Play(input, {input.size()}, TestLimits(), [](const Request&) {
    Response r;
    r.close = true;
    return r;
  });
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_TRUE(run.outcomes[0].close);

  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  ASSERT_EQ(codec->Parse(input, request, out).status, Status::kComplete);
  EXPECT_TRUE(codec->AppendResponse(request, Response{}, /*close=*/true, out));
}

// An answer rendered before the request existed (prefork's cut-off 504) is
// stamped with the id of the request the codec parsed last: every record.
TEST(FastCgiCodecTest, StampAnswerFillsInTheRequestId) {
  std::unique_ptr<ServerCodec> ahead =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Response timeout;
  timeout.status = 504;
  timeout.body = std::string(70000, 'x');  // two STDOUT records of content
  std::string answer;
  ahead->AppendResponse(gearbox::Request{}, timeout, /*close=*/true, answer);

  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  const std::string input = Request1(0x1234, GetParams());
  gearbox::Request request;
  std::string out;
  ASSERT_EQ(codec->Parse(input, request, out).status, Status::kComplete);
  codec->StampAnswer(answer, 0);
  std::vector<uint8_t> types;
  for (size_t at = 0; at + 8 <= answer.size();) {
    const auto* h = reinterpret_cast<const unsigned char*>(answer.data() + at);
    EXPECT_EQ(h[2] << 8 | h[3], 0x1234) << "record " << types.size();
    types.push_back(h[1]);
    at += 8 + (size_t{h[4]} << 8 | h[5]) + h[6];
  }
  EXPECT_EQ(types, (std::vector<uint8_t>{kStdout, kStdout, kStdout, kEnd}));
}

TEST(FastCgiCodecTest, ScriptNameAndPathInfoWithoutRequestUri) {
  Params p = {{"REQUEST_METHOD", "GET"},
              {"SCRIPT_NAME", "/app"},
              {"PATH_INFO", "/x/y"},
              {"QUERY_STRING", "k=v"}};
  Trace run = PlayAllSplits(Request1(1, p));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/app/x/y");
  EXPECT_EQ(run.outcomes[0].query, "k=v");
  EXPECT_EQ(run.outcomes[0].target, "/app/x/y?k=v");
}

}  // namespace
}  // namespace gearbox::testing::fastcgi_codec
