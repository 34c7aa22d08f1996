// Modules under every model (one target per model, models.bzl): the example
// modules (sdk/examples) and the test modules (tests/modules) loaded by the
// real gearboxd, driven over real sockets.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/modules/modules_fixture.h"

namespace gearbox::testing {
namespace {

constexpr int kWorkers = 4;

std::string TimerwaitSections() {
  return ModelSections(kWorkers) +
         ModuleTable("timerwait", Runfile("sdk/libtimerwait.so")) +
         ModuleTable("hello", Runfile("sdk/libhello.so")) +
         "[[route]]\npath = \"/tw\"\nhandler = \"timerwait\"\nmax_ms = "
         "10000\n\n"
         "[[route]]\npath = \"/hi\"\nhandler = \"hello\"\n\n";
}

std::string ProbeSections() {
  return ModelSections(kWorkers) +
         ModuleTable("probe", Runfile("tests/modules/libprobe.so")) +
         "[[route]]\npath = \"/probe\"\nhandler = \"probe\"\ngreeting = "
         "\"hello probe\"\n\n";
}

bool IsModel(const char* name) { return ModelUnderTest() == name; }

// The value of `key=` in a probe body line ("count=3" -> "3").
std::string Field(const std::string& body, const std::string& key) {
  size_t at = body.find(" " + key + "=");
  if (at == std::string::npos) at = body.find("\n" + key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 2;
  return body.substr(from, body.find_first_of(" \n", from) - from);
}

TEST_F(ModuleTest, HelloAnswersAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartWith(TimerwaitSections()));
  HttpResponse r = Exchange(port(), GetRequest("/hi"));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, "hello from a module\n");
  EXPECT_EQ(r.Header("Content-Type"), "text/plain");
  // The built-in routes still answer beside the modules.
  EXPECT_EQ(Exchange(port(), GetRequest("/hello")).body, "hello world\n");
}

// 200 waits of 50 ms at once. A wait holds no worker under async (one loop
// serves them together); under prefork and threadpool each wait holds its
// worker, so they take ceil(200 / workers) rounds of 50 ms.
TEST_F(ModuleTest, TimerwaitTwoHundredConcurrent) {
  ASSERT_NO_FATAL_FAILURE(StartWith(TimerwaitSections()));
  // Warm: every worker started and has served (lazy setup is not timed).
  for (int i = 0; i < 2 * kWorkers; ++i) {
    ASSERT_EQ(Exchange(port(), GetRequest("/tw?ms=1")).status, 200);
  }
  constexpr int kRequests = 200;
  Burst burst = ConcurrentGets(port(), "/tw?ms=50", kRequests, Millis(30000));
  int ok = 0;
  for (const HttpResponse& r : burst.responses) {
    if (r.status == 200 && r.body == "waited 50 ms\n") {
      ++ok;
    } else if (ok + 5 > kRequests) {
      ADD_FAILURE() << "a request failed: " << r.error << " " << r.raw;
    }
  }
  EXPECT_EQ(ok, kRequests);
  const int workers = IsModel("async") ? 1 : kWorkers;
  printf("[modules] model=%s timerwait_200x50ms_ms=%.0f workers=%d\n",
         ModelUnderTest().c_str(), burst.elapsed_ms, workers);
  if (IsModel("async")) {
    EXPECT_LT(burst.elapsed_ms, 500) << "the waits did not overlap";
  } else {
    const double floor_ms = std::ceil(kRequests / double(workers)) * 50;
    EXPECT_GE(burst.elapsed_ms, floor_ms) << "each wait should hold its worker";
  }
}

// Clients that hang up mid-wait: the exchange is cancelled (finish() closes
// its timerfd), the wait's events are removed. Descriptors and epoll
// registrations return to their baseline.
TEST_F(ModuleTest, ClosedMidWaitLeaksNoFdOrEvent) {
  ASSERT_NO_FATAL_FAILURE(StartWith(TimerwaitSections()));
  for (int i = 0; i < 2 * kWorkers; ++i) {
    ASSERT_EQ(Exchange(port(), GetRequest("/tw?ms=1")).status, 200);
  }
  // The server has closed the warm-up connections.
  ASSERT_TRUE(
      WaitUntil([&] { return ServerHeldEnds(port()) == 0; }, Millis(5000)));
  const pid_t pid = daemon_->pid();
  const int fds_before = TreeFdCount(pid);
  const int watches_before = TreeEpollWatches(pid);
  constexpr int kRounds = 10, kPerRound = 20;
  int peak_fds = fds_before;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Connection> held;
    for (int i = 0; i < kPerRound; ++i) {
      held.push_back(Connection::Open(port()));
      ASSERT_TRUE(held.back().ok()) << held.back().error();
      ASSERT_TRUE(held.back().Send(GetRequest("/tw?ms=5000")));
    }
    // The waits are armed: a timerfd each beside its client socket.
    WaitUntil(
        [&] {
          peak_fds = std::max(peak_fds, TreeFdCount(pid));
          return peak_fds >= fds_before + 2 * std::min(kWorkers, kPerRound);
        },
        Millis(5000));
    held.clear();  // hang up mid-wait
  }
  // Each wait had a timerfd open (plus its client socket) at the peak.
  EXPECT_GE(peak_fds, fds_before + 2 * std::min(kWorkers, kPerRound));
  int fds = 0, watches = 0;
  WaitUntil(
      [&] {
        fds = TreeFdCount(pid);
        watches = TreeEpollWatches(pid);
        return fds == fds_before && watches == watches_before;
      },
      Millis(10000), Millis(50));
  printf(
      "[modules] model=%s aborted_waits=%d fds_before=%d peak=%d after=%d "
      "epoll_watches_before=%d after=%d\n",
      ModelUnderTest().c_str(), kRounds * kPerRound, fds_before, peak_fds, fds,
      watches_before, watches);
  EXPECT_EQ(fds, fds_before) << "descriptors leaked";
  EXPECT_EQ(watches, watches_before) << "epoll registrations leaked";
  HttpResponse r = Exchange(port(), GetRequest("/tw?ms=10"));
  EXPECT_EQ(r.body, "waited 10 ms\n") << r.raw;
}

