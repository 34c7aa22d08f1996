#include "models/threadpool/ready_queue.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "daemon/clock.h"

namespace gearbox {
namespace {

constexpr uint64_t kQueueWake = ParkedSet::kTagBit | 1;
constexpr uint64_t kCloseWake = ParkedSet::kTagBit | 2;

void Signal(int fd) {
  const uint64_t one = 1;
  ssize_t n = write(fd, &one, sizeof(one));
  (void)n;
}

Status Watch(int epoll_fd, int fd, uint64_t data) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = data;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0) return Status::Ok();
  return Status::Error(std::string("epoll_ctl(ADD): ") + strerror(errno));
}

}  // namespace

ReadyQueue::~ReadyQueue() {
  if (queue_wake_fd_ >= 0) close(queue_wake_fd_);
  if (close_fd_ >= 0) close(close_fd_);
}

Status ReadyQueue::Init(int expiry_wake_fd) {
  expiry_wake_fd_ = expiry_wake_fd;
  if (Status s = parked_.Init(); !s.ok()) return s;
  queue_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
  close_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (queue_wake_fd_ < 0 || close_fd_ < 0)
    return Status::Error(std::string("eventfd: ") + strerror(errno));
  if (Status s = Watch(parked_.epoll_fd(), queue_wake_fd_, kQueueWake); !s.ok())
    return s;
  return Watch(parked_.epoll_fd(), close_fd_, kCloseWake);
}

void ReadyQueue::UpdateGauge() {
  const uint64_t depth = queue_.size();
  gauges_.queue_depth.store(depth, std::memory_order_relaxed);
  // seq_cst, paired with WaitEvent(): a worker about to sleep sees it, or
  // the pusher sees that worker idle and wakes it.
  queued_.store(static_cast<int>(depth));
  if (depth > gauges_.queue_high.load(std::memory_order_relaxed))
    gauges_.queue_high.store(depth, std::memory_order_relaxed);
}

// Only a worker that may be asleep needs the eventfd: busy ones look at the
// queue before they wait again. A semaphore: n wake-ups for n connections.
void ReadyQueue::Wake(uint64_t n) {
  if (waiters_.load() == 0) return;
  ssize_t r = write(queue_wake_fd_, &n, sizeof(n));
  (void)r;
}

void ReadyQueue::EnqueueLocked(PooledConnection* c) {
  c->conn.set_ready_us(NowMicros());
  queue_.push_back(c);
  UpdateGauge();
}

bool ReadyQueue::Push(PooledConnection* c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= capacity_ || closed_.load()) return false;
    EnqueueLocked(c);
  }
  Wake(1);
  return true;
}

// Past the bound: a connection that was already served once is not refused.
void ReadyQueue::Requeue(PooledConnection* c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    EnqueueLocked(c);
  }
  Wake(1);
}

PooledConnection* ReadyQueue::PopQueuedLocked() {
  if (queue_.empty()) return nullptr;
  PooledConnection* c = queue_.front();
  queue_.pop_front();
  UpdateGauge();
  ++active_;
  return c;
}

PooledConnection* ReadyQueue::Pop(size_t worker,
                                  std::chrono::microseconds idle_for,
                                  bool* idle) {
  *idle = false;
  seats_.Idle(worker);
  const bool forever = idle_for == std::chrono::microseconds::max();
  const Clock::time_point give_up =
      forever ? Clock::time_point::max() : Clock::now() + idle_for;
  bool looked = false;  // an unseated worker looked for ready work once
  for (;;) {
    if (queued_.load(std::memory_order_relaxed) > 0 || closed_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (PooledConnection* c = PopQueuedLocked()) {
        seats_.Busy(worker, NowMicros());
        return c;
      }
      if (closed_.load()) return nullptr;
    }
    const bool seated = seats_.held(worker);
    if (!seated && !looked) {
      // Back from a blocking turn without a seat: take work that is ready
      // now, without a wake-up; sleep for a seat only when there is none.
      looked = true;
    } else if (!seated) {
      if (!seats_.Acquire(worker, give_up, idle)) return nullptr;
      continue;  // slept: look at the queue again
    }
    uint64_t data = 0;
    const int n = WaitEvent(&data, !seated   ? 0
                                   : forever ? -1
                                             : MillisUntil(give_up));
    if (n == 0 && !forever && Clock::now() >= give_up) {
      *idle = true;
      return nullptr;
    }
    if (n <= 0 || data == kCloseWake) continue;
    if (data == kQueueWake) {
      uint64_t v;
      ssize_t r =
          read(queue_wake_fd_, &v, sizeof(v));  // EAGAIN: another got it
      (void)r;
      continue;
    }
    const uint64_t now_us = NowMicros();
    if (PooledConnection* c = TakeEvent(data, now_us)) {
      seats_.Busy(worker, now_us);
      return c;
    }
  }
}

