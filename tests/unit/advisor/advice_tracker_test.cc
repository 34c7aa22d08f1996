// When event=advice is due (AdviceTracker), and per-route figures from
// counters (FiguresOf): both from daemon/metrics/route_reporter.h.
#include <gtest/gtest.h>

#include "daemon/metrics/route_reporter.h"

namespace gearbox {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using Clock = AdviceTracker::Clock;

TEST(AdviceTrackerTest, DueOnceThePickHasDifferedForTheWholePeriod) {
  AdviceTracker t(minutes(5), hours(1));
  Clock::time_point now{hours(10)};
  EXPECT_FALSE(t.Observe(true, "async", now));
  EXPECT_FALSE(t.Observe(true, "async", now + minutes(4)));
  EXPECT_EQ(t.differing_for(now + minutes(4)), minutes(4));
  EXPECT_TRUE(t.Observe(true, "async", now + minutes(5)));
  // Rate-limited: not again within the hour while it lasts...
  EXPECT_FALSE(t.Observe(true, "async", now + minutes(6)));
  EXPECT_FALSE(t.Observe(true, "async", now + minutes(64)));
  // ... then once more.
  EXPECT_TRUE(t.Observe(true, "async", now + minutes(65)));
}

TEST(AdviceTrackerTest, AnAgreeingIntervalRestartsTheClock) {
  AdviceTracker t(minutes(5), hours(1));
  Clock::time_point now{hours(10)};
  EXPECT_FALSE(t.Observe(true, "async", now));
  EXPECT_FALSE(t.Observe(false, "threadpool", now + minutes(3)));
  EXPECT_FALSE(t.Observe(true, "async", now + minutes(4)));
  EXPECT_FALSE(t.Observe(true, "async", now + minutes(8)));
  EXPECT_TRUE(t.Observe(true, "async", now + minutes(9)));
}

TEST(AdviceTrackerTest, ANewPickMustLastOnItsOwnThenIsLoggedAtOnce) {
  AdviceTracker t(minutes(5), hours(1));
  Clock::time_point now{hours(10)};
  t.Observe(true, "async", now);
  EXPECT_TRUE(t.Observe(true, "async", now + minutes(5)));
  EXPECT_FALSE(t.Observe(true, "prefork", now + minutes(6)));
  EXPECT_TRUE(t.Observe(true, "prefork", now + minutes(11)))
      << "a different pick is not held back by the hourly limit";
}

TEST(AdviceTrackerTest, ZeroTurnsItOffAndResetForgets) {
  AdviceTracker off(Duration::zero(), hours(1));
  Clock::time_point now{hours(10)};
  EXPECT_FALSE(off.Observe(true, "async", now));
  EXPECT_FALSE(off.Observe(true, "async", now + hours(5)));
  AdviceTracker t(milliseconds(600), hours(1));
  EXPECT_TRUE((t.Observe(true, "async", now),
               t.Observe(true, "async", now + milliseconds(600))));
  t.Reset();
  EXPECT_FALSE(t.Observe(true, "async", now + milliseconds(700)));
  EXPECT_TRUE(t.Observe(true, "async", now + milliseconds(1300)));
}

TEST(FiguresOfTest, MeansPerRequestAndRateOverTheWindow) {
  RouteTotals t;
  t.requests = 200;
  t.service_us = 200 * 1100;
  t.wait_us = 200 * 1000;
  t.queue_us = 200 * 50;
  t.cpu_ns = 4 * 7000;
  t.cpu_samples = 4;
  advisor::RouteFigures f = FiguresOf("/x", t, 2.0);
  EXPECT_EQ(f.route, "/x");
  EXPECT_DOUBLE_EQ(f.rps, 100);
  EXPECT_DOUBLE_EQ(f.service_us, 1100);
  EXPECT_DOUBLE_EQ(f.wait_us, 1000);
  EXPECT_DOUBLE_EQ(f.queue_us, 50);
  EXPECT_DOUBLE_EQ(f.cpu_us, 7);  // the mean of the sampled requests
}

TEST(FiguresOfTest, AWindowWithoutCpuSamplesUsesTheAllTimeMean) {
  RouteTotals window;
  window.requests = 10;
  window.service_us = 10 * 300;
  RouteTotals all = window;
  all.requests = 1000;
  all.cpu_ns = 3 * 250000;
  all.cpu_samples = 3;
  EXPECT_DOUBLE_EQ(FiguresOf("/burn", window, 1.0, &all).cpu_us, 250);
  EXPECT_DOUBLE_EQ(FiguresOf("/burn", window, 1.0).cpu_us, 0);
  RouteTotals none;
  EXPECT_DOUBLE_EQ(FiguresOf("/idle", none, 1.0, &all).rps, 0);
}

}  // namespace
}  // namespace gearbox
