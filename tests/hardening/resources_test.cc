// Resources: crowds of idle keep-alive clients (what each costs, whether it
// pins a worker) and descriptor exhaustion (no crash, no busy loop, recovery).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/hardening/hardening.h"
#include "tests/hardening/held_split.h"

namespace gearbox::hardening {
namespace {

using gearbox::testing::GetRequest;
using gearbox::testing::WaitUntil;

class ResourceTest : public HardeningTest {
 protected:
  // Opens `n` connections and makes one GET /hello on each, so every one is
  // an idle keep-alive connection afterwards. Batches keep it quick.
  void OpenIdle(int n, std::vector<Connection>& out) {
    constexpr int kBatch = 500;
    out.reserve(static_cast<size_t>(n));
    const std::string request = GetRequest("/hello");
    for (int base = 0; base < n; base += kBatch) {
      const size_t first = out.size();
      for (int i = base; i < std::min(n, base + kBatch); ++i) {
        Connection c = Connection::Open(port());
        ASSERT_TRUE(c.ok()) << "connection " << i << ": " << c.error();
        ASSERT_TRUE(c.Send(request)) << "connection " << i << ": " << c.error();
        out.push_back(std::move(c));
      }
      for (size_t i = first; i < out.size(); ++i) {
        HttpResponse r = out[i].ReadResponse();
        ASSERT_EQ(r.error, "") << "connection " << i;
        ASSERT_EQ(r.status, 200) << "connection " << i << ": " << r.raw;
      }
    }
  }

  // Three fresh GET /hello: the slowest latency in ms (-1 on any failure).
  double WorstOfThreeHellos(std::string* error) {
    double worst = 0;
    for (int i = 0; i < 3; ++i) {
      double ms = TimedHello(Millis(5000), error);
      if (ms < 0) return -1;
      worst = std::max(worst, ms);
    }
    return worst;
  }

  // Waits until every thread of the daemon sleeps: every request is answered
  // and its connection idle. A request of the test's own (/status) would
  // allocate in the daemon just before its memory is measured.
  void WaitQuiet() {
    EXPECT_TRUE(
        WaitUntil([&] { return gearbox::testing::AllThreadsAsleep(pid()); },
                  Millis(5000)))
        << "a thread of the daemon is still at work";
  }

  // Waits until every prefork child and the head guard sleep in their event
  // loops: what they were given is served, held or parked.
  void WaitChildrenWaiting() {
    EXPECT_TRUE(WaitUntil([&] { return ChildrenWaiting(pid()); }, Millis(5000)))
        << "a child is still busy";
  }

