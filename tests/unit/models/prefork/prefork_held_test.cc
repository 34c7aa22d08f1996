// A prefork child's held connections (models/prefork/prefork_held.h): they are
// kept in holding order with the earliest deadline at hand, taken by fd or by
// expiry, and given to the head guard over a real hand-off channel, oldest
// first or all at once, arriving there as the same sockets.
#include "models/prefork/prefork_held.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "daemon/buffer.h"
#include "models/prefork/connection_handoff.h"

namespace gearbox {
namespace {

using std::chrono::seconds;

// A fixed base time: deadlines are accepted + header_timeout (10 s default).
const Clock::time_point kT0 = Clock::time_point(seconds(1000));

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

class HeldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.limits = &limits_;
    ASSERT_TRUE(MakeHandoffChannel(channel_, 4096)) << strerror(errno);
  }
  void TearDown() override {
    for (int fd : peers_) close(fd);
    for (int fd : received_) close(fd);
    for (int fd : channel_)
      if (fd >= 0) close(fd);
  }

  // An idle (fresh) connection accepted at `accepted`; *peer gets the client's
  // end (closed by TearDown).
  std::unique_ptr<BlockingConnection> Connect(Clock::time_point accepted,
                                              int* peer = nullptr) {
    int sv[2] = {-1, -1};
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0) << strerror(errno);
    peers_.push_back(sv[0]);
    if (peer) *peer = sv[0];
    auto c =
        std::make_unique<BlockingConnection>(sv[1], Protocol::kHttp, limits_);
    c->conn.Attach(&env_);
    c->conn.Accepted(accepted, 0);
    return c;
  }

  // The next connection on the channel (-1 when none); closed by TearDown.
  int Receive(HandoffHeader& header, Buffer& bytes) {
    const int fd = ReceiveConnection(channel_[0], 4096, header, bytes);
    if (fd >= 0) received_.push_back(fd);
    return fd;
  }

  LimitsConfig limits_;
  ConnectionEnv env_;
  int channel_[2] = {-1, -1};  // [0] receives (the guard), [1] sends
  std::vector<int> peers_;
  std::vector<int> received_;
};

TEST_F(HeldTest, HoldKeepsFdsInHoldingOrderAndGaugeFollowsSize) {
  std::atomic<uint64_t> gauge{0};
  HeldConnections held(3, &gauge);
  EXPECT_TRUE(held.empty());
  EXPECT_TRUE(held.has_room());

  auto a = Connect(kT0);
  auto b = Connect(kT0);
  auto c = Connect(kT0);
  const int fa = a->fd, fb = b->fd, fc = c->fd;

  held.Hold(std::move(a), 0, kT0);
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(gauge.load(), 1u);
  EXPECT_TRUE(held.has_room());
  held.Hold(std::move(c), 0, kT0);  // held out of fd order on purpose
  held.Hold(std::move(b), 0, kT0);
  EXPECT_EQ(held.size(), 3u);
  EXPECT_FALSE(held.empty());
  EXPECT_EQ(gauge.load(), 3u);
  EXPECT_FALSE(held.has_room()) << "at capacity";
  EXPECT_EQ(std::vector<int>(held.fds().begin(), held.fds().end()),
            (std::vector<int>{fa, fc, fb}));

  HeldConnections::Held h = held.Take(fc);
  ASSERT_NE(h.c, nullptr);
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(gauge.load(), 2u);
  EXPECT_TRUE(held.has_room());
  EXPECT_EQ(std::vector<int>(held.fds().begin(), held.fds().end()),
            (std::vector<int>{fa, fb}));
}

