// The HTTP/1.1 conformance table (tests/conformance/cases.toml) at the codec
// level: the HTTP ServerCodec with the real router and handlers, in memory, as
// a model drives them. Each case is played whole, split in two at every byte,
// and byte by byte; every schedule must give the case's expected verdict (so
// no split changes it), the codec must refuse exactly the cases that expect a
// refusal (that is what the models count as bad_input), and cases with an
// `interim` expectation are also played with the head alone first.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/codec.h"
#include "daemon/handlers/handlers.h"
#include "daemon/router.h"
#include "tests/conformance/conformance_cases.h"

namespace gearbox {
namespace {

using conformance::Case;
using conformance::Suite;
using conformance::Verdict;

const Suite& TheSuite() {
  static const Suite* suite = [] {
    auto* s = new Suite;
    std::string error;
    if (!conformance::LoadSuite(conformance::DefaultSuitePath(), s, &error)) {
      ADD_FAILURE() << error;
    }
    return s;
  }();
  return *suite;
}

// The integration suite's routes: /hello, /echo, everything else 404.
const Router& TheRouter() {
  static const Router* router = [] {
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));
    routes.back().params.Set("body", std::string("hello world\n"));
    routes.push_back(DefaultRoute("/echo", "echo"));
    return new Router(routes, ServerInfo{});
  }();
  return *router;
}

// One connection's worth of codec calls, the way ServeBlocking makes them.
class CodecConnection {
 public:
  explicit CodecConnection(const Suite& suite) {
    LimitsConfig limits;
    limits.max_header_bytes = suite.max_header_bytes;
    limits.max_body_bytes = suite.max_body_bytes;
    codec_ = MakeCodec(Protocol::kHttp, limits);
  }

  // Bytes arrive; every complete request is answered, as a model would.
  void Arrive(std::string_view bytes) {
    if (closed_) return;
    data_.append(bytes);
    for (;;) {
      // A fresh copy at a new address each call: the codec must not keep
      // pointers into the previous buffer (a real Buffer moves its bytes).
      std::string copy = data_;
      Request request;
      ServerCodec::Result r = codec_->Parse(copy, request, out_);
      if (r.status == ServerCodec::Status::kIncomplete) return;
      if (r.status != ServerCodec::Status::kComplete) {
        closed_ = true;
        refused_ = r.status == ServerCodec::Status::kError;
        return;
      }
      Response response;
      std::unique_ptr<Exchange> exchange =
          TheRouter().Find(request.path)->Start(request);
      // The suite's handlers (text, echo) are done at the first Resume().
      if (!exchange->Resume(Wake{}, response).done()) {
        ADD_FAILURE() << "a route of the suite waited";
      }
      const bool close = codec_->AppendResponse(request, response, false, out_);
      data_.erase(0, r.consumed);
      if (close) {
        closed_ = true;
        return;
      }
    }
  }

  bool closed() const { return closed_; }
  bool refused() const { return refused_; }
  bool in_request() const { return codec_->InRequest(); }
  std::string& out() { return out_; }

 private:
  std::unique_ptr<ServerCodec> codec_;
  std::string data_;
  std::string out_;
  bool closed_ = false;
  bool refused_ = false;
};

// Moves every whole response from `out` into the verdict.
void TakeResponses(std::string& out, bool head, Verdict& v) {
  conformance::Response r;
  bool malformed = false;
  while (conformance::TakeResponse(out, head, &r, &malformed)) {
    if (r.status < 200) {
      v.interim.push_back(r.status);
      continue;
    }
    if (!v.first_body) v.first_body = r.body;
    v.statuses.push_back(r.status);
  }
  if (malformed) v.trouble = "malformed response bytes";
}

struct Played {
  Verdict verdict;
  bool refused = false;
};

// Plays `c` arriving in pieces that end at `cuts` (the last one is the
// input's size), then, if the connection is still usable, the follow-up.
Played Play(const Case& c, const std::vector<size_t>& cuts) {
  CodecConnection conn(TheSuite());
  size_t arrived = 0;
  for (size_t cut : cuts) {
    conn.Arrive(std::string_view(c.bytes).substr(arrived, cut - arrived));
    arrived = cut;
  }
  Played p;
  TakeResponses(conn.out(), c.head, p.verdict);
  if (!conn.closed() && !conn.in_request()) {
    conn.Arrive(conformance::kFollowUp);
    Verdict follow;
    TakeResponses(conn.out(), false, follow);
    p.verdict.follow_up_served =
        follow.statuses == std::vector<int>{200} &&
        follow.first_body == conformance::kFollowUpBody;
    if (!p.verdict.follow_up_served) {
      p.verdict.trouble = "follow-up got " + conformance::Describe(follow);
    }
  } else if (!conn.closed()) {
    p.verdict.trouble = "the codec still waits for bytes";
  }
  if (!conn.out().empty()) p.verdict.trouble += " (unparsed output left)";
  p.verdict.closed = conn.closed();
  p.refused = conn.refused();
  return p;
}

