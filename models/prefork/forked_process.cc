#include "models/prefork/forked_process.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace gearbox {

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

void SetUpForkedSignals(void (*on_term)(int)) {
  struct sigaction sa = {};
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGINT, SIG_DFL);  // fast stop: the master forwards INT and we die
  signal(SIGQUIT, SIG_DFL);
  signal(SIGHUP, SIG_IGN);
  signal(SIGCHLD, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  sigset_t all;
  sigemptyset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
}

}  // namespace gearbox
