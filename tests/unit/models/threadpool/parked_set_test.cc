// threadpool's parked set (models/threadpool/parked_set.h): a readable
// connection is reported once and taken by the event's holder; an event that
// comes while the connection is not parked makes its next park say "ready" (the
// bytes are read, never lost); an event that outlived its connection is stale
// and names nothing; deadlines come out in order.
#include "models/threadpool/parked_set.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <vector>

namespace gearbox {
namespace {

constexpr ParkedSet::Armed kParked = ParkedSet::Armed::kParked;
constexpr ParkedSet::Armed kReady = ParkedSet::Armed::kReady;

class ParkedSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(set_.Init().ok());
    env_.limits = &limits_;
  }
  // A connection whose deadline is `after` from now, and the client's end.
  PooledConnection* Connect(std::chrono::milliseconds after, int* client) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    *client = sv[0];
    clients_.push_back(sv[0]);
    limits_.header_timeout = after;
    auto c =
        std::make_unique<PooledConnection>(sv[1], Protocol::kHttp, limits_);
    c->conn.Attach(&env_);
    c->conn.Accepted(Clock::now(), 0);
    owned_.push_back(std::move(c));
    return owned_.back().get();
  }
  // The data of the next event, or 0 when none comes within 100 ms.
  uint64_t NextEvent() {
    epoll_event ev{};
    return epoll_wait(set_.epoll_fd(), &ev, 1, 100) == 1 ? ev.data.u64 : 0;
  }
  void TearDown() override {
    for (int fd : clients_) close(fd);
  }

  ParkedSet set_;
  LimitsConfig limits_;
  ConnectionEnv env_;
  std::vector<int> clients_;
  std::vector<std::unique_ptr<PooledConnection>> owned_;
};

TEST_F(ParkedSetTest, ReadableConnectionIsReportedOnceAndTaken) {
  int client;
  PooledConnection* c = Connect(std::chrono::seconds(10), &client);
  ASSERT_EQ(kParked, set_.Arm(c));
  EXPECT_EQ(set_.size(), 1u);
  EXPECT_EQ(NextEvent(), 0u) << "no bytes yet";
  ASSERT_EQ(write(client, "GET", 3), 3);
  const uint64_t data = NextEvent();
  ASSERT_NE(data, 0u);
  EXPECT_EQ(NextEvent(), 0u) << "one shot: reported once";
  EXPECT_EQ(set_.Take(data), c);
  EXPECT_EQ(set_.size(), 0u);
  EXPECT_EQ(set_.Take(data), nullptr) << "taken already";
}

TEST_F(ParkedSetTest, EventOfAClosedConnectionIsStale) {
  int client;
  PooledConnection* c = Connect(std::chrono::milliseconds(0), &client);
  ASSERT_EQ(kParked, set_.Arm(c));
  ASSERT_EQ(write(client, "G", 1), 1);
  const uint64_t data = NextEvent();  // a worker holds this event...
  ASSERT_NE(data, 0u);
  std::vector<PooledConnection*> expired;
  set_.TakeExpired(Clock::now(), expired);  // ...when the poller expires it
  ASSERT_EQ(expired.size(), 1u);
  set_.Forget(c);  // and closes it
  // The slot is reused by the next connection parked.
  int client2;
  PooledConnection* c2 = Connect(std::chrono::seconds(10), &client2);
  ASSERT_EQ(kParked, set_.Arm(c2));
  EXPECT_EQ(set_.Take(data), nullptr) << "the old event must not name c2";
  EXPECT_EQ(set_.size(), 1u);
}

TEST_F(ParkedSetTest, BytesThatCameWhileServedMakeTheNextParkReady) {
  int client;
  PooledConnection* c = Connect(std::chrono::seconds(10), &client);
  ASSERT_EQ(kParked, set_.Arm(c));
  ASSERT_EQ(write(client, "GET / HTTP/1.1\r\n\r\n", 18), 18);
  ASSERT_EQ(set_.Take(NextEvent()), c);  // a worker serves it...
  ASSERT_EQ(write(client, "G", 1), 1);   // ...when the next bytes come
  const uint64_t edge = NextEvent();
  ASSERT_NE(edge, 0u) << "edge-triggered: new bytes are a new event";
  EXPECT_EQ(set_.Take(edge), nullptr) << "a worker holds it already";
  EXPECT_EQ(set_.size(), 0u);
  EXPECT_EQ(set_.Arm(c), kReady) << "parking it would lose the bytes";
  EXPECT_EQ(set_.size(), 0u);
  EXPECT_EQ(set_.Arm(c), kParked) << "read since: it parks";
  EXPECT_EQ(NextEvent(), 0u) << "no system call re-reports old bytes";
}

TEST_F(ParkedSetTest, AnEventFetchedBeforeADrainStillTakesTheConnection) {
  int client;
  PooledConnection* c = Connect(std::chrono::seconds(10), &client);
  ASSERT_EQ(kParked, set_.Arm(c));
  ASSERT_EQ(write(client, "G", 1), 1);
  const uint64_t event = NextEvent();  // a worker holds this event...
  ASSERT_NE(event, 0u);
  std::vector<PooledConnection*> idle;
  set_.TakeAll(idle);  // ...while a drain takes it out and parks it again
  ASSERT_EQ(kParked, set_.Arm(c));
  EXPECT_EQ(set_.Take(event), c) << "the only report of its bytes";
}

TEST_F(ParkedSetTest, AnEventWhileTheDrainHoldsItIsKept) {
  int client;
  PooledConnection* c = Connect(std::chrono::seconds(10), &client);
  ASSERT_EQ(kParked, set_.Arm(c));
  std::vector<PooledConnection*> idle;
  set_.TakeAll(idle);
  ASSERT_EQ(write(client, "G", 1), 1);
  EXPECT_EQ(set_.Take(NextEvent()), nullptr);
  EXPECT_EQ(set_.Arm(c), kReady);
}

TEST_F(ParkedSetTest, ExpiryTakesOnlyWhatIsDueInDeadlineOrder) {
  int a, b, d;
  PooledConnection* late = Connect(std::chrono::seconds(30), &a);
  PooledConnection* soon = Connect(std::chrono::milliseconds(1), &b);
  PooledConnection* sooner = Connect(std::chrono::milliseconds(0), &d);
  ASSERT_EQ(kParked, set_.Arm(late));
  ASSERT_EQ(kParked, set_.Arm(soon));
  ASSERT_EQ(kParked, set_.Arm(sooner));
  EXPECT_EQ(set_.NextDeadline(), sooner->conn.deadline());
  std::vector<PooledConnection*> out;
  set_.TakeExpired(Clock::now() + std::chrono::milliseconds(5), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], sooner);
  EXPECT_EQ(out[1], soon);
  EXPECT_EQ(set_.size(), 1u);
  EXPECT_EQ(set_.NextDeadline(), late->conn.deadline());
}

}  // namespace
}  // namespace gearbox