// One event for this worker. 0: nothing (timeout, or queued work appeared).
int ReadyQueue::WaitEvent(uint64_t* data, int timeout_ms) {
  const int others_waiting = waiters_.fetch_add(1);
  if (queued_.load() > 0 || closed_.load()) {
    waiters_.fetch_sub(1);
    return 0;
  }
  epoll_event ev{};
  int n = -1;
  if (others_waiting == 0 && seats_.followers() == 0) {
    // Every other worker is busy: whatever epoll has ready now waited for a
    // worker. Look without sleeping first, to count it.
    n = epoll_wait(parked_.epoll_fd(), &ev, 1, 0);
    if (n > 0 && !(ev.data.u64 & ParkedSet::kTagBit))
      ready_waits_.fetch_add(1, std::memory_order_relaxed);
  }
  if (n <= 0) n = epoll_wait(parked_.epoll_fd(), &ev, 1, timeout_ms);
  waiters_.fetch_sub(1);
  if (n > 0) *data = ev.data.u64;
  return n < 0 ? 0 : n;
}

// After Close() a parked connection stays where it is: the drain closes it.
PooledConnection* ReadyQueue::TakeEvent(uint64_t data, uint64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_.load()) return nullptr;
  PooledConnection* c = parked_.Take(data);
  if (!c) return nullptr;  // stale, or not parked: its holder reads again
  c->conn.set_ready_us(now_us);
  ++active_;
  return c;
}

bool ReadyQueue::RetakeSeats(std::chrono::microseconds after) {
  return seats_.Retake(NowMicros(), static_cast<uint64_t>(after.count()));
}

ParkedSet::Armed ReadyQueue::ArmLocked(PooledConnection* c) {
  const ParkedSet::Armed armed = parked_.Arm(c);
  if (armed == ParkedSet::Armed::kParked && c->conn.deadline() < expiry_pass_) {
    expiry_pass_ = c->conn.deadline();
    Signal(expiry_wake_fd_);  // rare: deadlines mostly grow with time
  }
  return armed;
}

void ReadyQueue::DoneLocked() {
  --active_;
  if (IdleLocked()) idle_cv_.notify_all();
}

ParkedSet::Armed ReadyQueue::Park(PooledConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  const ParkedSet::Armed armed = ArmLocked(c);
  if (armed == ParkedSet::Armed::kParked) DoneLocked();
  return armed;
}

void ReadyQueue::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  DoneLocked();
}

void ReadyQueue::Closed(PooledConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  parked_.Forget(c);
  DoneLocked();
}

bool ReadyQueue::ParkFromPoller(PooledConnection* c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const ParkedSet::Armed armed = ArmLocked(c);
    if (armed == ParkedSet::Armed::kFailed) return false;
    if (armed == ParkedSet::Armed::kParked) return true;
    EnqueueLocked(c);  // bytes came while the poller held it
  }
  Wake(1);
  return true;
}

void ReadyQueue::Forget(PooledConnection* c) {
  parked_.Unwatch(c);  // may wait for a worker's poll of it: not under mu_
  std::lock_guard<std::mutex> lock(mu_);
  parked_.Forget(c);
}

Clock::time_point ReadyQueue::NextDeadline(Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mu_);
  expiry_pass_ = std::min(until, parked_.NextDeadline());
  return expiry_pass_;
}

// The last parked connection of a drain expiring (drain_idle_timeout) is what
// a Drain() waits for: tell it.
void ReadyQueue::TakeExpired(Clock::time_point now,
                             std::vector<PooledConnection*>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t before = out.size();
  parked_.TakeExpired(now, out);
  if (out.size() > before && IdleLocked()) idle_cv_.notify_all();
}

// Counted as active until the poller has re-parked or closed each one (a
// Done() each): the drain must not see them nowhere.
void ReadyQueue::TakeIdleParked(std::vector<PooledConnection*>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t before = out.size();
  parked_.TakeIdle(out);
  active_ += static_cast<int>(out.size() - before);
}

void ReadyQueue::Close() {
  closed_.store(true);
  seats_.Close();
  Signal(close_fd_);  // never read: every worker's epoll_wait returns
}

bool ReadyQueue::WaitIdle(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [this] { return IdleLocked(); });
}

std::deque<PooledConnection*> ReadyQueue::TakeQueued() {
  std::lock_guard<std::mutex> lock(mu_);
  std::deque<PooledConnection*> out;
  out.swap(queue_);
  UpdateGauge();
  return out;
}

void ReadyQueue::TakeParked(std::vector<PooledConnection*>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  parked_.TakeAll(out);
}

}  // namespace gearbox
