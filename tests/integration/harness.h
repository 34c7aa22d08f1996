// Integration-test harness: runs the real gearboxd on a real socket
// (harness.cc) and talks to it with a tiny blocking HTTP/1.1 client
// (http_client.cc). Everything is bounded: every connect, read and wait has a
// timeout, so a misbehaving daemon fails a test instead of hanging it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/json_number.h"
#include "tests/support/proc_state.h"
#include "tests/support/tcp_state.h"
#include "tests/support/wait_until.h"

namespace gearbox::testing {

inline constexpr Millis kIoTimeout{5000};      // one connect / response read
inline constexpr Millis kStartTimeout{10000};  // until event=listening
inline constexpr Millis kStopTimeout{10000};   // SIGTERM until SIGKILL

// The model under test: set once by the test's main() from --model=NAME (BUILD
// passes it) or $GEARBOX_MODEL.
const std::string& ModelUnderTest();
void SetModelUnderTest(std::string model);
// Parses --model=NAME out of argv (after gtest removed its own flags), falling
// back to $GEARBOX_MODEL. Returns false (and prints why) when neither is set.
bool InitModelFromArgs(int argc, char** argv);

struct DaemonConfig {
  std::string model;  // [server] model
  // More [server] lines ("trusted_proxies = [\"unix\"]\n").
  std::string server;
  // TOML tables appended verbatim after [server] and [[listen]], e.g.
  // "[limits]\nmax_body_bytes = 1024\n". Must not repeat [server].
  std::string sections;
  // Adds the suite's routes: /hello text, /sleep wait, /echo echo, /status.
  bool default_routes = true;
};

// The config file text the harness writes for `config` (exposed for messages).
std::string RenderConfig(const DaemonConfig& config);

// The gearboxd under test ($GEARBOXD or the runfiles' daemon/gearboxd); "" if
// none is found.
std::string GearboxdPath();
// $TEST_TMPDIR, or a fresh directory under /tmp outside Bazel.
std::string TestTempDir();

class Daemon {
 public:
  // Writes the config into $TEST_TMPDIR, spawns gearboxd -c FILE with stderr
  // and stdout in a log file, and waits for `event=listening ...
  // bound=HOST:PORT`. Returns null and sets *error (with the log) on failure.
  static std::unique_ptr<Daemon> Start(const DaemonConfig& config,
                                       std::string* error);
  // SIGTERM, bounded wait, then SIGKILL. No-op when already reaped.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& config_path() const { return config_path_; }
  const std::string& log_path() const { return log_path_; }

  // kill(pid, sig); false when the process is already reaped or kill fails.
  bool Signal(int sig);
  // Waits up to `timeout` for the process to exit. Returns the raw waitpid
  // status, or nullopt on timeout. Once reaped, returns the same status again.
  std::optional<int> WaitExit(Millis timeout);
  // Everything gearboxd wrote to stderr/stdout so far.
  std::string Log() const;

 private:
  Daemon() = default;

  pid_t pid_ = -1;
  int port_ = 0;
  std::optional<int> exit_status_;
  std::string config_path_;
  std::string log_path_;
};

// Waits up to `timeout` for `needle` in the daemon's log; returns the log as
// last read (check it for the needle).
std::string WaitForLog(const Daemon& daemon, std::string_view needle,
                       Millis timeout);

// Waits up to `timeout` for child `pid` to exit; returns its wait status, or
// nullopt on timeout (or if it is not our child).
std::optional<int> WaitChild(pid_t pid, Millis timeout);

// Forks and execs args[0] (a path) with args, stdin from /dev/null and
// stdout/stderr appended to `log_path`, default signal dispositions and
// PR_SET_PDEATHSIG (a crashed test does not leak the process). Returns the pid,
// or -1 with *error set.
pid_t SpawnLogged(std::vector<std::string> args, const std::string& log_path,
                  std::string* error);

// "exited with 0", "killed by signal 9", ...
std::string DescribeWaitStatus(int status);

struct HttpResponse {
  std::string error;    // non-empty: nothing usable was read (then status == 0)
  std::string version;  // "HTTP/1.1"
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string raw;  // the exact bytes of this response

  // Case-insensitive; the first value, or "" when absent.
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// One client TCP connection to 127.0.0.1:port with blocking, bounded I/O.
class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects within `timeout`; check ok() / error().
  static Connection Open(int port, Millis timeout = kIoTimeout);

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }

  // Writes all bytes (bounded by `timeout`). False on error (see error()).
  bool Send(std::string_view bytes, Millis timeout = kIoTimeout);
  // Reads exactly one response (1xx included), framed by Content-Length, or by
  // the connection closing when there is none. Bytes beyond it stay buffered
  // for the next call (pipelining).
  HttpResponse ReadResponse(Millis timeout = kIoTimeout);
  // True when the peer closes (EOF or reset) within `timeout` without sending
  // more bytes; false on timeout or when data arrives.
  bool WaitClosed(Millis timeout = kIoTimeout);
  // True when, for `quiet`, the peer neither closes nor sends anything.
  bool StaysOpen(Millis quiet = Millis(200));
  void ShutdownWrite();
  void Close();
  // Bytes received but not yet consumed by ReadResponse.
  const std::string& buffered() const { return in_; }

 private:
  // Reads more bytes into in_ before `deadline`. 1: got bytes, 0: EOF,
  // -1: error or timeout (error_ set).
  int Fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string in_;
  bool eof_ = false;
  std::string error_;
};

// Convenience: a fresh connection, one request, one response.
HttpResponse Exchange(int port, std::string_view request,
                      Millis timeout = kIoTimeout);
// "GET <target> HTTP/1.1\r\nHost: test\r\n<extra>\r\n".
std::string GetRequest(std::string_view target, std::string_view extra = {});

// GET /status (JSON) on a fresh connection; "" on any failure.
std::string StatusJson(int port);

// The number after `key` in `text`, looked for from the first `opener` up to
// the next `closer` (a /status row: FigureAfter(json, "{\"route\":\"/app\"",
// "\"handler_errors\":", '}')); -1 when absent.
long long FigureAfter(const std::string& text, const std::string& opener,
                      const std::string& key, char closer = '\n');

}  // namespace gearbox::testing
