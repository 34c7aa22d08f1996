// threadpool's handler-wait sleeper
// (models/threadpool/interruptible_sleeper.h): it sleeps the whole wait, an
// abort from another thread cuts it short at once, a sleep after the abort
// does not sleep, and neither does one whose end has passed.
#include "models/threadpool/interruptible_sleeper.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "models/blocking_connection.h"
#include "tests/support/proc_state.h"
#include "tests/support/wait_until.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

TEST(InterruptibleSleeperTest, SleepsTheWholeWait) {
  InterruptibleSleeper sleeper;
  const auto t0 = SteadyClock::now();
  EXPECT_TRUE(sleeper.SleepFor(milliseconds(30)));
  const auto slept = SteadyClock::now() - t0;
  EXPECT_GE(slept, milliseconds(30));
  EXPECT_LT(slept, milliseconds(1000));
}

TEST(InterruptibleSleeperTest, AbortCutsASleepShort) {
  InterruptibleSleeper sleeper;
  const pid_t sleeping = static_cast<pid_t>(gettid());
  bool asleep = false;
  std::thread stopper([&] {
    // The abort comes once this thread is asleep in SleepFor (the only place
    // it can block meanwhile), so it cuts a sleep short rather than coming
    // before one.
    asleep = gearbox::testing::WaitUntil(
        [&] {
          return gearbox::testing::ThreadState(getpid(), sleeping) == 'S';
        },
        milliseconds(10000), std::chrono::microseconds(100));
    sleeper.Abort();
  });
  const auto t0 = SteadyClock::now();
  EXPECT_FALSE(sleeper.SleepFor(std::chrono::seconds(30)));
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
  stopper.join();
  EXPECT_TRUE(asleep) << "the sleeper never went to sleep";
}

TEST(InterruptibleSleeperTest, SleepAfterAbortReturnsAtOnce) {
  InterruptibleSleeper sleeper;
  sleeper.Abort();
  const auto t0 = SteadyClock::now();
  EXPECT_FALSE(sleeper.SleepFor(std::chrono::seconds(30)));
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
}

// A handler's wait whose deadline passed while its worker was off the CPU
// (preempted between starting the handler and waiting: the driver's `now` is
// later than the deadline) asks for a negative sleep. It returns at once. It
// used to build a timespec with a negative tv_nsec, which the futex refuses
// (EINVAL), and the sleeper tried again for ever: a worker spinning on one
// request, whose client never got an answer (a CI run under a load average
// of 24 saw /sleep?ms=20 in flight for over 4 s).
TEST(InterruptibleSleeperTest, AnEndThatHasPassedReturnsAtOnce) {
  for (const auto d :
       {std::chrono::microseconds(-1), std::chrono::microseconds(-5000),
        std::chrono::microseconds(-1000000)}) {
    InterruptibleSleeper sleeper;
    std::atomic<bool> returned{false};
    bool slept = false;
    std::thread sleeping([&] {
      slept = sleeper.SleepFor(d);
      returned.store(true);
    });
    const bool prompt = gearbox::testing::WaitUntil(
        [&] { return returned.load(); }, milliseconds(5000));
    if (!prompt) sleeper.Abort();  // frees the thread stuck in the loop
    sleeping.join();
    EXPECT_TRUE(prompt) << "SleepFor(" << d.count() << " us) did not return";
    EXPECT_TRUE(slept) << d.count() << " us";
  }
}

// The deadline a sleep computes is a valid timespec for any duration, and
// never before now for a negative one.
TEST(InterruptibleSleeperTest, MonotonicAfterIsValidForPastEnds) {
  for (const int64_t us : {-1, -999, -1000000, -1500000, 0, 1, 1500000}) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const timespec at = MonotonicAfter(std::chrono::microseconds(us));
    EXPECT_GE(at.tv_nsec, 0) << us;
    EXPECT_LT(at.tv_nsec, 1000000000) << us;
    EXPECT_TRUE(at.tv_sec > now.tv_sec ||
                (at.tv_sec == now.tv_sec && at.tv_nsec >= now.tv_nsec))
        << us << " us: " << at.tv_sec << "." << at.tv_nsec << " before "
        << now.tv_sec << "." << now.tv_nsec;
  }
}

}  // namespace
}  // namespace gearbox
