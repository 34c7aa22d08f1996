// Monotonic microseconds, the one time base for latency figures (vDSO, no
// syscall), and the calling thread's CPU clock.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace gearbox {

inline uint64_t NowMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// CPU time the calling thread has used, in nanoseconds. Not in the vDSO: a
// real syscall, a sizeable share of a light request's own cost, so
// per-request CPU figures are sampled (kCpuSampleEvery).
inline uint64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

// The thread CPU time between a ThreadCpuNanos() reading `mark_ns` and now,
// less what one reading itself costs (the smallest of a few back-to-back
// pairs, taken once per process), so that a short handler's run is not
// inflated by the readings around it.
inline uint64_t ThreadCpuSince(uint64_t mark_ns) {
  static const uint64_t read_cost_ns = [] {
    uint64_t best = ~uint64_t{0};
    for (int i = 0; i < 8; ++i) {
      const uint64_t a = ThreadCpuNanos();
      const uint64_t b = ThreadCpuNanos();
      if (b - a < best) best = b - a;
    }
    return best;
  }();
  const uint64_t d = ThreadCpuNanos() - mark_ns;
  return d > read_cost_ns ? d - read_cost_ns : 0;
}

}  // namespace gearbox
