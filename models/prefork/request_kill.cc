#include "models/prefork/request_kill.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "models/prefork/prefork_model.h"

namespace gearbox {
namespace {

// What the handler reads. Written by the child's one thread between
// requests; the handler runs on that same thread, so it sees a consistent
// value unless it interrupted the write itself (then the request check below
// fails or the target is the right one either way).
WorkerStats* g_stats = nullptr;
std::atomic<const BlockingConnection*> g_target{nullptr};
std::atomic<bool> g_http{false};

constexpr char k504[] =
    "HTTP/1.1 504 Gateway Timeout\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 16\r\n"
    "Connection: close\r\n"
    "\r\n"
    "request timeout\n";

// Async-signal-safe: atomics (lock-free), send(2), _exit(2).
void OnRequestKill(int, siginfo_t* info, void*) {
  const auto start = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
  WorkerStats* stats = g_stats;
  if (!stats || start == 0 ||
      stats->current_start_us.load(std::memory_order_relaxed) != start) {
    return;  // that request finished meanwhile: nothing to cut off
  }
  Bump(stats->request_timeouts);
  const BlockingConnection* c = g_target.load(std::memory_order_relaxed);
  if (c && c->fd >= 0) {
    // Only when the client is owed nothing before this response: earlier
    // pipelined answers still unsent (or this one half-framed) would make a
    // 504 arrive as the answer to another request.
    if (g_http.load(std::memory_order_relaxed) &&
        c->conn.pending_out().empty()) {
      const ssize_t n =
          send(c->fd, k504, sizeof(k504) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        Bump(stats->requests);
        stats->CountStatus(504);
        Bump(stats->bytes_out, static_cast<uint64_t>(n));
      }
    }
    stats->CountClose(CloseReason::kServer);
  }
  _exit(kChildRequestKilled);
}

}  // namespace

void InstallRequestKill(WorkerStats* stats) {
  g_stats = stats;
  struct sigaction sa = {};
  sa.sa_sigaction = &OnRequestKill;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGUSR2, &sa, nullptr);
}

void SetKillTarget(const BlockingConnection* c, Protocol protocol) {
  g_http.store(protocol == Protocol::kHttp, std::memory_order_relaxed);
  g_target.store(c, std::memory_order_relaxed);
}

bool SendRequestKill(pid_t pid, uint64_t start_us) {
  sigval value{};
  value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(start_us));
  return sigqueue(pid, SIGUSR2, value) == 0;
}

}  // namespace gearbox
