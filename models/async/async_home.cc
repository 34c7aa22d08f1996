#include "models/async/async_home.h"

namespace gearbox {

void AsyncHomeDriver::Bind(event_base* base, event_callback_fn on_readable,
                           void* arg) {
  base_ = base;
  on_readable_ = on_readable;
  arg_ = arg;
}

void AsyncHomeDriver::Close() {
  for (event*& e : events_) {
    if (e) event_free(e);
    e = nullptr;
  }
}

// Level-triggered, readable only: a connection in use is read by its
// exchange, an idle one by the home's on_idle, so a readable fd never stays
// unread (writable waits are per wait: rare, and a persistent writable
// registration would fire on every pass). EV_CLOSED (EPOLLRDHUP) tells a
// hang-up apart without a probe.
bool AsyncHomeDriver::Register(int fd) {
  if (!base_ || fd < 0) return false;
  if (events_.size() <= static_cast<size_t>(fd)) events_.resize(fd + 1);
  event* e = event_new(base_, fd, EV_READ | EV_CLOSED | EV_PERSIST,
                       on_readable_, arg_);
  if (!e) return false;
  if (event_add(e, nullptr) != 0) {
    event_free(e);
    return false;
  }
  events_[fd] = e;
  return true;
}

void AsyncHomeDriver::Unregister(int fd) {
  if (fd < 0 || static_cast<size_t>(fd) >= events_.size()) return;
  if (events_[fd]) event_free(events_[fd]);  // event_del first, then free
  events_[fd] = nullptr;
}

void AsyncHomeDriver::Deliver(void* waiter, bool hung_up) {
  event_active(static_cast<event*>(waiter),
               static_cast<short>(EV_READ | (hung_up ? EV_CLOSED : 0)), 1);
}

}  // namespace gearbox
