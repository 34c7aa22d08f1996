// Socket activation and sd_notify: gearboxd started by systemd-socket-activate
// on a unix socket with a test-owned NOTIFY_SOCKET. READY=1 (with MAINPID)
// only once serving, STATUS= every [metrics] interval, RELOADING=1 with
// MONOTONIC_USEC then READY=1 around SIGHUP, STOPPING=1 and exit 0 on SIGTERM
// with the in-flight request finished, and sockets matched by name.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/systemd/systemd_fixture.h"

namespace gearbox::testing {
namespace {

using Failure = UnixResponse::Failure;

// --- socket activation + notify
// ------------------------------------------------

TEST_F(SystemdTest, ReadyComesOnlyOnceServingWithMainPid) {
  ASSERT_NO_FATAL_FAILURE(Launch(Options(ModelUnderTest()), &daemon_));
  ActivatedDaemon& d = *daemon_;
  // systemd-socket-activate sleeps waiting for a connection: it has not
  // started gearboxd (it would exec it in its own process), and nothing
  // else can notify.
  EXPECT_TRUE(WaitUntil([&] { return WaitingForEvents(d.pid()); }, kIo))
      << "systemd-socket-activate is not waiting for the first connection";
  EXPECT_EQ(d.notify().Count(), 0u)
      << "notified before the first connection started gearboxd";

  // The activating request waits in the socket's backlog while gearboxd starts.
  UnixResponse first;
  std::thread activator(
      [&] { first = UnixExchange(d.socket_path(), "/hello", Millis(15000)); });
  auto ready = d.notify().WaitFor(0, IsReady, kReadyTimeout);
  const auto ready_seen = SteadyClock::now();
  // Right after READY=1: a brand-new connection must be served at once.
  UnixResponse right_after =
      UnixExchange(d.socket_path(), "/hello", Millis(2000));
  const auto served = SteadyClock::now();
  const std::string log_at_ready = d.Log();
  activator.join();
  ASSERT_TRUE(ready) << "no READY=1 within 10 s";
  EXPECT_TRUE(Good(right_after))
      << "request right after READY=1: " << Describe(right_after);
  EXPECT_EQ(right_after.body, "hello world\n");
  EXPECT_TRUE(Good(first)) << "activating request: " << Describe(first);
  EXPECT_EQ(ready->Field("MAINPID").value_or(""), std::to_string(d.pid()))
      << "MAINPID must be gearboxd itself (systemd-socket-activate exec()s it)";
  EXPECT_NE(ready->Field("STATUS").value_or("").find(ModelUnderTest()),
            std::string::npos)
      << ready->text;
  // The listener came from systemd, matched by its name.
  EXPECT_NE(log_at_ready.find("event=listening name=http"), std::string::npos)
      << log_at_ready;
  EXPECT_NE(log_at_ready.find("systemd=true"), std::string::npos)
      << log_at_ready;
  EXPECT_NE(log_at_ready.find("event=generation_started gen=1"),
            std::string::npos)
      << "READY=1 before the generation started:\n"
      << log_at_ready;
  // Only one READY=1 for a start.
  const auto messages = d.notify().Messages();
  EXPECT_EQ(std::count_if(messages.begin(), messages.end(), IsReady), 1)
      << d.notify().Dump();
  printf("[figures] model=%s READY=1 -> fresh request served in %.1f ms\n",
         ModelUnderTest().c_str(), MsF(served - ready_seen));
}

TEST_F(SystemdTest, StatusEveryMetricsInterval) {
  ASSERT_NO_FATAL_FAILURE(Launch(Options(ModelUnderTest()), &daemon_));
  ActivatedDaemon& d = *daemon_;
  ASSERT_NO_FATAL_FAILURE(Activate(d));
  const size_t from = d.notify().Count();
  // Some traffic so the figures move.
  const auto end = SteadyClock::now() + Millis(1600);
  int served = 0;
  while (SteadyClock::now() < end && served < 400) {
    if (Good(UnixExchange(d.socket_path(), "/hello", kIo))) ++served;
    // Pacing: the traffic is spread over the window the STATUS= cadence is
    // measured in, so every interval has figures that move.
    std::this_thread::sleep_for(Millis(10));
  }
  std::vector<NotifyMessage> all = d.notify().Messages();
  std::vector<NotifyMessage> periodic;
  for (size_t i = from; i < all.size(); ++i)
    if (IsPeriodicStatus(all[i])) periodic.push_back(all[i]);
  // 1.6 s at 200 ms: 8 nominal; the supervisor wakes every 100 ms.
  ASSERT_GE(periodic.size(), 5u) << d.notify().Dump();
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < periodic.size(); ++i)
    gaps.push_back(Ms(periodic[i].at - periodic[i - 1].at));
  std::vector<int64_t> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  const int64_t median = sorted[sorted.size() / 2];
  EXPECT_GE(median, 150) << d.notify().Dump();
  EXPECT_LE(median, 400) << d.notify().Dump();
  EXPECT_LE(sorted.back(), 1000) << d.notify().Dump();
  bool figures = false;
  for (const auto& m : periodic) {
    std::string s = *m.Field("STATUS");
    EXPECT_NE(s.find(ModelUnderTest()), std::string::npos) << s;
    EXPECT_NE(s.find("gen 1"), std::string::npos) << s;
    figures = figures || (s.find("req/s") != std::string::npos &&
                          s.find(" 0 req/s") == std::string::npos);
  }
  EXPECT_TRUE(figures) << "no STATUS= showed a non-zero req/s while serving\n"
                       << d.notify().Dump();
  std::string gap_text;
  for (int64_t g : gaps) gap_text += std::to_string(g) + " ";
  printf(
      "[figures] model=%s %d requests, %zu STATUS= in 1.6 s, gaps ms: "
      "%s(median %lld)\n"
      "[figures] last STATUS=%s\n",
      ModelUnderTest().c_str(), served, periodic.size(), gap_text.c_str(),
      static_cast<long long>(median), periodic.back().Field("STATUS")->c_str());
}

TEST_F(SystemdTest, ReloadSendsReloadingWithMonotonicUsecThenReady) {
  ASSERT_NO_FATAL_FAILURE(Launch(Options(ModelUnderTest()), &daemon_));
  ActivatedDaemon& d = *daemon_;
  ASSERT_NO_FATAL_FAILURE(Activate(d));
  const std::string next = NextModel(ModelUnderTest(), 1);
  ASSERT_TRUE(
      d.WriteConfig(RenderActivatedConfig(Options(next), d.socket_path())));
  const size_t from = d.notify().Count();
  const uint64_t before_usec = MonotonicUsec();
  const auto t0 = SteadyClock::now();
  ASSERT_TRUE(d.Signal(SIGHUP));
  size_t at = 0;
  auto reloading = d.notify().WaitFor(from, IsReloading, kReadyTimeout, &at);
  ASSERT_TRUE(reloading) << d.notify().Dump();
  const uint64_t after_usec = MonotonicUsec();
  auto usec = reloading->Field("MONOTONIC_USEC");
  ASSERT_TRUE(usec) << "RELOADING=1 without MONOTONIC_USEC: "
                    << reloading->text;
  const uint64_t v = strtoull(usec->c_str(), nullptr, 10);
  EXPECT_GE(v, before_usec) << "MONOTONIC_USEC is not CLOCK_MONOTONIC now";
  EXPECT_LE(v, after_usec) << "MONOTONIC_USEC is not CLOCK_MONOTONIC now";
  // No READY=1 between SIGHUP and RELOADING=1; READY=1 follows it.
  auto all = d.notify().Messages();
  for (size_t i = from; i < at; ++i)
    EXPECT_FALSE(IsReady(all[i])) << all[i].text;
  auto ready = d.notify().WaitFor(at + 1, IsReady, kReadyTimeout);
  ASSERT_TRUE(ready) << d.notify().Dump();
  const std::string status = ready->Field("STATUS").value_or("");
  EXPECT_NE(status.find(next), std::string::npos) << status;
  EXPECT_NE(status.find("generation 2"), std::string::npos) << status;
  StatusDoc s = StatusOfGeneration(d, 2);
  EXPECT_EQ(s.model, next);
  EXPECT_EQ(s.generation, 2);
  printf(
      "[figures] model=%s -> %s: SIGHUP->RELOADING=1 %.1f ms, SIGHUP->READY=1 "
      "%.1f ms\n",
      ModelUnderTest().c_str(), next.c_str(), MsF(reloading->at - t0),
      MsF(ready->at - t0));
}

TEST_F(SystemdTest, SigtermSendsStoppingAndExitsZero) {
  ASSERT_NO_FATAL_FAILURE(Launch(Options(ModelUnderTest()), &daemon_));
  ActivatedDaemon& d = *daemon_;
  ASSERT_NO_FATAL_FAILURE(Activate(d));
  const size_t from = d.notify().Count();
  const auto t0 = SteadyClock::now();
  ASSERT_TRUE(d.Signal(SIGTERM));
  auto stopping = d.notify().WaitFor(from, IsStopping, Millis(5000));
  auto status = d.WaitExit(Millis(10000));
  ASSERT_TRUE(stopping) << "no STOPPING=1 after SIGTERM\n" << d.notify().Dump();
  ASSERT_TRUE(status) << "gearboxd did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(*status);
  printf(
      "[figures] model=%s SIGTERM->STOPPING=1 %lld ms, SIGTERM->exit %lld ms\n",
      ModelUnderTest().c_str(), static_cast<long long>(Ms(stopping->at - t0)),
      static_cast<long long>(Ms(SteadyClock::now() - t0)));
}

TEST_F(SystemdTest, PassedSocketWithoutListenEntryIsAStartupError) {
  ActivatedOptions o = Options(ModelUnderTest());
  o.fdname = "bogus";  // the config only has [[listen]] name = "http"
  ASSERT_NO_FATAL_FAILURE(Launch(o, &daemon_));
  ActivatedDaemon& d = *daemon_;
  UnixResponse r = UnixExchange(d.socket_path(), "/hello", Millis(10000));
  EXPECT_FALSE(Good(r)) << "served on a socket it could not match";
  auto status = d.WaitExit(Millis(10000));
  ASSERT_TRUE(status) << "gearboxd kept running with an unmatched socket";
  EXPECT_FALSE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(*status);
  EXPECT_TRUE(WIFEXITED(*status))
      << "crashed instead of exiting: " << DescribeWaitStatus(*status);
  const std::string log = d.Log();
  // logfmt escapes the quotes: named \"bogus\"
  EXPECT_NE(log.find("named \\\"bogus\\\""), std::string::npos)
      << "the log must name the socket:\n"
      << log;
  EXPECT_NE(log.find("[[listen]]"), std::string::npos) << log;
  for (const auto& m : d.notify().Messages())
    EXPECT_FALSE(IsReady(m)) << "READY=1 despite the startup error: " << m.text;
  printf("[figures] model=%s unmatched socket: %s; log: %s",
         ModelUnderTest().c_str(), DescribeWaitStatus(*status).c_str(),
         log.substr(log.find("event=listen_failed") == std::string::npos
                        ? 0
                        : log.find("event=listen_failed"))
             .c_str());
}

// The documented contract (config/gearbox.toml, [[listen]]): "Under systemd
// socket activation, sockets are matched to [[listen]] tables by name; gearboxd
// binds the ones systemd did not pass."
TEST_F(SystemdTest, ListenEntryNotPassedBySystemdIsBoundByGearboxd) {
  ActivatedOptions o = Options(ModelUnderTest());
  const std::string extra = SocketDirectory() + "/extra-" +
                            std::to_string(getpid() % 100000) + ".sock";
  o.sections = "[[listen]]\naddress = \"unix:" + extra +
               "\"\nprotocol = \"http\"\nname = \"extra\"\n\n" + Sections();
  ASSERT_NO_FATAL_FAILURE(Launch(o, &daemon_));
  ActivatedDaemon& d = *daemon_;
  ASSERT_NO_FATAL_FAILURE(Activate(d));
  UnixResponse r = UnixExchange(extra, "/hello", Millis(2000));
  const std::string log = d.Log();
  EXPECT_TRUE(Good(r))
      << "[[listen]] name=extra (not passed by systemd) is not served: "
      << Describe(r) << "\n"
      << log;
  unlink(extra.c_str());
  printf("[figures] model=%s unpassed [[listen]] %s: %s\n",
         ModelUnderTest().c_str(), extra.c_str(),
         Good(r) ? "served" : Describe(r).c_str());
}

// --- SIGTERM drains (socket-activated)
// ---------------------------------------------

TEST_F(SystemdTest, SigtermDrainsInFlightRequestSocketActivated) {
  ASSERT_NO_FATAL_FAILURE(Launch(Options(ModelUnderTest()), &daemon_));
  ActivatedDaemon& d = *daemon_;
  ASSERT_NO_FATAL_FAILURE(Activate(d));
  UnixResponse slow;
  SteadyClock::time_point sent;
  std::atomic<bool> started{false};
  std::thread client([&] {
    UnixConnection c = UnixConnection::Open(d.socket_path(), kIo);
    sent = SteadyClock::now();
    started.store(true);
    slow = c.ok() ? c.RoundTrip(UnixGet("/sleep?ms=500"), Millis(10000))
                  : UnixResponse{Failure::kConnect, c.error()};
  });
  // In flight: /status counts it beside itself.
  EXPECT_TRUE(WaitUntil(
      [&] { return started.load() && StatusNumber(d, "inflight") >= 2; }, kIo));
  const size_t from = d.notify().Count();
  const auto term = SteadyClock::now();
  ASSERT_TRUE(d.Signal(SIGTERM));
  client.join();
  const auto answered = SteadyClock::now();
  auto status = d.WaitExit(Millis(10000));
  EXPECT_TRUE(Good(slow)) << "in-flight request during SIGTERM: "
                          << Describe(slow);
  EXPECT_EQ(slow.body, "waited 500 ms\n");
  ASSERT_TRUE(status) << "no exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(*status);
  EXPECT_TRUE(d.notify().WaitFor(from, IsStopping, Millis(0)))
      << d.notify().Dump();
  printf(
      "[figures] model=%s in-flight /sleep?ms=500 answered %lld ms after "
      "sending "
      "(%lld ms after SIGTERM); exit %lld ms after SIGTERM: %s\n",
      ModelUnderTest().c_str(), static_cast<long long>(Ms(answered - sent)),
      static_cast<long long>(Ms(answered - term)),
      static_cast<long long>(Ms(SteadyClock::now() - term)),
      DescribeWaitStatus(*status).c_str());
}

}  // namespace
}  // namespace gearbox::testing
