#include "models/threadpool/connection_poller.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/logging.h"
#include "models/accept_util.h"
#include "models/driver.h"

namespace gearbox {
namespace {

constexpr uint64_t kListenerTag = 1ull << 63;
constexpr uint64_t kWakeTag = 1ull << 62;
// A worker busy this long on one turn without saying it blocks gives its
// seat to a follower. A fast request takes microseconds; a CPU-heavy one
// may keep its core.
constexpr std::chrono::milliseconds kSeatRetake{2};

}  // namespace

ConnectionPoller::ConnectionPoller(const ModelContext& ctx, ReadyQueue& queue,
                                   const std::atomic<bool>& draining)
    : ctx_(ctx),
      queue_(queue),
      draining_(draining),
      gate_(ctx.config.limits.max_connections) {
  // No router: the poller never starts a request, a worker does.
  env_.cycle = {nullptr, &ctx.stats->Slot(0), ctx.request_log.get(), 0};
  env_.limits = &ctx.config.limits;
  env_.draining = &draining;
  env_.request = &request_;
  env_.response = &response_;
}

ConnectionPoller::~ConnectionPoller() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status ConnectionPoller::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0)
    return Status::Error(std::string("epoll_create1: ") + strerror(errno));
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0)
    return Status::Error(std::string("eventfd: ") + strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  if (Status s = queue_.Init(wake_fd_); !s.ok()) return s;
  return SetListening(true);
}

void ConnectionPoller::StartThread() {
  thread_ = std::thread([this] { Loop(); });
}

void ConnectionPoller::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;
}

