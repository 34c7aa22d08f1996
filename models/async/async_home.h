// The async loop's side of WorkerHome (daemon/worker_home.h): a watched fd is
// one persistent libevent event, registered once for the fd's life, and a
// wake is delivered by activating the waiting connection's event on the loop
// (event_active: the same thread, no system call).
#pragma once

#include <event2/event.h>

#include <vector>

#include "daemon/worker_home.h"

namespace gearbox {

class AsyncHomeDriver final : public WorkerHome::Driver {
 public:
  // on_readable(fd, what, arg) runs when a watched fd turns readable (the
  // loop's trampoline, which times it and calls WorkerHome::Readable).
  void Bind(event_base* base, event_callback_fn on_readable, void* arg);
  // Frees every event still registered (before the base goes).
  void Close();

  bool Register(int fd) override;
  void Unregister(int fd) override;
  // waiter is the event of a connection's wait slot, assigned on no fd.
  void Deliver(void* waiter, bool hung_up) override;

 private:
  event_base* base_ = nullptr;
  event_callback_fn on_readable_ = nullptr;
  void* arg_ = nullptr;
  std::vector<event*> events_;  // indexed by fd
};

}  // namespace gearbox
