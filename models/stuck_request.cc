#include "models/stuck_request.h"

namespace gearbox {

uint64_t StuckRequestStart(const WorkerStats& stats, uint64_t now_us,
                           std::chrono::microseconds grace) {
  const uint64_t start = stats.current_start_us.load(std::memory_order_acquire);
  if (start == 0) return 0;
  const uint64_t deadline =
      stats.current_deadline_us.load(std::memory_order_relaxed);
  if (deadline < start) return 0;  // a torn read of a request just starting
  return now_us >= deadline + static_cast<uint64_t>(grace.count()) ? start : 0;
}

}  // namespace gearbox
