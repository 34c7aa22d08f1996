// threadpool's seats (models/threadpool/worker_seats.h): at most N workers hold
// one; a release or a retake hands a seat to a sleeping follower; an idle
// follower gives up at its deadline; closing wakes every follower.
#include "models/threadpool/worker_seats.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gearbox {
namespace {

constexpr auto kNever = Clock::time_point::max();

TEST(WorkerSeatsTest, AtMostNHoldASeatAndAReleaseWakesAFollower) {
  WorkerSeats seats(2, 4);
  bool idle = false;
  ASSERT_TRUE(seats.Acquire(0, kNever, &idle));
  ASSERT_TRUE(seats.Acquire(1, kNever, &idle));
  std::atomic<bool> seated{false};
  std::thread follower([&] {
    bool i = false;
    seated = seats.Acquire(2, kNever, &i);
  });
  while (seats.followers() == 0) std::this_thread::yield();
  // A second follower that gives up after 20 ms. It takes the seats' lock
  // after the first one has looked for a free seat and gone to sleep (the
  // count rises under that lock), so its deadline passing proves that the
  // first follower waited 20 ms too, with both seats held, and got none.
  bool gave_up = false;
  EXPECT_FALSE(
      seats.Acquire(3, Clock::now() + std::chrono::milliseconds(20), &gave_up))
      << "both seats are held";
  EXPECT_TRUE(gave_up);
  EXPECT_FALSE(seats.held(2)) << "both seats are held";
  EXPECT_FALSE(seated);
  seats.Release(1);
  follower.join();
  EXPECT_TRUE(seated);
  EXPECT_TRUE(seats.held(2));
  EXPECT_FALSE(seats.held(1));
  seats.Release(1);  // no seat: nothing to give
  EXPECT_FALSE(seats.held(1));
}

TEST(WorkerSeatsTest, AnIdleFollowerGivesUpAtItsDeadline) {
  WorkerSeats seats(1, 2);
  bool idle = false;
  ASSERT_TRUE(seats.Acquire(0, kNever, &idle));
  const auto t0 = Clock::now();
  EXPECT_FALSE(seats.Acquire(1, t0 + std::chrono::milliseconds(30), &idle));
  EXPECT_TRUE(idle);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(30));
}

TEST(WorkerSeatsTest, ALongTurnHasItsSeatRetaken) {
  WorkerSeats seats(1, 2);
  bool idle = false;
  ASSERT_TRUE(seats.Acquire(0, kNever, &idle));
  seats.Busy(0, 1000);  // a turn since t=1000 us
  EXPECT_FALSE(seats.Retake(5000, 2000)) << "no follower: nothing to do";
  std::atomic<bool> seated{false};
  std::thread follower([&] {
    bool i = false;
    seated = seats.Acquire(1, kNever, &i);
  });
  while (seats.followers() == 0) std::this_thread::yield();
  EXPECT_TRUE(seats.Retake(2500, 2000)) << "1.5 ms: not yet, look again";
  EXPECT_FALSE(seated);
  seats.Retake(3500, 2000);  // 2.5 ms on one turn
  follower.join();
  EXPECT_TRUE(seated);
  EXPECT_FALSE(seats.held(0)) << "its seat went to the follower";
}

TEST(WorkerSeatsTest, AnIdleSeatedWorkerNeedsNoLook) {
  WorkerSeats seats(1, 2);
  bool idle = false;
  ASSERT_TRUE(seats.Acquire(0, kNever, &idle));
  std::thread follower([&] {
    bool i = false;
    seats.Acquire(1, kNever, &i);
  });
  while (seats.followers() == 0) std::this_thread::yield();
  // Seated, waiting for events (Idle): no turn to time, nothing to retake.
  EXPECT_FALSE(seats.Retake(1'000'000'000, 2000));
  EXPECT_TRUE(seats.held(0));
  seats.Close();
  follower.join();
}

TEST(WorkerSeatsTest, CloseWakesEveryFollower) {
  WorkerSeats seats(1, 3);
  bool idle = false;
  ASSERT_TRUE(seats.Acquire(0, kNever, &idle));
  std::atomic<int> refused{0};
  std::thread a([&] {
    bool i = false;
    if (!seats.Acquire(1, kNever, &i) && !i) ++refused;
  });
  std::thread b([&] {
    bool i = false;
    if (!seats.Acquire(2, kNever, &i) && !i) ++refused;
  });
  while (seats.followers() < 2) std::this_thread::yield();
  seats.Close();
  a.join();
  b.join();
  EXPECT_EQ(refused, 2);
}

}  // namespace
}  // namespace gearbox
