// How quickly a pool's queries are answered, as the pool picks a connection
// for the next one. A query sent to an idle pipelined connection wakes its
// backend, which sleeps in the kernel between queries: the wake-up and the
// context switches it causes cost gearboxd more CPU than a quick query takes
// on the server. A query sent to a connection whose backend is still busy
// with earlier ones wakes nobody. So quick queries ride behind busy
// connections, while slow ones (a pg_sleep, a report) spread over idle
// connections, where they would otherwise wait behind each other.
#pragma once

#include <chrono>

namespace gearbox::postgres {

class PgPace {
 public:
  using Clock = std::chrono::steady_clock;

  // Answers slower than this count as slow: well above a point lookup's
  // round trip on a loaded worker, below a millisecond's sleep.
  static constexpr Clock::duration kQuickBelow = std::chrono::microseconds(500);
  // Samples per verdict. The fastest of a window decides: an answer read
  // late because the worker was busy says nothing about the server, and
  // one read promptly says what the server takes.
  static constexpr int kWindow = 32;

  // A query sent to a connection with nothing else on it was answered
  // `took` after its send (read by the worker then: never less than what
  // the server took).
  void Sample(Clock::duration took) {
    if (took < window_min_) window_min_ = took;
    if (++samples_ < kWindow) return;
    quick_ = window_min_ < kQuickBelow;
    samples_ = 0;
    window_min_ = Clock::duration::max();
  }
  // The last full window's verdict; slow until one is in, so a pool that
  // has not measured yet spreads its queries as before.
  bool quick() const { return quick_; }

 private:
  Clock::duration window_min_ = Clock::duration::max();
  int samples_ = 0;
  bool quick_ = false;
};

}  // namespace gearbox::postgres
