#include "models/prefork/request_kill.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <string>

#include "daemon/connection/cut_off.h"
#include "models/prefork/prefork_model.h"

namespace gearbox {
namespace {

// What the handler reads. Written by the child's one thread between
// requests; the handler runs on that same thread, so it sees a consistent
// value unless it interrupted the write itself (then the request check below
// fails or the target is the right one either way).
WorkerStats* g_stats = nullptr;
std::atomic<BlockingConnection*> g_target{nullptr};
std::atomic<bool> g_http{false};
// The 504 for each protocol, rendered once per child (cut_off.h).
std::string g_http_answer;
std::string g_fastcgi_answer;

// Async-signal-safe: atomics (lock-free), the connection's stamping and
// counting (plain memory and atomics), time(2), send(2), _exit(2).
void OnRequestKill(int, siginfo_t* info, void*) {
  const auto start = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
  WorkerStats* stats = g_stats;
  if (!stats || start == 0 ||
      stats->current_start_us.load(std::memory_order_relaxed) != start) {
    return;  // that request finished meanwhile: nothing to cut off
  }
  BlockingConnection* c = g_target.load(std::memory_order_relaxed);
  if (!c || c->fd < 0) {
    Bump(stats->request_timeouts);
    _exit(kChildRequestKilled);
  }
  size_t sent = 0;
  // Only when the client is owed nothing before this response: earlier
  // pipelined answers still unsent (or this one half-framed) would make a
  // 504 arrive as the answer to another request.
  if (c->conn.pending_out().empty()) {
    std::string& answer = g_http.load(std::memory_order_relaxed)
                              ? g_http_answer
                              : g_fastcgi_answer;
    c->conn.StampCutOff(answer, time(nullptr));
    const ssize_t n =
        send(c->fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) sent = static_cast<size_t>(n);
  }
  c->conn.CountCutOff(sent);
  _exit(kChildRequestKilled);
}

}  // namespace

void InstallRequestKill(WorkerStats* stats, const LimitsConfig& limits) {
  g_http_answer = RenderCutOffAnswer(Protocol::kHttp, limits);
  g_fastcgi_answer = RenderCutOffAnswer(Protocol::kFastCgi, limits);
  g_stats = stats;
  struct sigaction sa = {};
  sa.sa_sigaction = &OnRequestKill;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGUSR2, &sa, nullptr);
}

void SetKillTarget(BlockingConnection* c, Protocol protocol) {
  g_http.store(protocol == Protocol::kHttp, std::memory_order_relaxed);
  g_target.store(c, std::memory_order_relaxed);
}

bool SendRequestKill(pid_t pid, uint64_t start_us) {
  sigval value{};
  value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(start_us));
  return sigqueue(pid, SIGUSR2, value) == 0;
}

}  // namespace gearbox