TEST_F(HeldTest, TakeReturnsThatConnectionAndUnknownFdGivesEmptyHeld) {
  HeldConnections held(4, nullptr);  // no gauge: must not be touched
  auto a = Connect(kT0);
  auto b = Connect(kT0 + seconds(1));
  const int fa = a->fd, fb = b->fd;
  BlockingConnection* pb = b.get();
  held.Hold(std::move(a), 1, kT0);
  held.Hold(std::move(b), 2, kT0 + seconds(1));

  HeldConnections::Held h = held.Take(fb);
  ASSERT_NE(h.c, nullptr);
  EXPECT_EQ(h.c.get(), pb);
  EXPECT_EQ(h.c->fd, fb);
  EXPECT_EQ(h.listener, 2u);
  EXPECT_EQ(h.deadline, kT0 + seconds(1) + limits_.header_timeout);
  EXPECT_TRUE(IsOpen(fb)) << "a taken connection is the caller's, still open";
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(std::vector<int>(held.fds().begin(), held.fds().end()),
            (std::vector<int>{fa}));

  HeldConnections::Held again = held.Take(fb);  // taken already
  EXPECT_EQ(again.c, nullptr);
  HeldConnections::Held unknown = held.Take(fb + 1000);
  EXPECT_EQ(unknown.c, nullptr);
  EXPECT_EQ(unknown.listener, 0u);
  EXPECT_EQ(held.size(), 1u);
}

TEST_F(HeldTest, EarliestIsMaxWhenEmptyAndTheSmallestDeadlineOtherwise) {
  HeldConnections held(4, nullptr);
  EXPECT_EQ(held.earliest(), Clock::time_point::max());

  const auto timeout = limits_.header_timeout;
  auto a = Connect(kT0 + seconds(1));
  auto b = Connect(kT0);
  auto c = Connect(kT0 + seconds(2));
  const int fa = a->fd, fb = b->fd, fc = c->fd;
  held.Hold(std::move(a), 0, kT0 + seconds(1));
  EXPECT_EQ(held.earliest(), kT0 + seconds(1) + timeout);
  held.Hold(std::move(b), 0, kT0 + seconds(1));
  EXPECT_EQ(held.earliest(), kT0 + timeout) << "a smaller deadline lowers it";
  held.Hold(std::move(c), 0, kT0 + seconds(2));
  EXPECT_EQ(held.earliest(), kT0 + timeout) << "a larger one does not";

  ASSERT_NE(held.Take(fb).c, nullptr);  // the earliest goes
  EXPECT_EQ(held.earliest(), kT0 + seconds(1) + timeout);
  ASSERT_NE(held.Take(fc).c, nullptr);  // not the earliest: unchanged
  EXPECT_EQ(held.earliest(), kT0 + seconds(1) + timeout);
  ASSERT_NE(held.Take(fa).c, nullptr);
  EXPECT_EQ(held.earliest(), Clock::time_point::max());
}

TEST_F(HeldTest, TakeExpiredReturnsNothingBeforeTheEarliestDeadlineThenIt) {
  std::atomic<uint64_t> gauge{0};
  HeldConnections held(4, &gauge);
  const auto timeout = limits_.header_timeout;
  auto a = Connect(kT0 + seconds(1));
  auto b = Connect(kT0);
  const int fa = a->fd, fb = b->fd;
  held.Hold(std::move(a), 5, kT0 + seconds(1));
  held.Hold(std::move(b), 6, kT0 + seconds(1));

  EXPECT_EQ(held.TakeExpired(kT0).c, nullptr);
  EXPECT_EQ(held.TakeExpired(kT0 + timeout - std::chrono::nanoseconds(1)).c,
            nullptr);
  EXPECT_EQ(held.size(), 2u);

  HeldConnections::Held h = held.TakeExpired(kT0 + timeout);  // at deadline
  ASSERT_NE(h.c, nullptr);
  EXPECT_EQ(h.c->fd, fb);
  EXPECT_EQ(h.listener, 6u);
  EXPECT_EQ(h.deadline, kT0 + timeout);
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(gauge.load(), 1u);
  EXPECT_EQ(held.earliest(), kT0 + seconds(1) + timeout);
  // The other's deadline has not passed yet.
  EXPECT_EQ(held.TakeExpired(kT0 + timeout).c, nullptr);

  HeldConnections::Held later =
      held.TakeExpired(kT0 + seconds(1) + timeout + seconds(5));
  ASSERT_NE(later.c, nullptr);
  EXPECT_EQ(later.c->fd, fa);
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(gauge.load(), 0u);
  EXPECT_EQ(held.TakeExpired(Clock::time_point::max()).c, nullptr);
}

