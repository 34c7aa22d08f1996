// threadpool's handler-wait sleeper
// (models/threadpool/interruptible_sleeper.h): it sleeps the whole wait, an
// abort from another thread cuts it short at once, and a sleep after the abort
// does not sleep.
#include "models/threadpool/interruptible_sleeper.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace gearbox
