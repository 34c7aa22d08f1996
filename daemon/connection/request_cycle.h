// The model-independent part of serving one parsed request: route it, start the
// exchange, and turn the finished response into bytes with the counters,
// latency histograms and optional request log updated. The connection state
// machine (connection.h) is its one caller, so every model answers and counts
// the same way.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/clock.h"
#include "daemon/codec.h"
#include "daemon/handler.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/request_log.h"
#include "daemon/router.h"

namespace gearbox {

// Everything a worker (thread, child, loop) needs to serve requests.
struct RequestCycle {
  const Router* router = nullptr;
  WorkerStats* stats = nullptr;
  const RequestLog* log = nullptr;  // null or disabled: no per-request logging
  int worker = 0;
  // Non-null: each request's path is copied here when it starts (async stall
  // detection names the path of a request that blocked its loop).
  std::string* started_path = nullptr;
};

// What FinishRequest needs to know about a request once its views may be gone.
struct RequestTiming {
  uint64_t start_us = 0;  // handler start
  uint64_t queue_us = 0;  // ready -> handler start
  // The route's deadline (its `timeout`, else [limits] request_timeout).
  std::chrono::microseconds timeout{0};
  uint32_t route = 0;  // route id (Route::id)
  bool waited = false;
  bool in_wait = false;        // parked now (between WaitBegins and WaitEnds)
  bool cpu_sampled = false;    // this request's thread CPU time is read
  uint64_t cpu_mark_ns = 0;    // thread CPU clock when the current run began
  uint64_t cpu_ns = 0;         // on-CPU time of the runs that ended
  uint64_t wait_since_us = 0;  // machine clock when the current wait began
  uint64_t wait_us = 0;        // time parked in handler waits so far
};

inline uint64_t MicrosOf(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          t.time_since_epoch())
          .count());
}

// The machine parks the exchange (it enters its handler-wait phase) at `now`:
// the on-CPU run ends and the wait clock starts. Any kind of wait (timer or
// fds) counts the same: what the advisor needs is time not on the CPU.
inline void WaitBegins(RequestTiming& timing,
                       std::chrono::steady_clock::time_point now) {
  timing.waited = true;
  timing.in_wait = true;
  timing.wait_since_us = MicrosOf(now);
  if (timing.cpu_sampled) timing.cpu_ns += ThreadCpuSince(timing.cpu_mark_ns);
}

// The machine takes the exchange up again at `now` (to resume or finish it),
// possibly on another thread: a new on-CPU run starts there.
inline void WaitEnds(RequestTiming& timing,
                     std::chrono::steady_clock::time_point now) {
  if (!timing.in_wait) return;
  timing.in_wait = false;
  const uint64_t now_us = MicrosOf(now);
  if (now_us > timing.wait_since_us)
    timing.wait_us += now_us - timing.wait_since_us;
  if (timing.cpu_sampled) timing.cpu_mark_ns = ThreadCpuNanos();
}

// In-flight bookkeeping, written once: a request enters flight when its
// exchange starts and leaves it when it is answered or dropped with its
// connection. An async loop has many requests in flight on one slot: the slot
// is busy while any is, and shows the oldest one.
inline void RequestEntersFlight(WorkerStats& stats, const RequestTiming& timing,
                                std::string_view path) {
  const uint64_t inflight = stats.inflight.load(std::memory_order_relaxed) + 1;
  stats.inflight.store(inflight, std::memory_order_relaxed);
  stats.busy.store(1, std::memory_order_relaxed);
  if (inflight != 1) return;
  // The deadline first: a reader that sees the start sees its deadline
  // (the prefork master and threadpool look for requests stuck past it).
  stats.current_deadline_us.store(
      timing.start_us + static_cast<uint64_t>(timing.timeout.count()),
      std::memory_order_relaxed);
  stats.current_start_us.store(timing.start_us, std::memory_order_release);
  stats.SetCurrentPath(path);
}

inline void RequestLeavesFlight(WorkerStats& stats) {
  const uint64_t inflight = stats.inflight.load(std::memory_order_relaxed) - 1;
  stats.inflight.store(inflight, std::memory_order_relaxed);
  if (inflight != 0) return;
  stats.busy.store(0, std::memory_order_relaxed);
  stats.current_start_us.store(0, std::memory_order_relaxed);
}

