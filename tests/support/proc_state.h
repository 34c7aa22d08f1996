// What /proc says a process or thread is doing, for tests that wait until a
// daemon's process is idle in its event loop or a thread has gone to sleep:
// conditions that have no log line or counter of their own.
#pragma once

#include <sys/types.h>

#include <vector>

namespace gearbox::testing {

// The scheduler state of thread `tid` of process `pid` ('R' running, 'S'
// asleep, 'D', 'Z', ...; /proc/PID/task/TID/stat), or 0 when it is gone.
char ThreadState(pid_t pid, pid_t tid);

// The system call thread `tid` of `pid` is blocked in (its number, from
// /proc/PID/task/TID/syscall), or -1 when it is running, is not in a system
// call, or cannot be read.
long BlockedSyscall(pid_t pid, pid_t tid);

// True when the main thread of `pid` is asleep waiting for events or for a
// connection (poll, ppoll, select, pselect6, epoll_wait, epoll_pwait(2),
// accept, accept4). A server process found there has nothing left to do
// until a peer acts.
bool WaitingForEvents(pid_t pid);

// True when every thread of `pid` is asleep ('S'): none of them is working
// on anything until an event wakes it.
bool AllThreadsAsleep(pid_t pid);

// Live processes whose parent is `pid` (a scan of /proc/*/stat).
std::vector<pid_t> ChildrenOf(pid_t pid);

// True when every child of `pid` is WaitingForEvents: a prefork daemon's
// workers and head guard have nothing in hand they could still be working
// on. Vacuously true for a daemon without children.
bool ChildrenWaiting(pid_t pid);

}  // namespace gearbox::testing
