// threadpool's poller and ReadyQueue (models/threadpool/) on a unix socket,
// with a worker's turns but without the model around them: a full queue
// refuses with 503, and a connection a worker parked mid-head gets 408 from
// the poller at its deadline. Both answers are counted as the bytes that
// went. Whoever closes a connection that was parked, a worker or the poller,
// takes it out of the epoll set first, so the close is its last reference.
#include "models/threadpool/connection_poller.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "models/threadpool/park_when_idle.h"
#include "models/threadpool/ready_queue.h"
#include "tests/support/wait_until.h"
#include "tests/unit/models/local_socket.h"

namespace gearbox {
namespace {

using std::chrono::milliseconds;
using testing::ConnectLocal;
using testing::LocalListener;
using testing::ReadToEof;
using testing::WaitUntil;

// Whether an epoll set of this process watches the socket with inode `ino`
// (the kernel lists each watched file in the set's fdinfo: "tfd: ... ino:%lx").
bool InAnEpollSet(ino_t ino) {
  char want[32];
  snprintf(want, sizeof(want), " ino:%lx ", static_cast<unsigned long>(ino));
  DIR* dir = opendir("/proc/self/fdinfo");
  if (!dir) return false;
  bool found = false;
  while (dirent* e = readdir(dir)) {
    std::ifstream in(std::string("/proc/self/fdinfo/") + e->d_name);
    for (std::string line; !found && std::getline(in, line);)
      found = line.rfind("tfd:", 0) == 0 &&
              (line + " ").find(want) != std::string::npos;
  }
  closedir(dir);
  return found;
}

ino_t InodeOf(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

class PollerTest : public ::testing::Test {
 protected:
  // Heads are due within `header_timeout` (the poller's 408).
  void Start(size_t queue_capacity,
             milliseconds header_timeout = milliseconds(100)) {
    ASSERT_GE(listener_.fd, 0);
    Listener l;
    l.fd = listener_.fd;
    listeners_.push_back(l);
    ctx_.listeners = &listeners_;
    ctx_.stats = StatsRegion::Create(2, 1);
    ctx_.config.limits.header_timeout = header_timeout;
    queue_ =
        std::make_unique<ReadyQueue>(queue_capacity, ctx_.stats->Slot(0), 1, 1);
    poller_ = std::make_unique<ConnectionPoller>(ctx_, *queue_, draining_);
    ASSERT_TRUE(poller_->Init().ok());
    poller_->StartThread();
  }
  void TearDown() override {
    if (poller_) poller_->Stop();
  }
  // A worker's turn on `c`, with threadpool's own policy.
  ConnectionOutcome Serve(PooledConnection* c) {
    bc_.env.cycle.stats = &slot(1);
    bc_.env.limits = &ctx_.config.limits;
    bc_.env.draining = &draining_;
    bc_.env.request = &request_;
    bc_.env.response = &response_;
    bc_.sleeper = &sleeper_;
    c->turn_started = Clock::now();
    ParkWhenIdle policy(*queue_, 0);
    return ServeBlocking(*c, bc_, policy);
  }
  // A fresh connection, sent `part`, served and parked by a worker; null on
  // failure (then a test assertion failed). `*held`: a second descriptor on
  // its socket, taken while the worker still held it.
  PooledConnection* ParkedAfter(int client, const std::string& part,
                                int* held) {
    EXPECT_EQ(write(client, part.data(), part.size()),
              static_cast<ssize_t>(part.size()));
    bool idle = false;
    PooledConnection* c = queue_->Pop(0, std::chrono::seconds(5), &idle);
    EXPECT_NE(c, nullptr);
    if (!c) return nullptr;
    EXPECT_EQ(Serve(c), ConnectionOutcome::kParked);
    *held = dup(c->fd);
    EXPECT_EQ(queue_->Park(c), ParkedSet::Armed::kParked);
    return c;
  }
  WorkerStats& slot(size_t i) { return ctx_.stats->Slot(i); }
  uint64_t closed(CloseReason r) {
    return slot(0).closed[static_cast<int>(r)].load() +
           slot(1).closed[static_cast<int>(r)].load();
  }

  LocalListener listener_;
  Listeners listeners_;
  ModelContext ctx_;
  std::atomic<bool> draining_{false};
  std::unique_ptr<ReadyQueue> queue_;
  std::unique_ptr<ConnectionPoller> poller_;
  Request request_;
  Response response_;
  RealSleeper sleeper_;
  BlockingContext bc_;
};

TEST_F(PollerTest, FullQueueRefusesWith503CountedAsSent) {
  ASSERT_NO_FATAL_FAILURE(Start(/*queue_capacity=*/0));
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("Retry-After: 1\r\n"), std::string::npos) << got;
  ASSERT_TRUE(WaitUntil([&] { return closed(CloseReason::kServer) == 1; },
                        milliseconds(5000)));
  EXPECT_EQ(slot(0).rejected.load(), 1u);
  EXPECT_EQ(slot(0).bytes_out.load(), got.size());
  EXPECT_EQ(poller_->open(), 0);
}

TEST_F(PollerTest, HeadParkedByAWorkerGets408FromThePollerAtItsDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(/*queue_capacity=*/4));
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  const std::string part = "GET /hello HTTP/1.1\r\n";
  ASSERT_EQ(write(client, part.data(), part.size()),
            static_cast<ssize_t>(part.size()));
  // The worker's turn: it reads the part, has nothing more, and parks it.
  bool idle = false;
  PooledConnection* c = queue_->Pop(0, std::chrono::seconds(5), &idle);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(Serve(c), ConnectionOutcome::kParked);
  EXPECT_EQ(c->conn.phase(), Phase::kHead);
  ASSERT_EQ(queue_->Park(c), ParkedSet::Armed::kParked);
  // The poller, not a worker, answers it at the head's deadline.
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
  ASSERT_TRUE(
      WaitUntil([&] { return closed(CloseReason::kHeaderTimeout) == 1; },
                milliseconds(5000)));
  EXPECT_EQ(slot(0).bytes_out.load(), got.size());  // the poller's slot
  EXPECT_EQ(slot(1).bytes_out.load(), 0u);
  // The poller counts the close, then forgets the connection: its open count
  // follows a moment later on the poller's thread.
  EXPECT_TRUE(
      WaitUntil([&] { return poller_->open() == 0; }, milliseconds(5000)));
}

// The race these stand in for: a worker waking in epoll_wait holds the socket
// while it polls it; closed at that moment, the socket lives on until that
// worker's epoll_wait returns, and the client, its answer sent, sees no close.
// A second descriptor holds the socket here, deterministically: the epoll set
// must not watch it once its connection's fd is closed.
TEST_F(PollerTest, AWorkerTakesAParkedConnectionOutOfTheSetBeforeItCloses) {
  // Parked until the test's worker takes it again: no 408 meanwhile.
  ASSERT_NO_FATAL_FAILURE(
      Start(/*queue_capacity=*/4, /*header_timeout=*/milliseconds(30000)));
  // A close straight after the answer: no lingering (the next test lingers).
  ctx_.config.limits.lingering_timeout = milliseconds(0);
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  int held = -1;
  PooledConnection* c = ParkedAfter(client, "POST /echo HTTP/1.1\r\n", &held);
  ASSERT_NE(c, nullptr);
  const ino_t ino = InodeOf(held);
  ASSERT_TRUE(InAnEpollSet(ino)) << "parked: in the set";
  // The rest of a head the codec refuses: 400, then close.
  const std::string rest = "Host: t\r\nTransfer-Encoding: identity\r\n\r\n";
  ASSERT_EQ(write(client, rest.data(), rest.size()),
            static_cast<ssize_t>(rest.size()));
  bool idle = false;
  ASSERT_EQ(queue_->Pop(0, std::chrono::seconds(5), &idle), c);
  EXPECT_EQ(Serve(c), ConnectionOutcome::kClosed);
  EXPECT_FALSE(InAnEpollSet(ino))
      << "closed by the worker while still in the epoll set";
  queue_->Closed(c);
  delete c;
  poller_->Closed();
  close(held);
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
}

// Lingering after a 400 holds no worker: the connection is parked with its
// write side shut, the client reads the answer and end of file, and its own
// close ends the linger (counted as the close for bad input).
TEST_F(PollerTest, ALingeringConnectionIsParkedNotHeldByItsWorker) {
  ASSERT_NO_FATAL_FAILURE(
      Start(/*queue_capacity=*/4, /*header_timeout=*/milliseconds(30000)));
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  int held = -1;
  PooledConnection* c = ParkedAfter(client, "POST /echo HTTP/1.1\r\n", &held);
  ASSERT_NE(c, nullptr);
  close(held);
  const std::string rest = "Host: t\r\nTransfer-Encoding: identity\r\n\r\n";
  ASSERT_EQ(write(client, rest.data(), rest.size()),
            static_cast<ssize_t>(rest.size()));
  bool idle = false;
  ASSERT_EQ(queue_->Pop(0, std::chrono::seconds(5), &idle), c);
  EXPECT_EQ(Serve(c), ConnectionOutcome::kParked);
  EXPECT_EQ(c->conn.phase(), Phase::kLinger);
  ASSERT_EQ(queue_->Park(c), ParkedSet::Armed::kParked);
  const std::string got = ReadToEof(client);  // the shut write side
  EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << got;
  EXPECT_EQ(closed(CloseReason::kError), 0u);
  close(client);
  ASSERT_EQ(queue_->Pop(0, std::chrono::seconds(5), &idle), c);
  EXPECT_EQ(Serve(c), ConnectionOutcome::kClosed);
  EXPECT_EQ(closed(CloseReason::kError), 1u);
  queue_->Closed(c);
  delete c;
  poller_->Closed();
}

TEST_F(PollerTest, ThePollerTakesAnExpiredConnectionOutOfTheSetBeforeItCloses) {
  ASSERT_NO_FATAL_FAILURE(Start(/*queue_capacity=*/4));
  const int client = ConnectLocal(listener_.path);
  ASSERT_GE(client, 0);
  int held = -1;
  ASSERT_NE(ParkedAfter(client, "GET /hello HTTP/1.1\r\n", &held), nullptr);
  const ino_t ino = InodeOf(held);
  // Parked (in the set: Park() said so); at the head's deadline the poller
  // answers 408 and closes it.
  ASSERT_TRUE(
      WaitUntil([&] { return poller_->open() == 0; }, milliseconds(5000)));
  EXPECT_FALSE(InAnEpollSet(ino))
      << "closed by the poller while still in the epoll set";
  close(held);
  const std::string got = ReadToEof(client);
  close(client);
  EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
}

}  // namespace
}  // namespace gearbox