TEST_F(HeldTest, ParkOldestSendsTheFirstHeldToTheGuardAndRemovesIt) {
  std::atomic<uint64_t> gauge{0};
  HeldConnections held(4, &gauge);
  held.set_guard(channel_[1], 4096);
  EXPECT_FALSE(held.ParkOldest()) << "nothing held";

  auto a = Connect(kT0);
  auto b = Connect(kT0 + seconds(1));
  const int fa = a->fd, fb = b->fd;
  held.Hold(std::move(a), 7, kT0);
  held.Hold(std::move(b), 9, kT0 + seconds(1));

  ASSERT_TRUE(held.ParkOldest());
  EXPECT_FALSE(IsOpen(fa)) << "the child's copy is closed once sent";
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(gauge.load(), 1u);
  EXPECT_EQ(std::vector<int>(held.fds().begin(), held.fds().end()),
            (std::vector<int>{fb}));
  EXPECT_EQ(held.earliest(), kT0 + seconds(1) + limits_.header_timeout);

  HandoffHeader header;
  Buffer bytes;
  ASSERT_GE(Receive(header, bytes), 0) << strerror(errno);
  EXPECT_EQ(header.listener, 7u) << "the one held first";
  EXPECT_TRUE(header.progress.fresh);
  EXPECT_EQ(header.progress.deadline, kT0 + limits_.header_timeout);
  EXPECT_EQ(bytes.view(), "");
  errno = 0;
  EXPECT_EQ(Receive(header, bytes), -1) << "exactly one was sent";
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(HeldTest, ParkOldestWithoutAGuardFailsAndKeepsTheConnection) {
  std::atomic<uint64_t> gauge{0};
  HeldConnections held(4, &gauge);
  held.set_guard(-1, 0);
  auto a = Connect(kT0);
  const int fa = a->fd;
  held.Hold(std::move(a), 3, kT0);

  EXPECT_FALSE(held.ParkOldest());
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(gauge.load(), 1u);
  EXPECT_TRUE(IsOpen(fa));
  EXPECT_EQ(std::vector<int>(held.fds().begin(), held.fds().end()),
            (std::vector<int>{fa}));
  EXPECT_EQ(held.ParkAll(), 0u);
  EXPECT_EQ(held.size(), 1u);
  HandoffHeader header;
  Buffer bytes;
  EXPECT_EQ(Receive(header, bytes), -1) << "nothing reached the channel";

  HeldConnections::Held h = held.Take(fa);
  ASSERT_NE(h.c, nullptr);
  EXPECT_EQ(h.listener, 3u);
}

TEST_F(HeldTest, ParkAllSendsEveryHeldConnectionAndReturnsTheCount) {
  std::atomic<uint64_t> gauge{0};
  HeldConnections held(4, &gauge);
  held.set_guard(channel_[1], 4096);
  std::vector<int> fds;
  for (uint32_t listener : {1u, 2u, 3u}) {
    auto c = Connect(kT0 + seconds(listener));
    fds.push_back(c->fd);
    held.Hold(std::move(c), listener, kT0 + seconds(listener));
  }

  EXPECT_EQ(held.ParkAll(), 3u);
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(held.size(), 0u);
  EXPECT_TRUE(held.fds().empty());
  EXPECT_EQ(held.earliest(), Clock::time_point::max());
  EXPECT_EQ(gauge.load(), 0u);
  for (int fd : fds) EXPECT_FALSE(IsOpen(fd));

  std::vector<uint32_t> listeners;
  HandoffHeader header;
  Buffer bytes;
  while (Receive(header, bytes) >= 0) {
    listeners.push_back(header.listener);
    EXPECT_EQ(header.progress.deadline,
              kT0 + seconds(header.listener) + limits_.header_timeout);
  }
  EXPECT_EQ(errno, EAGAIN);
  std::sort(listeners.begin(), listeners.end());
  EXPECT_EQ(listeners, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(held.ParkAll(), 0u) << "nothing left";
}

TEST_F(HeldTest, ParkAllKeepsWhatAFullChannelCannotTake) {
  // Fill the channel with messages of the size ParkAll sends (a header, no
  // bytes), then make room for exactly one.
  int filler_peer = -1;
  auto filler = Connect(kT0, &filler_peer);
  HandoffHeader h;
  int queued = 0;
  while (SendConnection(channel_[1], filler->fd, h, "", "") == 0) {
    ASSERT_LT(++queued, 100000) << "the channel never filled";
  }
  ASSERT_GT(queued, 0);
  HandoffHeader header;
  Buffer bytes;
  ASSERT_GE(Receive(header, bytes), 0);

  std::atomic<uint64_t> gauge{0};
  HeldConnections held(4, &gauge);
  held.set_guard(channel_[1], 4096);
  for (uint32_t listener : {1u, 2u, 3u}) held.Hold(Connect(kT0), listener, kT0);

  EXPECT_EQ(held.ParkAll(), 1u);
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(gauge.load(), 2u);
  for (int fd : held.fds()) EXPECT_TRUE(IsOpen(fd)) << "still the child's";
}

TEST_F(HeldTest, ParkedFdIsTheSameSocket) {
  HeldConnections held(4, nullptr);
  held.set_guard(channel_[1], 4096);
  int peer_a = -1, peer_b = -1;
  held.Hold(Connect(kT0, &peer_a), 1, kT0);
  held.Hold(Connect(kT0, &peer_b), 2, kT0);
  ASSERT_TRUE(held.ParkOldest());

  HandoffHeader header;
  Buffer bytes;
  const int fd = Receive(header, bytes);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(header.listener, 1u);
  // The client's byte arrives on the guard's fd...
  ASSERT_EQ(write(peer_a, "x", 1), 1);
  char c = 0;
  ASSERT_EQ(read(fd, &c, 1), 1);
  EXPECT_EQ(c, 'x');
  // ...and the guard's reaches that client, not the other one.
  ASSERT_EQ(write(fd, "y", 1), 1);
  ASSERT_EQ(read(peer_a, &c, 1), 1);
  EXPECT_EQ(c, 'y');
  ASSERT_EQ(fcntl(peer_b, F_SETFL, O_NONBLOCK), 0);
  errno = 0;
  EXPECT_EQ(read(peer_b, &c, 1), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(HeldTest, ParkWithGuardSendsTheBytesReadAndClosesTheChildsCopy) {
  auto c = Connect(kT0);
  ConnectionProgress progress;
  progress.fresh = true;
  progress.deadline = kT0 + limits_.header_timeout;
  c->conn.Adopt(progress, "", "GET / HTTP/1.1\r\n");
  const int fd = c->fd;

  EXPECT_FALSE(ParkWithGuard(-1, 4096, *c, 4)) << "no guard";
  EXPECT_FALSE(ParkWithGuard(channel_[1], 4, *c, 4)) << "bytes exceed capacity";
  EXPECT_EQ(c->fd, fd);
  EXPECT_TRUE(IsOpen(fd));
  HandoffHeader header;
  Buffer bytes;
  EXPECT_EQ(Receive(header, bytes), -1) << "a refusal sends nothing";

  ASSERT_TRUE(ParkWithGuard(channel_[1], 4096, *c, 4));
  EXPECT_EQ(c->fd, -1);
  EXPECT_FALSE(IsOpen(fd));
  ASSERT_GE(Receive(header, bytes), 0) << strerror(errno);
  EXPECT_EQ(header.listener, 4u);
  EXPECT_EQ(header.progress.deadline, kT0 + limits_.header_timeout);
  EXPECT_EQ(bytes.view(), "GET / HTTP/1.1\r\n");
}

}  // namespace
}  // namespace gearbox