TEST_F(ModuleTest, ModuleSeesTheRequestAndSetsTheResponse) {
  ASSERT_NO_FATAL_FAILURE(StartWith(ProbeSections()));
  Connection c = Connection::Open(port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send(
      "POST /probe?status=201&x=1 HTTP/1.1\r\nHost: t\r\nX-Probe: seen\r\n"
      "Content-Length: 4\r\n\r\nbody"));
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.Header("Content-Type"), "text/x-probe");
  EXPECT_EQ(r.Header("Content-Length"), std::to_string(r.body.size()))
      << "a module may not set Content-Length: " << r.raw;
  EXPECT_EQ(r.Header("X-Probe-Reserved"), "refused");
  EXPECT_NE(r.body.find("hello probe\nmethod=POST path=/probe "
                        "query=status=201&x=1 header=seen body=body\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("wakes=start\n"), std::string::npos) << r.body;
}

// A status out of range is the module's bug: 500, counted on its route as a
// handler error in /status; a 500 the module chooses is not one.
TEST_F(ModuleTest, AStatusOutOfRangeIsAHandlerErrorOnItsRoute) {
  ASSERT_NO_FATAL_FAILURE(StartWith(ProbeSections()));
  EXPECT_EQ(Exchange(port(), GetRequest("/probe?status=42")).status, 500);
  EXPECT_EQ(Exchange(port(), GetRequest("/probe?status=500")).status, 500);
  EXPECT_EQ(Exchange(port(), GetRequest("/probe")).status, 200);
  const std::string json = StatusJson(port());
  EXPECT_EQ(FigureAfter(json, "{\"route\":\"/probe\"", "\"requests\":", '}'), 3)
      << json;
  EXPECT_EQ(
      FigureAfter(json, "{\"route\":\"/probe\"", "\"handler_errors\":", '}'), 1)
      << json;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return daemon_->Log().find("event=module_bad_status") !=
               std::string::npos;
      },
      Millis(5000)));
}

// Every kind of wait works under every model.
TEST_F(ModuleTest, EveryKindOfWait) {
  ASSERT_NO_FATAL_FAILURE(StartWith(ProbeSections()));
  const std::pair<const char*, const char*> kWaits[] = {
      {"timer", "wakes=start,timer\n"},
      {"deadline", "wakes=start,deadline\n"},
      {"writable", "wakes=start,ready+0w\n"},
      {"readable", "wakes=start,ready+1r\n"},  // the one with a byte
  };
  for (const auto& [wait, wakes] : kWaits) {
    HttpResponse r =
        Exchange(port(), GetRequest(std::string("/probe?wait=") + wait));
    EXPECT_EQ(r.status, 200) << wait << ": " << r.raw;
    EXPECT_NE(r.body.find(wakes), std::string::npos) << wait << ": " << r.body;
  }
}

