// One blocking connection over a socketpair, served by a router of the test's
// own: the context ServeBlocking needs (stats slot, limits, scratch request
// and response) and the client's end of the socket.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"
#include "models/blocking_connection.h"

namespace gearbox {

struct BlockingHarness {
  ~BlockingHarness() {
    if (client >= 0) close(client);
  }
  // Serves with `r` (`routes` of them); call with ASSERT_NO_FATAL_FAILURE.
  void Open(std::unique_ptr<Router> r, size_t routes) {
    router = std::move(r);
    stats = StatsRegion::Create(1, routes);
    ctx.env.cycle = {router.get(), &stats->Slot(0), nullptr, 0};
    ctx.env.limits = &limits;
    ctx.env.draining = &draining;
    ctx.env.request = &request;
    ctx.env.response = &response;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    client = sv[0];
    c = std::make_unique<BlockingConnection>(sv[1], Protocol::kHttp, limits);
    c->conn.Attach(&ctx.env);
    c->conn.Accepted(Clock::now(), 0);
  }
  void Send(const std::string& bytes) {
    ASSERT_EQ(write(client, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  // What the client has received so far.
  std::string Received() {
    char buf[4096];
    ssize_t n = recv(client, buf, sizeof(buf), MSG_DONTWAIT);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

  std::unique_ptr<Router> router;
  std::shared_ptr<StatsRegion> stats;
  LimitsConfig limits;
  std::atomic<bool> draining{false};
  Request request;
  Response response;
  BlockingContext ctx;
  int client = -1;
  std::unique_ptr<BlockingConnection> c;
};

}  // namespace gearbox