// What every schedule must agree on (a 100 Continue depends on the split).
bool SameOutcome(const Played& a, const Played& b) {
  return a.verdict.statuses == b.verdict.statuses &&
         a.verdict.closed == b.verdict.closed &&
         a.verdict.follow_up_served == b.verdict.follow_up_served &&
         a.verdict.first_body == b.verdict.first_body &&
         a.verdict.trouble == b.verdict.trouble && a.refused == b.refused;
}

class HttpConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(HttpConformance, EverySplitGivesTheExpectedVerdict) {
  const Case& c = TheSuite().cases[GetParam()];
  SCOPED_TRACE(c.id + " (" + c.section +
               "): " + conformance::Printable(c.bytes));
  const size_t n = c.bytes.size();
  Played whole = Play(c, {n});
  EXPECT_EQ(conformance::Compare(c, whole.verdict), "")
      << "whole: " << conformance::Describe(whole.verdict);
  EXPECT_EQ(whole.refused, c.Rejected())
      << "the codec must refuse (kError, counted as bad_input) exactly the "
         "cases whose final status is not a route's";
  for (const int status : whole.verdict.interim) {
    EXPECT_EQ(status, 100) << "unexpected interim response";
  }
  for (size_t k = 1; k < n; ++k) {
    Played split = Play(c, {k, n});
    if (!SameOutcome(split, whole)) {
      ADD_FAILURE() << "split at " << k << " of " << n << ": "
                    << conformance::Describe(split.verdict)
                    << "; whole: " << conformance::Describe(whole.verdict);
      break;  // one is enough to read
    }
  }
  std::vector<size_t> bytewise;
  for (size_t k = 1; k <= n; ++k) bytewise.push_back(k);
  Played bytes = Play(c, bytewise);
  EXPECT_TRUE(SameOutcome(bytes, whole))
      << "byte by byte: " << conformance::Describe(bytes.verdict)
      << "; whole: " << conformance::Describe(whole.verdict);
  EXPECT_LE(bytes.verdict.interim.size(), 1u);
}

// Cases with an `interim` expectation, played with the head alone first.
class HttpConformanceInterim : public ::testing::TestWithParam<size_t> {};

TEST_P(HttpConformanceInterim, HeadAloneGetsTheExpectedInterimAnswer) {
  const Case& c = TheSuite().cases[GetParam()];
  SCOPED_TRACE(c.id + " (" + c.section + ")");
  CodecConnection conn(TheSuite());
  conn.Arrive(std::string_view(c.bytes).substr(0, c.HeadSize()));
  Verdict v;
  TakeResponses(conn.out(), c.head, v);
  if (c.interim == conformance::Interim::kContinue) {
    EXPECT_EQ(v.interim, std::vector<int>{100});
    EXPECT_TRUE(v.statuses.empty()) << conformance::Describe(v);
  } else {
    EXPECT_TRUE(v.interim.empty()) << conformance::Describe(v);
  }
  conn.Arrive(std::string_view(c.bytes).substr(c.HeadSize()));
  TakeResponses(conn.out(), c.head, v);
  EXPECT_EQ(v.statuses, c.expect) << conformance::Describe(v);
}

TEST(HttpConformanceTable, HasAtLeast120CasesEachWithASection) {
  const Suite& s = TheSuite();
  EXPECT_GE(s.cases.size(), 120u);
  for (const Case& c : s.cases) {
    EXPECT_TRUE(c.section.rfind("RFC ", 0) == 0) << c.id << ": " << c.section;
  }
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  return TheSuite().cases[info.param].id;
}

std::vector<size_t> CaseIndexes(bool interim_only) {
  std::vector<size_t> v;
  for (size_t i = 0; i < TheSuite().cases.size(); ++i) {
    if (!interim_only ||
        TheSuite().cases[i].interim != conformance::Interim::kUntested) {
      v.push_back(i);
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, HttpConformance,
                         ::testing::ValuesIn(CaseIndexes(false)), CaseName);
INSTANTIATE_TEST_SUITE_P(Cases, HttpConformanceInterim,
                         ::testing::ValuesIn(CaseIndexes(true)), CaseName);

}  // namespace
}  // namespace gearbox
