// Faults, processes that die: a prefork child killed under load, the prefork
// head guard killed while it holds slow heads, and the crash route. The daemon
// loses at most what was in flight, reports what happened, and keeps serving.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/hardening/faults_fixture.h"
#include "tests/hardening/hardening.h"

namespace gearbox::hardening {
namespace {

using gearbox::testing::GetRequest;
using gearbox::testing::WaitUntil;

struct Attempt {
  double start_ms;  // since the load started
  bool ok;
  std::string what;
};

// 6a. prefork: kill -9 one child under ~200 req/s of new connections. Only
// what it had in flight fails, the master replaces it within 100 ms (the
// issue's bound; measured 4-7 ms), and nothing fails after that.
TEST_F(FaultTest, PreforkChildKilledUnderLoadIsReplacedFast) {
  if (!IsModel("prefork")) GTEST_SKIP() << "prefork only";
  constexpr int kWorkers = 4;
  constexpr int kClientThreads = 4;
  constexpr Millis kPeriod(20);  // per thread: 4 x 50 req/s = 200 req/s
  constexpr int kMaxPerThread = 200;
  Settings s;
  s.workers = kWorkers;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::vector<pid_t> before = WaitForChildren(kWorkers, Millis(5000));
  ASSERT_EQ(before.size(), static_cast<size_t>(kWorkers));

  std::mutex mu;
  std::vector<Attempt> attempts;
  std::atomic<bool> stop{false};
  const auto t0 = Clock::now();
  std::vector<std::thread> load;
  for (int t = 0; t < kClientThreads; ++t) {
    load.emplace_back([&, t] {
      auto next = t0 + Millis(5 * t);
      for (int k = 0; k < kMaxPerThread && !stop.load(); ++k) {
        // Pacing: the load's rate, one request per period per thread.
        std::this_thread::sleep_until(next);
        next += kPeriod;
        const double start = MsSince(t0);
        HttpResponse r = gearbox::testing::Exchange(
            port(), GetRequest("/sleep?ms=10", "Connection: close\r\n"),
            Millis(3000));
        const bool ok = r.error.empty() && r.status == 200;
        std::lock_guard<std::mutex> lock(mu);
        attempts.push_back(
            {start, ok, ok ? "" : std::to_string(r.status) + " " + r.error});
      }
    });
  }
  // The kill comes once the load flows: a second's worth of requests
  // answered, however late the load got going on a busy host.
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return attempts.size() >= 200;
      },
      Millis(5000)))
      << "the load did not get going";
  const pid_t victim = before[0];
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killed = Clock::now();
  const double killed_ms = MsBetween(t0, killed);
  double respawn_ms = -1;
  pid_t replacement = 0;
  WaitUntil(
      [&] {
        for (pid_t p : WorkerChildrenOf(pid())) {
          if (std::find(before.begin(), before.end(), p) == before.end()) {
            replacement = p;
            respawn_ms = MsSince(killed);
          }
        }
        return replacement != 0;
      },
      Millis(3000), Millis(2));
  const double replaced_at_ms = killed_ms + std::max(respawn_ms, 0.0);
  // ... and the load runs on for 2 s after the kill: the window failures
  // after the respawn are counted over, its length the measurement.
  std::this_thread::sleep_until(killed + Millis(2000));
  stop.store(true);
  for (std::thread& t : load) t.join();

  int failures = 0, failures_after = 0, ok = 0;
  std::string failed;
  for (const Attempt& a : attempts) {
    if (a.ok) {
      ++ok;
      continue;
    }
    ++failures;
    if (a.start_ms > replaced_at_ms) ++failures_after;
    failed += "  at " + std::to_string(a.start_ms) + " ms: " + a.what + "\n";
  }
  const double seconds = MsSince(t0) / 1000.0;
  Report("requests=" + std::to_string(attempts.size()) + " rate_per_s=" +
         std::to_string(static_cast<double>(attempts.size()) / seconds) +
         " ok=" + std::to_string(ok) + " failed=" + std::to_string(failures) +
         " failed_after_respawn=" + std::to_string(failures_after) +
         " killed_at_ms=" + std::to_string(killed_ms) +
         " respawn_ms=" + std::to_string(respawn_ms) +
         " children_after=" + std::to_string(WorkerChildrenOf(pid()).size()));
  EXPECT_GT(replacement, 0) << "no new child within 3 s of kill -9";
  EXPECT_LE(respawn_ms, 100) << "child respawn too slow";
  EXPECT_LE(failures, 3)
      << "more than the victim's in-flight requests failed:\n"
      << failed;
  EXPECT_EQ(failures_after, 0) << failed;
  EXPECT_GE(static_cast<double>(attempts.size()) / seconds, 120)
      << "the load generator did not reach ~200 req/s";
  EXPECT_EQ(WorkerChildrenOf(pid()).size(), static_cast<size_t>(kWorkers));
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("event=child_died"), std::string::npos)
      << "the master did not log the death";
  EXPECT_TRUE(Alive());
}

