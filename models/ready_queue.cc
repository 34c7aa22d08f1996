#include "models/ready_queue.h"

#include "daemon/clock.h"

namespace gearbox {

void ReadyQueue::UpdateGauge() {
  const uint64_t depth = queue_.size();
  gauges_.queue_depth.store(depth, std::memory_order_relaxed);
  queued_.store(static_cast<int>(depth), std::memory_order_relaxed);
  if (depth > gauges_.queue_high.load(std::memory_order_relaxed))
    gauges_.queue_high.store(depth, std::memory_order_relaxed);
}

bool ReadyQueue::Push(BlockingConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= capacity_ || closed_) return false;
  c->conn.set_ready_us(NowMicros());
  queue_.push_back(c);
  UpdateGauge();
  ready_cv_.notify_one();
  return true;
}

void ReadyQueue::Requeue(BlockingConnection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  c->conn.set_ready_us(NowMicros());
  queue_.push_back(c);
  UpdateGauge();
  ready_cv_.notify_one();
}

BlockingConnection* ReadyQueue::Pop() {
  bool idle = false;
  return Pop(std::chrono::microseconds::max(), &idle);
}

BlockingConnection* ReadyQueue::Pop(std::chrono::microseconds idle_for,
                                    bool* idle) {
  std::unique_lock<std::mutex> lock(mu_);
  idle_workers_.fetch_add(1, std::memory_order_relaxed);
  auto ready = [this] { return closed_ || !queue_.empty(); };
  if (idle_for == std::chrono::microseconds::max()) {
    ready_cv_.wait(lock, ready);
    *idle = false;
  } else {
    *idle = !ready_cv_.wait_for(lock, idle_for, ready);
  }
  idle_workers_.fetch_sub(1, std::memory_order_relaxed);
  if (queue_.empty()) return nullptr;  // closed and nothing left, or idle
  BlockingConnection* c = queue_.front();
  queue_.pop_front();
  UpdateGauge();
  ++active_;
  return c;
}

void ReadyQueue::Done(BlockingConnection* parked) {
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  if (parked) returned_.push_back(parked);
  if (IdleLocked()) idle_cv_.notify_all();
}

void ReadyQueue::TakeReturned(std::vector<BlockingConnection*>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(returned_);
  // In transit to the poller's set until its next SetHeld(): count them.
  held_ += out.size();
}

void ReadyQueue::SetHeld(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = n;
  if (IdleLocked()) idle_cv_.notify_all();
}

void ReadyQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  ready_cv_.notify_all();
}

bool ReadyQueue::WaitIdle(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [this] { return IdleLocked(); });
}

std::deque<BlockingConnection*> ReadyQueue::TakeQueued() {
  std::lock_guard<std::mutex> lock(mu_);
  std::deque<BlockingConnection*> out;
  out.swap(queue_);
  UpdateGauge();
  return out;
}

}  // namespace gearbox
