// One client connection on an async loop: the shared connection state machine
// plus the libevent events that wait for it.
#pragma once

#include <event2/event.h>
#include <event2/event_struct.h>

#include <memory>

#include "daemon/connection/connection.h"

namespace gearbox {

class AsyncLoop;

// Memory matters here: 10,000 idle keep-alive clients must cost well under 1
// KiB each. An idle connection holds only this struct and its codec: its
// buffers are empty (reads land in the loop's shared buffer first) and the
// Request and Response scratch live in the loop.
// The events of a handler's fd wait: allocated the first time a connection's
// handler waits on fds, kept (not re-allocated) for its later waits.
struct AsyncFdWaits {
  struct Slot {
    struct event ev;
    struct AsyncConnection* c = nullptr;
    int fd = -1;
    uint8_t index = 0;
    bool armed = false;
    // The worker's home holds this wait (a watched fd or a wake): ev is on no
    // fd, and the home activates it.
    bool homed = false;
  };
  Slot slots[kMaxWaitFds];
  uint32_t seq = 0;  // the Interest::wait_seq these events belong to
};

struct AsyncConnection {
  AsyncConnection(Protocol protocol, const LimitsConfig& limits)
      : conn(protocol, limits) {}

  AsyncLoop* loop = nullptr;
  int fd = -1;
  uint8_t io_mode = 0;  // 0: io not pending, EV_READ or EV_WRITE
  struct event io;      // EV_READ or EV_WRITE on fd
  struct event timer;   // the machine's deadline (timeouts, handler waits)
  Connection conn;
  std::unique_ptr<AsyncFdWaits> fd_waits;  // null until a handler waits on fds
  AsyncConnection* prev = nullptr;         // the loop's list of connections
  AsyncConnection* next = nullptr;
};

}  // namespace gearbox
