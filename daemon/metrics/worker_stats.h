// Per-worker counters in a shared-memory region: each worker (thread, child
// process or event loop) owns one slot and is its only writer, so the hot path
// takes no lock and no atomic read-modify-write; readers sum the slots. Prefork
// children inherit the MAP_SHARED mapping across fork(), so the master sees
// their counts with no IPC.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/metrics/histogram.h"

namespace gearbox {

// Single-writer increment: a relaxed load + store is enough when only one
// thread writes the slot, and avoids a locked instruction per request.
inline void Bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n,
                std::memory_order_relaxed);
}

// Why a connection closed.
enum class CloseReason : int {
  kClient = 0,     // peer closed or reset
  kIdleTimeout,    // keep-alive connection idle past idle_timeout
  kHeaderTimeout,  // request head or body not complete in time
  kError,          // bad input or I/O error
  kDrain,          // graceful stop / reload
  kServer,  // server chose to close (Connection: close, recycling, handoff)
  kSendTimeout,  // client did not read its response within send_timeout
  kCount,
};

// Per-route counters: one RouteCounters per route id per worker slot, sized
// from the generation's config (StatsRegion::Create): ids 0..routes-1 are the
// config's routes in order, id `routes` counts requests no route serves (404,
// 405, 400, "*"), shown as "(other)". The hot path indexes the slot's own
// array: no lookup, no allocation. 64 bytes per route id per worker slot.
// One request in this many, per route and worker, has its thread CPU time read
// (two syscalls of ~1.3 us each). 1 in 64 keeps that below 1% of a /hello.
// The stride starts at the second request (the first is warm-up).
inline constexpr uint64_t kCpuSampleEvery = 64;
// ... and at least one a second per route and worker, so a route with little
// traffic per worker (many threads, few requests each) still has figures.
inline constexpr uint64_t kCpuSampleMaxGapUs = 1000000;

// One route's figures in one worker slot (single writer, like the rest of the
// slot). Sums, not histograms: the advisor needs means (Little's law), and a
// histogram per route per worker would cost 2.4 KiB each.
struct alignas(64) RouteCounters {
  // Requests begun, wrapping (drives CPU sampling; 2^32 is a multiple of
  // kCpuSampleEvery, so the stride goes on across the wrap). Its writer's.
  std::atomic<uint32_t> started{0};
  // The low 32 bits of the start (us) of the last sampled request: the gap
  // is taken modulo 2^32, right for gaps under 71 minutes (a longer one may
  // delay the next forced sample to the stride's). Its writer's.
  std::atomic<uint32_t> last_sample_us{0};
  std::atomic<uint64_t> requests{0};     // requests answered
  std::atomic<uint64_t> service_us{0};   // handler start -> response serialized
  std::atomic<uint64_t> queue_us{0};     // connection ready -> handler start
  std::atomic<uint64_t> wait_us{0};      // parked in handler waits
  std::atomic<uint64_t> cpu_ns{0};       // thread CPU time of sampled requests
  std::atomic<uint64_t> cpu_samples{0};  // requests whose CPU time was read
  // Requests the handler failed (Response::handler_error): a Lua runtime
  // error, a module's malformed answer or failed start.
  std::atomic<uint64_t> handler_errors{0};
};
static_assert(sizeof(RouteCounters) == 64, "one cache line per route");

// Plain values of RouteCounters: totals over slots, or one interval's delta.
// handler_errors is a total only: the window and the history (the advisor's
// figures) carry the other six.
struct RouteTotals {
  uint64_t requests = 0, service_us = 0, queue_us = 0, wait_us = 0, cpu_ns = 0,
           cpu_samples = 0, handler_errors = 0;
  void Add(const RouteCounters& c);
  RouteTotals Since(const RouteTotals& earlier) const;
};

// The supervisor's view of the last stats interval, per route id, published
// in the shared region (StatsRegion::PublishWindow) so /status (served by any
// worker, in any process) shows the same window the advice was computed from.
struct RouteWindow {
  uint64_t interval_us = 0;         // 0: no interval completed yet
  uint64_t workers = 0;             // the model's worker count then
  std::vector<RouteTotals> routes;  // by route id
};

