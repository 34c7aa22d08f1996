// A handler's fd waits on an async loop (Interest::handler_fds): per wait,
// one libevent event per fd, or the worker's home (WorkerHome) for the fds it
// watches and for its wakes, which registers nothing per wait.
#include <poll.h>

#include "models/async/async_loop.h"

namespace gearbox {

void AsyncLoop::ArmHandlerFds(AsyncConnection* c, const Interest& i) {
  if (!c->fd_waits) c->fd_waits = std::make_unique<AsyncFdWaits>();
  AsyncFdWaits& w = *c->fd_waits;
  if (w.seq == i.wait_seq) return;  // this wait is registered already
  DisarmHandlerFds(c);
  w.seq = i.wait_seq;
  for (size_t k = 0; k < i.handler_fds.size() && k < kMaxWaitFds; ++k) {
    const FdWait& f = i.handler_fds[k];
    AsyncFdWaits::Slot& slot = w.slots[k];
    slot.c = c;
    slot.fd = f.fd;
    slot.index = static_cast<uint8_t>(k);
    slot.armed = true;
    // Assigned on no fd first: the home may deliver at once (a wake
    // signalled before the wait began).
    event_assign(&slot.ev, base_, -1, 0, HandlerFdCallback(), &slot);
    slot.homed = home_.Attach(f.fd, f.events, &slot.ev);
    if (slot.homed) continue;
    short events = 0;
    if (f.events & kFdReadable) events |= EV_READ;
    if (f.events & kFdWritable) events |= EV_WRITE;
    event_assign(&slot.ev, base_, f.fd, events, HandlerFdCallback(), &slot);
    event_add(&slot.ev, nullptr);  // the deadline is the connection's timer
  }
}

void AsyncLoop::DisarmHandlerFds(AsyncConnection* c) {
  if (!c->fd_waits) return;
  c->fd_waits->seq = 0;  // registered again if the same wait goes on
  for (AsyncFdWaits::Slot& slot : c->fd_waits->slots) {
    if (slot.homed) {
      home_.Detach(slot.fd);
      event_del(&slot.ev);  // a delivery not yet run (no system call)
    } else if (slot.armed) {
      event_del(&slot.ev);
    }
    slot.armed = false;
    slot.homed = false;
  }
}

void AsyncLoop::OnHandlerFd(AsyncFdWaits::Slot* slot, short what) {
  AsyncConnection* c = slot->c;
  uint8_t ready[kMaxWaitFds] = {};
  ready[slot->index] =
      static_cast<uint8_t>(((what & EV_READ) ? kFdReadable : 0) |
                           ((what & EV_WRITE) ? kFdWritable : 0));
  if (slot->homed) {
    // The home's watch asks epoll for hang-ups too (EV_CLOSED): no probe.
    if (what & EV_CLOSED) ready[slot->index] |= kFdError;
  } else {
    // libevent reports an error or hang-up as plain readiness; a poll() that
    // asks for nothing returns only POLLERR/POLLHUP, so the wake carries
    // kFdError as under the blocking models (one syscall per fd wake).
    pollfd p{slot->fd, 0, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP))) {
      ready[slot->index] |= kFdError;
    }
  }
  DisarmHandlerFds(c);
  const Clock::time_point now = Clock::now();
  c->conn.HandlerFdsReady(std::span<const uint8_t>(ready, kMaxWaitFds), now);
  Settle(c, now);
}

}  // namespace gearbox