// Starts the exchange for `request` at `now` (the machine's clock: the base of
// its wait and request deadlines too, so a handler that waits X is served in
// no less than X); marks the worker busy and the request in flight until
// FinishRequest(). `ready_us` is when the connection was found ready (0 when
// not measured); `request_timeout` applies to routes without a timeout of
// their own. Routing writes the route's captures to `request`.
inline std::unique_ptr<Exchange> BeginRequest(
    const RequestCycle& cycle, Request& request, uint64_t ready_us,
    std::chrono::microseconds request_timeout,
    std::chrono::steady_clock::time_point now, RequestTiming& timing) {
  WorkerStats& stats = *cycle.stats;
  const Route& route = cycle.router->Match(request);
  timing = RequestTiming{};
  timing.route = route.id;
  timing.timeout = route.timeout.count() ? route.timeout : request_timeout;
  timing.start_us = MicrosOf(now);
  // Sampled per route (not per worker): a fixed stride over alternating
  // routes would otherwise always land on the same one. A route's first
  // request in a worker is never sampled: it pays the worker's warm-up (page
  // faults on copied-on-write pages, first allocations), once, not per
  // request, and would make a waiting route look CPU-heavy to the advisor;
  // a pool that grows under load would add such samples just when the
  // figures matter.
  RouteCounters& counters = stats.routes[route.id];
  const uint32_t started = counters.started.load(std::memory_order_relaxed);
  counters.started.store(started + 1, std::memory_order_relaxed);
  const uint32_t now_low = static_cast<uint32_t>(timing.start_us);
  const uint32_t last = counters.last_sample_us.load(std::memory_order_relaxed);
  timing.cpu_sampled =
      started > 0 && (started % kCpuSampleEvery == 1 ||
                      uint32_t(now_low - last) >= kCpuSampleMaxGapUs);
  if (timing.cpu_sampled) {
    counters.last_sample_us.store(now_low, std::memory_order_relaxed);
    timing.cpu_mark_ns = ThreadCpuNanos();
  }
  timing.queue_us =
      ready_us && ready_us < timing.start_us ? timing.start_us - ready_us : 0;
  stats.queue_wait.Record(timing.queue_us);
  RequestEntersFlight(stats, timing, request.path);
  if (cycle.started_path) cycle.started_path->assign(request.path);
  return route.handler->Start(request);
}

// Serializes the response and counts it. `request` needs valid method/path only
// when the request log is enabled. Returns true when the connection must close
// after the bytes in `out` are written.
inline bool FinishRequest(const RequestCycle& cycle, ServerCodec& codec,
                          const Request& request, const Response& response,
                          bool close, std::string& out,
                          const RequestTiming& timing) {
  WorkerStats& stats = *cycle.stats;
  size_t before = out.size();
  close = codec.AppendResponse(request, response, close, out);
  // An injected clock (unit tests) may run behind the machine's.
  const uint64_t end_us = NowMicros();
  const uint64_t duration =
      end_us > timing.start_us ? end_us - timing.start_us : 0;
  stats.service.Record(duration);
  RouteCounters& route = stats.routes[timing.route];
  Bump(route.requests);
  Bump(route.service_us, duration);
  Bump(route.queue_us, timing.queue_us);
  if (timing.wait_us) Bump(route.wait_us, timing.wait_us);
  if (timing.cpu_sampled) {
    // A request finished while parked (cut short) has no run to close.
    const uint64_t cpu =
        timing.cpu_ns +
        (timing.in_wait ? 0 : ThreadCpuSince(timing.cpu_mark_ns));
    Bump(route.cpu_ns, cpu);
    Bump(route.cpu_samples);
  }
  if (response.handler_error) Bump(route.handler_errors);
  Bump(stats.requests);
  stats.CountStatus(response.status);
  RequestLeavesFlight(stats);
  if (cycle.log && cycle.log->enabled()) {
    RequestRecord r;
    r.method = request.method;
    r.path = request.path;
    r.request_id = request.FindHeader("x-request-id");
    r.status = response.status;
    r.bytes_out = out.size() - before;
    r.duration_us = duration;
    r.queue_us = timing.queue_us;
    r.waited = timing.waited;
    r.worker = cycle.worker;
    cycle.log->Record(r);
  }
  return close;
}

}  // namespace gearbox
