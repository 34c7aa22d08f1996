#include "models/async_loop.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/logging.h"
#include "daemon/connection/request_cycle.h"

namespace gearbox {
namespace {

constexpr size_t kReadBufferSize = 65536;
constexpr size_t kConnReadChunk = 16384;
constexpr size_t kMaxBufferedWhileWaiting = 1 << 20;

timeval ToTimeval(std::chrono::microseconds d) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(d.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(d.count() % 1000000);
  return tv;
}

struct ListenerArg {
  AsyncLoop* loop;
  size_t index;
};

}  // namespace

// libevent trampolines (C callbacks -> member functions).
struct AsyncCallbacks {
  static void Read(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<AsyncConnection*>(arg);
    c->loop->OnReadable(c);
  }
  static void Write(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<AsyncConnection*>(arg);
    c->loop->OnWritable(c);
  }
  static void Timer(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<AsyncConnection*>(arg);
    c->loop->OnTimer(c);
  }
  static void Accept(evutil_socket_t, short, void* arg) {
    auto* l = static_cast<ListenerArg*>(arg);
    l->loop->OnAccept(l->index);
  }
  static void Wake(evutil_socket_t, short, void* arg) {
    static_cast<AsyncLoop*>(arg)->OnWake();
  }
  static void Tick(evutil_socket_t, short, void* arg) {
    static_cast<AsyncLoop*>(arg)->OnTick();
  }
};

AsyncLoop::AsyncLoop(AsyncShared& shared, WorkerStats& stats, int index)
    : shared_(shared),
      stats_(stats),
      cycle_{shared.router, &stats, shared.request_log, index},
      index_(index) {
  read_buffer_.resize(kReadBufferSize);
}

AsyncLoop::~AsyncLoop() {
  while (head_) Close(head_, CloseReason::kDrain);
  for (event* e : listen_events_) {
    delete static_cast<ListenerArg*>(event_get_callback_arg(e));
    event_free(e);
  }
  if (wake_event_) event_free(wake_event_);
  if (tick_event_) event_free(tick_event_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (base_) event_base_free(base_);
}

std::string AsyncLoop::Init() {
  event_config* cfg = event_config_new();
  // Each base is used by exactly one thread; other threads only write wake_fd_.
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  // epoll_wait() alone has millisecond resolution, which turns a 1 ms handler
  // wait into 2-4 ms; the precise timer adds a timerfd to the epoll set.
  event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
  base_ = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (!base_)
    return "event_base_new_with_config(EVENT_BASE_FLAG_NOLOCK) failed";
  for (size_t i = 0; i < shared_.listeners->size(); ++i) {
    int fd = (*shared_.listeners)[i].fd;
    event* e = event_new(base_, fd, EV_READ | EV_PERSIST,
                         &AsyncCallbacks::Accept, new ListenerArg{this, i});
    if (!e) return "event_new(listener fd=" + std::to_string(fd) + ") failed";
    listen_events_.push_back(e);
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return std::string("eventfd: ") + strerror(errno);
  wake_event_ = event_new(base_, wake_fd_, EV_READ | EV_PERSIST,
                          &AsyncCallbacks::Wake, this);
  event_add(wake_event_, nullptr);
  tick_event_ = event_new(base_, -1, EV_PERSIST, &AsyncCallbacks::Tick, this);
  timeval tick = {0, 100000};
  event_add(tick_event_, &tick);
  // Every connection shares these two durations: libevent keeps a common
  // timeout in a FIFO queue instead of its heap, so re-arming per request is
  // O(1).
  timeval idle = ToTimeval(shared_.limits.idle_timeout);
  timeval header = ToTimeval(shared_.limits.header_timeout);
  idle_tv_ = event_base_init_common_timeout(base_, &idle);
  header_tv_ = event_base_init_common_timeout(base_, &header);
  SetAccepting(true);
  return "";
}

void AsyncLoop::StartThread() {
  thread_ = std::thread([this] { Run(); });
}

void AsyncLoop::Run() {
  stats_.tid.store(static_cast<int32_t>(gettid()));
  event_base_dispatch(base_);
  exited_.store(true);
}

void AsyncLoop::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;
}

void AsyncLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

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

void AsyncLoop::OnWake() {
  uint64_t v;
  ssize_t n = read(wake_fd_, &v, sizeof(v));
  (void)n;
  if (shared_.aborting.load()) {
    while (head_) Close(head_, CloseReason::kDrain);
    event_base_loopbreak(base_);
    return;
  }
  if (Draining()) {
    SetAccepting(false);
    if (!acknowledged_drain_) {
      acknowledged_drain_ = true;
      shared_.loops_not_accepting.fetch_add(1);
    }
    CloseIdleForDrain();
    if (conns_ == 0) event_base_loopbreak(base_);
  }
}

void AsyncLoop::OnTick() {
  if (Draining()) {
    if (conns_ == 0) event_base_loopbreak(base_);
    return;
  }
  // Resume accepting once below max_connections (another loop's closes count
  // too).
  if (!accepting_ && std::chrono::steady_clock::now() >= accept_paused_until_ &&
      shared_.open.load(std::memory_order_relaxed) <
          shared_.limits.max_connections) {
    SetAccepting(true);
  }
}

void AsyncLoop::CloseIdleForDrain() {
  for (AsyncConnection* c = head_; c;) {
    AsyncConnection* next = c->next;
    if (c->state == AsyncConnection::State::kReading && !c->in_request &&
        c->in.empty()) {
      Close(c, CloseReason::kDrain);
    }
    c = next;
  }
}

void AsyncLoop::OnAccept(size_t listener_index) {
  const Listener& l = (*shared_.listeners)[listener_index];
  // With several loops on one listener, every loop wakes for a new connection;
  // taking one per wake-up (nginx's `multi_accept off`) lets the others take
  // the rest, instead of the first loop to wake taking a whole burst and
  // leaving the other cores idle. One loop takes up to 64 per wake-up: fewer
  // epoll rounds.
  const int batch_limit = shared_.loops > 1 ? 1 : 64;
  for (int batch = 0; batch < batch_limit; ++batch) {
    if (shared_.open.load(std::memory_order_relaxed) >=
        shared_.limits.max_connections) {
      // Backpressure: leave the rest in the kernel backlog until below the cap.
      SetAccepting(false);
      return;
    }
    AcceptError error;
    int fd = AcceptConnection(l.fd, error);
    if (fd < 0) {
      if (error == AcceptError::kExhausted) {
        // Out of descriptors: stop accepting; the tick resumes after a pause.
        SetAccepting(false);
        accept_paused_until_ = std::chrono::steady_clock::now() + kAcceptPause;
      }
      return;
    }
    auto* c = new AsyncConnection();
    c->loop = this;
    c->fd = fd;
    c->codec = MakeCodec(l.protocol, shared_.limits);
    event_assign(&c->io, base_, fd, EV_READ | EV_PERSIST, &AsyncCallbacks::Read,
                 c);
    event_assign(&c->timer, base_, -1, 0, &AsyncCallbacks::Timer, c);
    c->next = head_;
    if (head_) head_->prev = c;
    head_ = c;
    ++conns_;
    shared_.open.fetch_add(1, std::memory_order_relaxed);
    Bump(stats_.accepted);
    stats_.open_conns.store(static_cast<uint64_t>(conns_),
                            std::memory_order_relaxed);
    ArmRead(c);
    // A client that connects and sends nothing is held to header_timeout.
    c->in_request = true;
    event_add(&c->timer, header_tv_);
  }
}

void AsyncLoop::ArmRead(AsyncConnection* c) {
  if (c->io_mode == EV_READ) return;
  if (c->io_mode) event_del(&c->io);
  event_assign(&c->io, base_, c->fd, EV_READ | EV_PERSIST,
               &AsyncCallbacks::Read, c);
  event_add(&c->io, nullptr);
  c->io_mode = EV_READ;
}

void AsyncLoop::ArmTimer(AsyncConnection* c, std::chrono::microseconds d) {
  timeval tv = ToTimeval(d);
  event_add(&c->timer, &tv);
}

void AsyncLoop::ArmIdleTimer(AsyncConnection* c) {
  event_add(&c->timer, idle_tv_);
}

void AsyncLoop::Close(AsyncConnection* c, CloseReason reason) {
  if (c->io_mode) event_del(&c->io);
  event_del(&c->timer);
  close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    head_ = c->next;
  if (c->next) c->next->prev = c->prev;
  if (c->pending) {
    // Closing cancels a waiting exchange (its timer is gone with the event).
    const uint64_t inflight =
        stats_.inflight.load(std::memory_order_relaxed) - 1;
    stats_.inflight.store(inflight, std::memory_order_relaxed);
    if (inflight == 0) {
      stats_.busy.store(0, std::memory_order_relaxed);
      stats_.current_start_us.store(0, std::memory_order_relaxed);
    }
  }
  delete c;
  --conns_;
  shared_.open.fetch_sub(1, std::memory_order_relaxed);
  stats_.CountClose(reason);
  stats_.open_conns.store(static_cast<uint64_t>(conns_),
                          std::memory_order_relaxed);
  if (Draining() && conns_ == 0) event_base_loopbreak(base_);
}

void AsyncLoop::OnReadable(AsyncConnection* c) {
  ssize_t n;
  if (c->state == AsyncConnection::State::kWaiting) {
    // Buffer pipelined input (or notice a hang-up) until the handler is done;
    // stop reading past a bound so a flooding client costs bounded memory.
    char* tail = c->in.Reserve(kConnReadChunk);
    n = recv(c->fd, tail, c->in.writable(), 0);
    if (n > 0) {
      Bump(stats_.bytes_in, static_cast<uint64_t>(n));
      c->in.Commit(static_cast<size_t>(n));
      if (c->in.size() > kMaxBufferedWhileWaiting) {
        event_del(&c->io);
        c->io_mode = 0;
      }
      return;
    }
  } else if (c->in.empty()) {
    // Common case: the whole request arrives in one read into the loop's buffer
    // and never needs a per-connection copy.
    n = recv(c->fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      Bump(stats_.bytes_in, static_cast<uint64_t>(n));
      Process(c, std::string_view(read_buffer_.data(), static_cast<size_t>(n)),
              true);
      return;
    }
  } else {
    char* tail = c->in.Reserve(kConnReadChunk);
    n = recv(c->fd, tail, c->in.writable(), 0);
    if (n > 0) {
      Bump(stats_.bytes_in, static_cast<uint64_t>(n));
      c->in.Commit(static_cast<size_t>(n));
      Process(c, c->in.view(), false);
      return;
    }
  }
  if (n == 0) {
    Close(c, CloseReason::kClient);
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    Close(c, CloseReason::kClient);
  }
}

bool AsyncLoop::Advance(AsyncConnection* c, Exchange& exchange,
                        Response& response) {
  Step step = exchange.Resume(response);
  if (step.done()) return true;
  ArmTimer(c, *step.wait);
  return false;
}

bool AsyncLoop::Process(AsyncConnection* c, std::string_view input,
                        bool from_scratch) {
  size_t pos = 0;
  for (;;) {
    std::string_view view = from_scratch ? input.substr(pos) : c->in.view();
    if (view.empty() && !c->codec->InRequest()) break;
    ServerCodec::Result r = c->codec->Parse(view, request_, out_buffer_);
    if (r.status == ServerCodec::Status::kIncomplete) {
      if (from_scratch) c->in.Append(view);
      if (!c->in_request && c->codec->InRequest()) {
        // First bytes of a new request: the whole head must arrive within
        // header_timeout from now (not reset per read). Bytes that are not a
        // request (FastCGI management records) leave the idle timer alone.
        c->in_request = true;
        event_add(&c->timer, header_tv_);
      }
      if (c->codec->InBody() && !c->body_armed) {
        c->body_armed = true;
        ArmTimer(c, shared_.limits.body_timeout);
      }
      break;
    }
    if (r.status == ServerCodec::Status::kError) {
      Bump(stats_.bad_input);
      if (r.error_status) stats_.CountStatus(r.error_status);
      c->close_after_write = true;
      c->close_reason = CloseReason::kError;
      break;
    }
    if (r.status == ServerCodec::Status::kClose) {
      c->close_after_write = true;
      c->close_reason = CloseReason::kClient;
      break;
    }
    // A complete request.
    c->in_request = false;
    c->body_armed = false;
    RequestTiming timing;
    std::unique_ptr<Exchange> exchange =
        BeginRequest(cycle_, request_, 0, timing);
    response_.Reset();
    if (from_scratch) {
      pos += r.consumed;
    } else {
      c->in.Consume(r.consumed);
    }
    if (!Advance(c, *exchange, response_)) {
      // The handler waits: park the exchange on the connection, keep unread
      // (pipelined) input, stop reading until the response is out.
      auto pending = std::make_unique<AsyncConnection::Pending>();
      pending->exchange = std::move(exchange);
      std::swap(pending->response, response_);
      pending->request.version_major = request_.version_major;
      pending->request.version_minor = request_.version_minor;
      pending->request.keep_alive = request_.keep_alive;
      pending->request.is_head = request_.is_head;
      pending->timing = timing;
      pending->timing.waited = true;
      if (cycle_.log && cycle_.log->enabled()) {
        pending->method_path.assign(request_.method);
        pending->method_path.append(request_.path);
        std::string_view mp = pending->method_path;
        pending->request.method = mp.substr(0, request_.method.size());
        pending->request.path = mp.substr(request_.method.size());
      }
      c->pending = std::move(pending);
      if (from_scratch && pos < input.size()) c->in.Append(input.substr(pos));
      // The read event stays armed: a client that hangs up cancels the wait,
      // and re-arming it per request would cost two epoll_ctl calls.
      c->state = AsyncConnection::State::kWaiting;
      // Earlier pipelined responses go out now; what the socket does not take
      // waits in c->out until this response joins it.
      if (!out_buffer_.empty() && Flush(c) == FlushResult::kError) {
        Close(c, CloseReason::kClient);
        return false;
      }
      return true;
    }
    if (FinishRequest(cycle_, *c->codec, request_, response_, Draining(),
                      out_buffer_, timing)) {
      c->close_after_write = true;
      c->close_reason = Draining() ? CloseReason::kDrain : CloseReason::kServer;
      break;
    }
  }
  return Settle(c);
}

AsyncLoop::FlushResult AsyncLoop::Flush(AsyncConnection* c) {
  std::string* src = &out_buffer_;
  size_t off = 0;
  if (!c->out.empty()) {  // keep response order: older bytes first
    c->out.append(out_buffer_);
    out_buffer_.clear();
    src = &c->out;
    off = c->out_off;
  }
  while (off < src->size()) {
    ssize_t n = send(c->fd, src->data() + off, src->size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      out_buffer_.clear();
      return FlushResult::kError;
    }
  }
  if (off == src->size()) {
    out_buffer_.clear();
    if (src == &c->out) {
      std::string().swap(c->out);  // give the memory back
      c->out_off = 0;
    }
    return FlushResult::kAllSent;
  }
  if (src == &out_buffer_) {
    c->out.assign(out_buffer_, off);
    c->out_off = 0;
    out_buffer_.clear();
  } else {
    c->out_off = off;
  }
  return FlushResult::kPending;
}

bool AsyncLoop::Settle(AsyncConnection* c) {
  FlushResult f = Flush(c);
  if (f == FlushResult::kError) {
    Close(c, CloseReason::kClient);
    return false;
  }
  if (f == FlushResult::kPending) {
    // Stop reading until the client takes its responses (backpressure); the
    // whole remainder must go within send_timeout.
    c->state = AsyncConnection::State::kWriting;
    if (c->io_mode != EV_WRITE) {
      if (c->io_mode) event_del(&c->io);
      event_assign(&c->io, base_, c->fd, EV_WRITE | EV_PERSIST,
                   &AsyncCallbacks::Write, c);
      event_add(&c->io, nullptr);
      c->io_mode = EV_WRITE;
    }
    ArmTimer(c, shared_.limits.send_timeout);
    return true;
  }
  if (c->close_after_write) {
    Close(c, c->close_reason);
    return false;
  }
  c->state = AsyncConnection::State::kReading;
  ArmRead(c);
  if (!c->in_request) {
    if (Draining()) {
      Close(c, CloseReason::kDrain);
      return false;
    }
    ArmIdleTimer(c);
    c->in.Release();
  }
  return true;
}

void AsyncLoop::OnWritable(AsyncConnection* c) {
  if (!Settle(c)) return;
  // Input that arrived while we were writing may hold complete requests.
  if (c->state == AsyncConnection::State::kReading && !c->in.empty()) {
    Process(c, c->in.view(), false);
  }
}

void AsyncLoop::OnTimer(AsyncConnection* c) {
  switch (c->state) {
    case AsyncConnection::State::kWaiting: {
      AsyncConnection::Pending& p = *c->pending;
      if (!Advance(c, *p.exchange, p.response)) return;  // waits again
      if (FinishRequest(cycle_, *c->codec, p.request, p.response, Draining(),
                        out_buffer_, p.timing)) {
        c->close_after_write = true;
        c->close_reason =
            Draining() ? CloseReason::kDrain : CloseReason::kServer;
      }
      c->pending.reset();
      c->state = AsyncConnection::State::kReading;
      if (!c->close_after_write && !c->in.empty()) {
        Process(c, c->in.view(), false);  // pipelined requests behind this one
      } else {
        Settle(c);
      }
      return;
    }
    case AsyncConnection::State::kReading:
      if (c->in_request) {
        // Head or body not complete in time: 408, which the client may still
        // read; a client that never sent a byte is just closed (as nginx does).
        if (c->codec->InRequest()) {
          c->codec->AppendError(408, {}, out_buffer_);
          stats_.CountStatus(408);
          Flush(c);
        }
        Close(c, CloseReason::kHeaderTimeout);
      } else {
        Close(c, CloseReason::kIdleTimeout);
      }
      return;
    case AsyncConnection::State::kWriting:
      Close(c, CloseReason::kSendTimeout);  // the client is not reading
      return;
  }
}

}  // namespace gearbox
