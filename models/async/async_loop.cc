#include "models/async/async_loop.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/logging.h"
#include "models/driver.h"

namespace gearbox {
namespace {

constexpr size_t kReadBufferSize = 65536;

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

std::chrono::nanoseconds CoarseNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace

// Stall detection (Tornado's set_blocking_log_threshold, Node's
// monitorEventLoopDelay): each callback is timed with two reads of
// CLOCK_MONOTONIC_COARSE and the path of a request it starts is kept; a
// callback past the threshold is logged and counted after it returns, with
// that path ("-" when it started none: a waiting handler resumed, an
// accept). The coarse clock is a plain vDSO memory read, cheaper than a
// steady_clock read, with the kernel tick's resolution (a few ms): plenty
// for a threshold of 100 ms. Off
// (stall_threshold = "0s"), one predictable branch per callback.
template <typename Fn>
void AsyncLoop::Timed(Fn&& callback) {
  if (shared_.stall_threshold.count() == 0) {
    callback();
    return;
  }
  started_path_.clear();
  const std::chrono::nanoseconds start = CoarseNow();
  callback();
  const std::chrono::nanoseconds took = CoarseNow() - start;
  if (took >= shared_.stall_threshold) OnStall(took);
}

void AsyncLoop::OnStall(std::chrono::nanoseconds took) {
  Bump(stats_.loop_stalls);
  LogWarn("loop_stalled", "model=async loop={} ms={:.1f} path={}", index_,
          std::chrono::duration<double, std::milli>(took).count(),
          started_path_.empty() ? std::string("-") : LogQuote(started_path_));
}

// libevent trampolines (C callbacks -> member functions). A callback may
// delete its connection: only the loop is used after it.
struct AsyncCallbacks {
  static void Read(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<AsyncConnection*>(arg);
    AsyncLoop* loop = c->loop;
    loop->Timed([&] { loop->OnReadable(c); });
  }
  static void Write(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<AsyncConnection*>(arg);
    AsyncLoop* loop = c->loop;
    loop->Timed([&] { loop->OnWritable(c); });
  }
  static void Timer(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<AsyncConnection*>(arg);
    AsyncLoop* loop = c->loop;
    loop->Timed([&] { loop->OnTimer(c); });
  }
  static void HandlerFd(evutil_socket_t, short what, void* arg) {
    auto* slot = static_cast<AsyncFdWaits::Slot*>(arg);
    AsyncLoop* loop = slot->c->loop;
    loop->Timed([&] { loop->OnHandlerFd(slot, what); });
  }
  static void Accept(evutil_socket_t, short, void* arg) {
    auto* l = static_cast<ListenerArg*>(arg);
    l->loop->Timed([&] { l->loop->OnAccept(l->index); });
  }
  static void Wake(evutil_socket_t, short, void* arg) {
    auto* loop = static_cast<AsyncLoop*>(arg);
    loop->Timed([&] { loop->OnWake(); });
  }
  static void HomeFd(evutil_socket_t fd, short what, void* arg) {
    auto* loop = static_cast<AsyncLoop*>(arg);
    loop->Timed([&] { loop->home_.Readable(fd, (what & EV_CLOSED) != 0); });
  }
  static void Tick(evutil_socket_t, short, void* arg) {
    auto* loop = static_cast<AsyncLoop*>(arg);
    loop->Timed([&] { loop->OnTick(); });
  }
  static void ShareWait(evutil_socket_t, short, void* arg) {
    auto* loop = static_cast<AsyncLoop*>(arg);
    loop->Timed([&] { loop->OnShareWaitOver(); });
  }
};

event_callback_fn AsyncLoop::HandlerFdCallback() {
  return &AsyncCallbacks::HandlerFd;
}

AsyncLoop::AsyncLoop(AsyncShared& shared, WorkerStats& stats, int index)
    : shared_(shared),
      stats_(stats),
      index_(index),
      gate_(shared.limits.max_connections) {
  read_buffer_.resize(kReadBufferSize);
  env_.cycle = {nullptr, &stats, shared.request_log, index};
  if (shared_.stall_threshold.count() > 0)
    env_.cycle.started_path = &started_path_;
  env_.limits = &shared_.limits;
  env_.trusted = shared_.trusted;
  env_.listeners = shared_.listeners;
  env_.draining = &shared_.draining;
  env_.request = &request_;
  env_.response = &response_;
  env_.spares = &spares_;
}

AsyncLoop::~AsyncLoop() {
  CloseAll();
  for (event* e : listen_events_) {
    delete static_cast<ListenerArg*>(event_get_callback_arg(e));
    event_free(e);
  }
  home_driver_.Close();
  if (wake_event_) event_free(wake_event_);
  if (tick_event_) event_free(tick_event_);
  if (share_wait_event_) event_free(share_wait_event_);
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
  home_driver_.Bind(base_, &AsyncCallbacks::HomeFd, this);
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
  share_wait_event_ = event_new(base_, -1, 0, &AsyncCallbacks::ShareWait, this);
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
  // The loop's own handlers, on its thread: no connection is served before
  // the dispatch below.
  router_ = shared_.routes->MakeRouter(index_, &stats_, &home_);
  env_.cycle.router = router_.get();
  event_base_dispatch(base_);
  CloseAll();       // exchanges end before the handlers that made them
  router_.reset();  // modules' worker_exit, on this thread
  exited_.store(true);
}

void AsyncLoop::CloseAll() {
  while (head_) {
    DisarmHandlerFds(head_);
    head_->conn.Abort(CloseReason::kDrain);
    Close(head_);
  }
}

void AsyncLoop::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;
}

void AsyncLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

void AsyncLoop::OnWake() {
  uint64_t v;
  ssize_t n = read(wake_fd_, &v, sizeof(v));
  (void)n;
  if (shared_.aborting.load()) {
    while (head_) {
      DisarmHandlerFds(head_);
      head_->conn.Abort(CloseReason::kDrain);
      Close(head_);
    }
    event_base_loopbreak(base_);
    return;
  }
  if (Draining()) {
    SetAccepting(false);
    if (!acknowledged_drain_) {
      acknowledged_drain_ = true;
      shared_.loops_not_accepting.fetch_add(1);
    }
    SettleAllForDrain();
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
  if (!accepting_ && !share_wait_ &&
      gate_.Open(shared_.open.load(std::memory_order_relaxed),
                 std::chrono::steady_clock::now())) {
    SetAccepting(true);
  }
}

// The machine closes idle keep-alive connections once it sees the drain.
void AsyncLoop::SettleAllForDrain() {
  const Clock::time_point now = Clock::now();
  for (AsyncConnection* c = head_; c;) {
    AsyncConnection* next = c->next;
    Settle(c, now);
    c = next;
  }
}

void AsyncLoop::Adopt(int fd, size_t listener_index, const IpAddress& peer,
                      Clock::time_point now) {
  const Listener& l = (*shared_.listeners)[listener_index];
  auto* c = new AsyncConnection(l.protocol, shared_.limits);
  c->loop = this;
  c->fd = fd;
  c->conn.Attach(&env_);
  c->conn.SetListener(listener_index);
  c->conn.SetPeer(peer);
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
  c->conn.Accepted(now, 0);
  Settle(c, now);
}

void AsyncLoop::ArmIo(AsyncConnection* c, short mode) {
  if (c->io_mode == mode) return;
  if (c->io_mode) event_del(&c->io);
  c->io_mode = static_cast<uint8_t>(mode);
  if (!mode) return;
  event_assign(&c->io, base_, c->fd, mode | EV_PERSIST,
               mode == EV_READ ? &AsyncCallbacks::Read : &AsyncCallbacks::Write,
               c);
  event_add(&c->io, nullptr);
}

// Re-armed only when the deadline moved or the timer is not pending: most
// requests leave the connection on the idle timeout, which libevent keeps as
// a common timeout (a FIFO, O(1) re-arm) rather than in its heap.
void AsyncLoop::ArmTimer(AsyncConnection* c, const Interest& interest,
                         Clock::time_point now) {
  if (!interest.deadline_changed &&
      event_pending(&c->timer, EV_TIMEOUT, nullptr))
    return;
  c->conn.Armed(interest.deadline);
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      interest.deadline - now);
  if (left == shared_.limits.idle_timeout) {
    event_add(&c->timer, idle_tv_);
  } else if (left == shared_.limits.header_timeout) {
    event_add(&c->timer, header_tv_);
  } else {
    timeval tv = ToTimeval(std::max(left, std::chrono::microseconds(0)));
    event_add(&c->timer, &tv);
  }
}

void AsyncLoop::Close(AsyncConnection* c) {
  DisarmHandlerFds(c);  // before the exchange (and maybe its fds) goes
  if (c->io_mode) event_del(&c->io);
  event_del(&c->timer);
  // Out of the open gauges, counted, then closed: a client that sees the
  // close may ask /status at once, and must find it counted and gone.
  --conns_;
  shared_.open.fetch_sub(1, std::memory_order_acq_rel);
  stats_.open_conns.store(static_cast<uint64_t>(conns_),
                          std::memory_order_release);
  c->conn.CountClosed();
  close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    head_ = c->next;
  if (c->next) c->next->prev = c->prev;
  delete c;
  if (Draining() && conns_ == 0) event_base_loopbreak(base_);
}

void AsyncLoop::OnReadable(AsyncConnection* c) {
  ssize_t n = recv(c->fd, read_buffer_.data(), read_buffer_.size(), 0);
  const Clock::time_point now = Clock::now();
  if (n > 0) {
    c->conn.Received(
        std::string_view(read_buffer_.data(), static_cast<size_t>(n)), now);
  } else if (n == 0 ||
             (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    DisarmHandlerFds(c);  // before the exchange (and maybe its fds) goes
    c->conn.PeerClosed();
  } else {
    return;
  }
  Settle(c, now);
}

// Room to write: what is pending goes now (Settle sends only output that
// changed; this is the rest of a blocked send).
void AsyncLoop::OnWritable(AsyncConnection* c) {
  const Clock::time_point now = Clock::now();
  SendPending(c->fd, c->conn, now);
  Settle(c, now);
}

void AsyncLoop::OnTimer(AsyncConnection* c) {
  const Clock::time_point now = Clock::now();
  DisarmHandlerFds(c);  // a deadline ends an fd wait (re-armed if it goes on)
  c->conn.DeadlinePassed(now);
  Settle(c, now);
}

// The loop's primitives for the driver core: each wait arms libevent events
// and returns to the loop.
class AsyncLoop::Port {
 public:
  Port(AsyncLoop& loop, AsyncConnection* c, Clock::time_point now)
      : loop_(loop), c_(c), now_(now) {}
  Clock::time_point Now() { return now_; }
  int fd() const { return c_->fd; }
  bool MayProcess() { return true; }
  bool AwaitRead(const Interest& i, Clock::time_point now) {
    loop_.ArmIo(c_, EV_READ);
    loop_.ArmTimer(c_, i, now);
    if (c_->conn.phase() == Phase::kIdle) c_->conn.Trim();
    return false;
  }
  bool AwaitWrite(const Interest& i, Clock::time_point now) {
    // Stop reading until the client takes its responses (backpressure).
    loop_.ArmIo(c_, EV_WRITE);
    loop_.ArmTimer(c_, i, now);
    return false;
  }
  bool AwaitHandler(const Interest& i, Clock::time_point now) {
    // The read event stays armed while a handler waits: a hang-up cancels
    // the wait, and re-arming it per request would cost two epoll_ctl
    // calls. Past a bound of buffered input it stops.
    loop_.ArmIo(c_, i.read ? EV_READ : 0);
    loop_.ArmTimer(c_, i, now);
    if (!i.handler_fds.empty()) loop_.ArmHandlerFds(c_, i);
    return false;
  }
  void Close() { loop_.Close(c_); }

 private:
  AsyncLoop& loop_;
  AsyncConnection* c_;
  const Clock::time_point now_;
};

void AsyncLoop::Settle(AsyncConnection* c, Clock::time_point now) {
  Port port(*this, c, now);
  Drive(port, c->conn);
}

}  // namespace gearbox
