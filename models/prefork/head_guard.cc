#include "models/prefork/head_guard.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/logging.h"
#include "models/prefork/connection_handoff.h"
#include "models/prefork/forked_process.h"
#include "models/prefork/guard_loop.h"

namespace gearbox {
namespace {

void OnTermIgnored(int) {}

}  // namespace

std::unique_ptr<HeadGuard> HeadGuard::Create(const Listeners& listeners,
                                             const LimitsConfig& limits,
                                             std::string* error) {
  std::unique_ptr<HeadGuard> guard(new HeadGuard(listeners, limits));
  const size_t need = static_cast<size_t>(limits.max_header_bytes) +
                      2 * kGuardReadChunk + kHeadRecordOverhead;
  if (!MakeHandoffChannel(guard->park_, need) ||
      !MakeHandoffChannel(guard->unpark_, need)) {
    *error = std::string("socketpair(SOCK_SEQPACKET): ") + strerror(errno);
    return nullptr;
  }
  guard->capacity_ = std::min(HandoffCapacity(guard->park_[1]),
                              HandoffCapacity(guard->unpark_[1]));
  if (guard->capacity_ < need) {
    *error = "a parked request head needs " + std::to_string(need) +
             " bytes per message; the socket buffer allows " +
             std::to_string(guard->capacity_) +
             " (raise net.core.wmem_max or lower max_header_bytes)";
    return nullptr;
  }
  return guard;
}

HeadGuard::~HeadGuard() { CloseForDrain(); }

pid_t HeadGuard::Fork(WorkerStats& stats) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  // The guard process.
  CloseInheritedFds({park_[0], unpark_[1]});
  // SIGTERM is the event loop's (libevent installs its own handler); until it
  // runs, a SIGTERM must not kill the process with connections in hand.
  SetUpForkedSignals(&OnTermIgnored);
  // `ps`, `top` and the tests tell it from the workers by this name.
  prctl(PR_SET_NAME, kHeadGuardProcessName);
  if (getppid() == 1) _exit(1);  // the master is already gone
  stats.pid.store(getpid());
  stats.tid.store(0);
  stats.open_conns.store(0);
  if (!RunGuardLoop(listeners_, limits_, stats, park_[0], unpark_[1],
                    capacity_)) {
    LogError("head_guard_failed", "error={}", LogQuote("libevent setup"));
    _exit(1);
  }
  stats.open_conns.store(0);
  _exit(0);
}

void HeadGuard::CloseForDrain() {
  for (int* fd : {&park_[0], &park_[1], &unpark_[0], &unpark_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

}  // namespace gearbox