  // A second request on a sample of the idle connections: they are still
  // open and still served.
  void ExpectStillServed(std::vector<Connection>& conns, size_t sample) {
    const size_t step = std::max<size_t>(1, conns.size() / sample);
    for (size_t i = 0; i < conns.size(); i += step) {
      ASSERT_TRUE(conns[i].Send(GetRequest("/hello"))) << conns[i].error();
      HttpResponse r = conns[i].ReadResponse();
      ASSERT_EQ(r.error, "") << "idle connection " << i;
      EXPECT_EQ(r.status, 200) << "idle connection " << i;
    }
  }
};

// 4a. async: 10,000 idle keep-alive connections cost < 1 KiB of RSS each and
// do not slow a fresh client down.
TEST_F(ResourceTest, AsyncHoldsTenThousandIdleConnectionsCheaply) {
  if (!IsModel("async")) GTEST_SKIP() << "async only";
  constexpr int kIdle = 10000;
  ASSERT_GE(NofileSoft(), static_cast<uint64_t>(kIdle + 200))
      << "RLIMIT_NOFILE too low for the client side (hard limit?)";
  Settings s;
  s.max_connections = 20000;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  for (int i = 0; i < 20; ++i) TimedHello();  // warm up allocator and buffers
  const long rss_before = RssKib(pid());
  ASSERT_GT(rss_before, 0);

  std::vector<Connection> idle;
  const auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(OpenIdle(kIdle, idle));
  const double open_ms = MsSince(t0);
  WaitQuiet();
  const long rss_after = RssKib(pid());
  const double per_conn =
      static_cast<double>(rss_after - rss_before) * 1024.0 / kIdle;
  std::string error;
  const double hello_ms = WorstOfThreeHellos(&error);
  const int64_t open_now = JsonNumber(StatusJson(), "open");
  const int fds = FdCount(pid());
  Report("idle=" + std::to_string(kIdle) +
         " open_ms=" + std::to_string(open_ms) +
         " rss_before_kib=" + std::to_string(rss_before) +
         " rss_after_kib=" + std::to_string(rss_after) +
         " rss_bytes_per_conn=" + std::to_string(per_conn) +
         " fresh_hello_worst_ms=" + std::to_string(hello_ms) + " status_open=" +
         std::to_string(open_now) + " daemon_fds=" + std::to_string(fds));
  EXPECT_LT(per_conn, 1024) << "RSS growth per idle connection";
  EXPECT_GE(hello_ms, 0) << error;
  EXPECT_LT(hello_ms, 100) << "fresh /hello next to 10,000 idle connections";
  EXPECT_GE(open_now, kIdle);
  ExpectStillServed(idle, 50);
  EXPECT_TRUE(Alive());
}

// 4b. threadpool: 2,000 idle keep-alive connections with 8 threads. They wait
// in the poller, not in threads: a fresh /hello is prompt and 8 concurrent
// /sleep?ms=300 run in parallel (all 8 threads are free).
TEST_F(ResourceTest, ThreadpoolIdleConnectionsPinNoThreads) {
  if (!IsModel("threadpool")) GTEST_SKIP() << "threadpool only";
  constexpr int kIdle = 2000;
  constexpr int kThreads = 8;
  Settings s;
  s.threads = kThreads;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::vector<Connection> idle;
  const auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(OpenIdle(kIdle, idle));
  const double open_ms = MsSince(t0);
  WaitQuiet();

  std::string error;
  const double hello_ms = WorstOfThreeHellos(&error);
  // One /sleep?ms=300 per thread, all at once: ~300 ms if no thread is pinned,
  // >= 600 ms if even one is.
  std::vector<HttpResponse> slept(kThreads);
  std::vector<std::thread> sleepers;
  const auto s0 = Clock::now();
  for (int i = 0; i < kThreads; ++i) {
    sleepers.emplace_back([&, i] {
      slept[static_cast<size_t>(i)] = gearbox::testing::Exchange(
          port(), GetRequest("/sleep?ms=300"), Millis(5000));
    });
  }
  for (std::thread& t : sleepers) t.join();
  const double parallel_ms = MsSince(s0);
  const std::string status = StatusJson();
  Report("idle=" + std::to_string(kIdle) + " threads=" +
         std::to_string(kThreads) + " open_ms=" + std::to_string(open_ms) +
         " fresh_hello_worst_ms=" + std::to_string(hello_ms) +
         " parallel_8x_sleep300_ms=" + std::to_string(parallel_ms) +
         " status_open=" + std::to_string(JsonNumber(status, "open")) +
         " status_busy=" + std::to_string(JsonNumber(status, "busy")));
  EXPECT_GE(hello_ms, 0) << error;
  EXPECT_LT(hello_ms, 250) << "fresh /hello next to 2,000 idle connections";
  for (const HttpResponse& r : slept) EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_LT(parallel_ms, 550) << "the 8 threads were not all free";
  EXPECT_GE(JsonNumber(status, "open"), kIdle);
  ExpectStillServed(idle, 20);
  EXPECT_TRUE(Alive());
}

// 4c. prefork's policy: an idle keep-alive connection holds a child only until
// another client waits. With workers=2 and 2 idle connections, a third client
// is served within 1 s. The idle connections are not closed for it (closing
// one that nginx may be reusing turns a POST into a 502): the children hand
// them to the head guard, which holds them until their next request, so they
// stay open and still serve it. (Before the guard held idle connections, this
// test asserted that one was closed; that close is what raced nginx.)
TEST_F(ResourceTest,
       PreforkFreesChildrenFromIdleKeepAliveWhenAnotherClientWaits) {
  if (!IsModel("prefork")) GTEST_SKIP() << "prefork only";
  Settings s;
  s.workers = 2;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::vector<Connection> idle;
  ASSERT_NO_FATAL_FAILURE(OpenIdle(2, idle));
  WaitChildrenWaiting();  // both children idle on them
  std::string error;
  const double third_ms = TimedHello(Millis(5000), &error);
  int closed = 0;
  for (Connection& c : idle) closed += c.WaitClosed(Millis(300)) ? 1 : 0;
  int reused = 0;
  for (Connection& c : idle) {
    if (!c.Send(GetRequest("/hello"))) continue;
    HttpResponse r = c.ReadResponse();
    reused += r.status == 200 ? 1 : 0;
  }
  Report("workers=2 idle=2 third_client_ms=" + std::to_string(third_ms) +
         " idle_closed_by_server=" + std::to_string(closed) +
         " idle_reused_after=" + std::to_string(reused));
  EXPECT_GE(third_ms, 0) << error;
  EXPECT_LT(third_ms, 1000) << "a waiting client was not served";
  EXPECT_EQ(closed, 0) << "an idle keep-alive connection was closed";
  EXPECT_EQ(reused, 2) << "a held keep-alive connection did not serve again";
  ExpectHealthy("after the hand-off");
  EXPECT_TRUE(Alive());
}

// 4c'. What a held keep-alive connection sends next reaches a child whole,
// whatever its shape. workers=1 and 4 idle connections: the guard holds at
// least 3 of them. The guard hands one back unread when its next request
// starts to arrive, and the child reads it from the socket: two pipelined
// requests in one segment, a head split across a pause longer than the
// child's park grace, and a request followed by a half-close must each be
// answered in full, and a client closing one it holds must cost nothing.
TEST_F(ResourceTest, PreforkServesWhateverAHeldKeepAliveConnectionSendsNext) {
  if (!IsModel("prefork")) GTEST_SKIP() << "prefork only";
  Settings s;
  s.workers = 1;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::vector<Connection> held;
  ASSERT_NO_FATAL_FAILURE(OpenIdle(4, held));
  WaitChildrenWaiting();

  const std::string hello = GetRequest("/hello");
  ASSERT_TRUE(held[0].Send(hello + hello)) << held[0].error();
  for (int i = 0; i < 2; ++i) {
    HttpResponse r = held[0].ReadResponse();
    EXPECT_EQ(r.status, 200) << "pipelined request " << i << ": " << r.error;
    EXPECT_EQ(r.body, "hello world\n") << "pipelined request " << i;
  }

  const size_t cut = hello.size() / 2;
  ASSERT_TRUE(held[1].Send(hello.substr(0, cut))) << held[1].error();
  // The pause is the client's shape under test (a slow sender, 10 times the
  // child's park grace), not a wait for the server.
  std::this_thread::sleep_for(Millis(50));
  ASSERT_TRUE(held[1].Send(hello.substr(cut))) << held[1].error();
  HttpResponse split = held[1].ReadResponse();
  EXPECT_EQ(split.status, 200) << "a head split by a pause: " << split.error;

  ASSERT_TRUE(held[2].Send(hello)) << held[2].error();
  held[2].ShutdownWrite();
  HttpResponse last = held[2].ReadResponse();
  EXPECT_EQ(last.status, 200) << "a request, then a half-close: " << last.error;
  EXPECT_TRUE(held[2].WaitClosed(Millis(2000)))
      << "the server keeps a half-closed connection open";

  const gearbox::testing::TcpPorts closed =
      gearbox::testing::PortsOf(held[3].fd());
  held[3].Close();
  EXPECT_TRUE(WaitUntil([&] { return !gearbox::testing::ServerHolds(closed); },
                        Millis(5000)))
      << "the server kept the closed connection";
  ExpectHealthy("after a held connection closed");
  // Every connection that is still open serves again.
  for (int i : {0, 1}) {
    ASSERT_TRUE(held[i].Send(hello)) << held[i].error();
    EXPECT_EQ(held[i].ReadResponse().status, 200) << "connection " << i;
  }
  EXPECT_TRUE(Alive());
}

// 4d. ... but only then: while a child is free, a newcomer goes to it and the
// idle keep-alive connections (nginx's upstream keepalive pool) stay open.
// workers=4, 3 idle connections, 20 short requests served by the 4th child.
TEST_F(ResourceTest, PreforkKeepsIdleKeepAliveWhileAChildIsFree) {
  if (!IsModel("prefork")) GTEST_SKIP() << "prefork only";
  constexpr int kIdle = 3;
  constexpr int kShort = 20;
  Settings s;
  s.workers = kIdle + 1;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::vector<Connection> idle;
  for (int i = 0; i < kIdle; ++i) {  // one at a time: never anyone waiting
    std::vector<Connection> one;
    ASSERT_NO_FATAL_FAILURE(OpenIdle(1, one));
    idle.push_back(std::move(one[0]));
    WaitChildrenWaiting();
  }
  int short_ok = 0;
  for (int i = 0; i < kShort; ++i) {
    short_ok += TimedHello(Millis(5000)) >= 0 ? 1 : 0;
    // The free child is back: it has closed the short request's connection
    // (only the idle ones are held) and sleeps in its event loop again.
    EXPECT_TRUE(WaitUntil(
        [&] {
          return gearbox::testing::ServerHeldEnds(port()) == kIdle &&
                 ChildrenWaiting(pid());
        },
        Millis(5000)));
  }
  int still_open = 0;
  for (Connection& c : idle) still_open += c.StaysOpen(Millis(20)) ? 1 : 0;
  Report("workers=" + std::to_string(kIdle + 1) + " idle=" +
         std::to_string(kIdle) + " short_requests=" + std::to_string(kShort) +
         " short_ok=" + std::to_string(short_ok) +
         " idle_still_open=" + std::to_string(still_open));
  EXPECT_EQ(short_ok, kShort);
  EXPECT_EQ(still_open, kIdle)
      << "idle keep-alive connections were closed although a child was free "
         "for every newcomer";
  EXPECT_TRUE(Alive());
}

// 4e. Under load a child holds idle kept-alive connections beside the one it
// serves (no hand-off through the guard per request), but a request on one
// never waits behind a child blocked on a handler wait: the child gives them
// to the guard first, and a free sibling serves them. workers=2, 6 kept-alive
// connections, a 1.5 s /sleep on one whose child holds others too: /hello on
// each of the others answers within 700 ms.
TEST_F(ResourceTest, PreforkHeldConnectionsDoNotWaitBehindABlockedChild) {
  if (!IsModel("prefork")) GTEST_SKIP() << "prefork only";
  Settings s;
  s.workers = 2;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::vector<Connection> conns;
  // 6 clients at once for 2 children: whatever the split (often 5/1), one
  // holds 2+. The /sleep goes on one of its connections, so it blocks with
  // idle ones in hand (all five, the hardest case, after a 6/0 split).
  ASSERT_NO_FATAL_FAILURE(OpenIdle(6, conns));
  WaitChildrenWaiting();
  const std::vector<pid_t> children = WorkerChildrenOf(pid());
  ASSERT_EQ(children.size(), 2u) << "both children are alive";
  const HeldSplit split = SplitOf(conns, children);
  ASSERT_GE(split.Holds(split.most), 2)
      << "neither child holds 2 of the 6 kept-alive connections";
  const size_t sleeper = split.FirstOf(split.most);

  ASSERT_TRUE(conns[sleeper].Send(GetRequest("/sleep?ms=1500")))
      << conns[sleeper].error();
  // Its child is in the wait: /status (served by the other) counts it.
  ASSERT_TRUE(WaitUntil(
      [&] { return JsonNumber(StatusJson(), "inflight") >= 2; }, Millis(5000)));
  const std::string hello = GetRequest("/hello");
  double slowest_ms = 0;
  for (size_t i = 0; i < conns.size(); ++i) {
    if (i == sleeper) continue;
    const auto t0 = Clock::now();
    ASSERT_TRUE(conns[i].Send(hello)) << conns[i].error();
    HttpResponse r = conns[i].ReadResponse();
    const double ms = MsSince(t0);
    slowest_ms = std::max(slowest_ms, ms);
    EXPECT_EQ(r.status, 200) << "connection " << i << ": " << r.error;
    EXPECT_LT(ms, 700) << "connection " << i
                       << " waited behind the child blocked on /sleep";
  }
  HttpResponse slept = conns[sleeper].ReadResponse();
  EXPECT_EQ(slept.status, 200) << slept.error;
  Report("kept-alive connections before the wait: the child that slept held " +
         std::to_string(split.Holds(split.most)) + ", its sibling " +
         std::to_string(split.Holds(split.sibling)) + ", neither " +
         std::to_string(split.Holds(-1)) + "; /sleep on connection " +
         std::to_string(sleeper) + "; slowest /hello on the others: " +
         std::to_string(slowest_ms) + " ms");
  ExpectHealthy("after the wait");
}

// 5. Out of descriptors: RLIMIT_NOFILE 1024 and 2,000 clients connecting at
// once. The daemon survives, does not spin (it pauses accepting), and serves
// again within 1 s once the clients are gone.
TEST_F(ResourceTest, DescriptorExhaustionNeitherCrashesNorSpins) {
  constexpr int kClients = 2000;
  Settings s;
  s.header_timeout = "30s";  // the crowd sends nothing: keep it connected
  s.max_connections = 10000;
  {
    NofileLimit limit(1024);
    ASSERT_TRUE(limit.ok()) << limit.error();
    ASSERT_NO_FATAL_FAILURE(Start(s));
  }
  const long daemon_limit = DaemonNofile(pid());
  ASSERT_GE(NofileSoft(), static_cast<uint64_t>(kClients + 200));

  std::vector<int> fds;
  std::string error;
  for (int i = 0; i < kClients; ++i) {
    int fd = StartConnect(port(), 0, &error);
    ASSERT_GE(fd, 0) << "client " << i << ": " << error;
    fds.push_back(fd);
  }
  // Accepting is over: clients wait in the accept queue and the daemon, out
  // of descriptors, takes none. threadpool and async log EMFILE; prefork's
  // children hold one each and all sleep with the queue non-empty.
  WaitUntil(
      [&] {
        if (gearbox::testing::AcceptQueue(port()) <= 0) return false;
        if (IsModel("prefork")) return ChildrenWaiting(pid());
        return daemon_->Log().find("Too many open files") != std::string::npos;
      },
      Millis(10000));
  int connected = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT)) ++connected;
  }
  int daemon_fds_peak = FdCount(pid());
  const double cpu0 = TreeCpuSeconds(pid());
  // The window the CPU time is measured over: a busy loop shows as CPU
  // seconds spent in it, so it has to last; there is no event to wait for.
  std::this_thread::sleep_for(Millis(2000));
  const double cpu1 = TreeCpuSeconds(pid());
  daemon_fds_peak = std::max(daemon_fds_peak, FdCount(pid()));
  const bool alive_during = Alive();

  for (int fd : fds) close(fd);
  const auto closed_at = Clock::now();
  double recovered_ms = -1;
  while (MsSince(closed_at) < 5000) {
    // Short attempts: one whose SYN meets a full backlog would wait for the
    // 1 s retransmit; the next one gets through.
    if (TimedHello(Millis(100), &error) >= 0) {
      recovered_ms = MsSince(closed_at);
      break;
    }
  }
  const std::string log = daemon_->Log();
  const bool emfile_logged =
      log.find("Too many open files") != std::string::npos;
  Report("daemon_nofile=" + std::to_string(daemon_limit) + " clients=" +
         std::to_string(kClients) + " connected=" + std::to_string(connected) +
         " daemon_fds=" + std::to_string(daemon_fds_peak) +
         " cpu_s_over_2s=" + std::to_string(cpu1 - cpu0) +
         " emfile_logged=" + std::to_string(emfile_logged) +
         " recovered_after_close_ms=" + std::to_string(recovered_ms));
  EXPECT_EQ(daemon_limit, 1024);
  EXPECT_TRUE(alive_during) << "gearboxd died when out of descriptors";
  ASSERT_GE(cpu0, 0);
  EXPECT_LT(cpu1 - cpu0, 0.5) << "busy loop while out of descriptors";
  EXPECT_GE(recovered_ms, 0)
      << "not serving 5 s after the clients left: " << error;
  EXPECT_LE(recovered_ms, 1000) << "slow recovery after the clients left";
  if (!IsModel("prefork")) {
    // One process holds every connection: it must have hit the limit (prefork
    // children hold one each and never get there).
    EXPECT_TRUE(emfile_logged) << "expected an accept4 EMFILE log line";
  }
  EXPECT_TRUE(Alive());
  ExpectHealthy("after descriptor exhaustion");
}

}  // namespace
}  // namespace gearbox::hardening

int main(int argc, char** argv) {
  return gearbox::hardening::HardeningMain(argc, argv);
}
