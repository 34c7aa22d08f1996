// Moving a connection between processes (models/prefork/connection_handoff.h):
// the fd arrives working, the bytes and header intact, one message per
// connection, and the channel's end and limits are reported rather than
// guessed.
#include "models/prefork/connection_handoff.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace gearbox {
namespace {

class HandoffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeHandoffChannel(channel_, 65536)) << strerror(errno);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, client_), 0);
  }
  void TearDown() override {
    for (int fd : {channel_[0], channel_[1], client_[0], client_[1]})
      if (fd >= 0) close(fd);
  }
  int channel_[2] = {-1, -1};  // [0] receives, [1] sends
  int client_[2] = {-1, -1};   // [0] "the client", [1] the server's end
};

TEST_F(HandoffTest, FdBytesAndHeaderArriveIntact) {
  HandoffHeader sent;
  sent.listener = 3;
  sent.progress.fresh = false;
  sent.progress.deadline =
      Clock::time_point(std::chrono::nanoseconds(123456789012345));
  sent.progress.ready_us = 42;
  const std::string record = "a codec's record";
  const std::string head = "GET /hello HTTP/1.1\r\nHost: slo";
  ASSERT_EQ(SendConnection(channel_[1], client_[1], sent, record, head), 0);
  close(client_[1]);  // the sender's copy: the receiver's must keep it open
  client_[1] = -1;

  HandoffHeader got;
  Buffer bytes;
  int fd = ReceiveConnection(channel_[0], 65536, got, bytes);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(bytes.view(), record + head);
  EXPECT_EQ(got.record_bytes, record.size());
  EXPECT_EQ(got.listener, 3u);
  EXPECT_FALSE(got.progress.fresh);
  EXPECT_EQ(got.progress.deadline,
            Clock::time_point(std::chrono::nanoseconds(123456789012345)));
  EXPECT_EQ(got.progress.ready_us, 42u);
  // The received fd is the same connection: the client hears what it says.
  ASSERT_EQ(write(fd, "hi", 2), 2);
  char buf[4] = {};
  ASSERT_EQ(read(client_[0], buf, sizeof(buf)), 2);
  EXPECT_STREQ(buf, "hi");
  close(fd);
}

TEST_F(HandoffTest, EachMessageIsOneConnection) {
  HandoffHeader h;
  ASSERT_EQ(SendConnection(channel_[1], client_[1], h, "", "first"), 0);
  ASSERT_EQ(SendConnection(channel_[1], client_[1], h, "", ""), 0);
  Buffer a, b;
  int fa = ReceiveConnection(channel_[0], 65536, h, a);
  int fb = ReceiveConnection(channel_[0], 65536, h, b);
  ASSERT_GE(fa, 0);
  ASSERT_GE(fb, 0);
  EXPECT_EQ(a.view(), "first");
  EXPECT_EQ(b.view(), "");
  close(fa);
  close(fb);
}

TEST_F(HandoffTest, EmptyChannelSaysAgainAndClosedChannelSaysEnd) {
  HandoffHeader h;
  Buffer bytes;
  errno = 0;
  EXPECT_EQ(ReceiveConnection(channel_[0], 65536, h, bytes), -1);
  EXPECT_EQ(errno, EAGAIN);
  close(channel_[1]);
  channel_[1] = -1;
  EXPECT_EQ(ReceiveConnection(channel_[0], 65536, h, bytes), kHandoffEnd);
}

TEST_F(HandoffTest, MessageBeyondCapacityIsRefusedNotTruncated) {
  const size_t capacity = HandoffCapacity(channel_[1]);
  ASSERT_GE(capacity, 65536u);
  HandoffHeader h;
  std::string too_big(capacity + 4096, 'x');
  EXPECT_EQ(SendConnection(channel_[1], client_[1], h, "", too_big), EMSGSIZE);
}

TEST_F(HandoffTest, ReceiverTooSmallClosesTheFdAndFails) {
  HandoffHeader h;
  ASSERT_EQ(
      SendConnection(channel_[1], client_[1], h, "", std::string(100, 'y')), 0);
  close(client_[1]);
  client_[1] = -1;
  Buffer bytes;
  errno = 0;
  EXPECT_EQ(ReceiveConnection(channel_[0], 10, h, bytes), -1);
  EXPECT_EQ(errno, EPROTO);
  // The truncated message's fd was closed: the client sees the end.
  char c;
  EXPECT_EQ(read(client_[0], &c, 1), 0);
}

}  // namespace
}  // namespace gearbox
