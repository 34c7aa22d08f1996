// WorkerHome's bookkeeping: which waits it takes, what it delivers to whom,
// and what it hands to an fd's on_idle. The driver here records what the
// home asks of the poller (the async loop's driver is exercised against a
// real loop and a real PostgreSQL by tests/system/postgres_test.sh).
#include "daemon/worker_home.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <vector>

namespace gearbox {
namespace {

struct RecordingDriver : WorkerHome::Driver {
  bool Register(int fd) override {
    registered.push_back(fd);
    return true;
  }
  void Unregister(int fd) override { unregistered.push_back(fd); }
  void Deliver(void* waiter, bool hung_up) override {
    delivered.push_back(waiter);
    hang_ups += hung_up;
  }
  int hang_ups = 0;
  std::vector<int> registered, unregistered;
  std::vector<void*> delivered;
};

void CountIdle(void* arg) { ++*static_cast<int*>(arg); }

TEST(WorkerHomeTest, AWatchedFdIsRegisteredOnceAndCarriesReadableWaits) {
  RecordingDriver driver;
  WorkerHome home(&driver);
  int idle = 0;
  ASSERT_TRUE(home.Watch(7, &CountIdle, &idle));
  EXPECT_EQ(driver.registered, std::vector<int>{7});
  int waiter_a = 0, waiter_b = 0;
  // Two waits one after the other: nothing registered per wait.
  EXPECT_TRUE(home.Attach(7, 1, &waiter_a));
  home.Readable(7, false);
  home.Detach(7);
  EXPECT_TRUE(home.Attach(7, 1, &waiter_b));
  home.Readable(7, true);
  home.Detach(7);
  EXPECT_EQ(driver.hang_ups, 1);
  EXPECT_EQ(driver.registered.size(), 1u);
  EXPECT_EQ(driver.delivered, (std::vector<void*>{&waiter_a, &waiter_b}));
  EXPECT_EQ(idle, 0);
  // Readable with no wait on it: the owner's on_idle.
  home.Readable(7, false);
  EXPECT_EQ(idle, 1);
  // A writable wait is the driver's (the watch is readable only), and so is
  // any fd not watched.
  EXPECT_FALSE(home.Attach(7, 2, &waiter_a));
  EXPECT_FALSE(home.Attach(7, 3, &waiter_a));
  EXPECT_FALSE(home.Attach(8, 1, &waiter_a));
  home.Forget(7);
  EXPECT_EQ(driver.unregistered, std::vector<int>{7});
  EXPECT_FALSE(home.Attach(7, 1, &waiter_a));
}

TEST(WorkerHomeTest, AWakeIsDeliveredWhetherSignalledBeforeOrAfterTheWait) {
  RecordingDriver driver;
  WorkerHome home(&driver);
  int waiter = 0;
  const int early = home.NewWake();
  const int late = home.NewWake();
  EXPECT_LT(early, -1);  // pseudo-fds: never a real one
  EXPECT_NE(early, late);
  home.Signal(early);
  EXPECT_TRUE(driver.delivered.empty());  // nobody waits yet
  EXPECT_TRUE(home.Attach(early, 1, &waiter));
  EXPECT_EQ(driver.delivered, std::vector<void*>{&waiter});
  home.Detach(early);
  EXPECT_TRUE(home.Attach(late, 1, &waiter));
  EXPECT_EQ(driver.delivered.size(), 1u);
  home.Signal(late);
  EXPECT_EQ(driver.delivered.size(), 2u);
  home.Detach(late);
  // A freed wake is reused, unsignalled.
  home.FreeWake(early);
  const int again = home.NewWake();
  EXPECT_EQ(again, early);
  EXPECT_TRUE(home.Attach(again, 1, &waiter));
  EXPECT_EQ(driver.delivered.size(), 2u);
  EXPECT_TRUE(driver.registered.empty());  // no fd, no registration
}

TEST(WorkerHomeTest, ARearmedWakeWaitsForTheNextSignal) {
  RecordingDriver driver;
  WorkerHome home(&driver);
  int waiter = 0;
  const int wake = home.NewWake();
  home.Signal(wake);
  EXPECT_TRUE(home.Attach(wake, 1, &waiter));
  EXPECT_EQ(driver.delivered.size(), 1u);
  home.Detach(wake);
  // Waited on again without a rearm: the old signal is delivered again.
  EXPECT_TRUE(home.Attach(wake, 1, &waiter));
  EXPECT_EQ(driver.delivered.size(), 2u);
  home.Detach(wake);
  home.Rearm(wake);
  EXPECT_TRUE(home.Attach(wake, 1, &waiter));
  EXPECT_EQ(driver.delivered.size(), 2u);
  home.Signal(wake);
  EXPECT_EQ(driver.delivered.size(), 3u);
}

TEST(WorkerHomeTest, ARearmedEventfdWakeIsNotReadable) {
  WorkerHome home;
  const int wake = home.NewWake();
  ASSERT_GE(wake, 0);
  pollfd p = {wake, POLLIN, 0};
  home.Signal(wake);
  EXPECT_EQ(poll(&p, 1, 0), 1);
  home.Rearm(wake);
  EXPECT_EQ(poll(&p, 1, 0), 0);
  home.Rearm(wake);  // unsignalled: nothing to take back
  EXPECT_EQ(poll(&p, 1, 0), 0);
  home.FreeWake(wake);
}

TEST(WorkerHomeTest, WithoutADriverWakesAreEventfdsAndNothingIsWatched) {
  WorkerHome home;
  int idle = 0;
  EXPECT_FALSE(home.Watch(0, &CountIdle, &idle));
  const int wake = home.NewWake();
  ASSERT_GE(wake, 0);
  pollfd p = {wake, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  home.Signal(wake);
  EXPECT_EQ(poll(&p, 1, 0), 1);
  home.FreeWake(wake);
  EXPECT_EQ(fcntl(wake, F_GETFD), -1);  // closed
}

}  // namespace
}  // namespace gearbox
