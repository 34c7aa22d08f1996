// Limits, bad input and AppendError: what the codec answers, or that it
// closes silently, under every schedule (fastcgi_harness.h).
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/fastcgi/fastcgi_codec.h"
#include "tests/unit/fastcgi/fastcgi_harness.h"

namespace gearbox::testing::fastcgi_codec {
namespace {

// ---------------------------------------------------------------------------
// Limits: answered in the protocol, then the connection closes.

TEST(FastCgiCodecTest, ParamsOverMaxHeaderBytesIs431) {
  LimitsConfig limits = TestLimits();
  limits.max_header_bytes = 200;
  Params p = GetParams();
  p.emplace_back("HTTP_COOKIE", std::string(150, 'c'));
  Trace run = PlayAllSplits(Request1(5, p), limits);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kError);
  EXPECT_EQ(run.outcomes[0].error_status, 431);
  EXPECT_EQ(run.outcomes[0].error_reason, "header_too_large");
  bool terminated = false;
  const std::string reply = StdoutOf(Decode(run.out), 5, &terminated);
  EXPECT_TRUE(terminated);
  EXPECT_EQ(reply.rfind("Status: 431 Request Header Fields Too Large\r\n", 0),
            0u)
      << reply;

  // Split into small records: caught by the running total.
  std::string input = Begin(5);
  const std::string stream = ParamStream(p);
  for (size_t i = 0; i < stream.size(); i += 16) {
    input += Rec(kParams, 5, std::string_view(stream).substr(i, 16));
  }
  Trace small = PlayAllSplits(input, limits);
  ASSERT_EQ(small.outcomes.size(), 1u) << small;
  EXPECT_EQ(small.outcomes[0].error_status, 431);

  // A pair whose declared length alone cannot fit: refused before its bytes.
  std::string huge = Pair("HTTP_X", "");
  huge.resize(1);
  PutLength(huge, 1000000, true);
  Trace declared =
      PlayAllSplits(Begin(5) + Rec(kParams, 5, huge + "HTTP_X"), limits);
  ASSERT_EQ(declared.outcomes.size(), 1u) << declared;
  EXPECT_EQ(declared.outcomes[0].error_status, 431);
}

TEST(FastCgiCodecTest, BodyOverMaxBodyBytesIs413) {
  LimitsConfig limits = TestLimits();
  limits.max_body_bytes = 10;
  // Exactly at the limit is fine.
  Trace ok = PlayAllSplits(Request1(1, GetParams(), "0123456789"), limits);
  ASSERT_EQ(ok.outcomes.size(), 2u) << ok;
  EXPECT_EQ(ok.outcomes[0].body, "0123456789");

  Trace run =
      PlayAllSplits(Begin(1) + Stream(kParams, 1, ParamStream(GetParams())) +
                        Rec(kStdin, 1, "012345") + Rec(kStdin, 1, "6789A") +
                        Rec(kStdin, 1, ""),
                    limits);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kError);
  EXPECT_EQ(run.outcomes[0].error_status, 413);
  EXPECT_EQ(run.outcomes[0].error_reason, "body_too_large");
  bool terminated = false;
  const std::string reply = StdoutOf(Decode(run.out), 1, &terminated);
  EXPECT_EQ(reply.rfind("Status: 413 Content Too Large\r\n", 0), 0u) << reply;
  EXPECT_TRUE(terminated);

  // CONTENT_LENGTH announces too much: refused when PARAMS ends.
  Params p = GetParams();
  p[6].second = "11";
  Trace announced =
      PlayAllSplits(Begin(1) + Stream(kParams, 1, ParamStream(p)), limits);
  ASSERT_EQ(announced.outcomes.size(), 1u) << announced;
  EXPECT_EQ(announced.outcomes[0].error_status, 413);
  // Changed (issue 14): a CONTENT_LENGTH that does not fit in 64 bits was
  // 413 here; it is now 400, as the same Content-Length gets over HTTP (one
  // that fits but exceeds the limit stays 413, above).
  p[6].second = "99999999999999999999999";
  announced =
      PlayAllSplits(Begin(1) + Stream(kParams, 1, ParamStream(p)), limits);
  ASSERT_EQ(announced.outcomes.size(), 1u) << announced;
  EXPECT_EQ(announced.outcomes[0].error_status, 400);
}

// ---------------------------------------------------------------------------
// Bad input: closed silently.

