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

struct alignas(64) WorkerStats {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> status_class[6]{};  // index = status / 100 (1..5)
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> closed[static_cast<int>(CloseReason::kCount)]{};
  std::atomic<uint64_t> rejected{0};  // 503 from a full queue or connection cap
  std::atomic<uint64_t> bad_input{0};  // 4xx/close from unparseable input
  // prefork: connections whose slow head the master's head guard took over.
  std::atomic<uint64_t> parked{0};
  std::atomic<uint64_t> inflight{0};    // requests between parse and response
  std::atomic<uint64_t> open_conns{0};  // connections this worker holds
  std::atomic<uint64_t> busy{0};        // 1 while serving a request
  std::atomic<int32_t> pid{0};          // owning process (prefork child) or 0
  std::atomic<int32_t> tid{0};
  // Threadpool hand-off queue (acceptor slot only): depth now and high-water
  // mark since the last stats line (the reporter resets it).
  std::atomic<uint64_t> queue_depth{0};
  std::atomic<uint64_t> queue_high{0};
  // The request in hand, for /status?full: start time (steady clock, us) and
  // the first bytes of its path. Relaxed word-sized stores: a reader may see a
  // torn path, never a crash.
  std::atomic<uint64_t> current_start_us{0};
  static constexpr size_t kPathWords = 6;
  std::atomic<uint64_t> current_path[kPathWords]{};
  LatencyHistogram service;  // handler start -> response serialized
  LatencyHistogram
      queue_wait;  // connection ready (accepted/readable) -> handler start

  void CountClose(CloseReason reason) {
    Bump(closed[static_cast<int>(reason)]);
  }
  void CountStatus(int status) {
    int cls = status / 100;
    if (cls >= 1 && cls <= 5) Bump(status_class[cls]);
  }
  void SetCurrentPath(std::string_view path);
  std::string CurrentPath() const;
};

// A fixed array of slots in one anonymous shared mapping.
class StatsRegion {
 public:
  // Maps `slots` zeroed slots, shared with children forked later. Aborts on
  // failure (it happens once at startup; without it nothing can be counted).
  static std::shared_ptr<StatsRegion> Create(size_t slots);
  ~StatsRegion();
  StatsRegion(const StatsRegion&) = delete;
  StatsRegion& operator=(const StatsRegion&) = delete;

  size_t size() const { return slots_; }
  WorkerStats& Slot(size_t i) { return base_[i]; }
  const WorkerStats& Slot(size_t i) const { return base_[i]; }

  struct Totals {
    uint64_t requests = 0, bytes_in = 0, bytes_out = 0, accepted = 0;
    uint64_t status_class[6] = {};
    uint64_t closed[static_cast<int>(CloseReason::kCount)] = {};
    uint64_t rejected = 0, bad_input = 0, parked = 0, inflight = 0,
             open_conns = 0, busy = 0;
    uint64_t queue_depth = 0, queue_high = 0;
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
  // O(slots) scan; slots <= a few thousand, read once per interval or /status
  // hit.
  Totals Sum() const;
  // Returns the queue high-water mark since the previous call and restarts it.
  uint64_t TakeQueueHigh();

 private:
  StatsRegion(WorkerStats* base, size_t slots) : base_(base), slots_(slots) {}
  WorkerStats* base_;
  size_t slots_;
};

}  // namespace gearbox
