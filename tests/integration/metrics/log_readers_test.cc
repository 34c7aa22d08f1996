// The parsers the metrics tests read gearboxd's output with.
#include <gtest/gtest.h>

#include "tests/integration/metrics/logfmt.h"

namespace gearbox::testing {
namespace {

TEST(Logfmt, StatsLine) {
  LogfmtFields f = ParseLogfmt(
      "ts=2024-01-01T00:00:00.000Z level=info pid=7 event=stats model=async "
      "rps=12.5 requests=500 p50_ms=20.480");
  EXPECT_EQ(f["event"], "stats");
  EXPECT_EQ(f["model"], "async");
  EXPECT_EQ(f["requests"], "500");
  EXPECT_EQ(f["p50_ms"], "20.480");
}

TEST(Logfmt, QuotedValuesAndBareKeys) {
  LogfmtFields f =
      ParseLogfmt(R"(event=access path="/a b" id="x\"y\\z" flag empty="")");
  EXPECT_EQ(f["path"], "/a b");
  EXPECT_EQ(f["id"], "x\"y\\z");
  ASSERT_EQ(f.count("flag"), 1u);
  EXPECT_EQ(f["flag"], "");
  EXPECT_EQ(f["empty"], "");
}

TEST(Logfmt, LinesFilteredByEventPartialLineIgnored) {
  std::vector<LogLine> lines = ParseLogLines(
      "event=listening bound=127.0.0.1:1\nevent=stats requests=3 rps=1.5\n"
      "event=access status=200\nevent=stats requests=4",
      "stats");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].line_no, 1u);
  EXPECT_EQ(lines[0].Int("requests"), 3);
  EXPECT_EQ(lines[0].Int("rps"), std::nullopt);
  EXPECT_EQ(lines[0].Num("rps"), 1.5);
  EXPECT_EQ(lines[0].Get("missing"), "");
}

TEST(Json, StatusDocument) {
  std::string error;
  auto v = ParseJson(
      R"({"model":"prefork","requests":200,"status":{"2xx":200,"5xx":0},)"
      R"("latency_ms":{"p50":0.012},"workers":[{"pid":5,"path":"/st\"x"},)"
      R"({"pid":6,"path":""}],"ok":true,"none":null})"
      "\n",
      &error);
  ASSERT_TRUE(v.has_value()) << error;
  EXPECT_EQ(v->Find("model")->text, "prefork");
  EXPECT_EQ(v->Path("status.2xx")->Int(), 200);
  EXPECT_EQ(v->Path("latency_ms.p50")->Int(), std::nullopt);
  EXPECT_DOUBLE_EQ(*v->Path("latency_ms.p50")->Num(), 0.012);
  ASSERT_EQ(v->Find("workers")->array.size(), 2u);
  EXPECT_EQ(v->Find("workers")->array[0].Find("path")->text, "/st\"x");
  EXPECT_TRUE(v->Find("ok")->boolean);
  EXPECT_EQ(v->Path("status.4xx"), nullptr);
}

TEST(Json, ErrorsSayWhere) {
  std::string error;
  EXPECT_FALSE(ParseJson(R"({"a":1,})", &error).has_value());
  EXPECT_NE(error.find("offset"), std::string::npos) << error;
  EXPECT_FALSE(ParseJson(R"({"a":1} x)", &error).has_value());
}

TEST(OpenMetrics, FindsSamplesByPrefix) {
  const std::string om =
      "# TYPE gearbox_requests counter\n"
      "gearbox_requests_total{model=\"async\"} 501\n"
      "gearbox_responses_total{model=\"async\",class=\"2xx\"} 501\n"
      "gearbox_responses_total{model=\"async\",class=\"5xx\"} 0\n"
      "# EOF\n";
  EXPECT_EQ(OpenMetricsSample(om, "gearbox_requests_total{"), 501);
  EXPECT_EQ(OpenMetricsSample(om, "gearbox_responses_total{model=\"async\",class=\"5xx\"}"), 0);
  EXPECT_EQ(OpenMetricsSample(om, "gearbox_nope"), std::nullopt);
}

}  // namespace
}  // namespace gearbox::testing
