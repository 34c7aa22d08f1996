// The head guard's loop (models/prefork/guard_loop.h) on a thread, without a
// network: clients are socketpairs, parked with it over a hand-off channel as
// a child parks them. A head completed there is handed back parsed (the
// codec's record, which a child's codec resumes from); one that
// misses its deadline gets 408 (counted as sent); the loop ends once parking
// is over and nothing is held.
#include "models/prefork/guard_loop.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "models/prefork/connection_handoff.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;

constexpr size_t kCapacity = 65536;

// Waits (bounded) until `fd` is readable or hung up.
bool Readable(int fd, milliseconds timeout = milliseconds(5000)) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// Everything the peer sends until it closes (bounded).
std::string ReadToEof(int fd) {
  std::string got;
  char buf[4096];
  while (Readable(fd)) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

class GuardLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    limits_.header_timeout = milliseconds(10000);
    ASSERT_TRUE(MakeHandoffChannel(park_, kCapacity)) << strerror(errno);
    ASSERT_TRUE(MakeHandoffChannel(unpark_, kCapacity)) << strerror(errno);
    Listener l;
    l.protocol = Protocol::kHttp;
    listeners_.push_back(l);
    stats_ = StatsRegion::Create(1, 1);
    loop_ = std::thread([this] {
      ran_ = RunGuardLoop(listeners_, limits_, stats_->Slot(0), park_[0],
                          unpark_[1], kCapacity);
    });
  }
  void TearDown() override {
    EndParking();
    if (loop_.joinable()) loop_.join();
    for (int fd : {park_[0], unpark_[0]})
      if (fd >= 0) close(fd);
  }
  // As a child does: the connection's server end, with what it read so far,
  // due by `deadline`. Returns the client's end.
  int Park(std::string_view bytes, Clock::time_point deadline) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    HandoffHeader header;
    header.progress.fresh = true;
    header.progress.deadline = deadline;
    EXPECT_EQ(SendConnection(park_[1], sv[1], header, "", bytes), 0);
    close(sv[1]);
    return sv[0];
  }
  // Every child has stopped parking: the loop finishes what it holds.
  void EndParking() {
    if (park_[1] >= 0) close(park_[1]);
    park_[1] = -1;
  }
  WorkerStats& stats() { return stats_->Slot(0); }

  LimitsConfig limits_;
  Listeners listeners_;
  std::shared_ptr<StatsRegion> stats_;
  int park_[2] = {-1, -1};
  int unpark_[2] = {-1, -1};
  std::thread loop_;
  bool ran_ = false;
};

TEST_F(GuardLoopTest, HeadCompletedInTheGuardIsHandedBackParsed) {
  const int client =
      Park("GET /hello HTTP/1.1\r\n", Clock::now() + milliseconds(10000));
  const std::string rest = "Host: a\r\n\r\n";
  ASSERT_EQ(write(client, rest.data(), rest.size()),
            static_cast<ssize_t>(rest.size()));
  ASSERT_TRUE(Readable(unpark_[0]));
  HandoffHeader header;
  Buffer bytes;
  const int fd = ReceiveConnection(unpark_[0], kCapacity, header, bytes);
  ASSERT_GE(fd, 0) << strerror(errno);
  // The whole head, as its record: no byte of it to parse again.
  EXPECT_GT(header.record_bytes, 0u);
  EXPECT_EQ(header.record_bytes, bytes.size());
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kHttp, limits_);
  ASSERT_TRUE(codec->ResumeHead(bytes.view()));
  EXPECT_TRUE(codec->InBody());
  Request request;
  std::string out;
  EXPECT_EQ(codec->Parse("", request, out).status,
            ServerCodec::Status::kComplete);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/hello");
  EXPECT_EQ(request.FindHeader("host"), "a");
  EXPECT_TRUE(header.progress.fresh);
  // The same connection: the client hears the new owner.
  ASSERT_EQ(write(fd, "ok", 2), 2);
  close(fd);
  EXPECT_EQ(ReadToEof(client), "ok");
  close(client);
  EndParking();
  loop_.join();
  EXPECT_TRUE(ran_);
  EXPECT_EQ(stats().bytes_out.load(), 0u);  // the guard itself sent nothing
}

TEST_F(GuardLoopTest, HeadPastItsDeadlineGets408CountedAsSent) {
  const int client =
      Park("GET /hello HTTP/1.1\r\n", Clock::now() + milliseconds(50));
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
  EndParking();
  loop_.join();  // the loop ends: parking is over and nothing is held
  EXPECT_EQ(stats().bytes_out.load(), got.size());
  EXPECT_EQ(
      stats().closed[static_cast<int>(CloseReason::kHeaderTimeout)].load(), 1u);
}

TEST_F(GuardLoopTest, ClientThatHangsUpIsClosedAndCounted) {
  const int client =
      Park("GET /hello HTTP/1.1\r\n", Clock::now() + milliseconds(10000));
  close(client);
  EndParking();
  loop_.join();  // returns only once the held connection is dealt with
  EXPECT_EQ(stats().closed[static_cast<int>(CloseReason::kClient)].load(), 1u);
  EXPECT_EQ(stats().bytes_out.load(), 0u);
}

}  // namespace
}  // namespace gearbox
