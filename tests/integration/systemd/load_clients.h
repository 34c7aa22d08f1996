// Bounded HTTP load over a unix socket for the reload tests: clients that open
// a new connection per request, and keep-alive clients that retry once when a
// reused connection was closed while idle (what nginx does towards an
// upstream). Every loop stops at a flag, a request count or a time limit.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/systemd/unix_http.h"

namespace gearbox::testing {

using SteadyClock = std::chrono::steady_clock;

struct LoadResult {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::atomic<int> retried{
      0};  // keep-alive: reused connection closed while idle
  std::atomic<int> reconnects{0};  // keep-alive: new connections opened

  // Counts a failure and keeps the first 20, stamped with the time since `t0`
  // and the UTC wall clock (to line up with the daemon's ts= log fields).
  void Fail(SteadyClock::time_point t0, const std::string& who,
            const std::string& what);
  std::string Failures();

 private:
  std::mutex mu_;
  std::vector<std::string> failures_;
};

struct LoadLimits {
  const std::atomic<bool>* stop = nullptr;
  int max_requests = 3000;  // per client
  Millis max_time{20000};
  Millis pause{8};  // between requests: at most ~100 req/s per client
};

// 200 from the server, nothing else counts.
bool Good(const UnixResponse& r);
std::string Describe(const UnixResponse& r);
// UTC "HH:MM:SS.mmmZ".
std::string WallClock();

// Starts `fresh` new-connection-per-request clients and `keepalive` keep-alive
// clients against `path`, appending their threads to `threads` (join them).
// Requests alternate /hello and, every fourth, /sleep?ms=20 so that some are
// in flight when a generation starts draining.
void RunLoad(const std::string& path, int fresh, int keepalive,
             const LoadLimits& limits, LoadResult& out,
             std::vector<std::thread>& threads, SteadyClock::time_point t0);

}  // namespace gearbox::testing
