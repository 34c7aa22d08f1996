#include "tests/support/proc_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gearbox::testing {
namespace {

// A /proc file's text; empty when the process is gone. By read(): a process
// that exits between open and read fails the read with ESRCH, which an
// istreambuf_iterator throws (basic_filebuf::underflow) out of the test, and
// ChildrenOf() reads every process on the host.
std::string ProcFile(const std::string& path) {
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, n);
  close(fd);
  return n < 0 ? std::string() : text;
}

std::string TaskFile(pid_t pid, pid_t tid, const char* name) {
  return ProcFile("/proc/" + std::to_string(pid) + "/task/" +
                  std::to_string(tid) + "/" + name);
}

// The parent pid of `pid`, or -1 when it is gone or a zombie.
pid_t ParentOf(pid_t pid) {
  const std::string stat = ProcFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return -1;
  if (stat[close + 2] == 'Z') return -1;
  return static_cast<pid_t>(strtol(stat.c_str() + close + 3, nullptr, 10));
}

}  // namespace

char ThreadState(pid_t pid, pid_t tid) {
  // "TID (comm) S ...": the comm may hold spaces and parentheses.
  const std::string stat = TaskFile(pid, tid, "stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

long BlockedSyscall(pid_t pid, pid_t tid) {
  // "NR arg1 ... arg6 sp pc" while blocked; "running", or "-1 sp pc" when
  // not in a system call.
  const std::string text = TaskFile(pid, tid, "syscall");
  if (text.empty() || text[0] < '0' || text[0] > '9') return -1;
  return strtol(text.c_str(), nullptr, 10);
}

bool WaitingForEvents(pid_t pid) {
  if (ThreadState(pid, pid) != 'S') return false;
  switch (BlockedSyscall(pid, pid)) {
#ifdef SYS_poll
    case SYS_poll:
#endif
#ifdef SYS_select
    case SYS_select:
#endif
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
#endif
#ifdef SYS_accept
    case SYS_accept:
#endif
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
    case SYS_ppoll:
    case SYS_pselect6:
    case SYS_epoll_pwait:
    case SYS_accept4:
      return true;
    default:
      return false;
  }
}

bool AllThreadsAsleep(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!d) return false;
  bool asleep = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const pid_t tid = static_cast<pid_t>(strtol(e->d_name, nullptr, 10));
    if (ThreadState(pid, tid) != 'S') asleep = false;
  }
  closedir(d);
  return asleep;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (ParentOf(static_cast<pid_t>(pid)) == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

bool ChildrenWaiting(pid_t pid) {
  for (pid_t child : ChildrenOf(pid)) {
    if (!WaitingForEvents(child)) return false;
  }
  return true;
}

}  // namespace gearbox::testing
