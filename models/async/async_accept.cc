// How an async loop takes new connections: through the accept gate
// (max_connections, the EMFILE back-off), one per wake-up when several loops
// share a listener, and no more than its share of the model's connections.
#include <poll.h>

#include "models/async/async_loop.h"

namespace gearbox {
namespace {

// Connections a loop may hold above an even split before it leaves new ones
// to the other loops.
constexpr int64_t kShareSlack = 1;
// How long a loop over its share leaves a new connection to the others.
constexpr timeval kShareWait = {0, 1000};

}  // namespace

void AsyncLoop::SetAccepting(bool on) {
  if (on == accepting_) return;
  for (event* e : listen_events_) {
    if (on) {
      event_add(e, nullptr);
    } else {
      event_del(e);
    }
  }
  accepting_ = on;
}

// What a loop holds outlives a request (a backend connection pool is per
// loop), so the split of connections decides how much of it is used. A busy
// loop is back in epoll_wait before an idle one is scheduled, so it wins the
// race for each new connection, and the more it holds the busier it is:
// once nginx had reopened its upstream connections (keepalive_requests) one
// loop held nearly all of them, its pool queued and the other's sat idle.
bool AsyncLoop::OverShare(int64_t open) const {
  return shared_.loops > 1 &&
         conns_ * shared_.loops >= open + shared_.loops * kShareSlack;
}

void AsyncLoop::OnAccept(size_t listener_index, bool beyond_share) {
  const int fd_listen = (*shared_.listeners)[listener_index].fd;
  // With several loops on one listener, every loop wakes for a new connection;
  // taking one per wake-up (nginx's `multi_accept off`) lets the others take
  // the rest, instead of the first loop to wake taking a whole burst and
  // leaving the other cores idle. One loop takes up to 64 per wake-up: fewer
  // epoll rounds.
  const int batch_limit = shared_.loops > 1 ? 1 : 64;
  for (int batch = 0; batch < batch_limit; ++batch) {
    const int64_t open = shared_.open.load(std::memory_order_relaxed);
    if (!beyond_share && OverShare(open)) return WaitForOthers();
    const Clock::time_point now = Clock::now();
    IpAddress peer;
    const int fd = gate_.Accept(fd_listen, open, now, peer);
    if (fd < 0) {
      // At the cap or out of descriptors: the rest waits in the kernel
      // backlog; the tick resumes accepting once the gate opens.
      if (!gate_.Open(open, now)) SetAccepting(false);
      return;
    }
    Adopt(fd, listener_index, peer, now);
  }
}

// Over its share, a loop stops watching its listeners for kShareWait: the
// other loops, woken by the same connection, take it meanwhile.
void AsyncLoop::WaitForOthers() {
  SetAccepting(false);
  share_wait_ = true;
  event_add(share_wait_event_, &kShareWait);
}

// A connection still waiting then is taken, share or not: a loop busy in a
// long callback must not hold new clients back.
void AsyncLoop::OnShareWaitOver() {
  share_wait_ = false;
  if (Draining()) return;
  const int64_t open = shared_.open.load(std::memory_order_relaxed);
  if (!gate_.Open(open, Clock::now())) return;  // the tick resumes
  SetAccepting(true);
  for (size_t i = 0; i < listen_events_.size(); ++i) {
    pollfd p = {(*shared_.listeners)[i].fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
      OnAccept(i, /*beyond_share=*/true);
    }
  }
}

}  // namespace gearbox
