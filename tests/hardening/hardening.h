// Shared pieces of the hardening suite: a fixture that starts gearboxd through
// the integration harness with the limits under test, raw non-blocking client
// sockets for crowds of hostile clients, and /proc readers for what the daemon
// costs (RSS, CPU time, children). Everything is bounded in count and time.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/integration/harness.h"

namespace gearbox::hardening {

using gearbox::testing::ChildrenOf;
using gearbox::testing::ChildrenWaiting;
using gearbox::testing::Connection;
using gearbox::testing::Daemon;
using gearbox::testing::DaemonConfig;
using gearbox::testing::HttpResponse;
using gearbox::testing::Millis;
using Clock = std::chrono::steady_clock;

double MsBetween(Clock::time_point from, Clock::time_point to);
inline double MsSince(Clock::time_point from) {
  return MsBetween(from, Clock::now());
}

// The config under test. Every model's section is written; the daemon reads
// only the chosen model's.
struct Settings {
  int threads = 16;  // [threadpool]
  int queue = 1024;
  int workers = 4;  // [prefork]
  int loops = 1;    // [async]
  std::string header_timeout = "10s";
  std::string idle_timeout = "75s";
  std::string body_timeout = "30s";
  std::string send_timeout = "30s";
  int64_t max_header_bytes = 16384;
  int64_t max_body_bytes = 1048576;
  int64_t max_connections = 10000;
  bool crash_route = false;  // [[route]] /crash + enable_crash_handler
  // Lines appended to the section of the same name, and extra [[route]]
  // tables: keys a suite needs that the others leave at their defaults.
  std::string threadpool_extra, prefork_extra, async_extra, limits_extra;
  std::string routes;
};

std::string RenderSections(const Settings& s);

// Sets RLIMIT_NOFILE's soft limit for as long as it lives (children spawned
// meanwhile inherit it), then restores the previous one.
class NofileLimit {
 public:
  explicit NofileLimit(uint64_t soft);
  ~NofileLimit();
  NofileLimit(const NofileLimit&) = delete;
  NofileLimit& operator=(const NofileLimit&) = delete;
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

 private:
  uint64_t old_soft_ = 0;
  bool ok_ = false;
  std::string error_;
};
// Raises this process's RLIMIT_NOFILE soft limit to `want` (or the hard limit,
// whichever is lower). Returns the new soft limit.
uint64_t RaiseNofile(uint64_t want);
// This process's RLIMIT_NOFILE soft limit.
uint64_t NofileSoft();
// The soft "Max open files" of `pid` (/proc/PID/limits), or -1.
long DaemonNofile(pid_t pid);

// --- /proc ------------------------------------------------------------------

// Resident set size in KiB (VmRSS), or -1.
long RssKib(pid_t pid);
// utime + stime (+ cutime + cstime when `with_reaped`) in seconds, or -1.
double CpuSeconds(pid_t pid, bool with_reaped = false);
// ChildrenOf(pid) without prefork's head guard process (comm
// "gearboxd-guard"): the worker children.
std::vector<pid_t> WorkerChildrenOf(pid_t pid);
// CPU seconds of `pid`, its reaped children and its live children: the whole
// daemon, for prefork too.
double TreeCpuSeconds(pid_t pid);
// Open descriptors of `pid` (entries of /proc/PID/fd), or -1.
int FdCount(pid_t pid);

// --- raw client sockets ------------------------------------------------------

// A non-blocking TCP socket to 127.0.0.1:port with connect() started (or done).
// `rcvbuf` > 0 sets SO_RCVBUF before connect (so the window stays small).
// Returns -1 with *error set when socket() or connect() fails outright.
int StartConnect(int port, int rcvbuf, std::string* error);
// Waits for a StartConnect()ed socket to finish connecting.
bool FinishConnect(int fd, Millis timeout, std::string* error);
// Sends all of `bytes` on a non-blocking socket within `timeout`.
bool SendAll(int fd, std::string_view bytes, Millis timeout,
             std::string* error);

// What the server did to a connection once the client stopped talking.
struct Ending {
  bool closed = false;  // EOF or reset seen
  bool reset = false;   // ... by a reset
  std::string bytes;    // everything received
  int status = 0;       // status code of the first response, 0 if none
  double at_ms = 0;     // when the close was seen (ms since `since`)
};
// Reads until the peer closes or `timeout` passes.
Ending ReadUntilClosed(int fd, Millis timeout, Clock::time_point since);
// "HTTP/1.1 408 ..." -> 408; 0 when `bytes` does not start with a status line.
int StatusOf(std::string_view bytes);

// --- the fixture ------------------------------------------------------------

class HardeningTest : public ::testing::Test {
 protected:
  const std::string& model() const;
  bool IsModel(std::string_view name) const { return model() == name; }

  void Start(const Settings& settings);
  void TearDown() override;

  int port() const { return daemon_->port(); }
  pid_t pid() const { return daemon_->pid(); }
  bool Alive() { return daemon_ && !daemon_->WaitExit(Millis(0)); }

  // GET /hello on a fresh connection: its latency in ms, or -1 with *error.
  double TimedHello(Millis timeout = Millis(5000),
                    std::string* error = nullptr);
  // GET /hello answers 200 "hello world\n" on a fresh connection.
  void ExpectHealthy(const std::string& when);
  // GET /status (JSON). Empty on failure.
  std::string StatusJson();
  // The integer after "\"key\":" in the /status JSON, or -1.
  static int64_t JsonNumber(const std::string& json, std::string_view key);

  // One line into the test log (and so into the report): "[model] what".
  void Report(const std::string& what) const;

  std::unique_ptr<Daemon> daemon_;
};

// Test binaries' main(): gtest flags, then --model=NAME.
int HardeningMain(int argc, char** argv);

}  // namespace gearbox::hardening
