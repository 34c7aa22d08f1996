// One client connection on an async loop: a state machine driven by libevent.
#pragma once

#include <event2/event.h>
#include <event2/event_struct.h>

#include <chrono>
#include <memory>
#include <string>

#include "daemon/buffer.h"
#include "daemon/codec.h"
#include "daemon/handler.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/connection/request_cycle.h"

namespace gearbox {

class AsyncLoop;

// Memory matters here: 10,000 idle keep-alive clients must cost well under 1
// KiB each. An idle connection holds only this struct and its codec; its input
// and output buffers are empty (reads land in the loop's shared buffer first)
// and the Request lives in the loop.
struct AsyncConnection {
  enum class State : uint8_t {
    kReading,  // idle or receiving a request; io event armed for EV_READ
    kWaiting,  // a handler asked to wait; timer armed, not reading
    kWriting,  // output pending; io event armed for EV_WRITE
  };

  AsyncLoop* loop = nullptr;
  int fd = -1;
  State state = State::kReading;
  bool in_request = false;  // head/body deadline armed (else idle timeout)
  bool body_armed = false;  // deadline is the body's
  bool close_after_write = false;
  CloseReason close_reason = CloseReason::kServer;
  uint8_t io_mode = 0;  // 0: io not pending, EV_READ or EV_WRITE
  struct event io;      // EV_READ or EV_WRITE on fd
  struct event timer;   // idle/header/body/send timeouts and handler waits
  std::unique_ptr<ServerCodec> codec;
  Buffer in;        // unconsumed input that did not fit in one read
  std::string out;  // output the socket did not take yet
  size_t out_off = 0;
  // A request whose handler is waiting. Heap-allocated only then, so idle
  // connections stay small. The Request keeps only what the codec needs to
  // frame the response (version, keep-alive, HEAD); its views are not used
  // after Start.
  struct Pending {
    std::unique_ptr<Exchange> exchange;
    Response response;
    Request request;
    std::string method_path;  // storage for request.method/path (request log)
    RequestTiming timing;
  };
  std::unique_ptr<Pending> pending;
  AsyncConnection* prev = nullptr;  // the loop's list of connections
  AsyncConnection* next = nullptr;
};

}  // namespace gearbox
