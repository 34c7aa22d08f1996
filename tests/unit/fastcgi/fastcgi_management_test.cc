// Management records, roles, multiplexing, abort; and the state the
// connection's timeouts read (fastcgi_harness.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/fastcgi/fastcgi_codec.h"
#include "tests/unit/fastcgi/fastcgi_harness.h"

namespace gearbox::testing::fastcgi_codec {
namespace {

std::string GetValuesResult(const Params& p) { return ParamStream(p); }

TEST(FastCgiCodecTest, GetValuesThenRequest) {
  const std::string ask = ParamStream({{"FCGI_MAX_CONNS", ""},
                                       {"FCGI_UNKNOWN_THING", ""},
                                       {"FCGI_MPXS_CONNS", ""},
                                       {"FCGI_MAX_CONNS", ""}});
  const std::string input =
      Rec(kGetValues, 0, ask) + Request1(1, GetParams("/after"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/after");
  EXPECT_EQ(run.outcomes[0].consumed, input.size());
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0],
            (OutRecord{kGetValuesResult, 0,
                       GetValuesResult({{"FCGI_MAX_CONNS", "7"},
                                        {"FCGI_MPXS_CONNS", "0"}})}));
  EXPECT_EQ(records[3], EndRecord(1, 0));

  Trace reqs = PlayAllSplits(Rec(kGetValues, 0, Pair("FCGI_MAX_REQS", "")));
  EXPECT_EQ(Decode(reqs.out),
            (std::vector<OutRecord>{
                {kGetValuesResult, 0, Pair("FCGI_MAX_REQS", "7")}}));
  EXPECT_FALSE(Final(reqs).in_request);  // a management record is no request

  Trace none = PlayAllSplits(Rec(kGetValues, 0, ""));
  EXPECT_EQ(Decode(none.out),
            (std::vector<OutRecord>{{kGetValuesResult, 0, ""}}));
}

TEST(FastCgiCodecTest, GetValuesDuringRequest) {
  const std::string input = Begin(1) +
                            Rec(kParams, 1, Pair("REQUEST_METHOD", "GET")) +
                            Rec(kGetValues, 0, Pair("FCGI_MPXS_CONNS", "")) +
                            Rec(kParams, 1, Pair("REQUEST_URI", "/x")) +
                            Rec(kParams, 1, "") + Stream(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/x");
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].type, kGetValuesResult);
}

TEST(FastCgiCodecTest, UnknownManagementType) {
  const std::string input = Rec(42, 0, "whatever") +
                            Rec(kBegin, 0, std::string(8, '\0')) +
                            Request1(1, GetParams());
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0],
            (OutRecord{kUnknownType, 0, std::string("\x2a\0\0\0\0\0\0\0", 8)}));
  EXPECT_EQ(records[1],
            (OutRecord{kUnknownType, 0, std::string("\x01\0\0\0\0\0\0\0", 8)}));
}

TEST(FastCgiCodecTest, UnknownRole) {
  // With KEEP_CONN the connection stays usable; the refused request's records
  // are ignored.
  const std::string input = Begin(1, kKeep, /*role=*/2) +
                            Stream(kParams, 1, ParamStream(GetParams())) +
                            Stream(kStdin, 1, "") +
                            Request1(2, GetParams("/ok"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/ok");
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0], EndRecord(1, /*FCGI_UNKNOWN_ROLE=*/3));
  EXPECT_EQ(records[3], EndRecord(2, 0));

  // Without it, the application closes after answering.
  Trace closed =
      PlayAllSplits(Begin(1, 0, /*role=*/3) + Request1(2, GetParams()));
  ASSERT_EQ(closed.outcomes.size(), 1u) << closed;
  EXPECT_EQ(closed.outcomes[0].status, Status::kClose);
  EXPECT_EQ(Decode(closed.out), (std::vector<OutRecord>{EndRecord(1, 3)}));
}

TEST(FastCgiCodecTest, SecondRequestIdIsRefusedNotDropped) {
  const std::string input =
      Begin(1) + Rec(kParams, 1, ParamStream(GetParams("/first"))) + Begin(2) +
      Rec(kParams, 2, ParamStream(GetParams("/second"))) + Rec(kParams, 1, "") +
      Stream(kParams, 2, "") + Rec(kStdin, 1, "body1") +
      Stream(kStdin, 2, "b2") + Rec(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/first");
  EXPECT_EQ(run.outcomes[0].body, "body1");
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0], EndRecord(2, /*FCGI_CANT_MPX_CONN=*/1));
  EXPECT_EQ(records[3], EndRecord(1, 0));
}

