#include "tests/support/wait_until.h"

#include <algorithm>
#include <thread>

namespace gearbox::testing {

bool WaitUntil(const std::function<bool()>& done, Millis timeout,
               std::chrono::microseconds every) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    // The poll interval: what the tests wait on (a log file, /proc, another
    // process's counters) offers nothing to block on until it changes.
    std::this_thread::sleep_for(
        std::min<Clock::duration>(every, deadline - now));
  }
}

}  // namespace gearbox::testing
