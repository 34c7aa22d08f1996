#include "models/threadpool/interruptible_sleeper.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace gearbox {
namespace {

// FUTEX_WAIT_BITSET takes an absolute deadline (CLOCK_MONOTONIC): a wake-up
// that is not the abort sleeps on to the same end.
long FutexWaitUntil(std::atomic<uint32_t>* word, uint32_t expected,
                    const timespec* until) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word),
                 FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, until,
                 nullptr, FUTEX_BITSET_MATCH_ANY);
}

}  // namespace

bool InterruptibleSleeper::SleepFor(std::chrono::microseconds d) {
  const timespec until = MonotonicAfter(d);
  while (aborted_.load(std::memory_order_acquire) == 0) {
    if (FutexWaitUntil(&aborted_, 0, &until) == 0) continue;  // a wake-up
    // EAGAIN: aborted meanwhile (the loop sees it); EINTR: a signal. Any
    // other error cannot sleep at all: trying again would spin.
    if (errno != EAGAIN && errno != EINTR) return true;
  }
  return false;
}

void InterruptibleSleeper::Abort() {
  aborted_.store(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&aborted_),
          FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace gearbox
