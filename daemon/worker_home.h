// A worker's home for what outlives an exchange (a pool of backend
// connections): it keeps their fds registered with the worker's poller for
// as long as they live, and wakes an exchange waiting on the same worker
// without a system call. The handler never learns which model runs it: it
// watches fds, makes wakes and waits on both with Step::WaitFds as on any fd.
//
// Under async the loop's dispatch drives it (models/async/async_home.h):
// watched fds stay in the loop's epoll set, and a wake is an event activated
// on the loop. A blocking worker (prefork, threadpool) serves one exchange at
// a time and polls the fds of each wait itself: it has no driver, a watch is
// not kept, and a wake is an eventfd (never waited on in practice: its pool
// is never full).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gearbox {

class WorkerHome {
 public:
  using IdleFn = void (*)(void* arg);

  // The worker's poller, as the home needs it. Every call is on the worker's
  // thread.
  class Driver {
   public:
    virtual ~Driver() = default;
    // Keeps fd registered (readable) until Unregister; false on failure.
    virtual bool Register(int fd) = 0;
    virtual void Unregister(int fd) = 0;
    // Resumes waiter (what Attach was given) readable, and with kFdError
    // when hung_up, from the poller's dispatch and not from inside this call.
    virtual void Deliver(void* waiter, bool hung_up) = 0;
  };

  explicit WorkerHome(Driver* driver = nullptr) : driver_(driver) {}
  ~WorkerHome();
  WorkerHome(const WorkerHome&) = delete;
  WorkerHome& operator=(const WorkerHome&) = delete;

  // --- The handler's side.
  // Keeps fd registered until Forget(fd), which must come before fd is
  // closed. While no exchange waits on it, its turning readable (a server's
  // goodbye on an idle connection) runs on_idle(arg). False when this worker
  // keeps no watch (a blocking one): then the caller checks idle fds itself.
  bool Watch(int fd, IdleFn on_idle, void* arg);
  void Forget(int fd);
  // True when this worker's waits are polls of their own (a blocking worker):
  // a wait costs a poll() and a sleep, so reading first pays when the answer
  // may be there already.
  bool polls_each_wait() const { return driver_ == nullptr; }
  // A wake: what an exchange waits on as a readable fd, ready once Signal is
  // called. -1 when none could be had (an eventfd: EMFILE).
  int NewWake();
  void Signal(int wake);
  // Takes back a signal that has been acted on: the next wait on the wake
  // blocks until the next Signal (a wake waited on more than once).
  void Rearm(int wake);
  // Ends a wake, signalled or not.
  void FreeWake(int wake);

  // --- The driver's side (the async loop).
  // A connection's wait on fd begins: true when the home takes it (a watched
  // fd, readable only, or a wake), so the driver registers nothing; a wake
  // already signalled is delivered at once.
  bool Attach(int fd, uint8_t events, void* waiter);
  // The wait ends (delivered, timed out, cancelled).
  void Detach(int fd);
  // A watched fd turned readable (hung_up: the peer closed, or an error).
  void Readable(int fd, bool hung_up);

 private:
  struct Watched {
    bool on = false;
    IdleFn on_idle = nullptr;
    void* arg = nullptr;
    void* waiter = nullptr;
  };
  struct Wake {
    bool used = false;
    bool signalled = false;
    void* waiter = nullptr;
  };
  // Wakes are pseudo-fds below -1, so they never meet a real fd.
  static int WakeFd(size_t index) { return -2 - static_cast<int>(index); }
  static bool IsWake(int fd) { return fd <= -2; }
  static size_t WakeIndex(int fd) { return static_cast<size_t>(-2 - fd); }

  Driver* const driver_;
  std::vector<Watched> watched_;  // indexed by fd
  std::vector<Wake> wakes_;       // indexed by WakeIndex
  std::vector<size_t> free_wakes_;
};

}  // namespace gearbox
