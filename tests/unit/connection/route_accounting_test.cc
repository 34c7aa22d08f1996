// Per-route accounting by the connection state machine, on an injected clock:
// which route a request counts under, the waiting time between the machine
// parking an exchange and taking it up again, and CPU sampling.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "daemon/connection/connection.h"
#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;

// Answers every request with `fn`.
class FnHandler final : public Handler {
 public:
  explicit FnHandler(std::function<void(Response&)> fn) : fn_(std::move(fn)) {}
  std::unique_ptr<Exchange> Start(const Request&) override {
    return Immediately(fn_);
  }

 private:
  std::function<void(Response&)> fn_;
};

class RouteAccountingTest : public testing::MachineTest {
 protected:
  RouteAccountingTest() {
    std::vector<RouteConfig> routes = {DefaultRoute("/hello", "text"),
                                       DefaultRoute("/sleep", "wait")};
    Build(routes);
  }
  void Get(Connection& c, std::string_view target) {
    c.Received("GET " + std::string(target) + " HTTP/1.1\r\nHost: a\r\n\r\n",
               now_);
  }
  const RouteCounters& route(size_t id) { return stats_->Slot(0).routes[id]; }

  static constexpr size_t kOther = 2;  // OtherRouteId of the two routes
};

TEST_F(RouteAccountingTest, RequestsCountUnderTheirRoute) {
  EXPECT_EQ(router_->Match("/hello").id, 0u);
  EXPECT_EQ(router_->Match("/sleep").id, 1u);
  EXPECT_EQ(router_->Match("/nope").id, kOther);
  auto c = Open();
  Get(*c, "/hello");
  Get(*c, "/hello?x=1");
  Get(*c, "/nope");
  EXPECT_EQ(route(0).requests.load(), 2u);
  EXPECT_EQ(route(0).started.load(), 2u);
  EXPECT_EQ(route(1).requests.load(), 0u);
  EXPECT_EQ(route(kOther).requests.load(), 1u);
  EXPECT_EQ(route(0).wait_us.load(), 0u) << "/hello never waits";
}

TEST_F(RouteAccountingTest, WaitingTimeIsTheParkedTimeOnTheMachineClock) {
  auto c = Open();
  Get(*c, "/sleep?ms=50");
  ASSERT_EQ(c->phase(), Phase::kHandler);
  EXPECT_EQ(route(1).requests.load(), 0u) << "not answered yet";
  now_ += milliseconds(20);
  c->DeadlinePassed(now_);  // early: still parked, nothing counted
  now_ += milliseconds(30);
  c->DeadlinePassed(now_);
  EXPECT_NE(std::string(c->pending_out()).find("waited 50 ms"),
            std::string::npos);
  EXPECT_EQ(route(1).requests.load(), 1u);
  EXPECT_EQ(route(1).wait_us.load(), 50000u) << "park at T, resume at T+50ms";
  // A second wait on the same route adds its own.
  Get(*c, "/sleep?ms=7");
  now_ += milliseconds(7);
  c->DeadlinePassed(now_);
  EXPECT_EQ(route(1).requests.load(), 2u);
  EXPECT_EQ(route(1).wait_us.load(), 57000u);
}

TEST_F(RouteAccountingTest, AnExchangeDroppedWhileWaitingIsNotCounted) {
  auto c = Open();
  Get(*c, "/sleep?ms=50");
  c->PeerClosed();
  c->CountClosed();
  EXPECT_EQ(route(1).started.load(), 1u);
  EXPECT_EQ(route(1).requests.load(), 0u);
  EXPECT_EQ(route(1).wait_us.load(), 0u);
}

TEST_F(RouteAccountingTest, ACutShortExchangeCountsWithItsCpuSample) {
  auto c = Open();
  Get(*c, "/sleep?ms=1");  // the route's first request: warm-up, not sampled
  now_ += milliseconds(1);
  c->DeadlinePassed(now_);
  ASSERT_EQ(route(1).requests.load(), 1u);
  ASSERT_EQ(route(1).cpu_samples.load(), 0u);
  Get(*c, "/sleep?ms=50");
  c->CutShort();  // a forced stop: 503 without resuming the handler
  EXPECT_NE(std::string(c->pending_out()).find("503"), std::string::npos);
  EXPECT_EQ(route(1).requests.load(), 2u);
  EXPECT_EQ(route(1).cpu_samples.load(), 1u) << "the second request is sampled";
}

TEST_F(RouteAccountingTest, CpuIsSampledOneInNPerRoute) {
  auto c = Open();
  const uint64_t n = 3 * kCpuSampleEvery;
  for (uint64_t i = 0; i < n; ++i) Get(*c, "/hello");
  // Requests 1, N+1, 2N+1 (and any a second after the previous sample: this
  // loop takes far less); request 0 is the route's warm-up.
  EXPECT_GE(route(0).cpu_samples.load(), 3u);
  EXPECT_LE(route(0).cpu_samples.load(), 4u);
  EXPECT_EQ(route(0).requests.load(), n);
  // Another route keeps its own count: its first request is warm-up, its
  // second is sampled.
  Get(*c, "/nope");
  EXPECT_EQ(route(kOther).cpu_samples.load(), 0u);
  Get(*c, "/nope");
  EXPECT_EQ(route(kOther).cpu_samples.load(), 1u);
}

