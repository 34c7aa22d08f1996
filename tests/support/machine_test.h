// A base fixture for unit tests of the connection state machine without a
// socket: one worker's ConnectionEnv (a router over the fixture's routes, one
// stats slot, the scratch request and response) under the fixture's limits,
// and a clock the test moves by hand.
#ifndef GEARBOX_TESTS_SUPPORT_MACHINE_TEST_H_
#define GEARBOX_TESTS_SUPPORT_MACHINE_TEST_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "daemon/connection/connection.h"
#include "daemon/router.h"

namespace gearbox::testing {

class MachineTest : public ::testing::Test {
 protected:
  // Call from the fixture's constructor once limits_ is set.
  void Build(const std::vector<RouteConfig>& routes) {
    router_ = std::make_unique<Router>(routes, ServerInfo{});
    stats_ = StatsRegion::Create(1, routes.size());
    env_.cycle = {router_.get(), &stats_->Slot(0), nullptr, 0};
    env_.limits = &limits_;
    env_.draining = &draining_;
    env_.request = &request_;
    env_.response = &response_;
  }
  // A connection of `protocol` attached to the env, accepted at now_.
  std::unique_ptr<Connection> Open(Protocol protocol = Protocol::kHttp) {
    auto c = std::make_unique<Connection>(protocol, limits_);
    c->Attach(&env_);
    c->Accepted(now_, 0);
    return c;
  }

  // Everything the connection wants written, as if the socket took it.
  std::string Drain(Connection& c) {
    std::string out(c.pending_out());
    c.Sent(out.size(), now_);
    return out;
  }
  WorkerStats& stats() { return stats_->Slot(0); }
  uint64_t closed(CloseReason r) {
    return stats().closed[static_cast<int>(r)].load();
  }

  LimitsConfig limits_;
  std::unique_ptr<Router> router_;
  std::shared_ptr<StatsRegion> stats_;
  std::atomic<bool> draining_{false};
  Request request_;
  Response response_;
  ConnectionEnv env_;
  Clock::time_point now_ = Clock::time_point(std::chrono::hours(1));
};

}  // namespace gearbox::testing

#endif  // GEARBOX_TESTS_SUPPORT_MACHINE_TEST_H_