void ExpectSilentError(const std::string& input, std::string_view reason,
                       const LimitsConfig& limits = TestLimits()) {
  Trace run = PlayAllSplits(input, limits);
  ASSERT_FALSE(run.outcomes.empty());
  const Outcome& o = Final(run);
  EXPECT_EQ(o.status, Status::kError) << run;
  EXPECT_EQ(o.error_status, 0);
  EXPECT_EQ(o.error_reason, reason);
}

TEST(FastCgiCodecTest, BadInputIsAnError) {
  // HTTP on the FastCGI socket: refused on the first byte.
  ExpectSilentError("GET / HTTP/1.1\r\nHost: a\r\n\r\n", "bad_version");
  {
    std::unique_ptr<ServerCodec> codec =
        MakeCodec(Protocol::kFastCgi, TestLimits());
    Request request;
    std::string out;
    EXPECT_EQ(codec->Parse("G", request, out).status, Status::kError);
  }
  std::string v2 = Begin(1);
  v2[0] = 2;
  ExpectSilentError(v2, "bad_version");
  std::string later = Request1(1, GetParams());
  later[Begin(1).size()] = 0;  // the PARAMS record's version
  ExpectSilentError(later, "bad_version");
  ExpectSilentError(Rec(kBegin, 1, std::string(9, '\1')), "bad_length");
  ExpectSilentError(Rec(kBegin, 1, ""), "bad_length");
  ExpectSilentError(Begin(1) + Rec(kStdout, 1, "x"), "unexpected_type");
  ExpectSilentError(Rec(kEnd, 3, std::string(8, '\0')), "unexpected_type");
  ExpectSilentError(Rec(200, 1, "x"), "unexpected_type");
  // A pair longer than the stream that carries it.
  ExpectSilentError(
      Begin(1) + Rec(kParams, 1, "\x05\x09HTTP_") + Rec(kParams, 1, ""),
      "bad_params");
  ExpectSilentError(Rec(kGetValues, 0, std::string("\x0e\x00\x46", 3)),
                    "bad_params");
  // Streams out of order, or the same id begun twice.
  ExpectSilentError(Begin(1) + Rec(kStdin, 1, "x"), "bad_order");
  ExpectSilentError(
      Begin(1) + Rec(kParams, 1, Pair("REQUEST_METHOD", "GET")) + Begin(1),
      "bad_order");
  ExpectSilentError(Begin(1) + Stream(kParams, 1, ParamStream(GetParams())) +
                        Rec(kParams, 1, ""),
                    "bad_order");
}

TEST(FastCgiCodecTest, UnboundedWindowIsAnError) {
  // Records for an id nobody began never complete a request; their bytes cannot
  // pile up without bound.
  LimitsConfig limits = TestLimits();
  limits.max_header_bytes = 100;
  limits.max_body_bytes = 100;
  std::string input;
  while (input.size() < (size_t{1} << 20) + 70000) {
    input += Rec(kStdin, 9, std::string(65535, 's'));
  }
  Trace run = PlayWholeAndBytewise(input, limits);
  EXPECT_EQ(Final(run).status, Status::kError);
  EXPECT_EQ(Final(run).error_reason, "too_large");
}

// ---------------------------------------------------------------------------
// AppendError (overload, timeouts).

TEST(FastCgiCodecTest, AppendErrorUsesTheActiveIdOrOne) {
  {
    std::unique_ptr<ServerCodec> codec =
        MakeCodec(Protocol::kFastCgi, TestLimits());
    std::string out;
    codec->AppendError(503, "Retry-After: 1\r\n", out);
    bool terminated = false;
    EXPECT_EQ(StdoutOf(Decode(out), 1, &terminated),
              "Status: 503 Service Unavailable\r\nContent-Type: "
              "text/plain\r\nContent-Length: 20\r\nRetry-After: 1\r\n\r\n"
              "Service Unavailable\n");
    EXPECT_TRUE(terminated);
  }
  {
    std::unique_ptr<ServerCodec> codec =
        MakeCodec(Protocol::kFastCgi, TestLimits());
    Request request;
    std::string out;
    std::string input =
        Begin(5) + Rec(kParams, 5, Pair("REQUEST_METHOD", "GET"));
    EXPECT_EQ(codec->Parse(input, request, out).status, Status::kIncomplete);
    codec->AppendError(408, {}, out);
    std::vector<OutRecord> records = Decode(out);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].id, 5);
    EXPECT_EQ(records[2], EndRecord(5, 0));
  }
}

}  // namespace
}  // namespace gearbox::testing::fastcgi_codec
