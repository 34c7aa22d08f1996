// state_machine_bench: thread CPU time per /hello through the connection state
// machine (codec, router, handler, per-route accounting), without sockets (the
// only syscalls are the sampled CPU clock reads): a figure the host's noise
// barely moves. With a script path, the request goes to a `lua` route running
// that script instead of the `text` route. Built from two trees (copy
// this file and its BUILD rule into the old one), it shows what a change costs
// per request; interleave the runs. Prints ns per request.
//   bazel run //tests/bench:state_machine_bench -- 1000000
//   bazel run //tests/bench:state_machine_bench -- 1000000
//   "$PWD/sdk/examples/lua/hello.lua"
#include <time.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "daemon/connection/connection.h"
#include "daemon/router.h"

namespace gearbox {
namespace {

double CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int Run(int n, const char* script) {
  LimitsConfig limits;
  std::vector<RouteConfig> routes = {
      DefaultRoute("/hello", "text"), DefaultRoute("/sleep", "wait"),
      DefaultRoute("/status", "status"), DefaultRoute("/lua", "lua")};
  routes[0].params.Set("body", std::string("hello world\n"));
  routes[3].params.Set("script", std::string(script ? script : ""));
  if (!script) routes.pop_back();
  Router router(routes, ServerInfo{});
  auto stats = StatsRegion::Create(1, routes.size());
  std::atomic<bool> draining{false};
  Request request;
  Response response;
  ConnectionEnv env;
  env.cycle = {&router, &stats->Slot(0), nullptr, 0};
  env.limits = &limits;
  env.draining = &draining;
  env.request = &request;
  env.response = &response;
  Connection c(Protocol::kHttp, limits);
  c.Attach(&env);
  auto now = std::chrono::steady_clock::now();
  c.Accepted(now, 0);
  const std::string get = script ? "GET /lua HTTP/1.1\r\nHost: a\r\n\r\n"
                                 : "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";
  for (int i = 0; i < 100000; ++i) {  // warm-up
    c.Received(get, now);
    c.Sent(c.pending_out().size(), now);
  }
  const double t0 = CpuNs();
  for (int i = 0; i < n; ++i) {
    c.Received(get, now);
    c.Sent(c.pending_out().size(), now);
  }
  const double t1 = CpuNs();
  printf("%.1f\n", (t1 - t0) / n);
  return 0;
}

}  // namespace
}  // namespace gearbox

int main(int argc, char** argv) {
  return gearbox::Run(argc > 1 ? atoi(argv[1]) : 2000000,
                      argc > 2 ? argv[2] : nullptr);
}