void ConnectionPoller::WaitDrainAcknowledged() {
  Wake();
  const Clock::time_point until = Clock::now() + std::chrono::seconds(1);
  while (!acknowledged_.load() && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void ConnectionPoller::Stop() {
  stop_.store(true);
  Wake();
  if (thread_.joinable()) thread_.join();
  taken_.clear();
  queue_.TakeParked(taken_);
  for (PooledConnection* c : taken_) {
    c->conn.Attach(&env_);
    c->conn.Abort(CloseReason::kDrain);
    Settle(c);
  }
  taken_.clear();
}

Status ConnectionPoller::SetListening(bool on) {
  for (size_t i = 0; i < ctx_.listeners->size(); ++i) {
    int fd = (*ctx_.listeners)[i].fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenerTag | i;
    int rc = epoll_ctl(epoll_fd_, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev);
    if (rc != 0 && on) {
      return Status::Error("epoll_ctl(ADD, fd=" + std::to_string(fd) +
                           "): " + strerror(errno));
    }
  }
  listening_ = on;
  return Status::Ok();
}

// Backpressure: at max_connections stop accepting; the kernel backlog
// absorbs the burst until connections close.
void ConnectionPoller::AdjustListening() {
  if (drain_seen_) return;
  const bool may_accept = gate_.Open(open(), Clock::now());
  if (!may_accept && listening_) SetListening(false);
  if (may_accept && !listening_) SetListening(true);
}

// Stop accepting; idle keep-alive clients are closed at once.
void ConnectionPoller::OnDrain() {
  drain_seen_ = true;
  if (listening_) SetListening(false);
  ShortenIdleParked();
  acknowledged_.store(true);
}

void ConnectionPoller::Loop() {
  std::vector<epoll_event> events(256);
  while (!stop_.load()) {
    if (draining_.load() && !drain_seen_) OnDrain();
    AdjustListening();
    int timeout_ms = NextExpiryMs();
    // Not listening (at the cap), or draining: look again soon. A draining
    // pass gives idle connections parked since the last one the drain's
    // deadline.
    if (!listening_) timeout_ms = std::min(timeout_ms, 50);
    // Followers asleep and a seated worker busy on a turn: it may get stuck
    // there (a handler blocking on its own): look every millisecond.
    if (queue_.RetakeSeats(kSeatRetake)) timeout_ms = std::min(timeout_ms, 1);
    int n = epoll_wait(epoll_fd_, events.data(),
                       static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) {
      LogError("epoll_wait_failed", "epfd={} error={}", epoll_fd_,
               LogQuote(strerror(errno)));
      continue;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[static_cast<size_t>(i)].data.u64;
      if (tag == kWakeTag) {
        uint64_t v;
        ssize_t r = read(wake_fd_, &v, sizeof(v));
        (void)r;
      } else if (tag & kListenerTag) {
        if (listening_) AcceptFrom(tag & ~kListenerTag);
      }
    }
    if (drain_seen_) ShortenIdleParked();
    ExpireParked();
  }
}

void ConnectionPoller::AcceptFrom(size_t index) {
  const Listener& l = (*ctx_.listeners)[index];
  for (int batch = 0; batch < 64; ++batch) {
    const Clock::time_point now = Clock::now();
    IpAddress peer;
    const int fd = gate_.Accept(l.fd, open(), now, peer);
    if (fd < 0) {
      // At the cap or out of descriptors: stop watching the listeners until
      // the gate opens (AdjustListening, every pass of the loop).
      if (!gate_.Open(open(), now)) SetListening(false);
      return;
    }
    Bump(env_.cycle.stats->accepted);
    open_.fetch_add(1, std::memory_order_relaxed);
    auto* c = new PooledConnection(fd, l.protocol, ctx_.config.limits);
    c->conn.Attach(&env_);
    c->conn.SetListener(index);
    c->conn.SetPeer(peer);
    c->conn.Accepted(Clock::now(), 0);
    Dispatch(c);
  }
}

// Queue the connection for a worker, or refuse it with 503 when the queue is
// full: overload is explicit and memory stays bounded.
void ConnectionPoller::Dispatch(PooledConnection* c) {
  if (queue_.Push(c)) return;
  c->conn.Refuse();
  Settle(c);
}

// The poller's primitives for the driver core. It never waits on one
// connection: what wants bytes is parked in the ReadyQueue, and what cannot
// be sent at once is dropped with the connection.
class ConnectionPoller::Port {
 public:
  Port(ConnectionPoller& poller, PooledConnection* c)
      : poller_(poller), c_(c) {}
  Clock::time_point Now() { return Clock::now(); }
  int fd() const { return c_->fd; }
  // Never asked: the poller holds no connection with a request to serve.
  bool MayProcess() { return Unexpected(); }
  bool AwaitRead(const Interest&, Clock::time_point) {
    if (poller_.queue_.ParkFromPoller(c_)) return false;
    c_->conn.Abort(CloseReason::kError);
    return true;
  }
  bool AwaitWrite(const Interest&, Clock::time_point) {
    Close();
    return false;
  }
  bool AwaitHandler(const Interest&, Clock::time_point) { return Unexpected(); }
  void Close() { poller_.Finish(c_); }

 private:
  bool Unexpected() {
    c_->conn.Abort(CloseReason::kError);
    return true;
  }
  ConnectionPoller& poller_;
  PooledConnection* c_;
};

void ConnectionPoller::Settle(PooledConnection* c) {
  c->conn.Attach(&env_);
  Port port(*this, c);
  Drive(port, c->conn);
}

void ConnectionPoller::Finish(PooledConnection* c) {
  if (c->registered) queue_.Forget(c);
  // Out of open() before CloseBlocking counts the close (and acq_rel, so the
  // count does not show first): whoever sees it counted sees it gone.
  open_.fetch_sub(1, std::memory_order_acq_rel);
  CloseBlocking(*c);
  delete c;
}

// Until the earliest parked deadline, at most a second: workers park with
// later deadlines, and wake the poller when one is earlier.
int ConnectionPoller::NextExpiryMs() {
  const Clock::time_point now = Clock::now();
  const Clock::time_point next =
      queue_.NextDeadline(now + std::chrono::seconds(1));
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, 1000));
}

// The deadline of a parked connection: header/body timeout for a request in
// progress, header_timeout for a fresh connection, idle_timeout between
// requests. It was attached to the worker that parked it: count here.
void ConnectionPoller::ExpireParked() {
  const Clock::time_point now = Clock::now();
  taken_.clear();
  queue_.TakeExpired(now, taken_);
  for (PooledConnection* c : taken_) {
    c->conn.Attach(&env_);
    c->conn.DeadlinePassed(now);
    Settle(c);  // with the 408 it may be owed
  }
  taken_.clear();
}

// Idle ones get the machine's drain deadline (drain_idle_timeout); mid-request
// or fresh ones (accepted, first request not here yet) keep theirs: let them
// finish, or time out.
void ConnectionPoller::ShortenIdleParked() {
  taken_.clear();
  queue_.TakeIdleParked(taken_);
  for (PooledConnection* c : taken_) {
    Settle(c);  // parked again with the drain's deadline, or closed
    queue_.Done();
  }
  taken_.clear();
}

}  // namespace gearbox