// Figures summed over slots (StatsRegion::Sum) and regions (LifetimeStats).
struct StatsTotals {
  uint64_t requests = 0, bytes_in = 0, bytes_out = 0, accepted = 0;
  uint64_t status_class[6] = {};
  uint64_t closed[static_cast<int>(CloseReason::kCount)] = {};
  uint64_t rejected = 0, bad_input = 0, parked = 0, inflight = 0,
           open_conns = 0, busy = 0, request_timeouts = 0, loop_stalls = 0;
  uint64_t queue_depth = 0, queue_high = 0;
  uint64_t workers = 0;  // of the regions summed (StatsRegion::SetWorkers)
  // The bounds the pools move in (StatsRegion::SetWorkerBounds).
  uint64_t workers_min = 0, workers_max = 0;
  HistogramSnapshot service;
  HistogramSnapshot queue_wait;
  uint64_t open() const {
    uint64_t c = 0;
    for (uint64_t x : closed) c += x;
    return accepted >= c ? accepted - c : 0;
  }
  uint64_t timeouts() const {
    return closed[static_cast<int>(CloseReason::kHeaderTimeout)] +
           closed[static_cast<int>(CloseReason::kIdleTimeout)] +
           closed[static_cast<int>(CloseReason::kSendTimeout)];
  }
};

struct alignas(64) WorkerStats {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> status_class[6]{};  // index = status / 100 (1..5)
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> closed[static_cast<int>(CloseReason::kCount)]{};
  std::atomic<uint64_t> rejected{0};  // 503 from a full queue or connection cap
  std::atomic<uint64_t> bad_input{0};  // 4xx/close from unparseable input
  // Requests past their deadline: answered 504, or (prefork) their child
  // killed.
  std::atomic<uint64_t> request_timeouts{0};
  // async: callbacks that ran longer than [async] stall_threshold.
  std::atomic<uint64_t> loop_stalls{0};
  // prefork: connections whose slow head the master's head guard took over.
  std::atomic<uint64_t> parked{0};
  std::atomic<uint64_t> inflight{0};    // requests between parse and response
  std::atomic<uint64_t> open_conns{0};  // connections this worker holds
  // prefork: idle kept-alive connections a child holds beside the one in hand
  // (counted into open_conns' totals; a child holding only these is free).
  std::atomic<uint64_t> idle_held{0};
  std::atomic<uint64_t> busy{0};  // 1 while serving a request
  // KiB the worker's Lua state held after its last full collection (0: no
  // Lua route); a gauge, written by the worker's runtime.
  std::atomic<uint64_t> lua_kib{0};
  std::atomic<int32_t> pid{0};  // owning process (prefork child) or 0
  std::atomic<int32_t> tid{0};
  // Threadpool hand-off queue (acceptor slot only): depth now and high-water
  // mark since the last stats line (the reporter resets it).
  std::atomic<uint64_t> queue_depth{0};
  std::atomic<uint64_t> queue_high{0};
  // The request in hand, for /status?full: start time (steady clock, us) and
  // the first bytes of its path. Relaxed word-sized stores: a reader may see a
  // torn path, never a crash.
  std::atomic<uint64_t> current_start_us{0};
  // ... and its deadline (start + the route's timeout), same clock.
  std::atomic<uint64_t> current_deadline_us{0};
  static constexpr size_t kPathWords = 6;
  std::atomic<uint64_t> current_path[kPathWords]{};
  LatencyHistogram service;  // handler start -> response serialized
  LatencyHistogram
      queue_wait;  // connection ready (accepted/readable) -> handler start
  // This slot's counters by route id (Router::Match), route_ids() of them in
  // the same mapping (StatsRegion::Create sets it; null in a WorkerStats of
  // its own, which counts no route).
  RouteCounters* routes = nullptr;
  size_t route_ids = 0;

  void CountClose(CloseReason reason) {
    Bump(closed[static_cast<int>(reason)]);
  }
  void CountStatus(int status) {
    int cls = status / 100;
    if (cls >= 1 && cls <= 5) Bump(status_class[cls]);
  }
  void SetCurrentPath(std::string_view path);
  std::string CurrentPath() const;
  // This slot's figures added into `t`.
  void AddTo(StatsTotals& t) const;
  // Adds the counters of `t` (not its gauges) to this slot; single writer.
  // A counter added to the slot belongs in both functions.
  void AddCounters(const StatsTotals& t);
};

