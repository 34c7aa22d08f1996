#include "tests/integration/systemd/systemd_fixture.h"

#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

namespace gearbox::testing {

using std::chrono::duration_cast;

namespace {

// The models in registry order; reloads walk this ring from the model under
// test.
const std::vector<std::string>& Ring() {
  static const std::vector<std::string> ring = {"prefork", "threadpool",
                                                "async"};
  return ring;
}

std::string& ModelFlag() {
  static std::string model;
  return model;
}

}  // namespace

const std::string& ModelUnderTest() { return ModelFlag(); }

std::string NextModel(const std::string& model, int steps) {
  const auto& ring = Ring();
  auto it = std::find(ring.begin(), ring.end(), model);
  size_t i = it == ring.end() ? 0 : static_cast<size_t>(it - ring.begin());
  return ring[(i + static_cast<size_t>(steps)) % ring.size()];
}

// Every model's section is written; the daemon uses only the chosen one's.
std::string Sections() {
  return "[threadpool]\nthreads = 8\nqueue = 256\n\n"
         "[prefork]\nworkers = 4\nmax_requests = 0\n\n"
         "[async]\nloops = 2\n\n"
         "[limits]\nheader_timeout = \"10s\"\nidle_timeout = \"75s\"\n\n"
         "[log]\nlevel = \"info\"\n\n"
         "[metrics]\ninterval = \"" +
         std::to_string(kMetricsInterval.count()) + "ms\"\n";
}

ActivatedOptions Options(const std::string& model) {
  ActivatedOptions o;
  o.model = model;
  o.sections = Sections();
  return o;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status))
    return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

uint64_t MonotonicUsec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u +
         static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

int64_t Ms(SteadyClock::duration d) { return duration_cast<Millis>(d).count(); }
double MsF(SteadyClock::duration d) {
  return static_cast<double>(
             duration_cast<std::chrono::microseconds>(d).count()) /
         1000.0;
}

StatusDoc ParseStatus(const std::string& body) {
  StatusDoc s;
  const std::string mkey = "\"model\":\"";
  if (size_t p = body.find(mkey); p != std::string::npos) {
    size_t e = body.find('"', p + mkey.size());
    s.model = body.substr(p + mkey.size(), e - p - mkey.size());
  }
  const std::string gkey = "\"generation\":";
  if (size_t p = body.find(gkey); p != std::string::npos)
    s.generation = atoi(body.c_str() + p + gkey.size());
  return s;
}

bool IsReady(const NotifyMessage& m) { return m.Has("READY", "1"); }
bool IsReloading(const NotifyMessage& m) { return m.Has("RELOADING", "1"); }
bool IsStopping(const NotifyMessage& m) { return m.Has("STOPPING", "1"); }
bool IsPeriodicStatus(const NotifyMessage& m) {
  return m.Field("STATUS") && !m.Field("READY") && !m.Field("RELOADING") &&
         !m.Field("STOPPING");
}

void SetModelUnderTest(const std::string& model) { ModelFlag() = model; }

// Waits until `d` reaches `want` (threads, fds, children); returns the last
// reading.
ProcCounts SettleTo(pid_t pid, const ProcCounts& want, Millis timeout) {
  ProcCounts c;
  WaitUntil(
      [&] {
        c = ReadProcCounts(pid);
        return c.SameAs(want);
      },
      timeout, Millis(50));
  return c;
}

// A reading that has stayed the same for `quiet` (the daemon is idle).
ProcCounts Steady(pid_t pid, Millis quiet, Millis timeout) {
  ProcCounts last = ReadProcCounts(pid);
  auto since = SteadyClock::now();
  WaitUntil(
      [&] {
        ProcCounts c = ReadProcCounts(pid);
        if (!c.SameAs(last)) {
          last = c;
          since = SteadyClock::now();
        }
        return SteadyClock::now() - since >= quiet;
      },
      timeout, Millis(50));
  return last;
}

}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string model;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, 8) == "--model=") model = std::string(arg.substr(8));
  }
  if (model.empty()) {
    if (const char* env = getenv("GEARBOX_MODEL")) model = env;
  }
  if (model.empty()) {
    fprintf(stderr, "systemd test: pass --model=NAME or set GEARBOX_MODEL\n");
    return 2;
  }
  gearbox::testing::SetModelUnderTest(model);
  return RUN_ALL_TESTS();
}
