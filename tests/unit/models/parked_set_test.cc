// threadpool's parked set (models/parked_set.h): a readable connection is
// reported once and taken by the event's holder; an event that outlived its
// connection's stay (expired, taken by a drain, parked again) is stale and
// names nothing; deadlines come out in order.
#include "models/parked_set.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <vector>

namespace gearbox {
namespace {

class ParkedSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(set_.Init().ok());
    env_.limits = &limits_;
  }
  // A connection whose deadline is `after` from now, and the client's end.
  BlockingConnection* Connect(std::chrono::milliseconds after, int* client) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    *client = sv[0];
    clients_.push_back(sv[0]);
    limits_.header_timeout = after;
    auto c =
        std::make_unique<BlockingConnection>(sv[1], Protocol::kHttp, limits_);
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
  std::vector<std::unique_ptr<BlockingConnection>> owned_;
};

TEST_F(ParkedSetTest, ReadableConnectionIsReportedOnceAndTaken) {
  int client;
  BlockingConnection* c = Connect(std::chrono::seconds(10), &client);
  ASSERT_TRUE(set_.Arm(c));
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

TEST_F(ParkedSetTest, EventOfAnExpiredConnectionIsStale) {
  int client;
  BlockingConnection* c = Connect(std::chrono::milliseconds(0), &client);
  ASSERT_TRUE(set_.Arm(c));
  ASSERT_EQ(write(client, "G", 1), 1);
  const uint64_t data = NextEvent();  // a worker holds this event...
  ASSERT_NE(data, 0u);
  std::vector<BlockingConnection*> expired;
  set_.TakeExpired(Clock::now(), expired);  // ...when the poller expires it
  ASSERT_EQ(expired.size(), 1u);
  // The slot is reused by the next connection parked.
  int client2;
  BlockingConnection* c2 = Connect(std::chrono::seconds(10), &client2);
  ASSERT_TRUE(set_.Arm(c2));
  EXPECT_EQ(set_.Take(data), nullptr) << "the old event must not name c2";
  EXPECT_EQ(set_.size(), 1u);
}

TEST_F(ParkedSetTest, ParkedAgainGetsANewGeneration) {
  int client;
  BlockingConnection* c = Connect(std::chrono::seconds(10), &client);
  ASSERT_TRUE(set_.Arm(c));
  ASSERT_EQ(write(client, "G", 1), 1);
  const uint64_t old_event = NextEvent();
  ASSERT_NE(old_event, 0u);
  std::vector<BlockingConnection*> idle;
  set_.TakeAll(idle);  // a drain takes it out and parks it again
  ASSERT_TRUE(set_.Arm(c));
  EXPECT_EQ(set_.Take(old_event), nullptr);
  const uint64_t new_event = NextEvent();  // MOD reports the bytes again
  ASSERT_NE(new_event, 0u);
  EXPECT_EQ(set_.Take(new_event), c);
}

TEST_F(ParkedSetTest, ExpiryTakesOnlyWhatIsDueInDeadlineOrder) {
  int a, b, d;
  BlockingConnection* late = Connect(std::chrono::seconds(30), &a);
  BlockingConnection* soon = Connect(std::chrono::milliseconds(1), &b);
  BlockingConnection* sooner = Connect(std::chrono::milliseconds(0), &d);
  ASSERT_TRUE(set_.Arm(late));
  ASSERT_TRUE(set_.Arm(soon));
  ASSERT_TRUE(set_.Arm(sooner));
  EXPECT_EQ(set_.NextDeadline(), sooner->conn.deadline());
  std::vector<BlockingConnection*> out;
  set_.TakeExpired(Clock::now() + std::chrono::milliseconds(5), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], sooner);
  EXPECT_EQ(out[1], soon);
  EXPECT_EQ(set_.size(), 1u);
  EXPECT_EQ(set_.NextDeadline(), late->conn.deadline());
}

}  // namespace
}  // namespace gearbox
