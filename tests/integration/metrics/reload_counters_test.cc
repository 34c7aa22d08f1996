// OpenMetrics counters are process-lifetime: a reload (SIGHUP, here into
// another model) neither resets nor repeats them, while the old generation
// drains and after it has, and gearbox_info carries the model and generation
// (no other series has those labels). Every figure is exact: the test counts
// each request it sends, /status requests included (a /status request counts
// itself after rendering, so it shows the ones before it).
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/metrics/metrics_fixture.h"

namespace gearbox::testing {
namespace {

std::string NextModel(const std::string& model) {
  if (model == "threadpool") return "async";
  if (model == "async") return "prefork";
  return "threadpool";
}

// gearbox_workers of one generation of `model`.
int WorkersOf(const std::string& model, const Sizing& s) {
  if (model == "threadpool") return s.threads;
  if (model == "prefork") return s.workers;
  return s.loops;
}

class ReloadCountersTest : public MetricsTest {
 protected:
  // GET /status?format=openmetrics, counted.
  std::string Scrape() {
    ++sent_;
    return OpenMetrics();
  }
  double Sample(const std::string& om, const std::string& prefix) {
    std::optional<double> v = OpenMetricsSample(om, prefix);
    EXPECT_TRUE(v.has_value()) << prefix << " missing in\n" << om;
    return v.value_or(-1);
  }
  void Load(int clients, int per_client) {
    LoadResult r =
        KeepAliveLoad(port(), clients, per_client, "/hello", "hello world\n");
    ASSERT_EQ(r.ok, clients * per_client) << r.failures;
    sent_ += r.ok;
  }
  // The config file with `model = "..."` replaced, then SIGHUP; returns once
  // /status (JSON, counted) says generation `gen` serves and the supervisor has
  // finished starting it (its workers are counted from then: a prefork child
  // may answer before the model's Start() has returned).
  void ReloadInto(const std::string& model, int gen) {
    std::ifstream in(daemon_->config_path());
    std::stringstream text;
    text << in.rdbuf();
    std::string conf = text.str();
    const size_t at = conf.find("model = \"");
    ASSERT_NE(at, std::string::npos) << conf;
    conf.replace(at, conf.find('\n', at) - at, "model = \"" + model + "\"");
    std::ofstream(daemon_->config_path(), std::ios::trunc) << conf;
    ASSERT_TRUE(daemon_->Signal(SIGHUP));
    const bool serving = WaitUntil(
        [&] {
          std::optional<JsonValue> s = StatusJson();
          ++sent_;
          return s && JsonInt(*s, "generation") == gen;
        },
        Millis(5000), Millis(50));
    ASSERT_TRUE(serving) << "generation " << gen << " never served";
    ASSERT_EQ(WaitForLines("generation_started", gen, Millis(5000)).size(),
              static_cast<size_t>(gen));
  }

  int sent_ = 0;  // requests answered so far, /status included
};

TEST_F(ReloadCountersTest, CountersSurviveAReloadWhileTheOldGenerationDrains) {
  Sizing sizing;
  ASSERT_NO_FATAL_FAILURE(Start(sizing));
  const std::string first = ModelUnderTest(), second = NextModel(first);

  ASSERT_NO_FATAL_FAILURE(Load(4, 25));
  std::string om = Scrape();
  EXPECT_EQ(Sample(om, "gearbox_requests_total "), sent_ - 1) << om;
  EXPECT_NE(
      om.find("gearbox_info{model=\"" + first + "\",generation=\"1\"} 1\n"),
      std::string::npos)
      << om;

  // A slow request holds generation 1 in its drain across the reload.
  std::thread slow([this] {
    HttpResponse r =
        Exchange(port(), GetRequest("/sleep?ms=1500"), Millis(10000));
    EXPECT_EQ(r.status, 200) << r.error << r.raw;
  });
  // In flight on generation 1 (/status counts it beside itself).
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::optional<JsonValue> s = StatusJson();
        ++sent_;
        return s && JsonInt(*s, "inflight") >= 2;
      },
      Millis(5000)));
  ASSERT_NO_FATAL_FAILURE(ReloadInto(second, 2));
  ASSERT_NO_FATAL_FAILURE(Load(3, 20));

  // Generation 1 is still draining (the slow request): its counts are read
  // from its own region, generation 2's from its own.
  ASSERT_TRUE(WaitForLines("generation_drained", 1, Millis(0)).empty())
      << "generation 1 drained before the slow request ended";
  om = Scrape();
  EXPECT_EQ(Sample(om, "gearbox_requests_total "), sent_ - 1) << om;
  EXPECT_EQ(Sample(om, "gearbox_responses_total{class=\"2xx\"}"), sent_ - 1)
      << om;
  EXPECT_EQ(Sample(om, "gearbox_request_duration_seconds_count "), sent_ - 1)
      << om;
  EXPECT_EQ(Sample(om, "gearbox_workers "),
            WorkersOf(first, sizing) + WorkersOf(second, sizing))
      << "both generations run\n"
      << om;
  EXPECT_NE(
      om.find("gearbox_info{model=\"" + second + "\",generation=\"2\"} 1\n"),
      std::string::npos)
      << om;
  EXPECT_EQ(om.find("model=", om.find("gearbox_info{") + 14), std::string::npos)
      << "only gearbox_info has a model label\n"
      << om;

  slow.join();
  ++sent_;
  ASSERT_EQ(WaitForLines("generation_drained", 1, Millis(5000)).size(), 1u);
  // Generation 1's counts have moved into the retired totals (before the
  // log line): the same sum, and only generation 2's workers.
  om = Scrape();
  EXPECT_EQ(Sample(om, "gearbox_requests_total "), sent_ - 1) << om;
  EXPECT_EQ(Sample(om, "gearbox_request_duration_seconds_count "), sent_ - 1)
      << om;
  EXPECT_EQ(Sample(om, "gearbox_workers "), WorkersOf(second, sizing)) << om;
  // The slow request is in the histogram's sum: at least its 1.5 s.
  EXPECT_GE(Sample(om, "gearbox_request_duration_seconds_sum "), 1.5) << om;
  EXPECT_LT(Sample(om, "gearbox_request_duration_seconds_bucket{le=\"1\"}"),
            sent_ - 1)
      << "the 1.5 s request is above le=1\n"
      << om;

  // A second reload, back to the first model: still one sum.
  ASSERT_NO_FATAL_FAILURE(ReloadInto(first, 3));
  ASSERT_NO_FATAL_FAILURE(Load(2, 10));
  ASSERT_EQ(WaitForLines("generation_drained", 2, Millis(5000)).size(), 2u);
  om = Scrape();
  EXPECT_EQ(Sample(om, "gearbox_requests_total "), sent_ - 1) << om;
  EXPECT_EQ(Sample(om, "gearbox_workers "), WorkersOf(first, sizing)) << om;
  EXPECT_NE(
      om.find("gearbox_info{model=\"" + first + "\",generation=\"3\"} 1\n"),
      std::string::npos)
      << om;
  printf("openmetrics after two reloads:\n%s", om.c_str());
}

}  // namespace
}  // namespace gearbox::testing