TEST(FastCgiCodecTest, AbortRequest) {
  const std::string aborted = Begin(1) +
                              Rec(kParams, 1, ParamStream(GetParams("/gone"))) +
                              Rec(kAbort, 1, "");
  {
    Trace run = PlayAllSplits(aborted);
    ASSERT_EQ(run.outcomes.size(), 1u) << run;
    EXPECT_EQ(run.outcomes[0].status, Status::kIncomplete);
    EXPECT_FALSE(run.outcomes[0].in_request);  // back to idle
    EXPECT_EQ(Decode(run.out), (std::vector<OutRecord>{EndRecord(1, 0)}));
  }
  {
    // The connection goes on; the aborted request's late records are ignored.
    const std::string input = aborted + Rec(kParams, 1, "") +
                              Rec(kStdin, 1, "late") + Rec(kAbort, 1, "") +
                              Request1(1, GetParams("/next"));
    Trace run = PlayAllSplits(input);
    ASSERT_EQ(run.outcomes.size(), 2u) << run;
    EXPECT_EQ(run.outcomes[0].path, "/next");
    EXPECT_EQ(run.outcomes[0].body, "");
    EXPECT_EQ(run.outcomes[0].consumed, input.size());
    std::vector<OutRecord> records = Decode(run.out);
    ASSERT_EQ(records.size(), 4u);
    EXPECT_EQ(records[0], EndRecord(1, 0));
  }
  {
    // Without KEEP_CONN the connection ends after the acknowledgement.
    Trace run = PlayAllSplits(Begin(1, 0) + Rec(kAbort, 1, "") +
                              Request1(1, GetParams()));
    ASSERT_EQ(run.outcomes.size(), 1u) << run;
    EXPECT_EQ(run.outcomes[0].status, Status::kClose);
    EXPECT_EQ(Decode(run.out), (std::vector<OutRecord>{EndRecord(1, 0)}));
  }
}

TEST(FastCgiCodecTest, RecordsForInactiveIdsAreIgnored) {
  const std::string input =
      Rec(kParams, 9, "garbage that is never parsed") + Rec(kStdin, 9, "x") +
      Rec(kAbort, 9, "") + Begin(1) + Rec(kStdin, 4, "zz") +
      Rec(kParams, 1, ParamStream(GetParams("/live"))) + Rec(kData, 1, "data") +
      Rec(kParams, 1, "") + Rec(kStdin, 1, "real") + Rec(kParams, 9, "") +
      Rec(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/live");
  EXPECT_EQ(run.outcomes[0].body, "real");
  EXPECT_EQ(Decode(run.out).size(), 3u);
}

// ---------------------------------------------------------------------------
// State for timeouts.

TEST(FastCgiCodecTest, InRequestAndInBody) {
  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  EXPECT_FALSE(codec->InRequest());
  EXPECT_FALSE(codec->InBody());
  const std::string begin = Begin(1);
  const std::string params = Stream(kParams, 1, ParamStream(GetParams()));
  const std::string input = begin + params + Stream(kStdin, 1, "abc");
  std::string buf = input.substr(0, 3);
  EXPECT_EQ(codec->Parse(buf, request, out).status, Status::kIncomplete);
  EXPECT_TRUE(codec->InRequest());  // part of a record
  EXPECT_FALSE(codec->InBody());
  buf = input.substr(0, begin.size() + 10);
  EXPECT_EQ(codec->Parse(buf, request, out).status, Status::kIncomplete);
  EXPECT_TRUE(codec->InRequest());
  EXPECT_FALSE(codec->InBody());
  buf = input.substr(0, begin.size() + params.size());
  EXPECT_EQ(codec->Parse(buf, request, out).status, Status::kIncomplete);
  EXPECT_TRUE(codec->InBody());
  ServerCodec::Result r = codec->Parse(input, request, out);
  EXPECT_EQ(r.status, Status::kComplete);
  EXPECT_FALSE(codec->InRequest());
  EXPECT_FALSE(codec->InBody());
  EXPECT_TRUE(out.empty());
}

TEST(FastCgiCodecTest, RepeatedCallsDoNotRepeatReplies) {
  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  const std::string input =
      Rec(kGetValues, 0, Pair("FCGI_MAX_CONNS", "")) + Rec(77, 0, "");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(codec->Parse(input, request, out).status, Status::kIncomplete);
  }
  EXPECT_EQ(Decode(out).size(), 2u);
  EXPECT_FALSE(codec->InRequest());
}

}  // namespace
}  // namespace gearbox::testing::fastcgi_codec