// The forced sample a second after the last one works on the low 32 bits of
// the microsecond clock: across their wrap too.
TEST_F(RouteAccountingTest, TheOneASecondSampleSurvivesTheClockWrap) {
  now_ = Clock::time_point(std::chrono::microseconds((uint64_t{1} << 32) - 1));
  auto c = Open();
  Get(*c, "/hello");  // warm-up
  Get(*c, "/hello");  // the stride's first sample, just before the wrap
  ASSERT_EQ(route(0).cpu_samples.load(), 1u);
  now_ += milliseconds(500);  // past the wrap, within the second
  Get(*c, "/hello");
  EXPECT_EQ(route(0).cpu_samples.load(), 1u);
  now_ += milliseconds(600);  // a second and more after the sample
  Get(*c, "/hello");
  EXPECT_EQ(route(0).cpu_samples.load(), 2u);
}

// A handler that fails (Response::handler_error: a Lua runtime error, a
// module's malformed answer) is counted on its route; other answers, 500s
// of the handler's own choosing included, are not.
TEST_F(RouteAccountingTest, HandlerErrorsCountOnTheirRoute) {
  router_->Add("/fails", std::make_unique<FnHandler>([](Response& r) {
                 r.status = 500;
                 r.handler_error = true;
               }));
  router_->Add("/chooses500", std::make_unique<FnHandler>(
                                  [](Response& r) { r.status = 500; }));
  auto c = Open();
  Get(*c, "/fails");
  Get(*c, "/fails");
  Get(*c, "/chooses500");
  Get(*c, "/hello");
  EXPECT_EQ(route(kOther).requests.load(), 3u);  // Add()ed: "(other)"
  EXPECT_EQ(route(kOther).handler_errors.load(), 2u);
  EXPECT_EQ(route(0).handler_errors.load(), 0u)
      << "the flag does not outlive its request (/hello came after)";
  const std::vector<RouteTotals> sum = stats_->SumRoutes();
  EXPECT_EQ(sum[kOther].handler_errors, 2u);
}

// Every route of a config counts under its own id, however many there are:
// the region is sized from the config.
TEST_F(RouteAccountingTest, EveryRouteOfALargeConfigHasItsOwnCounters) {
  std::vector<RouteConfig> routes;
  for (size_t i = 0; i < 1000; ++i) {
    routes.push_back(DefaultRoute("/r" + std::to_string(i), "text"));
  }
  auto stats = StatsRegion::Create(2, routes.size());
  EXPECT_EQ(stats->route_ids(), 1001u);
  Router router(routes, ServerInfo{}, nullptr, 0, &stats->Slot(1));
  EXPECT_EQ(router.Match("/r0").id, 0u);
  EXPECT_EQ(router.Match("/r999").id, 999u);
  EXPECT_EQ(router.Match("/nope").id, 1000u);
  EXPECT_EQ(OtherRouteId(routes), 1000u);
  const std::vector<std::string> names = RouteNames(routes);
  ASSERT_EQ(names.size(), 1001u);
  EXPECT_EQ(names[0], "/r0");
  EXPECT_EQ(names[999], "/r999");
  EXPECT_EQ(names[1000], kOtherRouteName);
  // Slot 1's counters are its own and summed by id; slot 0 never served.
  Bump(stats->Slot(1).routes[999].requests, 3);
  Bump(stats->Slot(1).routes[1000].requests);
  Bump(stats->Slot(1).requests, 4);
  const std::vector<RouteTotals> sum = stats->SumRoutes();
  ASSERT_EQ(sum.size(), 1001u);
  EXPECT_EQ(sum[999].requests, 3u);
  EXPECT_EQ(sum[1000].requests, 1u);
  EXPECT_EQ(sum[0].requests, 0u);
}

TEST_F(RouteAccountingTest, TheWindowHoldsEveryRoute) {
  auto stats = StatsRegion::Create(1, 1000);
  RouteWindow w;
  w.interval_us = 5;
  w.workers = 2;
  w.routes.resize(1001);
  w.routes[1000].requests = 7;
  w.routes[500].cpu_samples = 9;
  stats->PublishWindow(w);
  const RouteWindow r = stats->ReadWindow();
  EXPECT_EQ(r.interval_us, 5u);
  EXPECT_EQ(r.workers, 2u);
  ASSERT_EQ(r.routes.size(), 1001u);
  EXPECT_EQ(r.routes[1000].requests, 7u);
  EXPECT_EQ(r.routes[500].cpu_samples, 9u);
}

TEST_F(RouteAccountingTest, ARouterRefusesASlotSizedForFewerRoutes) {
  std::vector<RouteConfig> routes = {DefaultRoute("/a", "text"),
                                     DefaultRoute("/b", "text")};
  auto stats = StatsRegion::Create(1, 1);
  EXPECT_DEATH(Router(routes, ServerInfo{}, nullptr, 0, &stats->Slot(0)),
               "2 routes, stats slot has 2 route ids");
}

// The label is the pattern, never a request's path; with the methods when
// two routes share the pattern.
TEST_F(RouteAccountingTest, RoutesAreNamedByPatternAndSharedOnesByMethods) {
  RouteConfig get = DefaultRoute("/items/{id}", "text");
  get.methods = {"GET"};
  RouteConfig del = DefaultRoute("/items/{id}", "text");
  del.methods = {"DELETE", "PUT"};
  const std::vector<RouteConfig> routes = {DefaultRoute("/static/", "text"),
                                           get, del};
  const std::vector<std::string> names = RouteNames(routes);
  EXPECT_EQ(names[0], "/static/");
  EXPECT_EQ(names[1], "GET /items/{id}");
  EXPECT_EQ(names[2], "DELETE,PUT /items/{id}");
  Router router(routes, ServerInfo{});
  EXPECT_EQ(router.Match("/static/a/b.css").id, 0u);
  EXPECT_EQ(router.Match("/items/7").id, 1u);
}

}  // namespace
}  // namespace gearbox
