// The advisor's arithmetic on synthetic figures: Little's law, workers and
// cores needed, the route kinds, the picks and the lines `--advise` prints.
#include "daemon/advisor/advisor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gearbox::advisor {
namespace {

RouteFigures Route(std::string name, double rps, double service_us,
                   double cpu_us, double wait_us, double queue_us = 0) {
  RouteFigures f;
  f.route = std::move(name);
  f.rps = rps;
  f.service_us = service_us;
  f.cpu_us = cpu_us;
  f.wait_us = wait_us;
  f.queue_us = queue_us;
  return f;
}

MachineFacts Machine(std::string model = "threadpool", int size = 64,
                     int cores = 2) {
  MachineFacts m;
  m.model = std::move(model);
  m.size = size;
  m.cores = cores;
  m.thread_stack_mib = 8;
  return m;
}

Advice AdviseAll(const std::vector<RouteFigures>& routes,
                 const MachineFacts& machine = Machine()) {
  return Advise(routes, machine);
}

TEST(AdvisorTest, WaitingRouteIsLittlesLawAndGoesAsync) {
  // The example: 9,400 req/s of ~1.1 ms waits.
  Advice a = AdviseAll({Route("/sleep", 9400, 1106, 6, 1100)});
  ASSERT_EQ(a.routes.size(), 1u);
  const RouteAdvice& r = a.routes[0];
  EXPECT_EQ(r.kind, RouteKind::kWaiting);
  EXPECT_NEAR(r.inflight, 9400 * 1106e-6, 1e-9);  // 10.40
  EXPECT_NEAR(r.workers, 9400 * (6 + 1100) * 1e-6, 1e-9);
  EXPECT_NEAR(r.cores, 9400 * 6e-6, 1e-9);
  EXPECT_NEAR(r.async_load, 9400 * (6 + kAsyncCostUs) * 1e-6, 1e-9);
  EXPECT_EQ(r.pick, "async");
  EXPECT_EQ(r.size, 1);
  EXPECT_EQ(FormatRouteLine(r),
            "route=/sleep pick=async size=1 rps=9400 cpu_us=6 wait_ms=1.10 "
            "inflight=10.4 why=\"99% of service time is waiting; prefork "
            "would need >= 11 workers, threadpool >= 11 threads; one async "
            "loop at 11% CPU\"");
  EXPECT_EQ(a.pick, "async");
  EXPECT_EQ(a.size, 1);
  EXPECT_FALSE(a.disagree);
  EXPECT_TRUE(a.Differs(Machine("threadpool")));
  EXPECT_FALSE(a.Differs(Machine("async", 1)));
}

TEST(AdvisorTest, QueueWaitCountsAsDemandForBlockingWorkers) {
  // threadpool with 1 thread, 256 clients of 1 ms waits: 900 req/s, and each
  // request queued 280 ms first. Little's law over queue + work: 253 workers.
  Advice a = AdviseAll({Route("/sleep", 900, 1100, 5, 1090, 280000)});
  const RouteAdvice& r = a.routes[0];
  EXPECT_NEAR(r.workers, 900 * (280000 + 5 + 1090) * 1e-6, 1e-9);
  EXPECT_NE(r.why.find("prefork would need >= 253 workers, threadpool >= "
                       "253 threads"),
            std::string::npos)
      << r.why;
  EXPECT_EQ(a.pick, "async");
}

TEST(AdvisorTest, LightRouteGoesAsyncWithLoopsForItsCpu) {
  // 150,000 req/s of /hello: 1.5 us handler + 6 us of async I/O each = 1.125
  // loops' worth: two loops on two cores, one on one core.
  Advice two = AdviseAll({Route("/hello", 150000, 2, 1.5, 0)});
  EXPECT_EQ(two.routes[0].kind, RouteKind::kLight);
  EXPECT_EQ(two.pick, "async");
  EXPECT_EQ(two.size, 2);
  Advice one = AdviseAll({Route("/hello", 150000, 2, 1.5, 0)},
                         Machine("threadpool", 64, 1));
  EXPECT_EQ(one.size, 1);
  EXPECT_NE(one.routes[0].why.find("light: 1.5 us of CPU per request"),
            std::string::npos)
      << one.routes[0].why;
}

TEST(AdvisorTest, CpuHeavyRouteGoesToThreadsForItsCores) {
  // 8,000 req/s of 200 us: 1.6 cores -> 2 threads. The queue wait is the
  // CPU's and does not ask for more threads.
  Advice a =
      AdviseAll({Route("/burn", 8000, 210, 200, 0, 3000)}, Machine("async", 2));
  const RouteAdvice& r = a.routes[0];
  EXPECT_EQ(r.kind, RouteKind::kCpuHeavy);
  EXPECT_NEAR(r.cores, 1.6, 1e-9);
  EXPECT_NEAR(r.workers, 1.6, 1e-9);
  EXPECT_EQ(r.pick, "threadpool");
  EXPECT_EQ(r.size, 2);
  EXPECT_NE(r.why.find("CPU-heavy: 200 us of CPU per request, 1.6 of 2 cores"),
            std::string::npos)
      << r.why;
  EXPECT_NE(r.why.find("prefork: 2 children, ~4 MiB"), std::string::npos);
  EXPECT_EQ(r.why.find("the CPU is the limit"), std::string::npos);
  EXPECT_EQ(a.pick, "threadpool");
  EXPECT_EQ(a.size, 2);
  EXPECT_FALSE(a.disagree);
  EXPECT_NE(a.why.find("CPU-bound: 1.6 of 2 cores; threadpool >= 2 threads "
                       "(16 MiB of virtual stack"),
            std::string::npos)
      << a.why;
  // At 1.9 of 2 cores the CPU is the limit, and the line says so.
  Advice full = AdviseAll({Route("/burn", 9500, 210, 200, 0)});
  EXPECT_NE(full.routes[0].why.find("the CPU is the limit"), std::string::npos);
}

TEST(AdvisorTest, TheThresholdsDecideTheKind) {
  auto kind = [](double cpu, double wait, double service) {
    return AdviseAll({Route("/x", 1000, service, cpu, wait)}).routes[0].kind;
  };
  EXPECT_EQ(kind(kCpuHeavyUs, 0, kCpuHeavyUs), RouteKind::kCpuHeavy);
  EXPECT_EQ(kind(kCpuHeavyUs - 1, 0, kCpuHeavyUs), RouteKind::kLight);
  // A long CPU run is a stall for a loop even when the request also waits.
  EXPECT_EQ(kind(150, 1000, 1150), RouteKind::kCpuHeavy);
  EXPECT_EQ(kind(10, 50, 100), RouteKind::kWaiting);  // 50% waiting
  EXPECT_EQ(kind(10, 49, 100), RouteKind::kLight);
}

TEST(AdvisorTest, DisagreeingRoutesShareOneThreadPoolOrSplit) {
  // Half the requests burn 200 us, half wait 1 ms: a burn would delay a wait
  // sharing its loop by 19% of the wait's own time. 4 threads serve both.
  Advice a = AdviseAll(
      {Route("/burn", 3000, 210, 200, 0), Route("/sleep", 3000, 1050, 5, 1000)},
      Machine("async", 2));
  EXPECT_TRUE(a.disagree);
  EXPECT_NEAR(a.workers, 3000 * 200e-6 + 3000 * 1005e-6, 1e-9);
  EXPECT_EQ(a.pick, "threadpool");
  EXPECT_EQ(a.size, 4);
  EXPECT_NE(a.why.find("routes disagree: /burn CPU-heavy (threadpool), "
                       "async suits /sleep; a 200 us run of /burn is 19% of "
                       "/sleep's 1.05 ms: one threadpool of >= 4 threads "
                       "serves both"),
            std::string::npos)
      << a.why;
  EXPECT_NE(a.why.find("split /burn onto a second gearboxd"),
            std::string::npos);
  // The routes keep their own picks on their lines.
  EXPECT_EQ(a.routes[0].pick, "threadpool");
  EXPECT_EQ(a.routes[1].pick, "async");
}

// Route labels in a `why` are a list with ", " between them; a label that
// holds a comma or a space (routes sharing a pattern are labelled with their
// methods, "DELETE,PUT /x") is quoted, so the list reads one way.
TEST(AdvisorTest, LabelsInAWhyAreListedUnambiguously) {
  Advice a = AdviseAll({Route("/burn", 3000, 210, 200, 0),
                        Route("DELETE,PUT /x", 1500, 1050, 5, 1000),
                        Route("/y", 1500, 1050, 5, 1000)},
                       Machine("async", 2));
  ASSERT_TRUE(a.disagree) << a.why;
  EXPECT_NE(a.why.find("routes disagree: /burn CPU-heavy (threadpool), "
                       "async suits \"DELETE,PUT /x\", /y; a 200 us run of "
                       "/burn is 19% of \"DELETE,PUT /x\"'s 1.05 ms"),
            std::string::npos)
      << a.why;
  // In the summary line the why is quoted once more: escaped, so a logfmt
  // reader gets the why above back.
  const std::string line = FormatSummaryLine(a, Machine("async", 2), {60, 60});
  EXPECT_NE(line.find("async suits \\\"DELETE,PUT /x\\\", /y;"),
            std::string::npos)
      << line;
}

TEST(AdvisorTest, AShortRunNextToLongWaitsStaysAsync) {
  // The bench's mixed workload: 200 us burns and 20 ms waits, half each. A
  // burn delays a wait by 1% of its time, while a threadpool would hold 61
  // threads: async-2 measured 1.8x threadpool-64's throughput on it.
  Advice a = AdviseAll({Route("/burn", 3000, 210, 200, 0),
                        Route("/sleep", 3000, 20050, 5, 20000)},
                       Machine("threadpool", 64));
  EXPECT_TRUE(a.disagree);
  EXPECT_EQ(a.pick, "async");
  EXPECT_EQ(a.size, 2);  // loops = cores: a burn holds one loop, not all
  EXPECT_NE(a.why.find("a 200 us run of /burn is 0.998% of /sleep's 20.1 ms: "
                       "async with loops = cores (2) serves both (2 async "
                       "loops at 33% CPU each; threadpool would hold 61 "
                       "threads), or split /burn"),
            std::string::npos)
      << a.why;
  EXPECT_EQ(a.routes[0].pick, "threadpool");
  EXPECT_EQ(a.routes[1].pick, "async");
}

TEST(AdvisorTest, TheStallShareDecidesBetweenAsyncAndOneThreadPool) {
  // The CPU-heavy run against the shortest other route's service time.
  auto pick = [](double sleep_service_us) {
    return AdviseAll({Route("/burn", 1000, 210, 200, 0),
                      Route("/sleep", 1000, sleep_service_us, 5,
                            sleep_service_us - 50),
                      Route("/long", 1000, 50000, 5, 49000)})
        .pick;
  };
  EXPECT_EQ(pick(200 / kStallShare), "threadpool");  // exactly 10%
  EXPECT_EQ(pick(200 / kStallShare + 10), "async");  // just under
}

TEST(AdvisorTest, TooManyWaitsForThreadsGoesAsyncWithLoopsEqualToCores) {
  // 50,000 req/s of 20 ms waits = 1,000 in flight, next to a CPU-heavy route.
  Advice a = AdviseAll({Route("/burn", 3000, 210, 200, 0),
                        Route("/sleep", 50000, 20050, 5, 20000)});
  EXPECT_TRUE(a.disagree);
  EXPECT_GT(a.workers, kMaxThreads);
  EXPECT_EQ(a.pick, "async");
  EXPECT_EQ(a.size, 2);  // loops = cores
  EXPECT_NE(a.why.find("async with loops = cores (2)"), std::string::npos)
      << a.why;
}

TEST(AdvisorTest, RareCpuHeavyRouteDoesNotOutweighTheRest) {
  // A report taking 50 ms of CPU once every 10 s, among 5,000 req/s of
  // waits: 0.002% of requests.
  Advice a = AdviseAll({Route("/report", 0.1, 50000, 50000, 0),
                        Route("/sleep", 5000, 1010, 5, 1000)});
  EXPECT_FALSE(a.disagree);
  EXPECT_EQ(a.pick, "async");
  EXPECT_NE(a.why.find("CPU-heavy /report are only 0.002% of requests"),
            std::string::npos)
      << a.why;
  // At 1% of requests it weighs in.
  Advice b = AdviseAll({Route("/report", 50, 50000, 50000, 0),
                        Route("/sleep", 4950, 1010, 5, 1000)});
  EXPECT_TRUE(b.disagree);
}

TEST(AdvisorTest, AHealthCheckIsNotADisagreement) {
  Advice a = AdviseAll(
      {Route("/burn", 8000, 210, 200, 0), Route("/status", 1, 40, 30, 0)});
  EXPECT_FALSE(a.disagree);
  EXPECT_EQ(a.pick, "threadpool");
}

TEST(AdvisorTest, LittleTrafficKeepsTheConfiguredModel) {
  Advice a =
      AdviseAll({Route("/status", 0.5, 40, 30, 0)}, Machine("prefork", 4));
  EXPECT_TRUE(a.idle);
  EXPECT_EQ(a.pick, "prefork");
  EXPECT_EQ(a.size, 4);
  EXPECT_FALSE(a.Differs(Machine("prefork", 4)));
  EXPECT_NE(a.why.find("any model fits; keep prefork"), std::string::npos);
}

TEST(AdvisorTest, RoutesWithoutTrafficAreLeftOut) {
  Advice a =
      AdviseAll({Route("/a", 0, 0, 0, 0), Route("/b", 2000, 1010, 5, 1000)});
  ASSERT_EQ(a.routes.size(), 1u);
  EXPECT_EQ(a.routes[0].figures.route, "/b");
  EXPECT_DOUBLE_EQ(a.rps, 2000);
}

TEST(AdvisorTest, ThePickFollowsTheMixNotTheRate) {
  // The same 50/50 mix of 200 us burns and 20 ms waits as a saturated
  // prefork-1 serves it (50 req/s) and as threadpool-64 does (6,000).
  // The same with 1 ms waits, where the burns weigh more.
  for (double rps : {100.0, 12000.0}) {
    Advice a = AdviseAll({Route("/burn", rps / 2, 210, 200, 0),
                          Route("/sleep", rps / 2, 20050, 5, 20000)});
    EXPECT_EQ(a.pick, "async") << rps;
    EXPECT_TRUE(a.disagree) << rps;
    Advice b = AdviseAll({Route("/burn", rps / 2, 210, 200, 0),
                          Route("/sleep", rps / 2, 1050, 5, 1000)});
    EXPECT_EQ(b.pick, "threadpool") << rps;
    EXPECT_TRUE(b.disagree) << rps;
  }
}

TEST(AdvisorTest, ThePickDoesNotDependOnTheConfiguredModel) {
  const std::vector<std::vector<RouteFigures>> workloads = {
      {Route("/hello", 150000, 2, 1.5, 0)},
      {Route("/sleep", 9400, 1106, 6, 1100)},
      {Route("/burn", 8000, 210, 200, 0)},
      {Route("/burn", 3000, 210, 200, 0),
       Route("/sleep", 3000, 20050, 5, 20000)},
      {Route("/burn", 3000, 210, 200, 0), Route("/sleep", 3000, 1050, 5, 1000)},
  };
  for (const auto& w : workloads) {
    const std::string pick = AdviseAll(w, Machine("async", 1)).pick;
    EXPECT_EQ(AdviseAll(w, Machine("threadpool", 64)).pick, pick);
    EXPECT_EQ(AdviseAll(w, Machine("prefork", 8)).pick, pick);
  }
}

TEST(AdvisorTest, SummaryLineCarriesTheTotals) {
  Advice a = AdviseAll({Route("/sleep", 9400, 1106, 6, 1100)});
  const std::string line =
      FormatSummaryLine(a, Machine("threadpool", 64), {59.96, 60});
  const std::string expected =
      "summary window_s=60.0 window_asked_s=60 pick=async size=1 "
      "configured=threadpool configured_size=64 "
      "cores=2 rps=9400 cpu_cores=0.06 inflight=10.4 workers=10.4 "
      "why=\"every route with traffic fits async; one async loop at 11% CPU;";
  EXPECT_EQ(line.substr(0, expected.size()), expected);
}

TEST(AdvisorTest, SummaryLineOfTheLastIntervalAsksNoWindow) {
  Advice a = AdviseAll({Route("/sleep", 9400, 1106, 6, 1100)});
  const std::string line =
      FormatSummaryLine(a, Machine("threadpool", 64), {2.5, 0});
  EXPECT_EQ(line.rfind("summary window_s=2.5 pick=async ", 0), 0u) << line;
}

TEST(AdvisorTest, RouteNamesWithSpacesAreQuoted) {
  Advice a = AdviseAll({Route("/a b", 2000, 1010, 5, 1000)});
  const std::string expected = "route=\"/a b\" pick=async ";
  EXPECT_EQ(FormatRouteLine(a.routes[0]).substr(0, expected.size()), expected);
}

}  // namespace
}  // namespace gearbox::advisor
