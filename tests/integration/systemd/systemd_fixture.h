// Shared by the systemd test sources: the model under test (--model=), the
// config every test starts from, sd_notify predicates, and the fixture that
// launches socket-activated daemons and dumps their log and notify messages
// when a test fails.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tests/integration/systemd/activated_daemon.h"
#include "tests/integration/systemd/load_clients.h"
#include "tests/integration/systemd/unix_http.h"
#include "tests/support/json_number.h"
#include "tests/support/proc_state.h"
#include "tests/support/wait_until.h"

namespace gearbox::testing {

inline constexpr Millis kIo{5000};
inline constexpr Millis kReadyTimeout{10000};
inline constexpr Millis kMetricsInterval{200};  // the loader's minimum is 100ms

// The model the daemon starts with (--model=NAME from BUILD, or
// $GEARBOX_MODEL).
const std::string& ModelUnderTest();
void SetModelUnderTest(const std::string& model);  // main() does
// The model `steps` after `model` in registry order (prefork, threadpool,
// async, prefork, ...): the reload tests walk this ring.
std::string NextModel(const std::string& model, int steps);

// Every model's section (threadpool 8 threads, prefork 4 workers, async 2
// loops), limits, log level and a 200 ms [metrics] interval.
std::string Sections();
ActivatedOptions Options(const std::string& model);

std::string DescribeWaitStatus(int status);
uint64_t MonotonicUsec();  // CLOCK_MONOTONIC, as sd_notify's MONOTONIC_USEC
int64_t Ms(SteadyClock::duration d);
double MsF(SteadyClock::duration d);  // milliseconds with microsecond precision

// "model" and "generation" out of the /status JSON.
struct StatusDoc {
  std::string model;
  int generation = -1;
};
StatusDoc ParseStatus(const std::string& body);

bool IsReady(const NotifyMessage& m);
bool IsReloading(const NotifyMessage& m);
bool IsStopping(const NotifyMessage& m);
// A periodic figures line (not the STATUS= that comes with
// READY/RELOADING/...).
bool IsPeriodicStatus(const NotifyMessage& m);

// Polls /proc until `pid` holds exactly `want` (bounded); returns the last
// reading.
ProcCounts SettleTo(pid_t pid, const ProcCounts& want, Millis timeout);
// A reading that stayed the same for `quiet` (the daemon is idle), bounded.
ProcCounts Steady(pid_t pid, Millis quiet, Millis timeout);

class SystemdTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) {
      for (auto* d : {daemon_.get(), baseline_.get()}) {
        if (!d) continue;
        std::string log = d->Log();
        if (log.size() > 12000) log = "..." + log.substr(log.size() - 12000);
        ADD_FAILURE() << "model=" << ModelUnderTest() << " pid " << d->pid()
                      << " log (" << d->log_path() << "):\n"
                      << log << "\nsd_notify messages:\n"
                      << d->notify().Dump();
      }
    }
    baseline_.reset();
    daemon_.reset();
  }

  // Starts systemd-socket-activate with `options` into *slot.
  void Launch(const ActivatedOptions& options,
              std::unique_ptr<ActivatedDaemon>* slot) {
    std::string error;
    *slot = ActivatedDaemon::Start(options, &error);
    ASSERT_NE(*slot, nullptr) << error;
  }

  // The first connection makes systemd-socket-activate exec gearboxd; waits
  // for READY=1 and checks that this first request is served too.
  void Activate(ActivatedDaemon& d) {
    UnixResponse first = UnixExchange(d.socket_path(), "/hello", Millis(15000));
    ASSERT_TRUE(Good(first)) << "activating request: " << Describe(first);
    EXPECT_EQ(first.body, "hello world\n");
    auto ready = d.notify().WaitFor(0, IsReady, kReadyTimeout);
    ASSERT_TRUE(ready) << "no READY=1 within 10 s";
  }

  // The integer `key` of /status (JSON), or -1.
  int64_t StatusNumber(ActivatedDaemon& d, std::string_view key) {
    return JsonNumber(UnixExchange(d.socket_path(), "/status", kIo).body, key);
  }

  StatusDoc Status(ActivatedDaemon& d) {
    UnixResponse r = UnixExchange(d.socket_path(), "/status", kIo);
    EXPECT_TRUE(Good(r)) << "/status: " << Describe(r);
    return ParseStatus(r.body);
  }

  // /status once generation `want` answers (bounded: 2 s). Right after a
  // reload's READY=1 the draining generation may still accept a connection or
  // two; AfterReloadReadyOnlyTheNewGenerationAccepts checks that separately.
  // Every answer must still be a 200.
  StatusDoc StatusOfGeneration(ActivatedDaemon& d, int want) {
    StatusDoc s;
    WaitUntil(
        [&] {
          s = Status(d);
          return s.generation == want || ::testing::Test::HasFailure();
        },
        Millis(2000), Millis(10));
    return s;
  }

  // SIGHUP after rewriting the config to `model`; waits for RELOADING=1 then
  // READY=1. Returns the milliseconds from the signal to READY=1 (or -1).
  double Reload(ActivatedDaemon& d, const std::string& model,
                std::string* ready_status = nullptr) {
    EXPECT_TRUE(
        d.WriteConfig(RenderActivatedConfig(Options(model), d.socket_path())));
    const size_t from = d.notify().Count();
    const auto t0 = SteadyClock::now();
    EXPECT_TRUE(d.Signal(SIGHUP));
    size_t at = 0;
    auto reloading = d.notify().WaitFor(from, IsReloading, kReadyTimeout, &at);
    EXPECT_TRUE(reloading) << "no RELOADING=1 after SIGHUP";
    if (!reloading) return -1;
    auto ready = d.notify().WaitFor(at + 1, IsReady, kReadyTimeout);
    EXPECT_TRUE(ready) << "no READY=1 after RELOADING=1";
    if (!ready) return -1;
    if (ready_status) *ready_status = ready->Field("STATUS").value_or("");
    return MsF(ready->at - t0);
  }

  std::unique_ptr<ActivatedDaemon> daemon_;
  std::unique_ptr<ActivatedDaemon> baseline_;  // ReloadUnderLoad's reference
};

}  // namespace gearbox::testing
