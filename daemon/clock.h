// Monotonic microseconds, the one time base for latency figures (vDSO, no
// syscall).
#pragma once

#include <chrono>
#include <cstdint>

namespace gearbox {

inline uint64_t NowMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace gearbox