// 6c. prefork: kill -9 the head guard process while it holds slow heads.
// Only those connections are lost (closed); fresh clients are served all
// along; the master starts a new guard within ~1 s, and slow heads are parked
// and served again.
TEST_F(FaultTest, PreforkHeadGuardKilledIsReplaced) {
  if (!IsModel("prefork")) GTEST_SKIP() << "the head guard is prefork's";
  Settings s;
  s.workers = 2;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  auto guard_pid = [&]() -> pid_t {
    std::vector<pid_t> all = ChildrenOf(pid());
    std::vector<pid_t> workers = WorkerChildrenOf(pid());
    for (pid_t p : all)
      if (std::find(workers.begin(), workers.end(), p) == workers.end())
        return p;
    return 0;
  };
  const pid_t first = guard_pid();
  ASSERT_GT(first, 0) << "no gearboxd-guard process next to the workers";

  // Three slow heads (more than the 2 children): parked with the guard.
  std::string error;
  std::vector<int> slow;
  for (int i = 0; i < 3; ++i) {
    int fd = StartConnect(port(), 0, &error);
    ASSERT_GE(fd, 0) << error;
    ASSERT_TRUE(FinishConnect(fd, Millis(2000), &error)) << error;
    ASSERT_TRUE(SendAll(fd, "GET /hello HTTP/1.1\r\n", Millis(2000), &error));
    slow.push_back(fd);
  }
  // Parked: the guard took all three heads over.
  ASSERT_TRUE(WaitUntil([&] { return JsonNumber(StatusJson(), "parked") >= 3; },
                        Millis(5000)))
      << StatusJson();
  ASSERT_EQ(kill(first, SIGKILL), 0);
  const auto killed = Clock::now();
  int lost = 0;
  for (int fd : slow) {
    Ending e = ReadUntilClosed(fd, Millis(2000), killed);
    if (e.closed) ++lost;
    close(fd);
  }
  const double hello_ms = TimedHello(Millis(2000), &error);
  // SIGKILL is asynchronous: until the old guard has exited, guard_pid() may
  // still find it, so wait for a guard that is not the killed one.
  pid_t second = 0;
  WaitUntil(
      [&] {
        second = guard_pid();
        return second != 0 && second != first;
      },
      Millis(3000));
  const double respawn_ms = MsSince(killed);

  // A slow head after the respawn is parked and served.
  int fd = StartConnect(port(), 0, &error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_TRUE(FinishConnect(fd, Millis(2000), &error)) << error;
  const int64_t parked = JsonNumber(StatusJson(), "parked");
  ASSERT_TRUE(SendAll(fd, "GET /hello HTTP/1.1\r\n", Millis(2000), &error));
  // The new guard takes the head over before the rest of it is sent.
  EXPECT_TRUE(
      WaitUntil([&] { return JsonNumber(StatusJson(), "parked") > parked; },
                Millis(5000)))
      << "the slow head was not parked with the new guard: " << StatusJson();
  ASSERT_TRUE(SendAll(fd, "Host: t\r\nConnection: close\r\n\r\n", Millis(2000),
                      &error));
  Ending after = ReadUntilClosed(fd, Millis(3000), Clock::now());
  close(fd);
  const std::string log = daemon_->Log();
  Report("slow_heads_lost=" + std::to_string(lost) +
         " hello_ms=" + std::to_string(hello_ms) +
         " new_guard_after_ms=" + std::to_string(respawn_ms) +
         " slow_head_after_status=" + std::to_string(after.status));
  EXPECT_EQ(lost, 3) << "the heads the dead guard held must be closed";
  EXPECT_GE(hello_ms, 0) << error;
  EXPECT_LT(hello_ms, 1000);
  EXPECT_GT(second, 0) << "no new guard within 3 s";
  EXPECT_NE(second, first);
  EXPECT_LT(respawn_ms, 2000);
  EXPECT_EQ(after.status, 200) << after.bytes;
  EXPECT_NE(log.find("event=head_guard_died"), std::string::npos) << log;
  EXPECT_TRUE(Alive());
  EXPECT_EQ(WorkerChildrenOf(pid()).size(), 2u) << "a worker died with it";
}

// 6b. The crash route. threadpool/async: the whole process aborts (SIGABRT)
// and says so in the log first; systemd restarts it (covered elsewhere).
// prefork: only the child aborts; the master logs it and replaces it.
TEST_F(FaultTest, CrashRouteAbortsAndIsReported) {
  Settings s;
  s.crash_route = true;
  s.workers = 2;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  ExpectHealthy("before the crash");
  HttpResponse r =
      gearbox::testing::Exchange(port(), GetRequest("/crash"), Millis(5000));
  EXPECT_EQ(r.status, 0) << "the crash route answered: " << r.raw;
  if (IsModel("prefork")) {
    std::string error;
    double ms = -1;
    const auto t0 = Clock::now();
    while (MsSince(t0) < 3000 && ms < 0) ms = TimedHello(Millis(1000), &error);
    // The master reaps and logs asynchronously (SIGCHLD): a hello served by
    // the other child can come back before that line is written (seen with
    // the old and the new build alike), so wait for it, bounded.
    const std::string log = gearbox::testing::WaitForLog(
        *daemon_, "event=child_died", Millis(2000));
    Report("after_crash_hello_ms=" + std::to_string(MsSince(t0)) +
           " children=" + std::to_string(WorkerChildrenOf(pid()).size()));
    EXPECT_TRUE(Alive()) << "the master died with its child";
    EXPECT_GE(ms, 0) << error;
    EXPECT_NE(log.find("event=crash_handler"), std::string::npos) << log;
    EXPECT_NE(log.find("event=child_died"), std::string::npos) << log;
    EXPECT_NE(log.find("signal=Aborted"), std::string::npos) << log;
    return;
  }
  std::optional<int> status = daemon_->WaitExit(Millis(5000));
  ASSERT_TRUE(status.has_value()) << "gearboxd still running after /crash";
  const std::string log = daemon_->Log();
  Report("exit=\"" + gearbox::testing::DescribeWaitStatus(*status) + "\"");
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGABRT)
      << gearbox::testing::DescribeWaitStatus(*status);
  EXPECT_NE(log.find("event=crash_handler"), std::string::npos)
      << "the crash was not reported in the log:\n"
      << log;
}

}  // namespace
}  // namespace gearbox::hardening

int main(int argc, char** argv) {
  return gearbox::hardening::HardeningMain(argc, argv);
}
