// threadpool's handler-wait sleeper
// (models/threadpool/interruptible_sleeper.h): it sleeps the whole wait, an
// abort from another thread cuts it short at once, and a sleep after the abort
// does not sleep.
#include "models/threadpool/interruptible_sleeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    sleeper.Abort();
  });
  const auto t0 = SteadyClock::now();
  EXPECT_FALSE(sleeper.SleepFor(std::chrono::seconds(30)));
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
  stopper.join();
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