// Each worker has its own instance, made on the thread that serves with it:
// one (pid, tid, instance) per worker index, counting only its own requests.
TEST_F(ModuleTest, EachWorkerHasItsOwnInstance) {
  ASSERT_NO_FATAL_FAILURE(StartWith(ProbeSections()));
  std::map<std::string, std::set<std::string>> identities;  // worker -> ids
  std::map<std::string, long> last_count;
  for (int i = 0; i < 40; ++i) {
    HttpResponse r = Exchange(port(), GetRequest("/probe?wait=timer"));
    ASSERT_EQ(r.status, 200) << r.raw;
    const std::string worker = Field(r.body, "worker");
    identities[worker].insert(Field(r.body, "pid") + "/" +
                              Field(r.body, "tid") + "/" +
                              Field(r.body, "instance"));
    EXPECT_EQ(Field(r.body, "same_thread"), "1") << r.body;
    const long count = atol(Field(r.body, "count").c_str());
    EXPECT_GT(count, last_count[worker]) << "instance counts went back";
    last_count[worker] = count;
  }
  std::set<std::string> all;
  for (const auto& [worker, ids] : identities) {
    EXPECT_EQ(ids.size(), 1u)
        << "worker " << worker << " has instances " << ids.size();
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), identities.size()) << "two workers share an instance";
  const std::string log = daemon_->Log();
  const int expected_workers = IsModel("async") ? 1 : kWorkers;
  for (int w = 0; w < expected_workers; ++w) {
    // worker_init ran in that worker, and its log line names it.
    const std::string init =
        "event=probe_worker_init module=probe worker=" + std::to_string(w) +
        " gen=1";
    EXPECT_NE(log.find(init), std::string::npos) << init;
  }
  // A clean stop runs worker_exit in every worker.
  ASSERT_TRUE(daemon_->Signal(SIGTERM));
  std::optional<int> status = daemon_->WaitExit(Millis(10000));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  const std::string final_log = daemon_->Log();
  size_t exits = 0;
  for (size_t at = 0; (at = final_log.find("event=probe_worker_exit", at)) !=
                      std::string::npos;
       ++at) {
    ++exits;
  }
  EXPECT_EQ(exits, static_cast<size_t>(expected_workers)) << final_log;
}

TEST_F(ModuleTest, ModuleLogsThroughGearbox) {
  ASSERT_NO_FATAL_FAILURE(StartWith(ProbeSections()));
  ASSERT_EQ(Exchange(port(), GetRequest("/probe?log=1")).status, 200);
  const auto until = std::chrono::steady_clock::now() + Millis(5000);
  std::string log;
  do {
    log = daemon_->Log();
  } while (log.find("event=probe_request") == std::string::npos &&
           std::chrono::steady_clock::now() < until);
  const size_t at = log.find("event=probe_request");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(
      log.rfind('\n', at) + 1, log.find('\n', at) - log.rfind('\n', at) - 1);
  EXPECT_NE(line.find("level=info"), std::string::npos) << line;
  EXPECT_NE(line.find(" module=probe worker="), std::string::npos) << line;
  EXPECT_NE(line.find(" gen=1 msg=\"count=1\""), std::string::npos) << line;
}

// A crashing module is a crashing worker: prefork loses one child (the
// master starts another), threadpool and async lose the process.
TEST_F(ModuleTest, CrashingModuleBehavesLikeACrashingWorker) {
  ASSERT_NO_FATAL_FAILURE(StartWith(ProbeSections()));
  ASSERT_EQ(Exchange(port(), GetRequest("/probe")).status, 200);
  HttpResponse crashed =
      Exchange(port(), GetRequest("/probe?crash=1"), Millis(5000));
  EXPECT_EQ(crashed.status, 0) << "answered: " << crashed.raw;
  if (IsModel("prefork")) {
    HttpResponse after;
    const auto until = std::chrono::steady_clock::now() + Millis(5000);
    do {
      after = Exchange(port(), GetRequest("/probe"));
    } while (after.status != 200 && std::chrono::steady_clock::now() < until);
    EXPECT_EQ(after.status, 200) << "prefork did not recover: " << after.raw;
    EXPECT_NE(WaitForLog(*daemon_, "event=child_died", Millis(5000))
                  .find("event=child_died"),
              std::string::npos);
    return;
  }
  std::optional<int> status = daemon_->WaitExit(Millis(10000));
  ASSERT_TRUE(status.has_value()) << "the process survived a module crash";
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGABRT)
      << DescribeWaitStatus(*status);
}

}  // namespace
}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
