#include "daemon/worker_home.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace gearbox {

WorkerHome::~WorkerHome() {
  if (!driver_) return;
  for (size_t fd = 0; fd < watched_.size(); ++fd) {
    if (watched_[fd].on) driver_->Unregister(static_cast<int>(fd));
  }
}

bool WorkerHome::Watch(int fd, IdleFn on_idle, void* arg) {
  if (!driver_ || fd < 0) return false;
  if (watched_.size() <= static_cast<size_t>(fd)) watched_.resize(fd + 1);
  if (!driver_->Register(fd)) return false;
  watched_[fd] = {true, on_idle, arg, nullptr};
  return true;
}

void WorkerHome::Forget(int fd) {
  if (!driver_ || fd < 0 || static_cast<size_t>(fd) >= watched_.size() ||
      !watched_[fd].on) {
    return;
  }
  driver_->Unregister(fd);
  watched_[fd] = {};
}

int WorkerHome::NewWake() {
  if (!driver_) return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  size_t index;
  if (!free_wakes_.empty()) {
    index = free_wakes_.back();
    free_wakes_.pop_back();
  } else {
    index = wakes_.size();
    wakes_.emplace_back();
  }
  wakes_[index] = {true, false, nullptr};
  return WakeFd(index);
}

void WorkerHome::Signal(int wake) {
  if (!driver_) {
    const uint64_t one = 1;
    (void)!write(wake, &one, sizeof one);  // a fresh counter: never full
    return;
  }
  Wake& w = wakes_[WakeIndex(wake)];
  w.signalled = true;
  if (w.waiter) driver_->Deliver(w.waiter, false);
}

void WorkerHome::Rearm(int wake) {
  if (wake == -1) return;
  if (!driver_) {
    uint64_t count;
    (void)!read(wake, &count, sizeof count);  // EAGAIN when unsignalled
    return;
  }
  wakes_[WakeIndex(wake)].signalled = false;
}

void WorkerHome::FreeWake(int wake) {
  if (wake == -1) return;
  if (!driver_) {
    close(wake);
    return;
  }
  wakes_[WakeIndex(wake)] = {};
  free_wakes_.push_back(WakeIndex(wake));
}

bool WorkerHome::Attach(int fd, uint8_t events, void* waiter) {
  if (IsWake(fd)) {
    Wake& w = wakes_[WakeIndex(fd)];
    w.waiter = waiter;
    if (w.signalled) driver_->Deliver(waiter, false);
    return true;
  }
  // Only readable waits ride on the watch (registered readable); a wait for
  // writable (connecting, a blocked flush) is the driver's as any fd's.
  if (fd < 0 || static_cast<size_t>(fd) >= watched_.size() ||
      !watched_[fd].on || events != 1) {
    return false;
  }
  watched_[fd].waiter = waiter;
  return true;
}

void WorkerHome::Detach(int fd) {
  if (IsWake(fd)) {
    const size_t index = WakeIndex(fd);
    if (index < wakes_.size()) wakes_[index].waiter = nullptr;
  } else if (fd >= 0 && static_cast<size_t>(fd) < watched_.size()) {
    watched_[fd].waiter = nullptr;
  }
}

void WorkerHome::Readable(int fd, bool hung_up) {
  Watched& w = watched_[fd];
  if (w.waiter) {
    driver_->Deliver(w.waiter, hung_up);
  } else if (w.on_idle) {
    w.on_idle(w.arg);
  }
}

}  // namespace gearbox
