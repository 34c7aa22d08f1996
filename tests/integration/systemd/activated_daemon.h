// gearboxd started the way a systemd .socket unit starts it, without systemd:
//
//   systemd-socket-activate -l $DIR/N.sock --fdname=http
//       -E NOTIFY_SOCKET=$DIR/N.notify  gearboxd -c $DIR/N.toml
//
// systemd-socket-activate binds the unix socket, waits for the first
// connection, then exec()s gearboxd in the same process with LISTEN_FDS=1,
// LISTEN_PID and LISTEN_FDNAMES set, so the pid we fork is gearboxd's pid. The
// test owns NOTIFY_SOCKET (an AF_UNIX datagram socket) and records every
// sd_notify() message with its arrival time.
//
// A unix socket path avoids port races; paths are kept short (sun_path is 108
// bytes), falling back from $TEST_TMPDIR to a fresh /tmp/gbx-XXXXXX directory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gearbox::testing {

using Millis = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// One sd_notify() datagram, e.g. "READY=1\nMAINPID=42\nSTATUS=...".
struct NotifyMessage {
  SteadyClock::time_point at;
  std::string text;
  // The value of KEY= in this message, or nullopt.
  std::optional<std::string> Field(std::string_view key) const;
  bool Has(std::string_view key, std::string_view value) const {
    auto v = Field(key);
    return v && *v == value;
  }
};

// The receiving end of NOTIFY_SOCKET; a background thread collects messages.
class NotifySocket {
 public:
  // Binds `path` (unlinking a stale file). Returns null and sets *error.
  static std::unique_ptr<NotifySocket> Bind(const std::string& path,
                                            std::string* error);
  ~NotifySocket();

  const std::string& path() const { return path_; }
  size_t Count() const;
  std::vector<NotifyMessage> Messages() const;
  // Waits up to `timeout` for a message at index >= `from` that satisfies
  // `match`; returns it and sets *index (when given) to its position.
  std::optional<NotifyMessage> WaitFor(
      size_t from, const std::function<bool(const NotifyMessage&)>& match,
      Millis timeout, size_t* index = nullptr) const;
  // Every message, one per line with its offset from the first ("+12ms ...").
  std::string Dump() const;

 private:
  NotifySocket() = default;
  void Run();

  std::string path_;
  int fd_ = -1;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<NotifyMessage> messages_;
  bool stop_ = false;
  std::thread thread_;
};

struct ActivatedOptions {
  std::string model;
  // TOML tables after [server] and [[listen]] (model sections, limits, ...).
  std::string sections;
  // The socket's name as systemd passes it (FileDescriptorName=).
  std::string fdname = "http";
  // The [[listen]] entry's name in the config.
  std::string listen_name = "http";
  std::string graceful_timeout = "5s";
};

// The config text: [server], one unix [[listen]], `sections`, and the routes
// /hello (text), /sleep (wait, ?ms=), /status.
std::string RenderActivatedConfig(const ActivatedOptions& options,
                                  const std::string& socket_path);

class ActivatedDaemon {
 public:
  // Writes the config, binds NOTIFY_SOCKET, spawns systemd-socket-activate and
  // waits until it listens (gearboxd is not running yet: the first connection
  // starts it). Returns null and sets *error on failure.
  static std::unique_ptr<ActivatedDaemon> Start(const ActivatedOptions& options,
                                                std::string* error);
  // SIGTERM, bounded wait, SIGKILL. No-op when already reaped.
  ~ActivatedDaemon();

  pid_t pid() const { return pid_; }
  const std::string& socket_path() const { return socket_path_; }
  const std::string& config_path() const { return config_path_; }
  const std::string& log_path() const { return log_path_; }
  NotifySocket& notify() { return *notify_; }

  bool Signal(int sig);
  // Raw waitpid status, or nullopt on timeout; the same status once reaped.
  std::optional<int> WaitExit(Millis timeout);
  std::string Log() const;
  // Replaces the config file atomically (write + rename): a SIGHUP never sees
  // half a file.
  bool WriteConfig(const std::string& text);

 private:
  ActivatedDaemon() = default;

  pid_t pid_ = -1;
  std::optional<int> exit_status_;
  std::string socket_path_, config_path_, log_path_;
  std::unique_ptr<NotifySocket> notify_;
};

// The short directory the daemons' unix sockets live in (for a test's own
// extra sockets).
const std::string& SocketDirectory();

// What a process holds, read from /proc.
struct ProcCounts {
  int threads = -1;     // /proc/PID/task entries
  int fds = -1;         // /proc/PID/fd entries
  int children = -1;    // processes whose ppid is PID (zombies included)
  int zombies = -1;     // of those, in state Z
  std::string fd_list;  // "0 -> /dev/null\n3 -> socket:[123]\n..."
  std::string ToString() const;
  bool SameAs(const ProcCounts& o) const {
    return threads == o.threads && fds == o.fds && children == o.children &&
           zombies == o.zombies;
  }
};
ProcCounts ReadProcCounts(pid_t pid);

// Number of log lines containing `needle`.
int CountLines(const std::string& log, std::string_view needle);

}  // namespace gearbox::testing
