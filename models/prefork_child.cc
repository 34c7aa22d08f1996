#include "models/prefork_child.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "daemon/logging.h"
#include "models/accept_util.h"
#include "models/blocking_connection.h"
#include "models/prefork_model.h"

namespace gearbox {
namespace {

std::atomic<bool> g_draining{false};

void OnTerm(int) { g_draining.store(true); }

// The child inherits every descriptor of the master, including connections of
// another generation draining in the same process. Holding a copy would keep
// those clients' connections open after their owner closes them, so close
// everything but stdio, the listeners and the ready pipe.
void CloseInheritedFds(const std::set<int>& keep) {
  std::vector<int> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      int fd = atoi(e->d_name);
      if (fd > 2 && fd != dirfd(d) && !keep.count(fd)) fds.push_back(fd);
    }
    closedir(d);
  }
  for (int fd : fds) close(fd);
}

void SetUpSignals() {
  struct sigaction sa = {};
  sa.sa_handler = &OnTerm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll() returns EINTR on SIGTERM
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGINT,
         SIG_DFL);  // fast stop: the master forwards INT and we just die
  signal(SIGQUIT, SIG_DFL);
  signal(SIGHUP, SIG_IGN);  // reloads are the master's business
  signal(SIGCHLD, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  sigset_t all;
  sigemptyset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  // If the master dies without stopping us, do not linger as an orphan.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
}

}  // namespace

void RunPreforkChild(const PreforkChildArgs& args) {
  const ModelContext& ctx = *args.context;
  std::set<int> keep;
  std::vector<pollfd> pfds;
  std::vector<int> listen_fds;
  for (const Listener& l : *ctx.listeners) {
    keep.insert(l.fd);
    pfds.push_back({l.fd, POLLIN, 0});
    listen_fds.push_back(l.fd);
  }
  keep.insert(args.ready_fd);
  CloseInheritedFds(keep);
  SetUpSignals();
  if (getppid() == 1) _exit(kChildSetupFailed);  // master already gone

  WorkerStats& stats = ctx.stats->Slot(static_cast<size_t>(args.slot));
  stats.pid.store(getpid());
  stats.busy.store(0);
  RealSleeper sleeper;
  BlockingContext bc;
  bc.cycle = {ctx.router.get(), &stats, ctx.request_log.get(), args.slot};
  bc.limits = &ctx.config.limits;
  bc.draining = &g_draining;
  bc.sleeper = &sleeper;
  const IdlePolicy idle{.park = false,
                        .listeners = listen_fds,
                        .siblings = ctx.stats.get(),
                        .self_slot = static_cast<size_t>(args.slot)};

  if (args.ready_fd >= 0) {
    char byte = 1;
    ssize_t n = write(args.ready_fd, &byte, 1);
    (void)n;
    close(args.ready_fd);
  }
  int64_t served_connections = 0;
  uint64_t start_requests = stats.requests.load();
  while (!g_draining.load()) {
    // Several listeners (HTTP + FastCGI): poll, then accept whichever is ready.
    // All children wait on the same sockets; the kernel hands each connection
    // to one of them and the others get EAGAIN.
    int n = poll(pfds.data(), pfds.size(), 1000);
    if (n < 0) continue;  // EINTR: look at g_draining again
    if (getppid() == 1) break;
    for (size_t i = 0; i < pfds.size() && !g_draining.load(); ++i) {
      if (!(pfds[i].revents & POLLIN)) continue;
      AcceptError error;
      int fd = AcceptConnection(pfds[i].fd, error);
      if (fd < 0) {
        // Out of descriptors: back off instead of spinning on a ready listener.
        if (error == AcceptError::kExhausted)
          std::this_thread::sleep_for(kAcceptPause);
        continue;
      }
      Bump(stats.accepted);
      stats.open_conns.store(1);
      BlockingConnection conn(fd, (*ctx.listeners)[i].protocol,
                              ctx.config.limits);
      conn.ready_us = NowMicros();
      ServeBlocking(conn, bc, idle);  // closes the fd and counts why
      conn.fd = -1;
      stats.open_conns.store(0);
      ++served_connections;
      if (args.max_requests > 0 &&
          stats.requests.load() - start_requests >=
              static_cast<uint64_t>(args.max_requests)) {
        _exit(kChildRecycled);
      }
    }
  }
  _exit(kChildDrained);
}

}  // namespace gearbox