// A fixed array of slots in one anonymous shared mapping, with each slot's
// route counters and the published window after them.
class StatsRegion {
 public:
  // Maps `slots` zeroed slots for a config of `routes` routes (route ids
  // 0..routes, the last for requests no route serves), shared with children
  // forked later. Aborts on failure (it happens once at startup; without it
  // nothing can be counted). The route counters are left as the kernel's
  // zero pages: a worker makes resident only the pages of routes it serves.
  static std::shared_ptr<StatsRegion> Create(size_t slots, size_t routes);
  ~StatsRegion();
  StatsRegion(const StatsRegion&) = delete;
  StatsRegion& operator=(const StatsRegion&) = delete;

  size_t size() const { return slots_; }
  WorkerStats& Slot(size_t i) { return base_[i]; }
  const WorkerStats& Slot(size_t i) const { return base_[i]; }

  using Totals = StatsTotals;
  // O(slots) scan; slots <= a few thousand, read once per interval or /status
  // hit.
  Totals Sum() const;
  // Sum() added into `t` (several regions make one total).
  void AddTo(Totals& t) const;
  // Returns the queue high-water mark since the previous call and restarts it.
  uint64_t TakeQueueHigh();
  size_t route_ids() const { return route_ids_; }
  // Per-route totals over every slot that has answered a request, indexed by
  // route id (route_ids() entries). O(slots x routes), once per interval or
  // /status hit; a slot that never served is skipped, so its pages stay
  // untouched.
  std::vector<RouteTotals> SumRoutes() const;
  // The supervisor's last interval (one writer), and any worker's read of
  // it. A seqlock: readers retry while a write is in progress.
  void PublishWindow(const RouteWindow& w);
  RouteWindow ReadWindow() const;

  // Workers (threads, children, loops) of the generation counting here, set by
  // the supervisor once the model's Start() has returned (0 before: for those
  // first milliseconds its busy workers count but its workers do not); Sum()
  // reports it. In the shared mapping, so a prefork child forked before it was
  // set reads it too.
  void SetWorkers(int n) {
    header_->workers.store(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  // The model's own: its worker count now (pools that follow the load
  // change it), and the bounds it moves in (loops: both the count).
  void SetWorkerBounds(int now, int min, int max) {
    SetWorkers(now);
    header_->workers_min.store(static_cast<uint64_t>(min),
                               std::memory_order_relaxed);
    header_->workers_max.store(static_cast<uint64_t>(max),
                               std::memory_order_relaxed);
  }
  // threadpool: a request reported stuck past its deadline (request_stuck),
  // counted into request_timeouts. The model's supervisor-side code only.
  void CountStuckRequest() {
    header_->stuck_requests.fetch_add(1, std::memory_order_relaxed);
  }
  // Set once the generation has drained and its counts have moved into the
  // process-lifetime totals (LifetimeStats::Retire); those skip it from then.
  bool retired() const {
    return header_->retired.load(std::memory_order_relaxed) != 0;
  }
  void MarkRetired() { header_->retired.store(1, std::memory_order_relaxed); }

 private:
  // Shared like the slots: the first cache line of the mapping.
  struct alignas(64) Header {
    std::atomic<uint64_t> workers{0};
    std::atomic<uint64_t> retired{0};
    std::atomic<uint64_t> workers_min{0};
    std::atomic<uint64_t> workers_max{0};
    std::atomic<uint64_t> stuck_requests{0};
    // The published window: odd while being written (mutable: a reader's
    // read-dont-modify-write), then its scalars; its entries follow the
    // route counters.
    mutable std::atomic<uint64_t> window_seq{0};
    std::atomic<uint64_t> window_interval_us{0};
    std::atomic<uint64_t> window_workers{0};
  };
  struct WindowEntry {
    std::atomic<uint64_t> v[6];  // RouteTotals fields, in order
  };
  static size_t MappedBytes(size_t slots, size_t route_ids);
  StatsRegion(void* mem, size_t slots, size_t route_ids);
  RouteCounters* RouteBase() const;
  WindowEntry* WindowBase() const;
  size_t MappedBytes() const { return MappedBytes(slots_, route_ids_); }
  Header* header_;
  WorkerStats* base_;
  size_t slots_, route_ids_;
};

}  // namespace gearbox
